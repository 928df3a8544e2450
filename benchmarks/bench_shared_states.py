"""What shared-state conditioning costs: a whole ConditionalTSNE fit with the paper's
weights against one with shared states, same data and prior, one child process each.

Paper-style data (``common.separated_data``: 20 clusters repeated in every class, shifted by
class) with one cluster removed from each class but the first, so that "auto" finds
states that only some classes hold. Rows: whole fit, the states' estimation, the
affinities, the repulsion (its four partition terms against the paper's two).

    python benchmarks/bench_shared_states.py --n 200000 --save
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from common import record, run_meta

CHILD = r"""
import json, sys, time, numpy as np
sys.path.insert(0, sys.argv[4])
from common import separated_data
from ctsne import ConditionalTSNE
n, classes, conditioning = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
X, codes = separated_data(n, classes, 10, np.random.default_rng(0))
keep = np.ones(n, bool)
# each class but the first loses the points nearest one centre of its own
for c in range(1, classes):
    rows = np.flatnonzero(codes == c)
    centre = X[rows[0]]
    far = np.linalg.norm(X[rows] - centre, axis=1) < 3.0
    keep[rows[far]] = False
X, codes = X[keep], codes[keep]
t0 = time.perf_counter()
m = ConditionalTSNE(random_state=0, n_jobs=2, conditioning=conditioning).fit(X, codes)
total = time.perf_counter() - t0
found = getattr(m, "shared_states_", None)
print(json.dumps({"seconds": total, "n": len(X), "conditioning": m.conditioning_,
                  "states": None if found is None else len(found.table),
                  "affinities": m.affinities_, "timings": m.timings_}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    here = Path(__file__).resolve().parent
    load = os.getloadavg()[0]
    rows = {}
    for conditioning in ("classes", "states"):
        res = subprocess.run([sys.executable, "-c", CHILD, str(args.n), str(args.classes),
                              conditioning, str(here)], capture_output=True, text=True,
                             check=True)
        rows[conditioning] = json.loads(res.stdout.strip().splitlines()[-1])
    c, s = rows["classes"], rows["states"]
    record({"benchmark": "shared_states", **run_meta(load), "n": c["n"],
            "classes": args.classes, "paper_s": c["seconds"], "states_s": s["seconds"],
            "ratio": s["seconds"] / c["seconds"], "states_found": s["states"],
            "paper_affinities": c["affinities"], "states_affinities": s["affinities"],
            "paper_timings": c["timings"], "states_timings": s["timings"],
            "repulsion_ratio": s["timings"]["repulsion"] / c["timings"]["repulsion"]},
           args.save)


if __name__ == "__main__":
    main()

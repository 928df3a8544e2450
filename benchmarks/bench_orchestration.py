"""A whole ConditionalTSNE fit at 100k points, one source tree against another, in turn.

The check of a refactoring that must change nothing: the same fit (paper-style 10-D data,
a 5-class prior that the data separates, defaults, 2 threads) timed in a child process
per source tree, back to back, with the maps compared bit for bit.

    python benchmarks/bench_orchestration.py --before /path/to/old/src --save
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import record, run_meta

CHILD = r"""
import json, sys, time, numpy as np
from ctsne import ConditionalTSNE
sys.path.insert(0, sys.argv[3])
from common import separated_data
X, codes = separated_data(int(sys.argv[1]), 5, 10, np.random.default_rng(0))
t0 = time.perf_counter()
m = ConditionalTSNE(random_state=0, n_jobs=2).fit(X, codes)
seconds = time.perf_counter() - t0
np.save(sys.argv[2], m.embedding_)
print(json.dumps({"seconds": seconds, "kl": m.kl_divergence_, "affinities": m.affinities_,
                  "timings": m.timings_}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--before", required=True, help="the other tree's src folder")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    here = Path(__file__).resolve().parent
    after = str(here.parent / "src")
    load = os.getloadavg()[0]
    rows = {}
    for name, src in (("before", args.before), ("after", after)):
        out = f"/tmp/bench_orchestration_{name}.npy"
        env = dict(os.environ, PYTHONPATH=src)
        res = subprocess.run([sys.executable, "-c", CHILD, str(args.n), out, str(here)],
                             env=env, capture_output=True, text=True, check=True)
        rows[name] = json.loads(res.stdout.strip().splitlines()[-1])
    same = bool(np.array_equal(np.load("/tmp/bench_orchestration_before.npy"),
                               np.load("/tmp/bench_orchestration_after.npy")))
    record({"benchmark": "orchestration", **run_meta(load), "n": args.n,
            "before_s": rows["before"]["seconds"], "after_s": rows["after"]["seconds"],
            "ratio": rows["after"]["seconds"] / rows["before"]["seconds"],
            "maps_identical": same, "affinities": rows["after"]["affinities"],
            "kl": rows["after"]["kl"], "finished": time.strftime("%H:%M:%S")}, args.save)


if __name__ == "__main__":
    main()

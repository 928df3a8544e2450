"""The label-balanced P with far lists from representatives against exact far lists, from
classes set well apart to classes that overlap completely, and on real priors.

    flock /tmp/ctsne-bench.lock python benchmarks/bench_representatives.py --n 200000 \\
        --adult ../shared/data/uci-adult/adult.csv

Large balanced P ask only representatives for their far searches
(:mod:`ctsne.neighbors.representatives`). They were built for classes the data separates,
where a far query is expensive; this asks whether they still pay where classes overlap
(batches of the same cells, attributes of people), where exact far queries are cheap.

Data: the paper-style 10-D set of ``bench_balanced.py`` (20 Gaussian clusters repeated in 5
classes), the classes' shifts drawn with scale ``s`` from 0 (labels unrelated to the data)
to 6 (``bench_balanced.py``'s separated classes); with ``--adult``, the full UCI Adult
(32,561 rows, the features of ``experiments/representatives_check.py``) with four real
attributes as the prior. Per case: the share of points whose 90 nearest neighbours are all
of their own class, both P's times, and the total-variation distance between them.
Appends JSON lines to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import ctsne.neighbors.by_class as by_class
from ctsne.affinities.balanced import balanced_affinities
from ctsne.neighbors.search import nearest_neighbors

HERE = Path(__file__).resolve().parent
SHIFTS = (0.0, 1.0, 2.0, 4.0, 6.0)


def shifted_classes(n: int, shift: float, seed: int = 1):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(20, 10))
    shifts = rng.normal(scale=shift, size=(5, 10))
    codes = rng.integers(0, 5, n)
    X = centres[rng.integers(0, 20, n)] + shifts[codes] + rng.normal(size=(n, 10))
    return X, codes


def adult_priors(path: Path):
    """The full Adult's features and four of its attributes as priors."""
    sys.path.insert(0, str(HERE.parent / "experiments"))
    from representatives_check import load

    X, _ = load(path)
    lines = [ln for ln in path.read_text().splitlines()[1:] if ln.strip()]
    cols = list(zip(*(ln.split(", ") for ln in lines), strict=True))
    for name, j in (("gender", 9), ("race", 8), ("relationship", 7), ("marital-status", 5)):
        yield f"adult {name}", X, np.unique(np.array(cols[j]), return_inverse=True)[1]


def balanced(X, codes, perplexity: float, representatives: bool):
    """The balanced P and its seconds, far lists from representatives or exact."""
    saved = by_class._representatives
    if not representatives:
        by_class._representatives = lambda *args, **kwargs: None
    try:
        t0 = time.perf_counter()
        P = balanced_affinities(X, codes, perplexity, 0.85)
        return P, time.perf_counter() - t0
    finally:
        by_class._representatives = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--shifts", type=float, nargs="*", default=list(SHIFTS))
    ap.add_argument("--adult", type=Path, default=None,
                    help="the UCI Adult training file with a header line")
    ap.add_argument("--perplexity", type=float, default=30.0)
    ap.add_argument("--out", default=str(HERE / "results.jsonl"))
    a = ap.parse_args()
    warm_X, warm_codes = shifted_classes(20_000, 6.0, seed=0)
    for reps in (True, False):  # compile outside the timings
        balanced(warm_X, warm_codes, a.perplexity, reps)
    cases = [(f"shift {s:g}", *shifted_classes(a.n, s)) for s in a.shifts]
    if a.adult is not None:
        cases += list(adult_priors(a.adult))
    meta = {"benchmark": "bench_representatives", "date": datetime.datetime.now().isoformat(
        timespec="seconds"), "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    print(f"{'case':<22s} {'n':>8s} {'L':>3s} {'all-own rows':>13s} {'reps':>7s} "
          f"{'exact':>7s} {'ratio':>6s} {'TV':>7s}")
    for name, X, codes in cases:
        load_before = os.getloadavg()[0]
        P_reps, t_reps = balanced(X, codes, a.perplexity, True)
        P_exact, t_exact = balanced(X, codes, a.perplexity, False)
        idx, _ = nearest_neighbors(X, 90)
        own = float(np.mean((codes[idx] == codes[:, None]).all(axis=1)))
        row = {**meta, "case": name, "n": len(X), "classes": int(codes.max()) + 1,
               "all_own_rows": own, "reps_s": t_reps, "exact_s": t_exact,
               "total_variation": float(0.5 * abs(P_reps - P_exact).sum()),
               "load_before": load_before, "load_after": os.getloadavg()[0]}
        print(f"{name:<22s} {len(X):>8d} {row['classes']:>3d} {own:>13.3f} {t_reps:>6.2f}s "
              f"{t_exact:>6.2f}s {t_exact / t_reps:>6.2f} {row['total_variation']:>7.4f}",
              flush=True)
        with open(a.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

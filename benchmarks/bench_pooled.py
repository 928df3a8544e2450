"""Pooled other-class lists: one search skipping the own class, against bit searches.

    flock /tmp/ctsne-bench.lock python benchmarks/bench_pooled.py --n 50000 200000 \
        --classes 500 100 50 20 10

With more than ``PER_CLASS_UP_TO + 1`` classes the balanced P pools each point's other
classes into one list of k. Where the fit's exact search is the block tree (8-15
features), points of classes whose queries read at most
``ctsne.neighbors.pooled.SKIP_OWN_UP_TO`` points of their own class
(``pooled.skipping_classes``) find it in one search over all points that skips their own
class; the others search per bit of their class code (2⌈log₂ L⌉ far searches, through
representatives above ``REPS_FROM_PAIRS``). This times both for every class size on the data of
``bench_balanced.py`` (classes shifted apart: the worst case for skipping, whose queries
read their own class's points nearer than the k-th answer), given the own-class lists as
the balanced P gives them, and the recall of the bit searches' lists against the skipping
search's exact ones. Appends JSON lines to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from common import record, run_meta, separated_data

from ctsne.neighbors import by_class, pooled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--classes", type=int, nargs="+", default=[500, 100, 50, 20, 10])
    ap.add_argument("--dims", type=int, default=10)
    ap.add_argument("--k", type=int, default=91)
    ap.add_argument("--blobs", action="store_true",
                    help="each class one Gaussian blob apart from the others (the worst "
                         "case for skipping: a query reads its whole class)")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    Xw, cw = separated_data(30_000, 40, args.dims, np.random.default_rng(1))
    def every_class(skip: bool):  # each class skips its own class, or none does
        return lambda X, codes, k, **kw: np.full(int(codes.max()) + 1, skip)

    for skip in (True, False):  # compile both paths outside the timings
        pooled.skipping_classes = every_class(skip)
        pooled.pooled_other_neighbors(Xw, cw, args.k)
    for n in args.n:
        for L in args.classes:
            rng = np.random.default_rng(0)
            if args.blobs:
                codes = rng.integers(0, L, n)
                X = rng.normal(scale=8.0, size=(L, args.dims))[codes] + rng.normal(
                    size=(n, args.dims))
            else:
                X, codes = separated_data(n, L, args.dims, rng)
            own, _ = by_class.own_class_neighbors(X, codes, args.k)
            load_before = os.getloadavg()[0]
            out = {}
            for name, skip in (("skip_own", True), ("bits", False)):
                pooled.skipping_classes = every_class(skip)
                t0 = time.perf_counter()
                idx, dist = pooled.pooled_other_neighbors(X, codes, args.k, own_idx=own)
                out[name] = (time.perf_counter() - t0, idx, dist)
            exact = out["skip_own"][1]
            recall = np.mean([len(np.intersect1d(a, b)) for a, b in
                              zip(exact[::97], out["bits"][1][::97], strict=True)]) / args.k
            row = {**run_meta(load_before),
                   "case": f"pooled-lists-{n}" + ("-blobs" if args.blobs else ""),
                   "classes": L, "class_size": n // L, "dims": args.dims, "k": args.k,
                   "skip_own_s": out["skip_own"][0], "bits_s": out["bits"][0],
                   "bits_over_skip_own": out["bits"][0] / out["skip_own"][0],
                   "bits_recall": float(recall)}
            record(row, not args.no_record)


if __name__ == "__main__":
    main()

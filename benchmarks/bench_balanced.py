"""Label-balanced affinities against the standard kNN + P, on data the prior separates.

    python benchmarks/bench_balanced.py --n 200000 --classes 5 500
    flock /tmp/ctsne-bench.lock python benchmarks/bench_balanced.py --n 1000000

The data: 20 Gaussian clusters in 10 dimensions (the structure to keep), repeated in
every class with a class-specific shift (a batch effect that separates the classes). Times,
in one run side by side: the standard P (:func:`ctsne.affinities.standard.joint_affinities`),
the balanced P alone (:func:`ctsne.affinities.balanced.balanced_affinities`), and
``affinities="auto"`` (standard P, diagnostic, then the balanced P reusing the
all-own-class standard lists, or finding the standard lists class by class), in
``--switch-repeats`` rounds of the three (medians and per-round ratios recorded). With
``--compare-trees`` the balanced P is also timed with
the other-class searches in scikit-learn trees (``far_search="tree"``), as before the
brute-force scan of far queries (same P). With ``--keep`` each size is also timed with
labels unrelated to the data in each ``--classes`` (``affinities="auto"`` keeps the standard
P), alternating with the standard P ``--repeats`` times: the median ratio is auto's cost
when it keeps it.
Appends JSON lines to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from common import record, run_meta, separated_data

from ctsne.affinities.balanced import balanced_affinities
from ctsne.affinities.modes import input_affinities
from ctsne.affinities.standard import joint_affinities


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[200_000])
    ap.add_argument("--classes", type=int, nargs="+", default=[5, 500])
    ap.add_argument("--dims", type=int, default=10)
    ap.add_argument("--perplexity", type=float, default=30.0)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--keep", action="store_true",
                    help="also time auto against the standard P on labels it keeps")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--switch-repeats", type=int, default=3,
                    help="rounds of standard, balanced and auto on the separating prior")
    ap.add_argument("--compare-trees", action="store_true",
                    help="also time the balanced P with tree searches for far queries")
    args = ap.parse_args()
    # compile the numba kernels outside the timings
    Xw, cw = separated_data(3000, 5, args.dims, np.random.default_rng(1))
    input_affinities(Xw, args.perplexity, cw, "auto")
    balanced_affinities(Xw, cw, args.perplexity)
    balanced_affinities(Xw, np.arange(3000) % 40, args.perplexity)
    for n in args.n:
        rng = np.random.default_rng(0)
        if args.keep:
            X, _ = separated_data(n, 5, args.dims, rng)
            for L in args.classes:
                # unrelated to the data: auto keeps the standard P
                mixed = rng.integers(0, L, n)
                load_before = os.getloadavg()[0]
                pairs = []
                for _ in range(args.repeats):
                    _, t_std = timed(lambda: joint_affinities(X, args.perplexity))  # noqa: B023
                    got, t_auto = timed(lambda: input_affinities(  # noqa: B023
                        X, args.perplexity, mixed, "auto"))  # noqa: B023
                    pairs.append((t_std, t_auto))
                ratios = sorted(a / s for s, a in pairs)
                row = {**run_meta(load_before), "case": f"auto-keeps-standard-{n}",
                       "classes": L, "dims": args.dims,
                       "auto_mode": got.mode, "standard_s": [s for s, _ in pairs],
                       "auto_s": [a for _, a in pairs],
                       "median_auto_over_standard": ratios[len(ratios) // 2]}
                record(row, not args.no_record)
        for L in args.classes:
            X, codes = separated_data(n, L, args.dims, rng)
            load_before = os.getloadavg()[0]
            # rounds of the three, one after the other: the ratios within a round are what
            # a noisy shared machine leaves comparable; the medians are recorded
            rounds = []
            for _ in range(args.switch_repeats):
                _, t_std = timed(lambda: joint_affinities(X, args.perplexity))  # noqa: B023
                P_bal, t_bal = timed(lambda: balanced_affinities(  # noqa: B023
                    X, codes, args.perplexity))  # noqa: B023
                got, t_auto = timed(lambda: input_affinities(  # noqa: B023
                    X, args.perplexity, codes, "auto"))  # noqa: B023
                rounds.append((t_std, t_bal, t_auto))
            t_std, t_bal, t_auto = (float(np.median(c)) for c in zip(*rounds, strict=True))
            median_ratio = {
                "median_balanced_over_standard": float(np.median([b / s for s, b, _ in rounds])),
                "median_auto_over_balanced": float(np.median([a / b for _, b, a in rounds])),
                "median_auto_over_standard": float(np.median([a / s for s, _, a in rounds]))}
            extra = {}
            if args.compare_trees:
                P_tree, t_tree = timed(lambda: balanced_affinities(
                    X, codes, args.perplexity, far_search="tree"))  # noqa: B023
                extra = {"balanced_trees_s": t_tree, "trees_over_standard": t_tree / t_std,
                         "max_abs_diff_P_trees": float(abs(P_bal - P_tree).max())}
            row = {**run_meta(load_before), "case": f"balanced-P-{n}", "classes": L,
                   "dims": args.dims,
                   "standard_s": t_std, "balanced_s": t_bal, "auto_s": t_auto,
                   "auto_mode": got.mode,
                   "standard_cross": got.standard_mixing.cross if got.standard_mixing
                   else got.mixing.cross,
                   "balanced_over_standard": t_bal / t_std,
                   "auto_over_standard": t_auto / t_std,
                   "rounds_s": [list(r) for r in rounds], **median_ratio, **extra}
            record(row, not args.no_record)


if __name__ == "__main__":
    main()

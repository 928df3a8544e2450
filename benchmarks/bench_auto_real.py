"""``affinities="auto"`` against the standard and the balanced P on real data: UCI Adult.

    flock /tmp/ctsne-bench.lock python benchmarks/bench_auto_real.py \
        --adult ../shared/data/uci-adult/adult.csv [--diamonds PATH/diamonds.csv]

The full training file (32,561 rows; the features of ``experiments/representatives_check.py``:
8 standardised columns, so the exact search is the block tree) and its first 30,000 rows,
with priors of few and many classes: gender (2), relationship (6), occupation (15),
education (16), education × gender (32). Per case, ``--rounds`` rounds of the standard P,
the balanced P alone at the fixed default weight, "auto", and ``affinities="balanced"``
with its shares from the rule as "auto" chooses them (the counterpart trust included)
(medians recorded), the P "auto" chose and whether it found the balanced lists first
(``ctsne.affinities.modes.Auto``, step 1). The file is not bundled. With
``--diamonds PATH`` (plotnine's ``diamonds.csv``, 53,940 rows, from its ``data`` folder;
not bundled) each of its grades is a prior too: cut (5 classes), color (7), clarity (8),
that grade's column left out of the 10 features (``common.diamonds``). With
``--paired N`` each case instead times N pairs of the standard P and "auto" back to back
in this process (after one warm call of each) and records the median of the N
differences: what "auto" adds where it keeps the standard P, read without the spread
between processes. Appends JSON lines to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from common import GRADE_COLUMN, adult_priors, diamonds, record, run_meta

from ctsne.affinities import modes
from ctsne.affinities.balanced import balanced_affinities
from ctsne.affinities.standard import joint_affinities
from ctsne.neighbors.provider import NeighborLists


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adult", type=Path, required=True, help="UCI adult.data with a header")
    ap.add_argument("--rows", type=int, nargs="+", default=[30_000, 32_561])
    ap.add_argument("--diamonds", type=Path, default=None,
                    help="plotnine's diamonds.csv: also its grades cut, color, clarity")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--perplexity", type=float, default=30.0)
    ap.add_argument("--only", nargs="+", default=None,
                    help="cases whose name starts with one of these (e.g. diamonds-cut)")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--paired", type=int, default=0,
                    help="time this many (standard, auto) pairs per case in one process")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # Adult's duplicated rows warn at every P
    X_all, labels = adult_priors(args.adult)
    first = []
    real = NeighborLists.balanced

    def spy(self, k, *, class_trees=False):  # which order "auto" took
        if class_trees:  # the balanced lists before the standard ones
            first.append(True)
        return real(self, k, class_trees=class_trees)
    NeighborLists.balanced = spy
    modes.input_affinities(X_all[:3000], args.perplexity, labels["education"][:3000], "auto")
    cases = [(f"adult-{name}", X_all[:rows], all_codes[:rows])
             for rows in args.rows for name, all_codes in labels.items()]
    if args.diamonds is not None:  # each grade a prior, its column out of the features
        X_dia, grades = diamonds(args.diamonds)
        cases += [(f"diamonds-{g}", np.delete(X_dia, GRADE_COLUMN[g], axis=1), grades[g])
                  for g in grades]
    if args.only is not None:
        cases = [c for c in cases if c[0].startswith(tuple(args.only))]
    for case, X, all_codes in cases:
        rows = len(X)
        codes = np.unique(all_codes, return_inverse=True)[1]
        load_before = os.getloadavg()[0]
        if args.paired:
            paired(case, X, codes, args, load_before)
            continue
        rounds = []
        for _ in range(args.rounds):
            first.clear()
            t0 = time.perf_counter()
            joint_affinities(X, args.perplexity)
            t1 = time.perf_counter()
            balanced_affinities(X, codes, args.perplexity)
            t2 = time.perf_counter()
            got = modes.input_affinities(X, args.perplexity, codes, "auto")
            t3 = time.perf_counter()
            # what a user asking for the balanced P gets: its shares from the rule,
            # as "auto"'s switched P has them (the counterpart trust included)
            modes.input_affinities(X, args.perplexity, codes, "balanced")
            t4 = time.perf_counter()
            rounds.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
        t_std, t_bal, t_auto, t_rule = (float(np.median(c))
                                        for c in zip(*rounds, strict=True))
        record({**run_meta(load_before), "case": f"auto-real-{case}", "n": rows,
                "classes": int(codes.max()) + 1,
                "largest_class": int(np.bincount(codes).max()),
                "auto_mode": got.mode, "balanced_first": bool(first and first[-1]),
                "standard_s": t_std, "balanced_s": t_bal, "auto_s": t_auto,
                "balanced_rule_s": t_rule,
                "median_auto_over_balanced": float(np.median(
                    [a / b for _, b, a, _ in rounds])),
                "median_auto_over_balanced_rule": float(np.median(
                    [a / r for _, _, a, r in rounds])),
                "median_auto_over_standard": float(np.median(
                    [a / s for s, _, a, _ in rounds])),
                "rounds_s": [list(r) for r in rounds]}, not args.no_record)


def paired(case: str, X: np.ndarray, codes: np.ndarray, args, load_before: float) -> None:
    """``--paired``: the standard P and "auto" back to back, ``args.paired`` times."""
    modes.input_affinities(X, args.perplexity, codes, "auto")
    joint_affinities(X, args.perplexity)
    std, diff = [], []
    for _ in range(args.paired):
        t0 = time.perf_counter()
        joint_affinities(X, args.perplexity)
        t1 = time.perf_counter()
        got = modes.input_affinities(X, args.perplexity, codes, "auto")
        t2 = time.perf_counter()
        std.append(t1 - t0)
        diff.append((t2 - t1) - (t1 - t0))
    record({**run_meta(load_before), "case": f"auto-real-paired-{case}", "n": len(X),
            "classes": int(codes.max()) + 1, "auto_mode": got.mode,
            "standard_s": float(np.median(std)), "median_auto_minus_standard_s":
            float(np.median(diff)), "auto_over_standard": float(
                1 + np.median(diff) / np.median(std)), "standard_runs_s": std,
            "differences_s": diff}, not args.no_record)


if __name__ == "__main__":
    main()

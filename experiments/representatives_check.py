"""Approximate far lists (representatives) against exact ones, on the full UCI Adult.

Large balanced P ask only representatives for their far searches
(:mod:`ctsne.neighbors.representatives`, above ``label_neighbors.REPS_FROM_PAIRS`` point pairs).
This script builds the balanced P of the full Adult training file (32,561 rows, prior =
gender: 21,790 × 10,771 = 2.3·10⁸ pairs, so the default takes that path) twice, through
representatives and exactly, and embeds both: the P's total-variation distance, and the
prior's and complementary labels' measures of both maps, side by side.

Features (standardised): age, log fnlwgt, education-num, log(1 + capital gain),
log(1 + capital loss), hours-per-week, ethnicity = White, income > 50K. The file is not
bundled (the package ships a 1,000-row sample); pass the UCI ``adult.data`` with a header
line, as ``--adult PATH``.

    python experiments/representatives_check.py --adult adult.csv [--prior relationship] \
        [--out DIR] [--seed S]

``--prior`` (with ``--adult``): gender (default, two classes), relationship (six) or
marital-status (seven), the others scored as complementary labels; results go to
``representatives_check.json`` for gender, ``representatives_check_<prior>.json`` else.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import _common as C
import numpy as np

import ctsne.neighbors.by_class as label_neighbors
from ctsne import ConditionalTSNE
from ctsne.affinities.balanced import balanced_affinities
from ctsne.affinities.mixing import prior_mixing
from ctsne.metrics import cross_class_agreement, knn_label_homogeneity, lisi

PRIORS = ("gender", "relationship", "marital-status")


def load_bundled():
    from ctsne.datasets import load_adult

    data = load_adult(standardize=True)
    return data.X, {"gender": data.gender, "income": data.income,
                    "ethnicity": data.ethnicity}


def load(path: Path):
    lines = [ln for ln in path.read_text().splitlines()[1:] if ln.strip()]
    cols = list(zip(*(ln.split(", ") for ln in lines), strict=True))

    def num(j):
        return np.array(cols[j], dtype=float)

    X = np.column_stack([num(0), np.log(num(2)), num(4), np.log1p(num(10)),
                         np.log1p(num(11)), num(12), np.array(cols[8]) == "White",
                         np.array(cols[14]) == ">50K"]).astype(float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, {"gender": np.array(cols[9]), "income": np.array(cols[14]),
               "marital-status": np.array(cols[5]), "relationship": np.array(cols[7])}


def main(argv=None) -> dict:
    def extra(parser):
        parser.add_argument("--adult", type=Path, default=None,
                            help="the UCI Adult training file with a header line "
                                 "(default: the bundled 1,000-row sample)")
        parser.add_argument("--prior", choices=PRIORS, default="gender",
                            help="the label factored out (not gender: needs --adult)")

    args = C.parse_args(__doc__.splitlines()[0], argv, extra)
    if args.adult is None and args.prior != "gender":
        raise SystemExit(f"--prior {args.prior} needs the full file (--adult PATH)")
    X, others = load_bundled() if args.adult is None else load(args.adult)
    prior = others.pop(args.prior)  # the rest are scored as complementary labels
    _, codes = np.unique(prior, return_inverse=True)
    params = C.tsne_params(args.small, affinities="balanced", beta=0.01,
                           random_state=args.seed)
    perplexity = params.get("perplexity", 30.0)
    out: dict = {"n": len(X), "prior": args.prior}
    P = {}
    saved = label_neighbors.REPS_FROM_PAIRS
    # the bundled sample is far below the threshold: send every far search through them
    reps_from = saved if args.adult is not None else 0.0
    try:
        for name, threshold in (("representatives", reps_from), ("exact", np.inf)):
            label_neighbors.REPS_FROM_PAIRS = threshold
            t0 = time.perf_counter()
            P[name] = balanced_affinities(X, codes, perplexity)
            t_p = time.perf_counter() - t0
            Y = ConditionalTSNE(**params).fit_transform(X, prior)
            row = {"P_seconds": t_p, "P_cross_share": prior_mixing(P[name], codes).cross,
                   f"{args.prior}_homogeneity": knn_label_homogeneity(Y, prior, 10),
                   f"{args.prior}_ilisi": float(np.median(lisi(Y, prior, perplexity)))}
            for label, values in others.items():
                row[f"{label}_homogeneity"] = knn_label_homogeneity(Y, values, 10)
                row[f"{label}_cross_agreement"] = cross_class_agreement(
                    Y, prior, values, 10).agreement
            out[name] = row
            print(name, row, flush=True)
    finally:
        label_neighbors.REPS_FROM_PAIRS = saved
    out["P_total_variation"] = float(0.5 * abs(P["representatives"] - P["exact"]).sum())
    shares = np.bincount(codes) / len(codes)
    out[f"{args.prior}_homogeneity_chance"] = float(np.sum(shares ** 2))
    print("total variation between the two P:", out["P_total_variation"])
    stem = "" if args.prior == "gender" else f"_{args.prior}"
    C.save_json(out, args.out / f"representatives_check{stem}.json")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])

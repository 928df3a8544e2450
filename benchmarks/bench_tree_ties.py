"""The block k-d tree against scipy's on data with ties: all points' k nearest.

    flock /tmp/ctsne-bench.lock python benchmarks/bench_tree_ties.py \
        --adult ../shared/data/uci-adult/adult.csv [--diamonds PATH/diamonds.csv]

Real tabular data repeats values: UCI Adult's capital gains are 92 % zeros, its binary and
integer columns tie everywhere; plotnine's ``diamonds`` (53,940 rows, its ``data`` folder;
not bundled) has carat, depth and table on coarse grids and three ordinal grades. A
median split of such a feature leaves the median value in both children's boxes
(:func:`ctsne.neighbors.kdtree_build._split` keeps it on one side). Timed per set, ``--rounds``
rounds each (minimum recorded): ``BlockTree`` (build and query of every point, in its
order, k = 91) and scipy's ``cKDTree`` (leaf size 64, as ``ExactIndex`` builds it, in its
order, on all threads), with the number of leaves and the share of the largest tie of any
feature. Sets: Adult's 8 features (``experiments/representatives_check.py``), its
largest education class, diamonds' 10 (grades as integers, standardised), an integer grid
in 9 features, and the paper-style 10-D clusters of ``bench_balanced.py`` (no ties: the
tree is the one a plain median split builds). Appends JSON lines to
``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from common import adult_priors, diamonds, record, run_meta, separated_data
from scipy.spatial import cKDTree

from ctsne.neighbors.kdtree import BlockTree


def largest_tie(X: np.ndarray) -> float:
    """The largest share of points sharing one value of one feature."""
    return max(np.unique(X[:, j], return_counts=True)[1].max() / len(X)
               for j in range(X.shape[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adult", type=Path, required=True, help="UCI adult.data with a header")
    ap.add_argument("--diamonds", type=Path, default=None, help="plotnine's diamonds.csv")
    ap.add_argument("--k", type=int, default=91)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    X_adult, labels = adult_priors(args.adult)
    education = labels["education"]
    sets = {"adult": X_adult,
            "adult-largest-education-class": X_adult[education == np.bincount(education).argmax()],
            "integer-grid-9d": np.random.default_rng(3).integers(0, 4, (30_000, 9)).astype(float),
            "paper-style-10d": separated_data(50_000, 5, 10, np.random.default_rng(0))[0]}
    if args.diamonds is not None:
        sets["diamonds"] = diamonds(args.diamonds)[0]
    BlockTree(X_adult[:2000]).query(X_adult[:2000], args.k)  # compiled before timing
    for name, X in sets.items():
        load_before = os.getloadavg()[0]
        block, scipy = [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            tree = BlockTree(X)
            d_block, _ = tree.query(X[tree.order], args.k, self_rows=tree.order)
            t1 = time.perf_counter()
            kd = cKDTree(X, leafsize=64)
            order = np.asarray(kd.indices)
            d_scipy, _ = kd.query(X[order], k=args.k, workers=-1)
            t2 = time.perf_counter()
            block.append(t1 - t0)
            scipy.append(t2 - t1)
        # the same k-th distances, point by point, to rounding
        kth_block = np.empty(len(X))
        kth_block[tree.order] = d_block[:, -1]
        kth_scipy = np.empty(len(X))
        kth_scipy[order] = d_scipy[:, -1]
        np.testing.assert_allclose(kth_block, kth_scipy, rtol=1e-9, atol=1e-12)
        record({**run_meta(load_before), "case": f"tree-ties-{name}", "n": len(X),
                "features": X.shape[1], "k": args.k, "largest_tie": largest_tie(X),
                "leaves": len(tree.counts), "block_tree_s": min(block), "scipy_s": min(scipy),
                "block_over_scipy": min(block) / min(scipy)}, not args.no_record)


if __name__ == "__main__":
    main()

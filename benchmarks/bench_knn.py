"""The neighbour search of a fit: exact trees against pynndescent, time and recall.

    flock /tmp/ctsne-bench.lock python benchmarks/bench_knn.py --n 100000 250000 500000

On the paper-style 10-feature data of ``bench_vs_opentsne.py`` (k = 3·30 + 1 = 91 with the
point itself), each search over all points, one after the other in one process, 2
threads: :class:`ctsne.neighbors.search.ExactIndex` (scipy's cKDTree, 64-point leaves),
scikit-learn's KDTree behind ``NearestNeighbors`` (ctsne's exact search before),
pynndescent at its defaults (ctsne's approximate search) and with fewer trees and
iterations. Recall: the share of the exact 90 neighbours found, on 3,000 sampled points.
This decides ``TREE_MAX_N`` in ``ctsne/neighbors/search.py``. Appends JSON lines to
``benchmarks/results.jsonl``.

With ``--exact`` the exact searches alone on these sets (and in 2, 3 and 5 features):
``ExactIndex`` (ctsne's block k-d tree from 8 features, ``ctsne.neighbors.kdtree``)
against scipy's cKDTree, both asked for the indexed points in their tree's order, as a
fit asks; the lists must agree (the k-th distance to rounding). This decides
``BLOCK_TREE_DIMS`` and ``BLOCK_TREE_FROM``:

    flock /tmp/ctsne-bench.lock python benchmarks/bench_knn.py --n 100000 --exact \
        paper10 uniform10 mixture15 swissroll10 uniform2 uniform3 gauss5

With ``--sets`` other low-dimensional data (uniform 10-D, a Swiss roll with 7 noise
features, a 15-D mixture of 100 Gaussians) are searched by pynndescent only, at its
defaults and at ``LOW_DIM_DESCENT`` and 8 trees × 3 rounds, recall against scikit-learn's
exact lists of 2,000 sampled points: the check of ``LOW_DIM_DESCENT`` beyond one data set.

    flock /tmp/ctsne-bench.lock python benchmarks/bench_knn.py --n 500000 \
        --sets uniform10 swissroll10 mixture15 paper10

With ``--wide`` data in more than ``TREE_DIMS`` features, where the exact search is
scikit-learn's brute force: that against pynndescent at its defaults (its compilation
outside the timings), recall on 2,000 sampled points; in 30, 50 and 100 features, the
paper-style data (structure in 6 features, noise in the rest) and a mixture of 30
Gaussians whose features' spread decays as a PCA's does. This decides ``APPROX_ABOVE``:

    flock /tmp/ctsne-bench.lock python benchmarks/bench_knn.py --wide --n 20000 40000 70000
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from bench_vs_opentsne import make_data

HERE = Path(__file__).resolve().parent
K = 91


def recall(exact: np.ndarray, found: np.ndarray) -> float:
    """Share of the exact lists (the point itself first) found, row by row: ``exact``
    and ``found`` hold the same points' lists."""
    return float(np.mean([len(set(e[1:]) & set(f[1:])) / (K - 1)
                          for e, f in zip(exact, found, strict=True)]))


def _swiss_roll(n: int, rng: np.random.Generator) -> np.ndarray:
    t = 1.5 * np.pi * (1 + 2 * rng.random(n))
    h = 21 * rng.random(n)
    return np.c_[t * np.cos(t), h, t * np.sin(t), 0.3 * rng.normal(size=(n, 7))]


def _mixture(n: int, rng: np.random.Generator) -> np.ndarray:
    centres = rng.normal(scale=3.0, size=(100, 15))
    scales = rng.uniform(0.3, 2.0, 100)
    lab = rng.integers(0, 100, n)
    return centres[lab] + scales[lab, None] * rng.normal(size=(n, 15))


SETS = {"paper10": lambda n, rng: make_data(n, 10)[0],
        "uniform10": lambda n, rng: rng.random((n, 10)),
        "swissroll10": _swiss_roll, "mixture15": _mixture,
        "uniform2": lambda n, rng: rng.random((n, 2)),
        "uniform3": lambda n, rng: rng.random((n, 3)),
        "gauss5": lambda n, rng: rng.normal(size=(n, 5))}


def _in_tree_order(index, X) -> tuple[np.ndarray, np.ndarray]:
    """Every indexed point's K − 1 nearest others, asked in the tree's order (as a fit)."""
    idx = np.empty((len(X), K - 1), dtype=np.int64)
    dist = np.empty((len(X), K - 1))
    index.neighbors_of(X, index.order, K - 1, idx, dist)
    return idx, dist


def exact_sets(sizes, sets, record) -> None:
    """ExactIndex (the block tree where it applies) against scipy's tree, same lists."""
    from ctsne.neighbors import search

    for n in sizes:
        for name in sets:
            X = np.ascontiguousarray(SETS[name](n, np.random.default_rng(1)), dtype=np.float64)
            runs = {}
            for label, start in (("scipy", n + 1), ("ExactIndex", search.BLOCK_TREE_FROM)):
                saved = search.BLOCK_TREE_FROM
                search.BLOCK_TREE_FROM = start  # n + 1: scipy's tree for every search
                try:
                    _in_tree_order(search.ExactIndex(X[:3000]), X[:3000])  # compile
                    load = os.getloadavg()[0]
                    t = time.perf_counter()
                    index = search.ExactIndex(X, n_jobs=2)
                    lists = _in_tree_order(index, X)
                    runs[label] = (time.perf_counter() - t, *lists, load,
                                   index._blocks is not None)
                finally:
                    search.BLOCK_TREE_FROM = saved
            kth = np.abs(runs["scipy"][2][:, -1] - runs["ExactIndex"][2][:, -1]).max()
            record({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                    "cpu_count": os.cpu_count(), "load_1min_before": runs["scipy"][3],
                    "case": f"exact-{name}-{n}", "p": X.shape[1], "k": K - 1,
                    "block_tree": runs["ExactIndex"][4],
                    "scipy_s": runs["scipy"][0], "exactindex_s": runs["ExactIndex"][0],
                    "ratio": runs["ExactIndex"][0] / runs["scipy"][0],
                    "kth_distance_max_diff": float(kth)})


def descent_sets(sizes, sets, record) -> None:
    """pynndescent's defaults against the low-dimensional settings on several data sets."""
    from pynndescent import NNDescent
    from sklearn.neighbors import NearestNeighbors

    from ctsne.neighbors.search import LOW_DIM_DESCENT

    for n in sizes:
        for name in sets:
            rng = np.random.default_rng(1)
            X = SETS[name](n, rng)
            rows = rng.choice(n, 2000, replace=False)
            exact = NearestNeighbors(n_neighbors=K).fit(X).kneighbors(
                X[rows], return_distance=False)
            for cfg in ({}, LOW_DIM_DESCENT, {"n_trees": 8, "n_iters": 3}):
                load = os.getloadavg()[0]
                t = time.perf_counter()
                found = NNDescent(X, n_neighbors=K, random_state=0, n_jobs=2,
                                  low_memory=True, **cfg).neighbor_graph[0]
                seconds = time.perf_counter() - t
                rec = recall(exact, found[rows])
                record({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                        "cpu_count": os.cpu_count(), "load_1min_before": load,
                        "case": f"descent-{name}-{n}", "k": K, "config": cfg,
                        "seconds": seconds, "recall": rec})


def _pca_like(n: int, p: int, rng: np.random.Generator) -> np.ndarray:
    """30 Gaussian clusters in p features, feature j's spread ∝ (j + 1)^-1/2."""
    scale = 1.0 / np.sqrt(np.arange(1, p + 1))
    centres = rng.normal(scale=3.0, size=(30, p)) * scale
    return centres[rng.integers(0, 30, n)] + rng.normal(size=(n, p)) * scale


def wide_sets(sizes, record) -> None:
    """Brute force against pynndescent in 30, 50 and 100 features (module note)."""
    from pynndescent import NNDescent
    from sklearn.neighbors import NearestNeighbors

    NNDescent(np.random.default_rng(0).normal(size=(3000, 50)), n_neighbors=K)  # compile
    for p in (30, 50, 100):
        for name, make in (("paper", lambda n, p=p: make_data(n, p)[0]),
                           ("pca-like", lambda n, p=p: _pca_like(n, p, np.random.default_rng(0)))):
            for n in sizes:
                X = make(n)
                rows = np.random.default_rng(1).choice(n, min(2000, n), replace=False)
                load = os.getloadavg()[0]
                t = time.perf_counter()
                _, exact = NearestNeighbors(n_jobs=-1).fit(X).kneighbors(X, K)
                brute_s = time.perf_counter() - t
                t = time.perf_counter()
                graph = NNDescent(X, n_neighbors=K, random_state=0, n_jobs=-1,
                                  low_memory=True).neighbor_graph[0]
                descent_s = time.perf_counter() - t
                record({"date": str(datetime.date.today()), "machine": platform.node(),
                        "cpu_count": os.cpu_count(), "python": platform.python_version(),
                        "load_1min_before": load, "case": f"knn-wide-{name}-{p}-{n}",
                        "k": K, "brute_s": brute_s, "pynndescent_s": descent_s,
                        "pynndescent_over_brute": descent_s / brute_s,
                        "pynndescent_recall": recall(exact[rows], graph[rows])})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 250_000])
    ap.add_argument("--sklearn-up-to", type=int, default=250_000,
                    help="skip scikit-learn's tree above this many points (slow)")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--sets", nargs="+", choices=list(SETS),
                    help="pynndescent settings on these data sets only (see above)")
    ap.add_argument("--exact", nargs="+", choices=list(SETS),
                    help="the exact searches on these data sets only (see above)")
    ap.add_argument("--wide", action="store_true",
                    help="brute force against pynndescent in 30-100 features (see above)")
    args = ap.parse_args()

    def record(row: dict) -> None:
        print(json.dumps(row), flush=True)
        if not args.no_record:
            with open(HERE / "results.jsonl", "a") as fh:
                fh.write(json.dumps(row) + "\n")

    if args.wide:
        wide_sets(args.n, record)
        return
    if args.sets:
        descent_sets(args.n, args.sets, record)
        return
    if args.exact:
        exact_sets(args.n, args.exact, record)
        return
    from pynndescent import NNDescent
    from sklearn.neighbors import NearestNeighbors

    from ctsne.neighbors.search import LOW_DIM_DESCENT, ExactIndex

    NNDescent(np.random.default_rng(0).normal(size=(3000, 10)), n_neighbors=K)  # compile
    for n in args.n:
        X = make_data(n, 10)[0]
        rows = np.random.default_rng(1).choice(n, 3000, replace=False)
        load = os.getloadavg()[0]
        t = time.perf_counter()
        exact = ExactIndex(X, n_jobs=2).query(X, K)[1]
        runs = {"ExactIndex": (time.perf_counter() - t, 1.0)}
        if n <= args.sklearn_up_to:
            t = time.perf_counter()
            nn = NearestNeighbors(n_neighbors=K, n_jobs=2).fit(X)
            for s in range(0, n, 20_000):
                nn.kneighbors(X[s:s + 20_000])
            runs["sklearn"] = (time.perf_counter() - t, 1.0)
        for name, kw in [("pynndescent", {}), ("pynndescent-4x2", LOW_DIM_DESCENT)]:
            t = time.perf_counter()
            found = NNDescent(X, n_neighbors=K, random_state=0, n_jobs=2, low_memory=True,
                              **kw).neighbor_graph[0]
            runs[name] = (time.perf_counter() - t, recall(exact[rows], found[rows]))
        row = {"date": datetime.date.today().isoformat(), "machine": platform.node(),
               "cpu_count": os.cpu_count(), "load_1min_before": load, "case": f"knn-{n}",
               "k": K, **{f"{k}_s": v[0] for k, v in runs.items()},
               **{f"{k}_recall": v[1] for k, v in runs.items()}}
        record(row)


if __name__ == "__main__":
    main()

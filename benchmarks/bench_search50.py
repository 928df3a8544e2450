"""The neighbour search at 50 features: ctsne's pynndescent, hnswlib, faiss and brute force.

    python benchmarks/bench_search50.py --n 200000 --save
    python benchmarks/bench_search50.py --n 1000000 --k 90 --runs ctsne,hnswlib,faiss-hnsw

On ``bench_single_cell.pc_like`` data (``--features`` PC-like features, 30 clusters, its
batches as a ``--classes``-class prior), each search finds every point's k nearest other
points (k = 90, perplexity 30 × 3, and k = 15, UMAP's), one fresh child process per run
and k, one after another, on ``--threads`` threads (BLAS, OpenMP and numba capped too):

* ``ctsne``: ``ctsne.neighbors.search.nearest_neighbors(method="approx")``, the search of
  a fit above ``APPROX_ABOVE`` points (pynndescent as ctsne calls it); ``auto_exact``
  says whether a fit's "auto" would search exactly at this size instead;
* ``hnswlib``: M = 16, ef_construction = 200, ef = max(2k, 50), float32;
* ``faiss-hnsw``: ``IndexHNSWFlat`` with the same M, efConstruction and efSearch, float32;
* ``faiss-flat``: ``IndexFlatL2``, exact in float32 (up to ``--exact-up-to`` points);
* ``brute``: scikit-learn's ``NearestNeighbors(algorithm="brute")`` (BLAS), queried in
  chunks of 20,000 (up to ``--exact-up-to`` points);
* ``ctsne-by-class``: the lists of a label-balanced P, through the fit's own provider
  ``ctsne.neighbors.provider.NeighborLists(X, classes).balanced(k)``: each point's k
  nearest of its own class (``own_s``), then its nearest of each other class (blocks of
  ``block_width``, or one pooled list above 8 other classes; ``other_s``).

Queries are answered in chunks of 50,000 rows into int32 indices and float32 (float64
for ctsne and brute) distances, as a fit keeps them. Row: seconds to build and query all
points (``build_s`` and ``query_s`` where they part), warm-up (pynndescent's compilation,
outside the time), peak RSS of the process, of the data alone and after the warm-up
(``rss_warm_mb``: numba's compilation can hold more than a small search), recall@k: the
share of the exact k nearest found, on a fixed subsample of ``--sample`` points whose
exact lists are found by brute force (by-class: within the own class, ``recall``, and
within each other class, ``recall_other``). The table goes to stdout, JSON lines to
stderr; ``--save`` appends them to results.jsonl.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import time

import numpy as np
from bench_single_cell import pc_like
from common import (
    exact_neighbours,
    limit_threads,
    peak_rss_mb,
    query_rows,
    record,
    run_child,
    run_meta,
)

RUNS = ("ctsne", "hnswlib", "faiss-hnsw", "faiss-flat", "brute", "ctsne-by-class")
NEEDS = {"hnswlib": "hnswlib", "faiss-hnsw": "faiss", "faiss-flat": "faiss"}
EXACT = ("faiss-flat", "brute")
CHUNK = 50_000


def _without_self(idx: np.ndarray, dist: np.ndarray, rows: np.ndarray, k: int):
    """Each row's list less the point itself (its farthest entry where it is missing)."""
    from ctsne.neighbors.search import drop_self

    return drop_self(idx, dist, rows, k)


def _chunked(query, n: int, k: int, dtype=np.float32):
    """``query(rows)`` → (idx, dist) of k + 1 with self, over all points in chunks."""
    idx, dist = np.empty((n, k), np.int32), np.empty((n, k), dtype)
    for s in range(0, n, CHUNK):
        rows = np.arange(s, min(n, s + CHUNK))
        i, d = query(rows)
        idx[rows], dist[rows] = _without_self(i, d, rows, k)
    return idx, dist


def search(run: str, X: np.ndarray, k: int, threads: int) -> tuple[np.ndarray, dict]:
    """One run's lists of all points (n, k) and its times."""
    n, d = X.shape
    ef = max(2 * k, 50)
    t0 = time.perf_counter()
    if run == "ctsne":
        from ctsne.neighbors.search import is_exact_search, nearest_neighbors

        idx, _ = nearest_neighbors(X, k, method="approx", random_state=0, n_jobs=threads)
        return idx, {"seconds": time.perf_counter() - t0, "auto_exact": is_exact_search(n, d)}
    if run == "brute":
        from sklearn.neighbors import NearestNeighbors

        nn = NearestNeighbors(algorithm="brute", n_jobs=threads).fit(X)
        idx, _ = _chunked(lambda r: nn.kneighbors(X[r], k + 1)[::-1], n, k, np.float64)
        return idx, {"seconds": time.perf_counter() - t0}
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    if run == "hnswlib":
        import hnswlib

        index = hnswlib.Index(space="l2", dim=d)
        index.init_index(max_elements=n, M=16, ef_construction=200, random_seed=0)
        index.add_items(X32, num_threads=threads)
        index.set_ef(ef)
        query = lambda r: index.knn_query(X32[r], k + 1, num_threads=threads)  # noqa: E731
    else:
        import faiss

        faiss.omp_set_num_threads(threads)
        if run == "faiss-flat":
            index = faiss.IndexFlatL2(d)
        else:
            index = faiss.IndexHNSWFlat(d, 16)
            index.hnsw.efConstruction = 200
        index.add(X32)
        if run == "faiss-hnsw":
            index.hnsw.efSearch = ef
        query = lambda r: index.search(X32[r], k + 1)[::-1]  # noqa: E731
    t1 = time.perf_counter()
    idx, _ = _chunked(query, n, k)
    t2 = time.perf_counter()
    return idx, {"seconds": t2 - t0, "build_s": t1 - t0, "query_s": t2 - t1,
                 "ef": None if run == "faiss-flat" else ef}


def recall(exact: np.ndarray, found: np.ndarray) -> float:
    """Mean share of each row's exact list found in its row of ``found``."""
    return float(np.mean([len(np.intersect1d(e, f)) / len(e)
                          for e, f in zip(exact, found, strict=True)]))


def by_class(X: np.ndarray, codes: np.ndarray, k: int, threads: int, rows: np.ndarray):
    """The by-class row: the provider's balanced lists, timed, and their recalls."""
    from ctsne.neighbors.provider import NeighborLists

    lists = NeighborLists(X, codes, random_state=0, n_jobs=threads)
    t0 = time.perf_counter()
    own_idx, _ = lists.own_class(k)
    t1 = time.perf_counter()
    bl = lists.balanced(k)
    t2 = time.perf_counter()
    out = {"seconds": t2 - t0, "own_s": t1 - t0, "other_s": t2 - t1,
           "block_width": bl.block_width, "peak_rss_mb": peak_rss_mb()}
    own_true = [None] * len(rows)
    other_true = [[] for _ in rows]
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        here = np.flatnonzero(codes[rows] == c)  # queries of class c: own lists
        pos = np.searchsorted(members, rows[here])
        for q, lst in zip(here, members[exact_neighbours(X[members], pos, k, threads)],
                          strict=True):
            own_true[q] = lst
        away = np.flatnonzero(codes[rows] != c)  # queries of other classes: class c's block
        if bl.block_width is not None:
            from sklearn.neighbors import NearestNeighbors

            nn = NearestNeighbors(algorithm="brute", n_jobs=threads).fit(X[members])
            w = min(bl.block_width, len(members))
            for q, lst in zip(away, nn.kneighbors(X[rows[away]], w, return_distance=False),
                              strict=True):
                other_true[q].append(members[lst])
    if bl.block_width is None:  # pooled: the k nearest of all other classes
        from sklearn.neighbors import NearestNeighbors

        for c in np.unique(codes):
            rest = np.flatnonzero(codes != c)
            here = np.flatnonzero(codes[rows] == c)
            nn = NearestNeighbors(algorithm="brute", n_jobs=threads).fit(X[rest])
            for q, lst in zip(here, nn.kneighbors(X[rows[here]], k, return_distance=False),
                              strict=True):
                other_true[q].append(rest[lst])
    other = bl.other_idx[rows]
    found_other = [o[o != r] for o, r in zip(other, rows, strict=True)]  # less empty slots
    out["recall"] = recall(own_true, own_idx[rows])
    out["recall_other"] = recall([np.concatenate(t) for t in other_true], found_other)
    return out


def child(a) -> dict:
    """Body of a child process: one search of all points, then its recall."""
    X, _, codes = pc_like(a.n, np.random.default_rng(0), a.features, batches=a.classes)
    out = {"run": a.child, "rss_data_mb": peak_rss_mb(), "warmup_s": None}
    rows = query_rows(a.n, a.sample)
    if a.child.startswith("ctsne"):  # pynndescent's compilation (cached on disk) untimed
        from ctsne.neighbors.search import nearest_neighbors

        t0 = time.perf_counter()
        nearest_neighbors(X[:3000], a.k, method="approx", random_state=0, n_jobs=a.threads)
        out["warmup_s"] = time.perf_counter() - t0
    out["rss_warm_mb"] = peak_rss_mb()  # what the timed search's peak starts from
    if a.child == "ctsne-by-class":
        out.update(by_class(X, codes, a.k, a.threads, rows))
        return out
    idx, info = search(a.child, X, a.k, a.threads)
    out.update(info, peak_rss_mb=peak_rss_mb())
    t0 = time.perf_counter()
    out["recall"] = recall(exact_neighbours(X, rows, a.k, a.threads), idx[rows])
    out["truth_s"] = time.perf_counter() - t0
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--k", type=int, nargs="+", default=[90, 15])
    ap.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated, of {RUNS}")
    ap.add_argument("--classes", type=int, default=3, help="classes of the by-class prior")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=int, default=2_000, help="query points of the recall")
    ap.add_argument("--exact-up-to", type=int, default=1_000_000,
                    help="skip the exact searches (faiss-flat, brute) above this many points")
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        a.k = a.k[0]
        print(json.dumps(child(a)), flush=True)
        return
    runs = [r.strip() for r in a.runs.split(",") if r.strip()]
    if set(runs) - set(RUNS):
        ap.error(f"unknown runs: {', '.join(sorted(set(runs) - set(RUNS)))}")
    limit_threads(a.threads)
    print(f"pc_like, n = {a.n:,}, {a.features} features, {a.threads} threads, "
          f"recall on {min(a.n, a.sample):,} points")
    print(f"{'run':16} {'k':>3} {'total s':>8} {'build s':>8} {'query s':>8} {'peak MB':>8} "
          f"{'warm MB':>8} {'recall':>7} {'other':>7}")
    passed = [f"--{k.replace('_', '-')}={getattr(a, k)}"
              for k in ("n", "features", "classes", "threads", "sample")]
    for k in a.k:
        for run in runs:
            if run in NEEDS and importlib.util.find_spec(NEEDS[run]) is None:
                print(f"{run:16} {k:3} skipped: {NEEDS[run]} is not installed")
                continue
            if run in EXACT and a.n > a.exact_up_to:
                print(f"{run:16} {k:3} skipped: n > --exact-up-to {a.exact_up_to:,}")
                continue
            load = os.getloadavg()[0]
            row = {"benchmark": "search50", **run_meta(load), "data": "pc_like", "n": a.n,
                   "features": a.features, "k": k, "threads": a.threads, "sample": a.sample,
                   **run_child(__file__, [*passed, f"--k={k}", "--child", run])}
            row.setdefault("run", run)
            if run == "ctsne-by-class":
                row["classes"] = a.classes
            if "error" in row:
                print(f"{run:16} {k:3} error: {row['error'].strip().splitlines()[-1]}")
            else:
                cells = [format(row[c], "8.1f") if row.get(c) is not None else f"{'-':>8}"
                         for c in ("seconds", "build_s", "query_s", "peak_rss_mb",
                                   "rss_warm_mb")]
                other = row.get("recall_other")
                print(f"{run:16} {k:3} {' '.join(cells)} {row['recall']:7.4f} "
                      f"{'-' if other is None else format(other, '.4f'):>7}", flush=True)
            with contextlib.redirect_stdout(sys.stderr):  # the table on stdout, JSON on stderr
                record(row, a.save)


if __name__ == "__main__":
    main()

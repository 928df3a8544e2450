"""The standard kNN lists found class by class, where a prior separates the data.

"auto" needs both the standard lists (to measure how much of P already crosses the
classes) and each point's own-class lists (for the balanced P it builds when too little
does). Where the prior separates the data, a point's k nearest points of all classes are
its k nearest of its own class, so the standard lists can come from the own-class ones:

1. each class's own lists, from a k-d tree over that class (k + 1 queries, as the
   standard search makes them, so that distances are computed by the same code);
2. for every other class m, how many of m's points lie within each point's k-th own-class
   distance (a fixed-radius count on m's tree: far from m, the tree prunes at once);
3. a point with none there keeps its own list as its standard list; the others (the
   points near another class) are searched over all points, exactly as the standard
   search does.

Both steps give the standard search's lists (same neighbours, same distances; the order
of exactly tied neighbours may differ), so the P does not depend on which order ran. The
gain is the trees' cost: a query's cost grows with the points a tree holds (BENCHMARKS.md:
200,000 points in 5 classes, 10 features, k = 91: 10.1 s for the standard search against
4.4 s for the five class searches). Where the prior is mixed in the data, nearly every
point lies near another class and step 3 would repeat the standard search; a probe on
:data:`PROBE_SAMPLE` points (:func:`near_other_share`) chooses the order first.
"""

from __future__ import annotations

import numpy as np

from .search import (
    KD_LEAF_SIZE,
    QUERY_CHUNK,
    TREE_DIMS,
    TREE_MAX_N,
    ExactIndex,
    drop_self,
    is_exact_search,
)

__all__ = ["OWN_FIRST_CLASSES_UP_TO", "OWN_FIRST_FROM", "OWN_FIRST_UP_TO", "PROBE_SAMPLE",
           "near_other_share", "own_first_lists", "standard_through_classes",
           "use_own_first"]

# Points from which the class-by-class order is considered. Measured (10 features, k = 91,
# 5 shifted classes, 2 threads; standard search vs steps 1-3): 50,000 points 0.78 vs
# 0.78 s, 100,000 1.88 vs 1.68 s, 200,000 7.8 vs 5.3 s. The probe (~0.15 s) pays from
# about here.
OWN_FIRST_FROM = 150_000
# Most classes for which it is: step 2 asks every other class's tree for every point
# (100,000 points in 30 classes: 2.7 s against the standard search's 2.0 s).
OWN_FIRST_CLASSES_UP_TO = 10
# Share of probed points with another class within their k-th own-class distance up to
# which the class-by-class order runs. Those points are searched twice (their class, then
# all points), the others once in a smaller tree; above about half the standard P is
# likely mixed enough to be kept, and then the own-class lists are not needed at all.
OWN_FIRST_UP_TO = 0.5
# Points probed (a fixed seed: the order is a property of the data, not of a run).
PROBE_SAMPLE = 1_000
# A radius is widened by this relative amount before the counts, so that rounding of the
# squared distance cannot hide a point tied with the k-th own-class neighbour.
_WIDEN = 1e-9


def use_own_first(n: int, p: int, k: int, codes: np.ndarray, method: str,
                  metric: str) -> bool:
    """Whether the standard lists may be found class by class (before the probe).

    Euclidean data in at most ``TREE_DIMS`` features, every class holding more than k + 1
    points. Where the standard search is the exact k-d tree
    (:func:`ctsne.neighbors.search.is_exact_search`) both orders give the same lists;
    above ``TREE_MAX_N`` points, where it would be approximate (pynndescent), the order
    is used with ``method="auto"`` when every class fits a tree (at most ``TREE_MAX_N``
    points): the lists are then exact, and found faster than the approximate ones.
    """
    if n < OWN_FIRST_FROM or metric != "euclidean" or p > TREE_DIMS:
        return False
    sizes = np.bincount(codes)
    if not is_exact_search(n, p, method) and (method != "auto" or sizes.max() > TREE_MAX_N):
        return False  # asked for approximate lists, or a class too large for its tree
    return bool(len(sizes) <= OWN_FIRST_CLASSES_UP_TO and sizes.min() > k + 1)


def _trees(X: np.ndarray, codes: np.ndarray) -> list:
    from scipy.spatial import cKDTree

    return [cKDTree(np.ascontiguousarray(X[codes == c], dtype=np.float64),
                    leafsize=KD_LEAF_SIZE) for c in range(int(codes.max()) + 1)]


def _near_other(trees: list, X: np.ndarray, codes: np.ndarray, rows: np.ndarray,
                radius: np.ndarray, jobs: int) -> np.ndarray:
    """Whether each of ``rows`` has a point of another class within its ``radius``."""
    near = np.zeros(len(rows), dtype=bool)
    for m, tree in enumerate(trees):
        ask = np.flatnonzero(codes[rows] != m)
        if len(ask):
            count = tree.query_ball_point(X[rows[ask]], radius[ask] * (1.0 + _WIDEN),
                                          return_length=True, workers=jobs)
            near[ask] |= np.asarray(count) > 0
    return near


def near_other_share(X: np.ndarray, codes: np.ndarray, k: int, n_jobs: int | None = None,
                     sample: int = PROBE_SAMPLE, seed: int = 0) -> float:
    """Share of ``sample`` points with a point of another class closer than their k-th
    own-class neighbour (the points step 3 of the module note searches again)."""
    jobs = -1 if n_jobs is None or n_jobs < 0 else max(1, int(n_jobs))
    n = len(codes)
    rows = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    trees = _trees(X, codes)
    radius = np.empty(len(rows))
    for c, tree in enumerate(trees):
        mine = np.flatnonzero(codes[rows] == c)
        if len(mine):
            d, _ = tree.query(X[rows[mine]], k=[k + 1], workers=jobs)
            radius[mine] = d[:, 0]
    return float(_near_other(trees, X, codes, rows, radius, jobs).mean())


def own_first_lists(X: np.ndarray, codes: np.ndarray, k: int, n_jobs: int | None = None,
                    progress=None):
    """The standard lists and the own-class lists, class by class (module note).

    Parameters
    ----------
    X : ndarray (n, p)
        Euclidean, at most ``TREE_DIMS`` features (:func:`use_own_first`).
    codes : ndarray of int (n,)
        Classes 0..L−1, each of more than k + 1 points.
    k : int
    n_jobs : int or None
    progress : callable(done, total), optional

    Returns
    -------
    idx : ndarray of int32 (n, k), dist : ndarray (n, k)
        What :func:`ctsne.neighbors.search.nearest_neighbors` returns for ``X``.
    own_idx : ndarray of int64 (n, k), own_dist : ndarray (n, k)
        Each point's k nearest points of its own class.
    """
    jobs = -1 if n_jobs is None or n_jobs < 0 else max(1, int(n_jobs))
    n = len(codes)
    own_idx = np.empty((n, k), dtype=np.int64)
    own_dist = np.empty((n, k))
    trees = _trees(X, codes)
    for c, tree in enumerate(trees):
        rows = np.flatnonzero(codes == c)
        order = np.asarray(tree.indices)  # the class in its tree's order (ExactIndex.order)
        for start in range(0, len(rows), QUERY_CHUNK):
            local = order[start:start + QUERY_CHUNK]
            part = rows[local]
            d, i = tree.query(X[part], k=[*range(1, k + 2)], workers=jobs)
            i, d = drop_self(i, d, local, k)
            own_idx[part], own_dist[part] = rows[i], d
    if progress is not None:
        progress(n // 2, n)
    everyone = np.arange(n)
    near = _near_other(trees, X, codes, everyone, own_dist[:, -1], jobs)
    del trees
    itype = np.int32 if n < np.iinfo(np.int32).max else np.int64
    idx = own_idx.astype(itype)
    dist = own_dist.copy()
    again = np.flatnonzero(near)
    if len(again):
        index = ExactIndex(X, "euclidean", n_jobs)
        again = index.order[near[index.order]]  # in the tree's order (ExactIndex.order)
        for start in range(0, len(again), QUERY_CHUNK):
            part = again[start:start + QUERY_CHUNK]
            d, i = index.query(X[part], k + 1)
            idx[part], dist[part] = drop_self(i, d, part, k)
    if progress is not None:
        progress(n, n)
    return idx, dist, own_idx, own_dist


def standard_through_classes(X: np.ndarray, codes: np.ndarray, k: int, method: str = "auto",
                             metric: str = "euclidean", n_jobs: int | None = None,
                             progress=None):
    """:func:`own_first_lists` where :func:`use_own_first` and the probe choose that order,
    else None (the caller then runs the standard search)."""
    X = np.asarray(X)
    if not use_own_first(X.shape[0], X.shape[1], k, codes, method, metric):
        return None
    if near_other_share(X, codes, k, n_jobs) > OWN_FIRST_UP_TO:
        return None
    return own_first_lists(X, codes, k, n_jobs, progress)

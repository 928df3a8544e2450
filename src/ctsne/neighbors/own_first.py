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

Both orders give the exact search's lists (same neighbours, same distances; the order of
exactly tied neighbours may differ). The order is used where the standard search would be
approximate (above ``TREE_MAX_N`` points, ``BLOCK_TREE_MAX_N`` with 8-15 features): the
class trees give exact lists there in less time than pynndescent (:data:`OWN_FIRST_FROM`,
:data:`OWN_FIRST_BLOCK_FROM`). Where the prior is mixed in the data, nearly every point
lies near another class and step 3 would repeat the standard search; a probe on
:data:`PROBE_SAMPLE` points (:func:`near_other_share`) chooses the order first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..tuning import (
    BLOCK_TREE_DIMS,
    BLOCK_TREE_MAX_N,
    BRUTE_UP_TO,
    OWN_FIRST_BLOCK_FROM,
    OWN_FIRST_CLASSES_UP_TO,
    OWN_FIRST_FROM,
    OWN_FIRST_UP_TO,
    TREE_DIMS,
    TREE_MAX_N,
)
from ..tuning import OWN_FIRST_PROBE_SAMPLE as PROBE_SAMPLE
from .brute import brute_within_classes
from .search import ExactIndex, is_exact_search, uses_block_tree

__all__ = ["OWN_FIRST_BLOCK_FROM", "OWN_FIRST_CLASSES_UP_TO", "OWN_FIRST_FROM", "OWN_FIRST_UP_TO",
           "PROBE_SAMPLE", "ClassLists", "class_tree_lists", "near_other_share", "own_first_lists",
           "standard_through_classes", "use_own_first"]

# The order's thresholds live in ctsne.tuning (what each decides is said there) and are
# named here too: other modules and the tests read them from this one. The probe's fixed
# seed makes the order a property of the data, not of a run.

# A radius is widened by this relative amount before the counts, so that rounding of the
# squared distance cannot hide a point tied with the k-th own-class neighbour.
_WIDEN = 1e-9


def use_own_first(n: int, p: int, k: int, codes: np.ndarray, method: str,
                  metric: str) -> bool:
    """Whether the standard lists may be found class by class (before the probe).

    Euclidean data in at most ``TREE_DIMS`` features, every class holding more than k + 1
    points. Where the standard search is the exact k-d tree
    (:func:`ctsne.neighbors.search.is_exact_search`) both orders give the same lists;
    above ``TREE_MAX_N`` points (``BLOCK_TREE_MAX_N`` with ``BLOCK_TREE_DIMS`` features or
    more), where it would be approximate (pynndescent), the order is used with
    ``method="auto"`` when every class fits a tree (at most that many points): the lists
    are then exact, and found faster than the approximate ones.
    """
    block = BLOCK_TREE_DIMS <= p
    start = OWN_FIRST_BLOCK_FROM if block else OWN_FIRST_FROM
    if n < start or metric != "euclidean" or p > TREE_DIMS:
        return False
    sizes = np.bincount(codes)
    largest = BLOCK_TREE_MAX_N if block else TREE_MAX_N
    if not is_exact_search(n, p, method) and (method != "auto" or sizes.max() > largest):
        return False  # asked for approximate lists, or a class too large for its tree
    return bool(len(sizes) <= OWN_FIRST_CLASSES_UP_TO and sizes.min() > k + 1)


def _class_indexes(X: np.ndarray, codes: np.ndarray,
                   n_jobs: int | None) -> list[tuple[np.ndarray, ExactIndex]]:
    """Each class's points and its k-d tree (:class:`ExactIndex`)."""
    out = []
    for c in range(int(codes.max()) + 1):
        rows = np.flatnonzero(codes == c)
        # the tree of the search over all points (ExactIndex's search_size): the same
        # distance code as the standard search, so both orders give the same lists
        out.append((rows, ExactIndex(X[rows], "euclidean", n_jobs, search_size=len(codes))))
    return out


def _near_other(indexes: list, X: np.ndarray, codes: np.ndarray, rows: np.ndarray,
                radius: np.ndarray) -> np.ndarray:
    """Whether each of ``rows`` has a point of another class within its ``radius``."""
    near = np.zeros(len(rows), dtype=bool)
    for m, (_, index) in enumerate(indexes):
        ask = np.flatnonzero(codes[rows] != m)
        if len(ask):
            near[ask] |= index.count_within(X[rows[ask]], radius[ask] * (1.0 + _WIDEN)) > 0
    return near


def near_other_share(X: np.ndarray, codes: np.ndarray, k: int, n_jobs: int | None = None,
                     sample: int = PROBE_SAMPLE, seed: int = 0,
                     indexes: list | None = None) -> float:
    """Share of ``sample`` points with a point of another class closer than their k-th
    own-class neighbour (the points step 3 of the module note searches again);
    ``indexes``: the classes' trees, where already built."""
    n = len(codes)
    indexes = _class_indexes(X, codes, n_jobs) if indexes is None else indexes
    rows = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    radius = np.empty(len(rows))
    for c, (_, index) in enumerate(indexes):
        mine = np.flatnonzero(codes[rows] == c)
        if len(mine):
            d, _ = index.query(X[rows[mine]], k + 1)
            radius[mine] = d[:, -1]
    return float(_near_other(indexes, X, codes, rows, radius).mean())


def class_tree_lists(X: np.ndarray, codes: np.ndarray, k: int, n_jobs: int | None = None,
                     indexes: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each point's k nearest points of its own class, in the distances of the standard
    search over all points, bit for bit, ties broken by index as there: from one tree per
    class chosen by the size of the whole search (:class:`ExactIndex`'s
    ``search_size``), or where that is the block tree, for classes of at most
    ``BRUTE_UP_TO`` points, by brute force in its distance code, all in one pass
    (:func:`ctsne.neighbors.brute.brute_within_classes`: faster than their trees).

    Returns
    -------
    own_idx : ndarray of int64 (n, k), own_dist : ndarray (n, k)
        A class of at most k points fills the rest with empty slots (the point itself,
        ``inf``).
    """
    n = len(codes)
    own_idx = np.empty((n, k), dtype=np.int64)
    own_dist = np.empty((n, k))
    blocks = uses_block_tree(n, X.shape[1])
    batch = []
    for c in range(int(codes.max()) + 1):
        rows = np.flatnonzero(codes == c) if indexes is None else indexes[c][0]
        if indexes is None and blocks and len(rows) <= BRUTE_UP_TO:
            batch.append(rows)
            continue
        kc = min(k, len(rows) - 1)
        own_idx[rows, kc:], own_dist[rows, kc:] = rows[:, None], np.inf
        if kc < 1:
            continue
        index = indexes[c][1] if indexes is not None else ExactIndex(
            X[rows], "euclidean", n_jobs, search_size=n)
        local_idx = np.empty((len(rows), kc), dtype=np.int64)
        local_dist = np.empty((len(rows), kc))
        index.neighbors_of(X[rows], index.order, kc, local_idx, local_dist)
        own_idx[rows, :kc], own_dist[rows, :kc] = rows[local_idx], local_dist
    if batch:  # the small classes in one pass
        brute_within_classes(X, codes, np.concatenate(batch), k, own_idx, own_dist)
    return own_idx, own_dist


class ClassLists(NamedTuple):
    """The standard lists and the own-class lists of :func:`own_first_lists`."""

    idx: np.ndarray
    dist: np.ndarray
    own_idx: np.ndarray
    own_dist: np.ndarray


def own_first_lists(X: np.ndarray, codes: np.ndarray, k: int, n_jobs: int | None = None,
                    progress=None, indexes: list | None = None) -> ClassLists:
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
    indexes : list, optional
        The classes' trees, where already built (by the probe).

    Returns
    -------
    ClassLists
        ``idx`` (int32 (n, k), int64 beyond 2³¹ points) and ``dist``: what
        :func:`ctsne.neighbors.search.nearest_neighbors` returns for ``X``; ``own_idx``
        (int64) and ``own_dist``: each point's k nearest points of its own class.
    """
    n = len(codes)
    indexes = _class_indexes(X, codes, n_jobs) if indexes is None else indexes
    own_idx, own_dist = class_tree_lists(X, codes, k, n_jobs, indexes)
    if progress is not None:
        progress(n // 2, n)
    near = _near_other(indexes, X, codes, np.arange(n), own_dist[:, -1])
    itype = np.int32 if n < np.iinfo(np.int32).max else np.int64
    idx = own_idx.astype(itype)
    dist = own_dist.copy()
    if near.any():
        index = ExactIndex(X, "euclidean", n_jobs)
        index.neighbors_of(X, index.order[near[index.order]], k, idx, dist)
    if progress is not None:
        progress(n, n)
    return ClassLists(idx, dist, own_idx, own_dist)


def standard_through_classes(X: np.ndarray, codes: np.ndarray, k: int, method: str = "auto",
                             metric: str = "euclidean", n_jobs: int | None = None,
                             progress=None) -> ClassLists | None:
    """:func:`own_first_lists` where :func:`use_own_first` and the probe choose that order,
    else None (the caller then runs the standard search)."""
    X = np.asarray(X)
    if not use_own_first(X.shape[0], X.shape[1], k, codes, method, metric):
        return None
    indexes = _class_indexes(X, codes, n_jobs)  # built once, for the probe and the lists
    if near_other_share(X, codes, k, indexes=indexes) > OWN_FIRST_UP_TO:
        return None
    return own_first_lists(X, codes, k, n_jobs, progress, indexes)

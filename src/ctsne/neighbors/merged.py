"""The standard kNN lists merged from a label-balanced P's lists, where a prior separates
data that the standard search would answer approximately.

"auto" needs the standard lists (to measure how much of P already crosses the classes)
and, where too little does, each point's own-class and other-class lists. In many
features (more than ``TREE_DIMS``) above ``APPROX_ABOVE`` points the standard search is
pynndescent over all points, which costs more than the class-by-class searches together
(its graph grows faster than linearly). Where a probe finds the classes apart, the
balanced lists are therefore found first and each point's standard list is the k nearest
of its own-class list and its other-class lists together: the k nearest points of all
classes lie among the k nearest of its own class and the nearest of each other class,
unless a point has more points of one other class inside its k-th distance than its
block of that class holds; those points are searched over all points exactly. So the
merged lists are exact where the blocks are; where they are not (far lists shared from
representatives above ``REPS_FROM_PAIRS`` pairs, classes above ``APPROX_ABOVE`` searched by
pynndescent), a point can miss a nearer point the block missed, as the pynndescent
search over all points that the merge replaces can.

With many classes where the fit's exact search is the block tree, both lists are exact
in its distance code and :func:`exact_merged_lists` gives the standard search's lists
themselves, without the search. :mod:`ctsne.neighbors.own_first` does the same from the
own-class lists alone in few features.
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import kernel
from ..tuning import MERGE_PROBE_ROWS, MERGE_SEARCH_PAIRS
from ..tuning import MERGE_PROBE_SAMPLE as PROBE_SAMPLE
from . import pooled
from .brute import squared_distance
from .own_first import OWN_FIRST_UP_TO
from .search import TREE_DIMS, ExactIndex, drop_self, is_exact_search

__all__ = ["MERGE_SEARCH_PAIRS", "PROBE_SAMPLE", "apart_share", "exact_merge",
           "exact_merged_lists", "merge_first", "merged_standard_lists", "use_merged"]

# The merge's sizes live in ctsne.tuning and are named here too (other modules and the
# tests read them from this one). Points whose merged list is not certain (a block of
# another class exhausted inside their k-th distance) are searched exactly.


def use_merged(n: int, p: int, method: str, metric: str) -> bool:
    """Whether "auto" may merge the standard lists from the balanced ones (before the
    probe): the standard search would be approximate under ``method="auto"``, in more
    than ``TREE_DIMS`` features or another metric (in fewer, trees answer:
    :mod:`ctsne.neighbors.own_first`)."""
    low_dim = metric == "euclidean" and p <= TREE_DIMS
    return method == "auto" and not low_dim and not is_exact_search(n, p, method)


def apart_share(X: np.ndarray, codes: np.ndarray, k: int, metric: str = "euclidean",
                sample: int = PROBE_SAMPLE, seed: int = 0) -> float:
    """Share of ``sample`` points whose nearest point of another class is closer than
    their k-th own-class neighbour, by exact distances to every point.

    The probe of :func:`ctsne.neighbors.own_first.near_other_share` without trees.
    """
    from sklearn.metrics import pairwise_distances

    n = len(codes)
    rows = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    near = np.zeros(len(rows), dtype=bool)
    for start in range(0, len(rows), MERGE_PROBE_ROWS):
        part = rows[start:start + MERGE_PROBE_ROWS]
        D = pairwise_distances(X[part], X, metric=metric)
        D[np.arange(len(part)), part] = np.inf  # a point is not its own neighbour
        own = codes[None, :] == codes[part][:, None]
        d_own = np.where(own, D, np.inf)
        kk = min(k, d_own.shape[1]) - 1
        kth = np.partition(d_own, kk, axis=1)[:, kk]
        near[start:start + len(part)] = np.where(own, np.inf, D).min(axis=1) <= kth
    return float(near.mean())


def merged_standard_lists(X: np.ndarray, own_idx: np.ndarray, own_dist: np.ndarray,
                          other_idx: np.ndarray, other_dist: np.ndarray,
                          block_width: int | None, k: int, metric: str = "euclidean",
                          n_jobs: int | None = None):
    """Each point's k nearest points of all classes from its balanced lists (module note).

    Parameters
    ----------
    X : ndarray (n, p)
    own_idx, own_dist : ndarray (n, k)
        Own-class lists, empty slots (the point itself, ``inf``) last.
    other_idx, other_dist : ndarray (n, m)
        Other-class lists: blocks of ``block_width`` columns, one per other class, or one
        pooled list of k (``block_width`` None), each nearest first.
    k : int
    metric, n_jobs
        Of the exact search of the uncertain points.

    Returns
    -------
    (idx, dist) or None
        ``idx`` int32 (int64 beyond 2³¹ points) and ``dist`` (n, k), nearest first, as
        :func:`ctsne.neighbors.search.nearest_neighbors` returns them; None where the
        uncertain points are too many to search exactly (:data:`MERGE_SEARCH_PAIRS`).
    """
    n = len(own_idx)
    cand_dist = np.hstack([own_dist, other_dist])
    order = np.argsort(cand_dist, axis=1, kind="stable")[:, :k]
    dist = np.take_along_axis(cand_dist, order, axis=1)
    del cand_dist
    itype = np.int32 if n < np.iinfo(np.int32).max else np.int64
    idx = np.take_along_axis(np.hstack([own_idx, other_idx]), order, axis=1).astype(itype)
    # a block that is full and lies wholly inside the k-th distance may have left out a
    # point of its class nearer than that; a pooled list of k cannot (it holds the k
    # nearest of all other classes)
    unsure = np.zeros(n, dtype=bool)
    if block_width is not None:
        last = other_dist[:, block_width - 1::block_width]
        unsure = np.any(np.isfinite(last) & (last <= dist[:, -1:]), axis=1)
    rows = np.flatnonzero(unsure)
    if len(rows) * n > MERGE_SEARCH_PAIRS:
        return None
    if len(rows):
        d, i = ExactIndex(X, metric, n_jobs).query(X[rows], k + 1)
        idx[rows], dist[rows] = drop_self(i, d, rows, k)
    return idx, dist


def merge_first(X: np.ndarray, codes: np.ndarray, k: int, method: str, metric: str) -> bool:
    """:func:`use_merged` and the probe (:func:`apart_share` at most ``OWN_FIRST_UP_TO``)."""
    return (use_merged(X.shape[0], X.shape[1], method, metric)
            and apart_share(X, codes, k, metric) <= OWN_FIRST_UP_TO)


def exact_merge(X: np.ndarray, codes: np.ndarray, k: int, method: str = "auto",
                metric: str = "euclidean") -> bool:
    """Whether :func:`exact_merged_lists` gives the standard search's lists: the pooled
    lists skip the own class (:func:`ctsne.neighbors.pooled.skips_own_class`) for every
    class (:func:`ctsne.neighbors.pooled.skipping_classes`, at k). The caller checks that
    its other-class lists are pooled (one list of k, not blocks per class)."""
    return bool(pooled.skips_own_class(X.shape, int(codes.max()) + 1, method, metric)
                and pooled.skipping_classes(X, codes, k, until_refused=True).all())


@kernel(pooled.PARALLEL_FROM_ENTRIES)
def _merge_sorted(X, a_idx, a_dist, b_idx, b_dist, idx, dist):
    # two lists per row, each ascending in (squared distance, index), merged into the
    # first k (k = idx.shape[1]) in that order: the block tree's. Equal distances are
    # compared by their squares, recomputed: two squares one unit in the last place apart
    # can have the same root
    k = idx.shape[1]
    ka, kb = a_idx.shape[1], b_idx.shape[1]
    for r in numba.prange(idx.shape[0]):
        a = 0
        b = 0
        for t in range(k):
            take_a = b >= kb
            if not take_a and a < ka:
                da, db = a_dist[r, a], b_dist[r, b]
                if da == db and da < np.inf:
                    da = squared_distance(X, r, a_idx[r, a])
                    db = squared_distance(X, r, b_idx[r, b])
                take_a = da < db or (da == db and a_idx[r, a] < b_idx[r, b])
            if take_a:
                idx[r, t], dist[r, t] = a_idx[r, a], a_dist[r, a]
                a += 1
            else:
                idx[r, t], dist[r, t] = b_idx[r, b], b_dist[r, b]
                b += 1


def exact_merged_lists(X: np.ndarray, own_idx: np.ndarray, own_dist: np.ndarray,
                       other_idx: np.ndarray, other_dist: np.ndarray,
                       k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each point's k nearest points of all classes from its exact own-class list and its
    exact pooled list of k other-class points (:func:`exact_merge`).

    The k nearest of all lie among the k nearest of the own class and the k nearest of
    the others. Both lists come in the block tree's distances and (squared distance,
    index) order, and the merge keeps that order (equal distances compared by their
    squares, recomputed as the tree sums them), so it is the standard search's answer.

    Parameters
    ----------
    X : ndarray (n, p)
        The points (float64), for the squares of equal distances.
    own_idx, own_dist : ndarray (n, k)
    other_idx, other_dist : ndarray (n, k)
        One pooled list per point; empty slots (the point itself, ``inf``) last.
    k : int

    Returns
    -------
    idx : ndarray of int32 (n, k) (int64 beyond 2³¹ points), dist : ndarray (n, k)
    """
    n = len(own_idx)
    itype = np.int32 if n < np.iinfo(np.int32).max else np.int64
    idx = np.empty((n, k), dtype=itype)
    dist = np.empty((n, k))
    _merge_sorted(np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(own_idx),
                  np.ascontiguousarray(own_dist), np.ascontiguousarray(other_idx),
                  np.ascontiguousarray(other_dist), idx, dist, work=n * k)
    return idx, dist

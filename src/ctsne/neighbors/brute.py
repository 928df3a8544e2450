"""Exact Euclidean k-nearest-neighbour search by brute force, for queries far from the data.

A query that lies far from the points it searches (a point of one class asking for its
nearest points of another class the prior separates from it) gets almost no pruning from
a k-d tree or ball tree: every node's bound is about as far as its points. Scanning all
points is then cheaper than the tree, since the scan is a plain vectorised loop. Distances
are summed feature by feature from the differences, as scikit-learn's trees do, not
expanded as ‖x‖² + ‖y‖² − 2x·y, whose cancellation would lose precision exactly for far
queries.

The same sums give small classes their own-class lists (:func:`brute_within_classes`): all
classes in one pass, in the distances and tie order of the block tree. Statistics that only
count or compare neighbours (the counterpart trust, the skipping search's sampled reads)
take the expanded form through BLAS instead (:func:`gram_squared_distances`).
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import even_parts, threaded
from ..tuning import BRUTE_PARALLEL_FROM, BRUTE_SMALL_CHUNK

__all__ = ["brute_knn", "brute_within_classes", "gram_squared_distances", "insert_sorted",
           "smallest_in_rows", "squared_distance"]

# Read inside the kernel (numba compiles their values into it), so kept here, not in
# ctsne.tuning. Queries per parallel task: one distance buffer per task, reused for all its
# queries.
_BLOCK = 64
# Points per tile: the tile's coordinates and distances stay in the L1/L2 cache.
_TILE = 256


@threaded(BRUTE_PARALLEL_FROM)
def _knn(Q, Yt, k, out_idx, out_dist, start, stop):
    # blocks start … stop − 1 of _BLOCK queries
    nq = Q.shape[0]
    p, m = Yt.shape
    for b in numba.prange(start, stop):
        lo, hi = b * _BLOCK, min(nq, (b + 1) * _BLOCK)
        out_dist[lo:hi] = np.inf
        out_idx[lo:hi] = -1
        d = np.empty(_TILE)
        # a tile of points, copied so that its loops have a fixed length and vectorise
        tile = np.zeros((p, _TILE))
        for t0 in range(0, m, _TILE):
            w = min(_TILE, m - t0)
            for j in range(p):
                for t in range(w):
                    tile[j, t] = Yt[j, t0 + t]
            for i in range(lo, hi):
                d[:] = 0.0
                for j in range(p):
                    qj = Q[i, j]
                    row = tile[j]
                    for t in range(_TILE):
                        diff = row[t] - qj
                        d[t] += diff * diff
                best_d = out_dist[i]
                best_i = out_idx[i]
                for t in range(w):  # equal distances stay in index order
                    # the common case, no insertion, decided here without a call
                    if d[t] < best_d[k - 1]:
                        insert_sorted(best_d, best_i, d[t], t0 + t)
        for i in range(lo, hi):
            for a in range(k):
                out_dist[i, a] = np.sqrt(out_dist[i, a])


def smallest_in_rows(d: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` smallest values of ``d`` and their columns, ascending, equal values
    in column order: what a scan that inserts each column into a sorted list keeps (it
    leaves out values not below ``inf``, which come last here). ``k ≤ d.shape[1]``."""
    n, m = d.shape
    if k == 0:
        return np.empty((n, 0), dtype=np.int64), np.empty((n, 0))
    d = np.where(np.isnan(d), np.inf, d)
    if k < m:  # the k-th value, then every column up to it (ties at the k-th included)
        kth = np.partition(d, k - 1, axis=1)[:, k - 1]
        rows, cols = np.nonzero(d <= kth[:, None])
    else:
        rows, cols = np.divmod(np.arange(n * m), m)
    vals = d[rows, cols]
    order = np.lexsort((cols, vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    starts = np.searchsorted(rows, np.arange(n))
    take = np.arange(rows.size) - starts[rows] < k
    return cols[take].reshape(n, k), vals[take].reshape(n, k)


def brute_knn(Y: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``Y`` to each row of ``Q`` (Euclidean, exact).

    Parameters
    ----------
    Y : ndarray (m, p)
        The points searched, ``k ≤ m``.
    Q : ndarray (q, p)
        The queries.
    k : int

    Returns
    -------
    idx : ndarray of int64 (q, k)
        Row numbers of ``Y``, nearest first (ties in row order).
    dist : ndarray (q, k)
    """
    Yt = np.ascontiguousarray(np.asarray(Y, dtype=np.float64).T)
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    idx = np.empty((len(Q), k), dtype=np.int64)
    dist = np.empty((len(Q), k))
    if len(Q):
        _knn.run(Q, Yt, k, idx, dist, items=(len(Q) + _BLOCK - 1) // _BLOCK,
                 work=float(len(Q)) * Yt.shape[1] * Yt.shape[0])
    return idx, dist


# Twin: a small fit compiles neither build of _knn.
@_knn.small
def _knn_small(Q, Yt, k, out_idx, out_dist):
    # the kernel's sums (feature by feature from 0) and its choice (ties in row order)
    p, m = Yt.shape
    kk = min(k, m)
    out_idx[:] = -1
    out_dist[:] = np.inf
    step = max(1, BRUTE_SMALL_CHUNK // max(m, 1))
    for lo in range(0, Q.shape[0], step):
        q = Q[lo:lo + step]
        d = np.zeros((q.shape[0], m))
        for j in range(p):
            diff = Yt[j][None, :] - q[:, j][:, None]
            d += diff * diff
        cols, vals = smallest_in_rows(d, kk)
        found = vals < np.inf
        out_idx[lo:lo + q.shape[0], :kk] = np.where(found, cols, -1)
        out_dist[lo:lo + q.shape[0], :kk] = np.sqrt(vals)


# inlined into its callers' loops (no call per accepted candidate)
@numba.njit(cache=True, inline="always")
def insert_sorted(best, cols, v, j):
    """Put column ``j`` of value ``v`` into a row's sorted k smallest (``best`` ascending,
    ``cols`` their columns) if it belongs there; an equal value stays behind the earlier
    ones, so ties keep arrival (column) order."""
    k = best.shape[0]
    if not v < best[k - 1]:
        return
    pos = k - 1
    while pos > 0 and best[pos - 1] > v:
        best[pos] = best[pos - 1]
        cols[pos] = cols[pos - 1]
        pos -= 1
    best[pos] = v
    cols[pos] = j


@numba.njit(cache=True)
def squared_distance(X, i, j):
    """The squared distance of points i and j as the scans and the block tree sum it:
    feature by feature from 0, in feature order (so lists built by either agree)."""
    v = 0.0
    for f in range(X.shape[1]):
        diff = X[j, f] - X[i, f]
        v += diff * diff
    return v


@threaded(BRUTE_PARALLEL_FROM)
def _within(X, order, seg_of, seg_start, k, out_idx, out_dist, start, stop):
    # point order[a] of segment s (order[seg_start[s]:seg_start[s + 1]], ascending point
    # numbers) against the other points of its segment: the scan's sums and index order;
    # a = start … stop − 1
    # one list a part, not a row view a point (views cost threads shared reference counts;
    # see counterpart._smallest_apart)
    best_d = np.empty(k)
    best_i = np.empty(k, dtype=out_idx.dtype)
    for a in numba.prange(start, stop):
        i = order[a]
        s = seg_of[a]
        for u in range(k):
            best_d[u] = np.inf
            best_i[u] = i
        for b in range(seg_start[s], seg_start[s + 1]):
            j = order[b]
            if j == i:
                continue
            insert_sorted(best_d, best_i, squared_distance(X, i, j), j)
        for u in range(k):
            out_dist[i, u] = np.sqrt(best_d[u])
            out_idx[i, u] = best_i[u]


def brute_within_classes(X: np.ndarray, codes: np.ndarray, rows: np.ndarray, k: int,
                         out_idx: np.ndarray, out_dist: np.ndarray) -> None:
    """Each of ``rows``' ``k`` nearest other points of its own class (``codes``), all
    classes in one pass: each class's points scanned, as :func:`brute_knn` sums and
    orders them (ties by point number), without a call per class. For small classes.

    Parameters
    ----------
    X : ndarray (n, p)
    codes : ndarray of int (n,)
    rows : ndarray of int
        The points asked, whole classes.
    k : int
    out_idx : ndarray of int64 (n, k), out_dist : ndarray (n, k)
        Written at ``rows``; a class of at most k points leaves empty slots (the point
        itself, ``inf``) after its others.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.int64)
    order = rows[np.lexsort((rows, codes[rows]))]  # by class, then point number
    cls = codes[order]
    seg_start = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1], True]).astype(np.int64)
    seg_of = np.repeat(np.arange(len(seg_start) - 1), np.diff(seg_start))
    sizes = np.diff(seg_start)
    work = float(np.sum(sizes.astype(float) ** 2)) * X.shape[1]
    # each point's work is its class's size: parts of equal numbers of pairs
    _within(X, order, seg_of, seg_start, k, out_idx, out_dist,
            bounds=even_parts(sizes[seg_of], _within.threads(work)), work=work)


def gram_squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """All squared Euclidean distances between the rows of A and those of B, expanded as
    ‖a‖² + ‖b‖² − 2a·b (BLAS; a few units in the last place, not the searches' sums)."""
    return (np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
            - 2.0 * A @ B.T)

"""Exact Euclidean k-nearest-neighbour search by brute force, for queries far from the data.

A query that lies far from the points it searches (a point of one class asking for its
nearest points of another class the prior separates from it) gets almost no pruning from
a k-d tree or ball tree: every node's bound is about as far as its points. Scanning all
points is then cheaper than the tree, since the scan is a plain vectorised loop. Distances
are summed feature by feature from the differences, as scikit-learn's trees do, not
expanded as ‖x‖² + ‖y‖² − 2x·y, whose cancellation would lose precision exactly for far
queries.
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import kernel

__all__ = ["brute_knn"]

# Point pairs from which the search runs on several threads.
PARALLEL_FROM = 1e6
# Queries per parallel task: one distance buffer per task, reused for all its queries.
_BLOCK = 64
# Points per tile: the tile's coordinates and distances stay in the L1/L2 cache.
_TILE = 256


@kernel(PARALLEL_FROM)
def _knn(Q, Yt, k, out_idx, out_dist):
    nq = Q.shape[0]
    p, m = Yt.shape
    for b in numba.prange((nq + _BLOCK - 1) // _BLOCK):
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
                for t in range(w):
                    v = d[t]
                    if not v < best_d[k - 1]:
                        continue
                    # insertion keeps the list sorted; equal distances stay in index order
                    pos = k - 1
                    while pos > 0 and best_d[pos - 1] > v:
                        best_d[pos] = best_d[pos - 1]
                        best_i[pos] = best_i[pos - 1]
                        pos -= 1
                    best_d[pos] = v
                    best_i[pos] = t0 + t
        for i in range(lo, hi):
            for a in range(k):
                out_dist[i, a] = np.sqrt(out_dist[i, a])


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
        _knn(Q, Yt, k, idx, dist, work=float(len(Q)) * Yt.shape[1])
    return idx, dist

"""Attractive forces over the non-zeros of a symmetric sparse P, parallel over points."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["Attraction", "attraction"]

# Above this many points the rows are visited in the embedding's Morton order and the
# partners looked up in a copy of Y in that order: P's partners are near in the layout, so
# their rows then share cache lines instead of costing a cache miss per non-zero (the
# data's own order is arbitrary). Below it Y fits in a core's cache anyway.
REORDER_ABOVE = 50_000
# The order follows the layout; recomputed this often (a few ms per 10⁵ points).
REORDER_EVERY = 50


@numba.njit(parallel=True, cache=True)
def _attraction_kernel(indptr, indices, data, Y, want_log):
    n, d = Y.shape
    F = np.zeros((n, d))
    plogt = np.zeros(n)
    for i in numba.prange(n):
        acc = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            d2 = 0.0
            for k in range(d):
                diff = Y[i, k] - Y[j, k]
                d2 += diff * diff
            t = 1.0 / (1.0 + d2)
            pt = data[e] * t
            for k in range(d):
                F[i, k] += pt * (Y[i, k] - Y[j, k])
            if want_log:
                acc -= data[e] * np.log1p(d2)
        plogt[i] = acc
    return F, plogt.sum()


@numba.njit(parallel=True, cache=True)
def _attraction_ordered(indptr, cols, data, Yo, order, want_log):
    """As ``_attraction_kernel`` with row ``order[r]`` of P at position r of ``Yo`` and
    ``cols`` holding the partners' positions; F comes back in P's row order."""
    n, d = Yo.shape
    F = np.zeros((n, d))
    plogt = np.zeros(n)
    for r in numba.prange(n):
        i = order[r]
        acc = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = cols[e]
            d2 = 0.0
            for k in range(d):
                diff = Yo[r, k] - Yo[j, k]
                d2 += diff * diff
            pt = data[e] / (1.0 + d2)
            for k in range(d):
                F[i, k] += pt * (Yo[r, k] - Yo[j, k])
            if want_log:
                acc -= data[e] * np.log1p(d2)
        plogt[r] = acc
    return F, plogt.sum()


@numba.njit(parallel=True, cache=True)
def _renumber(indices, position):
    out = np.empty(indices.shape[0], dtype=np.int32)
    for e in numba.prange(indices.shape[0]):
        out[e] = position[indices[e]]
    return out


def locality_order(Y: np.ndarray) -> np.ndarray:
    """Rows of ``Y`` sorted by the Morton key of their first (up to) three coordinates."""
    from .repulsion.barnes_hut import _LEVELS, _bounding_box, _morton_keys

    Yk = np.ascontiguousarray(Y[:, :3])
    lo, hi = _bounding_box(Yk)
    side = float(np.max(hi - lo))
    if not np.isfinite(side) or side == 0.0:
        return np.arange(len(Y))
    levels = min(_LEVELS[Yk.shape[1]], 16)
    return np.argsort(_morton_keys(Yk, lo, float(2**levels) / side, levels))


class Attraction:
    """``F_i = Σ_j p_ij t_ij (y_i − y_j)`` and, if asked, ``Σ_ij p_ij log t_ij``, for a
    fixed P and successive embeddings (visiting rows in the layout's order when large).

    Parameters
    ----------
    P : csr_matrix (n, n)
        Symmetric: row i lists all of i's partners.
    reorder_above : int
        Fewest points for which rows are visited in Morton order.
    """

    def __init__(self, P: sp.csr_matrix, reorder_above: int = REORDER_ABOVE):
        self.P = P
        self.reorder = P.shape[0] >= reorder_above
        self.calls = 0
        self.order = self.cols = None

    def __call__(self, Y: np.ndarray, want_log: bool = False) -> tuple[np.ndarray, float]:
        P = self.P
        if not self.reorder:
            return _attraction_kernel(P.indptr, P.indices, P.data, Y, want_log)
        if self.calls % REORDER_EVERY == 0:
            self.order = locality_order(Y)
            position = np.empty(len(Y), dtype=np.int32)
            position[self.order] = np.arange(len(Y), dtype=np.int32)
            self.cols = _renumber(P.indices, position)
        self.calls += 1
        Yo = Y[self.order]
        return _attraction_ordered(P.indptr, self.cols, P.data, Yo, self.order, want_log)


def attraction(P: sp.csr_matrix, Y: np.ndarray, want_log: bool = False) -> tuple[np.ndarray, float]:
    """``F_i = Σ_j p_ij t_ij (y_i − y_j)`` and, if asked, ``Σ_ij p_ij log t_ij``.

    ``P`` must be symmetric CSR (row i lists all of i's partners).
    """
    return _attraction_kernel(P.indptr, P.indices, P.data, Y, want_log)

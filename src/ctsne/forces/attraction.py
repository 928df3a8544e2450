"""Attractive forces over the non-zeros of a symmetric sparse P, parallel over points."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._parallel import kernel

__all__ = ["Attraction", "attraction", "attraction_to_fixed", "row_runs"]

# Above this many points the 2-D pass works on a float32 copy of Y. The partners of a row
# are scattered over the layout: at 10⁶ points the float32 table (8 MB) stays in the
# shared cache where the float64 one does not (0.3 s instead of 0.8–1.3 s per pass, 132M
# non-zeros). Once the partners are cached (locality order, below) the pass is bound by
# its arithmetic, the division above all: differences, squares and the quotient in
# float32, four entries at a time, the sums in float64, take 0.88–0.95× the time of the
# float64 arithmetic on float32 partners (interleaved runs, 2 threads, 2026-11-27: 250k
# points, standard P; 100k, label-balanced P of 316 non-zeros a row), where float32
# values of P alone gained nothing (1.00×: the pass does not wait on streaming P). The
# rounding (2^-24 relative on coordinates and quotients; forces within 1e-6 of the float64
# pass) lies far below the approximate repulsion's error; the KL and the exact method
# always use float64.
SINGLE_PRECISION_ABOVE = 50_000
# Non-zeros of P from which a pass runs on the thread pool (about 0.1 ms of serial work).
PARALLEL_FROM_NNZ = 40_000
# Above this many points the pass runs over a copy of P whose rows and columns follow a
# reverse Cuthill-McKee order of P's graph: a row's partners then lie near it in memory
# and their coordinates are mostly still in cache. The points' own order (a file's, often
# random) scatters the reads. Measured at 250k points (33M non-zeros, 2 threads): 0.092 s
# per pass in the given order, 0.060 s in this order (0.070 s in a k-d tree's leaf order);
# the order and the copy cost 0.5 s and P's size. On a label-balanced P (315 non-zeros
# per row) it gains ~8 %: there the pass is bound by its arithmetic.
LOCALITY_ABOVE = 50_000
# The 2-D passes run over this many runs of rows holding equal numbers of non-zeros, not
# over single rows: numba's prange gives each thread an equal count of iterations, and a
# label-balanced P's rows in locality order are uneven (at 200k points the second half of
# the rows held 1.16x the first half's entries, so one of two threads idled ~14 % of a
# pass). 64 runs keep any thread count up to 8 within ~10 % of even.
ROW_RUNS = 64


def row_runs(indptr: np.ndarray, runs: int = ROW_RUNS) -> np.ndarray:
    """Row boundaries (``runs + 1``, non-decreasing) that split the non-zeros evenly."""
    n = len(indptr) - 1
    targets = np.linspace(0, indptr[-1], runs + 1)
    bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n  # targets stay within [0, nnz], so bounds within [0, n]
    return bounds


@kernel(PARALLEL_FROM_NNZ)
def _fixed_kernel(Y, Y_ref, idx, cond):
    m, d = Y.shape
    F = np.zeros((m, d))
    for i in numba.prange(m):
        for a in range(idx.shape[1]):
            j = idx[i, a]
            d2 = 0.0
            for k in range(d):
                diff = Y[i, k] - Y_ref[j, k]
                d2 += diff * diff
            pt = cond[i, a] / (1.0 + d2)
            for k in range(d):
                F[i, k] += pt * (Y[i, k] - Y_ref[j, k])
    return F


def attraction_to_fixed(Y: np.ndarray, Y_ref: np.ndarray, idx: np.ndarray,
                        cond: np.ndarray) -> np.ndarray:
    """``Σ_a cond[i, a] · t_ij (y_i − y_j)`` with ``j = idx[i, a]``, ``t = 1/(1 + |Δy|²)``.

    The attraction of points ``Y`` (m, d) to fixed points ``Y_ref`` (placing new points
    into a fitted map): row i of ``idx`` and ``cond`` (m, k) lists its partners and their
    weights.
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    return _fixed_kernel(Y, np.ascontiguousarray(Y_ref, dtype=np.float64),
                         np.ascontiguousarray(idx, dtype=np.int64),
                         np.ascontiguousarray(cond, dtype=np.float64), work=idx.size)


@kernel(PARALLEL_FROM_NNZ)
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
            q = 1.0 + d2
            pt = data[e] / q
            for k in range(d):
                F[i, k] += pt * (Y[i, k] - Y[j, k])
            if want_log:
                acc -= data[e] * np.log(q)
        plogt[i] = acc
    return F, plogt


@kernel(PARALLEL_FROM_NNZ)
def _attraction_planar(indptr, indices, data, Y, want_log, runs):
    """``_attraction_kernel`` for d = 2, sums kept in registers, over the row runs."""
    n = Y.shape[0]
    F = np.empty((n, 2))
    plogt = np.zeros(n)
    for r in numba.prange(runs.shape[0] - 1):
        for i in range(runs[r], runs[r + 1]):
            _planar_row(indptr, indices, data, Y, want_log, i, F, plogt)
    return F, plogt


@numba.njit(inline="always")
def _planar_row(indptr, indices, data, Y, want_log, i, F, plogt):
    y0, y1 = Y[i, 0], Y[i, 1]
    f0 = f1 = acc = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        a = y0 - Y[j, 0]
        b = y1 - Y[j, 1]
        q = 1.0 + (a * a + b * b)
        pt = data[e] / q
        f0 += pt * a
        f1 += pt * b
        if want_log:
            # log(q), not log1p(d²): numba's log1p calls libm's, and took 2.4x the
            # time of the whole pass with log (200k points, label-balanced P: 0.88 s
            # against 0.36 s; 0.12 s without the KL). They differ only where d² is
            # below float64's resolution at 1, by less than d² itself.
            acc -= data[e] * np.log(q)
    F[i, 0] = f0
    F[i, 1] = f1
    plogt[i] = acc


@kernel(PARALLEL_FROM_NNZ)
def _attraction_planar_single(indptr, indices, data, Y32, runs):
    """``_attraction_planar`` in float32 arithmetic (``Y32``: Y in float32), four
    entries per step in independent lanes, each lane and the row summed in float64."""
    n = Y32.shape[0]
    F = np.empty((n, 2))
    for r in numba.prange(runs.shape[0] - 1):
        for i in range(runs[r], runs[r + 1]):
            _planar_single_row(indptr, indices, data, Y32, i, F)
    return F


@numba.njit(inline="always")
def _planar_single_row(indptr, indices, data, Y32, i, F):
    one = np.float32(1.0)
    y0, y1 = Y32[i, 0], Y32[i, 1]
    a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = 0.0
    e = indptr[i]
    end = indptr[i + 1]
    while e + 4 <= end:
        j0, j1, j2, j3 = indices[e], indices[e + 1], indices[e + 2], indices[e + 3]
        u0, v0 = y0 - Y32[j0, 0], y1 - Y32[j0, 1]
        u1, v1 = y0 - Y32[j1, 0], y1 - Y32[j1, 1]
        u2, v2 = y0 - Y32[j2, 0], y1 - Y32[j2, 1]
        u3, v3 = y0 - Y32[j3, 0], y1 - Y32[j3, 1]
        p0 = np.float32(data[e]) / (one + u0 * u0 + v0 * v0)
        p1 = np.float32(data[e + 1]) / (one + u1 * u1 + v1 * v1)
        p2 = np.float32(data[e + 2]) / (one + u2 * u2 + v2 * v2)
        p3 = np.float32(data[e + 3]) / (one + u3 * u3 + v3 * v3)
        a0 += p0 * u0
        a1 += p1 * u1
        a2 += p2 * u2
        a3 += p3 * u3
        b0 += p0 * v0
        b1 += p1 * v1
        b2 += p2 * v2
        b3 += p3 * v3
        e += 4
    while e < end:
        j0 = indices[e]
        u0, v0 = y0 - Y32[j0, 0], y1 - Y32[j0, 1]
        p0 = np.float32(data[e]) / (one + u0 * u0 + v0 * v0)
        a0 += p0 * u0
        b0 += p0 * v0
        e += 1
    F[i, 0] = (a0 + a1) + (a2 + a3)
    F[i, 1] = (b0 + b1) + (b2 + b3)


def locality_order(P: sp.csr_matrix) -> np.ndarray:
    """A reverse Cuthill-McKee order of P's graph (scipy): neighbours get nearby numbers."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    return np.ascontiguousarray(reverse_cuthill_mckee(P, symmetric_mode=True), dtype=np.int64)


def permuted(P: sp.csr_matrix, order: np.ndarray) -> sp.csr_matrix:
    """``P[order][:, order]``: row r is point ``order[r]``, each row's entries in P's order
    (the passes do not need sorted columns; scipy's indexing took 2.8 s at 33M non-zeros)."""
    n = P.shape[0]
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.arange(n)
    lengths = np.diff(P.indptr)[order]
    indptr = np.zeros(n + 1, dtype=P.indptr.dtype)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.empty_like(P.indices)
    data = np.empty_like(P.data)
    _permute_rows(P.indptr, P.indices, P.data, order, inv, indptr, indices, data)
    return sp.csr_matrix((data, indices, indptr), shape=P.shape, copy=False)


@kernel(PARALLEL_FROM_NNZ)
def _permute_rows(indptr, indices, data, order, inv, new_indptr, new_indices, new_data):
    for r in numba.prange(order.shape[0]):
        e = new_indptr[r]
        for a in range(indptr[order[r]], indptr[order[r] + 1]):
            new_indices[e] = inv[indices[a]]
            new_data[e] = data[a]
            e += 1


@kernel(PARALLEL_FROM_NNZ)
def _take_rows(Y, order):
    out = np.empty((order.shape[0], Y.shape[1]))
    for r in numba.prange(order.shape[0]):
        for k in range(Y.shape[1]):
            out[r, k] = Y[order[r], k]
    return out


@kernel(PARALLEL_FROM_NNZ)
def _put_rows(F, order):
    out = np.empty_like(F)
    for r in numba.prange(order.shape[0]):
        for k in range(F.shape[1]):
            out[order[r], k] = F[r, k]
    return out


class Attraction:
    """Attraction for a fixed P and successive embeddings (see :func:`attraction`).

    Parameters
    ----------
    P : csr_matrix (n, n)
        Symmetric: row i lists all of i's partners.
    single_precision : bool, optional
        The 2-D pass in float32 arithmetic (sums in float64) when the KL is not asked
        for; default: above ``SINGLE_PRECISION_ABOVE`` points.
    locality : bool, optional
        Run over a copy of P in :func:`locality_order` (the results come back in the
        points' order); default: above ``LOCALITY_ABOVE`` points.
    """

    def __init__(self, P: sp.csr_matrix, single_precision: bool | None = None,
                 locality: bool | None = None):
        if single_precision is None:
            single_precision = P.shape[0] > SINGLE_PRECISION_ABOVE
        self.single_precision = single_precision
        if locality is None:
            locality = P.shape[0] > LOCALITY_ABOVE
        self.order = locality_order(P) if locality else None
        self.P = P if self.order is None else permuted(P, self.order)
        self.runs = row_runs(self.P.indptr)

    def __call__(self, Y: np.ndarray, want_log: bool = False) -> tuple[np.ndarray, float]:
        P = self.P
        if self.order is not None:
            Y = _take_rows(Y, self.order)
        # the row terms are summed here, serially: the same order on any thread count
        if Y.shape[1] != 2:
            F, plogt = _attraction_kernel(P.indptr, P.indices, P.data, Y, want_log, work=P.nnz)
        elif self.single_precision and not want_log:
            F = _attraction_planar_single(P.indptr, P.indices, P.data, Y.astype(np.float32),
                                          self.runs, work=P.nnz)
        else:
            F, plogt = _attraction_planar(P.indptr, P.indices, P.data, Y, want_log, self.runs,
                                          work=P.nnz)
        if self.order is not None:
            F = _put_rows(F, self.order)
        return F, float(plogt.sum()) if want_log else 0.0


def attraction(P: sp.csr_matrix, Y: np.ndarray, want_log: bool = False) -> tuple[np.ndarray, float]:
    """``F_i = Σ_j p_ij t_ij (y_i − y_j)`` and, if asked, ``Σ_ij p_ij log t_ij``.

    ``P`` must be symmetric CSR (row i lists all of i's partners).
    """
    return Attraction(P, single_precision=False)(Y, want_log)

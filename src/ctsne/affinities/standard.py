"""Input affinities P: perplexity calibration on k nearest neighbours, symmetrised."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._parallel import kernel
from ..checks import to_safe_scale, warn_ties
from ..neighbors.search import nearest_neighbors

__all__ = ["calibrate", "calibrate_row", "joint_affinities", "n_neighbors_for",
           "standard_neighbors", "symmetrize"]


def n_neighbors_for(perplexity: float, n: int) -> int:
    """k = min(n − 1, ⌊3·perplexity⌋): enough neighbours for the Gaussian's mass."""
    return int(min(n - 1, max(1, np.floor(3 * perplexity))))


# Neighbour entries (n·k) from which a pass runs on the thread pool.
PARALLEL_FROM_ENTRIES = 20_000
# The bisection on each row's precision: entropy tolerance (nats) and most steps.
CALIBRATE_TOL = 1e-8
CALIBRATE_MAX_ITER = 200


@numba.njit(cache=True)
def calibrate_row(dist, perplexity, tol, max_iter, out):
    """One row's ``p_{j|i}`` (1-D views; ``out`` may be ``dist``): see :func:`calibrate`."""
    k = dist.shape[0]
    target = np.log(perplexity)
    # distances relative to the row's largest make the result independent of the
    # data's scale and keep their squares in range (1e-300 or 1e200 would not be)
    top = 0.0
    for j in range(k):
        top = max(top, dist[j])
    if top == 0.0 or not np.isfinite(top):
        top = 1.0
    d2 = np.empty(k)  # the row is copied first, so ``out`` may be ``dist`` itself
    for j in range(k):
        r = dist[j] / top
        d2[j] = r * r
    # relative to the nearest neighbour keeps exp() in range; this only rescales the
    # row, which the normalisation removes
    dmin = d2[0]
    for j in range(k):
        dmin = min(dmin, d2[j])
    lo, hi, beta = 0.0, np.inf, 1.0
    e = np.empty(k)
    s = 1.0
    for _ in range(max_iter):
        s = 0.0
        sd = 0.0
        for j in range(k):
            e[j] = np.exp(-(d2[j] - dmin) * beta)
            s += e[j]
            sd += e[j] * (d2[j] - dmin)
        entropy = np.log(s) + beta * sd / s
        diff = entropy - target
        if abs(diff) < tol:
            break
        if diff > 0:  # too flat: sharpen
            lo = beta
            beta = beta * 2.0 if hi == np.inf else 0.5 * (beta + hi)
        else:
            hi = beta
            beta = 0.5 * (beta + lo)
    for j in range(k):
        out[j] = e[j] / s


@kernel(PARALLEL_FROM_ENTRIES)
def _calibrate_kernel(dist, perplexity, tol, max_iter, out):
    for i in numba.prange(dist.shape[0]):
        calibrate_row(dist[i], perplexity, tol, max_iter, out[i])


def calibrate(distances: np.ndarray, perplexity: float, tol: float = CALIBRATE_TOL,
              max_iter: int = CALIBRATE_MAX_ITER, out: np.ndarray | None = None) -> np.ndarray:
    """Row-stochastic conditional probabilities ``p_{j|i}`` with the given perplexity.

    ``distances`` are (n, k) distances to the k nearest neighbours; the Gaussian acts on
    their squares, after dividing each row by its largest distance (so the result does not
    depend on the scale). Each row's precision is found by bisection on the entropy. ``out``
    (float64, (n, k)) may be ``distances`` itself, to calibrate in place.
    """
    dist = np.ascontiguousarray(distances, dtype=np.float64)
    if out is None:
        out = np.empty_like(dist)
    _calibrate_kernel(dist, float(perplexity), tol, max_iter, out, work=dist.size)
    return out


@numba.njit(cache=True)
def _find(sorted_row, value):
    """Position of ``value`` in an ascending row, or −1."""
    lo, hi = 0, sorted_row.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_row[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    if lo < sorted_row.shape[0] and sorted_row[lo] == value:
        return lo
    return -1


@kernel(PARALLEL_FROM_ENTRIES)
def _sort_rows(idx, cond):
    n = idx.shape[0]
    for i in numba.prange(n):
        order = np.argsort(idx[i])
        idx[i] = idx[i][order]
        cond[i] = cond[i][order]


@kernel(PARALLEL_FROM_ENTRIES)
def _mirror(idx, cond, pos):
    # the only pass with random access: where i sits in each neighbour j's list (or −1),
    # and how many of row i's entries survive (c_ij + c_ji > 0)
    n, k = idx.shape
    own = np.zeros(n, dtype=np.int64)
    for i in numba.prange(n):
        count = 0
        for a in range(k):
            j = idx[i, a]
            p = _find(idx[j], i)
            pos[i, a] = p
            if cond[i, a] > 0.0 or (p >= 0 and cond[j, p] > 0.0):
                count += 1
        own[i] = count
    return own


@numba.njit(cache=True)
def _incoming_counts(idx, cond, pos, extra):
    # serial: many rows i add to the same row j (a plain pass, no searching)
    n, k = idx.shape
    for i in range(n):
        for a in range(k):
            if pos[i, a] < 0 and cond[i, a] > 0.0:
                extra[idx[i, a]] += 1


@kernel(PARALLEL_FROM_ENTRIES)
def _fill_own(idx, cond, pos, indptr, indices, data, scale):
    n, k = idx.shape
    for i in numba.prange(n):
        e = indptr[i]
        for a in range(k):
            j = idx[i, a]
            v = cond[i, a] + (cond[j, pos[i, a]] if pos[i, a] >= 0 else 0.0)
            if v > 0.0:
                indices[e] = j
                data[e] = v * scale
                e += 1


@numba.njit(cache=True)
def _fill_incoming(idx, cond, pos, cursor, indices, data, scale):
    # i ascends, so each row's incoming entries arrive sorted
    n, k = idx.shape
    for i in range(n):
        for a in range(k):
            if pos[i, a] < 0 and cond[i, a] > 0.0:
                j = idx[i, a]
                indices[cursor[j]] = i
                data[cursor[j]] = cond[i, a] * scale
                cursor[j] += 1


@kernel(PARALLEL_FROM_ENTRIES)
def _merge_csr_rows(indptr, split, indices, data):
    # each row is two sorted runs (its own list, then incoming one-way entries)
    n = indptr.shape[0] - 1
    for r in numba.prange(n):
        lo, mid, hi = indptr[r], split[r], indptr[r + 1]
        if mid == hi or mid == lo:
            continue
        ti = indices[lo:hi].copy()
        td = data[lo:hi].copy()
        a, b, e = 0, mid - lo, lo
        na, nb = mid - lo, hi - lo
        while a < na or b < nb:
            if b == nb or (a < na and ti[a] < ti[b]):
                indices[e] = ti[a]
                data[e] = td[a]
                a += 1
            else:
                indices[e] = ti[b]
                data[e] = td[b]
                b += 1
            e += 1


def symmetrize(idx: np.ndarray, cond: np.ndarray) -> sp.csr_matrix:
    """``(C + Cᵀ) / 2n`` as CSR, from C given as k neighbours per row.

    Built at its final size: one pass finds each entry's mirror (where i sits in its
    neighbour's list) and counts each row's own entries, mutual pairs merged; a plain
    pass counts the one-way edges pointing at each row; two more fill them. No COO copy
    and no ``C + Cᵀ`` temporary, which is what keeps 10⁶ points within a few GB (one
    int32 (n, k) table of mirror positions besides the input). ``idx`` and ``cond`` are
    reordered in place (each row sorted by neighbour index). Zero entries are left out;
    columns are sorted within each row.
    """
    n = idx.shape[0]
    work = idx.size
    _sort_rows(idx, cond, work=work)
    pos = np.empty(idx.shape, dtype=np.int32)
    own = _mirror(idx, cond, pos, work=work)
    extra = np.zeros(n, dtype=np.int64)
    _incoming_counts(idx, cond, pos, extra)
    nnz = int(own.sum() + extra.sum())
    itype = np.int32 if nnz < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(n + 1, dtype=itype)
    np.cumsum(own + extra, out=indptr[1:])
    indices = np.empty(nnz, dtype=itype)
    data = np.empty(nnz)
    scale = 1.0 / (2.0 * n)
    _fill_own(idx, cond, pos, indptr, indices, data, scale, work=work)
    cursor = (indptr[:-1] + own).astype(np.int64)
    _fill_incoming(idx, cond, pos, cursor, indices, data, scale)
    _merge_csr_rows(indptr, indptr[:-1] + own.astype(itype), indices, data, work=work)
    P = sp.csr_matrix((data, indices, indptr), shape=(n, n), copy=False)
    P.has_sorted_indices = True
    return P


def standard_neighbors(
    X: np.ndarray,
    perplexity: float,
    neighbors: str = "auto",
    metric: str = "euclidean",
    random_state: int | None = None,
    n_jobs: int | None = None,
    progress=None,
) -> tuple[np.ndarray, np.ndarray]:
    """The k = 3·perplexity nearest neighbours of the standard P, warning about ties.

    ``X`` should already be at a safe scale (:func:`ctsne.checks.to_safe_scale`); the
    other parameters are passed to :func:`ctsne.neighbors.search.nearest_neighbors`.
    """
    k = n_neighbors_for(perplexity, X.shape[0])
    idx, dist = nearest_neighbors(X, k, method=neighbors, metric=metric,
                                  random_state=random_state, n_jobs=n_jobs, progress=progress)
    warn_ties(dist, perplexity)
    return idx, dist


def joint_affinities(
    X: np.ndarray,
    perplexity: float,
    neighbors: str = "auto",
    metric: str = "euclidean",
    random_state: int | None = None,
    n_jobs: int | None = None,
    progress=None,
) -> sp.csr_matrix:
    """Symmetric sparse P summing to 1: ``(P_cond + P_condᵀ) / 2n``.

    Parameters
    ----------
    X : ndarray (n, p)
        Data of extreme magnitude is rescaled by a power of two first (exact), so P does
        not depend on the overall scale of X.
    perplexity : float
        Must be below ``k = min(n − 1, 3·perplexity)``; checked by the caller.
    neighbors, metric, random_state, n_jobs, progress
        Passed to :func:`ctsne.neighbors.search.nearest_neighbors`.
    """
    idx, dist = standard_neighbors(to_safe_scale(X), perplexity, neighbors, metric,
                                   random_state, n_jobs, progress)
    cond = calibrate(dist, perplexity, out=dist)  # in place: the distances are not needed
    return symmetrize(idx, cond)

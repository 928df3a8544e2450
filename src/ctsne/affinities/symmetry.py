"""Symmetrisation of conditional affinities: P = (C + Cᵀ) / 2n on sparse rows.

C is given as k neighbours per row (indices and values); P is built as CSR at its final
size without a COO copy or a ``C + Cᵀ`` temporary (:func:`symmetrize`).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._parallel import kernel
from .calibration import PARALLEL_FROM_ENTRIES  # one threshold for all (n, k) passes

__all__ = ["symmetrize"]


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


@numba.njit(cache=True)
def _sort_pairs(keys, values):
    """Sort ``keys`` ascending in place, moving ``values`` along (Shell sort, gaps 3h + 1).

    Hand-written rather than ``np.argsort`` and fancy indexing: those pull numba's generic
    quicksort and its shape-checking error paths into the kernel, ~5 s of the first
    compile (numba's compile events), for rows of a few dozen entries.
    """
    k = keys.shape[0]
    gap = 1
    while 3 * gap + 1 < k:
        gap = 3 * gap + 1
    while gap > 0:
        for a in range(gap, k):
            key, value = keys[a], values[a]
            b = a
            while b >= gap and keys[b - gap] > key:
                keys[b] = keys[b - gap]
                values[b] = values[b - gap]
                b -= gap
            keys[b] = key
            values[b] = value
        gap //= 3


@kernel(PARALLEL_FROM_ENTRIES)
def _sort_rows(idx, cond):
    n = idx.shape[0]
    for i in numba.prange(n):
        _sort_pairs(idx[i], cond[i])


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
            # int64 in both twins (a prange index is unsigned): one _find, not two
            p = _find(idx[j], np.int64(i))
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

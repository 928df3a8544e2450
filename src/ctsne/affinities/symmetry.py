"""Symmetrisation of conditional affinities: P = (C + Cᵀ) / 2n on sparse rows.

C is given as k neighbours per row (indices and values); P is built as CSR at its final
size without a COO copy or a ``C + Cᵀ`` temporary (:func:`symmetrize`): each row of P
is the merge of C's row and Cᵀ's, both sorted by column. Tables below
``NUMPY_BELOW_ENTRIES`` are merged by scipy instead (the same P; no kernel to compile).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._parallel import threaded
from ..tuning import (  # the (n, k) passes' thresholds, and the transpose's and fill's sizes
    NUMPY_BELOW_ENTRIES,
    PARALLEL_FROM_ENTRIES,
    SYMMETRY_GATHER,
    TRANSPOSE_PARTS,
)

__all__ = ["symmetrize"]

# The transpose is split into at most TRANSPOSE_PARTS parts of C's rows (each holds a
# counter per column, 8 bytes a point a part); the fill gathers SYMMETRY_GATHER Cᵀ values
# ahead of its merge, per thread (a buffer of 8 bytes each).


@threaded(PARALLEL_FROM_ENTRIES)
def _sort_rows(idx, cond, start, stop):
    # A row's zero entries (a balanced P's trimmed tails) are moved behind its positive
    # ones and given the column n, so that only the positive ones are sorted and merged.
    # Those are sorted by column with a radix sort, 8 bits a pass (a row's columns are
    # distinct, so any sort gives the same row): no comparison to mispredict. Hand-written
    # rather than np.argsort: numba's generic quicksort is costly to compile.
    n = idx.shape[0]
    k = idx.shape[1]
    count = np.empty(256, dtype=np.int64)
    keys = np.empty(k, dtype=idx.dtype)  # the other half of each pass: one buffer a part
    values = np.empty(k)
    for i in numba.prange(start, stop):  # rows start … stop − 1
        m = 0
        top = 0  # the row's largest column: its passes
        for a in range(k):
            if cond[i, a] > 0.0:
                idx[i, m] = idx[i, a]
                cond[i, m] = cond[i, a]
                top = max(top, idx[i, a])
                m += 1
        for a in range(m, k):
            idx[i, a] = n
            cond[i, a] = 0.0
        in_row = True  # where the pass reads from: the row, or the buffers
        shift = 0
        while (top >> shift) > 0:
            for d in range(256):
                count[d] = 0
            for a in range(m):
                key = idx[i, a] if in_row else keys[a]
                count[(key >> shift) & 255] += 1
            total = 0
            for d in range(256):
                c = count[d]
                count[d] = total
                total += c
            for a in range(m):
                if in_row:
                    key = idx[i, a]
                    d = (key >> shift) & 255
                    keys[count[d]] = key
                    values[count[d]] = cond[i, a]
                else:
                    key = keys[a]
                    d = (key >> shift) & 255
                    idx[i, count[d]] = key
                    cond[i, count[d]] = values[a]
                count[d] += 1
            in_row = not in_row
            shift += 8
        if not in_row:  # an odd number of passes: the sorted row is in the buffers
            for a in range(m):
                idx[i, a] = keys[a]
                cond[i, a] = values[a]


# Twin: a small first fit compiles no _sort_rows.
@_sort_rows.small(below=NUMPY_BELOW_ENTRIES)
def _sort_rows_small(idx, cond):
    # the kernel's result (a row's columns are distinct, so its unstable sort has one)
    n = idx.shape[0]
    positive = cond > 0.0
    key = np.where(positive, idx, n)
    order = np.argsort(key, axis=1, kind="stable")
    idx[:] = np.take_along_axis(key, order, axis=1)
    cond[:] = np.take_along_axis(np.where(positive, cond, 0.0), order, axis=1)


@threaded(PARALLEL_FROM_ENTRIES)
def _transpose(idx, slots, tsrc, start, stop):
    """Cᵀ's rows: ``tsrc[tptr[j]:tptr[j + 1]]`` holds the flat position ``i·k + a`` of
    every non-zero entry ``idx[i, a] = j``, ascending in i (so each Cᵀ row is sorted by
    column).

    Items are parts of C's rows (part t: rows t·n/T … (t + 1)·n/T − 1 for
    T = ``slots.shape[0]``), in two passes. Given an empty ``tsrc``, each part counts its
    entries per column into ``slots[t]``. Given ``tsrc``, ``slots[t, j]`` is where part t's
    first entry of column j goes (after the parts before it: :func:`_part_slots`), and
    each part writes its own, so every Cᵀ row is in row order whatever the parts.
    Positions rather than (column, value) pairs keep it at one integer per entry. Zero
    entries are left out, so that every entry of Cᵀ adds a positive value and rows can be
    counted without reading values: after :func:`_sort_rows` they are each row's tail,
    from the first index n on.
    """
    n, k = idx.shape
    parts = slots.shape[0]
    fill = tsrc.shape[0] > 0
    for t in range(start, stop):
        for i in range(t * n // parts, (t + 1) * n // parts):
            for a in range(k):
                j = idx[i, a]
                if j == n:
                    break
                if fill:
                    tsrc[slots[t, j]] = i * k + a
                slots[t, j] += 1


def _part_slots(slots: np.ndarray) -> np.ndarray:
    """From each part's counts per column (parts, n), in place, where each part's first
    entry of each column goes; returns Cᵀ's row pointers (n + 1)."""
    n = slots.shape[1]
    tptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(slots.sum(axis=0), out=tptr[1:])
    before = np.cumsum(slots, axis=0) - slots  # the earlier parts' counts
    slots[:] = tptr[:-1] + before
    return tptr


@numba.njit(cache=True)
def _union_row(i, idx, cond, vals, base, tptr, tsrc, indices, data, e, scale, fill):
    """Row i of C + Cᵀ: a merge of C's row (sorted by column) and Cᵀ's (sorted by
    source position, positive entries only). Returns the number of entries kept (C's
    entries above 0 and every mirror pair); with ``fill``, they are written from ``e``
    on, scaled (without ``fill`` the values of Cᵀ are not read: every one of its entries
    is kept).

    A Cᵀ entry at position src = j·k + b has column j: it precedes the C entry of column
    c when src < c·k, follows it when src ≥ (c + 1)·k, and is its mirror otherwise
    (compared without dividing). Cᵀ's values are scattered over C (one cache miss each)
    and no branch waits on one: they are positive by construction, as are C's entries
    before the row's zero tail (:func:`_sort_rows`), so no value is tested and the misses
    overlap.
    """
    n, k = idx.shape
    a = 0
    b = tptr[i]
    end = tptr[i + 1]
    count = 0
    while a < k:
        c = idx[i, a]
        if c == n:  # the row's zero entries, moved to its end by _sort_rows
            break
        lo = np.int64(c) * k
        while b < end and tsrc[b] < lo:  # Cᵀ entries of columns before c
            if fill:
                indices[e + count] = tsrc[b] // k
                data[e + count] = vals[b - base] * scale
            count += 1
            b += 1
        v = cond[i, a]
        if b < end and tsrc[b] < lo + k:  # c's mirror: both halves
            if fill:
                indices[e + count] = c
                data[e + count] = (v + vals[b - base]) * scale
            count += 1
            b += 1
        else:  # C's entries before the row's zero tail are all positive
            if fill:
                indices[e + count] = c
                data[e + count] = v * scale
            count += 1
        a += 1
    while b < end:  # Cᵀ entries after C's last column
        if fill:
            indices[e + count] = tsrc[b] // k
            data[e + count] = vals[b - base] * scale
        count += 1
        b += 1
    return count


@threaded(PARALLEL_FROM_ENTRIES)
def _union(idx, cond, flat, tptr, tsrc, indptr, indices, data, scale, counts, gather,
           start, stop):
    # Counts each row's entries into ``counts`` (then ``indptr``, ``indices`` and ``data``
    # are empty stand-ins of the output's types) or, given no counts, fills the rows. One
    # kernel for both passes, one signature of _union_row (hence np.int64(i)). The fill
    # gathers the Cᵀ values of a run of rows (at most ``gather`` of them, or one longer
    # row) into a buffer, then merges: the gather's cache misses overlap.
    fill = counts.shape[0] == 0
    vals = np.empty(gather if fill else 0)
    i = np.int64(start)
    while i < stop:
        last = i + 1
        base = np.int64(tptr[i])
        if fill:
            while last < stop and tptr[last + 1] - base <= gather:
                last += 1
            if tptr[last] - base > vals.shape[0]:  # one row longer than the buffer
                vals = np.empty(tptr[last] - base)
            for b in range(base, tptr[last]):
                vals[b - base] = flat[tsrc[b]]
        else:
            last = np.int64(stop)
        for row in range(i, last):
            e = np.int64(indptr[row]) if fill else np.int64(0)
            got = _union_row(np.int64(row), idx, cond, vals, base, tptr, tsrc, indices, data,
                             e, scale, fill)
            if not fill:
                counts[row] = got
        i = last


def symmetrize(idx: np.ndarray, cond: np.ndarray) -> sp.csr_matrix:
    """``(C + Cᵀ) / 2n`` as CSR, from C given as k neighbours per row.

    Built at its final size: each row of C is sorted by column, Cᵀ is laid out as the
    positions of C's entries grouped by column (a counting sort over parts of C's rows),
    and row i of P is the merge of C's row i with Cᵀ's, mutual pairs summed; one pass
    counts each row, one fills it. No COO copy and no ``C + Cᵀ`` temporary, which is what keeps 10⁶
    points within a few GB (one integer table of positions besides the input). ``idx``
    and ``cond`` are reordered in place: each row's positive entries sorted by neighbour
    index, then its zero entries with index n. Zero entries are left out of P; columns
    are sorted within each row.
    """
    n, k = idx.shape
    work = idx.size
    _sort_rows.run(idx, cond, items=n, work=work)
    if work < NUMPY_BELOW_ENTRIES:
        return _union_small(idx, cond)
    ptype = np.int32 if idx.size < np.iinfo(np.int32).max else np.int64
    parts = min(_transpose.threads(work), TRANSPOSE_PARTS)
    slots = np.zeros((parts, n), dtype=np.int64)
    _transpose.run(idx, slots, np.empty(0, dtype=ptype), items=parts, work=work)
    tptr = _part_slots(slots)
    tsrc = np.empty(int(tptr[-1]), dtype=ptype)  # zeros are left out
    _transpose.run(idx, slots, tsrc, items=parts, work=work)
    flat = cond.reshape(-1)
    counts = np.empty(n, dtype=np.int64)
    # int32 stand-ins: the types of the fill below but for a P of 2³¹ entries or more
    _union.run(idx, cond, flat, tptr, tsrc, np.empty(0, dtype=np.int32),
               np.empty(0, dtype=np.int32), np.empty(0), 1.0, counts, SYMMETRY_GATHER,
               items=n, work=work)
    nnz = int(counts.sum())
    itype = np.int32 if nnz < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(n + 1, dtype=itype)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(nnz, dtype=itype)
    data = np.empty(nnz)
    _union.run(idx, cond, flat, tptr, tsrc, indptr, indices, data, 1.0 / (2.0 * n),
               np.empty(0, dtype=np.int64), SYMMETRY_GATHER, items=n, work=work)
    P = sp.csr_matrix((data, indices, indptr), shape=(n, n), copy=False)
    P.has_sorted_indices = True
    return P


# Twin of _transpose and _union: a small fit compiles neither.
def _union_small(idx: np.ndarray, cond: np.ndarray) -> sp.csr_matrix:
    """:func:`symmetrize`'s merge for tables below ``NUMPY_BELOW_ENTRIES``, by scipy
    rather than kernels a first run would compile. The
    same P: a mirror pair's ``c_ij + c_ji`` is one addition either way, then scaled."""
    n = idx.shape[0]
    kept = idx < n  # sorted rows: positive entries first
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(kept.sum(axis=1), out=indptr[1:])
    C = sp.csr_matrix((cond[kept], idx[kept], indptr), shape=(n, n))
    C.has_sorted_indices = True
    P = C + C.T.tocsr()
    P.data *= 1.0 / (2.0 * n)
    P.sort_indices()
    return P

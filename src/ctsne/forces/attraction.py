"""Attractive forces over the pairs of a symmetric sparse P, each pair computed once."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._parallel import chunk_count, chunk_runs, threaded
from ..tuning import ATTRACTION_BLOCK_PAIRS as BLOCK_PAIRS
from ..tuning import ATTRACTION_BUFFER_ROWS as BUFFER_ROWS
from ..tuning import ATTRACTION_MOST_BLOCKS as MOST_BLOCKS
from ..tuning import (
    ATTRACTION_PARALLEL_FROM_NNZ,
    LOCALITY_ABOVE,
    PRANGE_FROM_NNZ,
    UPPER_IN_NUMPY_BELOW,
)
from ..tuning import ATTRACTION_SUM_IN_NUMPY_BELOW as SUM_IN_NUMPY_BELOW

__all__ = ["Attraction", "attraction", "attraction_to_fixed", "block_count", "fixed_blocks",
           "locality_order", "pair_blocks", "upper_triangle"]

# Above LOCALITY_ABOVE points the pass runs over a copy of P's pairs in a reverse
# Cuthill-McKee order of P's graph, so a row's partners' coordinates are mostly in cache.
# Each pair (i, j) of P's upper triangle is computed once and applied to both points with
# opposite signs (P is symmetric), halving a pass's divisions and partner loads.
# Each block of rows adds into its own buffer, summed per point in block order. The blocks
# are fixed by P alone (:func:`fixed_blocks`), never by the thread count, and a thread takes
# a run of whole blocks: the forces are the same on any number of threads.
# The sizes (ctsne.tuning): BLOCK_PAIRS pairs of P's upper triangle per block, ~0.1 ms
# of work. MOST_BLOCKS: the most threads the pass keeps busy; 24 gives equal runs to 2, 3, 4, 6, 8
# and 12 threads. Each block's buffer spans the rows its pairs reach: a row a point or
# little more in a locality order (P banded), up to n rows in the points' own order. The
# buffers are cleared and summed on every pass, so they hold at most BUFFER_ROWS rows a
# point in all: where more blocks would need more, a power of two fewer (equal runs for
# 2, 4 and 8 threads); on one thread this costs a few per cent against one block.
# SUM_IN_NUMPY_BELOW: buffer entries below which numpy sums the blocks (~1 ms at most).


def block_count(pairs: int, n: int) -> int:
    """The most blocks the attraction's pass over ``pairs`` pairs of ``n`` points is cut
    into (:func:`fixed_blocks` takes fewer where their buffers would be too large).

    One below ``ATTRACTION_PARALLEL_FROM_NNZ`` (a pass of a few pairs runs on one thread);
    else about one per ``BLOCK_PAIRS`` pairs, at most ``MOST_BLOCKS`` and at most the pairs
    per point (:func:`~ctsne._parallel.chunk_count`). A function of P's size alone, never
    of the thread count.
    """
    if 2 * pairs < ATTRACTION_PARALLEL_FROM_NNZ:
        return 1
    return chunk_count(pairs, max(n, BLOCK_PAIRS), MOST_BLOCKS)


def fixed_blocks(indptr: np.ndarray, indices: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pair_blocks` of the pass over an upper-triangular P: :func:`block_count`
    blocks, or else the most powers of two fewer whose buffers hold at most
    ``BUFFER_ROWS`` rows a point.

    The blocks fix the order of every sum of the pass, and they follow from P alone: the
    forces are the same on any number of threads.
    """
    n = len(indptr) - 1
    blocks = block_count(int(indptr[-1]), n)
    while True:
        split = pair_blocks(indptr, indices, blocks)
        if blocks == 1 or split[2][-1] <= BUFFER_ROWS * n:
            return split
        blocks = 1 << ((blocks - 1).bit_length() - 1)  # the power of two below


def pair_blocks(indptr: np.ndarray, indices: np.ndarray, blocks: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How ``blocks`` blocks of about equal numbers of pairs share an upper-triangular P's
    rows.

    Returns ``rows`` (blocks + 1, the first row of each block and n), ``reach`` (the row
    after the last one each block's pairs touch) and ``offsets`` (blocks + 1: where each
    block's buffer, rows ``rows[t] … reach[t] − 1``, starts in the shared one).
    """
    n = len(indptr) - 1
    targets = np.linspace(0, indptr[-1], blocks + 1)
    rows = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    rows[0], rows[-1] = 0, n  # targets stay within [0, nnz], so rows within [0, n]
    reach = rows[1:].copy()
    for t in range(blocks):
        part = indices[indptr[rows[t]]:indptr[rows[t + 1]]]
        if part.size:
            reach[t] = max(reach[t], int(part.max()) + 1)
    offsets = np.zeros(blocks + 1, dtype=np.int64)
    np.cumsum(reach - rows[:-1], out=offsets[1:])
    return rows, reach, offsets


def upper_triangle(P: sp.csr_matrix, order: np.ndarray | None = None) -> sp.csr_matrix:
    """The entries ``i < j`` of ``P[order][:, order]`` (of P itself when ``order`` is None),
    each row's entries in P's order (:class:`Attraction` sorts them after: a row's
    partners are then read in memory order)."""
    n = P.shape[0]
    # numpy twin of _permuted_upper: a small first fit compiles no kernel here
    if order is None and P.nnz < UPPER_IN_NUMPY_BELOW:
        rows = np.repeat(np.arange(n, dtype=P.indices.dtype), np.diff(P.indptr))
        keep = P.indices > rows
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
        return sp.csr_matrix((P.data[keep], P.indices[keep], indptr), shape=P.shape,
                             copy=False)
    if order is None:
        order = np.arange(n)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.arange(n)
    # two passes over the renumbered rows: how many entries each keeps, then the entries
    counts = np.zeros(n + 1, dtype=np.int64)
    _permuted_upper.run(P.indptr, P.indices, P.data, order, inv, counts, counts,
                        P.indices[:0], P.data[:0], False, items=n, work=P.nnz)  # no entries yet
    indptr = np.cumsum(counts)
    indices = np.empty(indptr[n], dtype=P.indices.dtype)
    data = np.empty(indptr[n], dtype=P.data.dtype)
    _permuted_upper.run(P.indptr, P.indices, P.data, order, inv, counts, indptr, indices, data,
                        True, items=n, work=P.nnz)
    return sp.csr_matrix((data, indices, indptr), shape=P.shape, copy=False)


@threaded(ATTRACTION_PARALLEL_FROM_NNZ)
def _permuted_upper(indptr, indices, data, order, inv, counts, new_indptr, new_indices,
                    new_data, fill, start, stop):
    # new rows start … stop − 1 (row r is old row order[r]), the entries whose new column
    # lies above r in the old row's order: without ``fill`` their number into
    # counts[r + 1], with it the entries from new_indptr[r] on (one body for both passes:
    # one compile)
    for r in range(start, stop):
        e = new_indptr[r] if fill else 0
        c = 0
        for a in range(indptr[order[r]], indptr[order[r] + 1]):
            col = inv[indices[a]]
            if col > r:
                if fill:
                    new_indices[e + c] = col
                    new_data[e + c] = data[a]
                c += 1
        if not fill:
            counts[r + 1] = c


@threaded(ATTRACTION_PARALLEL_FROM_NNZ)
def _fixed_kernel(Y, Y_ref, idx, cond, F, start, stop):
    # rows start … stop − 1 of F (zeros): row i's pull to its partners idx[i]
    d = Y.shape[1]
    for i in range(start, stop):
        for a in range(idx.shape[1]):
            j = idx[i, a]
            d2 = 0.0
            for k in range(d):
                diff = Y[i, k] - Y_ref[j, k]
                d2 += diff * diff
            pt = cond[i, a] / (1.0 + d2)
            for k in range(d):
                F[i, k] += pt * (Y[i, k] - Y_ref[j, k])


def attraction_to_fixed(Y: np.ndarray, Y_ref: np.ndarray, idx: np.ndarray,
                        cond: np.ndarray) -> np.ndarray:
    """``Σ_a cond[i, a] · t_ij (y_i − y_j)`` with ``j = idx[i, a]``, ``t = 1/(1 + |Δy|²)``.

    The attraction of points ``Y`` (m, d) to fixed points ``Y_ref`` (placing new points
    into a fitted map): row i of ``idx`` and ``cond`` (m, k) lists its partners and their
    weights.
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    F = np.zeros(Y.shape)
    _fixed_kernel.run(Y, np.ascontiguousarray(Y_ref, dtype=np.float64),
                      np.ascontiguousarray(idx, dtype=np.int64),
                      np.ascontiguousarray(cond, dtype=np.float64), F, items=len(Y),
                      work=idx.size)
    return F


@threaded(ATTRACTION_PARALLEL_FROM_NNZ, prange_from=PRANGE_FROM_NNZ)
def _attraction_kernel(indptr, indices, data, Y, want_log, rows, offsets, B, plogt, start,
                       stop):
    """Blocks ``start … stop − 1``: each one's buffer in ``B`` (see :func:`pair_blocks`)
    and its ``Σ p log t`` in ``plogt``."""
    d = Y.shape[1]
    for t in numba.prange(start, stop):
        for r in range(offsets[t], offsets[t + 1]):  # each block zeroes its own buffer
            for k in range(d):
                B[r, k] = 0.0
        base = offsets[t] - rows[t]
        acc = 0.0
        for i in range(rows[t], rows[t + 1]):
            for e in range(indptr[i], indptr[i + 1]):
                j = indices[e]
                d2 = 0.0
                for k in range(d):
                    diff = Y[i, k] - Y[j, k]
                    d2 += diff * diff
                q = 1.0 + d2
                pt = data[e] / q
                for k in range(d):
                    f = pt * (Y[i, k] - Y[j, k])
                    B[base + i, k] += f
                    B[base + j, k] -= f
                if want_log:
                    acc -= data[e] * np.log(q)
        plogt[t] = 2.0 * acc  # each pair stands for p_ij and p_ji


@threaded(ATTRACTION_PARALLEL_FROM_NNZ, prange_from=PRANGE_FROM_NNZ)
def _attraction_planar(indptr, indices, data, Y, want_log, rows, offsets, B, plogt, start,
                       stop):
    """``_attraction_kernel`` for d = 2, a row's own sums kept in registers."""
    for t in numba.prange(start, stop):
        for r in range(offsets[t], offsets[t + 1]):  # each block zeroes its own buffer
            B[r, 0] = 0.0
            B[r, 1] = 0.0
        base = offsets[t] - rows[t]
        acc = 0.0
        for i in range(rows[t], rows[t + 1]):
            y0, y1 = Y[i, 0], Y[i, 1]
            f0 = f1 = 0.0
            for e in range(indptr[i], indptr[i + 1]):
                j = indices[e]
                a = y0 - Y[j, 0]
                b = y1 - Y[j, 1]
                q = 1.0 + (a * a + b * b)
                pt = data[e] / q
                fa = pt * a
                fb = pt * b
                f0 += fa
                f1 += fb
                B[base + j, 0] -= fa
                B[base + j, 1] -= fb
                if want_log:
                    # log(q), not log1p(d²): numba's log1p (libm's) is much slower; they
                    # differ only where d² is below float64's resolution at 1, by < d².
                    acc -= data[e] * np.log(q)
            B[base + i, 0] += f0
            B[base + i, 1] += f1
        plogt[t] = 2.0 * acc


def locality_order(P: sp.csr_matrix) -> np.ndarray:
    """A reverse Cuthill-McKee order of P's graph (scipy): neighbours get nearby numbers."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    return np.ascontiguousarray(reverse_cuthill_mckee(P, symmetric_mode=True), dtype=np.int64)


@threaded(ATTRACTION_PARALLEL_FROM_NNZ)
def _take_rows(Y, order, out, start, stop):
    # out[r] = Y[order[r]], rows start … stop − 1
    for r in range(start, stop):
        for k in range(Y.shape[1]):
            out[r, k] = Y[order[r], k]


def first_reaching(rows: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """Per block t, the first block whose buffer reaches row ``rows[t]`` (t itself if no
    earlier one does): a row of block t sums the buffers of that block … t that reach it
    (see :func:`pair_blocks`)."""
    T = len(rows) - 1
    first = np.arange(T, dtype=np.int64)
    for t in range(T):
        reaching = np.flatnonzero(reach[:t] > rows[t])  # reach is not monotone
        if reaching.size:
            first[t] = reaching[0]
    return first


@threaded(ATTRACTION_PARALLEL_FROM_NNZ)
def _sum_blocks(B, rows, reach, offsets, first, order, out, start, stop):
    # rows start … stop − 1 of the sums, each over the buffers reaching it in block order,
    # written to row order[r]: a row's sum is the same in whichever part it falls
    d = B.shape[1]
    t = 0
    for r in range(start, stop):
        while rows[t + 1] <= r:  # the block holding row r (rows[-1] = n > r)
            t += 1
        i = order[r]
        for k in range(d):
            out[i, k] = 0.0
        for b in range(first[t], t + 1):
            if r < reach[b]:
                at = offsets[b] + r - rows[b]
                for k in range(d):
                    out[i, k] += B[at, k]


# Twin: small buffers are summed by numpy, block after block (each row's sum in block
# order from 0, as the kernel adds it: the same numbers); no kernel to compile.
@_sum_blocks.small(below=SUM_IN_NUMPY_BELOW)
def _sum_blocks_small(B, rows, reach, offsets, first, order, out):
    F = np.zeros((rows[-1], B.shape[1]))
    for t in range(len(rows) - 1):
        F[rows[t]:reach[t]] += B[offsets[t]:offsets[t + 1]]
    out[order] = F


class Attraction:
    """Attraction for a fixed P and successive embeddings (see :func:`attraction`).

    The pass runs over blocks of P's rows fixed by P (:func:`fixed_blocks`): its forces
    are the same on any number of threads.

    Parameters
    ----------
    P : csr_matrix (n, n)
        Symmetric: only the entries above the diagonal are read, each for both points
        of its pair.
    locality : bool, optional
        Run over the copy of P's pairs in :func:`locality_order` (the results come back
        in the points' order); default: above ``LOCALITY_ABOVE`` points.
    order : ndarray of int, optional
        The points renumbered by the caller: row r of every ``Y`` given (and of the
        forces returned) is point ``order[r]``. P's pairs are copied in that order once,
        and a pass copies nothing (``locality`` is then ignored).

    Attributes
    ----------
    blocks : tuple of ndarray
        :func:`pair_blocks` of the pass: ``rows``, ``reach`` and ``offsets``.
    """

    def __init__(self, P: sp.csr_matrix, locality: bool | None = None,
                 order: np.ndarray | None = None):
        if order is not None:
            self.order = None
            self.U = upper_triangle(P, np.ascontiguousarray(order, dtype=np.int64))
        else:
            if locality is None:
                locality = P.shape[0] > LOCALITY_ABOVE
            self.order = locality_order(P) if locality else None
            self.U = upper_triangle(P, self.order)
        self.U.sort_indices()
        n = self.U.shape[0]
        self.blocks = fixed_blocks(self.U.indptr, self.U.indices)
        rows, reach, _ = self.blocks
        self._first = first_reaching(rows, reach)
        # where row r of the sums goes: point order[r], or r itself
        self._put = np.arange(n) if self.order is None else self.order

    def __call__(self, Y: np.ndarray, want_log: bool = False) -> tuple[np.ndarray, float]:
        U = self.U
        work = 2 * U.nnz  # the non-zeros of P
        if self.order is not None:
            taken = np.empty((len(self.order), Y.shape[1]))
            _take_rows.run(Y, self.order, taken, items=len(taken), work=work)
            Y = taken
        kern = _attraction_planar if Y.shape[1] == 2 else _attraction_kernel
        rows, reach, offsets = self.blocks
        T = len(rows) - 1
        B = np.empty((offsets[T], Y.shape[1]))
        plogt = np.empty(T)
        # each thread a run of whole blocks; a block's sums do not depend on the run
        kern(U.indptr, U.indices, U.data, Y, want_log, rows, offsets, B, plogt,
             bounds=chunk_runs(T, kern.threads(work)), work=work)
        # the buffers are summed here, not in the pass: a second parallel loop costs compile
        if T == 1 and self.order is None:  # one block spans every row
            F = B
        else:
            F = np.empty((len(self._put), Y.shape[1]))
            _sum_blocks.run(B, rows, reach, offsets, self._first, self._put, F,
                            items=len(F), work=B.size)
        # the blocks' log terms are summed here, in block order
        return F, float(plogt.sum()) if want_log else 0.0


def attraction(P: sp.csr_matrix, Y: np.ndarray, want_log: bool = False) -> tuple[np.ndarray, float]:
    """``F_i = Σ_j p_ij t_ij (y_i − y_j)`` and, if asked, ``Σ_ij p_ij log t_ij``.

    ``P`` must be symmetric CSR (the entries above the diagonal are read).
    """
    return Attraction(P)(Y, want_log)

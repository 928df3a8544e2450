"""The counterpart trust of ``affinities="auto"``'s rule (:mod:`ctsne.affinities.cross_share`):
mutual pairs among exact neighbour lists on each class's centred sample.

For each class, its :data:`K_MUTUAL` nearest points of its own class and of every other
class (or of all other classes pooled, beyond ``PER_CLASS_UP_TO`` of them), exact, ties in
index order, from at most :data:`TRUST_SAMPLE` points a class; a pair (i, j) is mutual when
each lists the other. In at most ``TREE_DIMS`` features the distances are summed feature
by feature (as the block tree sums them: exact zeros for duplicated points, the same bits
on every machine), each class pair in one pass that keeps both directions; beyond, they
are expanded from the product A·Bᵀ.
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import threaded
from ..neighbors.brute import insert_sorted, smallest_in_rows
from ..neighbors.kdtree import BlockTree
from ..neighbors.search import TREE_DIMS
from ..tuning import (  # PARALLEL_FROM_ENTRIES: one threshold for all (n, k)-like passes
    PARALLEL_FROM_ENTRIES,
    TRUST_POOLED_ROWS,
    TRUST_ROWS,
)
from .balanced import PER_CLASS_UP_TO

__all__ = ["K_MUTUAL", "POOLED_SAMPLE", "TRUST_SAMPLE", "counterpart_trust"]

# Neighbours per point in the mutual-pair test.
K_MUTUAL = 10
# Points of each class the test uses at most (exact search on a sample: O(L²·m²·p)).
TRUST_SAMPLE = 1000
# With the other classes pooled (more than PER_CLASS_UP_TO of them): points in all.
POOLED_SAMPLE = 20_000
# Query rows per distance block of the exact search: TRUST_ROWS; rows per Gram block of the
# pooled search: TRUST_POOLED_ROWS (ctsne.tuning).


@threaded(PARALLEL_FROM_ENTRIES)
def _smallest_apart(gram, row_norm, col_norm, own_lo, own_hi, k, out, start, stop):
    # Each row's k smallest squared distances (row_norm[i] + col_norm[j]) − 2·gram[i, j]
    # (gram_squared_distances' expression, the same bits) over the columns outside
    # own_lo[i]:own_hi[i], rows start … stop − 1. A sorted insertion: most entries fail the
    # first test. Equal values stay in column order, so duplicated points pair the same way
    # on every machine. Plain loops only; one buffer a part (no shared refcounts).
    m = gram.shape[1]
    best = np.empty(k)
    row = np.empty(k, dtype=out.dtype)
    for i in numba.prange(start, stop):
        for a in range(k):
            best[a] = np.inf
            row[a] = 0
        norm = row_norm[i]
        for j in range(own_lo[i]):
            v = (norm + col_norm[j]) - 2.0 * gram[i, j]
            if v < best[k - 1]:
                insert_sorted(best, row, v, j)
        for j in range(own_hi[i], m):
            v = (norm + col_norm[j]) - 2.0 * gram[i, j]
            if v < best[k - 1]:
                insert_sorted(best, row, v, j)
        for a in range(k):
            out[i, a] = row[a]


def _distances_small(gram, row_norm, col_norm):
    # the kernels' distances in numpy, the same expression (the same bits)
    return (row_norm[:, None] + col_norm[None, :]) - 2.0 * gram


def _smallest_small(d2, k, out):
    # the kernels' lists from a distance table: ties in column order, nothing not below
    # inf (a left-out point), whose places keep column 0 as the kernels' do
    kk = min(k, d2.shape[1])
    out[:] = 0
    cols, vals = smallest_in_rows(d2, kk)
    out[:, :kk] = np.where(vals < np.inf, cols, 0)


# Twin: a small fit compiles no _smallest_apart.
@_smallest_apart.small
def _smallest_apart_small(gram, row_norm, col_norm, own_lo, own_hi, k, out):
    d2 = _distances_small(gram, row_norm, col_norm)
    cols = np.arange(d2.shape[1])
    d2[(cols >= own_lo[:, None]) & (cols < own_hi[:, None])] = np.inf
    _smallest_small(d2, k, out)


@threaded(PARALLEL_FROM_ENTRIES)
def _pair_scan(A, Bt, gram, row_norm, col_norm, k, skip_self, row_out, col_best, col_rows,
               start, stop):
    # Each row's k nearest columns (into row_out) and, where col_best has columns, each
    # column's k nearest rows, per part p of the rows (items are the parts: rows
    # p·n/P … (p + 1)·n/P − 1 for P = col_best.shape[0]; merged by _column_lists), from
    # one pass over the squared distances: from gram where given, else summed feature by
    # feature in f order (the block tree's sums). With skip_self a row is not its own
    # neighbour. Candidates arrive in index order, so ties keep index order.
    n = row_out.shape[0]
    p, m = Bt.shape
    parts = col_best.shape[0]
    columns = col_best.shape[1] > 0
    from_gram = gram.shape[0] > 0
    d = np.empty(m)
    best = np.empty(k)
    row = np.empty(k, dtype=row_out.dtype)
    last = np.empty(m)
    for part in range(start, stop):
        if columns:
            for j in range(m):
                last[j] = np.inf
                for a in range(k):
                    col_best[part, j, a] = np.inf
                    col_rows[part, j, a] = 0
        for i in range(part * n // parts, (part + 1) * n // parts):
            if from_gram:
                norm = row_norm[i]
                for j in range(m):
                    d[j] = (norm + col_norm[j]) - 2.0 * gram[i, j]
            else:
                for j in range(m):
                    d[j] = 0.0
                for f in range(p):  # a feature at a time: the loop over j vectorises
                    a_f = A[i, f]
                    for j in range(m):
                        z = a_f - Bt[f, j]
                        d[j] += z * z
            if skip_self:
                d[i] = np.inf
            for a in range(k):
                best[a] = np.inf
                row[a] = 0
            bound = np.inf  # best[k − 1], kept in a register
            for j in range(m):
                v = d[j]
                if v < bound:  # insert_sorted inline
                    pos = k - 1
                    while pos > 0 and best[pos - 1] > v:
                        best[pos] = best[pos - 1]
                        row[pos] = row[pos - 1]
                        pos -= 1
                    best[pos] = v
                    row[pos] = j
                    bound = best[k - 1]
                if columns and v < last[j]:  # insert_sorted inline: no view a candidate
                    pos = k - 1
                    while pos > 0 and col_best[part, j, pos - 1] > v:
                        col_best[part, j, pos] = col_best[part, j, pos - 1]
                        col_rows[part, j, pos] = col_rows[part, j, pos - 1]
                        pos -= 1
                    col_best[part, j, pos] = v
                    col_rows[part, j, pos] = i
                    last[j] = col_best[part, j, k - 1]
            for a in range(k):
                row_out[i, a] = row[a]


# Twin of _pair_scan's sums: a small fit compiles no _pair_scan.
def _direct_small(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    # _pair_scan's feature-by-feature sums in numpy: the same operations in the same
    # order (the same bits)
    d2 = np.zeros((len(A), len(B)))
    for f in range(A.shape[1]):
        z = A[:, f, None] - B[None, :, f]
        d2 += z * z
    return d2


def _column_lists(col_best: np.ndarray, col_rows: np.ndarray, k: int) -> np.ndarray:
    """Each column's k nearest rows from the parts' lists (parts, m, k): the parts hold
    ascending runs of rows, so a stable sort of their lists side by side keeps ties in
    row order, as one scan of all rows would."""
    m = col_best.shape[1]
    values = col_best.transpose(1, 0, 2).reshape(m, -1)
    rows = col_rows.transpose(1, 0, 2).reshape(m, -1)
    order = np.argsort(values, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(rows, order, axis=1)


def _norms(A: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", A, A)  # as gram_squared_distances sums them


# _pair_scan's stand-ins where it sums distances feature by feature
_NO_GRAM = np.empty((0, 0))
_NO_NORM = np.empty(0)


def _direct(A: np.ndarray, B: np.ndarray) -> bool:
    """Whether distances are summed feature by feature rather than from A·Bᵀ: in at most
    ``TREE_DIMS`` features (as the pooled lists' block tree sums them) and blocks small
    enough for one pass. There the product's expansion saves nothing, and direct sums are
    exact for duplicated points (0, tied in index order) and equal on every machine."""
    return A.shape[1] <= TREE_DIMS and len(A) * len(B) <= TRUST_ROWS * POOLED_SAMPLE


def _knn_sets(A: np.ndarray, B: np.ndarray, k: int, same: bool) -> np.ndarray:
    """Indices (into B) of each row of A's k nearest rows of B (Euclidean, exact, ties in
    index order); with ``same`` A is B and a row is not its own neighbour. Distances
    summed feature by feature where :func:`_direct`, else from A·Bᵀ in chunks of
    ``TRUST_ROWS`` rows (memory O(chunk · len(B)))."""
    k = min(k, B.shape[0] - (1 if same else 0))
    if k <= 0:
        return np.empty((len(A), 0), dtype=np.int64)
    out = np.empty((len(A), k), dtype=np.int64)
    if _direct(A, B):
        if len(A) * len(B) < PARALLEL_FROM_ENTRIES:  # as the twins below it
            d2 = _direct_small(A, B)
            if same:
                np.fill_diagonal(d2, np.inf)
            _smallest_small(d2, k, out)
        else:  # rows only: any parts
            parts = _pair_scan.threads(len(A) * len(B))
            none = np.empty((parts, 0, k))
            _pair_scan.run(A, np.ascontiguousarray(B.T), _NO_GRAM, _NO_NORM, _NO_NORM, k,
                           same, out, none, none.astype(np.int64), items=parts,
                           work=len(A) * len(B))
        return out
    col_norm = _norms(B)
    for start in range(0, len(A), TRUST_ROWS):
        chunk = A[start:start + TRUST_ROWS]
        gram = chunk @ B.T
        # the columns left out: each row's own point, or none
        own = start + np.arange(len(chunk)) if same else np.full(len(chunk), len(B))
        _smallest_apart.run(gram, _norms(chunk), col_norm, own, own + 1 if same else own, k,
                            out[start:start + len(chunk)], items=len(chunk), work=gram.size)
    return out


def _knn_both(A: np.ndarray, B: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_knn_sets` from A to B and from B to A, in one pass over the distances."""
    if len(A) * len(B) > TRUST_ROWS * POOLED_SAMPLE:  # larger than a chunk: twice, in chunks
        return _knn_sets(A, B, k, False), _knn_sets(B, A, k, False)
    ab = np.empty((len(A), min(k, len(B))), dtype=np.int64)
    ba = np.empty((len(B), min(k, len(A))), dtype=np.int64)
    if ab.shape[1] == 0 or ba.shape[1] == 0:
        return ab, ba
    kk = ab.shape[1]
    direct = _direct(A, B)
    if direct:
        gram = _NO_GRAM
        row_norm = col_norm = _NO_NORM
    else:
        gram = A @ B.T
        row_norm, col_norm = _norms(A), _norms(B)
    if ba.shape[1] != kk or len(A) * len(B) < PARALLEL_FROM_ENTRIES:  # as the twins below
        d2 = _direct_small(A, B) if direct else _distances_small(gram, row_norm, col_norm)
        _smallest_small(d2, ab.shape[1], ab)
        _smallest_small(d2.T, ba.shape[1], ba)
        return ab, ba
    parts = _pair_scan.threads(len(A) * len(B))
    col_best = np.empty((parts, len(B), kk))
    col_rows = np.empty((parts, len(B), kk), dtype=np.int64)
    _pair_scan.run(A, np.ascontiguousarray(B.T), gram, row_norm, col_norm, kk, False, ab,
                   col_best, col_rows, items=parts, work=len(A) * len(B))
    ba[:] = _column_lists(col_best, col_rows, kk)
    return ab, ba


def _pooled_lists(pooled: np.ndarray, owner: np.ndarray, k: int) -> np.ndarray:
    """Each pooled point's ``k`` nearest pooled points of other classes (``owner``,
    ascending: each class's points consecutive), exact, ties in index order.

    In at most ``TREE_DIMS`` features one block-tree search that skips each point's own
    class (:meth:`ctsne.neighbors.kdtree.BlockTree.query`); otherwise the Gram matrix in
    blocks of ``TRUST_POOLED_ROWS`` rows. Either is each class searched against the
    others' points alone, as :func:`_knn_sets` does, without a copy of the others per class.
    The tree sums each distance feature by feature, the Gram matrix expands
    ‖x‖² + ‖y‖² − 2x·y: lists can differ only between neighbours within rounding of
    each other."""
    out = np.empty((len(pooled), max(k, 0)), dtype=np.int64)
    if k <= 0:
        return out
    if pooled.shape[1] <= TREE_DIMS:
        tree = BlockTree(pooled, codes=owner)
        rows = tree.order
        _, out[rows] = tree.query(pooled[rows], k, self_rows=rows, skip_codes=owner[rows])
        return out
    norm = np.einsum("ij,ij->i", pooled, pooled)
    bounds = np.searchsorted(owner, np.arange(owner[-1] + 2))
    own_lo, own_hi = bounds[owner], bounds[owner + 1]  # each point's class: these columns
    # one Gram block, reused: small enough to stay in the cache between product and selection
    gram = np.empty((min(TRUST_POOLED_ROWS, len(pooled)), len(pooled)))
    for start in range(0, len(pooled), TRUST_POOLED_ROWS):
        stop = min(len(pooled), start + TRUST_POOLED_ROWS)
        block = gram[:stop - start]
        np.matmul(pooled[start:stop], pooled.T, out=block)
        _smallest_apart.run(block, norm[start:stop], norm, own_lo[start:stop],
                            own_hi[start:stop], k, out[start:stop], items=stop - start,
                            work=block.size)
    return out


def _mutual_count(ab: np.ndarray, ba: np.ndarray) -> int:
    """Number of mutual pairs: j among ab[i] with i among ba[j] (the same pairs seen from
    either side, so one count serves both directions of a class pair)."""
    if ab.size == 0 or ba.size == 0:
        return 0
    # a table of ba's pairs, then one look-up per pair of ab (cheaper than gathering lists)
    listed = np.zeros((len(ba), len(ab)), dtype=bool)
    listed[np.arange(len(ba))[:, None], ba] = True
    return int(np.count_nonzero(listed[ab, np.arange(len(ab))[:, None]]))


def _mutual_shares(parts: list, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each class's share of mutual pairs among its own-class and its other-class
    neighbours (``parts``: each class's centred sample), as :func:`counterpart_trust`
    defines them."""
    L = len(parts)
    own_sets = [_knn_sets(Z, Z, k, True) if len(Z) > 1 else None for Z in parts]
    own = np.array([np.nan if s is None or s.size == 0 else _mutual_count(s, s) / s.size
                    for s in own_sets])
    cross = np.full(L, np.nan)
    if L - 1 <= PER_CLASS_UP_TO:
        pair = np.full((L, L), np.nan)
        for a in range(L):
            for b in range(a + 1, L):
                ab, ba = _knn_both(parts[a], parts[b], k)
                mutual = _mutual_count(ab, ba)
                pair[a, b] = mutual / ab.size if ab.size else np.nan
                pair[b, a] = mutual / ba.size if ba.size else np.nan
        cross = np.nanmean(np.where(np.eye(L, dtype=bool), np.nan, pair), axis=1)
    else:
        # every class against all others pooled; the pooled sample has at most
        # POOLED_SAMPLE points, so that many classes stay cheap
        sizes = np.array([len(Z) for Z in parts])
        pooled = np.vstack(parts)
        owner = np.repeat(np.arange(L), sizes)
        lists = _pooled_lists(pooled, owner, min(k, len(pooled) - int(sizes.max())))
        # pooled point p's neighbour q is mutual when p is among q's neighbours
        hits = (lists[lists] == np.arange(len(pooled))[:, None, None]).any(axis=2)
        cross = np.bincount(owner, weights=hits.mean(axis=1), minlength=L) / sizes
    return own, cross


def counterpart_trust(X: np.ndarray, codes: np.ndarray, k: int = K_MUTUAL,
                      per_class: int = TRUST_SAMPLE, seed: int = 0):
    """Counterpart trust per class and overall (module note).

    Each class is centred on its own mean first (a batch's overall shift is no evidence
    against counterparts: without it a shifted copy pairs every point with the copy's
    facing side), and at most ``per_class`` points of each class, drawn with ``seed``,
    are compared with exact Euclidean neighbours. With more than
    :data:`ctsne.affinities.balanced.PER_CLASS_UP_TO` other classes each class is compared
    with all others pooled, on at most :data:`POOLED_SAMPLE` points in all.

    Parameters
    ----------
    X : ndarray (n, p)
    codes : ndarray of int (n,)
        Classes 0..L−1, L ≥ 2.
    k : int
        Neighbours per point in the mutual-pair test.
    per_class : int
        Most points of a class used.
    seed : int
        Seed of the subsample (the trust is a statistic of the data, not of a run).

    Returns
    -------
    class_trust : ndarray (n_classes,)
        ``min(1, μ_l / μ_own)`` per class.
    trust : float
        ``min(1, μ_cross / μ_own)`` over all classes.
    mutual_own, mutual_cross : float
        The shares of mutual pairs among own-class and other-class neighbours.
    """
    codes = np.asarray(codes, dtype=np.int64)
    L = int(codes.max()) + 1
    if L - 1 > PER_CLASS_UP_TO:
        per_class = min(per_class, max(k + 1, POOLED_SAMPLE // L))
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(L):
        rows = np.flatnonzero(codes == c)
        if len(rows) > per_class:
            rows = np.sort(rng.choice(rows, per_class, replace=False))
        Z = X[rows]
        Z = np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z, dtype=np.float64)
        parts.append(Z - Z.mean(axis=0))
    # BLAS in one thread where products are made: its idle threads spin after each
    # product and take a core from the scans (the products' bits do not depend on it)
    largest = max(parts, key=len)
    if _direct(largest, largest):
        own, cross = _mutual_shares(parts, k)
    else:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            own, cross = _mutual_shares(parts, k)
    mutual_own = float(np.nanmean(own))
    mutual_cross = float(np.nanmean(cross))
    if not mutual_own > 0:
        return np.zeros(L), 0.0, mutual_own, mutual_cross
    class_trust = np.minimum(np.nan_to_num(cross / mutual_own), 1.0)
    return class_trust, min(1.0, mutual_cross / mutual_own), mutual_own, mutual_cross

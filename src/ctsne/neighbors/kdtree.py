"""Exact Euclidean k-nearest neighbours from a k-d tree searched a block of queries at a time.

A k-d tree answers each query on its own: a walk from the root, a heap, one distance at a
time. With t-SNE's k ≈ 90 neighbours in a few (≤ 15) features a query reads thousands of
points, and that per-point work dominates. Here the queries nearest one another (the
points of one leaf, for the indexed points themselves) walk the tree together:

* leaves (:mod:`ctsne.neighbors.kdtree_build`) hold ``LEAF_SIZE/4 … LEAF_SIZE`` points,
  stored feature by feature in fixed-width blocks: the distances from a query to a whole
  leaf are one loop of fixed length that vectorises;
* a block of queries visits the nodes nearer its bounding box first and skips a node
  farther from the box than every query's current k-th distance; each query skips a leaf
  farther from itself than its own;
* each query keeps its k best in a max-heap ordered by (squared distance, index), so the
  answer is the k smallest pairs in that order: the same lists whatever the visiting order
  or the thread count, exactly tied neighbours broken by index.

Distances are summed feature by feature from the differences (no ‖x‖² + ‖y‖² − 2x·y
cancellation), as scipy's and scikit-learn's trees do; the k-th neighbour's distance
agrees with theirs to rounding.
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import threaded
from ..tuning import KDTREE_PARALLEL_FROM_WORK
from .kdtree_build import build_tree

__all__ = ["BlockTree", "LEAF_SIZE"]

# Most points per leaf (and queries per block): amortises a node's bookkeeping over
# vectorised distance loops. Read inside the kernel, so kept here, not in ctsne.tuning.
LEAF_SIZE = 256


@numba.njit(cache=True, inline="always")
def _point_box(Q, q, lo, hi, v):
    """Squared distance from query q to node v's box."""
    s = 0.0
    for j in range(Q.shape[1]):
        x = Q[q, j]
        if x < lo[v, j]:
            t = lo[v, j] - x
            s += t * t
        elif x > hi[v, j]:
            t = x - hi[v, j]
            s += t * t
    return s


@numba.njit(cache=True, inline="always")
def _box_box(blo, bhi, lo, hi, v):
    """Squared distance between a query block's box and node v's box."""
    s = 0.0
    for j in range(blo.shape[0]):
        if bhi[j] < lo[v, j]:
            t = lo[v, j] - bhi[j]
            s += t * t
        elif hi[v, j] < blo[j]:
            t = blo[j] - hi[v, j]
            s += t * t
    return s


@numba.njit(cache=True, inline="always")
def _sift_down(hd, hi_, a, k, d, ident):
    """Replace the root of query a's max-heap by (d, ident) and restore the heap."""
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= k:
            break
        if c + 1 < k and (hd[a, c + 1] > hd[a, c]
                          or (hd[a, c + 1] == hd[a, c] and hi_[a, c + 1] > hi_[a, c])):
            c += 1
        if hd[a, c] < d or (hd[a, c] == d and hi_[a, c] < ident):
            break
        hd[a, pos] = hd[a, c]
        hi_[a, pos] = hi_[a, c]
        pos = c
    hd[a, pos] = d
    hi_[a, pos] = ident


@threaded(KDTREE_PARALLEL_FROM_WORK)
def _search(left, right, lo, hi, leaf_of, counts, Xb, ids, Q, qorder, bstart, k, widen,
            slot_code, qcode, qself, qleaf, out_idx, out_dist, start, stop):
    """The k nearest indexed points of each query; query block b (of ``start … stop − 1``)
    is the queries ``qorder[bstart[b]:bstart[b + 1]]`` (at most LEAF_SIZE), answered into
    their rows of the outputs. Boxes count ``widen`` = (1 + eps)² times farther (1: exact).
    With ``qcode`` (one per query; empty: no filter) a query skips the indexed points whose
    ``slot_code`` equals its own. With ``qself`` (one per query; empty: none) a query is
    indexed point ``qself[q]``, in leaf ``qleaf[q]``, and skips it."""
    p = Q.shape[1]
    W = Xb.shape[2]
    filtered = qcode.shape[0] > 0
    selves = qself.shape[0] > 0
    # one set of buffers a part, not a block: allocations made per block cost threads
    # shared reference counts (ctsne._parallel.Threaded)
    hd = np.empty((LEAF_SIZE, k))
    hi_ = np.empty((LEAF_SIZE, k), dtype=np.int64)
    blo = np.empty(p)
    bhi = np.empty(p)
    d = np.empty(W)
    # one entry per level and one more: splits leave each side a quarter at least,
    # so depth ≤ log₄⁄₃ n < 152 for any int64 point count
    stack = np.empty(256, dtype=np.int64)
    depth = np.empty(256)
    for b in numba.prange(start, stop):
        q0, q1 = bstart[b], bstart[b + 1]
        m = q1 - q0
        for a in range(m):
            for c in range(k):
                hd[a, c] = np.inf
                hi_[a, c] = -1
        for j in range(p):
            blo[j] = np.inf
            bhi[j] = -np.inf
        for a in range(m):
            for j in range(p):
                x = Q[qorder[q0 + a], j]
                blo[j] = min(blo[j], x)
                bhi[j] = max(bhi[j], x)
        stack[0], depth[0] = 0, 0.0
        top = 1
        bound = np.inf  # the block's largest k-th distance (squared)
        while top > 0:
            top -= 1
            v = stack[top]
            if depth[top] * widen > bound:
                continue
            c1, c2 = left[v], right[v]
            if c1 >= 0:
                d1 = _box_box(blo, bhi, lo, hi, c1)
                d2 = _box_box(blo, bhi, lo, hi, c2)
                if d1 > d2:  # the nearer child is visited first (pushed last)
                    c1, c2, d1, d2 = c2, c1, d2, d1
                if d2 * widen <= bound:
                    stack[top], depth[top] = c2, d2
                    top += 1
                if d1 * widen <= bound:
                    stack[top], depth[top] = c1, d1
                    top += 1
                continue
            leaf = leaf_of[v]
            w = counts[leaf]
            for a in range(m):
                q = qorder[q0 + a]
                if _point_box(Q, q, lo, hi, v) * widen > hd[a, 0]:
                    continue
                # all W slots (a fixed-length loop vectorises); only w are points
                for t in range(W):
                    d[t] = 0.0
                # features four at a time, added in feature order (the rounding of a
                # one-at-a-time sum), so that d passes through memory a quarter as often
                j = 0
                while j + 4 <= p:
                    x0, x1, x2, x3 = Q[q, j], Q[q, j + 1], Q[q, j + 2], Q[q, j + 3]
                    for t in range(W):
                        e0 = Xb[leaf, j, t] - x0
                        e1 = Xb[leaf, j + 1, t] - x1
                        e2 = Xb[leaf, j + 2, t] - x2
                        e3 = Xb[leaf, j + 3, t] - x3
                        d[t] = (((d[t] + e0 * e0) + e1 * e1) + e2 * e2) + e3 * e3
                    j += 4
                while j < p:
                    x0 = Q[q, j]
                    for t in range(W):
                        e0 = Xb[leaf, j, t] - x0
                        d[t] += e0 * e0
                    j += 1
                if filtered:
                    c = qcode[q]
                    for t in range(W):
                        if slot_code[leaf, t] == c:
                            d[t] = np.inf
                if selves and qleaf[q] == leaf:  # its own leaf: the point itself out
                    for t in range(w):
                        if ids[leaf, t] == qself[q]:
                            d[t] = np.inf
                # most leaves improve no list: an integer count (which vectorises)
                # decides before the scalar pass
                worst = hd[a, 0]
                near = 0
                for t in range(W):
                    near += d[t] <= worst
                if near == 0:
                    continue
                for t in range(w):
                    if d[t] < hd[a, 0] or (d[t] == hd[a, 0] and ids[leaf, t] < hi_[a, 0]):
                        _sift_down(hd, hi_, a, k, d[t], ids[leaf, t])
            bound = 0.0
            for a in range(m):
                bound = max(bound, hd[a, 0])
        # heap → ascending (distance, index): pop the largest into the last free slot
        for a in range(m):
            q = qorder[q0 + a]
            for last in range(k - 1, -1, -1):
                top_d, top_i = hd[a, 0], hi_[a, 0]
                _sift_down(hd, hi_, a, last, hd[a, last], hi_[a, last])
                out_dist[q, last] = np.sqrt(top_d)
                out_idx[q, last] = top_i


@numba.njit(cache=True)
def _leaf_of_queries(Q, left, right, lo, hi):
    """The leaf each query falls into (nearer child's box at each split)."""
    out = np.empty(Q.shape[0], dtype=np.int64)
    for q in range(Q.shape[0]):
        v = 0
        while left[v] >= 0:
            a, b = left[v], right[v]
            v = a if _point_box(Q, q, lo, hi, a) <= _point_box(Q, q, lo, hi, b) else b
        out[q] = v
    return out


class BlockTree:
    """Exact Euclidean k-nearest-neighbour search over fixed points (module note).

    Parameters
    ----------
    data : ndarray (n, p)
        Finite; searched in float64.
    leaf_size : int
        Most points per leaf (:data:`LEAF_SIZE`).
    codes : ndarray of int (n,), optional
        Each point's class, for queries that skip their own (``query(skip_codes=…)``).

    Attributes
    ----------
    order : ndarray of int64 (n,)
        The points in the tree's leaf order (query the indexed points in this order to
        keep each call's blocks whole).
    """

    def __init__(self, data: np.ndarray, leaf_size: int = LEAF_SIZE,
                 codes: np.ndarray | None = None):
        if int(leaf_size) < 1:
            raise ValueError(f"leaf_size must be at least 1, got {leaf_size!r}")
        X = np.ascontiguousarray(data, dtype=np.float64)
        self.n, self.p = X.shape
        perm, start, stop, self.left, self.right, self.lo, self.hi = build_tree(
            X, int(leaf_size))
        leaves = np.flatnonzero(self.left < 0)
        self.leaf_of = np.full(len(start), -1, dtype=np.int64)
        self.leaf_of[leaves] = np.arange(len(leaves))
        self.counts = (stop[leaves] - start[leaves]).astype(np.int64)
        # each leaf's points feature by feature in a fixed-width block (zero-padded)
        slot = np.arange(leaf_size)[None, :]
        pos = start[leaves][:, None] + slot
        valid = slot < self.counts[:, None]
        self.ids = np.where(valid, perm[np.minimum(pos, self.n - 1)], -1).astype(np.int64)
        Xb = np.where(valid[:, :, None], X[np.maximum(self.ids, 0)], 0.0)
        self.Xb = np.ascontiguousarray(Xb.transpose(0, 2, 1))
        self.order = perm.astype(np.int64)
        # each slot's class (padding −1), for queries that skip their own class
        if codes is not None and np.shape(codes) != (self.n,):
            raise ValueError(f"codes must hold one class per point ({self.n}), "
                             f"got shape {np.shape(codes)}")
        self._slot_code = (np.zeros((0, 0), dtype=np.int64) if codes is None else
                           np.where(valid, np.asarray(codes, dtype=np.int64)[
                               np.maximum(self.ids, 0)], -1))
        # each indexed point's leaf (numbered as leaf_of numbers them, by node: not the
        # order of the leaves in ``order``): the blocks of a query of the points themselves
        self._leaf_of_point = np.empty(self.n, dtype=np.int64)
        self._leaf_of_point[self.ids[valid]] = np.repeat(np.arange(len(leaves)), self.counts)

    def query(self, Q: np.ndarray, k: int, self_rows: np.ndarray | None = None,
              eps: float = 0.0, skip_codes: np.ndarray | None = None,
              exclude_self: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest indexed points to each row of ``Q``, nearest first.

        Parameters
        ----------
        Q : ndarray (m, p)
        k : int
            At most the number of indexed points.
        self_rows : ndarray of int (m,), optional
            When ``Q`` is the indexed points ``self_rows`` themselves, taken in
            :attr:`order`: blocks then follow the leaves. Other queries are grouped by
            the leaf they descend to (nearer child first): queries far from the points
            (another class) then share a block with those facing the same part of them.
        eps : float, optional
            Relative tolerance, as scipy's ``cKDTree.query``: a node or leaf is skipped
            when (1 + eps) times its distance exceeds a query's current k-th distance, so
            every distance returned is within a factor 1 + eps of the true k-th nearest.
            0 (default): exact.
        skip_codes : ndarray of int (m,), optional
            Each query's class: it is answered from the indexed points of other classes
            only (the tree built with ``codes``). Each query reads the points of its own
            class nearer than its k-th answer before skipping them, so the search costs
            about that of k + (those points) neighbours. A query with fewer than k points
            of other classes gets index −1 and distance ``inf`` in the rest.
        exclude_self : bool, optional
            With ``self_rows``: each point is left out of its own answer (the k nearest
            other points; duplicates of it stay, in index order).

        Returns
        -------
        dist : ndarray (m, k), idx : ndarray of int64 (m, k)
            Ties in distance in index order.
        """
        Q = np.ascontiguousarray(Q, dtype=np.float64)
        m = Q.shape[0]
        if not 0 < k <= self.n:
            raise ValueError(f"k must lie in 1..{self.n}, got {k}")
        if m == 0:
            return np.empty((0, k)), np.empty((0, k), dtype=np.int64)
        if skip_codes is None:
            qcode = np.zeros(0, dtype=np.int64)
        elif self._slot_code.size == 0:
            raise ValueError("skip_codes needs a tree built with codes")
        else:
            qcode = np.ascontiguousarray(skip_codes, dtype=np.int64)
            if qcode.shape != (m,):
                raise ValueError(f"skip_codes must hold one class per query ({m}), "
                                 f"got shape {qcode.shape}")
        qself = qleaf = np.zeros(0, dtype=np.int64)
        if exclude_self and self_rows is None:
            raise ValueError("exclude_self needs self_rows")
        if self_rows is not None:
            # consecutive queries from one leaf form a block
            key = self._leaf_of_point[np.asarray(self_rows)]
            qorder = np.arange(m)
            if exclude_self:
                qself = np.ascontiguousarray(self_rows, dtype=np.int64)
                qleaf = key
        else:
            key = _leaf_of_queries(Q, self.left, self.right, self.lo, self.hi)
            qorder = np.argsort(key, kind="stable")
            key = key[qorder]
        # blocks: runs of one leaf, cut into pieces of at most LEAF_SIZE queries
        runs = np.concatenate([[0], np.flatnonzero(np.diff(key)) + 1, [m]])
        bstart = np.unique(np.concatenate(
            [np.arange(runs[r], runs[r + 1], LEAF_SIZE) for r in range(len(runs) - 1)]
            + [[m]])).astype(np.int64)
        out_idx = np.empty((m, k), dtype=np.int64)
        out_dist = np.empty((m, k))
        _search.run(self.left, self.right, self.lo, self.hi, self.leaf_of, self.counts,
                    self.Xb, self.ids, Q, qorder.astype(np.int64), bstart, k,
                    (1.0 + float(eps)) ** 2, self._slot_code, qcode, qself, qleaf, out_idx,
                    out_dist,
                    items=len(bstart) - 1, work=float(m) * k)
        return out_dist, out_idx

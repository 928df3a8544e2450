"""Neighbour lists drawn from a point's own class and from the other classes separately.

Three searches, each at most about one full kNN search in cost:

* own class: one index per class (the class sizes sum to n), small classes scanned;
* each other class (few classes): class m's index answers the points of every other
  class with a small k;
* all other classes pooled (many classes): :mod:`ctsne.neighbors.pooled`, which uses the
  far searches of this module.

Exact search (scikit-learn) or pynndescent as chosen by
:func:`ctsne.neighbors.search.is_exact_search` for an index of that size. Where that is a
Euclidean tree search, the other-class queries, which lie far from the points they search
and get little pruning from a tree, scan the class instead (:mod:`ctsne.neighbors.brute`:
the same neighbours and distances); ``far_search="tree"`` keeps the tree, to compare.
Above :data:`SCAN_MAX_PAIRS` (and for classes too large for exact search) far queries in
at most ``TREE_DIMS`` features go to a k-d tree searched with a relative tolerance
:data:`FAR_EPS` (scipy's ``cKDTree.query(eps=…)``), or to the fit's
:class:`ctsne.neighbors.kdtree.BlockTree` with :data:`BLOCK_FAR_EPS`. Above
:data:`REPS_FROM_PAIRS` pairs, given the own-class lists, Euclidean far and bit searches
ask only representatives and the others take the nearest of their representatives' lists
(:mod:`ctsne.neighbors.representatives`). Empty slots (a class smaller than k) hold the
point itself with distance ``inf``; callers give them weight 0.
"""

from __future__ import annotations

import numpy as np

from ..tuning import (
    BRUTE_PAIRS,
    BRUTE_UP_TO,
    OWN_ROWS_SCREEN,
    OWN_ROWS_SCREEN_KEEPS,
    REPS_FROM_PAIRS,
    SCAN_MAX_PAIRS,
)
from .brute import brute_knn, brute_within_classes
from .descent import descent_index, quiet_cache_notes
from .representatives import lists_from_representatives, place_rows, representatives
from .search import (
    QUERY_CHUNK,
    TREE_DIMS,
    ExactIndex,
    drop_self,
    is_exact_search,
    nearest_neighbors,
    uses_block_tree,
)

__all__ = ["BRUTE_UP_TO", "FAR_SEARCHES", "SearchIndex", "brute_within",
           "other_class_neighbors", "own_class_neighbors", "own_class_rows"]

# The searches' thresholds live in ctsne.tuning (what each decides is said there) and are
# named here too: other modules and the tests read them from this one.

# A class searched approximately still reuses the standard lists (see _reuse) when at
# most this share of its rows lists points of other classes.
REUSE_REST_UP_TO = 0.25
# How far queries are answered (the ``far_search`` parameter): "scan" the indexed points
# (exact Euclidean searches; the tolerant tree beyond SCAN_MAX_PAIRS), or the "tree" that
# near queries use, to compare.
FAR_SEARCHES = ("scan", "tree")
# The relative tolerance of the tolerant k-d tree.
FAR_EPS = 0.5
# The same for far queries answered by the block tree (ctsne.neighbors.kdtree), which
# prunes a whole block of queries at once and so loses more recall at a given tolerance.
BLOCK_FAR_EPS = 0.2


def _check_far_search(far_search: str) -> None:
    if far_search not in FAR_SEARCHES:
        raise ValueError(f"far_search must be 'scan' or 'tree', got {far_search!r}")


class SearchIndex:
    """A kNN index over ``X[rows]`` answering queries in global point numbers.

    Parameters
    ----------
    X : ndarray (n, p)
    rows : ndarray of int
        The points the index holds.
    method, metric, random_state, n_jobs
        As in :func:`ctsne.neighbors.search.nearest_neighbors`.
    far : bool
        The queries lie far from the indexed points: with ``far_search="scan"``, an exact
        Euclidean search in at most ``TREE_DIMS`` features scans them all instead of
        building a tree, except where the fit's search uses the block tree
        (:func:`ctsne.neighbors.search.uses_block_tree`), which gives the scan's lists
        in less time.
    far_search : {"scan", "tree"}
        How far queries are answered (:data:`FAR_SEARCHES`): "tree" treats them as near
        ones (scikit-learn's tree, or pynndescent where the search is approximate).
    """

    def __init__(self, X, rows, method="auto", metric="euclidean", random_state=None,
                 n_jobs=None, far=False, far_search="scan"):
        _check_far_search(far_search)
        self.rows = np.asarray(rows)
        self.exact = is_exact_search(len(self.rows), X.shape[1], method)
        data = X[self.rows]
        jobs = -1 if n_jobs is None else n_jobs
        # with more features scikit-learn itself searches by brute force, in BLAS
        low_dim = metric == "euclidean" and X.shape[1] <= TREE_DIMS
        scan_far = far and far_search == "scan"
        # the block tree answers far queries with the scan's lists, bit for bit (both add
        # a distance's features in order, both break ties by index)
        blocks = self.exact and metric == "euclidean" and uses_block_tree(*X.shape)
        scan = scan_far and self.exact and low_dim and not blocks
        self._scan = data if scan else None
        # far queries too many to scan, or into a class too large for exact search
        self._tolerant = scan_far and low_dim and not blocks
        self._kd = None
        self._jobs = jobs
        # far queries into the block tree: exact where the scan would run, with
        # BLOCK_FAR_EPS where the tolerant tree would
        self._far_blocks = blocks and scan_far
        if self._tolerant and not self.exact:
            self._scan = data
        elif self._scan is None and self.exact:
            # the fit's size decides the tree, so every list of a fit has one distance code
            self._nn = ExactIndex(data, metric, n_jobs, search_size=X.shape[0])
        elif self._scan is None:
            # built at the first query that brute force does not answer (_brute_far)
            self._descent = (data, metric, random_state, jobs)
            self._nn = None
        self._brute_far = scan_far and not low_dim and not self.exact

    def _graph(self):
        """pynndescent's index of the points, built on first use."""
        if self._nn is None:
            data, metric, random_state, jobs = self._descent
            self._nn = descent_index(data, n_neighbors=min(30, len(self.rows) - 1) or 1,
                                     metric=metric, random_state=random_state, n_jobs=jobs,
                                     low_memory=True)
            with quiet_cache_notes():
                self._nn.prepare()
        return self._nn

    def _beyond_scan(self, m: int) -> bool:
        """Whether ``m`` far queries are too many to answer exactly (SCAN_MAX_PAIRS)."""
        return len(self.rows) * m > SCAN_MAX_PAIRS

    def tolerant_for(self, m: int) -> bool:
        """Whether ``m`` queries go to the k-d tree with relative tolerance."""
        return self._scan is not None and self._tolerant and (
            not self.exact or self._beyond_scan(m))

    def query(self, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest indexed points of each row of ``Q`` (global numbers)."""
        idx = np.empty((len(Q), k), dtype=np.int64)
        dist = np.empty((len(Q), k))
        if self.tolerant_for(len(Q)):
            if self._kd is None:
                from scipy.spatial import cKDTree

                self._kd = cKDTree(self._scan)
            d, i = self._kd.query(Q, k=k, eps=FAR_EPS, workers=self._jobs)
            i, d = np.asarray(i).reshape(len(Q), k), np.asarray(d).reshape(len(Q), k)
            return self.rows[i], d
        if self._brute_far and len(self.rows) * len(Q) <= BRUTE_PAIRS:
            # far queries in many features: exact (scikit-learn's brute force), and faster
            # than a graph walk (BRUTE_PAIRS)
            data, metric, _, jobs = self._descent
            d, i = ExactIndex(data, metric, jobs).query(Q, k)
            return self.rows[i], d
        eps = BLOCK_FAR_EPS if self._far_blocks and self._beyond_scan(len(Q)) else 0.0
        for start in range(0, len(Q), QUERY_CHUNK):
            stop = min(len(Q), start + QUERY_CHUNK)
            if self._scan is not None:
                i, d = brute_knn(self._scan, Q[start:stop], k)
            elif self._far_blocks:
                d, i = self._nn.query(Q[start:stop], k, eps=eps)
            elif self.exact:
                d, i = self._nn.query(Q[start:stop], k)
            else:
                with quiet_cache_notes():
                    i, d = self._graph().query(Q[start:stop], k=k)
            idx[start:stop], dist[start:stop] = self.rows[i], d
        return idx, dist


def _empty(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A table of empty slots: each row points at itself, distance inf."""
    return (np.repeat(np.arange(n, dtype=np.int64)[:, None], k, axis=1),
            np.full((n, k), np.inf))


def _empty_slots(idx: np.ndarray, dist: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
    """Mark the slots ``cols`` (one set for all, or one row per row) of ``rows`` empty:
    the point itself, distance inf."""
    if cols.size == 0 or len(rows) == 0:
        return
    cols = cols if cols.ndim == 2 else cols[None, :]
    idx[rows[:, None], cols] = rows[:, None]
    dist[rows[:, None], cols] = np.inf


def own_class_rows(idx: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Which rows of a neighbour table ``idx`` (n, k) list only points of their own class.

    Rows are screened a neighbour at a time, for the first ``OWN_ROWS_SCREEN`` neighbours
    (ctsne.tuning), while each removes more than ``1 − OWN_ROWS_SCREEN_KEEPS`` of them
    (mixed classes: a column gathered row by row costs a cache line an entry), and the
    rest read whole, with the classes in their narrowest integer type.
    """
    codes = np.asarray(codes)
    small = codes.astype(np.min_scalar_type(max(int(codes.max()), 0)))
    out = np.zeros(len(small), dtype=bool)
    if idx.shape[1] == 0:
        out[:] = True
        return out
    maybe = np.flatnonzero(small[idx[:, 0]] == small)
    for a in range(1, min(idx.shape[1], OWN_ROWS_SCREEN)):
        kept = maybe[small[idx[maybe, a]] == small[maybe]]
        done = len(kept) > OWN_ROWS_SCREEN_KEEPS * len(maybe)  # separated: read rows whole
        maybe = kept
        if done:
            break
    out[maybe] = np.all(small[idx[maybe]] == small[maybe, None], axis=1)
    return out


def own_class_neighbors(X, codes, k, method="auto", metric="euclidean", random_state=None,
                        n_jobs=None, known=None):
    """Each point's ``k`` nearest points of its own class.

    Parameters
    ----------
    X : ndarray (n, p)
    codes : ndarray of int (n,)
        Class 0..L−1 of each point.
    k : int
    known : tuple (idx, dist, mask), optional
        A standard kNN table (idx (n, k)) and the rows whose list is all own-class
        (``mask``): those rows already hold their answer and the others are searched
        exactly (exact classes, and approximate ones in few features where most rows are
        answered; otherwise the class's own approximate index computes every row's list
        as it builds). ``dist``: every row's distances (n, k), or only the masked rows'
        (``mask.sum()`` rows, in row order).

    Returns
    -------
    idx : ndarray of int64 (n, k), dist : ndarray (n, k)
        A class with fewer than k + 1 points fills the rest with empty slots.
    """
    n = len(codes)
    # every slot is written below: searched, or empty where the class is small
    idx, dist = np.empty((n, k), dtype=np.int64), np.empty((n, k))
    if known is not None:
        kidx, kdist, mask = known
        # the row of kdist that holds each point's distances
        dist_row = np.cumsum(mask) - 1 if len(kdist) != n else np.arange(n)
    # small Euclidean classes in few features scanned all in one pass, in the block
    # tree's distance code (in more features BLAS is faster: brute_within, a call each)
    scan_classes = metric == "euclidean" and X.shape[1] <= TREE_DIMS
    batch = []
    for c in range(int(codes.max()) + 1):
        rows = np.flatnonzero(codes == c)
        kc = min(k, len(rows) - 1)
        _empty_slots(idx, dist, rows, np.arange(max(kc, 0), k))
        if kc < 1:
            continue
        todo = rows
        if known is not None and _reuse(mask[rows], X.shape[1], metric, method):
            done = rows[mask[rows]]
            idx[done, :kc], dist[done, :kc] = kidx[done, :kc], kdist[dist_row[done], :kc]
            todo = rows[~mask[rows]]
            if len(todo) == 0:
                continue
            index = SearchIndex(X, rows, "exact", metric, random_state, n_jobs)
            # k + 1: the point itself is among its own class's points
            i, d = index.query(X[todo], kc + 1)
            i, d = drop_self(i, d, todo)
            idx[todo, :kc], dist[todo, :kc] = i, d
            continue
        if len(rows) <= BRUTE_UP_TO and scan_classes:
            batch.append(rows)
            continue
        if len(rows) <= BRUTE_UP_TO:
            i, d = brute_within(X[rows], kc, metric)
        elif is_exact_search(len(rows), X.shape[1], method):
            # the tree the fit's size chooses, as SearchIndex does: one distance code for
            # every list of a fit
            index = ExactIndex(X[rows], metric, n_jobs, search_size=n)
            i = np.empty((len(rows), kc), dtype=np.int64)
            d = np.empty((len(rows), kc))
            index.neighbors_of(X[rows], index.order, kc, i, d)
        else:
            i, d = nearest_neighbors(X[rows], kc, method=method, metric=metric,
                                     random_state=random_state, n_jobs=n_jobs)
        idx[rows, :kc], dist[rows, :kc] = rows[i], d
    if batch:  # the small classes in one pass
        brute_within_classes(X, codes, np.concatenate(batch), k, idx, dist)
    return idx, dist


def _reuse(listed: np.ndarray, p: int, metric: str, method: str) -> bool:
    """Whether a class answers from the standard lists, searching only the rest exactly.

    ``listed`` marks its rows whose standard list is all own-class. Exact classes always
    do; approximate ones when the rest is at most :data:`REUSE_REST_UP_TO` of the class
    and can be answered exactly for less than building pynndescent's graph over all of
    it: by a tree (few features), or by brute force over at most :data:`BRUTE_PAIRS`
    (row, class point) pairs.
    """
    if is_exact_search(len(listed), p, method):
        return True
    rest = int(len(listed) - np.count_nonzero(listed))
    if rest > REUSE_REST_UP_TO * len(listed):
        return False
    low_dim = metric == "euclidean" and p <= TREE_DIMS
    return low_dim or rest * len(listed) <= BRUTE_PAIRS


def brute_within(Xc, k, metric):
    """Each row's ``k`` nearest other rows of ``Xc`` from scikit-learn's full distance
    matrix (Euclidean classes in at most ``TREE_DIMS`` features take
    :func:`ctsne.neighbors.brute.brute_within_classes` instead, all in one pass)."""
    from sklearn.metrics import pairwise_distances

    D = pairwise_distances(Xc, metric=metric, n_jobs=1)
    np.fill_diagonal(D, np.inf)
    part = np.argpartition(D, k - 1, axis=1)[:, :k] if k < len(Xc) - 1 else \
        np.argsort(D, axis=1)[:, :k]
    order = np.argsort(np.take_along_axis(D, part, axis=1), axis=1, kind="stable")
    i = np.take_along_axis(part, order, axis=1)
    return i, np.take_along_axis(D, i, axis=1)


def _representatives(codes, own_idx, metric):
    """The representatives mask where far searches may use it (Euclidean, own lists given)."""
    return None if own_idx is None or metric != "euclidean" else representatives(codes, own_idx)


def _asks_representatives(index, queries, rep) -> bool:
    """Whether a far search asks the representatives only (``rep`` given, and a search
    over more than :data:`REPS_FROM_PAIRS` pairs or one for the tolerant tree)."""
    return rep is not None and (len(index.rows) * len(queries) > REPS_FROM_PAIRS
                                or index.tolerant_for(len(queries)))


def _search_into(index, X, queries, k, own_idx, rep, out):
    """``index``'s k nearest points to each of ``queries``, written into ``out`` = (idx,
    dist, rows, cols): query t's list at row ``rows[t]`` from column ``cols[t]``; with
    ``rep``, large searches ask the representatives only."""
    if _asks_representatives(index, queries, rep):
        lists_from_representatives(X, queries, own_idx, rep, index.query, k, out=out)
        return
    i, d = index.query(X[queries], k)
    place_rows(*out, i, d)


def _search(index, X, queries, k, own_idx, rep):
    """:func:`_search_into`'s lists as a table of their own (row t for query t)."""
    if _asks_representatives(index, queries, rep):
        return lists_from_representatives(X, queries, own_idx, rep, index.query, k)
    return index.query(X[queries], k)


def other_class_neighbors(X, codes, k_other, method="auto", metric="euclidean",
                          random_state=None, n_jobs=None, own_idx=None, far_search="scan"):
    """For every other class m, each point's ``k_other`` nearest points of class m.

    Parameters
    ----------
    own_idx : ndarray of int (n, k_own), optional
        Each point's own-class list (nearest first). Given, Euclidean searches over more
        than :data:`REPS_FROM_PAIRS` pairs (and all that take the tolerant k-d tree) ask
        for the representatives only and share their lists (:mod:`ctsne.neighbors.representatives`).
    far_search : {"scan", "tree"}
        How the far queries are answered (:class:`SearchIndex`).

    Returns
    -------
    idx : ndarray of int64 (n, (L − 1)·k_other), dist : ndarray
        Block t (columns t·k_other …) of a point of class c holds class ``t`` if t < c,
        else class ``t + 1``; a class with fewer points fills the rest with empty slots.
    """
    n = len(codes)
    L = int(codes.max()) + 1
    # every slot is written below: each point's block of each other class
    idx = np.empty((n, (L - 1) * k_other), dtype=np.int64)
    dist = np.empty((n, (L - 1) * k_other))
    rep = _representatives(codes, own_idx, metric)
    for m in range(L):
        rows = np.flatnonzero(codes == m)
        km = min(k_other, len(rows))
        others = np.flatnonzero(codes != m)
        # the block of class m is m − 1 for rows of a smaller class, m for a larger one
        block = np.where(codes[others] < m, m - 1, m)
        if km < k_other:
            _empty_slots(idx, dist, others, block[:, None] * k_other
                         + np.arange(km, k_other)[None, :])
        if km < 1 or len(others) == 0:
            continue
        index = SearchIndex(X, rows, method, metric, random_state, n_jobs, far=True,
                            far_search=far_search)
        # straight into each asking point's block: no table per class to copy from
        _search_into(index, X, others, km, own_idx, rep,
                     (idx, dist, others, block * k_other))
    return idx, dist

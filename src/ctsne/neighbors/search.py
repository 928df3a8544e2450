"""k-nearest-neighbour search: exact (a k-d tree, or scikit-learn) or approximate (pynndescent)."""

from __future__ import annotations

import warnings

import numpy as np

from ..tuning import (
    APPROX_ABOVE,
    BLOCK_TREE_DIMS,
    BLOCK_TREE_FROM,
    BLOCK_TREE_MAX_N,
    KD_LEAF_SIZE,
    LOW_DIM_DESCENT,
    QUERY_CHUNK,
    TREE_DIMS,
    TREE_MAX_N,
)

__all__ = ["nearest_neighbors", "drop_self", "is_exact_search", "check_search_method",
           "ExactIndex", "SEARCH_METHODS", "APPROX_ABOVE", "LOW_DIM_DESCENT", "TREE_DIMS",
           "TREE_MAX_N", "QUERY_CHUNK", "BLOCK_TREE_DIMS", "BLOCK_TREE_FROM", "BLOCK_TREE_MAX_N",
           "uses_block_tree"]

SEARCH_METHODS = ("auto", "exact", "approx")
# The search "auto" runs (is_exact_search); the thresholds live in ctsne.tuning
# (what each decides is said there) and are named here too: other modules and the tests
# read them from this one.


class ExactIndex:
    """Exact k-nearest-neighbour queries over fixed points.

    Euclidean data in :data:`BLOCK_TREE_DIMS` to :data:`TREE_DIMS` features goes to
    :class:`ctsne.neighbors.kdtree.BlockTree` in searches of :data:`BLOCK_TREE_FROM` points
    or more (:func:`uses_block_tree`), other Euclidean data in at most :data:`TREE_DIMS`
    features to scipy's ``cKDTree`` (queried on ``n_jobs`` threads; about twice as fast as
    scikit-learn's tree on the same data); other metrics and wider data to scikit-learn's
    ``NearestNeighbors`` (a ball tree, or brute force in BLAS for many features); the
    thresholds in :mod:`ctsne.tuning`.

    Parameters
    ----------
    data : ndarray (n, p)
    metric : str
    n_jobs : int or None
        Threads per query call (None or negative: all); the block tree runs on numba's
        threads.
    search_size : int, optional
        The points of the search this index serves, when it holds part of them (one class
        of a fit): the tree is chosen by that size, so that every list of a fit comes from
        the same distance code.

    Attributes
    ----------
    order : ndarray of int (n,)
        The points in the tree's own order (its leaves one after the other). Asking for
        the indexed points themselves in this order keeps each chunk's queries near each
        other, so they walk the same nodes while those are in the cache; the answers do
        not depend on the order.
    """

    def __init__(self, data: np.ndarray, metric: str = "euclidean", n_jobs: int | None = None,
                 search_size: int | None = None):
        self._jobs = -1 if n_jobs is None or n_jobs < 0 else max(1, int(n_jobs))
        self._kd = self._blocks = None
        # the trees' points (float64), kept for scipy's tree, which radius counts build
        # on first use; scikit-learn's index takes the data as given
        tree = metric == "euclidean" and data.shape[1] <= TREE_DIMS
        self._data = np.ascontiguousarray(data, dtype=np.float64) if tree else None
        if metric == "euclidean" and uses_block_tree(
                len(data) if search_size is None else search_size, data.shape[1]):
            from .kdtree import BlockTree

            self._blocks = BlockTree(self._data)
            self._nn = None
            self.order = self._blocks.order
        elif tree:
            self._kd = self._scipy_tree()
            self._nn = None
            self.order = np.asarray(self._kd.indices)
        else:
            from sklearn.neighbors import NearestNeighbors

            self._nn = NearestNeighbors(metric=metric, n_jobs=self._jobs).fit(data)
            self.order = np.arange(len(data))

    def _scipy_tree(self):
        from scipy.spatial import cKDTree

        return cKDTree(self._data, leafsize=KD_LEAF_SIZE)

    def neighbors_of(self, X: np.ndarray, rows: np.ndarray, k: int, out_idx: np.ndarray,
                     out_dist: np.ndarray, progress=None) -> None:
        """The ``k`` nearest other indexed points of the indexed points ``rows``.

        ``X`` is the indexed data; ``rows`` are asked in chunks of :data:`QUERY_CHUNK` in
        the order given (pass a slice of :attr:`order` to keep chunks local), each point
        left out of its own list (by the block tree's search itself, else
        :func:`drop_self`). The answers go to
        ``out_idx[rows]`` and ``out_dist[rows]``; ``progress(done, len(rows))`` after
        each chunk.
        """
        for start in range(0, len(rows), QUERY_CHUNK):
            part = rows[start:start + QUERY_CHUNK]
            out_idx[part], out_dist[part] = self.lists_of(X, part, k)
            if progress is not None:
                progress(min(len(rows), start + QUERY_CHUNK), len(rows))

    @property
    def uses_blocks(self) -> bool:
        """Whether this is ctsne's block tree (the scan's distances and tie order)."""
        return self._blocks is not None

    def lists_of(self, X: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest other indexed points of the indexed points ``rows`` (one
        query, as :meth:`neighbors_of` asks a chunk): the same lists as theirs.

        Returns
        -------
        idx : ndarray of int (len(rows), k), dist : ndarray (len(rows), k)
        """
        if self._blocks is not None:  # the indexed points: blocks follow the leaves
            d, i = self._blocks.query(X[rows], k, self_rows=rows, exclude_self=True)
            return i, d
        d, i = self.query(X[rows], k + 1)
        return drop_self(i, d, rows, k)

    def count_within(self, Q: np.ndarray, radius: np.ndarray) -> np.ndarray:
        """How many indexed points lie within ``radius`` (one per row) of each row of
        ``Q`` (k-d tree only: Euclidean data in at most :data:`TREE_DIMS` features)."""
        if self._kd is None:  # scipy's tree counts (built on first use)
            self._kd = self._scipy_tree()
        return np.asarray(self._kd.query_ball_point(
            np.ascontiguousarray(Q, dtype=np.float64), radius, return_length=True,
            workers=self._jobs))

    def query(self, Q: np.ndarray, k: int, eps: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest points to each row of ``Q``, nearest first; with ``eps`` > 0
        (k-d trees only) each within a factor 1 + eps of the true k-th nearest.

        Returns
        -------
        dist : ndarray of float64 (m, k), idx : ndarray of int (m, k)
            In the order of scikit-learn's ``kneighbors``.
        """
        if self._blocks is not None:
            return self._blocks.query(Q, k, eps=eps)
        if self._nn is not None:
            return self._nn.kneighbors(Q, n_neighbors=k)
        d, i = self._kd.query(np.ascontiguousarray(Q, dtype=np.float64), k=[*range(1, k + 1)],
                              eps=eps, workers=self._jobs)
        return d, i


def check_search_method(method: str) -> None:
    """Raise ValueError unless ``method`` is one of :data:`SEARCH_METHODS`."""
    if method not in SEARCH_METHODS:
        raise ValueError(f"neighbors must be 'auto', 'exact' or 'approx', got {method!r}")


def is_exact_search(n: int, p: int, method: str = "auto") -> bool:
    """Whether a search over ``n`` points in ``p`` features is exact (else pynndescent).

    Parameters
    ----------
    n, p : int
        Points searched and their number of features.
    method : {"auto", "exact", "approx"}
        "auto" is exact up to :data:`APPROX_ABOVE` points, and up to :data:`TREE_MAX_N`
        for data with at most :data:`TREE_DIMS` features (:mod:`ctsne.tuning`).

    Returns
    -------
    bool
    """
    check_search_method(method)
    if method == "auto":
        return (n <= APPROX_ABOVE or (p <= TREE_DIMS and n <= TREE_MAX_N)
                or (uses_block_tree(n, p) and n <= BLOCK_TREE_MAX_N))
    return method == "exact"


def uses_block_tree(n: int, p: int) -> bool:
    """Whether an exact Euclidean search of ``n`` points in ``p`` features uses
    :class:`ctsne.neighbors.kdtree.BlockTree` (else scipy's tree; :mod:`ctsne.tuning`)."""
    return BLOCK_TREE_DIMS <= p <= TREE_DIMS and n >= BLOCK_TREE_FROM


def drop_self(idx: np.ndarray, dist: np.ndarray, rows: np.ndarray,
              k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Remove each point from its own list (it need not come first when points repeat).

    Parameters
    ----------
    idx, dist : ndarray (m, k + 1)
        Each row's answer, nearest first.
    rows : ndarray of int (m,)
        The point each row belongs to; a row that does not list it loses its farthest
        entry instead.
    k : int, optional
        Keep the first ``k`` remaining entries (default all).

    Returns
    -------
    idx, dist : ndarray (m, k)
    """
    m = idx.shape[0]
    is_self = idx == rows[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    keep = ~is_self
    return idx[keep].reshape(m, -1)[:, :k], dist[keep].reshape(m, -1)[:, :k]


def nearest_neighbors(
    X: np.ndarray,
    k: int,
    method: str = "auto",
    metric: str = "euclidean",
    random_state: int | None = None,
    n_jobs: int | None = None,
    progress=None,
    index: ExactIndex | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each point's ``k`` nearest other points.

    Parameters
    ----------
    X : ndarray (n, p)
    k : int
        Neighbours per point, ``k ≤ n − 1``.
    method : {"auto", "exact", "approx"}
        "approx" uses pynndescent; "auto" chooses by :func:`is_exact_search` (exact up to
        ``APPROX_ABOVE`` points, and up to ``TREE_MAX_N`` for data with at most
        ``TREE_DIMS`` features; approximate above).
    metric : str
        Any metric both backends know ("euclidean", "cosine", "manhattan", …).
    progress : callable(done, total), optional
        Called as query chunks finish (exact search only).
    index : ExactIndex, optional
        The exact search's index of ``X``, built already (a probe of the standard lists
        used it first); used where the search is exact.

    Returns
    -------
    indices : ndarray of int32 (n, k) (int64 beyond 2³¹ points), C-contiguous
    distances : ndarray of float64 (n, k), in the given metric, C-contiguous
    """
    n = X.shape[0]
    itype = np.int32 if n < np.iinfo(np.int32).max else np.int64
    if is_exact_search(n, X.shape[1], method):
        nn = ExactIndex(X, metric, n_jobs) if index is None else index
        # filled chunk by chunk (see QUERY_CHUNK), near points together (ExactIndex.order)
        idx = np.empty((n, k), dtype=itype)
        dist = np.empty((n, k))
        nn.neighbors_of(X, nn.order, k, idx, dist, progress)
        return idx, dist
    from .descent import descent_index

    index = descent_index(
        X,
        n_neighbors=k + 1,
        metric=metric,
        random_state=random_state,
        n_jobs=-1 if n_jobs is None else n_jobs,
        low_memory=True,
        **(LOW_DIM_DESCENT if X.shape[1] <= TREE_DIMS else {}),
    )
    idx, dist = index.neighbor_graph
    if np.any(idx < 0):
        # NN-descent can leave slots empty (−1), e.g. for many identical points
        warnings.warn("approximate neighbour search left some neighbour slots empty; "
                      "using exact search instead", RuntimeWarning, stacklevel=2)
        return nearest_neighbors(X, k, "exact", metric, random_state, n_jobs, progress)
    if progress is not None:
        progress(n, n)
    idx, dist = drop_self(idx, dist, np.arange(n), k)
    return (np.ascontiguousarray(idx, dtype=itype),
            np.ascontiguousarray(dist, dtype=np.float64))

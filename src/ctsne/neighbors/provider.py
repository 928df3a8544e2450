"""One fit's neighbour lists: each search run once, its answer reused by every later ask.

A fit's affinities ask for lists of three kinds: each point's k nearest points (the
standard lists), its k nearest of its own class, and its nearest of the other classes.
:class:`NeighborLists` owns the choice of index for ``X`` and its metric, builds that
index once, and remembers what it has found, so that an affinity mode asks for what it
needs in the order it reads best and no list is searched twice:

- the standard lists record which rows lie wholly in their own class (those rows *are*
  their own-class lists, and an own-class search later skips them);
- where the caller says the own-class lists will probably be wanted too
  (:meth:`NeighborLists.standard_for_classes`), the standard lists come the cheaper way
  round when the data allows it: from the own-class searches
  (:mod:`ctsne.neighbors.own_first`, few features), or merged from the balanced lists
  (:mod:`ctsne.neighbors.merged`, many features);
- balanced lists (own-class plus other-class lists) reuse whatever own-class lists exist,
  and standard lists asked after them are merged from them where that merge is exact.

The lists are handed over, not copied: a caller that calibrates the distances in place
owns them from then on, and the provider keeps only what it needs for later asks (the
own-class rows' distances).
"""

from __future__ import annotations

import numpy as np

from .by_class import own_class_neighbors, own_class_rows
from .class_lists import class_lists
from .merged import exact_merge, exact_merged_lists, merge_first, merged_standard_lists
from .own_first import class_tree_lists, standard_through_classes
from .search import ExactIndex, is_exact_search, nearest_neighbors

__all__ = ["NeighborLists", "by_class"]


def by_class(classes) -> np.ndarray | None:
    """The classes the by-class lists are searched by (int64), or None where there are
    none to search by (no prior, or a single class)."""
    if classes is None:
        return None
    classes = np.asarray(classes, dtype=np.int64)
    return None if len(classes) == 0 or int(classes.max()) == 0 else classes


class NeighborLists:
    """The neighbour lists of one fit's data, searched on demand and remembered.

    Parameters
    ----------
    X : ndarray (n, p)
        At a safe scale already (:func:`ctsne.checks.to_safe_scale`).
    classes : ndarray of int (n,) or None
        Joint prior classes 0..L−1 (the by-class lists need them); a single class is
        kept as None.
    method, metric, random_state, n_jobs
        As for :func:`ctsne.neighbors.search.nearest_neighbors` (``method`` is the
        estimators' ``neighbors`` parameter).
    progress : callable(done, total), optional
        Called as the standard search's query chunks finish.
    """

    def __init__(self, X: np.ndarray, classes: np.ndarray | None = None, *,
                 method: str = "auto", metric: str = "euclidean", random_state=None,
                 n_jobs: int | None = None, progress=None):
        self.X = X
        self.classes = by_class(classes)
        self.method = method
        self.metric = metric
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.progress = progress
        self._index: ExactIndex | None = None
        self._own: tuple[int, np.ndarray, np.ndarray] | None = None
        self._known: tuple[int, tuple] | None = None
        self._balanced = None  # (k, BalancedLists, whether the exact merge holds)

    # ------------------------------------------------------------------ the search
    @property
    def search(self) -> dict:
        """The search options as the by-class builders take them."""
        return {"neighbors": self.method, "metric": self.metric,
                "random_state": self.random_state, "n_jobs": self.n_jobs}

    def index(self) -> ExactIndex | None:
        """The exact search's index of ``X`` (built on first ask), or None where the
        standard search is approximate."""
        if self._index is None and is_exact_search(*self.X.shape, self.method):
            self._index = ExactIndex(self.X, self.metric, self.n_jobs)
        return self._index

    # ------------------------------------------------------------------ the lists
    def standard(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Each point's ``k`` nearest other points ``(idx, dist)``, handed over: merged
        from balanced lists found before where that merge is exact, else searched."""
        if self.classes is not None and self._balanced is not None \
                and self._balanced[0] == k and self._balanced[2]:
            lists = self._balanced[1]
            return exact_merged_lists(self.X, lists.own_idx, lists.own_dist, lists.other_idx,
                                      lists.other_dist, k)
        return self._search(k, remember_own=False)

    def standard_for_classes(self, k: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """:meth:`standard` where the own-class lists will probably be asked for as well:
        found through them where the data allows (module note); the third value says
        whether the lists are the standard search's own (False for lists merged from
        balanced lists, which may miss a point the search would find)."""
        X, codes = self.X, self.classes
        if codes is None or (self._balanced is not None and self._balanced[0] == k
                             and self._balanced[2]):
            return (*self.standard(k), True)
        through = standard_through_classes(X, codes, k, self.method, self.metric,
                                           self.n_jobs, self.progress)
        if through is not None:
            self._own = (k, through.own_idx, through.own_dist)
            return through.idx, through.dist, True
        if merge_first(X, codes, k, self.method, self.metric):
            lists = self.balanced(k)
            found = merged_standard_lists(X, lists.own_idx, lists.own_dist, lists.other_idx,
                                          lists.other_dist, lists.block_width, k,
                                          self.metric, self.n_jobs)
            if found is not None:  # else handed back: the search follows
                return (*found, False)
        return (*self._search(k, remember_own=True), True)

    def searched_standard(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The standard search's own lists, whatever is remembered (the lists a mode
        keeps must be the search's answer, not a merge that may miss a point)."""
        return self._search(k, remember_own=False)

    def _search(self, k: int, remember_own: bool) -> tuple[np.ndarray, np.ndarray]:
        codes = self.classes
        idx, dist = nearest_neighbors(self.X, k, method=self.method, metric=self.metric,
                                      random_state=self.random_state, n_jobs=self.n_jobs,
                                      progress=self.progress, index=self.index())
        self._index = None  # no later ask searches all points again
        if remember_own and codes is not None and self._own is None and self._balanced is None:
            # rows whose whole list is their own class are their own-class lists already;
            # their distances are kept before a caller calibrates them in place (a copy
            # of the few such rows where the prior is mixed in the data)
            rows = own_class_rows(idx, codes)
            self._known = (k, (idx, dist[rows], rows))
        return idx, dist

    def own_class(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Each point's ``k`` nearest points of its own class (int64 indices)."""
        if self._own is not None and self._own[0] == k:
            return self._own[1], self._own[2]
        known = self._known[1] if self._known is not None and self._known[0] == k else None
        self._known = None  # the standard lists are the caller's from here on
        own = own_class_neighbors(self.X, self.classes, k, method=self.method,
                                  metric=self.metric, random_state=self.random_state,
                                  n_jobs=self.n_jobs, known=known)
        self._own = (k, *own)
        return own

    def balanced(self, k: int, *, class_trees: bool = False):
        """The own-class and other-class lists of a label-balanced P
        (:class:`ctsne.neighbors.class_lists.BalancedLists`), found once.

        ``class_trees``: find the own-class lists with one exact tree per class
        (:func:`ctsne.neighbors.own_first.class_tree_lists`, the standard search's distance
        code), so that standard lists merged from these afterwards are that search's own.
        """
        if self._balanced is not None and self._balanced[0] == k:
            return self._balanced[1]
        codes = self.classes
        own = None
        if class_trees:
            own = class_tree_lists(self.X, codes, k, self.n_jobs)
            self._own = (k, *own)
            if self.progress is not None:
                self.progress(len(codes) // 2, len(codes))
        elif self._own is not None and self._own[0] == k:
            own = (self._own[1], self._own[2])
        if own is None:
            own = self.own_class(k)
        lists = class_lists(self.X, codes, k, own=own, **self.search)
        if class_trees and self.progress is not None:
            self.progress(len(codes), len(codes))
        exact = class_trees and lists.block_width is None
        self._balanced = (k, lists, exact)
        return lists

    def pooled_others(self, k: int, own_idx: np.ndarray,
                      far_search: str = "scan") -> tuple[np.ndarray, np.ndarray]:
        """Each point's ``k`` nearest points of all other classes, pooled
        (:func:`ctsne.neighbors.pooled.pooled_other_neighbors`)."""
        from .pooled import pooled_other_neighbors

        return pooled_other_neighbors(self.X, self.classes, k, own_idx=own_idx,
                                      far_search=far_search, method=self.method,
                                      metric=self.metric, random_state=self.random_state,
                                      n_jobs=self.n_jobs)

    def merges_exactly(self, k: int) -> bool:
        """Whether standard lists merged from balanced lists found with ``class_trees``
        would be the standard search's own (:func:`ctsne.neighbors.merged.exact_merge`)."""
        return exact_merge(self.X, self.classes, k, self.method, self.metric)

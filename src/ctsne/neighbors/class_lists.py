"""The neighbour lists of a label-balanced P: each point's own-class and other-class lists.

With at most :data:`PER_CLASS_UP_TO` other classes every other class gives each point a
block of its own (:func:`other_block_width` neighbours); with more, the other classes are
pooled into one list of k. The weights and the calibration are the affinities' part
(:mod:`ctsne.affinities.balanced`); the lists are found here, once per fit
(:class:`ctsne.neighbors.provider.NeighborLists`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .by_class import other_class_neighbors, own_class_neighbors
from .pooled import pooled_other_neighbors

__all__ = ["K_MIN", "OTHER_SHARE", "PER_CLASS_UP_TO", "BalancedLists", "block_width_for",
           "class_lists", "other_block_width"]

# Up to this many other classes each gets a block of its own (L − 1 searches with a
# small k, about one full search in all); above, the other classes are pooled.
PER_CLASS_UP_TO = 8
# Fewest neighbours of a per-class block (its perplexity is a third of that).
K_MIN = 10
# The per-class blocks of a row hold about this share of k neighbours in all. Fewer cut
# P's entries (the attraction's cost follows them) but leave every point fewer
# counterparts.
OTHER_SHARE = 1.0


def other_block_width(k: int, L: int) -> int:
    """Neighbours in each per-class block of a point with ``L − 1`` other classes:
    ``min(k, max(K_MIN, ⌈OTHER_SHARE·k/(L − 1)⌉))``."""
    return min(k, max(K_MIN, int(np.ceil(OTHER_SHARE * k / (L - 1)))))


def block_width_for(k: int, L: int) -> int | None:
    """The other-class blocks of lists of ``k`` among ``L`` classes: per-class blocks of
    :func:`other_block_width` neighbours, or None (one pooled list of k) above
    :data:`PER_CLASS_UP_TO` other classes."""
    return None if L - 1 > PER_CLASS_UP_TO else other_block_width(k, L)


@dataclass
class BalancedLists:
    """The neighbour lists of a label-balanced P, before any weight is chosen.

    Attributes
    ----------
    codes : ndarray of int64 (n,)
    k : int
        Own-class neighbours per point (3·perplexity).
    own_idx, own_dist : ndarray (n, k)
    other_idx, other_dist : ndarray
        Per-class blocks of ``block_width`` columns, or one pooled list of k.
    block_width : int or None
        None when the other classes are pooled (more than :data:`PER_CLASS_UP_TO`).
    """

    codes: np.ndarray
    k: int
    own_idx: np.ndarray
    own_dist: np.ndarray
    other_idx: np.ndarray
    other_dist: np.ndarray
    block_width: int | None


def class_lists(X, codes, k, neighbors="auto", metric="euclidean", random_state=None,
                n_jobs=None, known=None, far_search="scan", own=None) -> BalancedLists:
    """Each point's own-class and other-class neighbour lists.

    Parameters
    ----------
    X : ndarray (n, p)
    codes : ndarray of int (n,)
        Prior classes 0..L−1 (L ≥ 2).
    k : int
        Own-class neighbours per point.
    neighbors, metric, random_state, n_jobs
        As in :func:`ctsne.neighbors.search.nearest_neighbors`.
    known : tuple (idx, dist, mask), optional
        A standard kNN table already computed; see
        :func:`ctsne.neighbors.by_class.own_class_neighbors`.
    far_search : {"scan", "tree"}
        How the other-class searches answer their far queries; see
        :class:`ctsne.neighbors.by_class.SearchIndex`.
    own : tuple (idx, dist), optional
        The own-class lists (n, k), already found (:mod:`ctsne.neighbors.own_first`).
    """
    codes = np.asarray(codes, dtype=np.int64)
    k = int(k)
    search = {"method": neighbors, "metric": metric, "random_state": random_state,
              "n_jobs": n_jobs}
    own_idx, own_dist = own if own is not None else own_class_neighbors(
        X, codes, k, known=known, **search)
    k_other = block_width_for(k, int(codes.max()) + 1)
    if k_other is None:
        o_idx, o_dist = pooled_other_neighbors(X, codes, k, own_idx=own_idx,
                                               far_search=far_search, **search)
        return BalancedLists(codes, k, own_idx, own_dist, o_idx, o_dist, None)
    o_idx, o_dist = other_class_neighbors(X, codes, k_other, own_idx=own_idx,
                                          far_search=far_search, **search)
    return BalancedLists(codes, k, own_idx, own_dist, o_idx, o_dist, k_other)



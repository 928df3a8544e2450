"""Each point's nearest points among all other classes pooled (the label-balanced P with
many classes).

Every class gets a binary code of ⌈log₂ L⌉ bits; for each bit one index holds the points
whose bit is 0 and one those whose bit is 1, and each point asks the index of the
opposite value. Two different classes differ in some bit, so the union of a point's
⌈log₂ L⌉ lists holds its k nearest points of all other classes; each bit's lists merge
into the running k nearest. 2⌈log₂ L⌉ indices over n/2 points each, not L searches; they
are far searches (:class:`ctsne.neighbors.by_class.SearchIndex`, through representatives
above ``REPS_FROM_PAIRS``).

Where the fit's exact search is the block tree, points of classes whose queries read at
most :data:`SKIP_OWN_UP_TO` points of their own class (every class up to that size; a
larger one where a sample shows it, :func:`skipping_classes`) find the pooled list in one
search over all points that skips their own class
(:meth:`ctsne.neighbors.kdtree.BlockTree.query`), exact and faster than the bits;
elsewhere points of small classes search k + n_c neighbours of all points once.
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import kernel
from ..tuning import POOLED_PARALLEL_FROM_ENTRIES as PARALLEL_FROM_ENTRIES
from ..tuning import SKIP_OWN_FROM_BITS, SKIP_OWN_UP_TO, SKIP_SAMPLE
from ..tuning import SKIP_SAMPLE_CHUNK as _SAMPLE_CHUNK
from . import by_class
from .brute import gram_squared_distances
from .search import QUERY_CHUNK, is_exact_search, uses_block_tree

__all__ = ["EXTRA_UP_TO", "PARALLEL_FROM_ENTRIES", "SKIP_OWN_FROM_BITS", "SKIP_OWN_UP_TO",
           "SKIP_SAMPLE", "class_bits", "pooled_other_neighbors", "sampled_own_reads",
           "skipping_classes", "skips_own_class"]

# A point of a class with at most EXTRA_UP_TO·k other points finds its nearest points of
# all other classes in one search of k + n_c neighbours over every point (dropping its own
# class's), instead of one search per bit.
EXTRA_UP_TO = 2
# The thresholds of the search that skips the own class live in ctsne.tuning (what each
# decides is said there) and are named here too: other modules and the tests read them
# from this one. The skipping search's lists are exact, the bits' not.


def class_bits(L: int) -> int:
    """Bits of the binary class codes: ⌈log₂ L⌉ (at least 1)."""
    return max(1, int(np.ceil(np.log2(L))))


@kernel(PARALLEL_FROM_ENTRIES)
def _merge_into(idx, dist, rows, new_idx, new_dist, codes, b):
    """Merge each row's sorted list from bit ``b``'s search into ``rows``' sorted lists,
    keeping the k nearest distinct points.

    A point j of another class is offered by every bit in which its class code differs
    from the row's. Offered first by this bit, it is new; otherwise an earlier bit's search
    may hold it (approximate searches can miss it), so the row's list is checked by index.
    Distances cannot tell copies apart: two searches may round the same pair differently.
    """
    k = idx.shape[1]
    kb = new_idx.shape[1]
    lower = (1 << b) - 1
    for r in numba.prange(rows.shape[0]):
        row = rows[r]
        old_i = idx[row].copy()
        old_d = dist[row].copy()
        a = 0
        c = 0
        t = 0
        while t < k:
            if c < kb and (a >= k or new_dist[r, c] < old_d[a]):
                j, d = new_idx[r, c], new_dist[r, c]
                c += 1
                if (codes[j] ^ codes[row]) & lower != 0:
                    seen = False
                    for u in range(k):
                        if old_i[u] == j:  # empty slots hold the row itself, never j
                            seen = True
                            break
                    if seen:
                        continue
            elif a < k:
                j, d = old_i[a], old_d[a]
                a += 1
            else:
                break
            if d == np.inf:
                break
            idx[row, t] = j
            dist[row, t] = d
            t += 1
        for u in range(t, k):
            idx[row, u] = row
            dist[row, u] = np.inf


def skips_own_class(shape: tuple[int, int], n_classes: int, method: str = "auto",
                    metric: str = "euclidean") -> bool:
    """Whether :func:`pooled_other_neighbors` answers the points of some classes
    (:func:`skipping_classes`) by one search that skips their own class: Euclidean,
    the fit's exact search is the block tree, at least :data:`SKIP_OWN_FROM_BITS` class
    bits. Where every class does, each pooled list is then the exact k nearest
    points of the other classes, in the block tree's distances (bit for bit those of the
    standard search)."""
    return (metric == "euclidean" and uses_block_tree(*shape) and is_exact_search(*shape, method)
            and class_bits(n_classes) >= SKIP_OWN_FROM_BITS)


def sampled_own_reads(X: np.ndarray, codes: np.ndarray, c: int, k: int) -> float:
    """How many points of class ``c`` a search that skips it reads per query: the mean,
    over :data:`SKIP_SAMPLE` of its points evenly spaced in it, of its points nearer than
    the query's k-th nearest point of the other classes (the query itself included); all
    of it where fewer than k points lie in other classes (the queries never find k).

    Squared distances through matrix products in one BLAS thread
    (:func:`~ctsne.neighbors.brute.gram_squared_distances`: an estimate's arithmetic;
    products this small contend for a busy machine's cores), in one pass over the points: each
    chunk's k nearest other-class points, and the own-class distances, counted once the
    k-th is known.
    """
    from threadpoolctl import threadpool_limits

    own_rows = np.flatnonzero(codes == c)
    if len(codes) - len(own_rows) < k:
        return float(len(own_rows))
    sample = own_rows[np.linspace(0, len(own_rows) - 1, min(SKIP_SAMPLE, len(own_rows)))
                      .astype(np.int64)]
    Q = np.asarray(X[sample], dtype=np.float64)
    nearest, own_d2 = [], []  # each chunk's k nearest other-class points; own distances
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, len(codes), _SAMPLE_CHUNK):
            d2 = gram_squared_distances(
                Q, np.asarray(X[start:start + _SAMPLE_CHUNK], dtype=np.float64))
            own = codes[start:start + _SAMPLE_CHUNK] == c
            own_d2.append(d2[:, own])
            d2 = d2[:, ~own]
            nearest.append(np.partition(d2, k - 1, axis=1)[:, :k] if d2.shape[1] > k else d2)
    kth = np.partition(np.hstack(nearest), k - 1, axis=1)[:, k - 1:k]
    read = np.count_nonzero(np.hstack(own_d2) < kth)
    return read / len(sample)


def skipping_classes(X: np.ndarray, codes: np.ndarray, k: int,
                     until_refused: bool = False) -> np.ndarray:
    """Which classes (bool (L,)) find their pooled lists by the search that skips the own
    class, where :func:`skips_own_class` allows it: each of at most :data:`SKIP_OWN_UP_TO`
    points, and each larger one whose :func:`sampled_own_reads` are at most that.

    ``until_refused``: stop at the first class refused (the later large classes are left
    False), for a caller that needs every class to skip. Each class is sampled on its own,
    so both ways give it the same answer.
    """
    skip = np.bincount(codes) <= SKIP_OWN_UP_TO
    for c in np.flatnonzero(~skip):
        skip[c] = sampled_own_reads(X, codes, int(c), k) <= SKIP_OWN_UP_TO
        if until_refused and not skip[c]:
            break
    return skip


def pooled_other_neighbors(X, codes, k, method="auto", metric="euclidean",
                           random_state=None, n_jobs=None, own_idx=None, far_search="scan"):
    """Each point's ``k`` nearest points among all other classes, by ⌈log₂ L⌉ bit splits.

    Points of small classes search all points at once instead: with the block tree (and
    at least :data:`SKIP_OWN_FROM_BITS` class bits) the classes of
    :func:`skipping_classes` skip their own class in one exact search; otherwise classes of at most
    ``EXTRA_UP_TO·k + 1`` points search k + n_c neighbours. ``own_idx`` and
    ``far_search`` concern the bit searches only.

    ``own_idx`` as in :func:`ctsne.neighbors.by_class.other_class_neighbors`: large bit
    searches then ask representatives only (a point's own class shares its bits, so its
    own-class neighbours ask the same index). ``far_search`` as there, for the bit
    searches.

    Returns
    -------
    idx : ndarray of int64 (n, k), dist : ndarray (n, k)
        Empty slots where fewer than k points lie in other classes.
    """
    n = len(codes)
    sizes = np.bincount(codes)
    L = len(sizes)
    idx, dist = by_class._empty(n, k)
    skip_own = skips_own_class(X.shape, L, method, metric)
    small = (skipping_classes(X, codes, k)[codes] if skip_own
             else sizes[codes] <= EXTRA_UP_TO * k + 1)
    if small.any() and skip_own:
        _skip_own_search(X, codes, k, np.flatnonzero(small), idx, dist)
    elif small.any():
        _one_search(X, codes, k, np.flatnonzero(small), sizes, idx, dist,
                    (method, metric, random_state, n_jobs))
    large = np.flatnonzero(~small)
    if len(large) == 0:
        return idx, dist
    rep = by_class._representatives(codes, own_idx, metric)
    codes64 = np.ascontiguousarray(codes, dtype=np.int64)
    for b in range(class_bits(L)):
        bit = (codes >> b) & 1
        for v in (0, 1):
            rows = np.flatnonzero(bit == v)
            askers = large[bit[large] != v]
            kb = min(k, len(rows))
            if kb < 1 or len(askers) == 0:
                continue
            # the askers' classes are all outside the index: far queries, as above
            index = by_class.SearchIndex(X, rows, method, metric, random_state, n_jobs, far=True,
                                far_search=far_search)
            i, d = by_class._search(index, X, askers, kb, own_idx, rep)
            _merge_into(idx, dist, askers, np.ascontiguousarray(i, dtype=np.int64),
                        np.ascontiguousarray(d, dtype=np.float64), codes64, b,
                        work=len(askers) * k)
    return idx, dist


def _skip_own_search(X, codes, k, rows, idx, dist):
    """Other-class lists of ``rows`` from one exact search over all points in which each
    query skips its own class (:meth:`ctsne.neighbors.kdtree.BlockTree.query`)."""
    from .kdtree import BlockTree

    tree = BlockTree(X, codes=codes)
    k_all = min(k, len(codes))
    # asked in the tree's order, whole leaves at a time (the point itself, of its own
    # class, is skipped with it)
    asked = np.zeros(len(codes), dtype=bool)
    asked[rows] = True
    rows = tree.order[asked[tree.order]]
    for start in range(0, len(rows), QUERY_CHUNK):
        part = rows[start:start + QUERY_CHUNK]
        d, i = tree.query(X[part], k_all, self_rows=part, skip_codes=codes[part])
        empty = i < 0  # fewer than k points in other classes: empty slots
        idx[part, :k_all] = np.where(empty, part[:, None], i)
        dist[part, :k_all] = d


def _one_search(X, codes, k, rows, sizes, idx, dist, search):
    """Other-class lists of ``rows`` from one search of k + n_c neighbours over all points.

    Among a point's k + n_c nearest points (itself included) at most n_c are of its own
    class, so at least k are of other classes, and they are its k nearest of those.
    """
    n = len(codes)
    k_all = int(min(n, k + sizes[codes[rows]].max()))
    i, d = by_class.SearchIndex(X, np.arange(n), *search).query(X[rows], k_all)
    other = codes[i] != codes[rows][:, None]
    # a stable sort moves each row's other-class entries to the front, nearest first
    order = np.argsort(~other, axis=1, kind="stable")[:, :k]
    keep = np.take_along_axis(other, order, axis=1)
    i = np.take_along_axis(i, order, axis=1)
    d = np.where(keep, np.take_along_axis(d, order, axis=1), np.inf)
    idx[rows] = np.where(keep, i, rows[:, None])
    dist[rows] = d

"""The block k-d tree's build: median splits that keep ties on one side, fixed-size leaves.

The tree splits at the median of the feature of largest variance, with all points equal to
the median on one side (:func:`_split`), so leaves hold ``leaf_size/4 … leaf_size`` points
and no two children's boxes share the median value: real tabular data ties (UCI Adult's
capital gains are 92 % zeros; binary and integer features), and a box that does not shrink
is read by every query. :class:`ctsne.neighbors.kdtree.BlockTree` builds its tree here and
walks it (:mod:`ctsne.neighbors.kdtree`).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["build_tree"]


@numba.njit(cache=True)
def _select(idx, key, lo, hi, nth):
    """Reorder ``idx[lo:hi]`` so that ``idx[nth]`` has the median key: keys of
    ``idx[lo:nth]`` ≤ it ≤ keys of ``idx[nth:hi]`` (Hoare partitions, middle pivot)."""
    left, right = lo, hi - 1
    while left < right:
        pivot = key[idx[(left + right) // 2]]
        i, j = left, right
        while i <= j:
            while key[idx[i]] < pivot:
                i += 1
            while key[idx[j]] > pivot:
                j -= 1
            if i <= j:
                idx[i], idx[j] = idx[j], idx[i]
                i += 1
                j -= 1
        if nth <= j:
            right = j
        elif nth >= i:
            left = i
        else:
            break


@numba.njit(cache=True)
def _split(perm, key, s, e):
    """Where to cut ``perm[s:e]`` in two, after ordering it about the median of ``key``;
    -1 where ties at the median would straddle the cut.

    Without ties the cut is the median's position (the halves of a median split). With
    ties, the points equal to the median are gathered and the cut put before or after
    them, whichever is nearer the middle while each side keeps a quarter: otherwise both
    children's boxes would hold the median value, and the cut would separate nothing
    there. Real data has such ties (Adult's capital gains are 92 % zeros; its binary and
    integer features), and boxes that do not shrink are read by every query.
    """
    mid = s + (e - s) // 2
    _select(perm, key, s, e, mid)
    val = key[perm[mid]]
    below = 0
    equal = 0
    for a in range(s, e):
        below += key[perm[a]] < val
        equal += key[perm[a]] == val
    if equal == 1:
        return mid
    least = max(1, (e - s) // 4)
    best = -1
    for cut in (s + below, s + below + equal):
        if cut - s >= least and e - cut >= least and (
                best < 0 or abs(cut - mid) < abs(best - mid)):
            best = cut
    if best < 0:
        return -1
    # three runs: below the median, equal to it, above it
    lt, a, gt = s, s, e - 1
    while a <= gt:
        x = key[perm[a]]
        if x < val:
            perm[lt], perm[a] = perm[a], perm[lt]
            lt += 1
            a += 1
        elif x > val:
            perm[gt], perm[a] = perm[a], perm[gt]
            gt -= 1
        else:
            a += 1
    return best


@numba.njit(cache=True)
def build_tree(X, leaf_size):
    """Median splits down to leaves of at most ``leaf_size`` points (module note).

    Each node splits on its feature of largest variance whose median split keeps the
    median's ties on one side (:func:`_split`, the features tried in order of variance),
    else at the plain median of the first (both children's boxes then hold the median
    value there). The variance rather than the range picks the feature because it gives
    boxes that queries skip more often: faster searches on clustered data and on real
    data with ties. The exact lists do not depend on the tree.

    Returns the points in leaf order, and per node: first and last point (exclusive), the
    children (−1 for a leaf) and the bounding box.
    """
    n, p = X.shape
    perm = np.arange(n)
    # a split leaves each side a quarter of its node at least, so leaves hold at least
    # ⌊(leaf_size + 1)/4⌋ points (one, for tiny leaves)
    cap = 2 * (n // max(1, (leaf_size + 1) // 4) + 1)
    start = np.empty(cap, dtype=np.int64)
    stop = np.empty(cap, dtype=np.int64)
    left = np.full(cap, -1, dtype=np.int64)
    right = np.full(cap, -1, dtype=np.int64)
    lo = np.empty((cap, p))
    hi = np.empty((cap, p))
    key = np.empty(n)
    tried = np.zeros(p, dtype=np.bool_)
    shift = np.empty(p)
    s1 = np.empty(p)
    spread = np.empty(p)
    start[0], stop[0] = 0, n
    count = 1
    todo = [0]
    while len(todo) > 0:
        v = todo.pop()
        s, e = start[v], stop[v]
        for j in range(p):
            lo[v, j] = np.inf
            hi[v, j] = -np.inf
            # sums about the node's first point: no cancellation against a large mean
            shift[j] = X[perm[s], j]
            s1[j] = 0.0
            spread[j] = 0.0
        for a in range(s, e):
            for j in range(p):
                x = X[perm[a], j]
                lo[v, j] = min(lo[v, j], x)
                hi[v, j] = max(hi[v, j], x)
                dx = x - shift[j]
                s1[j] += dx
                spread[j] += dx * dx
        if e - s <= leaf_size:
            continue
        m = e - s
        for j in range(p):  # m × the variance
            spread[j] -= s1[j] * s1[j] / m
        first = 0  # the feature of largest variance
        for j in range(1, p):
            if spread[j] > spread[first]:
                first = j
        tried[:] = False
        cut = -1
        while cut < 0:
            dim = -1  # the feature of largest variance not tried yet
            for j in range(p):
                if not tried[j] and (dim < 0 or spread[j] > spread[dim]):
                    dim = j
            if dim < 0 or hi[v, dim] - lo[v, dim] <= 0.0:  # all tried, or the rest flat
                break
            tried[dim] = True
            for a in range(s, e):
                key[perm[a]] = X[perm[a], dim]
            cut = _split(perm, key, s, e)
        if cut < 0:  # every feature ties at its median: split the first choice there
            for a in range(s, e):
                key[perm[a]] = X[perm[a], first]
            cut = s + (e - s) // 2
            _select(perm, key, s, e, cut)
        start[count], stop[count] = s, cut
        start[count + 1], stop[count + 1] = cut, e
        todo.append(count)
        todo.append(count + 1)
        left[v], right[v] = count, count + 1
        count += 2
    return perm, start[:count], stop[:count], left[:count], right[:count], lo[:count], hi[:count]

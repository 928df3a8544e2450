"""Far neighbour lists from representatives: search for a quarter of the points, share.

A point's nearest points of a distant class are nearly those of its own nearest
neighbours: the distance to the other class is much larger than the step between
neighbours. So where a far search is large (the tolerant k-d tree path of
:mod:`ctsne.neighbors.by_class`), only the representatives — one point in
:data:`REP_EVERY` of each class, and every point with fewer than :data:`REPS_PER_POINT`
representatives in its own-class list — are searched. Every other point takes the union
of the lists of the first :data:`REPS_PER_POINT` representatives in its own-class list
(nearest first) as candidates and keeps the nearest k of them by exact distance: a
fraction of the direct search's time, at about its recall.
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import kernel
from ..tuning import PARALLEL_FROM_CANDIDATES, REPS_TASKS_PER_THREAD
from .brute import insert_sorted

__all__ = ["REP_EVERY", "REPS_PER_POINT", "lists_from_representatives", "place_rows",
           "representatives"]

# Both define the lists (the module note), and REPS_PER_POINT is read inside the
# candidates' kernel (numba compiles its value into it): they stay here, not in ctsne.tuning.
REP_EVERY = 4
REPS_PER_POINT = 4
# The candidates' pass runs as REPS_TASKS_PER_THREAD tasks a thread: each marks the points
# it has seen in an array of its own over all points (a few tasks: little memory, balance).


def representatives(codes: np.ndarray, own_idx: np.ndarray) -> np.ndarray:
    """Which points are searched directly (bool (n,)).

    One point in :data:`REP_EVERY` of each class by its position in the class, and every
    point whose own-class list holds fewer than :data:`REPS_PER_POINT` of those.
    """
    n = len(codes)
    order = np.argsort(codes, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(codes))][codes[order]]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - starts
    rep = rank % REP_EVERY == 0
    listed = rep[own_idx] & (own_idx != np.arange(n)[:, None])  # empty slots hold the point
    return rep | (listed.sum(axis=1) < REPS_PER_POINT)


@kernel(PARALLEL_FROM_CANDIDATES)
def _from_reps(X, queries, own_idx, slot, rep_idx, k, tasks, out_idx, out_dist, out_rows,
               out_cols):
    # query q's list goes to out_*[out_rows[q], out_cols[q]:out_cols[q] + k]
    nq = queries.shape[0]
    kr = rep_idx.shape[1]
    p = X.shape[1]
    for task in numba.prange(tasks):
        best_d = np.empty(k)
        best_i = np.empty(k, dtype=np.int64)
        # seen[j] == q: point j was offered to query q already, so a repeat (representatives'
        # lists overlap heavily) is skipped before its distance: kept or dropped, it stays so
        # int32: a task's queries number far below 2³¹, and 4 bytes keep tasks × n small
        seen = np.full(X.shape[0], -1, dtype=np.int32)
        for q in range(task * nq // tasks, (task + 1) * nq // tasks):
            x = queries[q]
            best_d[:] = np.inf
            best_i[:] = x
            got = 0
            for a in range(own_idx.shape[1]):
                s = slot[own_idx[x, a]]
                if s < 0:
                    continue
                for b in range(kr):
                    j = rep_idx[s, b]
                    if seen[j] == q:
                        continue
                    seen[j] = q
                    acc = 0.0
                    for f in range(p):
                        z = X[x, f] - X[j, f]
                        acc += z * z
                    du = np.sqrt(acc)
                    if du < best_d[k - 1]:  # equal distances keep arrival order
                        insert_sorted(best_d, best_i, du, j)
                got += 1
                if got == REPS_PER_POINT:
                    break
            r = out_rows[q]
            c = out_cols[q]
            for t in range(k):
                out_idx[r, c + t] = best_i[t]
                out_dist[r, c + t] = best_d[t]


def place_rows(idx: np.ndarray, dist: np.ndarray, rows: np.ndarray, cols: np.ndarray,
               i: np.ndarray, d: np.ndarray) -> None:
    """Write row t of a result ``(i, d)`` (m, k) to ``idx``/``dist[rows[t], cols[t]:cols[t] + k]``.

    One row-index assignment of a column slice per distinct ``cols`` value (a far search's
    answers go to one block or the next, by the asking point's class), not one (row,
    column) index pair per entry.
    """
    k = i.shape[1]
    for c in np.unique(cols):
        sel = cols == c
        idx[rows[sel], c:c + k] = i[sel]
        dist[rows[sel], c:c + k] = d[sel]


def lists_from_representatives(X, queries, own_idx, rep, search, k, out=None):
    """The ``k`` nearest indexed points of each of ``queries`` (global point numbers).

    Parameters
    ----------
    X : ndarray (n, p)
    queries : ndarray of int
        Points asking, none of them in the searched class.
    own_idx : ndarray of int (n, k_own)
        Each point's own-class list, nearest first.
    rep : ndarray of bool (n,)
        From :func:`representatives`.
    search : callable(Q, k) -> (idx, dist)
        The direct search (e.g. :meth:`ctsne.neighbors.by_class.SearchIndex.query`).
    out : tuple (idx, dist, rows, cols), optional
        Tables (int64 and float64) to write query t's list into, at row ``rows[t]`` from
        column ``cols[t]``, instead of returning new ones (the by-class blocks: no
        table per search to copy from).

    Returns
    -------
    idx : ndarray of int64 (len(queries), k), dist : ndarray
        Without ``out`` (otherwise None). Rows with fewer than k candidates keep empty
        slots (the point itself, ``inf``).
    """
    queries = np.asarray(queries, dtype=np.int64)
    if out is None:
        # every row is written below: by the search, or whole by _from_reps
        idx = np.empty((len(queries), k), dtype=np.int64)
        dist = np.empty((len(queries), k))
        lists_from_representatives(X, queries, own_idx, rep, search, k, out=(
            idx, dist, np.arange(len(queries)), np.zeros(len(queries), dtype=np.int64)))
        return idx, dist
    idx, dist, rows, cols = out
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    direct = rep[queries]
    asked = queries[direct]
    a_idx, a_dist = search(X[asked], k)
    place_rows(idx, dist, rows[direct], cols[direct], a_idx, a_dist)
    slot = np.full(X.shape[0], -1, dtype=np.int64)
    slot[asked] = np.arange(len(asked))
    rest = np.flatnonzero(~direct)
    if len(rest):
        X64 = np.ascontiguousarray(X, dtype=np.float64)
        _from_reps(X64, queries[rest], np.ascontiguousarray(own_idx, dtype=np.int64), slot,
                   np.ascontiguousarray(a_idx, dtype=np.int64), k,
                   max(1, min(len(rest), REPS_TASKS_PER_THREAD * numba.get_num_threads())),
                   idx, dist, rows[rest], cols[rest],
                   work=len(rest) * REPS_PER_POINT * k)
    return None

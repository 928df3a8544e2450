"""Per-row perplexity calibration: each neighbour list's Gaussian by Newton's method.

A row's distances to its k nearest neighbours become conditional probabilities
``p_{j|i} ∝ exp(−β_i d_ij²)``, with the precision β_i found by a safeguarded Newton
iteration (bisection where Newton's step leaves the bracket) so that the row's entropy is
``log(perplexity)``. Used for the standard P, for each block of the
label-balanced P (:mod:`ctsne.affinities.balanced`), for given neighbours
(:mod:`ctsne.affinities.precomputed`) and for new points (:mod:`ctsne.estimator.placement`).
Tables below ``NUMPY_BELOW_ENTRIES`` are calibrated by the kernel's numpy twin, all rows
at once through the same steps in the same order (:mod:`ctsne._parallel`).
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import sum_in_order, threaded
from ..tuning import NUMPY_BELOW_ENTRIES, PARALLEL_FROM_ENTRIES
from .options import n_neighbors_for

# n_neighbors_for lives in .options (no numba: the parameter checks use it); named here too
__all__ = ["CALIBRATE_MAX_ITER", "CALIBRATE_TOL", "NUMPY_BELOW_ENTRIES", "PARALLEL_FROM_ENTRIES",
           "START_SCALE", "block_perplexity", "calibrate", "calibrate_blocks", "calibrate_row",
           "n_neighbors_for"]


# The (n, k) tables' thresholds come from ctsne.tuning (and are named here too: other
# modules and the tests read them from this one).

# The search for each row's precision: entropy tolerance (nats) and most steps.
CALIBRATE_TOL = 1e-8
CALIBRATE_MAX_ITER = 200
# The search starts at β = START_SCALE·log(k/perplexity) / mean(d² − d²_min) (distances
# relative to the row's largest), where a flat row would keep about perplexity of the k
# entries; real rows sit lower. It saves Newton steps against β = 1.
START_SCALE = 3.0


@numba.njit(cache=True)
def calibrate_row(dist, perplexity, tol, max_iter, out):
    """One row's ``p_{j|i}`` (1-D views; ``out`` may be ``dist``): see :func:`calibrate`."""
    k = dist.shape[0]
    target = np.log(perplexity)
    # distances relative to the row's largest make the result independent of the
    # data's scale and keep their squares in range (1e-300 or 1e200 would not be)
    top = 0.0
    for j in range(k):
        top = max(top, dist[j])
    if top == 0.0 or not np.isfinite(top):
        top = 1.0
    d2 = np.empty(k)  # the row is copied first, so ``out`` may be ``dist`` itself
    for j in range(k):
        r = dist[j] / top
        d2[j] = r * r
    # relative to the nearest neighbour keeps exp() in range; this only rescales the
    # row, which the normalisation removes
    dmin = d2[0]
    for j in range(k):
        dmin = min(dmin, d2[j])
    lo, hi, beta = 0.0, np.inf, 1.0
    spread = 0.0
    for j in range(k):
        spread += d2[j] - dmin
    spread /= k
    if k > perplexity and spread > 0.0:
        beta = START_SCALE * np.log(k / perplexity) / spread
    e = np.empty(k)
    s = 1.0
    for _ in range(max_iter):
        s = 0.0
        sd = 0.0
        sdd = 0.0
        for j in range(k):
            dj = d2[j] - dmin
            e[j] = np.exp(-dj * beta)
            s += e[j]
            sd += e[j] * dj
            sdd += e[j] * dj * dj
        mean = sd / s
        entropy = np.log(s) + beta * mean
        diff = entropy - target
        if abs(diff) < tol:
            break
        if diff > 0:  # too flat: sharpen
            lo = beta
        else:
            hi = beta
        # Newton's step (dH/dβ = −β·Var(d²) under the row's distribution) where it stays
        # inside the bracket, else bisection: ~6 evaluations per row instead of ~40
        var = sdd / s - mean * mean
        step = beta + diff / (beta * var) if var > 0.0 else np.inf
        if lo < step < hi:
            beta = step
        elif diff > 0:
            beta = beta * 2.0 if hi == np.inf else 0.5 * (beta + hi)
        else:
            beta = 0.5 * (beta + lo)
    for j in range(k):
        out[j] = e[j] / s


@numba.njit(cache=True)
def block_perplexity(perplexity: float, width: int, k: int) -> float:
    """Perplexity of a block of ``width`` of the ``k`` neighbours: scaled by ``width/k``, ≥ 1."""
    return max(1.0, min(perplexity, perplexity * width / k))


@numba.njit(cache=True)
def trim_tail(p, tail):
    """Zero the smallest entries of a calibrated block ``p`` (summing to 1) that together
    hold at most ``tail`` of its mass, and scale the rest back to 1. For a block of a
    neighbour list, sorted by distance (the caller checks), the smallest entries are the
    last. Entries of equal value go together, so the result does not depend on their
    order."""
    w = p.shape[0]
    end = w  # entries end: are dropped
    dropped = 0.0
    while end > 1:
        start = end - 1
        group = p[start]
        while start > 0 and p[start - 1] == p[end - 1]:
            start -= 1
            group += p[start]
        if dropped + group > tail:
            break
        dropped += group
        end = start
    if end == w:
        return
    kept = 0.0
    for j in range(end):
        kept += p[j]
    for j in range(w):
        p[j] = p[j] / kept if j < end else 0.0


@threaded(PARALLEL_FROM_ENTRIES)
def _calibrate_kernel(dist, perplexity, tol, max_iter, starts, k, weights, tail, out, start,
                      stop):
    # Plain rows (no blocks: ``starts`` holds one entry) and rows of weighted blocks in
    # one kernel: one compile serves both the standard and the label-balanced P.
    # rows start … stop − 1
    blocks = starts.shape[0] - 1
    for i in numba.prange(start, stop):
        if blocks == 0:
            calibrate_row(dist[i], perplexity, tol, max_iter, out[i])
            continue
        # block b of row i is columns starts[b]:starts[b + 1], its filled slots (finite)
        # first; every distance is read before its slot is written, so ``out`` may be
        # ``dist``
        total = 0.0
        for b in range(blocks):
            lo, hi = starts[b], starts[b + 1]
            w = 0
            for j in range(lo, hi):
                if np.isfinite(dist[i, j]):
                    w += 1
            # only a sorted block has its farthest entries last (else it stays whole)
            ascending = True
            for j in range(lo + 1, lo + w):
                if dist[i, j] < dist[i, j - 1]:
                    ascending = False
            for j in range(lo + w, hi):
                out[i, j] = 0.0
            if w == 0:
                continue
            # np.int64(w): one pass of the parallel twin typed w as Literal[int](0), and
            # compiled block_perplexity a second time
            calibrate_row(dist[i, lo:lo + w], block_perplexity(perplexity, np.int64(w), k),
                          tol, max_iter, out[i, lo:lo + w])
            if tail > 0.0 and ascending:
                trim_tail(out[i, lo:lo + w], tail)
            for j in range(lo, lo + w):
                out[i, j] *= weights[i, b]
                total += out[i, j]
        # rows with an empty block (a class of one point) give its share to the others
        for j in range(out.shape[1]):
            out[i, j] /= total


# Twin: a small fit compiles no calibration.
# The kernel's results for empty, infinite or duplicate rows (nan, 0/0) come silently.
@_calibrate_kernel.small(below=NUMPY_BELOW_ENTRIES)
@np.errstate(invalid="ignore", divide="ignore", over="ignore")
def _calibrate_small(dist, perplexity, tol, max_iter, starts, k, weights, tail, out):
    n, m = dist.shape
    blocks = starts.shape[0] - 1
    if blocks == 0:
        out[:] = _rows_np(dist, np.ones(dist.shape, dtype=bool), np.full(n, perplexity), tol,
                          max_iter)
        return
    res = np.zeros((n, m))
    for b in range(blocks):
        lo, hi = starts[b], starts[b + 1]
        block = dist[:, lo:hi]
        w = np.isfinite(block).sum(axis=1)
        filled = np.arange(hi - lo)[None, :] < w[:, None]
        per = np.maximum(1.0, np.minimum(perplexity, perplexity * w / k))
        p = _rows_np(np.where(filled, block, 0.0), filled, per, tol, max_iter)
        if tail > 0.0:
            falls = filled[:, 1:] & (block[:, 1:] < block[:, :-1])
            ascending = ~falls.any(axis=1)
            sub = np.flatnonzero(ascending & (w > 0))
            q = p[sub]
            _trim_tail_np(q, w[sub], tail)
            p[sub] = q
        res[:, lo:hi] = p * weights[:, b:b + 1]
    out[:] = res / sum_in_order(res.T)[:, None]


def _rows_np(dist, valid, perplexity, tol, max_iter):
    """:func:`calibrate_row` for many rows at once (numpy, one column at a time so that
    every sum runs in the kernel's order): ``dist`` (n, w) with ``valid`` (n, w) marking
    each row's entries (a prefix), ``perplexity`` (n,). Invalid slots get 0."""
    n, width = dist.shape
    count = valid.sum(axis=1)
    top = np.max(np.where(valid, dist, 0.0), axis=1, initial=0.0)
    top[(top == 0.0) | ~np.isfinite(top)] = 1.0
    r = dist / top[:, None]
    d2 = np.where(valid, r * r, np.inf)
    dmin = np.min(d2, axis=1)
    # (w, n) layouts: each column's entries are summed in order (sum_in_order)
    dj = np.where(valid, d2 - dmin[:, None], 0.0).T.copy()
    spread = sum_in_order(dj) / np.maximum(count, 1)
    beta = np.ones(n)
    starts = (count > perplexity) & (spread > 0.0)
    beta[starts] = START_SCALE * np.log(count[starts] / perplexity[starts]) / spread[starts]
    lo, hi = np.zeros(n), np.full(n, np.inf)
    target = np.log(perplexity)
    mask = valid.T
    e = np.zeros((width, n))
    s = np.ones(n)
    live = np.flatnonzero(count > 0)  # an empty block stays 0
    for _ in range(max_iter):
        if live.size == 0:
            break
        d, b = dj[:, live], beta[live]
        ev = np.where(mask[:, live], np.exp(-d * b), 0.0)
        e[:, live] = ev
        sv = sum_in_order(ev)
        sd = sum_in_order(ev * d)
        sdd = sum_in_order(ev * d * d)
        s[live] = sv
        mean = sd / sv
        diff = (np.log(sv) + b * mean) - target[live]
        going = ~(np.abs(diff) < tol)
        live, b, diff, sv, mean, sdd = (a[going] for a in (live, b, diff, sv, mean, sdd))
        flat = diff > 0  # too flat: sharpen
        lo[live[flat]] = b[flat]
        hi[live[~flat]] = b[~flat]
        var = sdd / sv - mean * mean
        step = np.where(var > 0.0, b + diff / (b * var), np.inf)
        h, l_ = hi[live], lo[live]
        inside = (l_ < step) & (step < h)
        halve = np.where(h == np.inf, b * 2.0, 0.5 * (b + h))
        beta[live] = np.where(inside, step, np.where(flat, halve, 0.5 * (b + l_)))
    return (e / s).T


def _trim_tail_np(p, width, tail):
    """:func:`trim_tail` of rows at once: ``p`` (n, W), row i's block its first
    ``width[i]`` entries (the rest 0), trimmed in place."""
    n = p.shape[0]
    rows = np.arange(n)
    end = width.copy()
    dropped = np.zeros(n)
    live = rows[end > 1]
    while live.size:
        start = end[live] - 1
        last = p[live, start]
        group = last.copy()
        more = True
        while more:  # extend each group down over entries equal to its last
            ext = (start > 0) & (p[live, np.maximum(start - 1, 0)] == last)
            more = bool(ext.any())
            start = np.where(ext, start - 1, start)
            group = np.where(ext, group + p[live, start], group)
        stop = dropped[live] + group > tail
        keep = ~stop
        live, start, group = live[keep], start[keep], group[keep]
        dropped[live] += group
        end[live] = start
        live = live[end[live] > 1]
    cut = rows[end < width]
    if cut.size == 0:
        return
    q = p[cut]
    q[np.arange(q.shape[1])[None, :] >= end[cut, None]] = 0.0
    kept = sum_in_order(q.T)
    p[cut] = q / kept[:, None]


def calibrate(distances: np.ndarray, perplexity: float, tol: float = CALIBRATE_TOL,
              max_iter: int = CALIBRATE_MAX_ITER, out: np.ndarray | None = None) -> np.ndarray:
    """Row-stochastic conditional probabilities ``p_{j|i}`` with the given perplexity.

    ``distances`` are (n, k) distances to the k nearest neighbours; the Gaussian acts on
    their squares, after dividing each row by its largest distance (so the result does not
    depend on the scale). Each row's precision is found by Newton's method on the entropy,
    kept inside a bisection bracket. ``out``
    (float64, (n, k)) may be ``distances`` itself, to calibrate in place.
    """
    dist = np.ascontiguousarray(distances, dtype=np.float64)
    if out is None:
        out = np.empty_like(dist)
    _calibrate_kernel.run(dist, float(perplexity), tol, max_iter, np.zeros(1, dtype=np.int64),
                          dist.shape[1], np.empty((0, 0)), 0.0, out, items=len(dist),
                          work=dist.size)
    return out


def calibrate_blocks(dist: np.ndarray, starts: np.ndarray, perplexity: float, k: int,
                     weights: np.ndarray, out: np.ndarray, tail: float = 0.0) -> np.ndarray:
    """Rows made of blocks of neighbours, each calibrated on its own, weighted, summed to 1.

    Parameters
    ----------
    dist : ndarray (n, m), float64
        Block b of a row is columns ``starts[b]:starts[b + 1]``, its finite distances
        first (the rest are empty slots, given 0).
    starts : ndarray of int64 (B + 1,)
    perplexity : float
        For a block of w filled slots: :func:`block_perplexity` ``(perplexity, w, k)``.
    k : int
        The neighbours a full-perplexity block holds.
    weights : ndarray (n, B), float64
        Each block's share of its row, before the row is normalised (a row with an empty
        block gives its share to the others).
    out : ndarray (n, m), float64
        May be ``dist`` (calibrated in place).
    tail : float, optional
        Each block's smallest entries holding at most this share of its mass are dropped
        before weighting (:func:`trim_tail`); 0 keeps every entry.
    """
    # writable and C-ordered as calibrate's stand-in is, or numba compiles the kernel
    # again for a read-only view (np.broadcast_to gives one)
    weights = np.require(weights, np.float64, ["C", "W"])
    _calibrate_kernel.run(dist, float(perplexity), CALIBRATE_TOL, CALIBRATE_MAX_ITER, starts,
                          k, weights, float(tail), out, items=len(dist), work=dist.size)
    return out

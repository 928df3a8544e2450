"""Points in Morton (Z) order for the Barnes-Hut tree: their bounding box, their keys on
a 2^L grid over it, a radix sort of the keys, and the moves into that order and back."""

from __future__ import annotations

import numba
import numpy as np

from ..._parallel import threaded

__all__ = ["bounding_box", "key_order", "morton_keys", "sort_points", "unsort"]

# Points from which these passes run in parts on ctsne's threads (ctsne._parallel.Threaded:
# one serial build each, where a prange kernel also compiled numba's parallel build,
# ~1.2 CPU-s more apiece in a new environment): each costs ~10 ns a point, so they pay
# from far more points than the traversal.
PARALLEL_FROM = 50_000
# Runs of the bounding-box pass: tasks for a few threads. Minima and maxima do not depend
# on how the points are split, so the box is the same for any number of runs.
BOX_RUNS = 8
# Key bits per pass of the radix sort: 2^11 counters (16 kB) stay in the first-level cache.
RADIX_BITS = 11


@threaded(PARALLEL_FROM)
def _box_runs(Y, lo, hi, bad, start, stop):
    # runs start … stop − 1 of BOX_RUNS: each run's minima, maxima and whether it holds a
    # value that is not finite
    n, d = Y.shape
    for c in range(start, stop):
        for k in range(d):
            lo[c, k] = np.inf
            hi[c, k] = -np.inf
        for i in range(c * n // BOX_RUNS, (c + 1) * n // BOX_RUNS):
            for k in range(d):
                v = Y[i, k]
                if not np.isfinite(v):
                    bad[c] = True
                lo[c, k] = min(lo[c, k], v)
                hi[c, k] = max(hi[c, k], v)


def bounding_box(Y: np.ndarray, work: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-axis minimum and maximum; NaN if any value is not finite."""
    d = Y.shape[1]
    lo, hi = np.empty((BOX_RUNS, d)), np.empty((BOX_RUNS, d))
    bad = np.zeros(BOX_RUNS, dtype=np.bool_)
    _box_runs.run(Y, lo, hi, bad, items=BOX_RUNS, work=work)
    out_lo, out_hi = lo.min(axis=0), hi.max(axis=0)  # an (8, d) table: exact either way
    if bad.any():
        out_lo[:] = np.nan
    return out_lo, out_hi


@numba.njit(cache=True, inline="always")
def _spread(q, d):
    """Move bit b of ``q`` to bit b·d (d = 2: 31 bits, d = 3: 21 bits), by mask steps."""
    if d == 2:
        q = (q | (q << 16)) & 0x0000FFFF0000FFFF
        q = (q | (q << 8)) & 0x00FF00FF00FF00FF
        q = (q | (q << 4)) & 0x0F0F0F0F0F0F0F0F
        q = (q | (q << 2)) & 0x3333333333333333
        q = (q | (q << 1)) & 0x5555555555555555
    elif d == 3:
        q = (q | (q << 32)) & 0x001F00000000FFFF
        q = (q | (q << 16)) & 0x001F0000FF0000FF
        q = (q | (q << 8)) & 0x100F00F00F00F00F
        q = (q | (q << 4)) & 0x10C30C30C30C30C3
        q = (q | (q << 2)) & 0x1249249249249249
    return q


@threaded(PARALLEL_FROM)
def _keys(Y, origin, scale, levels, keys, start, stop):
    # points start … stop − 1
    d = Y.shape[1]
    top = (1 << levels) - 1
    for i in range(start, stop):
        key = 0
        for k in range(d):
            q = int((Y[i, k] - origin[k]) * scale)
            key |= _spread(min(max(q, 0), top), d) << k
        keys[i] = key


def morton_keys(Y: np.ndarray, origin: np.ndarray, scale: float, levels: int,
                work: float) -> np.ndarray:
    """Each point's cell on the 2^levels grid from ``origin`` (``scale`` cells a unit),
    its coordinates' bits interleaved."""
    keys = np.zeros(len(Y), dtype=np.int64)
    _keys.run(Y, origin, scale, levels, keys, items=len(Y), work=work)
    return keys


@numba.njit(cache=True)
def key_order(keys, bits):
    """``(order, keys[order])`` for non-negative keys below ``2**bits``: a stable radix
    sort, RADIX_BITS a pass, skipping digits every key shares. At 50,000 points (2-D, 2
    threads, 2026-11-27) numpy's argsort took 2.3 ms, this 0.85 ms, and with the sorted
    keys no longer gathered a call took 12.9 ms instead of 15.4, the same forces."""
    n = keys.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int64), keys.copy()
    width = 1 << RADIX_BITS
    mask = width - 1
    src_k, dst_k = keys.copy(), np.empty(n, dtype=np.int64)
    src_o, dst_o = np.arange(n), np.empty(n, dtype=np.int64)
    start = np.empty(width, dtype=np.int64)
    shift = 0
    while shift < bits:
        start[:] = 0
        for i in range(n):
            start[(src_k[i] >> shift) & mask] += 1
        if start[(src_k[0] >> shift) & mask] < n:
            total = 0
            for b in range(width):
                c = start[b]
                start[b] = total
                total += c
            for i in range(n):
                b = (src_k[i] >> shift) & mask
                at = start[b]
                start[b] = at + 1
                dst_k[at] = src_k[i]
                dst_o[at] = src_o[i]
            src_k, dst_k = dst_k, src_k
            src_o, dst_o = dst_o, src_o
        shift += RADIX_BITS
    return src_o, src_k


@threaded(PARALLEL_FROM)
def _sorted_rows(Y, order, Y3, start, stop):
    for i in range(start, stop):
        j = order[i]
        for k in range(Y.shape[1]):
            Y3[i, k] = Y[j, k]


def sort_points(Y: np.ndarray, order: np.ndarray, work: float) -> np.ndarray:
    """The points in key order, padded to three columns."""
    Y3 = np.zeros((len(Y), 3))
    _sorted_rows.run(Y, order, Y3, items=len(order), work=work)
    return Y3


@threaded(PARALLEL_FROM)
def _unsorted_rows(F3, order, F, start, stop):
    for i in range(start, stop):
        for k in range(F.shape[1]):
            F[order[i], k] = F3[i, k]


def unsort(F3: np.ndarray, order: np.ndarray, d: int, work: float) -> np.ndarray:
    """The first d columns of rows in key order, back in the points' order."""
    F = np.empty((F3.shape[0], d))
    _unsorted_rows.run(F3, order, F, items=len(order), work=work)
    return F

"""Points in Morton (Z) order for the Barnes-Hut tree: their bounding box, their keys on
a 2^L grid over it, a radix sort of the keys, and the moves into that order and back."""

from __future__ import annotations

import numba
import numpy as np

from ..._parallel import kernel
from ...tuning import ZORDER_PARALLEL_FROM

__all__ = ["bounding_box", "key_order", "morton_keys", "sort_points", "unsort"]

# These passes run on the thread pool from ZORDER_PARALLEL_FROM points (ctsne.tuning). The
# two sizes below are read inside the kernels (numba compiles their values in): kept here.
# Runs of the bounding-box pass: tasks for a few threads. Minima and maxima do not depend
# on how the points are split, so the box is the same for any number of runs.
BOX_RUNS = 8
# Key bits per pass of the radix sort: 2^11 counters (16 kB) stay in the first-level cache.
RADIX_BITS = 11


@kernel(ZORDER_PARALLEL_FROM)
def bounding_box(Y):
    """Per-axis minimum and maximum; NaN if any value is not finite."""
    n, d = Y.shape
    lo = np.empty((BOX_RUNS, d))
    hi = np.empty((BOX_RUNS, d))
    bad = np.zeros(BOX_RUNS, dtype=np.bool_)
    for c in numba.prange(BOX_RUNS):
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
    out_lo = np.empty(d)
    out_hi = np.empty(d)
    for k in range(d):
        out_lo[k] = lo[:, k].min()
        out_hi[k] = hi[:, k].max()
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


@kernel(ZORDER_PARALLEL_FROM)
def morton_keys(Y, origin, scale, levels):
    """Each point's cell on the 2^levels grid from ``origin`` (``scale`` cells a unit),
    its coordinates' bits interleaved."""
    n, d = Y.shape
    top = (1 << levels) - 1
    keys = np.zeros(n, dtype=np.int64)
    for i in numba.prange(n):
        key = 0
        for k in range(d):
            q = int((Y[i, k] - origin[k]) * scale)
            key |= _spread(min(max(q, 0), top), d) << k
        keys[i] = key
    return keys


@numba.njit(cache=True)
def key_order(keys, bits):
    """``(order, keys[order])`` for non-negative keys below ``2**bits``: a stable radix
    sort, RADIX_BITS a pass, skipping digits every key shares; faster than numpy's
    argsort, and the sorted keys need no gather."""
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


@kernel(ZORDER_PARALLEL_FROM)
def sort_points(Y, order):
    """The points in key order, padded to three columns."""
    n, d = Y.shape
    Y3 = np.zeros((n, 3))
    for i in numba.prange(n):
        j = order[i]
        for k in range(d):
            Y3[i, k] = Y[j, k]
    return Y3


@kernel(ZORDER_PARALLEL_FROM)
def unsort(F3, order, d):
    """The first d columns of rows in key order, back in the points' order."""
    F = np.empty((F3.shape[0], d))
    for i in numba.prange(order.shape[0]):
        for k in range(d):
            F[order[i], k] = F3[i, k]
    return F

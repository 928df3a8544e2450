"""Exact O(m²) repulsion, for many groups at once (one parallel pass, no Python loop)."""

from __future__ import annotations

import numba
import numpy as np

from ..._parallel import kernel

__all__ = ["repulsion_exact", "repulsion_exact_groups"]


# Pairs from which a pass runs on the thread pool (about 0.1 ms of serial work).
PARALLEL_FROM_PAIRS = 40_000


@kernel(PARALLEL_FROM_PAIRS)
def _grouped_kernel(Y, lo, hi):
    n, d = Y.shape
    F = np.zeros((n, d))
    zrow = np.zeros(n)
    for i in numba.prange(n):
        z = 0.0
        for j in range(lo[i], hi[i]):
            if j == i:
                continue
            d2 = 0.0
            for k in range(d):
                diff = Y[i, k] - Y[j, k]
                d2 += diff * diff
            t = 1.0 / (1.0 + d2)
            z += t
            t2 = t * t
            for k in range(d):
                F[i, k] += t2 * (Y[i, k] - Y[j, k])
        zrow[i] = z
    return F, zrow


# The 2-D case, written so the inner loop vectorises (4-5x faster): coordinates in separate
# arrays, no branch for j = i (that term adds t = 1 to z and no force; subtracted below).
@kernel(PARALLEL_FROM_PAIRS, fastmath=True, error_model="numpy")
def _grouped_kernel_2d(x, y, lo, hi):
    n = x.shape[0]
    F = np.empty((n, 2))
    zrow = np.empty(n)
    for i in numba.prange(n):
        xi, yi = x[i], y[i]
        z = fx = fy = 0.0
        for j in range(lo[i], hi[i]):
            dx = xi - x[j]
            dy = yi - y[j]
            t = 1.0 / (1.0 + dx * dx + dy * dy)
            z += t
            t2 = t * t
            fx += t2 * dx
            fy += t2 * dy
        F[i, 0] = fx
        F[i, 1] = fy
        zrow[i] = z - 1.0
    return F, zrow


def repulsion_exact_groups(Y: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, float]:
    """Exact repulsion within consecutive groups of rows.

    Parameters
    ----------
    Y : ndarray (m, d)
        Points sorted so that each group is a contiguous block.
    starts : ndarray of int (G + 1,)
        Group g is rows ``starts[g]:starts[g + 1]``.

    Returns
    -------
    F : ndarray (m, d), forces within each point's own group
    Z : float, the sum of the groups' normalisers
    """
    sizes = np.diff(starts)
    lo = np.repeat(starts[:-1], sizes).astype(np.int64)
    hi = np.repeat(starts[1:], sizes).astype(np.int64)
    Y = np.asarray(Y, dtype=np.float64)
    pairs = float(np.dot(sizes, sizes))
    if Y.shape[1] == 2:
        F, zrow = _grouped_kernel_2d(np.ascontiguousarray(Y[:, 0]),
                                     np.ascontiguousarray(Y[:, 1]), lo, hi, work=pairs)
    else:
        F, zrow = _grouped_kernel(np.ascontiguousarray(Y), lo, hi, work=pairs)
    # summed here, not in the kernel: a fastmath kernel may reorder its own sums
    return F, float(zrow.sum())


def repulsion_exact(Y: np.ndarray) -> tuple[np.ndarray, float]:
    """Exact repulsion over all rows of ``Y``: ``(F, Z)``."""
    return repulsion_exact_groups(Y, np.array([0, len(Y)], dtype=np.int64))

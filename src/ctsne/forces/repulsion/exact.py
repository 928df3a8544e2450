"""Exact O(m²) repulsion, for many groups at once (one parallel pass, no Python loop)."""

from __future__ import annotations

import numpy as np

from ..._parallel import even_parts, threaded
from ...tuning import EXACT_PARALLEL_FROM_PAIRS

__all__ = ["repulsion_exact", "repulsion_exact_groups"]


# A pass runs on the thread pool from EXACT_PARALLEL_FROM_PAIRS pairs (ctsne.tuning).
@threaded(EXACT_PARALLEL_FROM_PAIRS)
def _grouped_kernel(Y, lo, hi, F, zrow, start, stop):
    d = Y.shape[1]
    for i in range(start, stop):
        for k in range(d):
            F[i, k] = 0.0
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


# The 2-D case, written so that the inner loop vectorises without fastmath (which can
# round differently cold and warm, ctsne._parallel): four lanes of sums, added in a fixed
# order at the end. The term j = i adds t = 1 to z and no force; it is subtracted below
# rather than branched on. Rows are independent: the same forces on any thread count.
@threaded(EXACT_PARALLEL_FROM_PAIRS, error_model="numpy")
def _grouped_kernel_2d(x, y, lo, hi, F, zrow, start, stop):
    for i in range(start, stop):
        xi, yi = x[i], y[i]
        z0 = z1 = z2 = z3 = 0.0
        a0 = a1 = a2 = a3 = 0.0
        b0 = b1 = b2 = b3 = 0.0
        j = lo[i]
        end = hi[i]
        while j + 4 <= end:
            dx0, dy0 = xi - x[j], yi - y[j]
            dx1, dy1 = xi - x[j + 1], yi - y[j + 1]
            dx2, dy2 = xi - x[j + 2], yi - y[j + 2]
            dx3, dy3 = xi - x[j + 3], yi - y[j + 3]
            t0 = 1.0 / (1.0 + dx0 * dx0 + dy0 * dy0)
            t1 = 1.0 / (1.0 + dx1 * dx1 + dy1 * dy1)
            t2 = 1.0 / (1.0 + dx2 * dx2 + dy2 * dy2)
            t3 = 1.0 / (1.0 + dx3 * dx3 + dy3 * dy3)
            z0 += t0
            z1 += t1
            z2 += t2
            z3 += t3
            a0 += t0 * t0 * dx0
            a1 += t1 * t1 * dx1
            a2 += t2 * t2 * dx2
            a3 += t3 * t3 * dx3
            b0 += t0 * t0 * dy0
            b1 += t1 * t1 * dy1
            b2 += t2 * t2 * dy2
            b3 += t3 * t3 * dy3
            j += 4
        while j < end:
            dx0, dy0 = xi - x[j], yi - y[j]
            t0 = 1.0 / (1.0 + dx0 * dx0 + dy0 * dy0)
            z0 += t0
            a0 += t0 * t0 * dx0
            b0 += t0 * t0 * dy0
            j += 1
        F[i, 0] = (a0 + a1) + (a2 + a3)
        F[i, 1] = (b0 + b1) + (b2 + b3)
        zrow[i] = ((z0 + z1) + (z2 + z3)) - 1.0


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
    F = np.empty(Y.shape)
    zrow = np.empty(len(Y))
    kern = _grouped_kernel_2d if Y.shape[1] == 2 else _grouped_kernel
    # each row's work is its group's size: parts of equal numbers of pairs
    bounds = even_parts(hi - lo, kern.threads(float(np.dot(sizes, sizes))))
    if Y.shape[1] == 2:
        kern(np.ascontiguousarray(Y[:, 0]), np.ascontiguousarray(Y[:, 1]), lo, hi, F, zrow,
             bounds=bounds)
    else:
        kern(np.ascontiguousarray(Y), lo, hi, F, zrow, bounds=bounds)
    # summed here in numpy's order, the same on any thread count
    return F, float(zrow.sum())


def repulsion_exact(Y: np.ndarray) -> tuple[np.ndarray, float]:
    """Exact repulsion over all rows of ``Y``: ``(F, Z)``."""
    return repulsion_exact_groups(Y, np.array([0, len(Y)], dtype=np.int64))

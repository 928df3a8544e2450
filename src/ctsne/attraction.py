"""Attractive forces over the non-zeros of a symmetric sparse P, parallel over points."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["attraction"]


@numba.njit(parallel=True, cache=True)
def _attraction_kernel(indptr, indices, data, Y, want_log):
    n, d = Y.shape
    F = np.zeros((n, d))
    plogt = np.zeros(n)
    for i in numba.prange(n):
        acc = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            d2 = 0.0
            for k in range(d):
                diff = Y[i, k] - Y[j, k]
                d2 += diff * diff
            t = 1.0 / (1.0 + d2)
            pt = data[e] * t
            for k in range(d):
                F[i, k] += pt * (Y[i, k] - Y[j, k])
            if want_log:
                acc -= data[e] * np.log1p(d2)
        plogt[i] = acc
    return F, plogt.sum()


def attraction(P: sp.csr_matrix, Y: np.ndarray, want_log: bool = False) -> tuple[np.ndarray, float]:
    """``F_i = Σ_j p_ij t_ij (y_i − y_j)`` and, if asked, ``Σ_ij p_ij log t_ij``.

    ``P`` must be symmetric CSR (row i lists all of i's partners).
    """
    return _attraction_kernel(P.indptr, P.indices, P.data, Y, want_log)

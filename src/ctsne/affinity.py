"""Input affinities P: perplexity calibration on k nearest neighbours, symmetrised."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .neighbors import nearest_neighbors

__all__ = ["calibrate", "joint_affinities", "n_neighbors_for"]


def n_neighbors_for(perplexity: float, n: int) -> int:
    """k = min(n − 1, ⌊3·perplexity⌋): enough neighbours for the Gaussian's mass."""
    return int(min(n - 1, max(1, np.floor(3 * perplexity))))


@numba.njit(parallel=True, cache=True)
def _calibrate_kernel(d2, perplexity, tol, max_iter):
    n, k = d2.shape
    target = np.log(perplexity)
    P = np.zeros((n, k))
    for i in numba.prange(n):
        # distances relative to the nearest neighbour keep exp() in range; this only
        # rescales the row, which the normalisation removes
        dmin = d2[i, 0]
        for j in range(k):
            dmin = min(dmin, d2[i, j])
        lo, hi, beta = 0.0, np.inf, 1.0
        for _ in range(max_iter):
            s = 0.0
            sd = 0.0
            for j in range(k):
                e = np.exp(-(d2[i, j] - dmin) * beta)
                P[i, j] = e
                s += e
                sd += e * (d2[i, j] - dmin)
            entropy = np.log(s) + beta * sd / s
            diff = entropy - target
            if abs(diff) < tol:
                break
            if diff > 0:  # too flat: sharpen
                lo = beta
                beta = beta * 2.0 if hi == np.inf else 0.5 * (beta + hi)
            else:
                hi = beta
                beta = 0.5 * (beta + lo)
        for j in range(k):
            P[i, j] /= s
    return P


def calibrate(distances: np.ndarray, perplexity: float, tol: float = 1e-8,
              max_iter: int = 200) -> np.ndarray:
    """Row-stochastic conditional probabilities ``p_{j|i}`` with the given perplexity.

    ``distances`` are (n, k) distances to the k nearest neighbours; the Gaussian acts on
    their squares. Each row's precision is found by bisection on the entropy.
    """
    d2 = np.ascontiguousarray(distances, dtype=np.float64) ** 2
    return _calibrate_kernel(d2, float(perplexity), tol, max_iter)


def joint_affinities(
    X: np.ndarray,
    perplexity: float,
    neighbors: str = "auto",
    metric: str = "euclidean",
    random_state: int | None = None,
    n_jobs: int | None = None,
    progress=None,
) -> sp.csr_matrix:
    """Symmetric sparse P summing to 1: ``(P_cond + P_condᵀ) / 2n``.

    Parameters
    ----------
    X : ndarray (n, p)
    perplexity : float
        Must be below ``k = min(n − 1, 3·perplexity)``; checked by the caller.
    neighbors, metric, random_state, n_jobs, progress
        Passed to :func:`ctsne.neighbors.nearest_neighbors`.
    """
    n = X.shape[0]
    k = n_neighbors_for(perplexity, n)
    idx, dist = nearest_neighbors(X, k, method=neighbors, metric=metric,
                                  random_state=random_state, n_jobs=n_jobs, progress=progress)
    cond = calibrate(dist, perplexity)
    rows = np.repeat(np.arange(n), k)
    P = sp.csr_matrix((cond.ravel(), (rows, idx.ravel())), shape=(n, n))
    P = (P + P.T) / (2.0 * n)
    P = sp.csr_matrix(P)
    P.eliminate_zeros()
    P.sort_indices()
    return P

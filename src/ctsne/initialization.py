"""Initial embeddings: PCA (default), random, or a user array."""

from __future__ import annotations

import numpy as np

__all__ = ["initial_embedding"]

# t-SNE starts from a tight layout so early exaggeration can form clusters freely.
INIT_STD = 1e-4


def initial_embedding(X: np.ndarray, n_components: int, init, random_state=None) -> np.ndarray:
    """Starting point of the optimisation.

    Parameters
    ----------
    X : ndarray (n, p)
    n_components : int
    init : {"pca", "random"} or ndarray (n, n_components)
        "pca": the leading principal components, scaled so the first has standard
        deviation 1e-4 (signs fixed, so deterministic); "random": N(0, 1e-4²); an array is
        used as given (copied).
    random_state : int, Generator or None
    """
    n = X.shape[0]
    rng = np.random.default_rng(random_state)
    if isinstance(init, str):
        if init == "random":
            return rng.normal(scale=INIT_STD, size=(n, n_components))
        if init != "pca":
            raise ValueError(f"init must be 'pca', 'random' or an array, got {init!r}")
        mean = X.mean(axis=0)
        n_pc = min(n_components, X.shape[1], n)
        # principal axes from the p×p covariance: no centred copy of a large X
        cov = (X.T @ X) / n - np.outer(mean, mean)
        _, vecs = np.linalg.eigh(cov)
        vt = vecs[:, ::-1][:, :n_pc].T
        signs = np.sign(vt[np.arange(n_pc), np.argmax(np.abs(vt), axis=1)])
        signs[signs == 0] = 1.0
        vt = vt * signs[:, None]
        Y = X @ vt.T - mean @ vt.T
        if n_pc < n_components:  # fewer features than output dimensions
            Y = np.hstack([Y, rng.normal(scale=INIT_STD, size=(n, n_components - n_pc))])
        std = Y[:, 0].std()
        if std == 0:
            return rng.normal(scale=INIT_STD, size=(n, n_components))
        return Y / std * INIT_STD
    Y = np.array(init, dtype=np.float64, copy=True)
    if Y.shape != (n, n_components):
        raise ValueError(
            f"init array has shape {Y.shape}; it must be (n_samples, n_components) = "
            f"({n}, {n_components})"
        )
    if not np.all(np.isfinite(Y)):
        raise ValueError("init array contains NaN or infinite values")
    return Y

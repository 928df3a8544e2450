"""Initial embeddings: PCA (default), random, or a user array."""

from __future__ import annotations

import numpy as np

from ..checks import to_safe_scale

__all__ = ["initial_embedding"]

# t-SNE starts from a tight layout so early exaggeration can form clusters freely.
INIT_STD = 1e-4
# Largest |coordinate| of a given start. t-SNE maps span up to ~10³ units (10⁶ points);
# far beyond, the engines fail: the FFT grid, capped at fft.MAX_NODES, is too coarse for
# the unit-width kernel (relative force error ~1 from ~10³, Z off by 6× at 10⁴, then
# negative), Barnes-Hut's float32 offsets overflow when squared (Z NaN from ~10¹²), and the
# exact kernel's sum rounds to Z = 0 (the gradient NaN). A fitted map passes; a start on
# another scale is to be scaled down.
MAX_INIT_COORD = 1e4


def _principal_axes(X: np.ndarray, n_pc: int, classes: np.ndarray | None):
    """Leading axes of X's scatter about its mean, or about the class means given ``classes``.

    Returns ``(axes (n_pc, p), means (C, p), variances (n_pc,))`` with ``C = 1`` without
    classes. Works from p×p matrices, without a centred copy of X.
    """
    n = X.shape[0]
    if classes is None:
        counts = np.array([float(n)])
        means = X.mean(axis=0)[None, :]
    else:
        counts = np.bincount(classes).astype(np.float64)
        sums = np.zeros((len(counts), X.shape[1]))
        np.add.at(sums, classes, X)
        means = sums / np.maximum(counts, 1.0)[:, None]
    # Σ_i (x_i − μ_c(i))(x_i − μ_c(i))ᵀ = XᵀX − Σ_c n_c μ_c μ_cᵀ
    scatter = X.T @ X - (means * counts[:, None]).T @ means
    vals, vecs = np.linalg.eigh(scatter / n)
    axes = vecs[:, ::-1][:, :n_pc].T
    # fix each axis's sign by its largest entry, so the result is deterministic
    signs = np.sign(axes[np.arange(n_pc), np.argmax(np.abs(axes), axis=1)])
    signs[signs == 0] = 1.0
    return axes * signs[:, None], means, vals[::-1][:n_pc]


def initial_embedding(X: np.ndarray, n_components: int, init, random_state=None,
                      classes: np.ndarray | None = None) -> np.ndarray:
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
    classes : ndarray of int (n,), optional
        Prior class codes. With "pca", the components are those of X with each class's
        mean subtracted: the start then does not already show the structure ct-SNE is
        asked to factor out, which otherwise the optimiser must undo (and, measured on the
        paper's synthetic data, sometimes does not: ``tests/test_estimator.py``). If the
        classes explain all the variance, the plain PCA is used.
    """
    n = X.shape[0]
    rng = np.random.default_rng(random_state)
    if isinstance(init, str):
        if init == "random":
            return rng.normal(scale=INIT_STD, size=(n, n_components))
        if init != "pca":
            raise ValueError(f"init must be 'pca', 'random' or an array, got {init!r}")
        n_pc = min(n_components, X.shape[1], n)
        X = to_safe_scale(X)  # XᵀX of |X| ~ 1e300 would overflow; the result is rescaled
        axes, means, variances = _principal_axes(X, n_pc, classes)
        if classes is not None and variances[0] <= 1e-12 * np.var(X, axis=0).sum():
            classes = None  # the classes explain everything: nothing is left to show
            axes, means, variances = _principal_axes(X, n_pc, None)
        # project the (few) means, not an (n, p) array of each point's class mean
        centres = means @ axes.T
        Y = X @ axes.T - (centres[0] if classes is None else centres[classes])
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
    top = float(np.abs(Y).max()) if Y.size else 0.0
    if top > MAX_INIT_COORD:
        raise ValueError(
            f"init array reaches |coordinate| {top:.3g}, beyond the {MAX_INIT_COORD:g} "
            "units a t-SNE map can have; scale it down (t-SNE's own starts have standard "
            f"deviation {INIT_STD:g}, a fitted map spans up to ~1000 units)")
    if n > 1 and not np.any(Y.max(axis=0) > Y.min(axis=0)):
        # every force between coinciding points is 0: nothing would ever move them apart
        raise ValueError("init array puts every point at the same place; give distinct "
                         "starting positions (or init='pca' or 'random')")
    return Y

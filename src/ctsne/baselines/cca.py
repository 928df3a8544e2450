"""CCA baseline: remove the label-correlated directions of the data, then run t-SNE.

Canonical correlation analysis between the data ``X`` (n, d) and the one-hot label
indicators ``F`` (n, L) finds directions ``a_k`` in data space, orthonormal in the data
covariance (``aᵀ C_xx a = I``), whose projections ``X a_k`` have correlations
``ρ_1 ≥ ρ_2 ≥ …`` with the best linear combination of the indicators. At most
``rank(F) = L − 1`` of them are non-zero. The paper (App. C) uses two variants:

``variant="null"``
    Remove the top ``m = min(d − 2, L − 1)`` directions: ``X ↦ X_c (I − A_m A_mᵀ C_xx)``,
    the oblique projection onto the null space ``{x : A_mᵀ x = 0}`` along ``C_xx A_m``.
    It subtracts from every column its regression on the top canonical variates, so the
    result keeps the data's units and at least 2 dimensions, and is uncorrelated with
    the labels whenever ``L − 1 ≤ d − 2`` (all correlated directions fit in ``m``).
``variant="least"``
    Keep only the canonical variates of the ``n_components`` least correlated
    directions (unit variance each).

Both fail in the way the paper shows: labels with more values than ``d − 2`` cannot be
removed fully, and structure lying along a removed direction goes with it.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la

__all__ = ["CCAProjection", "cca_tsne", "label_indicators"]


def label_indicators(labels) -> np.ndarray:
    """One-hot indicators (n, Σ L_m) of one label column (n,) or several (n, m)."""
    labels = np.asarray(labels)
    if labels.ndim == 1:
        labels = labels[:, None]
    if labels.ndim != 2:
        raise ValueError(f"labels must be (n,) or (n, m), got shape {labels.shape}")
    blocks = []
    for col in labels.T:
        _, codes = np.unique(col, return_inverse=True)
        codes = codes.ravel()
        F = np.zeros((len(col), int(codes.max()) + 1))
        F[np.arange(len(col)), codes] = 1.0
        blocks.append(F)
    return np.hstack(blocks)


def _inv_sqrt(C: np.ndarray, rel_tol: float) -> np.ndarray:
    """``V_r diag(λ_r^{-1/2})`` over the eigenvalues above ``rel_tol · λ_max``.

    Dropping null directions matters for the indicators: centred one-hot columns always
    sum to zero, so their covariance is singular.
    """
    lam, V = la.eigh(C)
    keep = lam > rel_tol * max(lam.max(), np.finfo(float).tiny)
    return V[:, keep] / np.sqrt(lam[keep])


class CCAProjection:
    """Remove label information from data by CCA (paper App. C), as a transformer.

    Parameters
    ----------
    variant : {"null", "least"}
        ``"null"``: project out the top canonical directions (data keeps ``d`` columns
        of rank ``d − n_removed``). ``"least"``: keep the ``n_components`` canonical
        variates least correlated with the labels.
    n_components : int
        Dimensions kept at least (``"null"``) or exactly (``"least"``); default 2.
    n_removed : int, optional
        Directions removed by ``"null"``; default ``min(d − n_components, L − 1)``.
    reg : float
        Ridge added to the data covariance, relative to its mean eigenvalue, so that
        constant or collinear columns do not break the whitening.

    Attributes
    ----------
    mean_ : ndarray (d,)
    directions_ : ndarray (d, d)
        Canonical directions ``a_k`` as columns, most correlated first.
    correlations_ : ndarray (d,)
        Canonical correlation of each direction (zeros past the label rank).
    n_removed_ : int
        Directions removed by the ``"null"`` variant.
    """

    def __init__(self, variant: str = "null", n_components: int = 2,
                 n_removed: int | None = None, reg: float = 1e-10) -> None:
        self.variant = variant
        self.n_components = n_components
        self.n_removed = n_removed
        self.reg = reg

    def fit(self, X: np.ndarray, labels) -> CCAProjection:
        """Find the canonical directions between ``X`` and the label indicators."""
        if self.variant not in ("null", "least"):
            raise ValueError(f"variant must be 'null' or 'least', got {self.variant!r}")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
        n, d = X.shape
        if not 1 <= self.n_components <= d:
            raise ValueError(f"n_components must lie in [1, d] = [1, {d}]")
        F = label_indicators(labels)
        if len(F) != n:
            raise ValueError(f"labels has {len(F)} rows but X has {n}")

        self.mean_ = X.mean(axis=0)
        Xc = X - self.mean_
        Fc = F - F.mean(axis=0)
        Cxx = Xc.T @ Xc / n
        Cxx += self.reg * np.trace(Cxx) / d * np.eye(d)
        Wx = _inv_sqrt(Cxx, 0.0)
        Wf = _inv_sqrt(Fc.T @ Fc / n, 1e-10)
        # In whitened coordinates the cross-covariance's singular values are the
        # canonical correlations; U completed to a full basis orders all d directions.
        U, s, _ = la.svd(Wx.T @ (Xc.T @ Fc / n) @ Wf, full_matrices=True)
        corr = np.zeros(d)
        corr[:len(s)] = np.clip(s, 0.0, 1.0)
        self.directions_ = Wx @ U
        self.correlations_ = corr
        self.label_rank_ = Wf.shape[1]
        self._cxx = Cxx
        m = (min(d - self.n_components, self.label_rank_) if self.n_removed is None
             else int(self.n_removed))
        if not 0 <= m <= d - 1:
            raise ValueError(f"n_removed must lie in [0, d - 1] = [0, {d - 1}], got {m}")
        self.n_removed_ = m
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Project ``X`` as chosen by ``variant`` (see the class docstring)."""
        Xc = np.asarray(X, dtype=np.float64) - self.mean_
        if self.variant == "least":
            return Xc @ self.directions_[:, -self.n_components:]
        A = self.directions_[:, :self.n_removed_]
        return Xc - (Xc @ A) @ (A.T @ self._cxx)

    def fit_transform(self, X: np.ndarray, labels) -> np.ndarray:
        """Fit, then transform ``X``."""
        return self.fit(X, labels).transform(X)


def cca_tsne(
    X: np.ndarray,
    labels,
    variant: str = "null",
    n_removed: int | None = None,
    random_state: int | None = None,
    **tsne_params,
) -> tuple[np.ndarray, CCAProjection]:
    """CCA removal followed by plain t-SNE (the paper's CCA + t-SNE baseline).

    Parameters
    ----------
    X : ndarray (n, d)
    labels : array-like (n,) or (n, m)
        The known labels to remove.
    variant : {"null", "least"}
        See :class:`CCAProjection`.
    n_removed : int, optional
        Directions removed by ``"null"``.
    random_state : int, optional
        Seed for t-SNE.
    **tsne_params
        Passed to :class:`ctsne.ConditionalTSNE` (run without a prior).

    Returns
    -------
    Y : ndarray (n, 2)
        The t-SNE embedding of the projected data.
    projection : CCAProjection
        The fitted projection.
    """
    from ..estimator.tsne import ConditionalTSNE

    proj = CCAProjection(variant=variant, n_removed=n_removed)
    Z = proj.fit_transform(X, labels)
    Y = ConditionalTSNE(random_state=random_state, **tsne_params).fit_transform(Z, None)
    return Y, proj

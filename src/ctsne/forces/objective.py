"""The ct-SNE objective KL(P‖R) and its gradient, exact, in row blocks (plain numpy).

This is the reference every engine is tested against, written directly from the pair
weights ``w_ij`` (no per-class decomposition), so the fast code paths are checked
against an independent computation.

    r_ij = w_ij t_ij / S,   t_ij = 1 / (1 + |y_i − y_j|²),   S = Σ_{k≠l} w_kl t_kl
    KL(P‖R) = Σ p log p − Σ p log(w t) + log S
    ∂KL/∂y_i = 4 Σ_j (p_ij − r_ij) t_ij (y_i − y_j)

``KL(P‖R) = KL(P‖Q) + prior_term`` with ``prior_term = log(S/Z) − Σ p log w`` and
``Z = Σ_{k≠l} t_kl`` (paper Eq. 5; the prior term is the only one that depends on it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..prior import DEFAULT_BETA, Prior, make_prior

__all__ = ["ObjectiveTerms", "exact_objective", "exact_objective_terms"]


@dataclass(frozen=True)
class ObjectiveTerms:
    """KL(P‖R), its gradient and its parts.

    Attributes
    ----------
    kl : float
        KL(P‖R), the ct-SNE objective.
    grad : ndarray (n, d)
        ∂KL/∂Y with the paper's scaling (factor 4).
    kl_tsne : float
        KL(P‖Q), the plain t-SNE objective of the same embedding.
    prior_term : float
        ``kl − kl_tsne``: ``log(S/Z) − Σ p log w``.
    S, Z : float
        The ct-SNE and t-SNE normalisers.
    """

    kl: float
    grad: np.ndarray
    kl_tsne: float
    prior_term: float
    S: float
    Z: float


def _as_prior(prior, n, beta, alpha, combine) -> Prior | None:
    if prior is None or isinstance(prior, Prior):
        return prior
    return make_prior(prior, n, beta=beta, alpha=alpha, combine=combine)


def _check_P(P, n: int):
    if P.shape != (n, n):
        raise ValueError(f"P must have shape (n, n) = ({n}, {n}) to match Y, got {P.shape}")
    if sp.issparse(P):
        P = sp.csr_matrix(P, dtype=np.float64)
        data = P.data
        diag = P.diagonal()
    else:
        P = np.asarray(P, dtype=np.float64)
        data = P
        diag = np.diag(P)
    if not np.all(np.isfinite(data)) or np.any(data < 0):
        raise ValueError("P must be finite and non-negative")
    total = float(data.sum())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"P must sum to 1 over all pairs, it sums to {total:.6g}; divide by it")
    if np.any(diag != 0):
        raise ValueError("P must have a zero diagonal (a point is not its own neighbour)")
    return P


def exact_objective_terms(
    P,
    Y: np.ndarray,
    prior=None,
    beta: float | None = DEFAULT_BETA,
    alpha: float | None = None,
    combine: str = "joint",
    block_size: int | None = None,
) -> ObjectiveTerms:
    """KL(P‖R), its gradient and the t-SNE / prior split, in O(n·block) memory.

    Parameters
    ----------
    P : ndarray or sparse matrix (n, n)
        Input affinities: non-negative, zero diagonal, summing to 1. A non-symmetric P is
        allowed; the gradient then uses (P + Pᵀ)/2, which is exact since R is symmetric.
    Y : ndarray (n, d)
        Embedding, any number of dimensions.
    prior : labels (n,) or (n, m), a :class:`~ctsne.prior.Prior`, or None (plain t-SNE)
    beta, alpha, combine
        As in :func:`ctsne.prior.make_prior`; ignored when ``prior`` is already encoded.
    block_size : int, optional
        Rows per block; default keeps each block near 2·10⁶ pairs.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"Y must be 2-D (n, d), got shape {Y.shape}")
    n = Y.shape[0]
    P = _check_P(P, n)
    pr = _as_prior(prior, n, beta, alpha, combine)
    if block_size is None:
        block_size = max(1, min(n, 2_000_000 // max(n, 1)))

    sparse = sp.issparse(P)
    Psym = (P + P.T) * 0.5
    if sparse:
        Psym = sp.csr_matrix(Psym)

    grad_attr = np.zeros_like(Y)
    grad_rep = np.zeros_like(Y)
    S = Z = 0.0
    p_log_t = p_log_w = p_log_p = 0.0
    for start in range(0, n, block_size):
        stop = min(n, start + block_size)
        rows = np.arange(start, stop)
        Yb = Y[start:stop]
        d2 = np.sum((Yb[:, None, :] - Y[None, :, :]) ** 2, axis=2)
        t = 1.0 / (1.0 + d2)
        t[np.arange(len(rows)), rows] = 0.0
        w = pr.pair_weights(rows) if pr is not None else np.ones_like(t)
        wt = w * t
        S += wt.sum()
        Z += t.sum()
        k_rep = wt * t
        grad_rep[start:stop] = Yb * k_rep.sum(axis=1)[:, None] - k_rep @ Y

        Pb = Psym[start:stop]
        if sparse:
            Pb = Pb.toarray()
        k_attr = Pb * t
        grad_attr[start:stop] = Yb * k_attr.sum(axis=1)[:, None] - k_attr @ Y

        Praw = P[start:stop]
        if sparse:
            Praw = Praw.tocoo()
            i, j, p = Praw.row, Praw.col, Praw.data
        else:
            i, j = np.nonzero(Praw)
            p = Praw[i, j]
        keep = p > 0
        i, j, p = i[keep], j[keep], p[keep]
        p_log_p += float(np.sum(p * np.log(p)))
        p_log_t += float(np.sum(p * np.log(t[i, j])))
        p_log_w += float(np.sum(p * np.log(w[i, j])))

    grad = 4.0 * (grad_attr - grad_rep / S)
    kl = p_log_p - p_log_w - p_log_t + np.log(S)
    kl_tsne = p_log_p - p_log_t + np.log(Z)
    return ObjectiveTerms(
        kl=float(kl),
        grad=grad,
        kl_tsne=float(kl_tsne),
        prior_term=float(kl - kl_tsne),
        S=float(S),
        Z=float(Z),
    )


def exact_objective(
    P,
    Y: np.ndarray,
    prior=None,
    beta: float | None = DEFAULT_BETA,
    alpha: float | None = None,
    combine: str = "joint",
    block_size: int | None = None,
) -> tuple[float, np.ndarray]:
    """KL(P‖R) and ∂KL/∂Y (paper scaling, factor 4), exact and O(n²).

    Parameters are those of :func:`exact_objective_terms`, which also returns the split
    into the t-SNE term and the prior term.
    """
    res = exact_objective_terms(P, Y, prior, beta=beta, alpha=alpha, combine=combine,
                                block_size=block_size)
    return res.kl, res.grad

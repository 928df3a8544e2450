"""UMAP's starts: the spectral layout of the input graph, or PCA, scaled to ±10.

The spectral start is the Laplacian eigenmap of the fuzzy graph: the eigenvectors of the
normalised Laplacian ``L = I − D^{−1/2} W D^{−1/2}`` with the smallest eigenvalues, less
the trivial one (∝ √degree). UMAP's stochastic gradient descent moves points by steps of
order 1, so both starts are scaled to a largest coordinate of 10, as umap-learn's are, and
a little N(0, (10⁻⁴)²) jitter separates points the layout put on top of each other.

A disconnected graph has one trivial eigenvector per component, and the solver's
answer then mixes them arbitrarily. Here each connected component gets its own spectral
layout, and the components are placed apart: on ±unit vectors while there are at most
``2·n_components`` of them (umap-learn's rule), otherwise on a regular lattice; each
inside a ball of :data:`COMPONENT_RADIUS` times the spacing between centres, so points of
different components start apart. Their relative positions carry no meaning (the graph
says nothing about them). umap-learn places many components by a spectral layout of their
centroids in the data; that needs X, which a graph-only start does not have, and the
forces, not the start, decide how far apart unconnected parts end up.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse import linalg as splinalg

from ..tuning import SPECTRAL_DENSE_BELOW as DENSE_BELOW
from .initialization import initial_embedding

__all__ = ["COMPONENT_RADIUS", "DENSE_BELOW", "INIT_JITTER", "INIT_MAX_COORD", "SPECTRAL_NCV_MAX",
           "SPECTRAL_TOL", "pca_init", "spectral_init", "spectral_layout"]

# The starts' largest |coordinate| and the jitter's standard deviation (umap-learn's).
INIT_MAX_COORD = 10.0
INIT_JITTER = 1e-4
# ARPACK: relative tolerance on the eigenvalues (umap-learn's: a start needs no more, and
# 1e-6 took 3× as long on 50 000 uniform points in a cube, 24 s instead of 8.5 s), and the
# cap on Lanczos vectors (umap-learn takes √n of them, 8 GB for a million points; 32 or 128
# instead of 64 changed the time by 10%).
SPECTRAL_TOL = 1e-4
SPECTRAL_NCV_MAX = 64
# Each component's points lie within this share of the distance between neighbouring
# centres from their centre: at least (1 − 2·0.4) = 20% of it separates two components.
COMPONENT_RADIUS = 0.4


def _check_graph(graph) -> sp.csr_matrix:
    if not sp.issparse(graph):
        raise ValueError("graph must be a scipy.sparse matrix")
    W = sp.csr_matrix(graph, dtype=np.float64)
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"graph must be square, got shape {W.shape}")
    if W.nnz and (not np.all(np.isfinite(W.data)) or W.data.min() < 0):
        raise ValueError("graph weights must be finite and non-negative")
    asym = abs(W - W.T)
    if asym.nnz and asym.max() > 1e-10 * abs(W).max():
        raise ValueError("graph must be symmetric (UMAP's fuzzy_graph is)")
    return W


def _fix_signs(V: np.ndarray) -> np.ndarray:
    """Each column's sign chosen so its largest |entry| is positive: solvers return either."""
    if V.size == 0:
        return V
    rows = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[rows, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


def _component_eigenmap(W: sp.csr_matrix, dim: int, rng: np.random.Generator) -> np.ndarray:
    """The ``dim`` leading non-trivial eigenvectors of a connected graph's normalised
    Laplacian, (m, dim); columns beyond the m − 1 a small graph has are 0."""
    m = W.shape[0]
    out = np.zeros((m, dim))
    if m == 1:
        return out
    deg = np.asarray(W.sum(axis=1)).ravel()
    inv_sqrt = 1.0 / np.sqrt(deg)  # connected, m ≥ 2: every degree is positive
    # M = D^{−1/2} W D^{−1/2}: L's smallest eigenvalues are M's largest, L = I − M
    n_vec = min(dim + 1, m)
    if m < DENSE_BELOW:
        vals, vecs = np.linalg.eigh(W.toarray() * inv_sqrt[:, None] * inv_sqrt[None, :])
        order = np.argsort(-vals)[1:n_vec]
    else:
        M = sp.diags(inv_sqrt) @ W @ sp.diags(inv_sqrt)
        ncv = min(m - 1, max(2 * n_vec + 1, min(int(np.sqrt(m)), SPECTRAL_NCV_MAX)))
        try:
            # a start vector from the seed: ARPACK's own is drawn from a hidden state
            vals, vecs = splinalg.eigsh(M, k=n_vec, which="LA", ncv=ncv, tol=SPECTRAL_TOL,
                                        v0=rng.uniform(-1.0, 1.0, m), maxiter=5 * m)
        except splinalg.ArpackNoConvergence:
            warnings.warn(
                f"the spectral start did not converge for a component of {m} points "
                "(eigenvalues too close: near-duplicate points or weak links); it starts "
                "from a random layout instead. A little noise added to X, or a PCA start, "
                "may help", RuntimeWarning, stacklevel=3)
            out[:] = rng.uniform(-1.0, 1.0, size=(m, dim))
            return out
        order = np.argsort(-vals)[1:n_vec]
    out[:, :len(order)] = _fix_signs(vecs[:, order])
    return out


def _centres(n_groups: int, dim: int) -> np.ndarray:
    """Positions for ``n_groups`` ≥ 2 components in ``dim`` dimensions, the nearest pairs
    1 apart: ±unit vectors while they suffice, else a centred lattice."""
    if n_groups <= 2 * dim:
        base = np.eye(dim)[:-(-n_groups // 2)]
        centres = np.vstack([base, -base])[:n_groups]
        # two groups sit at ±e₁ (2 apart); more include e₁ and e₂ (√2 apart)
        return centres / (2.0 if n_groups == 2 else np.sqrt(2.0))
    side = max(1, int(round(n_groups ** (1.0 / dim))))
    while side ** dim < n_groups:  # the root's rounding may fall short by one
        side += 1
    grid = np.indices((side,) * dim).reshape(dim, -1).T[:n_groups].astype(np.float64)
    return grid - grid.mean(axis=0)


def spectral_layout(graph: sp.spmatrix, n_components: int, random_state=None) -> np.ndarray:
    """The unscaled spectral layout of a symmetric graph, one component at a time.

    Parameters
    ----------
    graph : sparse matrix (n, n)
        Symmetric non-negative weights (UMAP's fuzzy graph).
    n_components : int
        Dimensions of the layout.
    random_state : int, Generator or None
        Seeds the eigensolver's start vector (and the random fallback).

    Returns
    -------
    ndarray (n, n_components)
        A connected graph: the eigenvectors of its normalised Laplacian for the
        ``n_components`` smallest eigenvalues after the trivial one (unit norm, sign fixed
        by the largest entry). A disconnected one: each component's eigenvectors, centred
        and scaled into a ball of :data:`COMPONENT_RADIUS` around its own centre
        (module docstring).
    """
    W = _check_graph(graph)
    if n_components < 1:
        raise ValueError(f"n_components must be ≥ 1, got {n_components}")
    rng = np.random.default_rng(random_state)
    n = W.shape[0]
    if n == 0:
        return np.zeros((0, n_components))
    n_groups, labels = csgraph.connected_components(W, directed=False)
    if n_groups == 1:
        return _component_eigenmap(W, n_components, rng)
    centres = _centres(n_groups, n_components)
    Y = np.zeros((n, n_components))
    # one permutation puts each component in a contiguous diagonal block: slicing blocks
    # then costs their own size, not n for each of possibly many components
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_groups + 1))
    P = W[order][:, order].tocsr()
    for c in range(n_groups):
        members = order[bounds[c]:bounds[c + 1]]
        if members.size == 1:  # an isolated point sits at its centre
            Y[members] = centres[c]
            continue
        sub = P[bounds[c]:bounds[c + 1], bounds[c]:bounds[c + 1]]
        Yc = _component_eigenmap(sub, n_components, rng)
        Yc -= Yc.mean(axis=0)
        radius = np.sqrt((Yc ** 2).sum(axis=1)).max()
        if radius > 0:
            Yc *= COMPONENT_RADIUS / radius
        Y[members] = Yc + centres[c]
    return Y


def _scaled(Y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Y scaled to a largest |coordinate| of :data:`INIT_MAX_COORD`, plus the jitter."""
    top = np.abs(Y).max() if Y.size else 0.0
    if top > 0:
        Y = Y * (INIT_MAX_COORD / top)
    return Y + rng.normal(scale=INIT_JITTER, size=Y.shape)


def spectral_init(graph: sp.csr_matrix, n_components: int, random_state=None) -> np.ndarray:
    """UMAP's spectral start: :func:`spectral_layout`, scaled to ±10, with a tiny jitter.

    Parameters
    ----------
    graph : sparse matrix (n, n)
        Symmetric non-negative weights (:func:`ctsne.affinities.fuzzy.fuzzy_graph`).
    n_components : int
    random_state : int, Generator or None
        The same int gives the same start.

    Returns
    -------
    ndarray (n, n_components), float64
        Largest |coordinate| 10 (before the N(0, (10⁻⁴)²) jitter).
    """
    rng = np.random.default_rng(random_state)
    return _scaled(spectral_layout(graph, n_components, rng), rng)


def pca_init(X: np.ndarray, n_components: int, random_state=None,
             classes: np.ndarray | None = None) -> np.ndarray:
    """UMAP's PCA start: the leading principal components, scaled to ±10, with a jitter.

    Parameters
    ----------
    X : ndarray (n, p)
    n_components : int
    random_state : int, Generator or None
    classes : ndarray of int (n,), optional
        Prior class codes: the components are then those of X less each class's mean,
        as :func:`ctsne.optimization.initialization.initial_embedding` computes them
        (signs fixed, so deterministic; random columns where p < n_components).

    Returns
    -------
    ndarray (n, n_components), float64
    """
    rng = np.random.default_rng(random_state)
    Y = initial_embedding(np.asarray(X, dtype=np.float64), n_components, "pca", rng,
                          classes=classes)
    return _scaled(Y, rng)

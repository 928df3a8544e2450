"""Affinities from neighbours found elsewhere: a (indices, distances) pair or a kNN graph.

``ConditionalTSNE.fit(X, prior, knn=(indices, distances))`` builds P from these instead of
searching the neighbours of ``X`` itself; :func:`knn_from_graph` turns a sparse distance
graph (such as scanpy's ``adata.obsp["distances"]``) into that pair.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .calibration import calibrate
from .symmetry import symmetrize

__all__ = ["check_knn", "effective_perplexity", "knn_affinities", "knn_from_graph"]


def check_knn(knn, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(indices, distances)``, each (n, k), self excluded; returns copies.

    Raises ValueError naming the problem before any work.
    """
    if not (isinstance(knn, (tuple, list)) and len(knn) == 2):
        raise TypeError("knn must be a pair (indices, distances) of (n, k) arrays")
    idx = np.array(knn[0])
    dist = np.array(knn[1], dtype=np.float64)
    if idx.ndim != 2 or dist.shape != idx.shape or idx.shape[0] != n:
        raise ValueError(f"knn: indices and distances must both have shape (n, k) = ({n}, k) "
                         f"for the {n} rows of X; got {idx.shape} and {dist.shape}")
    if idx.shape[1] < 1:
        raise ValueError("knn: give at least one neighbour per point")
    if idx.dtype.kind not in "iu":
        raise ValueError(f"knn: indices must be integers, got dtype {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"knn: indices must lie in 0..{n - 1}; empty slots (-1) are not "
                         "allowed (give every point the same number of neighbours)")
    if np.any(idx == np.arange(n)[:, None]):
        raise ValueError("knn: a point lists itself among its neighbours; leave self out")
    if not np.all(np.isfinite(dist)) or np.any(dist < 0):
        raise ValueError("knn: distances must be finite and non-negative")
    itype = np.int32 if n < np.iinfo(np.int32).max else np.int64
    return np.ascontiguousarray(idx, dtype=itype), np.ascontiguousarray(dist)


def effective_perplexity(perplexity: float, k: int, what: str = "the given neighbours",
                         stacklevel: int = 3) -> float:
    """``perplexity``, or ``k / 3`` with a warning when k < 3·perplexity neighbours are given.

    The calibration needs about 3·perplexity neighbours to hold the Gaussian's mass (the
    rule ctsne's own search follows); with fewer, the perplexity is lowered to match.
    """
    needed = int(np.floor(3 * perplexity))
    if k >= needed:
        return float(perplexity)
    lowered = k / 3.0
    warnings.warn(
        f"{what} hold {k} neighbours per point but perplexity={perplexity:g} needs "
        f"{needed}; using perplexity {lowered:.4g} (k/3) instead. For the full perplexity, "
        f"give at least {needed} neighbours (e.g. sc.pp.neighbors(adata, "
        f"n_neighbors={needed + 1})) or let ctsne search them",
        UserWarning, stacklevel=stacklevel)
    return lowered


def knn_affinities(indices: np.ndarray, distances: np.ndarray,
                   perplexity: float) -> tuple[sp.csr_matrix, float]:
    """Symmetric P summing to 1 from given neighbours; returns ``(P, perplexity used)``.

    The same calibration and symmetrisation as for searched neighbours
    (:func:`ctsne.affinities.calibration.calibrate`,
    :func:`ctsne.affinities.symmetry.symmetrize`). With fewer than 3·perplexity
    neighbours the perplexity is lowered to k/3, with a warning.
    ``indices`` and ``distances`` are modified in place.
    """
    k = indices.shape[1]
    used = effective_perplexity(perplexity, k, stacklevel=4)
    cond = calibrate(distances, used, out=distances)
    return symmetrize(indices, cond), used


def knn_from_graph(graph, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` nearest listed neighbours from a sparse (n, n) distance graph.

    Parameters
    ----------
    graph : sparse matrix (n, n)
        Row i stores the distances from point i to its neighbours (scanpy's
        ``obsp["distances"]``: k − 1 entries per row, self left out).
    k : int, optional
        Neighbours to keep per row; default (and most) the smallest number any row holds.

    Returns
    -------
    indices, distances : ndarray (n, k), each row ordered by distance

    Explicitly stored zeros count as neighbours at distance 0; entries on the diagonal
    (a point listed as its own neighbour) are dropped.
    """
    if not sp.issparse(graph):
        raise TypeError("the neighbour graph must be a sparse (n, n) distance matrix")
    G = sp.csr_matrix(graph, dtype=np.float64, copy=True)
    n = G.shape[0]
    if G.shape != (n, n):
        raise ValueError(f"the neighbour graph must be square, got shape {G.shape}")
    rows = np.repeat(np.arange(n), np.diff(G.indptr))
    off = G.indices != rows
    G = sp.csr_matrix((G.data[off], (rows[off], G.indices[off])), shape=(n, n))
    counts = np.diff(G.indptr)
    least = int(counts.min()) if n else 0
    if least == 0:
        raise ValueError(f"the neighbour graph has {int((counts == 0).sum())} point(s) "
                         "without neighbours; recompute it for these points")
    k = least if k is None else min(int(k), least)
    rows = np.repeat(np.arange(n), counts)
    order = np.lexsort((G.data, rows))  # by row, then by distance within the row
    take = order[(G.indptr[:-1, None] + np.arange(k)[None, :]).ravel()]
    idx = G.indices[take].reshape(n, k).astype(np.int64)
    dist = G.data[take].reshape(n, k)
    return idx, dist

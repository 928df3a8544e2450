"""UMAP's input graph: each row's fuzzy neighbourhood, then their fuzzy union.

A point's distances to its neighbours become directed memberships
``w_ij = exp(−max(0, d_ij − ρ_i) / σ_i)``: ρ_i is the distance to its nearest neighbour
(more generally to its ``local_connectivity``-th), so every point is fully connected to
at least one other, and σ_i is found by bisection so that the row's memberships sum to
``log₂(n_neighbors)`` (:func:`smooth_knn`). The directed graph is symmetrised by the
probabilistic t-conorm ``A + Aᵀ − A∘Aᵀ``, optionally mixed with the intersection
``A∘Aᵀ`` (:func:`fuzzy_union`). This is the graph of the conditional UMAP (paper,
Appendix B), built from the package's own neighbour lists, which leave the point itself
out (:mod:`ctsne.neighbors.search`).

``n_neighbors`` follows umap-learn: it counts the point itself, so lists of
``n_neighbors − 1`` others give the same graph as umap-learn's ``n_neighbors``.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._parallel import sum_in_order, threaded
from .calibration import PARALLEL_FROM_ENTRIES  # the bisection costs what calibration's does

__all__ = ["MIN_SIGMA_SCALE", "SMOOTH_MAX_ITER", "SMOOTH_TOL", "fuzzy_graph", "fuzzy_union",
           "membership_strengths", "smooth_knn", "smooth_row"]

# σ_i is kept at or above this multiple of the mean neighbour distance (the row's, or the
# whole table's when ρ_i = 0), as umap-learn does: in a row of ties (all d_ij ≤ ρ_i) the
# sum does not depend on σ and the bisection would drive σ towards 0.
MIN_SIGMA_SCALE = 1e-3
# The bisection on σ_i: tolerance on the row's membership sum (far tighter than
# umap-learn's, so that the result is the solution, not one of many within tolerance) and
# most steps (bracketing and 53 halvings fit well within).
SMOOTH_TOL = 1e-10
SMOOTH_MAX_ITER = 200


def _check_lists(idx: np.ndarray | None, dist: np.ndarray) -> None:
    if dist.ndim != 2:
        raise ValueError(f"distances must be a 2-D (n, k) array, got shape {dist.shape}")
    if idx is not None and idx.shape != dist.shape:
        raise ValueError(f"indices {idx.shape} and distances {dist.shape} must have the same "
                         "(n, k) shape")
    if np.any(dist < 0):
        raise ValueError("distances must be non-negative")


@numba.njit(cache=True)
def smooth_row(dist, target, local_connectivity, global_mean, tol, max_iter):
    """One row's ``(σ, ρ)``: see :func:`smooth_knn`. ``dist`` is the row (1-D); entries
    that are not finite are missing neighbours and are ignored; ``target`` is
    ``log₂(n_neighbors)``; ``global_mean`` is the table's mean distance for the lower bound
    on σ of rows with ρ = 0."""
    k = dist.shape[0]
    # the positive distances in ascending order (rows need not be sorted: lists merged
    # from several searches are not); zero distances are duplicates of the point
    pos = np.empty(k)
    m = 0
    total = 0.0
    valid = 0
    for j in range(k):
        d = dist[j]
        if np.isfinite(d):
            valid += 1
            total += d
            if d > 0.0:
                pos[m] = d
                m += 1
    pos = np.sort(pos[:m])

    # ρ: the distance to the local_connectivity-th nearest distinct neighbour,
    # interpolated between neighbours for a fractional value; the farthest if there
    # are fewer; 0 if every neighbour is a duplicate
    rho = 0.0
    if m > 0:
        if m >= local_connectivity:
            index = int(np.floor(local_connectivity))
            frac = local_connectivity - index
            if index > 0:
                rho = pos[index - 1]
                if frac > 0.0:
                    rho += frac * (pos[index] - pos[index - 1])
            else:
                rho = frac * pos[0]
        else:
            rho = pos[m - 1]

    # bisection on σ: the sum Σ_j exp(−max(0, d_ij − ρ)/σ) grows with σ. Start at the
    # row's own scale (the mean excess over ρ), so the result does not depend on the
    # data's units and the bracket is found in a few doublings or halvings.
    scale = 0.0
    n_above = 0
    for j in range(k):
        if np.isfinite(dist[j]) and dist[j] > rho:
            scale += dist[j] - rho
            n_above += 1
    sigma = 0.0
    if n_above > 0:  # otherwise the sum is the same for every σ: only the bound applies
        sigma = scale / n_above
        lo, hi = 0.0, np.inf
        for _ in range(max_iter):
            s = 0.0
            for j in range(k):
                d = dist[j]
                if np.isfinite(d):
                    s += np.exp(-(d - rho) / sigma) if d > rho else 1.0
            if abs(s - target) < tol:
                break
            if s > target:
                hi = sigma
            else:
                lo = sigma
            nxt = 2.0 * sigma if hi == np.inf else 0.5 * (lo + hi)
            if nxt == lo or nxt == hi:  # the bracket is as narrow as doubles allow
                break
            sigma = nxt

    # umap-learn's lower bound: the row's mean distance counting the point itself
    # (distance 0), as its lists do; rows without a distinct neighbour use the table's
    mean = total / (valid + 1) if rho > 0.0 else global_mean
    sigma = max(sigma, MIN_SIGMA_SCALE * mean)
    if sigma == 0.0:
        # only when every distance in the table is 0: every membership is then 1,
        # whatever σ is, and a positive σ keeps exp(−x/σ) free of 0/0
        sigma = 1.0
    return sigma, rho


@threaded(PARALLEL_FROM_ENTRIES)
def _smooth_kernel(dist, target, local_connectivity, global_mean, tol, max_iter,
                   sigmas, rhos, start, stop):
    # rows start … stop − 1, each bisected on its own (one serial build run in parts)
    for i in range(start, stop):
        sigmas[i], rhos[i] = smooth_row(dist[i], target, local_connectivity, global_mean,
                                        tol, max_iter)


# smooth_row for all rows at once, its steps in its order (sums column by column); no
# kernel, np.sort or quicksort to compile in a small fit's first run. Values computed and
# then discarded (exp of an entry below ρ, 0·inf) stay silent.
@_smooth_kernel.small
@np.errstate(over="ignore", invalid="ignore")
def _smooth_small(dist, target, local_connectivity, global_mean, tol, max_iter, sigmas, rhos):
    n, k = dist.shape
    finite = np.isfinite(dist)
    total = sum_in_order(np.where(finite, dist, 0.0).T)
    pos = np.sort(np.where(finite & (dist > 0.0), dist, np.inf), axis=1)
    m = np.count_nonzero(np.isfinite(pos), axis=1)
    rows = np.arange(n)
    index = int(np.floor(local_connectivity))
    frac = local_connectivity - index
    rho = np.zeros(n)
    if k > 0 and index > 0:
        rho = pos[:, min(index, k) - 1].copy()
        if frac > 0.0 and index < k:
            rho += frac * (pos[:, index] - pos[:, index - 1])
    elif k > 0:
        rho = frac * pos[:, 0]
    few = (m > 0) & (m < local_connectivity)
    rho[few] = pos[rows[few], m[few] - 1]
    rho[m == 0] = 0.0
    above = finite & (dist > rho[:, None])
    scale = sum_in_order(np.where(above, dist - rho[:, None], 0.0).T)
    n_above = np.count_nonzero(above, axis=1)
    sigma = np.zeros(n)
    live = np.flatnonzero(n_above > 0)
    sigma[live] = scale[live] / n_above[live]
    lo, hi = np.zeros(n), np.full(n, np.inf)
    for _ in range(max_iter):
        if live.size == 0:
            break
        sg, r = sigma[live], rho[live]
        d, rc, sc = dist[live], r[:, None], sg[:, None]
        term = np.where(d > rc, np.exp(-(d - rc) / sc), 1.0)
        s_ = sum_in_order(np.where(finite[live], term, 0.0).T)
        going = ~(np.abs(s_ - target) < tol)
        live, sg, s_ = live[going], sg[going], s_[going]
        over = s_ > target
        hi[live[over]] = sg[over]
        lo[live[~over]] = sg[~over]
        h, l_ = hi[live], lo[live]
        nxt = np.where(h == np.inf, 2.0 * sg, 0.5 * (l_ + h))
        moving = ~((nxt == l_) | (nxt == h))  # the bracket as narrow as doubles allow
        live, nxt = live[moving], nxt[moving]
        sigma[live] = nxt
    valid = np.count_nonzero(finite, axis=1)
    mean = np.where(rho > 0.0, total / (valid + 1), global_mean)
    sigma = np.maximum(sigma, MIN_SIGMA_SCALE * mean)
    sigma[sigma == 0.0] = 1.0
    sigmas[:] = sigma
    rhos[:] = rho


def smooth_knn(dist: np.ndarray, n_neighbors: int,
               local_connectivity: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Each row's bandwidth σ_i and offset ρ_i, as UMAP defines them.

    Parameters
    ----------
    dist : ndarray (n, k)
        Distances to each point's neighbours, the point itself left out (rows need not be
        sorted). Non-finite entries mark missing neighbours and are ignored.
    n_neighbors : int
        UMAP's neighbourhood size, counting the point itself (umap-learn's convention):
        normally ``k + 1``. The target of the bisection is ``log₂(n_neighbors)``.
    local_connectivity : float, default 1.0
        Which neighbour sets ρ_i: the distance to the ``local_connectivity``-th nearest
        neighbour at a positive distance (interpolated for a fractional value; the
        farthest if there are fewer; 0 if there is none).

    Returns
    -------
    sigmas : ndarray (n,)
        σ_i > 0 with ``Σ_j exp(−max(0, d_ij − ρ_i)/σ_i) = log₂(n_neighbors)`` (to
        :data:`SMOOTH_TOL`), but at least :data:`MIN_SIGMA_SCALE` times the row's mean
        distance (counting the point itself at distance 0), or the table's mean distance
        when ρ_i = 0.
    rhos : ndarray (n,)
        ρ_i ≥ 0.
    """
    dist = np.ascontiguousarray(dist, dtype=np.float64)
    _check_lists(None, dist)
    if n_neighbors < 2:
        raise ValueError(f"n_neighbors must be at least 2 (it counts the point itself), "
                         f"got {n_neighbors}")
    if not (np.isfinite(local_connectivity) and local_connectivity >= 0):
        raise ValueError(f"local_connectivity must be a finite number ≥ 0, got "
                         f"{local_connectivity}")
    finite = np.isfinite(dist)
    # the table's mean with each row's own point counted at distance 0, as umap-learn's
    # tables hold it
    global_mean = float(dist[finite].sum() / (finite.sum() + dist.shape[0])) if dist.size else 0.0
    n = dist.shape[0]
    sigmas, rhos = np.empty(n), np.empty(n)
    _smooth_kernel.run(dist, float(np.log2(n_neighbors)), float(local_connectivity),
                       global_mean, SMOOTH_TOL, SMOOTH_MAX_ITER, sigmas, rhos, items=n,
                       work=dist.size)
    return sigmas, rhos


def membership_strengths(idx: np.ndarray, dist: np.ndarray, sigmas: np.ndarray,
                         rhos: np.ndarray) -> np.ndarray:
    """Directed memberships ``w_ij = exp(−max(0, d_ij − ρ_i)/σ_i)`` of each list entry.

    Parameters
    ----------
    idx, dist : ndarray (n, k)
        Neighbour indices and distances (the point itself left out). Entries with a
        negative index or a non-finite distance are missing and get 0; so does an entry
        naming the point itself, should a list hold one.
    sigmas, rhos : ndarray (n,)
        From :func:`smooth_knn`.

    Returns
    -------
    ndarray (n, k)
        Memberships in [0, 1]; 1 wherever ``d_ij ≤ ρ_i``.
    """
    idx = np.asarray(idx)
    dist = np.asarray(dist, dtype=np.float64)
    _check_lists(idx, dist)
    sigmas = np.asarray(sigmas, dtype=np.float64)[:, None]
    rhos = np.asarray(rhos, dtype=np.float64)[:, None]
    valid = (idx >= 0) & np.isfinite(dist) & (idx != np.arange(idx.shape[0])[:, None])
    with np.errstate(invalid="ignore"):  # missing entries (inf − ρ) are masked below
        excess = np.maximum(dist - rhos, 0.0)
    w = np.exp(-np.where(valid, excess, 0.0) / sigmas)
    w[~valid] = 0.0
    return w


def fuzzy_union(directed: sp.spmatrix, set_op_mix_ratio: float = 1.0) -> sp.csr_matrix:
    """The symmetric fuzzy set of a directed membership graph.

    ``mix·(A + Aᵀ − A∘Aᵀ) + (1 − mix)·A∘Aᵀ``: with ``mix = 1`` the fuzzy union (an edge
    is there if either end has it), with ``mix = 0`` the intersection (both must).

    Parameters
    ----------
    directed : sparse matrix (n, n)
        Memberships in [0, 1], at most one entry per (i, j), zero diagonal.
    set_op_mix_ratio : float in [0, 1], default 1.0

    Returns
    -------
    scipy.sparse.csr_matrix (n, n)
        float64, exactly symmetric (each entry and its mirror are computed from the same
        two numbers), zero diagonal, canonical (sorted indices, no explicit zeros).
    """
    mix = float(set_op_mix_ratio)
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"set_op_mix_ratio must be in [0, 1], got {set_op_mix_ratio}")
    A = sp.csr_matrix(directed, dtype=np.float64)
    At = A.T.tocsr()
    both = A.multiply(At).tocsr()
    if mix == 1.0:
        G = A + At - both
    elif mix == 0.0:
        G = both
    else:
        G = mix * (A + At - both) + (1.0 - mix) * both
    G = sp.csr_matrix(G)
    G.sum_duplicates()  # also sorts the indices
    G.eliminate_zeros()
    return G


def fuzzy_graph(idx: np.ndarray, dist: np.ndarray, n_neighbors: int,
                set_op_mix_ratio: float = 1.0, local_connectivity: float = 1.0) -> sp.csr_matrix:
    """UMAP's symmetric input graph from neighbour lists.

    Parameters
    ----------
    idx : ndarray of int (n, k)
        Each point's neighbours, the point itself left out; distinct within a row.
        Negative indices mark missing entries.
    dist : ndarray (n, k)
        The matching distances (non-finite for missing entries).
    n_neighbors : int
        UMAP's neighbourhood size counting the point itself: ``k + 1`` for full lists
        (:func:`smooth_knn`).
    set_op_mix_ratio : float in [0, 1], default 1.0
        1: fuzzy union; 0: fuzzy intersection; between: their mixture (:func:`fuzzy_union`).
    local_connectivity : float ≥ 0, default 1.0
        Which neighbour is connected with membership 1 (:func:`smooth_knn`).

    Returns
    -------
    scipy.sparse.csr_matrix (n, n)
        Symmetric memberships in (0, 1], float64, zero diagonal, canonical CSR.
    """
    idx = np.asarray(idx)
    dist = np.asarray(dist, dtype=np.float64)
    _check_lists(idx, dist)
    n, k = idx.shape
    sigmas, rhos = smooth_knn(dist, n_neighbors, local_connectivity)
    w = membership_strengths(idx, dist, sigmas, rhos)
    keep = w > 0.0  # missing entries, the point itself and memberships that underflowed
    rows = np.repeat(np.arange(n), k).reshape(n, k)
    directed = sp.csr_matrix((w[keep], (rows[keep], idx[keep])), shape=(n, n))
    return fuzzy_union(directed, set_op_mix_ratio)

"""UMAP's fuzzy graph on the device: σ and ρ per row, memberships, their fuzzy union.

The definitions are the numba engine's (:mod:`ctsne.affinities.fuzzy`). Every row is
bisected at once; the union finds each entry's mirror by a sorted search of the keys
``i·n + j``, so that the graph is exactly symmetric, as the host's is.
"""

from __future__ import annotations

import math

from ..affinities.fuzzy import MIN_SIGMA_SCALE, SMOOTH_MAX_ITER, SMOOTH_TOL
from ..tuning import FUZZY_CHECK_EVERY as _CHECK_EVERY
from .device import load_torch

__all__ = ["fuzzy_graph_device", "smooth_knn_device"]



def smooth_knn_device(dist, n_neighbors: int, local_connectivity: float = 1.0):
    """Each row's ``(σ_i, ρ_i)``, :func:`ctsne.affinities.fuzzy.smooth_knn` on the device.

    Parameters
    ----------
    dist : float64 tensor (n, k)
        Distances to each point's neighbours, the point itself left out; non-finite
        entries are missing neighbours.
    n_neighbors : int
        Counting the point itself; the target sum is ``log₂(n_neighbors)``.
    local_connectivity : float

    Returns
    -------
    sigmas, rhos : float64 tensors (n,)
    """
    torch = load_torch()
    n, k = dist.shape
    finite = torch.isfinite(dist)
    zero = torch.zeros_like(dist)
    total = torch.where(finite, dist, zero).sum(1)
    valid = finite.sum(1)
    global_mean = float(total.sum() / (valid.sum() + n)) if n * k else 0.0
    inf = torch.tensor(math.inf, dtype=dist.dtype, device=dist.device)
    pos = torch.sort(torch.where(finite & (dist > 0), dist, inf), 1).values
    m = torch.isfinite(pos).sum(1)
    index = int(math.floor(local_connectivity))
    frac = local_connectivity - index
    rho = torch.zeros(n, dtype=dist.dtype, device=dist.device)
    if k > 0 and index > 0:
        rho = pos[:, min(index, k) - 1].clone()
        if frac > 0.0 and index < k:
            rho = rho + frac * (pos[:, index] - pos[:, index - 1])
    elif k > 0:
        rho = frac * pos[:, 0]
    few = (m > 0) & (m < local_connectivity)
    last = pos.gather(1, (m - 1).clamp(min=0)[:, None])[:, 0] if k > 0 else rho
    rho = torch.where(few, last, rho)
    rho = torch.where(m == 0, torch.zeros_like(rho), rho)

    r = rho[:, None]
    above = finite & (dist > r)
    n_above = above.sum(1)
    live = n_above > 0
    scale = torch.where(above, dist - r, zero).sum(1)
    sigma = torch.where(live, scale / n_above.clamp(min=1), torch.zeros_like(scale))
    lo, hi = torch.zeros_like(sigma), torch.full_like(sigma, math.inf)
    target = math.log2(n_neighbors)
    for step in range(SMOOTH_MAX_ITER):
        sc = torch.where(live, sigma, torch.ones_like(sigma))[:, None]
        term = torch.where(dist > r, torch.exp(-(dist - r) / sc), torch.ones_like(dist))
        s = torch.where(finite, term, zero).sum(1)
        going = live & ~((s - target).abs() < SMOOTH_TOL)
        over = s > target
        hi = torch.where(going & over, sigma, hi)
        lo = torch.where(going & ~over, sigma, lo)
        nxt = torch.where(torch.isinf(hi), 2.0 * sigma, 0.5 * (lo + hi))
        live = going & ~((nxt == lo) | (nxt == hi))  # the bracket as narrow as doubles go
        sigma = torch.where(live, nxt, sigma)
        if step % _CHECK_EVERY == _CHECK_EVERY - 1 and not bool(live.any()):
            break
    mean = torch.where(rho > 0, total / (valid + 1), torch.full_like(total, global_mean))
    sigma = torch.maximum(sigma, MIN_SIGMA_SCALE * mean)
    sigma = torch.where(sigma == 0, torch.ones_like(sigma), sigma)
    return sigma, rho


def fuzzy_graph_device(idx, dist, n_neighbors: int, set_op_mix_ratio: float = 1.0,
                       local_connectivity: float = 1.0):
    """UMAP's symmetric graph of neighbour lists, as a coalesced sparse COO tensor.

    :func:`ctsne.affinities.fuzzy.fuzzy_graph` on the device (same parameters, lists as
    int64 and float64 tensors); zero entries are left out.
    """
    torch = load_torch()
    n, k = idx.shape
    sigma, rho = smooth_knn_device(dist, n_neighbors, local_connectivity)
    rows = torch.arange(n, device=idx.device)[:, None].expand(n, k)
    ok = (idx >= 0) & torch.isfinite(dist) & (idx != rows)
    excess = torch.where(ok, (dist - rho[:, None]).clamp(min=0.0), torch.zeros_like(dist))
    w = torch.where(ok, torch.exp(-excess / sigma[:, None]), torch.zeros_like(dist))
    keep = w > 0  # missing entries, the point itself and memberships that underflowed
    i, j, a = rows[keep], idx[keep], w[keep]
    # each entry's mirror (j, i): where it exists, both entries see the same two values
    key = i * n + j
    order = torch.argsort(key)
    sorted_key = key[order]
    mirror = j * n + i
    at = torch.searchsorted(sorted_key, mirror).clamp(max=max(key.numel() - 1, 0))
    has = sorted_key[at] == mirror if key.numel() else torch.zeros_like(keep[keep])
    b = torch.where(has, a[order[at]], torch.zeros_like(a))
    both = a * b
    union = (a + b) - both
    mix = float(set_op_mix_ratio)
    if mix == 1.0:
        val = union
    elif mix == 0.0:
        val = both
    else:
        val = mix * union + (1.0 - mix) * both
    # an entry without a mirror also stands for its mirror
    alone = ~has
    ij = torch.stack([torch.cat([i, j[alone]]), torch.cat([j, i[alone]])])
    vals = torch.cat([val, val[alone]])
    nz = vals > 0
    G = torch.sparse_coo_tensor(ij[:, nz], vals[nz], (n, n), check_invariants=False)
    return G.coalesce()

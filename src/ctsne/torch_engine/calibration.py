"""Perplexity calibration on the device: the numba engine's search, over all rows at once.

The steps and constants of :func:`ctsne.affinities.calibration.calibrate_row`, each a
tensor operation over the rows still searching, so each row ends where the numba engine's
does. Always float64: the precisions span many orders of magnitude.

Rows may carry their own perplexity and a mask of valid entries (the label-balanced P
calibrates each block of a row over its filled slots at a perplexity scaled to them).
"""

from __future__ import annotations

import math

from ..affinities.calibration import CALIBRATE_MAX_ITER, CALIBRATE_TOL, START_SCALE
from .device import load_torch

__all__ = ["calibrate_rows"]


def calibrate_rows(dist, perplexity, valid=None, tol: float = CALIBRATE_TOL,
                   max_iter: int = CALIBRATE_MAX_ITER):
    """Row-stochastic ``p_{j|i}`` with the given perplexity, over ``valid`` entries.

    Parameters
    ----------
    dist : tensor (n, k)
        Distances to each row's neighbours.
    perplexity : float or tensor (n,)
        Per row, or one for all.
    valid : bool tensor (n, k), optional
        Entries that take part (others get 0); default all. A row without a valid entry
        comes out all 0.
    tol, max_iter
        Entropy tolerance (nats) and most steps, the numba engine's.

    Returns
    -------
    tensor (n, k), float64
    """
    torch = load_torch()
    dist = dist.to(torch.float64)
    n, k = dist.shape
    dev = dist.device
    if valid is None:
        valid = torch.ones_like(dist, dtype=torch.bool)
    perp = torch.as_tensor(perplexity, dtype=torch.float64, device=dev).expand(n)
    target = torch.log(perp).contiguous()
    masked = torch.where(valid, dist, torch.zeros((), dtype=dist.dtype, device=dev))
    top = masked.max(1).values
    top = torch.where((top == 0) | ~torch.isfinite(top), torch.ones_like(top), top)
    d2 = (masked / top[:, None]) ** 2
    dmin = torch.where(valid, d2, torch.full_like(d2, math.inf)).min(1).values
    shifted = torch.where(valid, d2 - dmin[:, None], torch.zeros_like(d2))
    # the numba engine's starting precision (START_SCALE): from the mean shifted distance
    count = valid.sum(1).to(torch.float64)
    spread = shifted.sum(1) / count.clamp(min=1.0)
    start = START_SCALE * torch.log(count / perp) / torch.where(spread > 0, spread,
                                                               torch.ones_like(spread))
    beta = torch.where((count > perp) & (spread > 0), start, torch.ones_like(spread))
    lo = torch.zeros(n, dtype=torch.float64, device=dev)
    hi = torch.full((n,), math.inf, dtype=torch.float64, device=dev)
    out = torch.zeros_like(d2)
    active = torch.nonzero(valid.any(1)).ravel()
    for step in range(max_iter):
        if active.numel() == 0:
            break
        sh, vb = shifted[active], valid[active]
        b = beta[active]
        e = torch.where(vb, torch.exp(-sh * b[:, None]), torch.zeros_like(sh))
        s = e.sum(1)
        mean = (e * sh).sum(1) / s
        var = (e * sh * sh).sum(1) / s - mean * mean
        entropy = torch.log(s) + b * mean
        diff = entropy - target[active]
        done = diff.abs() < tol
        if step == max_iter - 1:
            done = torch.ones_like(done)
        out[active[done]] = e[done] / s[done, None]
        keep = ~done
        a, b, diff, var = active[keep], b[keep], diff[keep], var[keep]
        flat = diff > 0  # too flat: sharpen
        lo_a, hi_a = lo[a], hi[a]
        new_lo = torch.where(flat, b, lo_a)
        new_hi = torch.where(flat, hi_a, b)
        grow = torch.where(torch.isinf(hi_a), 2.0 * b, 0.5 * (b + hi_a))
        halved = torch.where(flat, grow, 0.5 * (b + lo_a))
        newton = torch.where(var > 0, b + diff / (b * var), torch.full_like(b, math.inf))
        inside = (newton > new_lo) & (newton < new_hi)
        beta[a] = torch.where(inside, newton, halved)
        lo[a], hi[a] = new_lo, new_hi
        active = a
    return out

"""UMAP's and LargeVis's SGD on the device: an epoch's edges and negatives as tensors.

The objective, edge schedule, step coefficients, clip, learning-rate decay and
class-stratified negatives are the numba engine's
(:func:`ctsne.optimization.sgd.optimize_layout`). What differs is the order within an
epoch: synchronous passes instead of step after step. The first sums every due edge's
attraction on its head from the epoch's start, the second on its tail from where the
heads landed (a tail of several edges takes their sum, not one after the other); the
last computes the negatives' repulsions from the map so moved (reading them before the
attractions land loses neighbourhood preservation).

Random numbers come from one ``torch.Generator`` seeded by the fit, drawn in a fixed
order; the sums run through ``index_add_``, which is deterministic on the CPU and, with
:func:`torch.use_deterministic_algorithms` switched on for the run, on CUDA, so that a
seed fixes the map on a given device. That switch is PyTorch's, for the whole process:
while a CUDA layout runs, other threads' torch work (and the user's callbacks) run under
it too, with a warning from any operation that has no deterministic form.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from ..optimization.negatives import NegativeSampler
from ..optimization.sgd import GRADIENT_CLIP, REPULSION_EPS
from .device import load_torch

__all__ = ["draw_negatives", "last_classes", "shifted_cdf", "torch_layout"]


@contextmanager
def _deterministic(device):
    """Deterministic sums on CUDA for the run (index_add_ by atomics otherwise)."""
    torch = load_torch()
    if device.type != "cuda":
        yield
        return
    was, warn = (torch.are_deterministic_algorithms_enabled(),
                 torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was, warn_only=warn)


def shifted_cdf(sampler: NegativeSampler, device):
    """The sampler's cdf rows as one ascending float64 tensor: row r's entries plus 2r
    (a cdf lies in [0, 1], so the shifted rows follow one another in order)."""
    torch = load_torch()
    rows = torch.arange(len(sampler.cdf), device=device, dtype=torch.float64)[:, None]
    return (torch.as_tensor(sampler.cdf, device=device) + 2.0 * rows).reshape(-1)


def last_classes(sampler: NegativeSampler, device):
    """Each source row's last class of positive probability (a draw never goes past it)."""
    torch = load_torch()
    mass = np.diff(sampler.cdf, axis=1, prepend=0.0) > 0
    last = mass.shape[1] - 1 - np.argmax(mass[:, ::-1], axis=1)
    return torch.as_tensor(last.astype(np.int64), device=device)


def _attraction_steps(diff, a: float, b: float, lr: float):
    """The attraction's step on each edge's head (``diff = y_head − y_tail``), clipped as
    the numba engine's; the tail takes its opposite."""
    torch = load_torch()
    d2 = (diff * diff).sum(1)
    d2b = d2.pow(b)
    safe = torch.where(d2 > 0, d2, torch.ones_like(d2))
    # a self-loop or a point on its tail: d2 = 0, no force
    coef = torch.where(d2 > 0, -2.0 * a * b * (d2b / safe) / (1.0 + a * d2b),
                       torch.zeros_like(d2))
    return lr * (coef[:, None] * diff).clamp(-GRADIENT_CLIP, GRADIENT_CLIP)


def draw_negatives(members, offsets, cdf_shifted, last, src, u1, u2):
    """:func:`ctsne.optimization.negatives.draw` for a batch of draws: for each, the first
    class whose cumulative probability for source row ``src`` exceeds ``u1`` (one sorted
    search of all rows at once, :func:`shifted_cdf`; where the shift's rounding carries a
    ``u1`` near 1 past the row, the row's last class, ``last``), then the member of that
    class at ``u2``."""
    torch = load_torch()
    L = offsets.numel() - 1
    at = torch.searchsorted(cdf_shifted, u1 + 2.0 * src.to(u1.dtype), right=True)
    cls = torch.minimum((at - src * L).clamp(min=0), last[src])
    start = offsets[cls]
    size = offsets[cls + 1] - start
    return members[start + torch.minimum((u2 * size).to(torch.int64), size - 1)]


def torch_layout(Y: np.ndarray, head: np.ndarray, tail: np.ndarray,
                 epochs_per_sample: np.ndarray, n_epochs: int, a: float, b: float,
                 sampler: NegativeSampler, *, gamma: float = 1.0,
                 negative_sample_rate: int = 5, initial_lr: float = 1.0, seed: int = 0,
                 callback: Callable[[int, np.ndarray], object] | None = None,
                 callback_every: int = 50, device=None, dtype=None) -> np.ndarray:
    """A fit's layout by UMAP's SGD on ``device`` (see the module note).

    Parameters
    ----------
    Y, head, tail, epochs_per_sample, n_epochs, a, b, sampler, gamma,
    negative_sample_rate, initial_lr, seed, callback, callback_every
        As for :func:`ctsne.optimization.sgd.optimize_layout` in a fit (both ends move;
        every edge has a positive ``epochs_per_sample``; the source rows are the
        sampler's classes).
    device : torch.device
    dtype : torch dtype
        The type of the map and the steps.

    Returns
    -------
    ndarray (n, d), float64
        The map after the run (a new array).
    """
    torch = load_torch()
    dev = torch.device("cpu") if device is None else device
    dtype = torch.float64 if dtype is None else dtype
    n = Y.shape[0]
    if sampler.n != n:
        raise ValueError(f"the sampler draws from {sampler.n} points, the map has {n}")
    eps = np.asarray(epochs_per_sample, dtype=np.float64)
    if np.any(eps <= 0) or not np.all(np.isfinite(eps)):
        raise ValueError("every edge needs a finite epochs_per_sample > 0 (drop the others)")
    as_long = dict(dtype=torch.int64, device=dev)
    Yd = torch.as_tensor(np.ascontiguousarray(Y), device=dev).to(dtype).clone()
    h_all = torch.as_tensor(np.asarray(head, dtype=np.int64), **as_long)
    t_all = torch.as_tensor(np.asarray(tail, dtype=np.int64), **as_long)
    eps_d = torch.as_tensor(eps, device=dev)
    next_sample = eps_d.clone()
    nsr = int(negative_sample_rate)
    eps_neg = eps_d / max(nsr, 1)
    next_neg = torch.zeros_like(eps_d)
    members = torch.as_tensor(sampler.members, **as_long)
    offsets = torch.as_tensor(sampler.offsets, **as_long)
    cdf_shifted = shifted_cdf(sampler, dev)
    last = last_classes(sampler, dev)
    source = torch.as_tensor(sampler.classes, **as_long)
    weight = torch.as_tensor(sampler.sample_weight, device=dev).to(dtype)
    gen = torch.Generator(device=dev).manual_seed(int(seed) % (2**63))
    a, b, gamma = float(a), float(b), float(gamma)
    every = max(1, int(callback_every))
    move = torch.zeros_like(Yd)
    with _deterministic(dev):
        for t in range(int(n_epochs)):
            lr = float(initial_lr) * (1.0 - t / n_epochs)
            end = float(t + 1)
            e = torch.nonzero(next_sample <= end).reshape(-1)
            h, j = h_all[e], t_all[e]
            # the heads first, then the tails, each step from both ends where the pass
            # before left them (the numba engine's tail pass takes a tail's several edges
            # one after the other; here they sum)
            for ends, sign in ((h, 1.0), (j, -1.0)):
                move.zero_()
                move.index_add_(0, ends, sign * _attraction_steps(Yd[h] - Yd[j], a, b, lr))
                Yd += move
            # the attractions land before the negatives are read: the order the numba
            # engine's steps keep within a head, and the maps' quality with it
            next_sample[e] += eps_d[e]
            if nsr > 0:
                owed = torch.floor((end - next_neg[e]) / eps_neg[e]).clamp(min=0)
                next_neg[e] += owed * eps_neg[e]
                rh = torch.repeat_interleave(h, owed.to(torch.int64))
                u = torch.rand((2, rh.numel()), generator=gen, device=dev,
                               dtype=torch.float64)
                src = source[rh]
                m = draw_negatives(members, offsets, cdf_shifted, last, src, u[0], u[1])
                other = m != rh  # a draw of the head itself: no force
                rh, m, src = rh[other], m[other], src[other]
                diff = Yd[rh] - Yd[m]
                d2 = (diff * diff).sum(1)
                coef = weight[src] * (2.0 * gamma * b) / ((REPULSION_EPS + d2)
                                                         * (1.0 + a * d2.pow(b)))
                move.zero_()
                move.index_add_(0, rh, lr * (coef[:, None] * diff).clamp(
                    -GRADIENT_CLIP, GRADIENT_CLIP))
                Yd += move
            if callback is not None and ((t + 1) % every == 0 or t + 1 == n_epochs):
                if callback(t + 1, Yd.to(torch.float64).cpu().numpy()):
                    break
    return Yd.to(torch.float64).cpu().numpy()

"""Gradient descent with momentum and gains on the device: the numba optimiser's rule.

:func:`ctsne.optimization.optimizer.gradient_descent`'s step, as tensor operations: each
gain grows by ``GAIN_GROWTH`` where the gradient turned against the last step and shrinks
by ``GAIN_DECAY`` elsewhere (never below ``min_gain``), the update is
``momentum·update − learning_rate·gain·gradient``, each point's step is capped at
``max_step_norm``, the map is re-centred, and a map shrunk below ``SCALE_FLOOR`` is scaled
back by a power of two with its momentum. Same constants, same schedule (the estimator
runs early exaggeration, then the plain objective, with ``auto_learning_rate``).

The embedding and the state stay on the device during a run; the caller's arrays
(``Y``, ``state.update``, ``state.gains``) are written back at the end, so a fit can be
continued by either engine. Callbacks get a host copy of the embedding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..optimization.optimizer import (
    GAIN_DECAY,
    GAIN_GROWTH,
    MIN_GAIN,
    SCALE_FLOOR,
    SCALE_RESET_EXPONENT,
    ExaggerationGuard,
    OptimizerState,
    RunResult,
    _interrupted,
    _report,
    _StopRequest,
)
from .device import load_torch

__all__ = ["torch_gradient_descent", "torch_step"]


def torch_step(Y, grad, update, gains, learning_rate: float, momentum: float,
               min_gain: float = MIN_GAIN, max_step_norm: float | None = 5.0) -> None:
    """One step in place (Y, update, gains are device tensors), then re-centring."""
    torch = load_torch()
    flip = (update * grad) < 0
    gains.copy_(torch.where(flip, gains + GAIN_GROWTH, gains * GAIN_DECAY).clamp_(min=min_gain))
    update.mul_(momentum).sub_(learning_rate * gains * grad)
    if max_step_norm is not None and max_step_norm > 0:
        norm = torch.linalg.vector_norm(update, dim=1, keepdim=True)
        update.mul_(torch.where(norm > max_step_norm, max_step_norm / norm,
                                torch.ones_like(norm)))
    Y.add_(update)
    Y.sub_(Y.mean(0, keepdim=True))


def _radius(Y) -> float:
    return float(Y.abs().max()) if Y.numel() else 0.0


def _keep_scale(Y, update) -> None:
    """The numba optimiser's power-of-two rescue of a map shrunk below SCALE_FLOOR."""
    radius = _radius(Y)
    if not 0.0 < radius < SCALE_FLOOR:
        return
    k = SCALE_RESET_EXPONENT - math.frexp(radius)[1]
    Y.mul_(2.0 ** k)
    update.mul_(2.0 ** k)


def torch_gradient_descent(Y: np.ndarray, gradient, n_iter: int, learning_rate: float,
                           momentum: float, exaggeration: float, state: OptimizerState,
                           max_step_norm: float | None = 5.0, min_gain: float = MIN_GAIN,
                           callbacks: Sequence = (), callbacks_every_iters: int = 50,
                           progress=None) -> RunResult:
    """:func:`ctsne.optimization.optimizer.gradient_descent` on ``gradient``'s device.

    Parameters
    ----------
    Y : ndarray (n, d)
        Modified in place (written back at the end) and returned.
    gradient : TorchGradient
    n_iter, learning_rate, momentum, exaggeration, state, max_step_norm, min_gain,
    callbacks, callbacks_every_iters, progress
        As for the numba optimiser; ``state`` (numpy) is read at the start and written at
        the end.
    """
    torch = load_torch()
    dev, dt = gradient.device, gradient.dtype
    Yd = torch.as_tensor(Y, device=dev).to(dt).clone()
    update = torch.as_tensor(state.update, device=dev).to(dt).clone()
    gains = torch.as_tensor(state.gains, device=dev).to(dt).clone()
    kl = None
    guard = ExaggerationGuard(exaggeration, _radius(Yd))
    every = max(1, int(callbacks_every_iters))
    report = progress is not None
    stopped = interrupted = False
    try:
        with _StopRequest() as ctrl_c:
            for it in range(n_iter):
                state.n_iter += 1
                want_kl = (it + 1) % every == 0 and (bool(callbacks) or report)
                if guard.watching:  # one device sync per iteration, early phase only
                    guard.watch(_radius(Yd))
                grad, kl_now = gradient(Yd, guard.exaggeration, want_kl)
                torch_step(Yd, grad, update, gains, float(learning_rate), float(momentum),
                           float(min_gain), max_step_norm)
                _keep_scale(Yd, update)
                if progress is not None:
                    progress.update(1)
                if kl_now is not None:
                    kl = kl_now
                    if _report(state, kl, progress, callbacks,
                               lambda: Yd.to(torch.float64).cpu().numpy(), guard):
                        stopped = True
                        break
                if _interrupted(ctrl_c):
                    interrupted = True
                    break
    finally:
        Y[...] = Yd.to(torch.float64).cpu().numpy()
        state.update = update.to(torch.float64).cpu().numpy()
        state.gains = gains.to(torch.float64).cpu().numpy()
    return RunResult(embedding=Y, kl=kl, stopped_by_callback=stopped, interrupted=interrupted,
                     exaggeration=guard.exaggeration)

"""The descent's step on the device: the numba optimiser's rule as tensor operations.

:class:`TorchSteps` offers :func:`ctsne.optimization.optimizer.gradient_descent` (the one
descent loop) its primitives on device tensors, with the rule, constants and schedule of
the host's :class:`~ctsne.optimization.optimizer.HostSteps`.

The embedding and the state stay on the device during a run; the caller's arrays
(``Y``, ``state.update``, ``state.gains``) are written back at its end, so a fit can be
continued by either engine. Callbacks get a host copy of the embedding.
"""

from __future__ import annotations

import math

import numpy as np

from ..optimization.optimizer import (
    GAIN_DECAY,
    GAIN_GROWTH,
    MIN_GAIN,
    SCALE_FLOOR,
    SCALE_RESET_EXPONENT,
    OptimizerState,
)
from .device import load_torch

__all__ = ["TorchSteps", "torch_step"]


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


class TorchSteps:
    """The descent's primitives on ``device`` in ``dtype`` (module note).

    Parameters
    ----------
    device : torch.device
    dtype : torch dtype
    """

    def __init__(self, device, dtype):
        self.device, self.dtype = device, dtype

    def load(self, Y: np.ndarray, state: OptimizerState):
        torch = load_torch()
        return tuple(torch.as_tensor(a, device=self.device).to(self.dtype).clone()
                     for a in (Y, state.update, state.gains))

    def store(self, Y: np.ndarray, state: OptimizerState, Y_run, update, gains) -> None:
        Y[...] = self.host(Y_run)
        state.update, state.gains = self.host(update), self.host(gains)

    @staticmethod
    def radius(Y) -> float:
        return float(Y.abs().max()) if Y.numel() else 0.0

    def step(self, Y, grad, update, gains, learning_rate: float, momentum: float,
             min_gain: float, max_step_norm: float) -> None:
        torch_step(Y, grad, update, gains, learning_rate, momentum, min_gain, max_step_norm)
        radius = self.radius(Y)
        if 0.0 < radius < SCALE_FLOOR:  # the host's power-of-two rescue (SCALE_FLOOR)
            k = SCALE_RESET_EXPONENT - math.frexp(radius)[1]
            Y.mul_(2.0 ** k)
            update.mul_(2.0 ** k)

    @staticmethod
    def host(Y) -> np.ndarray:
        return Y.to(load_torch().float64).cpu().numpy()

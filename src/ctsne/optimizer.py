"""Gradient descent with momentum and per-coordinate gains (the t-SNE optimiser).

Gradient convention: the paper's, ``∂KL/∂y_i = 4 Σ_j (p_ij − r_ij) t_ij (y_i − y_j)``, as in
scikit-learn; openTSNE drops the factor 4. ``learning_rate="auto"`` is
``max(n / (4·exaggeration), 50)`` per phase, which takes the same steps as openTSNE's
``n / exaggeration`` (Belkina et al. 2019) on its unscaled gradient.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["OptimizerState", "auto_learning_rate", "gradient_descent"]

GradientFn = Callable[[np.ndarray, float, bool], tuple[np.ndarray, float | None]]
Callback = Callable[[int, float, np.ndarray], object]


def auto_learning_rate(n: int, exaggeration: float) -> float:
    """Step size for the factor-4 gradient: ``max(n / (4·exaggeration), 50)``."""
    return max(n / (4.0 * exaggeration), 50.0)


@dataclass
class OptimizerState:
    """What carries over between calls: the last update (momentum) and the gains."""

    update: np.ndarray
    gains: np.ndarray
    n_iter: int = 0
    history: list = field(default_factory=list)  # (iteration, KL) pairs

    @classmethod
    def fresh(cls, shape) -> OptimizerState:
        return cls(update=np.zeros(shape), gains=np.ones(shape))


@dataclass
class RunResult:
    embedding: np.ndarray
    kl: float | None
    stopped_by_callback: bool = False
    interrupted: bool = False


class _StopRequest:
    """First Ctrl-C asks the loop to stop after the current iteration; a second one aborts.

    A KeyboardInterrupt raised while a numba kernel runs comes out as a SystemError, and
    one raised mid-update would leave ``Y`` half-stepped; a flag avoids both.
    """

    def __init__(self):
        self.requested = False
        self._old = None

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> _StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def gradient_descent(
    Y: np.ndarray,
    gradient: GradientFn,
    n_iter: int,
    learning_rate: float,
    momentum: float,
    exaggeration: float,
    state: OptimizerState,
    max_step_norm: float | None = 5.0,
    min_gain: float = 0.01,
    callbacks: Sequence[Callback] = (),
    callbacks_every_iters: int = 50,
    progress=None,
) -> RunResult:
    """Run ``n_iter`` steps from ``Y`` (modified in place and returned).

    Parameters
    ----------
    gradient : callable(Y, exaggeration, want_kl) -> (grad, kl or None)
        ``kl`` is KL(P‖R) with the true P, asked for only on callback/report iterations.
    max_step_norm : float or None
        Caps each point's step length; keeps a few violent early steps from throwing
        points far away.
    callbacks : sequence of callable(iteration, kl, embedding)
        Called every ``callbacks_every_iters`` iterations; a truthy return stops the run.
    progress : object with ``update(n)`` and ``set_postfix_str(s)`` (e.g. tqdm), optional

    A Ctrl-C (SIGINT, from the main thread) ends the run after the current iteration with
    ``interrupted=True``; a second one raises KeyboardInterrupt.
    """
    kl = None
    every = max(1, int(callbacks_every_iters))
    report = progress is not None
    stopped = interrupted = False
    with _StopRequest() as ctrl_c:
        for it in range(n_iter):
            state.n_iter += 1
            want_kl = (it + 1) % every == 0 and (bool(callbacks) or report)
            grad, kl_now = gradient(Y, exaggeration, want_kl)
            # grow the gain where the gradient turned against the last step, else shrink it
            flipped = state.update * grad < 0
            state.gains = np.where(flipped, state.gains + 0.2, state.gains * 0.8)
            np.maximum(state.gains, min_gain, out=state.gains)
            state.update = momentum * state.update - learning_rate * state.gains * grad
            if max_step_norm is not None:
                norms = np.sqrt(np.sum(state.update**2, axis=1))
                too_long = norms > max_step_norm
                if np.any(too_long):
                    state.update[too_long] *= (max_step_norm / norms[too_long])[:, None]
            Y += state.update
            Y -= Y.mean(axis=0)
            if progress is not None:
                progress.update(1)
            if kl_now is not None:
                kl = kl_now
                state.history.append((state.n_iter, kl))
                if progress is not None:
                    progress.set_postfix_str(f"KL={kl:.4f}")
                for cb in callbacks:
                    if cb(state.n_iter, kl, Y):
                        stopped = True
                if stopped:
                    break
            if ctrl_c.requested:
                interrupted = True
                break
    return RunResult(embedding=Y, kl=kl, stopped_by_callback=stopped, interrupted=interrupted)

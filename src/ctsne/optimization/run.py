"""One fit's descent: the gradient, the optimiser's state and the gradient's point order.

A ConditionalTSNE fit makes one :class:`DescentRun` and keeps it: both phases of the fit,
every later :meth:`~ctsne.ConditionalTSNE.optimize` and
:meth:`~ctsne.ConditionalTSNE.kl_divergence` reuse its gradient, whose set-up (P copied
into the locality order, the constant part of the KL) costs seconds at 10⁵ points. The
gradient may number the points in its own order (``order``); the run moves the map and
the state into that numbering for a run and back after it, so nothing outside this
module sees it.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .optimizer import HOST_STEPS, HostSteps, OptimizerState, RunResult, gradient_descent

__all__ = ["DescentRun"]


class DescentRun:
    """The gradient of one fit with its optimiser's state, run by one descent loop.

    Parameters
    ----------
    gradient : callable(Y, exaggeration, want_kl) -> (grad, kl or None), with ``kl(Y)``
        The engine's gradient of KL(P‖R); an ``order`` attribute (int array or None)
        numbers its rows (row r is point ``order[r]``).
    state : OptimizerState
        Momentum and gains in the points' own order (the estimator keeps and pickles it).
    steps : HostSteps or an engine's counterpart
        The engine's step primitives (:func:`~ctsne.optimization.optimizer.gradient_descent`).
    key : tuple
        What the gradient was made from; :meth:`serves` compares its objects by identity,
        its numbers and names by value.
    """

    def __init__(self, gradient, state: OptimizerState, steps: HostSteps = HOST_STEPS,
                 key: tuple = ()):
        self.gradient, self.state, self.steps, self.key = gradient, state, steps, key
        self.order = getattr(gradient, "order", None)

    def serves(self, key: tuple) -> bool:
        """Whether this run's gradient was made from exactly ``key``'s objects."""
        if len(key) != len(self.key):
            return False
        return all(a is b or (isinstance(a, (numbers.Number, str)) and a == b)
                   for a, b in zip(key, self.key, strict=True))

    @property
    def timings(self) -> dict:
        return self.gradient.timings

    def kl(self, Y: np.ndarray) -> float:
        """KL(P‖R) of ``Y`` (rows in the points' own order)."""
        return float(self.gradient.kl(Y if self.order is None else Y[self.order]))

    def descend(self, Y: np.ndarray, n_iter: int, learning_rate: float, momentum: float,
                exaggeration: float, *, callbacks: Sequence = (), **options) -> RunResult:
        """``n_iter`` iterations of the descent loop from ``Y`` (points' own order,
        modified in place and returned as the result's ``embedding``); callbacks see the
        points' own order. ``options``: as for
        :func:`~ctsne.optimization.optimizer.gradient_descent`."""
        order, state = self.order, self.state
        if order is None:
            return gradient_descent(Y, self.gradient, n_iter, learning_rate, momentum,
                                    exaggeration, state, callbacks=callbacks,
                                    steps=self.steps, **options)
        moved = Y[order]
        state.update, state.gains = state.update[order], state.gains[order]

        def own(a: np.ndarray) -> np.ndarray:
            out = np.empty_like(a)
            out[order] = a
            return out

        def seen(iteration, kl, Z):
            # one copy in the points' order for all callbacks, each of which runs
            Y_own = own(Z)
            return any([bool(cb(iteration, kl, Y_own)) for cb in callbacks])

        try:
            res = gradient_descent(moved, self.gradient, n_iter, learning_rate, momentum,
                                   exaggeration, state, callbacks=[seen] if callbacks else [],
                                   steps=self.steps, **options)
        finally:
            Y[order] = moved
            state.update, state.gains = own(state.update), own(state.gains)
        return replace(res, embedding=Y)

"""Gradient descent with momentum and per-coordinate gains (the t-SNE optimiser).

Gradient convention: the paper's, ``∂KL/∂y_i = 4 Σ_j (p_ij − r_ij) t_ij (y_i − y_j)``, as in
scikit-learn; openTSNE drops the factor 4. ``learning_rate="auto"`` is
``max(n / 4, 50) / exaggeration`` per phase, which above 200 points takes the same steps as
openTSNE's ``n / exaggeration`` (Belkina et al. 2019) on its unscaled gradient.
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._parallel import chunk_count, sum_in_order, threaded
from ..tuning import STEP_BLOCK_ROWS, STEP_IN_NUMPY_BELOW, STEP_MOST_BLOCKS
from ..tuning import STEP_PARALLEL_FROM_COORDS as PARALLEL_FROM_COORDS

__all__ = ["EARLY_MOMENTUM", "FINAL_MOMENTUM", "GAIN_GROWTH", "GAIN_DECAY", "HOST_STEPS",
           "MIN_GAIN", "SCALE_FLOOR", "SCALE_RESET_EXPONENT", "ExaggerationGuard",
           "HostSteps", "OptimizerState", "RunResult", "auto_learning_rate",
           "gradient_descent"]

GradientFn = Callable[[np.ndarray, float, bool], tuple[np.ndarray, float | None]]
Callback = Callable[[int, float, np.ndarray], object]

# Momentum of the early-exaggeration phase and of the rest of the run: t-SNE's schedule
# (van der Maaten & Hinton 2008, as scikit-learn): a smaller one while the exaggerated
# attraction rearranges the map, the larger one to converge faster after.
EARLY_MOMENTUM = 0.5
FINAL_MOMENTUM = 0.8
# Per-coordinate gains (Jacobs' delta-bar-delta rule, with t-SNE's and scikit-learn's
# values): grow additively where the gradient turned against the last step, shrink
# geometrically where it did not, never below MIN_GAIN so that no coordinate freezes.
GAIN_GROWTH = 0.2
GAIN_DECAY = 0.8
MIN_GAIN = 0.01
# The map's scale floor. Under early exaggeration α a tiny map is a linear system: with
# every pairwise distance below ~1e-8, each Student-t kernel value rounds to exactly 1
# and the gradient is 4·(α·L_P·Y − Y/(n − 1)) for a centred map without a prior
# (L_P = diag(P·1) − P; a prior reweights the repulsion by class). Every mode whose
# eigenvalue of n·L_P exceeds ~1/α decays, so where P's spectral gap is above 1/α (the
# paper's synthetic data: 0.112 against 1/12; digits: 0.009, which grows instead) the
# whole map contracts geometrically, by 0.77–0.85 an iteration (measured): to a radius of
# 1e-22–1e-32 after the default 250 iterations, then into float32's subnormals (the
# Barnes-Hut sweeps use float32 offsets) and float64's, where the forces are rounding
# noise: after 1500 iterations the map came out
# degenerate (std ~1e-161, or 10-NN preservation 0.12–0.15 instead of 0.55).
# That regime has a symmetry: with the kernel exactly 1 the gradient is exactly linear in
# Y and the step homogeneous in (Y, momentum) (gains follow signs only; the step cap is
# far off), so multiplying both by a power of two maps the iteration onto itself, bit for
# bit while no intermediate value is subnormal (measured with the exact and Barnes-Hut
# engines), and leaves the KL as it is. So a map whose radius falls below SCALE_FLOOR is
# multiplied, with its momentum, by the power of two that brings its radius to
# [2^(E−1), 2^E), E = SCALE_RESET_EXPONENT. The floor is about as low as float32 allows:
# float32 offsets down to 2^-24 of the radius stay normal numbers, as precise as at any
# scale. It is not higher because the depth matters after the exaggeration: the map grows
# back linearly, dominated more and more by the modes the plain objective favours, before
# it forms structure; with a floor of 2^-36 (a regrowth of ~18 iterations instead of ~47)
# the synthetic data's ct-SNE KL rose by 0.034 on 8 seeds (~2 seed standard deviations).
# Of the default fits measured (synthetic, digits, 784-D digit images) only the synthetic
# data with its prior reaches this floor, at the end of the exaggeration; its KL changed
# by +0.004 ± 0.017 (8 seeds; seed-to-seed spread 0.019), the rest are bit for bit as
# before. With the easing below (COLLAPSE_SHRINK) a default fit no longer gets there; an
# exaggeration it cannot ease enough (a map that shrinks even at 1) still can.
SCALE_FLOOR = 2.0 ** -100  # ≈ 7.9e-31
SCALE_RESET_EXPONENT = -92  # radius ≈ 1–2e-28
# Early exaggeration stronger than P allows. On a small map (every kernel value 1) the
# exaggerated gradient is 4(α·L_P − L_W/S)·Y (L_W: the repulsion's weights, the prior's
# included): the iteration is a power iteration, and the map as a whole grows only if
# α·λ < 1 for the smallest eigenvalue λ of L_P against L_W/S on centred maps. Where that
# gap exceeds 1/α (the paper's synthetic data: λ = 0.11 without its prior and 0.16 with
# it, against 1/12; digits: 0.009) the origin is a stable fixed point of the exaggerated
# objective from any small start, whatever the learning rate, gains or step cap: the
# whole phase only shrinks the map (Q uniform, the KL unchanged) and the map forms
# afterwards. scikit-learn's TSNE does the same on that data (its phase stops at its
# gradient-norm floor with the map at 2e-5). So a map in that linear regime (radius below
# LINEAR_RADIUS) that has shrunk to COLLAPSE_SHRINK of its radius at the phase's start
# has its exaggeration halved (never below 1), and halved again after every EASE_WINDOW
# iterations over which it, still in the linear regime, did not grow by EASE_GROWTH: the
# phase then runs at a factor with α·λ ≲ 1/2, which spreads the map. A map that does not
# collapse (digits, most data) is never touched. Measured on the synthetic data (1,000
# points, seeds 0 and 1): the phase ends with max|Y| 2–3 instead of 1e-19–1e-22, and the
# final KL is 0.03 lower without the prior, 0.01–0.05 lower with it. COLLAPSE_SHRINK = 0
# turns this off.
COLLAPSE_SHRINK = 1e-2
LINEAR_RADIUS = 1e-3  # t_ij ≥ 1 − 8e-6 for every pair
EASE_WINDOW = 10
EASE_GROWTH = 4.0


class ExaggerationGuard:
    """Eases an early exaggeration that shrinks the map to a point (see COLLAPSE_SHRINK).

    ``exaggeration`` is the factor to use; :meth:`watch` takes the map's radius before
    each iteration. Scalars only, so that every engine's loop can use it.
    """

    def __init__(self, exaggeration: float, radius: float):
        self.asked = self.exaggeration = float(exaggeration)
        self.watching = self.asked > 1.0 and COLLAPSE_SHRINK > 0.0 and radius > 0.0
        self.start = radius
        self.mark = None  # (iteration, radius) of the last easing
        self.it = 0

    def watch(self, radius: float) -> None:
        if not self.watching:
            return
        self.it += 1
        if not 0.0 < radius < LINEAR_RADIUS:
            return
        if self.mark is None:
            ease = radius < COLLAPSE_SHRINK * self.start
        else:
            ease = (self.it - self.mark[0] >= EASE_WINDOW
                    and radius < EASE_GROWTH * self.mark[1])
            if not ease and self.it - self.mark[0] >= EASE_WINDOW:
                self.mark = (self.it, radius)
        if ease:
            self.exaggeration = max(1.0, 0.5 * self.exaggeration)
            self.mark = (self.it, radius)
            self.watching = self.exaggeration > 1.0

    @property
    def eased(self) -> bool:
        return self.exaggeration != self.asked


def _radius(Y: np.ndarray) -> float:
    return max(float(Y.max()), -float(Y.min())) if Y.size else 0.0


def auto_learning_rate(n: int, exaggeration: float) -> float:
    """Step size for the factor-4 gradient: ``max(n / 4, 50) / exaggeration``.

    The exaggerated attraction's step ``exaggeration·learning_rate`` is then the plain
    phase's. scikit-learn floors the rate itself at 50 (``max(n / (4·exaggeration),
    50)``), which below 200·exaggeration points makes the exaggerated step up to 12×
    larger: on 300 points the early phase then only jitters the map (KL 2.187 after it
    against 2.182 at the start, on the synthetic data; 1.201 with this rule) and the
    final KL is the same or higher (synthetic with its prior 1.890 against 1.820, digits
    0.490 against 0.462).
    """
    return max(n / 4.0, 50.0) / exaggeration


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
    exaggeration: float | None = None  # the factor in use at the end (ExaggerationGuard)


class _StopRequest:
    """First Ctrl-C asks the loop to stop after the current iteration; a second one aborts.

    The handler only sets flags and the loop acts on them between iterations: an
    exception raised from a handler while a numba kernel runs comes out as a SystemError,
    and one raised mid-update would leave ``Y`` half-stepped. A handler someone else
    installed (the ``ctsne`` command's) is left in place.
    """

    def __init__(self):
        self.requested = False
        self.abort = False
        self._old = None

    def _handler(self, signum, frame):
        if self.requested:
            self.abort = True
        self.requested = True

    def __enter__(self) -> _StopRequest:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


@threaded(PARALLEL_FROM_COORDS)
def _step_kernel(Y, grad, update, gains, learning_rate, momentum, min_gain, max_step_norm,
                 chunk, col, start, stop):
    # blocks start … stop − 1 of `chunk` rows each, block t's new coordinates summed into
    # col[t]: the blocks are the caller's (fixed by the map's size), so the sums do not
    # depend on how the blocks are handed out
    n, d = Y.shape
    for t in range(start, stop):
        for k in range(d):
            col[t, k] = 0.0
        for i in range(t * chunk, min(n, (t + 1) * chunk)):
            norm2 = 0.0
            for k in range(d):
                # grow the gain where the gradient turned against the last step, else shrink
                if update[i, k] * grad[i, k] < 0.0:
                    g = gains[i, k] + GAIN_GROWTH
                else:
                    g = gains[i, k] * GAIN_DECAY
                g = max(g, min_gain)
                gains[i, k] = g
                u = momentum * update[i, k] - learning_rate * g * grad[i, k]
                update[i, k] = u
                norm2 += u * u
            shrink = 1.0
            if max_step_norm > 0.0 and norm2 > max_step_norm * max_step_norm:
                shrink = max_step_norm / np.sqrt(norm2)
            for k in range(d):
                update[i, k] *= shrink
                Y[i, k] += update[i, k]
                col[t, k] += Y[i, k]


def _step_compiled(Y, grad, update, gains, learning_rate, momentum, min_gain,
                   max_step_norm, n_threads=1):
    """One update in place: gains, momentum step, per-point step cap; returns the new mean.

    Fused so that a step over 10⁶ points reads each array once instead of in ten numpy
    passes. ``max_step_norm <= 0`` means no cap. The rows fall into ``n_threads`` blocks
    whose sums make the mean, the blocks in order (so the mean's last bits follow the
    number of blocks: :func:`step_blocks`, a function of the map's size alone).
    """
    n, d = Y.shape
    blocks = max(1, n_threads)
    col = np.empty((blocks, d))
    _step_kernel.run(Y, grad, update, gains, learning_rate, momentum, min_gain, max_step_norm,
                     (n + blocks - 1) // blocks, col, items=blocks, work=Y.size)
    return sum_in_order(col) / n


# Rows per block of the step's mean, and the most blocks (the most threads a step keeps
# busy): the blocks, not the threads, fix the mean's rounding.


def step_blocks(n: int) -> int:
    """Blocks of a step over n rows: a function of n alone, so a map is the same on any
    number of threads."""
    return chunk_count(n, STEP_BLOCK_ROWS, STEP_MOST_BLOCKS)


def _step(Y, grad, update, gains, learning_rate, momentum, min_gain, max_step_norm,
          n_threads=1):
    """:func:`_step_compiled`, in numpy below :data:`STEP_IN_NUMPY_BELOW` coordinates."""
    step = _step_small if Y.size < STEP_IN_NUMPY_BELOW else _step_compiled
    return step(Y, grad, update, gains, learning_rate, momentum, min_gain, max_step_norm,
                n_threads)


@np.errstate(all="ignore")
def _step_small(Y, grad, update, gains, learning_rate, momentum, min_gain, max_step_norm,
                n_threads=1):
    """:func:`_step_compiled` in numpy, its operations in the same order (the same numbers
    bit for bit)."""
    n = len(Y)
    g = np.where(update * grad < 0.0, gains + GAIN_GROWTH, gains * GAIN_DECAY)
    np.maximum(g, min_gain, out=gains)
    np.subtract(momentum * update, learning_rate * gains * grad, out=update)
    if max_step_norm > 0.0:
        norm2 = sum_in_order((update * update).T)
        cap = norm2 > max_step_norm * max_step_norm
        if cap.any():
            update *= np.where(cap, max_step_norm / np.sqrt(norm2), 1.0)[:, None]
    Y += update
    # each thread's rows added in turn, as the kernel's blocks, then the blocks in order
    parts = max(1, n_threads)
    chunk = (n + parts - 1) // parts
    col = np.stack([sum_in_order(Y[t * chunk:(t + 1) * chunk]) for t in range(parts)])
    return sum_in_order(col) / n


def _keep_scale(Y: np.ndarray, update: np.ndarray) -> int:
    """Rescale a centred map whose radius fell below SCALE_FLOOR (see there), with its
    momentum, by an exact power of two; returns the exponent (0: nothing done)."""
    if Y.size == 0:
        return 0
    radius = max(float(Y.max()), -float(Y.min()))
    if not 0.0 < radius < SCALE_FLOOR:  # 0: all points coincide, nothing to rescale
        return 0
    k = SCALE_RESET_EXPONENT - math.frexp(radius)[1]  # radius·2^k in [2^(E−1), 2^E)
    np.ldexp(Y, k, out=Y)
    np.ldexp(update, k, out=update)
    return k


class HostSteps:
    """The descent's array operations on host arrays: the numba engine's step.

    An engine offers the loop of :func:`gradient_descent` these primitives, so that the
    loop is written once: ``load`` the map and the optimiser's state where the gradient
    works, ``radius`` of a map, ``step`` (gains, momentum, step cap, re-centring, the
    scale floor), ``host`` (a host copy of the map for callbacks) and ``store`` (write
    the map and the state back at the end of a run).
    """

    def load(self, Y: np.ndarray, state: OptimizerState):
        """The arrays the loop updates: the host's are updated in place."""
        return Y, state.update, state.gains

    def store(self, Y: np.ndarray, state: OptimizerState, Y_run, update, gains) -> None:
        """Nothing to write back: the loop updated the caller's arrays."""

    radius = staticmethod(_radius)

    def step(self, Y, grad, update, gains, learning_rate: float, momentum: float,
             min_gain: float, max_step_norm: float) -> None:
        """One update in place (``max_step_norm <= 0``: no cap), the map re-centred."""
        mean = _step(Y, grad, update, gains, learning_rate, momentum, min_gain,
                     max_step_norm, step_blocks(len(Y)))
        # column by column: numpy broadcasts a (d,) row over (n, d) with an inner loop
        # of length d, several times slower at 10⁵ points in 2-D
        for k in range(Y.shape[1]):
            Y[:, k] -= mean[k]
        _keep_scale(Y, update)

    @staticmethod
    def host(Y: np.ndarray) -> np.ndarray:
        return Y


HOST_STEPS = HostSteps()


def _report(state: OptimizerState, kl: float, progress, callbacks, embedding,
            guard: ExaggerationGuard) -> bool:
    """After a step that evaluated the KL: its history, the progress line and the
    callbacks, which see ``embedding()`` (called only if there are any: a device engine
    copies its map to the host for them). Every callback runs; True if one asks to stop.
    The progress line names an eased exaggeration (``guard``)."""
    state.history.append((state.n_iter, kl))
    if progress is not None:
        eased = ""
        if guard.eased:
            eased = (f", early exaggeration eased to {guard.exaggeration:.3g} (asked "
                     f"{guard.asked:g}: the map was shrinking to a point)")
        progress.set_postfix_str(f"KL={kl:.4f}{eased}")
    if not callbacks:
        return False
    Y = embedding()
    return any([bool(cb(state.n_iter, kl, Y)) for cb in callbacks])


def gradient_descent(
    Y: np.ndarray,
    gradient: GradientFn,
    n_iter: int,
    learning_rate: float,
    momentum: float,
    exaggeration: float,
    state: OptimizerState,
    max_step_norm: float | None = 5.0,
    min_gain: float = MIN_GAIN,
    callbacks: Sequence[Callback] = (),
    callbacks_every_iters: int = 50,
    progress=None,
    steps: HostSteps = HOST_STEPS,
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
    steps : HostSteps or an engine's counterpart
        The engine's array operations (:class:`HostSteps`; the torch engine's work on
        device tensors, :class:`ctsne.torch_engine.optimizer.TorchSteps`). ``Y`` and
        ``state`` are host arrays whatever the engine; a device engine copies them in at
        the start and back at the end, whatever ends the run.

    A Ctrl-C (SIGINT, from the main thread) ends the run after the current iteration with
    ``interrupted=True``; a second one raises KeyboardInterrupt.

    An exaggeration under which the map only shrinks to a point (P's spectral gap above
    1/exaggeration) is halved until the map grows (see ``COLLAPSE_SHRINK``); the
    result's ``exaggeration`` is the factor in use at the end.
    A map that contracts below ``SCALE_FLOOR`` all the same (as under a long early
    exaggeration) is scaled back up with its momentum by a power of two, a symmetry of
    the iteration at that scale (see ``SCALE_FLOOR``).
    """
    kl = None
    Y_run, update, gains = steps.load(Y, state)
    guard = ExaggerationGuard(exaggeration, steps.radius(Y_run))
    every = max(1, int(callbacks_every_iters))
    report = progress is not None
    cap = -1.0 if max_step_norm is None else float(max_step_norm)
    stopped = interrupted = False
    try:
        with _StopRequest() as ctrl_c:
            for it in range(n_iter):
                state.n_iter += 1
                want_kl = (it + 1) % every == 0 and (bool(callbacks) or report)
                if guard.watching:  # a device engine syncs here, in the early phase only
                    guard.watch(steps.radius(Y_run))
                grad, kl_now = gradient(Y_run, guard.exaggeration, want_kl)
                steps.step(Y_run, grad, update, gains, float(learning_rate), float(momentum),
                           float(min_gain), cap)
                if progress is not None:
                    progress.update(1)
                if kl_now is not None:
                    kl = kl_now
                    if _report(state, kl, progress, callbacks, lambda: steps.host(Y_run),
                               guard):
                        stopped = True
                        break
                if ctrl_c.abort:  # a second Ctrl-C
                    raise KeyboardInterrupt
                if ctrl_c.requested:
                    interrupted = True
                    break
    finally:
        steps.store(Y, state, Y_run, update, gains)
    return RunResult(embedding=Y, kl=kl, stopped_by_callback=stopped, interrupted=interrupted,
                     exaggeration=guard.exaggeration)

"""ct-SNE repulsion as a sum of plain t-SNE repulsions over classes.

The decomposition: the pair weight expands into indicator terms (see
:meth:`ctsne.prior.Prior.terms`); for one prior ``w_ij = β' + (α' − β')·[c_i = c_j]``, so

    Σ_j w_ij t_ij² (y_i − y_j) = β'·F_i(all) + (α' − β')·F_i(class of i)
    S = Σ_{k≠l} w_kl t_kl      = β'·Z(all)   + (α' − β')·Σ_c Z(class c)

where F(G), Z(G) are plain t-SNE repulsion and normaliser restricted to the point set G.
Any t-SNE engine becomes a ct-SNE engine without seeing a label, and since the classes of
a term partition the points, each term costs at most one t-SNE pass.

The terms need not be equally accurate: an error in a term reaches the force multiplied
by the term's coefficient. With β' = 0.01 the all-points term carries ~1 % of S, so it
may have ~100× the relative error of the class terms for the same absolute error: with
``method="auto"`` it goes to a coarse FFT grid (cheaper than Barnes-Hut at θ = 0.5),
otherwise Barnes-Hut opens it wider (:func:`term_thetas`); the class terms, which carry
the force, keep the asked accuracy. Under "auto" in 2-D, a group planned for Barnes-Hut
is evaluated on each call by whichever of Barnes-Hut and the FFT grid (equally accurate)
a cost model prices lower for its size and current extent (:func:`fft_is_cheaper`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numba
import numpy as np

from ..._parallel import threaded
from ...prior import PriorTerm
from ...tuning import (
    BH_BELOW,
    BH_NS_PER_POINT_LOG,
    EXACT_BELOW,
    EXACT_FIT_MAX,
    FFT_NS_PER_NODE,
    FFT_NS_PER_POINT,
    GROUP_COPY_PARALLEL_ABOVE,
)
from .exact import repulsion_exact_groups

__all__ = ["ConditionalRepulsion", "choose_engine", "fft_is_cheaper", "get_engine",
           "term_thetas"]

# (module, function) for each approximate engine; imported on first use.
_ENGINES = {
    "bh": ("ctsne.forces.repulsion.barnes_hut", "repulsion_bh"),
    "fft": ("ctsne.forces.repulsion.fft", "repulsion_fft"),
}

# Which engine a group gets: the thresholds and cost model in ctsne.tuning. FFT groups
# above EXACT_BELOW are also checked each call against the span (fft.exact_is_faster): its
# grid follows the layout's extent, not the group size; in 2-D each call takes whichever
# of Barnes-Hut and FFT the cost model prices lower (:func:`fft_is_cheaper`).
# Barnes-Hut force error grows as theta^4 (quadrupole-corrected cells), and past ~1.2 the
# cells' expansion stops converging well; a minor term's angle stays within these bounds.
THETA_ERROR_POWER = 4.0
THETA_MAX = 1.2
# Relative force error of the engines' settings on t-SNE-like layouts: Barnes-Hut
# ~BH_ERROR_COEF·θ⁴, FFT on its default grid FFT_ERROR, and on the coarse grid below (boxes
# of 5 nodes: more accurate and faster than boxes of 3) FFT_COARSE_ERROR.
BH_ERROR_COEF = 0.016
FFT_ERROR = 6e-4
FFT_COARSE = {"n_interp": 5, "boxes_per_unit": 0.3}
FFT_COARSE_ERROR = 6e-2


def term_thetas(theta: float, shares: list[float]) -> list[float]:
    """Opening angle per term such that each term adds at most the dominant term's error.

    ``shares`` are the terms' weighted sizes ``|coef|·Z``; a term with a share s of the
    largest one, s_max, may have an error (s_max / s) times larger in relative terms:
    ``theta·(s_max / s)^(1/4)``, at most ``THETA_MAX`` (and never below ``theta``).
    """
    top = max(shares, default=0.0)
    out = []
    for s in shares:
        if theta <= 0.0 or top <= 0.0:
            out.append(theta)
        elif s <= 0.0:
            out.append(max(theta, THETA_MAX))
        else:
            out.append(max(theta, min(THETA_MAX, theta * (top / s) ** (1 / THETA_ERROR_POWER))))
    return out


# Groups below GROUP_COPY_PARALLEL_ABOVE are gathered and scattered by numpy: handing parts
# to threads would cost more than the copy. Above it the copies run in parts on ctsne's
# threads (ctsne._parallel.Threaded).


def _gather(Y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    # numpy twins of _gather_rows and _add_rows_kernel below: no hand-off
    if len(idx) < GROUP_COPY_PARALLEL_ABOVE or numba.get_num_threads() == 1:
        return Y[idx]
    out = np.empty((len(idx), Y.shape[1]))
    _gather_rows.run(Y, idx, out, items=len(idx), work=len(idx))
    return out


def _add_rows(F: np.ndarray, idx: np.ndarray, coef: float, Fg: np.ndarray) -> None:
    if len(idx) < GROUP_COPY_PARALLEL_ABOVE or numba.get_num_threads() == 1:
        F[idx] += coef * Fg
    else:
        _add_rows_kernel.run(F, idx, coef, Fg, items=len(idx), work=len(idx))


@threaded(GROUP_COPY_PARALLEL_ABOVE)
def _gather_rows(Y, idx, out, start, stop):
    # out[r] = Y[idx[r]] for rows start … stop − 1 (numpy's fancy indexing is serial)
    for r in range(start, stop):
        for k in range(Y.shape[1]):
            out[r, k] = Y[idx[r], k]


@threaded(GROUP_COPY_PARALLEL_ABOVE)
def _add_rows_kernel(F, idx, coef, Fg, start, stop):
    # F[idx] += coef·Fg for distinct idx, rows start … stop − 1: numpy's products and sums
    for r in range(start, stop):
        for k in range(F.shape[1]):
            F[idx[r], k] += coef * Fg[r, k]


def _span(Y: np.ndarray) -> np.ndarray:
    # per column: numpy's axis-0 reductions of an (m, 2) array are several times slower
    return np.array([np.ptp(Y[:, k]) for k in range(Y.shape[1])])


def get_engine(name: str) -> Callable:
    module, func = _ENGINES[name]
    return getattr(importlib.import_module(module), func)


def fft_is_cheaper(m: int, span: np.ndarray, theta: float) -> bool:
    """Whether the FFT engine on its default grid costs less than Barnes-Hut at ``theta``
    for ``m`` points over ``span`` (2-D), by the cost model above."""
    from .fft import grid_shape

    if m < 2 or theta <= 0.0:
        return False
    _, _, half = grid_shape(span)
    fft = FFT_NS_PER_POINT * m + FFT_NS_PER_NODE * float(np.prod(2 * half))
    bh = BH_NS_PER_POINT_LOG * m * np.log2(m) * (0.5 / theta) ** 2
    return fft < bh


def _fft_exact_is_faster(m: int, span: np.ndarray, params: dict) -> bool:
    from .fft import exact_is_faster

    keys = ("n_interp", "min_boxes", "boxes_per_unit")
    return exact_is_faster(m, span, **{k: v for k, v in params.items() if k in keys})


def choose_engine(m: int, d: int, method: str, n: int | None = None) -> str:
    """Engine for a group of ``m`` points (of a fit of ``n``) in ``d`` output dimensions.

    ``method`` is "exact", "bh", "fft" or "auto"; small groups always go to the exact
    kernel, where an O(m²) pass is cheaper than building a tree or an FFT grid, and so
    does every group of a fit of at most :data:`EXACT_FIT_MAX` points under "auto".
    """
    if method == "exact":
        return "exact"
    if method == "auto" and n is not None and n <= EXACT_FIT_MAX:
        return "exact"
    if method == "auto":
        method = "bh" if (d > 2 or m < BH_BELOW) else "fft"
    if m < EXACT_BELOW[method]:
        return "exact"
    return method


class _TermPlan:
    """How one indicator term is evaluated: small groups batched, large ones per engine."""

    def __init__(self, term: PriorTerm, n: int, d: int, method: str):
        self.coef = term.coef
        if term.codes is None:
            codes = np.zeros(n, dtype=np.int64)
        else:
            codes = term.codes
        order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        small, large, self.large_engines = [], [], []
        # Z of a term, before any is measured: pairs within its groups (classes mixed
        # evenly over the layout, which a factored-out prior tends to)
        self.share = abs(self.coef) * float(np.sum(sizes.astype(np.float64) ** 2 - sizes))
        for g, m in enumerate(sizes):
            if m < 2:
                continue  # a lone point has no partner in its group
            idx = order[bounds[g]:bounds[g + 1]]
            engine = choose_engine(int(m), d, method, n)
            if engine == "exact":
                small.append(idx)
            else:
                large.append(idx)
                self.large_engines.append(engine)
        # the large groups' points back to back: one gather and one scatter per term, group
        # g a contiguous slice [large_starts[g], large_starts[g + 1])
        self.large_idx = np.concatenate(large) if large else None
        # one group of all points in their own order (plain t-SNE's term, ct-SNE's
        # all-points term): no gather or scatter
        self.identity = (self.large_idx is not None and len(self.large_idx) == n
                         and bool(np.all(self.large_idx == np.arange(n))))
        self.large_starts = np.concatenate([[0], np.cumsum([len(i) for i in large])])
        if small:
            self.small_idx = np.concatenate(small)
            self.small_starts = np.concatenate([[0], np.cumsum([len(s) for s in small])])
        else:
            self.small_idx = None


class ConditionalRepulsion:
    """ct-SNE repulsive force and normaliser S, composed from per-group t-SNE passes.

    Parameters
    ----------
    terms : list of PriorTerm
        From :meth:`ctsne.prior.Prior.terms`; ``[PriorTerm(1, None, 1)]`` is plain t-SNE.
    n, d : int
        Number of points and output dimensions.
    method : {"exact", "bh", "fft", "auto"}
    engine_params : dict, optional
        Extra keyword arguments per engine name, e.g. ``{"bh": {"theta": 0.5}}``.
    """

    def __init__(
        self,
        terms: list[PriorTerm],
        n: int,
        d: int,
        method: str = "exact",
        engine_params: dict | None = None,
    ):
        self.plans = [_TermPlan(t, n, d, method) for t in terms]
        self.engine_params = engine_params or {}
        self.n, self.d = n, d
        self.method = method
        self.theta = float(self.engine_params.get("bh", {}).get("theta", 0.5))
        self.last_used: set[str] | None = None

    def _engine_for(self, engine: str, ratio: float, theta: float) -> tuple[str, dict]:
        """Engine and parameters for a group of a term whose share of S is 1/ratio of the
        largest: the coarse FFT grid where its error, scaled down by ratio, stays below
        the dominant term's (FFT engines, or any 2-D engine under "auto")."""
        params = self.engine_params.get(engine, {})
        if engine == "bh":
            if (self.method == "auto" and self.d <= 2
                    and BH_ERROR_COEF * self.theta**THETA_ERROR_POWER * ratio >= FFT_COARSE_ERROR):
                return "fft", {**self.engine_params.get("fft", {}), **FFT_COARSE}
            if (self.method == "auto" and self.d == 2
                    and BH_ERROR_COEF * theta**THETA_ERROR_POWER >= FFT_ERROR):
                # as accurate on the default grid: the call picks the cheaper (__call__)
                return "bh|fft", {**params, "theta": theta}
            return "bh", {**params, "theta": theta}
        if engine == "fft" and FFT_ERROR * ratio >= FFT_COARSE_ERROR:
            return "fft", {**params, **FFT_COARSE}
        return engine, params

    def engines_used(self) -> set[str]:
        """Engines of the last call (before any call: those planned)."""
        if self.last_used is not None:
            return set(self.last_used)
        used = set()
        for plan in self.plans:
            if plan.small_idx is not None:
                used.add("exact")
            used.update(plan.large_engines)
        return used

    def __call__(self, Y: np.ndarray) -> tuple[np.ndarray, float]:
        """Return ``(Σ_j w_ij t_ij² (y_i − y_j), S)`` for every point ``i``."""
        F = np.zeros_like(Y)
        S = 0.0
        shares = [plan.share for plan in self.plans]
        top = max(shares, default=0.0)
        self.last_used = set()
        for plan, theta in zip(self.plans, term_thetas(self.theta, shares), strict=True):
            ratio = top / plan.share if plan.share > 0 else np.inf
            Z = 0.0
            if plan.small_idx is not None:
                Fg, Zg = repulsion_exact_groups(_gather(Y, plan.small_idx), plan.small_starts)
                _add_rows(F, plan.small_idx, float(plan.coef), Fg)
                Z += Zg
                self.last_used.add("exact")
            if plan.large_idx is not None:
                Ys = Y if plan.identity else _gather(Y, plan.large_idx)
                Fs = np.empty_like(Ys)
                for g, planned in enumerate(plan.large_engines):
                    a, b = plan.large_starts[g], plan.large_starts[g + 1]
                    Yg = Ys[a:b]
                    engine, params = self._engine_for(planned, ratio, theta)
                    span = _span(Yg) if engine in ("bh|fft", "fft") else None
                    if engine == "bh|fft":
                        cheaper = fft_is_cheaper(b - a, span, params["theta"])
                        engine = "fft" if cheaper else "bh"
                        params = self.engine_params.get("fft", {}) if cheaper else params
                    if engine == "fft" and _fft_exact_is_faster(b - a, span, params):
                        engine = "exact"
                        Fs[a:b], Zg = repulsion_exact_groups(Yg, np.array([0, b - a]))
                    else:
                        Fs[a:b], Zg = get_engine(engine)(Yg, **params)
                    self.last_used.add(engine)
                    Z += Zg
                if plan.identity:  # F += coef·Fs, element by element as _add_rows
                    np.multiply(Fs, float(plan.coef), out=Fs)
                    F += Fs
                else:
                    _add_rows(F, plan.large_idx, float(plan.coef), Fs)
            S += plan.coef * Z
            plan.share = abs(plan.coef) * Z  # measured: the next call allocates by it
        return F, S

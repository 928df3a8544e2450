"""ConditionalTSNE's parameters in one table, and the checks of its inputs (X, P).

:data:`PARAMETERS` lists every constructor parameter with its default, its documentation
(the class docstring's Parameters section is built from it), the values it admits and
the error otherwise; :func:`check_params` validates an estimator's parameters from it.
A default that depends on other parameters (β' when neither ``beta`` nor ``alpha`` is
given, ``within_weight`` per affinities mode) is the row's ``resolve``. Ranges that
depend on the data are checked where the data is known; the row names that place
(``checked_later``).

The checks run in ``fit``, not in ``__init__`` or ``set_params`` (scikit-learn's rule:
``clone`` and grid searches set parameters without validating them).
"""

from __future__ import annotations

import contextlib
import inspect
import numbers
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from ..affinities.balanced import default_within_weight
from ..affinities.calibration import n_neighbors_for
from ..affinities.modes import AFFINITIES, check_affinity_params
from ..neighbors.search import APPROX_ABOVE, SEARCH_METHODS, TREE_DIMS, TREE_MAX_N
from ..prior import DEFAULT_BETA

__all__ = ["PARAMETERS", "PARAMETERS_MARKER", "Parameter", "check_P", "check_X",
           "check_feature_names", "check_params", "parameters_section", "resolved", "threads",
           "with_parameters"]

METHODS = ("auto", "exact", "bh", "fft")
# Barnes-Hut's trees and the FFT grid exist up to these output dimensions.
MAX_DIMS = {"bh": 3, "fft": 2}


@dataclass(frozen=True)
class Parameter:
    """One constructor parameter: default, documentation, admissible values.

    Attributes
    ----------
    default
        The signature's default (a test keeps the two equal).
    kind : str
        Its type as the docstring gives it; ", default …" (or ", optional") is added.
    doc : str
        Its description in the class docstring (one paragraph).
    accepts : callable or None
        ``accepts(value) -> bool``; None when the parameter is only checked together
        with others or against the data (see ``checked_later``).
    message : str
        The error when ``accepts`` is False, formatted with ``name`` and ``value``.
    resolve : callable or None
        ``resolve(params) -> value``: the value used when the default depends on other
        parameters; None when the parameter is used as given.
    checked_later : str
        What is checked once the data is known, and where.
    """

    default: Any
    kind: str
    doc: str = ""
    accepts: Callable[[Any], bool] | None = None
    message: str = ""
    resolve: Callable[[Mapping[str, Any]], Any] | None = None
    checked_later: str = ""


def _integer(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, numbers.Integral) and v >= low


def _finite(v) -> bool:
    return isinstance(v, numbers.Real) and bool(np.isfinite(v))


def _one_of(*options: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and v in options


def _callbacks(v) -> bool:
    if v is None or callable(v):
        return True
    return isinstance(v, (list, tuple)) and all(callable(c) for c in v)


def _random_state(v) -> bool:
    # what numpy's default_rng takes (the start and the approximate search use it)
    return v is None or isinstance(v, (numbers.Integral, np.random.Generator,
                                       np.random.BitGenerator, np.random.SeedSequence))


def _resolve_beta(p: Mapping[str, Any]):
    # the paper's rule of thumb unless α' is given instead (Eq. 4 then gives β')
    return DEFAULT_BETA if p["beta"] is None and p["alpha"] is None else p["beta"]


def _resolve_within_weight(p: Mapping[str, Any]):
    if p["within_weight"] is not None:
        return p["within_weight"]
    mode = "balanced" if p["affinities"] == "auto" else p["affinities"]  # what auto switches to
    return default_within_weight(mode) if mode in ("balanced", "revised") else None


def _integer_param(default: int, low: int, doc: str = "") -> Parameter:
    return Parameter(default, "int", doc, _integer(low),
                     f"{{name}} must be an integer ≥ {low}, got {{value!r}}")


# In the signature's order; check_params checks them in this order.
PARAMETERS: dict[str, Parameter] = {
    "n_components": _integer_param(
        2, 1, "Output dimensions (Barnes-Hut up to 3, FFT up to 2, exact any)."),
    "perplexity": Parameter(
        30.0, "float",
        "Effective number of neighbours; ``k = min(n − 1, 3·perplexity)`` neighbours are "
        "used.",
        lambda v: isinstance(v, numbers.Real) and v > 0,
        "perplexity must be a positive number, got {value!r}",
        checked_later="below n − 1 for n points (check_params with n)"),
    "beta": Parameter(
        None, "float",
        f"β', the weight of pairs in different classes; None means {DEFAULT_BETA} (the "
        "paper's rule of thumb) unless ``alpha`` is given.",
        resolve=_resolve_beta,
        checked_later="make_prior: in (0, 1/(1 − ρ)) for the prior's class sizes"),
    "alpha": Parameter(
        None, "float", "α' instead of β' (give one of the two, not both).",
        checked_later="make_prior: in (0, 1/ρ) for the prior's class sizes; not together "
        "with beta (a rule of check_params)"),
    "combine": Parameter(
        "joint", '{"joint", "product"}',
        "Several priors as joint classes (the paper's f₁₋₆) or as independent factors.",
        checked_later="make_prior"),
    "missing": Parameter(
        "class", '{"class", "error"}',
        "A missing label (None, NaN, pandas NA) is a class of its own, or an error.",
        checked_later="encode_labels"),
    "method": Parameter(
        "auto", '{"auto", "exact", "bh", "fft"}',
        'Repulsion engine; "auto" chooses per class by size and output dimension, and sends '
        "a term with a small share of the normaliser (the all-points term at small β') to "
        "a coarse FFT grid within its error budget (see "
        ":mod:`ctsne.forces.repulsion.conditional`).",
        _one_of(*METHODS), f"method must be one of {METHODS}, got {{value!r}}"),
    "theta": Parameter(
        0.5, "float",
        "Barnes-Hut opening angle of the dominant terms; minor terms open wider for the "
        "same absolute error.",
        lambda v: _finite(v) and v >= 0, "theta must be a finite number ≥ 0, got {value!r}"),
    "early_exaggeration": Parameter(
        12.0, "float", "", lambda v: _finite(v) and v > 0,
        "early_exaggeration must be a finite number > 0 (1 means none, 12 is usual), "
        "got {value!r}"),
    "early_exaggeration_iter": _integer_param(250, 0),
    "n_iter": _integer_param(500, 0, "Iterations after the early-exaggeration phase."),
    "learning_rate": Parameter(
        "auto", 'float or "auto"',
        '"auto" is ``max(n / (4·exaggeration), 50)`` per phase (factor-4 gradient).',
        lambda v: (isinstance(v, str) and v == "auto") or (
            isinstance(v, numbers.Real) and v > 0),
        "learning_rate must be 'auto' or a positive number, got {value!r}"),
    "init": Parameter(
        "pca", '{"pca", "random"} or ndarray (n, n_components)',
        "\"pca\" with a prior uses the principal axes of X with each class's mean removed, "
        "so the start does not already show the prior.",
        lambda v: (isinstance(v, str) and v in ("pca", "random")) or hasattr(
            v, "__array__") or isinstance(v, (list, tuple)),
        "init must be 'pca', 'random' or an array, got {value!r}",
        checked_later="initial_embedding: an array's shape and values"),
    "neighbors": Parameter(
        "auto", '{"auto", "exact", "approx"}',
        f'"auto": exact search up to {APPROX_ABOVE:,} points ({TREE_MAX_N:,} with at most '
        f"{TREE_DIMS} features), pynndescent above (see :mod:`ctsne.neighbors.search` for "
        "the measurements).",
        _one_of(*SEARCH_METHODS),
        "neighbors must be 'auto', 'exact' or 'approx', got {value!r}"),
    "metric": Parameter(
        "euclidean", "str", "", lambda v: isinstance(v, str) or callable(v),
        "metric must be a metric name or a callable, got {value!r}",
        checked_later="the neighbour search: the name"),
    "affinities": Parameter(
        "auto", '{"auto", "standard", "balanced", "revised"}',
        'How the input affinities P treat the prior (README, "Priors that separate the '
        'data"). "standard": t-SNE\'s P. "balanced": each point\'s neighbours are drawn '
        "from its own class and from the other classes separately, each list calibrated on "
        "its own (:mod:`ctsne.affinities.balanced`), so that P connects classes the input "
        'space keeps apart. "revised": Heiter et al.\'s revised ct-SNE P, within- and '
        "across-label lists with the within-label part scaled by α = ``within_weight``; "
        "with β' = 1 (``beta=1``) this is their method (plain t-SNE on the conditioned P), "
        "with the default β' it combines P-side and Q-side conditioning. How α relates to "
        "β': at the optimum a pair's embedding similarity follows p_ij / w_ij, so own-class "
        "pairs weigh α relative to other pairs on the P side as they weigh β'/α' on the Q "
        'side; the combination gives about α·β\'/α\'. "auto": the standard P, switched to '
        "the balanced one when the prior separates the data "
        "(:mod:`ctsne.affinities.mixing`); any other prior keeps exactly the standard P.",
        _one_of(*AFFINITIES), f"affinities must be one of {AFFINITIES}, got {{value!r}}"),
    "within_weight": Parameter(
        None, "float",
        "\"balanced\": the own-class share of each point's conditional affinities, in "
        f"(0, 1), default {default_within_weight('balanced')}. \"revised\": α in (0, 1], "
        f"default {default_within_weight('revised')}. Ignored otherwise.",
        resolve=_resolve_within_weight,
        checked_later="check_affinity_params, with affinities (a rule of check_params)"),
    "max_step_norm": Parameter(
        5.0, "float or None", "Cap on each point's step length per iteration (≤ 0: none).",
        lambda v: v is None or (isinstance(v, numbers.Real) and not np.isnan(v)),
        "max_step_norm must be None or a number (≤ 0: no cap), got {value!r}"),
    "random_state": Parameter(
        None, "int, Generator or None",
        "Seeds the initialisation and the approximate neighbour search.", _random_state,
        "random_state must be None, an integer or a numpy Generator, got {value!r}"),
    "n_jobs": Parameter(
        None, "int or None", "Threads for the numba kernels (None: all).",
        lambda v: v is None or isinstance(v, numbers.Integral),
        "n_jobs must be None or an integer, got {value!r}"),
    "verbose": Parameter(
        False, "bool",
        "Progress on stderr for the affinities and the optimisation, with the KL: tqdm bars "
        "on a terminal, a plain line every tenth (at most 50 iterations) otherwise.",
        lambda v: isinstance(v, (bool, numbers.Integral)),
        "verbose must be True or False, got {value!r}"),
    "callbacks": Parameter(
        None, "callable or list of callables",
        "Each is called as ``callback(iteration, kl, embedding)`` every "
        "``callbacks_every_iters`` iterations; one that returns True stops the run.",
        _callbacks, "callbacks must be None, a callable or a list of callables, got {value!r}"),
    "callbacks_every_iters": _integer_param(50, 1),
}


def _default_text(value) -> str:
    if value is None:
        return "optional"
    if isinstance(value, str):
        return f'default "{value}"'
    if isinstance(value, float):
        return f"default {value:g}"
    return f"default {value}"


def parameters_section() -> str:
    """The numpydoc "Parameters" section of ConditionalTSNE, from :data:`PARAMETERS`."""
    lines = ["Parameters", "----------"]
    for name, row in PARAMETERS.items():
        lines.append(f"{name} : {row.kind}, {_default_text(row.default)}")
        lines += textwrap.wrap(row.doc, 88, initial_indent="    ", subsequent_indent="    ",
                               break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines)


# The class docstring's line that parameters_section() replaces.
PARAMETERS_MARKER = "Parameters: from ctsne.estimator.parameters.PARAMETERS."


def with_parameters(docstring: str | None) -> str | None:
    """``docstring`` (dedented) with :data:`PARAMETERS_MARKER` replaced by the section."""
    if docstring is None:  # python -OO drops docstrings
        return None
    return inspect.cleandoc(docstring).replace(PARAMETERS_MARKER, parameters_section())


def resolved(params: Mapping[str, Any], name: str):
    """The value of parameter ``name`` that a fit uses, defaults resolved.

    Parameters
    ----------
    params : mapping
        ``estimator.get_params()``.
    name : str
        A key of :data:`PARAMETERS`.
    """
    row = PARAMETERS[name]
    return params[name] if row.resolve is None else row.resolve(params)


def _dims_fit_method(p: Mapping[str, Any]) -> None:
    limit = MAX_DIMS.get(p["method"])
    if limit is not None and p["n_components"] > limit:
        raise ValueError(
            f"method={p['method']!r} supports up to {limit} output dimensions, got "
            f"n_components={p['n_components']}; use method='exact' or fewer components"
        )


def _one_weight(p: Mapping[str, Any]) -> None:
    if p["beta"] is not None and p["alpha"] is not None:
        raise ValueError(f"give beta or alpha, not both (got beta={p['beta']!r}, "
                         f"alpha={p['alpha']!r}): the other follows from the class sizes")


# Rules over several parameters, after each parameter's own check.
RULES: tuple[Callable[[Mapping[str, Any]], None], ...] = (
    _dims_fit_method,
    lambda p: check_affinity_params(p["affinities"], p["within_weight"]),
    _one_weight,
)


def check_params(params: Mapping[str, Any], n: int, *, builds_affinities: bool = True) -> None:
    """Raise ValueError naming the first parameter that the table or a rule refuses.

    Parameters
    ----------
    params : mapping
        ``estimator.get_params()``.
    n : int
        Number of points to embed.
    builds_affinities : bool
        False when P is given (``fit_affinities``): the perplexity is then not used, so
        it is not checked against ``n``.
    """
    for name, row in PARAMETERS.items():
        value = params[name]
        if row.accepts is not None and not row.accepts(value):
            raise ValueError(row.message.format(name=name, value=value))
    for rule in RULES:
        rule(params)
    if n < 3:
        raise ValueError(f"t-SNE needs at least 3 points, got n_samples={n}")
    if builds_affinities:
        perplexity = params["perplexity"]
        if perplexity >= n_neighbors_for(perplexity, n):
            raise ValueError(
                f"perplexity={perplexity} is too large for {n} points: it must be below "
                f"n − 1 = {n - 1} (the neighbours available); "
                f"use perplexity ≤ {max(1, (n - 2) // 3)} or more points"
            )


@contextlib.contextmanager
def threads(n_jobs: int | None):
    """Apply ``n_jobs`` for the duration of a fit: numba's thread count (None, -1: all)."""
    if n_jobs is None or n_jobs == -1:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_jobs), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


def check_X(X) -> np.ndarray:
    """``X`` as a finite float64 array (n_samples, n_features); clear errors otherwise.

    A float64 array is returned as is (no copy).
    """
    if hasattr(X, "toarray"):
        raise TypeError("X is a sparse matrix; pass a dense array (X.toarray())")
    try:
        raw = np.asarray(X)
        complex_values = np.iscomplexobj(raw)  # float64 would drop the imaginary part
        if not complex_values:
            X = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"X must be a numeric array of shape (n_samples, n_features): {exc}"
        ) from None
    if complex_values:
        raise ValueError("Complex data not supported: X has complex values; pass their real "
                         "part, modulus or both as features")
    if X.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features), got shape {X.shape}. "
            + ("Reshape your data: X.reshape(-1, 1) for a single feature" if X.ndim == 1
               else "Flatten the features")
        )
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         "required: there is nothing to embed")
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))
        rows = ", ".join(str(r) for r in np.unique(bad[:, 0])[:10])
        raise ValueError(
            f"X has {len(bad)} NaN or infinite value(s) "
            f"(rows {rows}{' …' if len(bad) > 10 else ''}); "
            "impute or drop them first"
        )
    return X


def check_feature_names(names, n_features: int) -> np.ndarray:
    """One string per feature, as the object array scikit-learn keeps in
    ``feature_names_in_``."""
    out = np.empty(len(names), dtype=object)
    out[:] = list(names)
    if len(out) != n_features:
        raise ValueError(f"{len(out)} feature names for {n_features} features; give one "
                         "name per column of X")
    if not all(isinstance(v, str) for v in out):
        raise TypeError("feature names must be strings")
    return out


# P from ctsne's own builders is symmetric to rounding; a P that is not symmetrised at all
# differs by the size of its entries.
_SYMMETRY_TOL = 1e-9
# As the exact objective's check: a normalised P sums to 1 up to rounding.
_SUM_TOL = 1e-6


def check_P(P) -> sp.csr_matrix:
    """``P`` as the input affinities of a fit: CSR float64 (n, n), n ≥ 3, finite,
    non-negative, symmetric, zero diagonal, summing to 1.

    A CSR float64 matrix in canonical form is returned as is (the same object), so that
    models given one P share it; anything else is converted.
    """
    if not (sp.issparse(P) or hasattr(P, "__array__")):
        raise TypeError(f"P must be a sparse matrix or an array (n, n), got "
                        f"{type(P).__name__}")
    if not sp.issparse(P):
        P = np.asarray(P)
        if P.ndim != 2:
            raise ValueError(f"P must be a square matrix (n, n), got shape {P.shape}")
    if P.shape[0] != P.shape[1]:
        raise ValueError(f"P must be a square matrix (n, n), got shape {P.shape}")
    if not (sp.isspmatrix_csr(P) and P.dtype == np.float64 and P.has_canonical_format):
        P = sp.csr_matrix(P, dtype=np.float64, copy=True)
        P.sum_duplicates()  # sorts the indices as well
    n = P.shape[0]
    if n < 3:
        raise ValueError(f"t-SNE needs at least 3 points, got n_samples={n}")
    data = P.data
    if not np.all(np.isfinite(data)) or (data.size and data.min() < 0):
        raise ValueError("P must be finite and non-negative")
    if np.any(P.diagonal() != 0):
        raise ValueError("P must have a zero diagonal (a point is not its own neighbour)")
    total = float(data.sum())
    if abs(total - 1.0) > _SUM_TOL:
        raise ValueError(f"P must sum to 1 over all pairs, it sums to {total:.6g}; "
                         "divide it by its sum")
    T = P.T.tocsr()  # sorted indices, as P's
    same_pattern = (np.array_equal(T.indptr, P.indptr)
                    and np.array_equal(T.indices, P.indices))
    gap = (float(np.abs(T.data - data).max(initial=0.0)) if same_pattern
           else float(abs(P - T).max()))
    if gap > _SYMMETRY_TOL * float(data.max(initial=0.0)):
        raise ValueError(f"P must be symmetric (p_ij = p_ji), max |P − Pᵀ| is {gap:.3g}; "
                         "symmetrise it, e.g. (P + P.T) / 2")
    return P

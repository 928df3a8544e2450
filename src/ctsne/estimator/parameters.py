"""ConditionalTSNE's parameters in one table: defaults, documentation, admissible values.

:data:`PARAMETERS` lists every constructor parameter with its default, its documentation
(the class docstring's Parameters section is built from it), the values it admits and
the error otherwise; :func:`ctsne.estimator.validation.check_params` validates an
estimator's parameters from it. The table loads no numba or scipy, so that the command
line can read the defaults for its help cheaply.
A default that depends on other parameters (β' when neither ``beta`` nor ``alpha`` is
given, ``within_weight`` per affinities mode) is the row's ``resolve``. Ranges that
depend on the data are checked where the data is known; the row names that place
(``checked_later``).

The checks run in ``fit``, not in ``__init__`` or ``set_params`` (scikit-learn's rule:
``clone`` and grid searches set parameters without validating them).
"""

from __future__ import annotations

import inspect
import numbers
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..affinities.options import AFFINITIES, default_within_weight, mode_name
from ..neighbors.search import (
    APPROX_ABOVE,
    BLOCK_TREE_DIMS,
    BLOCK_TREE_MAX_N,
    SEARCH_METHODS,
    TREE_DIMS,
    TREE_MAX_N,
)
from ..prior import DEFAULT_BETA
from ..torch_engine.device import BACKENDS, PRECISIONS
from .states import CONDITIONINGS

__all__ = ["MAX_DIMS", "METHODS", "PARAMETERS", "PARAMETERS_MARKER", "Parameter",
           "check_table", "mode_of", "parameters_section", "resolved", "with_parameters"]

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


def mode_of(names: tuple[str, ...]) -> Callable[[Any], bool]:
    # a mode's name, or a mode object: a built-in one of these names, or one's own
    def accepts(v) -> bool:
        name = mode_name(v)
        return name in names or (not isinstance(v, str) and name is not None
                                 and name not in AFFINITIES)
    return accepts


def _callbacks(v) -> bool:
    if v is None or callable(v):
        return True
    return isinstance(v, (list, tuple)) and all(callable(c) for c in v)


def _random_state(v) -> bool:
    # what numpy's default_rng takes (the start and the approximate search use it)
    if isinstance(v, numbers.Integral):
        return v >= 0  # a negative seed fails only after the neighbour search
    return v is None or isinstance(v, (np.random.Generator, np.random.BitGenerator,
                                       np.random.SeedSequence))


def _resolve_beta(p: Mapping[str, Any]):
    # the paper's rule of thumb unless α' is given instead (Eq. 4 then gives β')
    return DEFAULT_BETA if p["beta"] is None and p["alpha"] is None else p["beta"]


def _resolve_within_weight(p: Mapping[str, Any]):
    if p["within_weight"] is not None:
        return p["within_weight"]
    # "auto" and "balanced" choose each class's share from the data (cross_share): no
    # single value stands for it
    return (default_within_weight("revised") if mode_name(p["affinities"]) == "revised"
            else None)


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
        "{name} must be a positive number, got {value!r}",
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
    "exaggeration": Parameter(
        1.0, "float",
        "Multiplies the attraction after the early-exaggeration phase (1: the ct-SNE "
        "objective). Values above 1 move the map along the attraction-repulsion spectrum "
        "(Böhm, Berens & Kobak, JMLR 2022) towards UMAP-like maps: tighter, more "
        "separated clusters and more continuous structure, at the cost of within-cluster "
        "detail; 4 is close to UMAP's balance of forces.",
        lambda v: _finite(v) and v > 0,
        "{name} must be a finite number > 0 (1 is plain t-SNE's balance), "
        "got {value!r}"),
    "learning_rate": Parameter(
        "auto", 'float or "auto"',
        '"auto" is ``max(n / 4, 50) / exaggeration`` per phase (factor-4 gradient).',
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
        f"{TREE_DIMS} features, {BLOCK_TREE_MAX_N:,} with {BLOCK_TREE_DIMS} to {TREE_DIMS}), "
        "pynndescent above (see :mod:`ctsne.neighbors.search` for the measurements).",
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
        'side; the combination gives about α·β\'/α\'. "auto": the standard P where it '
        "already gives every class its target cross-class share (a prior unrelated to the "
        "data), else the balanced one with each class's share chosen from the data "
        "(:mod:`ctsne.affinities.cross_share`; recorded in ``prior_mixing_.cross_share``).",
        mode_of(AFFINITIES), f"affinities must be one of {AFFINITIES} or a mode object of "
        "ctsne.affinities (e.g. Balanced(within_weight=0.7)), got {value!r}"),
    "within_weight": Parameter(
        None, "float",
        "\"balanced\" (and \"auto\" where it balances): the own-class share of each "
        "point's conditional affinities, in (0, 1); default: chosen per class from the data "
        "(:mod:`ctsne.affinities.cross_share`). \"revised\": α in (0, 1], "
        f"default {default_within_weight('revised')}. Ignored otherwise.",
        resolve=_resolve_within_weight,
        checked_later="check_affinity_params, with affinities (a rule of check_params)"),
    "conditioning": Parameter(
        "auto", '{"auto", "classes", "states"}',
        "How the prior's pair weights are set. \"classes\": the paper's, α' within a "
        "class and β' across. \"states\": β' only between classes in the same state (a "
        "cell type or cluster, estimated inside the fit in a space where the classes are "
        "aligned, or given to ``fit(..., states=...)``), full weight between different "
        "states (:mod:`ctsne.shared_states`), so that a state only some classes hold is not "
        "laid over the others' states. \"auto\": \"states\" where some states are held "
        "by several classes and others by only some, else \"classes\" "
        "(:func:`ctsne.estimator.states.choose_conditioning`); ``conditioning_`` says which.",
        lambda v: v in CONDITIONINGS,
        "conditioning must be 'auto', 'classes' or 'states', got {value!r}"),
    "max_step_norm": Parameter(
        5.0, "float or None", "Cap on each point's step length per iteration (≤ 0: none).",
        lambda v: v is None or (isinstance(v, numbers.Real) and not np.isnan(v)),
        "max_step_norm must be None or a number (≤ 0: no cap), got {value!r}"),
    "random_state": Parameter(
        None, "int, Generator or None",
        "Seeds the initialisation and the approximate neighbour search.", _random_state,
        "random_state must be None, an integer or a numpy Generator (a seed is ≥ 0), got "
        "{value!r}"),
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
    "backend": Parameter(
        "numba", '{"numba", "torch"}',
        '"numba": the CPU engine. "torch": the whole fit (neighbours, P, optimisation) on a '
        "PyTorch device (:mod:`ctsne.torch_engine`; ``pip install ctsne[gpu]``), with "
        'methods "auto", "exact" and "fft".',
        _one_of(*BACKENDS), f"backend must be one of {BACKENDS}, got {{value!r}}",
        checked_later="the torch engine: that torch imports and has the method "
        "(ConditionalTSNE._check_params)"),
    "device": Parameter(
        None, "str",
        'backend="torch": "cpu", "cuda" or "cuda:N"; None is CUDA where torch sees it, '
        'else the CPU. "cuda" without a CUDA device is an error at the start of ``fit``.',
        lambda v: v is None or (isinstance(v, str) and re.fullmatch(r"cpu|cuda(:\d+)?", v)
                                is not None),
        "device must be None, 'cpu', 'cuda' or 'cuda:N', got {value!r}",
        checked_later="torch_engine.device.resolve_device: that the device exists"),
    "precision": Parameter(
        "auto", '{"auto", "float32", "float64"}',
        'backend="torch": the type of the embedding and the forces; "auto" is float32 on '
        "a GPU and float64 on the CPU. P, the calibration and the KL are float64 always.",
        _one_of(*PRECISIONS), f"precision must be one of {PRECISIONS}, got {{value!r}}"),
}


def _default_text(value) -> str:
    if value is None:
        return "optional"
    if isinstance(value, str):
        return f'default "{value}"'
    if isinstance(value, float):
        return f"default {value:g}"
    return f"default {value}"


def parameters_section(table: Mapping[str, Parameter] | None = None) -> str:
    """The numpydoc "Parameters" section of an estimator, from its ``table`` (default
    :data:`PARAMETERS`, ConditionalTSNE's)."""
    lines = ["Parameters", "----------"]
    for name, row in (PARAMETERS if table is None else table).items():
        lines.append(f"{name} : {row.kind}, {_default_text(row.default)}")
        lines += textwrap.wrap(row.doc, 88, initial_indent="    ", subsequent_indent="    ",
                               break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines)


# The class docstring's line that parameters_section() replaces.
PARAMETERS_MARKER = "Parameters: from ctsne.estimator.parameters.PARAMETERS."


def with_parameters(docstring: str | None, table: Mapping[str, Parameter] | None = None,
                    marker: str = PARAMETERS_MARKER) -> str | None:
    """``docstring`` (dedented) with the line ``marker`` replaced by ``table``'s section."""
    if docstring is None:  # python -OO drops docstrings
        return None
    return inspect.cleandoc(docstring).replace(marker, parameters_section(table))


def check_table(table: Mapping[str, Parameter], params: Mapping[str, Any],
                names: Mapping[str, str] | None = None) -> None:
    """Raise ValueError naming the first parameter whose row in ``table`` refuses its value.

    Parameters
    ----------
    table : mapping
        Parameter name -> :class:`Parameter`.
    params : mapping
        ``estimator.get_params()``: a value for every parameter of the table.
    names : mapping, optional
        Parameter -> how the messages call it (the command line's option, "--dims" for
        ``n_components``); default the parameter's name.
    """
    names = names or {}
    for name, row in table.items():
        value = params[name]
        if row.accepts is not None and not row.accepts(value):
            raise ValueError(row.message.format(name=names.get(name, name), value=value))


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

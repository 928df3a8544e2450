"""ConditionalUMAP's and ConditionalLargeVis's parameters: one table each, and their checks.

As :mod:`ctsne.estimator.parameters` is for ConditionalTSNE: every constructor parameter
with its default, documentation, admissible values and error (the class docstrings'
Parameters sections are built from these tables), and the rules over several
parameters. The rows the estimators share with ConditionalTSNE (the prior's weights,
the neighbour search, threads) are that table's rows, so that a default changed there
changes here. Like that table, this module loads no numba or scipy, so that a command
line can read the defaults cheaply; the checks that need the data's size run in ``fit``
(:func:`check_embedding_params`).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..affinities.options import (
    AFFINITIES,
    check_affinity_params,
)
from ..forces.curve import check_curve
from ..prior import DEFAULT_BETA
from .parameters import (
    PARAMETERS,
    Parameter,
    _finite,
    _integer,
    _random_state,
    check_table,
    mode_of,
)
from .validation import check_metric, check_one_weight, check_perplexity

__all__ = ["EPOCHS_LARGE", "EPOCHS_SMALL", "LARGEVIS_AFFINITIES", "LARGEVIS_PARAMETERS",
           "SMALL_UP_TO", "UMAP_AFFINITIES", "UMAP_PARAMETERS", "check_embedding_options",
           "check_embedding_params", "default_epochs"]

# umap-learn's epoch rule (its fit's default): an epoch costs time in proportion to the
# edges, so large graphs get fewer epochs; their maps still settle, having more
# points pulling each region into place.
EPOCHS_SMALL = 500
EPOCHS_LARGE = 200
SMALL_UP_TO = 10_000

UMAP_AFFINITIES = ("auto", "standard", "balanced")
# LargeVis's graph is t-SNE's P, so every mode of ConditionalTSNE applies to it.
LARGEVIS_AFFINITIES = AFFINITIES
INITS = ("spectral", "pca", "random")


def default_epochs(n: int) -> int:
    """Epochs of a fit on ``n`` points when ``n_epochs`` is None (umap-learn's rule)."""
    return EPOCHS_SMALL if n <= SMALL_UP_TO else EPOCHS_LARGE


def _positive(v) -> bool:
    return _finite(v) and v > 0


def _init(v) -> bool:
    if isinstance(v, str):
        return v in INITS
    return hasattr(v, "__array__") or isinstance(v, (list, tuple))


def _row(name: str, doc: str) -> Parameter:
    """ConditionalTSNE's row ``name`` with this estimator's documentation."""
    return replace(PARAMETERS[name], doc=doc)


_N_NEIGHBORS = Parameter(
    15, "int",
    "Size of each point's neighbourhood, the point itself counted (as umap-learn counts "
    "it): the graph joins each point to its ``n_neighbors − 1`` nearest others.",
    _integer(2), "{name} must be an integer ≥ 2, got {value!r}",
    checked_later="below the number of points (check_embedding_params with n)")

_SHARED_HEAD = {
    "n_components": Parameter(
        2, "int", "Output dimensions.", _integer(1),
        "{name} must be an integer ≥ 1, got {value!r}"),
}

_PRIOR_ROWS = {
    "beta": _row(
        "beta",
        "β', the weight of the repulsion between points of different prior classes; None "
        f"means {DEFAULT_BETA} (ct-SNE's rule of thumb) unless ``alpha`` is given. "
        "α' (same class) follows from ``α'ρ + β'(1 − ρ) = 1`` (ρ: the share of same-class "
        "pairs), which keeps the expected repulsion per uniform negative sample equal to "
        "the unconditioned method's."),
    "alpha": _row("alpha", "α', the weight of the repulsion within a prior class, instead of "
                  "β' (give one of the two, not both)."),
    "combine": PARAMETERS["combine"],
    "missing": PARAMETERS["missing"],
}

_SGD_ROWS = {
    "n_epochs": Parameter(
        None, "int",
        f"Passes over the graph's edges; None means {EPOCHS_SMALL} up to "
        f"{SMALL_UP_TO:,} points and {EPOCHS_LARGE} above (umap-learn's rule).",
        lambda v: v is None or (isinstance(v, numbers.Integral) and v >= 1),
        "{name} must be None or an integer ≥ 1 (the number of passes over the edges), "
        "got {value!r}",
        checked_later="its default depends on n (default_epochs, in fit)"),
    "learning_rate": Parameter(
        1.0, "float", "Initial step of the SGD, decreasing linearly to 0 over the epochs.",
        _positive, "learning_rate must be a finite number > 0, got {value!r}"),
    "negative_sample_rate": Parameter(
        5, "int",
        "Negative samples per positive edge sample. With a prior they are drawn by class "
        "in proportion to their pair weights (each carrying the same weight), so that "
        "small β' wastes none of them.",
        _integer(1), "negative_sample_rate must be an integer ≥ 1, got {value!r}"),
}


def _repulsion_row(default: float) -> Parameter:
    return Parameter(
        default, "float", "γ, the weight of each negative sample's repulsion.",
        _positive, "repulsion_strength must be a finite number > 0, got {value!r}")


def _init_row(graph: str) -> Parameter:
    return Parameter(
        "spectral", '{"spectral", "pca", "random"} or ndarray (n, n_components)',
        f'"spectral": the leading eigenvectors of the {graph}\'s normalised Laplacian (the '
        "graph actually used, so a label-balanced graph gives a start that does not show "
        'the prior); "pca": the principal components of X (with a prior, of X with each '
        'class\'s mean removed, as ConditionalTSNE starts); "random": uniform. Every start, '
        "a given array included, is rescaled into the box [0, 10]ⁿ as umap-learn does.",
        _init, "init must be 'spectral', 'pca', 'random' or an array, got {value!r}",
        checked_later="fit: an array's shape and values")


def _affinities_row(modes: tuple[str, ...], doc: str) -> Parameter:
    return Parameter(
        "auto", "{" + ", ".join(f'"{m}"' for m in modes) + "}", doc,
        mode_of(modes), f"affinities must be one of {modes} or a mode object of "
        "ctsne.affinities of these names, got {value!r}")


_TAIL = {
    "random_state": Parameter(
        None, "int, Generator or None",
        "Seeds the start, the approximate neighbour search and the SGD's sampling; a seed "
        "gives the same embedding bit for bit on any number of threads. None: a fresh seed.",
        _random_state,
        "random_state must be None, an integer or a numpy Generator, got {value!r}"),
    "n_jobs": PARAMETERS["n_jobs"],
    "verbose": Parameter(
        False, "bool",
        "Progress on stderr: the graph (and whether the prior separates the data), then the "
        "epochs (tqdm bars on a terminal, periodic lines otherwise).",
        lambda v: isinstance(v, (bool, numbers.Integral)),
        "verbose must be True or False, got {value!r}"),
    "callbacks": _row(
        "callbacks",
        "Each is called as ``callback(epoch, None, embedding)`` every "
        "``callbacks_every_iters`` epochs and after the last one of a fit (the second "
        "argument, ConditionalTSNE's KL divergence, is None: the SGD never evaluates its "
        "loss); one that returns True stops the fit, which keeps the embedding of the "
        "last epoch done. ``transform`` calls none."),
    "callbacks_every_iters": _row("callbacks_every_iters", "Epochs between callback calls."),
    "backend": replace(
        PARAMETERS["backend"],
        doc='"numba": the CPU engine. "torch": the graph (the neighbour search, the '
        "memberships or P, their symmetrisation) and the SGD on a PyTorch device "
        "(:mod:`ctsne.torch_engine`; ``pip install ctsne[gpu]``). An epoch then runs in "
        "two synchronous passes (every attraction from the epoch's start, then every "
        "negative from the moved map), where the CPU engine moves a point edge after "
        "edge: the maps agree in quality, not bit for bit. ``transform`` runs on the "
        "CPU engine.",
        checked_later="the torch engine: that torch imports and the device is there "
        "(GraphEmbedding.fit_transform, before the search)"),
    "device": PARAMETERS["device"],
    "precision": _row(
        "precision",
        'backend="torch": the type of the map and the steps; "auto" is float32 on a GPU '
        "and float64 on the CPU. The graph is float64 always."),
}

_WITHIN = ("Own-class share of each point's affinities in the label-balanced graph, in "
           "(0, 1); default: chosen per class from the data, as ConditionalTSNE chooses it "
           "(:mod:`ctsne.affinities.cross_share`)")

# "balanced" lays out the label-balanced P with its own relative weights (P / max P),
# sampled as UMAP samples memberships. Measured on tests/test_umap.py's separated set
# (2 batches × 4 clusters, batch 10-NN homogeneity, chance 0.5): P / max 0.535 (SGD 1.0 s);
# P over its 99th percentile, clipped at 1, 0.515 (1.5 s); rows scaled to a largest
# entry of 1 and joined by fuzzy union, as memberships are, 0.508 (2.6 s); clusters 1.0
# in all three. The plain ratio is kept: nearly as good, cheapest, and it is P's.
# In the signature's order; check_embedding_params checks them in this order.
UMAP_PARAMETERS: dict[str, Parameter] = {
    "n_neighbors": _N_NEIGHBORS,
    **_SHARED_HEAD,
    "min_dist": Parameter(
        0.1, "float",
        "Smallest distance between embedded points: with ``spread`` it sets the curve "
        "``1 / (1 + a·d^(2b))`` (a, b fitted to it, umap-learn's rule).",
        lambda v: _finite(v) and v >= 0, "{name} must be a finite number ≥ 0, got {value!r}",
        checked_later="not above spread (a rule of check_embedding_params)"),
    "spread": Parameter(
        1.0, "float", "Scale of the embedded neighbourhoods (with ``min_dist``).",
        _positive, "spread must be a finite number > 0, got {value!r}"),
    **_PRIOR_ROWS,
    **_SGD_ROWS,
    "repulsion_strength": _repulsion_row(1.0),
    "init": _init_row("fuzzy graph"),
    "affinities": _affinities_row(
        UMAP_AFFINITIES,
        '"standard": UMAP\'s fuzzy graph. "balanced": the label-balanced affinities of '
        "ConditionalTSNE (:func:`ctsne.affinities.balanced.balanced_affinities` at "
        "perplexity ``(n_neighbors − 1)/3``, so on ``n_neighbors − 1`` neighbours from a "
        "point's own class and the other classes), a symmetric P whose entries, divided by "
        "the largest, are the edge weights: the graph then joins classes that the input "
        'space keeps apart. "auto": ConditionalTSNE\'s rule '
        "(:mod:`ctsne.affinities.cross_share`) on the fuzzy graph's cross-class shares: "
        "the balanced graph with each class's target share where the classes hold "
        "counterparts of each other and the fuzzy graph falls short of it (or where the "
        "prior separates the data), else the fuzzy graph (``affinities_`` says which, "
        "``prior_mixing_.cross_share`` why)."),
    "within_weight": _row("within_weight", _WITHIN + "; ignored otherwise."),
    "conditioning": PARAMETERS["conditioning"],
    "neighbors": PARAMETERS["neighbors"],
    "metric": PARAMETERS["metric"],
    "local_connectivity": Parameter(
        1.0, "float",
        "Nearest neighbours each point is fully connected to (umap-learn's): distances are "
        "measured from the local_connectivity-th neighbour's.",
        lambda v: _finite(v) and v >= 0,
        "local_connectivity must be a finite number ≥ 0, got {value!r}"),
    "set_op_mix_ratio": Parameter(
        1.0, "float",
        "1 is the fuzzy union of the directed graph and its transpose, 0 their fuzzy "
        "intersection, between them a mix.",
        lambda v: _finite(v) and 0 <= v <= 1,
        "set_op_mix_ratio must be a number in [0, 1], got {value!r}"),
    **_TAIL,
}

LARGEVIS_PARAMETERS: dict[str, Parameter] = {
    "perplexity": replace(
        PARAMETERS["perplexity"],
        doc="Effective number of neighbours of t-SNE's P (the graph's edge weights); "
        "``k = min(n − 1, 3·perplexity)`` neighbours.",
        checked_later="below n − 1 for n points (check_embedding_params with n)"),
    **_SHARED_HEAD,
    **_PRIOR_ROWS,
    **_SGD_ROWS,
    "repulsion_strength": _repulsion_row(7.0),
    "init": _init_row("graph"),
    "affinities": _affinities_row(
        LARGEVIS_AFFINITIES,
        "The graph, as ConditionalTSNE's ``affinities`` builds P: \"standard\" t-SNE's P, "
        '"balanced" the label-balanced P, "revised" Heiter et al.\'s revised ct-SNE P, '
        '"auto" the standard P switched to the balanced one when the prior separates the '
        "data. The edge weights are P's entries divided by the largest."),
    "within_weight": PARAMETERS["within_weight"],
    "conditioning": PARAMETERS["conditioning"],
    "neighbors": PARAMETERS["neighbors"],
    "metric": PARAMETERS["metric"],
    **_TAIL,
}


def _curve(p: Mapping[str, Any]) -> None:
    if "min_dist" in p:  # UMAP's curve; LargeVis's is fixed
        check_curve(p["spread"], p["min_dist"])


def check_embedding_options(table: Mapping[str, Parameter], params: Mapping[str, Any],
                            names: Mapping[str, str] | None = None) -> None:
    """Raise ValueError naming the first parameter that ``table`` or a rule refuses, of
    the checks that need no data (the command line runs them before reading any).

    Parameters
    ----------
    table : mapping
        :data:`UMAP_PARAMETERS` or :data:`LARGEVIS_PARAMETERS`.
    params : mapping
        ``estimator.get_params()``.
    names : mapping, optional
        Parameter -> how the messages call it (e.g. a command-line option).
    """
    check_table(table, params, names)
    _curve(params)
    check_affinity_params(params["affinities"], params["within_weight"])
    check_one_weight(params)


def check_embedding_params(table: Mapping[str, Parameter], params: Mapping[str, Any],
                           n: int) -> None:
    """Raise ValueError naming the first parameter that ``table`` or a rule refuses.

    Parameters
    ----------
    table : mapping
        :data:`UMAP_PARAMETERS` or :data:`LARGEVIS_PARAMETERS`.
    params : mapping
        ``estimator.get_params()``.
    n : int
        Number of points to embed.
    """
    check_embedding_options(table, params)
    if n < 3:
        raise ValueError(f"an embedding needs at least 3 points, got n_samples={n}")
    if "n_neighbors" in params and params["n_neighbors"] >= n:
        raise ValueError(f"n_neighbors={params['n_neighbors']} is too large for {n} points: "
                         f"it counts the point itself, so it must be below n = {n}; use "
                         f"n_neighbors ≤ {n - 1} or more points")
    if "perplexity" in params:
        check_perplexity(params["perplexity"], n)
    check_metric(params["metric"])

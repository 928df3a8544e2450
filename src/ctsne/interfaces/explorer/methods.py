"""Which method makes a step's map: ct-SNE (the default), conditional UMAP or conditional
LargeVis.

ct-SNE steps share one P (:mod:`ctsne.interfaces.explorer.refit`). A UMAP or LargeVis step
is a whole fit of :class:`~ctsne.ConditionalUMAP` / :class:`~ctsne.ConditionalLargeVis`
(its own neighbour graph, its own start) in a background thread, with the session
model's seed and thread count and the estimator's defaults for the rest; those estimators
report no progress while they run, so the page shows the elapsed time, and Cancel drops
the map when the run ends instead of stopping it.
"""

from __future__ import annotations

import warnings

from ...estimator import registry
from .refit import MapJob

__all__ = ["METHODS", "method_title", "graph_estimator", "GraphJob", "check_method"]

# method -> (name without a prior, name with one), from the registry of methods
METHODS = {m.key: (m.title, m.conditional_title) for m in registry.METHODS}


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else ValueError naming them."""
    return registry.method(method).key


def method_title(method: str, conditional: bool) -> str:
    """The method's name as a step title starts (``conditional``: with a prior)."""
    found = registry.method(method)
    return found.conditional_title if conditional else found.title


def graph_estimator(method: str, base, beta: float | None):
    """A :class:`~ctsne.ConditionalUMAP` (``"umap"``) or :class:`~ctsne.ConditionalLargeVis`
    (``"largevis"``) with β' ``beta`` and ``base``'s seed and threads; LargeVis also takes
    ``base``'s perplexity."""
    graph = [m.key for m in registry.METHODS if m.key != "tsne"]
    if method not in graph:
        raise ValueError(f"not a graph method: {method!r} ({' or '.join(graph)})")
    common = {"beta": beta, "random_state": base.random_state, "n_jobs": base.n_jobs}
    if method == "largevis":  # LargeVis's P is t-SNE's: the session's perplexity
        common["perplexity"] = base.perplexity
    return registry.method(method).estimator(**common)


class GraphJob(MapJob):
    """A conditional UMAP or LargeVis fit of ``X`` with ``prior`` in a background thread.

    Parameters
    ----------
    method : {"umap", "largevis"}
    base : ConditionalTSNE
        The session's model: seed, threads (and perplexity for LargeVis).
    X, prior, beta
        Data, prior label arrays (or None), β'.
    """

    unit = "epoch"

    def __init__(self, method: str, base, X, prior, beta: float | None):
        estimator = graph_estimator(method, base, beta if prior is not None else None)

        def fit(callbacks, every):
            # live frames every `every` epochs; the reporter's True (Cancel) stops the SGD
            estimator.set_params(callbacks=callbacks, callbacks_every_iters=every)
            with warnings.catch_warnings():
                # the separation warning is for scripts; the page shows the map itself
                warnings.simplefilter("ignore", UserWarning)
                return estimator.fit(X, prior)

        from ...estimator.umap_parameters import default_epochs

        epochs = estimator.n_epochs or default_epochs(len(X))
        super().__init__(fit, epochs, f"{method_title(method, prior is not None)}: neighbour "
                         "graph")

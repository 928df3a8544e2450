"""Which method makes a step's map: ct-SNE (the default), conditional UMAP or conditional
LargeVis (issue 19).

ct-SNE steps share one P (:mod:`ctsne.interfaces.explorer.refit`). A UMAP or LargeVis step
is a whole fit of :class:`~ctsne.ConditionalUMAP` / :class:`~ctsne.ConditionalLargeVis`
(its own neighbour graph, its own start) in a background thread, with the session
model's seed and thread count and the estimator's defaults for the rest; those estimators
report no progress while they run, so the page shows the elapsed time, and Cancel drops
the map when the run ends instead of stopping it.
"""

from __future__ import annotations

import warnings

from .refit import MapJob

__all__ = ["METHODS", "method_title", "graph_estimator", "GraphJob", "check_method"]

# method -> (name without a prior, name with one)
METHODS = {"tsne": ("t-SNE", "ct-SNE"),
           "umap": ("UMAP", "conditional UMAP"),
           "largevis": ("LargeVis", "conditional LargeVis")}


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else ValueError naming them."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    return method


def method_title(method: str, conditional: bool) -> str:
    """The method's name as a step title starts (``conditional``: with a prior)."""
    return METHODS[check_method(method)][1 if conditional else 0]


def graph_estimator(method: str, base, beta: float | None):
    """A :class:`~ctsne.ConditionalUMAP` (``"umap"``) or :class:`~ctsne.ConditionalLargeVis`
    (``"largevis"``) with β' ``beta`` and ``base``'s seed and threads; LargeVis also takes
    ``base``'s perplexity."""
    from ...estimator.largevis import ConditionalLargeVis
    from ...estimator.umap import ConditionalUMAP

    common = {"beta": beta, "random_state": base.random_state, "n_jobs": base.n_jobs}
    if method == "umap":
        return ConditionalUMAP(**common)
    if method == "largevis":
        return ConditionalLargeVis(perplexity=base.perplexity, **common)
    raise ValueError(f"not a graph method: {method!r} (umap or largevis)")


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

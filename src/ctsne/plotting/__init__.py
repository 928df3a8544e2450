"""Figures of embeddings: colour and marker by labels, side-by-side panels, selections.

The public functions are re-exported here (``ctsne.plotting.plot_embedding``); they live in
:mod:`~ctsne.plotting.figures` (drawing embeddings) and :mod:`~ctsne.plotting.scores`
(how much a label shows) and :mod:`~ctsne.plotting.states` (what shared-state
conditioning found).
"""

from .figures import (
    label_colors,
    plot_comparison,
    plot_embedding,
    plot_embeddings,
    save_figure,
)
from .scores import plot_scores, prior_scores
from .states import plot_states

__all__ = ["label_colors", "plot_comparison", "plot_embedding", "plot_embeddings",
           "plot_scores", "plot_states", "prior_scores", "save_figure"]

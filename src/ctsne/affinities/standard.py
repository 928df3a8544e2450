"""t-SNE's input affinities P from X: k nearest neighbours, calibrated, symmetrised.

k = 3·perplexity neighbours (:mod:`ctsne.neighbors.search`, warning about ties), each row
calibrated to the perplexity (:mod:`ctsne.affinities.calibration`), ``(C + Cᵀ) / 2n``
(:mod:`ctsne.affinities.symmetry`): the standard graph of
:class:`ctsne.affinities.graphs.PerplexityGraph`, here for X alone.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..checks import to_safe_scale
from ..neighbors.provider import NeighborLists
from .graphs import ConditionalTable, PerplexityGraph

__all__ = ["ConditionalTable", "joint_affinities", "standard_conditional"]


def standard_conditional(X: np.ndarray, perplexity: float, neighbors: str = "auto",
                         metric: str = "euclidean", random_state: int | None = None,
                         n_jobs: int | None = None, progress=None) -> ConditionalTable:
    """The standard P's neighbours, calibrated to ``perplexity`` row by row.

    Parameters
    ----------
    X : ndarray (n, p)
        At a safe scale already (:func:`ctsne.checks.to_safe_scale`).
    perplexity : float
        Must be below ``k = min(n − 1, 3·perplexity)``; checked by the caller.
    neighbors, metric, random_state, n_jobs, progress
        As in :class:`ctsne.neighbors.provider.NeighborLists`.

    Returns
    -------
    ConditionalTable
        Its :meth:`~ctsne.affinities.graphs.ConditionalTable.joint` is the standard P.
    """
    lists = NeighborLists(X, method=neighbors, metric=metric, random_state=random_state,
                          n_jobs=n_jobs, progress=progress)
    return PerplexityGraph(perplexity).standard(lists)


def joint_affinities(X: np.ndarray, perplexity: float, neighbors: str = "auto",
                     metric: str = "euclidean", random_state: int | None = None,
                     n_jobs: int | None = None, progress=None) -> sp.csr_matrix:
    """Symmetric sparse P summing to 1: ``(P_cond + P_condᵀ) / 2n``.

    Parameters
    ----------
    X : ndarray (n, p)
        Data of extreme magnitude is rescaled by a power of two first (exact), so P does
        not depend on the overall scale of X.
    perplexity : float
        Must be below ``k = min(n − 1, 3·perplexity)``; checked by the caller.
    neighbors, metric, random_state, n_jobs, progress
        As in :class:`ctsne.neighbors.provider.NeighborLists`.
    """
    return standard_conditional(to_safe_scale(X), perplexity, neighbors, metric,
                                random_state, n_jobs, progress).joint()

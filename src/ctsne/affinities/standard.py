"""t-SNE's input affinities P from X: k nearest neighbours, calibrated, symmetrised.

The steps, in the one place that chains them (:func:`standard_conditional`, then
:meth:`ConditionalTable.joint`): k = 3·perplexity neighbours
(:mod:`ctsne.neighbors.search`, warning about ties), each row calibrated to the
perplexity (:mod:`ctsne.affinities.calibration`), ``(P_cond + P_condᵀ) / 2n``
(:mod:`ctsne.affinities.symmetry`). :func:`joint_affinities` is the whole of it;
:func:`ctsne.affinities.modes.input_affinities` stops after the conditional table to
measure it against the prior first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..checks import to_safe_scale, warn_ties
from ..neighbors.search import nearest_neighbors
from .calibration import calibrate
from .options import n_neighbors_for
from .symmetry import symmetrize

__all__ = ["ConditionalTable", "joint_affinities", "standard_conditional"]


@dataclass
class ConditionalTable:
    """The standard P before symmetrisation: each point's neighbours and ``p_{j|i}``.

    Attributes
    ----------
    idx : ndarray of int (n, k)
        Each point's k nearest neighbours.
    cond : ndarray (n, k)
        ``p_{j|i}`` of those neighbours, rows summing to 1.
    dist : ndarray (n, k) or None
        The neighbours' distances, where kept (``keep_distances=True``); otherwise they
        were overwritten by ``cond``.
    """

    idx: np.ndarray
    cond: np.ndarray
    dist: np.ndarray | None = None

    def joint(self) -> sp.csr_matrix:
        """Symmetric sparse P summing to 1: ``(P_cond + P_condᵀ) / 2n``.

        Reorders ``idx`` and ``cond`` in place (see
        :func:`ctsne.affinities.symmetry.symmetrize`).
        """
        return symmetrize(self.idx, self.cond)


def standard_conditional(
    X: np.ndarray,
    perplexity: float,
    neighbors: str = "auto",
    metric: str = "euclidean",
    random_state: int | None = None,
    n_jobs: int | None = None,
    progress=None,
    keep_distances: bool = False,
    lists: tuple[np.ndarray, np.ndarray] | None = None,
) -> ConditionalTable:
    """The standard P's neighbours, calibrated to ``perplexity`` row by row.

    Parameters
    ----------
    X : ndarray (n, p)
        At a safe scale already (:func:`ctsne.checks.to_safe_scale`).
    perplexity : float
        Must be below ``k = min(n − 1, 3·perplexity)``; checked by the caller.
    neighbors, metric, random_state, n_jobs, progress
        Passed to :func:`ctsne.neighbors.search.nearest_neighbors`.
    keep_distances : bool
        Keep the neighbours' distances besides ``p_{j|i}`` (for a search that reuses the
        lists); otherwise they are calibrated in place, saving an (n, k) table.
    lists : tuple (idx, dist), optional
        The search's answer, found otherwise
        (:func:`ctsne.neighbors.own_first.standard_through_classes`); not searched again.

    Returns
    -------
    ConditionalTable
        Its :meth:`~ConditionalTable.joint` is the standard P.
    """
    k = n_neighbors_for(perplexity, X.shape[0])
    idx, dist = lists if lists is not None else nearest_neighbors(
        X, k, method=neighbors, metric=metric, random_state=random_state, n_jobs=n_jobs,
        progress=progress)
    warn_ties(dist, perplexity, X, idx)
    cond = calibrate(dist, perplexity, out=None if keep_distances else dist)
    return ConditionalTable(idx, cond, dist if keep_distances else None)


def joint_affinities(
    X: np.ndarray,
    perplexity: float,
    neighbors: str = "auto",
    metric: str = "euclidean",
    random_state: int | None = None,
    n_jobs: int | None = None,
    progress=None,
) -> sp.csr_matrix:
    """Symmetric sparse P summing to 1: ``(P_cond + P_condᵀ) / 2n``.

    Parameters
    ----------
    X : ndarray (n, p)
        Data of extreme magnitude is rescaled by a power of two first (exact), so P does
        not depend on the overall scale of X.
    perplexity : float
        Must be below ``k = min(n − 1, 3·perplexity)``; checked by the caller.
    neighbors, metric, random_state, n_jobs, progress
        Passed to :func:`ctsne.neighbors.search.nearest_neighbors`.
    """
    return standard_conditional(to_safe_scale(X), perplexity, neighbors, metric,
                                random_state, n_jobs, progress).joint()

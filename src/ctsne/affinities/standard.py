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
from ..neighbors.by_class import own_class_rows
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
    own_rows : ndarray of bool (n,) or None
        With ``keep_own_class``: the rows whose whole list lies in their own class.
    dist : ndarray (own_rows.sum(), k) or None
        Those rows' distances, in row order (the others were overwritten by ``cond``).
    """

    idx: np.ndarray
    cond: np.ndarray
    own_rows: np.ndarray | None = None
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
    keep_own_class: np.ndarray | None = None,
    lists: tuple[np.ndarray, np.ndarray] | None = None,
    index=None,
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
    keep_own_class : ndarray of int (n,), optional
        Prior classes: the distances of the rows whose list lies wholly in their own class
        are kept besides ``p_{j|i}`` (a label-balanced P reuses those lists); every row
        is calibrated in place. Where the prior does not separate the data few rows
        qualify, so "auto" then pays almost nothing for keeping them (an (n, k) copy of
        all distances cost ~5 % of the standard P at 200,000 points).
    lists : tuple (idx, dist), optional
        The search's answer, found otherwise
        (:func:`ctsne.neighbors.own_first.standard_through_classes`); not searched again.
        Its ``dist`` is overwritten by the calibration, as the search's own would be.
    index : ExactIndex, optional
        The exact search's index of ``X``, built already
        (:func:`ctsne.neighbors.search.nearest_neighbors`).

    Returns
    -------
    ConditionalTable
        Its :meth:`~ConditionalTable.joint` is the standard P.
    """
    k = n_neighbors_for(perplexity, X.shape[0])
    idx, dist = lists if lists is not None else nearest_neighbors(
        X, k, method=neighbors, metric=metric, random_state=random_state, n_jobs=n_jobs,
        progress=progress, index=index)
    warn_ties(dist, perplexity, X, idx)
    own_rows = kept = None
    if keep_own_class is not None:
        own_rows = own_class_rows(idx, keep_own_class)
        kept = dist[own_rows]
    cond = calibrate(dist, perplexity, out=dist)
    return ConditionalTable(idx, cond, own_rows, kept)


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

"""How a method turns neighbour lists into its input graph: t-SNE's P or UMAP's fuzzy graph.

The affinity modes (:mod:`ctsne.affinities.modes`) decide *which* lists a fit's graph is
built from (the standard lists, or own-class and other-class lists) and with what weight
per class; a graph family decides how lists become edge weights. Two families:

:class:`PerplexityGraph`
    t-SNE's P (ConditionalTSNE, ConditionalLargeVis): each row a Gaussian calibrated to the
    perplexity, ``P = (C + Cᵀ) / 2n``; label-balanced and revised P by blocks calibrated
    apart (:mod:`ctsne.affinities.balanced`).
:class:`FuzzyGraph`
    UMAP's graph (ConditionalUMAP): each row's fuzzy memberships, their fuzzy union
    (:mod:`ctsne.affinities.fuzzy`); the label-balanced graph is the balanced P on
    ``n_neighbors − 1`` neighbours with every entry kept, divided by its largest entry.

A family's :meth:`standard` returns a :class:`StandardGraph`: the standard graph before it
is finished, which tells the "auto" rule how much of it crosses the prior's classes.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..checks import warn_ties
from .mixing import (
    PriorMixing,
    labelled_table,
    prior_mixing,
    random_level,
    sampled_rows,
    table_mixing_and_ratio,
)
from .options import n_neighbors_for
from .symmetry import symmetrize

__all__ = ["ConditionalTable", "FinishedGraph", "FuzzyGraph", "GivenStandard",
           "PerplexityGraph", "StandardGraph", "graph_cross_ratio"]


class StandardGraph:
    """A standard graph as the "auto" rule reads it, finished by :meth:`finish`."""

    def diagnose(self, codes: np.ndarray) -> tuple[PriorMixing, np.ndarray]:
        """The cross-class shares of the finished graph and each point's cross ratio
        (:func:`ctsne.affinities.mixing.point_cross_ratio`)."""
        raise NotImplementedError  # pragma: no cover

    def diagnose_labelled(self, codes: np.ndarray, labelled: np.ndarray
                          ) -> tuple[PriorMixing, np.ndarray, np.ndarray]:
        """:meth:`diagnose` among the labelled points only, and their renumbered codes."""
        raise NotImplementedError  # pragma: no cover

    def finish(self) -> sp.csr_matrix:
        """The graph itself (may reuse this object's arrays in place)."""
        raise NotImplementedError  # pragma: no cover


class ConditionalTable(StandardGraph):
    """t-SNE's P before symmetrisation: each point's neighbours and ``p_{j|i}``; the
    diagnostics read this table in one pass.

    Attributes
    ----------
    idx : ndarray of int (n, k)
    cond : ndarray (n, k)
        ``p_{j|i}`` of those neighbours, rows summing to 1.
    """

    def __init__(self, idx: np.ndarray, cond: np.ndarray):
        self.idx, self.cond = idx, cond

    def diagnose(self, codes):
        return table_mixing_and_ratio(self.idx, self.cond, codes)

    def diagnose_labelled(self, codes, labelled):
        sub_idx, sub_cond, sub_codes = labelled_table(self.idx, self.cond, codes, labelled)
        return (*table_mixing_and_ratio(sub_idx, sub_cond, sub_codes), sub_codes)

    def finish(self):
        """Symmetric sparse P summing to 1, ``(C + Cᵀ) / 2n`` (reorders ``idx`` and
        ``cond`` in place, :func:`ctsne.affinities.symmetry.symmetrize`)."""
        return symmetrize(self.idx, self.cond)

    joint = finish


class FinishedGraph(StandardGraph):
    """A standard graph built whole (UMAP's fuzzy union): the diagnostics read its rows."""

    def __init__(self, G: sp.csr_matrix):
        self.G = G

    def diagnose(self, codes):
        return prior_mixing(self.G, codes), graph_cross_ratio(self.G, codes)

    def diagnose_labelled(self, codes, labelled):
        labelled = np.asarray(labelled, dtype=bool)
        sub = self.G[labelled][:, labelled].tocsr()
        _, sub_codes = np.unique(np.asarray(codes)[labelled], return_inverse=True)
        return prior_mixing(sub, sub_codes), graph_cross_ratio(sub, sub_codes), sub_codes

    def finish(self):
        return self.G


def graph_cross_ratio(G: sp.spmatrix, codes: np.ndarray) -> np.ndarray:
    """Each row's share of weight on other classes, over its class's random level.

    The counterpart of :func:`ctsne.affinities.mixing.point_cross_ratio` for a graph
    built whole: ``r_i = (Σ_{j ∉ class(i)} g_ij / Σ_j g_ij) / e_{class(i)}``.
    """
    G = sp.csr_matrix(G)
    codes = np.asarray(codes, dtype=np.int64)
    n = G.shape[0]
    rows = np.repeat(np.arange(n), np.diff(G.indptr))
    across = codes[G.indices] != codes[rows]
    total = np.bincount(rows, weights=G.data, minlength=n)
    cross = np.bincount(rows[across], weights=G.data[across], minlength=n)
    expected = random_level(np.bincount(codes), n)[codes]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, cross / np.where(total > 0, total, 1.0), 0.0)
        return np.where(expected > 0, share / np.where(expected > 0, expected, 1.0), 1.0)


class PerplexityGraph:
    """t-SNE's P at a perplexity: k = 3·perplexity neighbours per row.

    Parameters
    ----------
    perplexity : float
    """

    supports = ("auto", "standard", "balanced", "revised", "precomputed")

    def __init__(self, perplexity: float):
        self.perplexity = float(perplexity)

    def k(self, n: int) -> int:
        """Neighbours per list for ``n`` points."""
        return n_neighbors_for(self.perplexity, n)

    def standard(self, lists, search=None) -> StandardGraph:
        """The standard P of ``lists`` (:class:`ctsne.neighbors.provider.NeighborLists`),
        its rows calibrated in the lists' own arrays.

        ``search``: callable(k) -> (idx, dist), the provider's call that finds the lists
        (default ``lists.standard``).
        """
        from .calibration import calibrate

        idx, dist = (lists.standard if search is None else search)(self.k(len(lists.X)))
        warn_ties(dist, self.perplexity, lists.X, idx)
        return ConditionalTable(idx, calibrate(dist, self.perplexity, out=dist))

    def balanced(self, lists, own_weight) -> sp.csr_matrix:
        """The label-balanced P of ``lists`` (:class:`~ctsne.affinities.balanced.BalancedLists`)."""
        return self.balanced_P(lists, own_weight, self.perplexity, None)

    def revised(self, own: tuple, other: tuple, alpha: float) -> sp.csr_matrix:
        """Revised ct-SNE's P from the own-class and the pooled other-class lists."""
        return self.revised_P(own, other, alpha, self.perplexity)

    # how the blocks are calibrated and joined: the host's kernels (the torch engine's
    # families run the same steps on the device)
    @staticmethod
    def balanced_P(lists, own_weight, perplexity: float, tail: float | None) -> sp.csr_matrix:
        """:func:`ctsne.affinities.balanced.balanced_from_lists`."""
        from .balanced import balanced_from_lists

        return balanced_from_lists(lists, own_weight, perplexity, tail=tail)

    @staticmethod
    def revised_P(own: tuple, other: tuple, alpha: float, perplexity: float) -> sp.csr_matrix:
        """:func:`ctsne.affinities.balanced.revised_from_lists`."""
        from .balanced import revised_from_lists

        return revised_from_lists(own, other, alpha, perplexity)

    def probe(self, lists):
        """A sample of the standard P's rows, before it is built
        (:func:`ctsne.affinities.mixing.sampled_rows`), asking the standard search's index."""
        return sampled_rows(lists.X, lists.classes, self.perplexity, index=lists.index())


class FuzzyGraph:
    """UMAP's fuzzy graph on ``n_neighbors − 1`` neighbours (umap-learn's count).

    Parameters
    ----------
    n_neighbors : int
    set_op_mix_ratio, local_connectivity : float
        As for :func:`ctsne.affinities.fuzzy.fuzzy_graph`.
    """

    supports = ("auto", "standard", "balanced")

    def __init__(self, n_neighbors: int, set_op_mix_ratio: float = 1.0,
                 local_connectivity: float = 1.0):
        self.n_neighbors = int(n_neighbors)
        self.set_op_mix_ratio = float(set_op_mix_ratio)
        self.local_connectivity = float(local_connectivity)

    def k(self, n: int) -> int:
        return self.n_neighbors - 1

    def standard(self, lists, search=None) -> StandardGraph:
        from .fuzzy import fuzzy_graph

        idx, dist = (lists.standard if search is None else search)(self.k(len(lists.X)))
        # copies, as for t-SNE's P; memberships reach their target whatever the ties
        warn_ties(dist, float(dist.shape[1]), lists.X, idx)
        return FinishedGraph(fuzzy_graph(idx, dist, self.n_neighbors, self.set_op_mix_ratio,
                                     self.local_connectivity))

    def balanced(self, lists, own_weight) -> sp.csr_matrix:
        # perplexity k/3 gives blocks of exactly the fuzzy graph's k neighbours; every
        # entry is kept (the tail trim, TAIL_MASS, is a choice for t-SNE's P)
        P = self.balanced_P(lists, own_weight, lists.k / 3.0, 0.0)
        return P / P.data.max()

    balanced_P = staticmethod(PerplexityGraph.balanced_P)

    def probe(self, lists):
        return None  # no sample of the fuzzy graph's rows: its standard lists go first


class GivenStandard:
    """A graph family whose standard graph was built before: a mode reads it instead of
    searching (the explorer's refits, which share one standard P between priors).

    Every other step (``k``, ``balanced``, ``revised``) is ``family``'s. The rule of
    ``"auto"`` then reads the given graph's rows (:class:`FinishedGraph`) where a fit
    reads its unsymmetrised table: the same class sums (P's), each point's cross ratio
    from P's row rather than from its own conditional row.

    Parameters
    ----------
    family : PerplexityGraph or FuzzyGraph
    G : csr_matrix (n, n)
        That family's standard graph of the data.
    """

    def __init__(self, family, G: sp.csr_matrix):
        self.family, self.G = family, G
        self.supports = family.supports
        self.k, self.balanced = family.k, family.balanced
        self.revised = getattr(family, "revised", None)

    def standard(self, lists, search=None) -> StandardGraph:
        return FinishedGraph(self.G)

    def probe(self, lists):
        return None  # nothing to guess: the standard graph costs nothing more

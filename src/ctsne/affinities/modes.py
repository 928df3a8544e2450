"""The affinity modes: which lists a fit's input graph is built from, and with what weights.

Every estimator takes ``affinities=`` as one of these objects or as its name:

:class:`Standard` ("standard")
    The method's own graph of each point's nearest neighbours (t-SNE's P, UMAP's fuzzy
    graph); the prior acts only through the map's pair weights.
:class:`Balanced` ("balanced")
    A label-balanced graph: own-class and other-class lists calibrated apart
    (:mod:`ctsne.affinities.balanced`), ``within_weight`` of each row on its own class,
    or per class from the rule of :mod:`ctsne.affinities.cross_share` when not given.
:class:`Revised` ("revised")
    Heiter et al.'s revised ct-SNE P: within- and across-label lists, α on the first.
:class:`Auto` ("auto", the default)
    The standard graph, unless the prior is not mixed in it enough for the map to factor
    it out and the other classes hold counterparts; then the label-balanced graph with
    each class's cross-class share chosen from the data (:meth:`Auto.build`).
:class:`Precomputed`
    t-SNE's P from neighbour lists found elsewhere (``fit(..., knn=...)``).

A mode builds from a :class:`ctsne.neighbors.provider.NeighborLists` (the fit's lists,
each searched once) and a graph family of :mod:`ctsne.affinities.graphs` (how lists
become weights), so one mode serves ConditionalTSNE, ConditionalUMAP and
ConditionalLargeVis alike. A new mode is one subclass of :class:`AffinityMode`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .balanced import PER_CLASS_UP_TO
from .counterpart import counterpart_trust
from .cross_share import (
    SHARE_OF_RANDOM,
    CrossShare,
    already_mixed,
    choose_cross_share,
    falls_short,
    pulled_share,
    switch_expected,
)
from .mixing import PriorMixing, prior_mixing, random_level
from .options import check_affinity_params, default_within_weight

__all__ = ["Affinities", "AffinityMode", "Auto", "Balanced", "Precomputed", "Revised",
           "Standard", "input_affinities", "resolve_mode", "warn_if_separated"]


@dataclass
class Affinities:
    """The input graph of a fit and how it was chosen.

    Attributes
    ----------
    P : csr_matrix (n, n)
    mode : str
        "standard", "balanced", "revised" or "precomputed": the graph actually built.
    mixing : PriorMixing or None
        Cross-class share of ``P`` (None without a non-trivial prior).
    standard_mixing : PriorMixing or None
        When "auto" switched to the balanced graph: the standard graph's diagnostic that
        decided it (among the labelled points when some labels are missing).
    cross_share : CrossShare or None
        The cross-class share chosen for each class and why
        (:mod:`ctsne.affinities.cross_share`), where the rule was applied.
    perplexity : float or None
        The perplexity used, where a mode lowered it (too few precomputed neighbours).
    """

    P: sp.csr_matrix
    mode: str
    mixing: PriorMixing | None
    standard_mixing: PriorMixing | None = None
    cross_share: CrossShare | None = None
    perplexity: float | None = None

    def __post_init__(self):
        # the fitted model keeps the graph's diagnostic (prior_mixing_): the choice goes with it
        if self.mixing is not None and self.cross_share is not None:
            self.mixing.cross_share = self.cross_share

    def describe(self, seconds: float) -> list[str]:
        """What a verbose fit prints about this graph, a line each."""
        lines = [f"affinities ({self.mode}): {self.P.shape[0]} points, {self.P.nnz} "
                 f"non-zeros, {seconds:.1f} s"]
        if self.standard_mixing is not None:
            lines.append(f"standard {self.standard_mixing.summary()}")
        if self.cross_share is not None:
            lines.append(self.cross_share.summary())
        if self.mixing is not None:
            lines.append(self.mixing.summary())
        return lines


def _mixing(P: sp.csr_matrix, classes: np.ndarray | None) -> PriorMixing | None:
    return None if classes is None else prior_mixing(P, classes)


@dataclass
class AffinityMode:
    """A way to build a fit's input graph from its neighbour lists (module note).

    Subclasses set ``name`` and implement :meth:`build`.
    """

    name = "mode"

    def check(self) -> None:
        """Refuse invalid settings before any work (ValueError); a mode of one's own
        overrides it (the built-in modes' weights are checked with their names,
        :func:`ctsne.affinities.options.check_affinity_params`)."""

    def build(self, lists, graph, labelled: np.ndarray | None = None) -> Affinities:
        """The graph of ``lists`` (:class:`~ctsne.neighbors.provider.NeighborLists`, whose
        ``classes`` are the prior's joint classes or None) in ``graph``'s family
        (:mod:`ctsne.affinities.graphs`); ``labelled``: the points whose labels are known."""
        raise NotImplementedError  # pragma: no cover


@dataclass
class Standard(AffinityMode):
    """The method's own graph of nearest neighbours; the prior acts only in the map."""

    name = "standard"

    def build(self, lists, graph, labelled=None) -> Affinities:
        table = graph.standard(lists)
        mixing = None if lists.classes is None else table.diagnose(lists.classes)[0]
        return Affinities(table.finish(), "standard", mixing)


@dataclass
class Balanced(AffinityMode):
    """A label-balanced graph: own-class and other-class lists calibrated apart.

    Parameters
    ----------
    within_weight : float in (0, 1), optional
        Each row's share on its own class; None: each class's share from the data
        (:mod:`ctsne.affinities.cross_share`).
    """

    within_weight: float | None = None
    name = "balanced"

    def build(self, lists, graph, labelled=None) -> Affinities:
        classes = lists.classes
        if classes is None:
            return Standard().build(lists, graph)
        blists = lists.balanced(graph.k(len(classes)))
        choice = None
        own = self.within_weight
        if own is None:  # no standard graph to compare with: every class its target
            expected = random_level(np.bincount(classes), len(classes))
            choice = choose_cross_share(expected, None, counterpart_trust(lists.X, classes))
            own = 1.0 - choice.class_share
        P = graph.balanced(blists, own)
        return Affinities(P, "balanced", prior_mixing(P, classes), cross_share=choice)


@dataclass
class Revised(AffinityMode):
    """Revised ct-SNE's P (Heiter et al. 2023): within- and across-label lists of k each.

    Parameters
    ----------
    within_weight : float in (0, 1], optional
        α, the factor on the within-label affinities (default 1/2).
    """

    within_weight: float | None = None
    name = "revised"

    def build(self, lists, graph, labelled=None) -> Affinities:
        classes = lists.classes
        if classes is None:
            return Standard().build(lists, graph)
        if "revised" not in graph.supports:
            raise ValueError("affinities='revised' is t-SNE's P; this method's graph has no "
                             "revised form (use 'auto', 'standard' or 'balanced')")
        alpha = (default_within_weight("revised") if self.within_weight is None
                 else float(self.within_weight))
        k = graph.k(len(classes))
        own = lists.own_class(k)
        P = graph.revised(own, lists.pooled_others(k, own[0]), alpha)
        return Affinities(P, "revised", prior_mixing(P, classes))


@dataclass
class Precomputed(AffinityMode):
    """t-SNE's P from neighbour lists found elsewhere.

    Parameters
    ----------
    indices, distances : ndarray (n, k)
        Each row's neighbours, self left out (checked by
        :func:`ctsne.affinities.precomputed.check_knn`); modified in place. With
        k < 3·perplexity the perplexity is lowered to k/3, with a warning.
    """

    indices: np.ndarray = field(repr=False, default=None)
    distances: np.ndarray = field(repr=False, default=None)
    name = "precomputed"

    def build(self, lists, graph, labelled=None) -> Affinities:
        from .precomputed import knn_affinities

        P, used = knn_affinities(self.indices, self.distances, graph.perplexity)
        return Affinities(P, "standard", _mixing(P, lists.classes), perplexity=used)


@dataclass
class Auto(AffinityMode):
    """The standard graph, or the label-balanced one where the prior is not mixed in it.

    Parameters
    ----------
    within_weight : float in (0, 1), optional
        Where the rule switches, each row's own-class share as given instead of the rule's.
    """

    within_weight: float | None = None
    name = "auto"

    def build(self, lists, graph, labelled=None) -> Affinities:
        """The rule, in the order it runs.

        1. With many classes, where the balanced lists give the standard ones exactly, a
           probe of the standard graph's rows and the counterpart trust say whether a
           switch is likely; if so the balanced lists are searched first (a wrong guess
           costs time, never a different graph).
        2. The standard graph and, among the labelled points, its cross-class share per
           class against random labels (:mod:`ctsne.affinities.mixing`).
        3. Every class at :data:`~ctsne.affinities.cross_share.SHARE_OF_RANDOM` of its
           random level already: keep it. Else the counterpart trust decides each class's
           target share (:func:`~ctsne.affinities.cross_share.choose_cross_share`).
        4. Kept: the standard graph, bit for bit ``Standard()``'s. Switched: the
           label-balanced graph with the chosen shares (or ``within_weight``).
        """
        classes = lists.classes
        if classes is None:
            return Standard().build(lists, graph)
        k = graph.k(len(classes))
        partial = labelled is not None and not np.all(labelled) and np.any(labelled)
        trust = None
        if labelled is None or np.all(labelled):
            trust = self._balanced_first(lists, graph, k)
        exact = [True]

        def for_classes(k):
            idx, dist, exact[0] = lists.standard_for_classes(k)
            return idx, dist

        table = graph.standard(lists, for_classes)
        mixing, ratio = table.diagnose(classes)
        decides, sub_X, sub_codes = mixing, lists.X, classes
        if partial:
            # missing labels form a class that lies among all others and would hide a
            # separation (or fake a mixing): the labelled points decide
            decides, ratio, sub_codes = table.diagnose_labelled(classes, labelled)
            sub_X = lists.X[labelled]
        choice = already_mixed(decides, ratio)
        if choice is None:
            if trust is None:
                trust = counterpart_trust(sub_X, sub_codes)
            choice = choose_cross_share(decides.class_expected, decides.class_cross, trust,
                                        decides.separates, pulled_share(ratio))
        if choice.mode == "standard":
            if not exact[0]:  # merged lists: the kept graph is the search's own
                table = graph.standard(lists, lists.searched_standard)
                mixing = table.diagnose(classes)[0]
            return Affinities(table.finish(), "standard", mixing, cross_share=choice)
        own = 1.0 - choice.class_share
        if partial:  # the labelled classes' weights; the missing-label class takes their mean
            full = np.full(int(classes.max()) + 1,
                           float(np.average(own, weights=np.bincount(sub_codes))))
            full[np.unique(classes[labelled])] = own
            own = full
        if self.within_weight is not None:  # the user's own-class share replaces the rule's
            own = float(self.within_weight)
            choice.class_share = np.full(len(choice.class_share), 1.0 - own)
            choice.reason += f"; own-class share {own:g} as given (within_weight)"
        blists = lists.balanced(k)
        del table  # frees the standard graph's rows before the balanced one is calibrated
        P = graph.balanced(blists, own)
        return Affinities(P, "balanced", prior_mixing(P, classes), standard_mixing=decides,
                          cross_share=choice)

    @staticmethod
    def _balanced_first(lists, graph, k: int):
        """Step 1: the counterpart trust where measured (None otherwise); the balanced
        lists searched, where a switch is expected."""
        classes = lists.classes
        if int(classes.max()) <= PER_CLASS_UP_TO or not lists.merges_exactly(k):
            return None
        sample = graph.probe(lists)
        if sample is None or not falls_short(sample, classes, SHARE_OF_RANDOM):
            return None
        trust = counterpart_trust(lists.X, classes)
        if switch_expected(sample, classes, trust):
            lists.balanced(k, class_trees=True)
        return trust


_MODES = {"auto": Auto, "standard": Standard, "balanced": Balanced, "revised": Revised}


def resolve_mode(affinities, within_weight=None) -> AffinityMode:
    """The mode object of an estimator's ``affinities`` (a name or an object) and
    ``within_weight`` (applies to a name; an object carries its own)."""
    check_affinity_params(affinities, within_weight)
    if isinstance(affinities, AffinityMode):
        return affinities
    if affinities == "standard":
        return Standard()
    return _MODES[affinities](within_weight=within_weight)


def input_affinities(X, perplexity, classes=None, affinities="auto", within_weight=None,
                     neighbors="auto", metric="euclidean", random_state=None, n_jobs=None,
                     progress=None, labelled=None, graph=None) -> Affinities:
    """t-SNE's P for ``X`` under a mode (a name or an object) without an estimator.

    Parameters
    ----------
    X : ndarray (n, p)
    perplexity : float
    classes : ndarray of int (n,) or None
        Joint prior classes 0..L−1; None (or a single class) gives the standard P.
    affinities, within_weight
        As for :class:`ctsne.ConditionalTSNE`.
    neighbors, metric, random_state, n_jobs, progress
        As in :class:`ctsne.neighbors.provider.NeighborLists`.
    labelled : ndarray of bool (n,) or None
        The points whose labels are known (the others form the missing-label class).
    graph : graph family, optional
        Of :mod:`ctsne.affinities.graphs`, instead of t-SNE's P at ``perplexity`` (e.g.
        UMAP's fuzzy graph, or a :class:`~ctsne.affinities.graphs.GivenStandard`).
    """
    from ..checks import to_safe_scale
    from ..neighbors.provider import NeighborLists
    from .graphs import PerplexityGraph

    lists = NeighborLists(to_safe_scale(X), classes, method=neighbors, metric=metric,
                          random_state=random_state, n_jobs=n_jobs, progress=progress)
    graph = PerplexityGraph(perplexity) if graph is None else graph
    return resolve_mode(affinities, within_weight).build(lists, graph, labelled)


def warn_if_separated(built: Affinities, stacklevel: int, method: str = "ct-SNE") -> None:
    """Warn when a standard graph cannot remove the prior: its classes barely connect.

    ``stacklevel`` as for :func:`warnings.warn`, counted from the caller of this function;
    ``method`` names the map in the message ("ct-SNE", "conditional UMAP", …).
    """
    mixing = built.mixing
    if built.mode == "standard" and mixing is not None and mixing.separates:
        warnings.warn(
            f"the prior separates the data: only {100 * mixing.cross:.1f} % of P's mass "
            f"lies across classes (random labels: {100 * mixing.expected:.1f} %), so "
            f"{method} cannot remove it; use affinities='balanced' "
            "(CLI: --affinities balanced)", UserWarning, stacklevel=stacklevel + 1)

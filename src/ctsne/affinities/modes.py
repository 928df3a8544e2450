"""Which input affinities a fit uses: standard, label-balanced or revised, and "auto".

``affinities="auto"`` builds the standard P and measures how much of its mass lies across
prior classes (:mod:`ctsne.affinities.mixing`). Unless that reaches half the random level
in every class (as much as any target share asks), it searches each point's own-class
and other-class neighbours (reusing the standard lists that are already all own-class;
above :data:`ctsne.neighbors.own_first.OWN_FIRST_FROM` points, where the standard search
would be approximate and a probe finds the classes apart, the other way round: exact
standard lists from the own-class searches; in many features, where it would be
approximate, standard lists merged from the balanced ones, :mod:`ctsne.neighbors.merged`;
with many classes where the block tree searches, merged exactly when a probe of the
standard P's rows and the counterpart trust expect the switch, :func:`_balanced_first`),
measures how far the other classes hold counterparts, and chooses each class's
cross-class share by the rule of :mod:`ctsne.affinities.cross_share`: the label-balanced P
(:mod:`ctsne.affinities.balanced`) with those shares, or the standard P, bit for bit the
P of ``affinities="standard"``, where the prior is already mixed in it.
``affinities="balanced"`` without ``within_weight`` takes its shares from the same rule.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..checks import to_safe_scale
from ..neighbors.merged import exact_merge, exact_merged_lists, merge_first, merged_standard_lists
from ..neighbors.own_first import class_tree_lists, standard_through_classes
from ..neighbors.search import ExactIndex
from .balanced import (
    PER_CLASS_UP_TO,
    balanced_affinities,
    balanced_from_lists,
    balanced_lists,
    revised_affinities,
)
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
from .mixing import (
    PriorMixing,
    labelled_table,
    prior_mixing,
    random_level,
    sampled_rows,
    table_mixing,
    table_mixing_and_ratio,
)
from .options import n_neighbors_for
from .standard import standard_conditional

__all__ = ["Affinities", "given_affinities", "input_affinities", "warn_if_separated"]

@dataclass
class Affinities:
    """The P of a fit and how it was chosen.

    Attributes
    ----------
    P : csr_matrix (n, n)
    mode : str
        "standard", "balanced" or "revised": the affinities actually built.
    mixing : PriorMixing or None
        Cross-class share of ``P`` (None without a non-trivial prior).
    standard_mixing : PriorMixing or None
        When "auto" switched to the balanced P: the standard P's diagnostic that decided
        it (among the labelled points when some labels are missing).
    cross_share : CrossShare or None
        The cross-class share chosen for each class and why
        (:mod:`ctsne.affinities.cross_share`), where the rule was applied.
    """

    P: sp.csr_matrix
    mode: str
    mixing: PriorMixing | None
    standard_mixing: PriorMixing | None = None
    cross_share: CrossShare | None = None

    def __post_init__(self):
        # the fitted model keeps the P's diagnostic (prior_mixing_): the choice goes with it
        if self.mixing is not None and self.cross_share is not None:
            self.mixing.cross_share = self.cross_share

    def describe(self, seconds: float) -> list[str]:
        """What a verbose fit prints about this P, a line each."""
        lines = [f"affinities ({self.mode}): {self.P.shape[0]} points, {self.P.nnz} "
                 f"non-zeros, {seconds:.1f} s"]
        if self.standard_mixing is not None:
            lines.append(f"standard {self.standard_mixing.summary()}")
        if self.cross_share is not None:
            lines.append(self.cross_share.summary())
        if self.mixing is not None:
            lines.append(self.mixing.summary())
        return lines


def input_affinities(X, perplexity, classes=None, affinities="auto", within_weight=None,
                     neighbors="auto", metric="euclidean", random_state=None, n_jobs=None,
                     progress=None, labelled=None) -> Affinities:
    """Build P for a fit.

    Parameters
    ----------
    X : ndarray (n, p)
    perplexity : float
    classes : ndarray of int (n,) or None
        Joint prior classes 0..L−1; None (or a single class) gives the standard P.
    affinities : {"auto", "standard", "balanced", "revised"}
    within_weight : float or None
        See :func:`ctsne.affinities.balanced.balanced_affinities` /
        :func:`~ctsne.affinities.balanced.revised_affinities`.
    neighbors, metric, random_state, n_jobs, progress
        As in :func:`ctsne.neighbors.search.nearest_neighbors`.
    labelled : ndarray of bool (n,) or None
        The points whose labels are known (the others form the missing-label class).
        "auto" decides whether the prior separates the data from these alone
        (:func:`~ctsne.affinities.mixing.labelled_mixing`): missing labels lie among every
        class and would otherwise hide a separation that the labelled points show.
    """
    X = to_safe_scale(X)  # a power-of-two copy when |X| is extreme: P does not depend on it
    search = {"neighbors": neighbors, "metric": metric, "random_state": random_state,
              "n_jobs": n_jobs}
    trivial = classes is None or int(np.max(classes)) == 0
    if not trivial and (affinities == "revised" or (affinities == "balanced"
                                                    and within_weight is not None)):
        build = balanced_affinities if affinities == "balanced" else revised_affinities
        P = build(X, classes, perplexity, within_weight, **search)
        return Affinities(P, affinities, prior_mixing(P, classes))
    if not trivial and affinities == "balanced":  # shares from the rule, no standard P
        lists = balanced_lists(X, classes, perplexity, **search)
        sizes = np.bincount(classes)
        expected = random_level(sizes, len(classes))
        choice = choose_cross_share(expected, None, counterpart_trust(X, classes))
        P = balanced_from_lists(lists, 1.0 - choice.class_share, perplexity)
        return Affinities(P, "balanced", prior_mixing(P, classes), cross_share=choice)

    auto = affinities == "auto"
    # where the prior separates the data, the standard lists come from the own-class
    # searches (the same lists, in less time), which the balanced P then reuses whole;
    # in many features, from the balanced lists, found first (ctsne.neighbors.merged);
    # with many classes in the block tree, from those too, exactly, where a probe expects
    # the switch (_balanced_first)
    through = lists = found = trust = index = None
    exact = False  # the merged lists are the standard search's own
    if auto and not trivial:
        k = n_neighbors_for(perplexity, len(X))
        through = standard_through_classes(X, classes, k, neighbors, metric, n_jobs,
                                           progress)
        if through is not None:
            found = (through.idx, through.dist)
        elif merge_first(X, classes, k, neighbors, metric):
            lists = balanced_lists(X, classes, perplexity, **search)
            found = merged_standard_lists(X, lists.own_idx, lists.own_dist, lists.other_idx,
                                          lists.other_dist, lists.block_width, k, metric,
                                          n_jobs)
        elif ((labelled is None or np.all(labelled)) and int(classes.max()) > PER_CLASS_UP_TO
              and exact_merge(X, classes, k, neighbors, metric)):  # pooled lists only
            # the standard search's tree (exact_merge: the block tree), built once for
            # the probe and for that search, if it follows
            index = ExactIndex(X, metric, n_jobs)
            lists, trust = _balanced_first(X, classes, perplexity, k, search, progress, index)
            if lists is not None:
                index = None
                found = exact_merged_lists(X, lists.own_idx, lists.own_dist,
                                           lists.other_idx, lists.other_dist, k)
                exact = True
    # the standard P's table (joint_affinities' P, bit for bit, but where merged); "auto"
    # with a prior keeps the distances of the rows whose list is all own-class (where it
    # searched them itself), for the balanced P to reuse those lists
    keep = classes if auto and not trivial and found is None and lists is None else None
    table = standard_conditional(X, perplexity, progress=progress, keep_own_class=keep,
                                 lists=found, index=index, **search)
    del index
    if trivial:
        return Affinities(table.joint(), "standard", None)
    mixing, ratio = table_mixing_and_ratio(table.idx, table.cond, classes)
    if not auto:
        return Affinities(table.joint(), "standard", mixing)
    merged = lists is not None and found is not None and not exact

    def keep_standard(found_table, found_mixing, choice):
        # merged lists are not the standard search's: the kept P is affinities="standard"'s
        # (its own search), with that P's diagnostic
        if merged:
            found_table = standard_conditional(X, perplexity, progress=progress, **search)
            found_mixing = table_mixing(found_table.idx, found_table.cond, classes)
        return Affinities(found_table.joint(), "standard", found_mixing, cross_share=choice)
    # the decision is about the labelled points: missing labels form a class of their own
    # that lies among all others and would hide a separation (or fake a mixing)
    decides, sub_X, sub_codes = mixing, X, classes
    partial = labelled is not None and not np.all(labelled) and np.any(labelled)
    if partial:
        sub_idx, sub_cond, sub_codes = labelled_table(table.idx, table.cond, classes,
                                                      labelled)
        decides, ratio = table_mixing_and_ratio(sub_idx, sub_cond, sub_codes)
        sub_X = X[labelled]
    choice = already_mixed(decides, ratio)
    if choice is not None:
        return keep_standard(table, mixing, choice)
    choice = choose_cross_share(decides.class_expected, decides.class_cross,
                                counterpart_trust(sub_X, sub_codes) if trust is None else trust,
                                decides.separates, pulled_share(ratio))
    if choice.mode == "standard":
        return keep_standard(table, mixing, choice)
    own = 1.0 - choice.class_share
    if partial:  # the labelled classes' weights; the missing-label class takes their mean
        levels = np.unique(classes[labelled])
        full = np.full(int(classes.max()) + 1, float(np.average(
            own, weights=np.bincount(sub_codes))))
        full[levels] = own
        own = full
    if lists is None and through is not None:
        lists = balanced_lists(X, classes, perplexity, own=(through.own_idx, through.own_dist),
                               **search)
    elif lists is None:  # rows whose standard list is all own-class need no new search
        lists = balanced_lists(X, classes, perplexity,
                               known=(table.idx, table.dist, table.own_rows), **search)
    del through
    if within_weight is not None:  # the user's own-class share replaces the rule's
        choice.class_share = np.full(len(choice.class_share), 1.0 - float(within_weight))
        choice.reason += f"; own-class share {float(within_weight):g} as given (within_weight)"
        own = float(within_weight)
    del table  # frees the conditional affinities before the balanced P is calibrated
    P = balanced_from_lists(lists, own, perplexity)
    return Affinities(P, "balanced", prior_mixing(P, classes), standard_mixing=decides,
                      cross_share=choice)


def _balanced_first(X, classes, perplexity, k, search, progress=None, index=None):
    """The balanced lists, before any standard P, where a probe expects "auto" to switch.

    Only where the standard lists merge from them exactly
    (:func:`ctsne.neighbors.merged.exact_merge`: many classes, the block tree): the
    standard P is then found either way, and a wrong guess costs time, not a different P.
    A probe of the standard P's rows (:func:`~ctsne.affinities.mixing.sampled_rows`)
    that falls short of :data:`~ctsne.affinities.cross_share.SHARE_OF_RANDOM` (a class
    short of the largest target: the trust is needed either way,
    :func:`~ctsne.affinities.cross_share.falls_short`) and the trust decide
    (:func:`~ctsne.affinities.cross_share.switch_expected`). ``index``: the standard
    search's index of X, which the probe asks.

    Returns
    -------
    lists : BalancedLists or None
        None where the standard search goes first.
    trust : tuple or None
        :func:`~ctsne.affinities.counterpart.counterpart_trust`, where measured.
    """
    sample = sampled_rows(X, classes, perplexity, index=index)
    if not falls_short(sample, classes, SHARE_OF_RANDOM):
        return None, None
    trust = counterpart_trust(X, classes)
    if not switch_expected(sample, classes, trust):
        return None, trust
    own = class_tree_lists(X, classes, k, search["n_jobs"])
    if progress is not None:  # the searches' progress, as the standard search reports it
        progress(len(classes) // 2, len(classes))
    lists = balanced_lists(X, classes, perplexity, own=own, **search)
    if progress is not None:
        progress(len(classes), len(classes))
    return lists, trust


def given_affinities(P: sp.csr_matrix, classes: np.ndarray | None) -> Affinities:
    """A P built elsewhere (e.g. from precomputed neighbours) with its diagnostic."""
    return Affinities(P, "standard", None if classes is None else prior_mixing(P, classes))


def warn_if_separated(built: Affinities, stacklevel: int, method: str = "ct-SNE") -> None:
    """Warn when a standard P cannot remove the prior: its classes barely connect.

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

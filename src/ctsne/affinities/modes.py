"""Which input affinities a fit uses: standard, label-balanced or revised, and "auto".

``affinities="auto"`` builds the standard P, measures how much of its mass lies across
prior classes (:mod:`ctsne.affinities.mixing`) and, when the prior separates the data, builds the
label-balanced P instead (:mod:`ctsne.affinities.balanced`), reusing the standard neighbour lists
that are already all own-class. A prior that does not separate the data keeps the
standard P, bit for bit the P of ``affinities="standard"``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..checks import to_safe_scale
from .balanced import balanced_affinities, revised_affinities
from .mixing import PriorMixing, labelled_mixing, prior_mixing, table_mixing
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
    """

    P: sp.csr_matrix
    mode: str
    mixing: PriorMixing | None
    standard_mixing: PriorMixing | None = None

    def describe(self, seconds: float) -> list[str]:
        """What a verbose fit prints about this P, a line each."""
        lines = [f"affinities ({self.mode}): {self.P.shape[0]} points, {self.P.nnz} "
                 f"non-zeros, {seconds:.1f} s"]
        if self.standard_mixing is not None:
            lines.append(f"standard {self.standard_mixing.summary()}: the prior separates "
                         "the data, so P is label-balanced (affinities='balanced')")
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
    if not trivial and affinities in ("balanced", "revised"):
        build = balanced_affinities if affinities == "balanced" else revised_affinities
        P = build(X, classes, perplexity, within_weight, **search)
        return Affinities(P, affinities, prior_mixing(P, classes))

    auto = affinities == "auto"
    # the standard P's table (joint_affinities' P, bit for bit); "auto" with a prior keeps
    # the distances, for the balanced P to reuse the lists
    table = standard_conditional(X, perplexity, progress=progress,
                                 keep_distances=auto and not trivial, **search)
    if trivial:
        return Affinities(table.joint(), "standard", None)
    mixing = table_mixing(table.idx, table.cond, classes)
    decides = mixing
    if auto and labelled is not None and not np.all(labelled) and np.any(labelled):
        decides = labelled_mixing(table.idx, table.cond, classes, labelled)
    if not auto or not decides.separates:
        return Affinities(table.joint(), "standard", mixing)
    # rows whose standard list is all own-class need no new search
    mask = np.all(classes[table.idx] == classes[:, None], axis=1)
    known = (table.idx, table.dist, mask)
    del table  # frees the conditional affinities before the balanced search
    P = balanced_affinities(X, classes, perplexity, within_weight, known=known, **search)
    return Affinities(P, "balanced", prior_mixing(P, classes), standard_mixing=decides)


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

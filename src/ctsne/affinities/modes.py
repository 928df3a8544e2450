"""Which input affinities a fit uses: standard, label-balanced or revised, and "auto".

``affinities="auto"`` builds the standard P, measures how much of its mass lies across
prior classes (:mod:`ctsne.affinities.mixing`) and, when the prior separates the data, builds the
label-balanced P instead (:mod:`ctsne.affinities.balanced`), reusing the standard neighbour lists
that are already all own-class. A prior that does not separate the data keeps the
standard P, bit for bit the P of ``affinities="standard"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..checks import to_safe_scale
from .balanced import balanced_affinities, revised_affinities
from .mixing import PriorMixing, prior_mixing, table_mixing
from .standard import standard_conditional

__all__ = ["AFFINITIES", "Affinities", "check_affinity_params", "input_affinities"]

AFFINITIES = ("auto", "standard", "balanced", "revised")


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
        The same for the standard P when "auto" built it and then switched.
    """

    P: sp.csr_matrix
    mode: str
    mixing: PriorMixing | None
    standard_mixing: PriorMixing | None = None


def check_affinity_params(affinities, within_weight) -> None:
    """Reject an unknown mode or a weight outside (0, 1] before any work."""
    if affinities not in AFFINITIES:
        raise ValueError(f"affinities must be one of {AFFINITIES}, got {affinities!r}")
    if within_weight is None:
        return
    try:
        w = float(within_weight)
    except (TypeError, ValueError):
        w = np.nan
    if not np.isfinite(w) or not 0.0 < w <= 1.0:
        raise ValueError(f"within_weight must be a number in (0, 1) (revised: (0, 1]), "
                         f"got {within_weight!r}; leave it None for the default "
                         "(balanced 0.85, revised 0.5)")
    if w == 1.0 and affinities == "balanced":
        raise ValueError("within_weight=1 gives the other classes no weight; use a value "
                         "in (0, 1) with affinities='balanced'")


def input_affinities(X, perplexity, classes=None, affinities="auto", within_weight=None,
                     neighbors="auto", metric="euclidean", random_state=None, n_jobs=None,
                     progress=None) -> Affinities:
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
    if not auto or not mixing.separates:
        return Affinities(table.joint(), "standard", mixing)
    # rows whose standard list is all own-class need no new search
    mask = np.all(classes[table.idx] == classes[:, None], axis=1)
    known = (table.idx, table.dist, mask)
    del table  # frees the conditional affinities before the balanced search
    P = balanced_affinities(X, classes, perplexity, within_weight, known=known, **search)
    return Affinities(P, "balanced", prior_mixing(P, classes), standard_mixing=mixing)

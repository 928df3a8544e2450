"""How much of each point's affinity the label-balanced P gives to the other prior classes.

The rule of ``affinities="auto"`` (and of ``"balanced"`` without ``within_weight``), from
two measurements that need no labels beyond the prior:

**Random level** ``e_l = 1 − (n_l − 1)/(n − 1)``: the share of a point's neighbours that
lie in other classes when the prior is unrelated to the data. A batch that left no trace
would give each point of class l this cross share; it is the most a correction should
ask for.

**Counterpart trust** ``τ_l``: how far the other classes hold *counterparts* of class l
(copies of its structure, as batches of the same cells) rather than different things (as
the digits of a digit prior): the share of mutual pairs ``μ_l`` among the nearest
other-class points of class l's (centred) points, against the same share among own-class
neighbours ``μ_own``: ``τ_l = min(1, μ_l / μ_own)``
(:func:`~ctsne.affinities.counterpart.counterpart_trust`). Copies give τ near 1, different
things well below (see :data:`TRUST_FROM`).

**Pulled points** (recorded, not deciding). ct-SNE's β' cannot create attraction between
classes, only strengthen it: at a mixed layout its Q puts about β'·e_l of a point's mass
on other classes, so a point whose own row of the standard P carries more than that,
relative to the random level (``r_i = c_i/e_l > β'``, with the default β' = 0.01,
:data:`POINT_RATIO_ABOVE`), is pulled to its counterparts. Many pulled points do not mean
the batches vanish under the standard P, so their share is only reported
(``CrossShare.pulled``): the standard P is kept where it already reaches the target share.

**Target cross share** ``t_l = τ_l · e_l / 2``: half the random level
(:data:`SHARE_OF_RANDOM`; ct-SNE's β' amplifies every cross-class affinity, so the P side
need not carry it all), scaled by how far the counterparts can be trusted. Where the
standard P already gives every class that share, it is kept as well. Otherwise the
balanced P gives each point of class l the cross share ``max(t_l, c_l)`` (never less than
the standard P had) when the counterparts are trusted (overall τ ≥ :data:`TRUST_FROM`);
with less trust the classes are mostly different things (the digits of a digit prior),
mixing them would pull points to strangers, and the balanced P is used only where the
standard P cannot mix at all (:attr:`ctsne.affinities.mixing.PriorMixing.separates`),
with the small targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mixing import SEPARATED_CROSS_BELOW, SEPARATED_RATIO_BELOW, PriorMixing, SampledRows

__all__ = ["MIN_SHARE", "POINT_RATIO_ABOVE", "SHARE_OF_RANDOM", "TRUST_FROM", "CrossShare",
           "already_mixed", "choose_cross_share", "falls_short", "pulled_share",
           "switch_expected"]

# Overall trust from which the balanced P is used wherever the standard P falls short of
# the target: it lies between the trust of batches that copy each other and that of
# classes that are different things.
TRUST_FROM = 0.7
# A point is pulled to its counterparts by the standard P when its row's cross share is
# above β' times the random level; the default β' (ctsne.estimator.parameters).
POINT_RATIO_ABOVE = 0.01
# The balanced P gives the other classes this fraction of the trusted random level: ct-SNE's
# Q side amplifies every cross-class affinity, and more would cost the structure within
# each batch. Half keeps the own class above half of every row (1 − e/2 ≥ 1/2).
SHARE_OF_RANDOM = 0.5
# Sampled rows from which a class's own mean counts in falls_short (a small standard error).
PROBE_CLASS_ROWS = 20
# Least cross share of an explicitly requested balanced P (no standard P to compare with):
# below it the other classes get no real pull.
MIN_SHARE = 0.05


@dataclass
class CrossShare:
    """The cross-class share chosen for a P, and why.

    Attributes
    ----------
    mode : str
        "standard" or "balanced": the P it leads to.
    reason : str
        One sentence: why.
    class_share : ndarray (n_classes,)
        Each class's share of affinity on other classes in the balanced P (the standard
        P's own shares where it was kept).
    class_target, class_standard, class_expected, class_trust : ndarray (n_classes,)
        ``t_l``, the standard P's ``c_l``, the random level ``e_l`` and ``τ_l``.
    trust, mutual_own, mutual_cross : float
        Overall τ and the mutual-pair shares it is made of (NaN where not measured).
    pulled : float
        Share of the points pulled to other classes by their standard row
        (:func:`pulled_share`; NaN without a standard P).
    """

    mode: str
    reason: str
    class_share: np.ndarray
    class_target: np.ndarray
    class_standard: np.ndarray
    class_expected: np.ndarray
    class_trust: np.ndarray
    trust: float
    mutual_own: float
    mutual_cross: float
    pulled: float = float("nan")

    def to_dict(self) -> dict:
        """Plain floats and lists (JSON-serialisable)."""
        out = {"mode": self.mode, "reason": self.reason}
        for key in ("class_share", "class_target", "class_standard", "class_expected",
                    "class_trust"):
            out[key] = [float(v) for v in getattr(self, key)]
        for key in ("trust", "mutual_own", "mutual_cross", "pulled"):
            out[key] = float(getattr(self, key))
        return out

    def summary(self) -> str:
        """One line for verbose output."""
        shares = ", ".join(f"{100 * v:.0f} %" for v in self.class_share[:8])
        more = ", …" if len(self.class_share) > 8 else ""
        trust = "" if np.isnan(self.trust) else f"; counterpart trust {self.trust:.2f}"
        return f"cross-class share per class: {shares}{more} ({self.mode} P{trust}): {self.reason}"


def pulled_share(point_ratio: np.ndarray) -> float:
    """Share of the points whose standard row pulls them to other classes
    (``r_i >`` :data:`POINT_RATIO_ABOVE`; :func:`ctsne.affinities.mixing.point_cross_ratio`)."""
    return float(np.mean(np.asarray(point_ratio) > POINT_RATIO_ABOVE))


def falls_short(sample: SampledRows, codes: np.ndarray, bound: float) -> bool:
    """Whether the sampled rows of the standard P (:func:`ctsne.affinities.mixing.sampled_rows`)
    suggest a class whose cross ratio lies below ``bound``: their mean, or the mean of
    any class with at least :data:`PROBE_CLASS_ROWS` sampled rows (a large class short of
    its share among mixed ones: UCI Adult's education × gender)."""
    if float(np.mean(sample.ratio)) < bound:
        return True
    cls = np.asarray(codes)[sample.rows]
    counts = np.bincount(cls)
    sums = np.bincount(cls, weights=sample.ratio)
    big = counts >= PROBE_CLASS_ROWS
    return bool(np.any(sums[big] / counts[big] < bound))


def switch_expected(sample: SampledRows, codes: np.ndarray, trust) -> bool:
    """Whether :func:`choose_cross_share` is expected to switch to the balanced P, from a
    sample of the standard P's rows and the counterpart trust: the counterparts are
    trusted (τ ≥ :data:`TRUST_FROM`) and the rows fall short of the target,
    :data:`SHARE_OF_RANDOM`·τ (:func:`falls_short`); or their means lie below both
    thresholds of :attr:`ctsne.affinities.mixing.PriorMixing.separates`. It only orders
    the work of "auto" (:mod:`ctsne.affinities.modes`): the choice itself is made from
    the whole P."""
    tau = trust[1]
    separates = (float(np.mean(sample.share)) < SEPARATED_CROSS_BELOW
                 and float(np.mean(sample.ratio)) < SEPARATED_RATIO_BELOW)
    return bool((tau >= TRUST_FROM and falls_short(sample, codes, SHARE_OF_RANDOM * tau))
                or separates)


def already_mixed(standard: PriorMixing, point_ratio: np.ndarray) -> CrossShare | None:
    """The standard P's choice when no search is needed, else None.

    No search is needed when every class already reaches :data:`SHARE_OF_RANDOM` of its
    random level in the standard P: no target can ask for more (the trust is at most 1),
    so :func:`choose_cross_share` would keep the standard P whatever the counterpart
    trust, which is then not measured. ``class_target`` records that largest target.
    """
    c, e = standard.class_cross, standard.class_expected
    bound = SHARE_OF_RANDOM * e
    if not np.all(c >= bound):
        return None
    nan = np.full(len(c), float("nan"))
    return CrossShare("standard", "the standard P already reaches, in every class, "
                      f"{SHARE_OF_RANDOM:g} of the random level: the largest target share "
                      "(counterpart trust not needed)", c, bound, c, e, nan, float("nan"),
                      float("nan"), float("nan"), pulled_share(point_ratio))


def choose_cross_share(expected: np.ndarray, standard: np.ndarray | None, trust,
                       separates: bool = False, pulled: float = float("nan")) -> CrossShare:
    """Apply the rule (module note).

    Parameters
    ----------
    expected : ndarray (n_classes,)
        The random level ``e_l`` of each class.
    standard : ndarray (n_classes,) or None
        The standard P's cross share ``c_l`` of each class; None when no standard P was
        built (``affinities="balanced"``): the balanced P then gets the targets, at least
        :data:`MIN_SHARE`.
    trust : tuple
        :func:`~ctsne.affinities.counterpart.counterpart_trust`'s result.
    separates : bool
        Whether the standard P cannot mix the classes at all (it decides for low trust).
    pulled : float
        :func:`pulled_share` of the standard P (recorded).

    Returns
    -------
    CrossShare
    """
    e = np.asarray(expected, dtype=np.float64)
    class_trust, tau, m_own, m_cross = trust
    target = SHARE_OF_RANDOM * class_trust * e
    common = (class_trust, tau, m_own, m_cross, pulled)
    if standard is None:
        share = np.maximum(target, MIN_SHARE)
        return CrossShare("balanced", "affinities='balanced' without within_weight: each "
                          f"class gets its target share (at least {MIN_SHARE:g})", share,
                          target, np.full(len(e), float("nan")), e, *common)
    c = np.asarray(standard, dtype=np.float64)
    if np.all(c >= target):
        return CrossShare("standard", "the standard P already gives every class its "
                          "target share (the prior is already mixed in P)", c, target, c, e,
                          *common)
    share = np.maximum(target, c)
    if tau >= TRUST_FROM:
        return CrossShare("balanced", f"the other classes hold counterparts (trust "
                          f"{tau:.2f} ≥ {TRUST_FROM:g}) and the standard P falls short of "
                          "the target share", share, target, c, e, *common)
    if separates:
        return CrossShare("balanced", f"few counterparts (trust {tau:.2f} < "
                          f"{TRUST_FROM:g}), but the standard P cannot mix the classes at "
                          "all, so each class gets its small target share", share, target,
                          c, e, *common)
    return CrossShare("standard", f"few counterparts (trust {tau:.2f} < {TRUST_FROM:g}): "
                      "the classes are mostly different things, and the standard P already "
                      "links them", c, target, c, e, *common)

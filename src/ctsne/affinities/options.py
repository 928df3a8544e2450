"""The affinity modes a fit can ask for and their defaults, without building anything.

Kept apart from the builders (:mod:`.modes`, :mod:`.balanced`) so that the estimator's
parameter table and the command line's help can name the modes and their defaults
without loading numba or scipy; so is the number of neighbours a perplexity needs
(:func:`n_neighbors_for`), which the checks of a fit's parameters compare with the data.
"""

from __future__ import annotations

import math

__all__ = ["AFFINITIES", "WITHIN_WEIGHT", "check_affinity_params", "default_within_weight",
           "mode_name", "n_neighbors_for"]

AFFINITIES = ("auto", "standard", "balanced", "revised")

# The own-class weight when ``within_weight`` is None and the caller chooses no share of
# its own (ConditionalTSNE chooses per class, ctsne.affinities.cross_share). Balanced: a
# large share for the other classes pulls points towards wrong counterparts. Revised: α =
# 0.5 (Heiter et al.).
WITHIN_WEIGHT = {"balanced": 0.85, "revised": 0.5}


def n_neighbors_for(perplexity: float, n: int) -> int:
    """k = min(n − 1, ⌊3·perplexity⌋): enough neighbours for the Gaussian's mass."""
    if 3 * perplexity >= n - 1:  # also an infinite perplexity
        return int(n - 1)
    return max(1, math.floor(3 * perplexity))


def default_within_weight(mode: str) -> float:
    """The own-class weight of ``mode`` ("balanced" or "revised") when ``within_weight``
    is None (:data:`WITHIN_WEIGHT`)."""
    if mode not in WITHIN_WEIGHT:
        raise ValueError(f"no within-class weight for affinities={mode!r}")
    return WITHIN_WEIGHT[mode]


def mode_name(affinities):
    """The name of an ``affinities`` value: the string itself, or a mode object's ``name``
    (:mod:`ctsne.affinities.modes`); None for anything else."""
    if isinstance(affinities, str):
        return affinities
    if callable(getattr(affinities, "build", None)):
        return getattr(affinities, "name", None)
    return None


def check_affinity_params(affinities, within_weight) -> None:
    """Reject an unknown mode or a weight outside (0, 1] before any work.

    ``affinities`` is a mode's name or a mode object of :mod:`ctsne.affinities.modes`,
    which carries its own weight (then ``within_weight`` must be None).
    """
    if not isinstance(affinities, str) and mode_name(affinities) is not None:
        if within_weight is not None:
            raise ValueError(f"within_weight={within_weight!r} given besides the affinity "
                             f"object {affinities!r}: give the weight to the object, e.g. "
                             f"Balanced(within_weight={within_weight!r})")
        if affinities.name not in AFFINITIES:  # a mode of the caller's own checks itself
            affinities.check()
            return
        affinities, within_weight = affinities.name, getattr(affinities, "within_weight",
                                                             None)
    if affinities not in AFFINITIES:
        raise ValueError(f"affinities must be one of {AFFINITIES}, got {affinities!r}")
    if within_weight is None:
        return
    try:
        w = float(within_weight)
    except (TypeError, ValueError):
        w = math.nan
    if not math.isfinite(w) or not 0.0 < w <= 1.0:
        defaults = ", ".join(f"{mode} {value:g}" for mode, value in WITHIN_WEIGHT.items())
        raise ValueError(f"within_weight must be a number in (0, 1) (revised: (0, 1]), "
                         f"got {within_weight!r}; leave it None for the default "
                         f"({defaults})")
    if w == 1.0 and affinities == "balanced":
        raise ValueError("within_weight=1 gives the other classes no weight; use a value "
                         "in (0, 1) with affinities='balanced'")

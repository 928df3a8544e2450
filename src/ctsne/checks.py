"""Degenerate input data: refuse what cannot be embedded, warn about what distorts the map.

Also the global rescaling that keeps distance computations in floating-point range, so
that the result does not depend on the overall scale of X (t-SNE's should not).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["check_spread", "to_safe_scale", "warn_ties"]

# Squared distances of data whose largest magnitude lies in [2**-SAFE_EXP, 2**SAFE_EXP]
# stay far from float64's underflow (1e-308) and overflow (1e308) for any realistic number
# of features; data outside is rescaled.
SAFE_EXP = 64


def check_spread(X: np.ndarray) -> None:
    """Raise ValueError when all rows of X are the same point: there is nothing to embed."""
    if X.shape[0] and not np.any(X.max(axis=0) > X.min(axis=0)):
        raise ValueError(
            f"all {X.shape[0]} points are identical (every feature column is constant): "
            "there is nothing to embed; check that the right columns were read")


def to_safe_scale(X: np.ndarray) -> np.ndarray:
    """X, or X times a power of two when its magnitude is extreme (a scaled copy).

    A power of two rescales exactly (no rounding), so the neighbours and their distance
    ratios are those of X; only squared distances that would underflow (|X| ~ 1e-300) or
    overflow (|X| ~ 1e300) are avoided.
    """
    top = float(np.max(np.abs(X))) if X.size else 0.0
    if top == 0.0:
        return X
    exp = int(np.frexp(top)[1])
    if -SAFE_EXP <= exp <= SAFE_EXP:
        return X
    return np.ldexp(X, -exp)


def warn_ties(distances: np.ndarray, perplexity: float) -> None:
    """Warn about exact duplicates and points whose nearest neighbours tie beyond the perplexity.

    ``distances`` are each point's sorted distances to its k nearest other points. A point
    with more equidistant nearest neighbours than the perplexity cannot reach it: its
    affinities spread evenly over an arbitrary subset of those ties.
    """
    n = distances.shape[0]
    if n == 0 or distances.shape[1] == 0:
        return
    dup = int(np.count_nonzero(distances[:, 0] == 0.0))
    if dup:
        warnings.warn(
            f"{dup} of {n} points have an exact duplicate: copies share their "
            "neighbours' affinities and large groups of copies take over the map; "
            "deduplicate the rows (e.g. numpy.unique(X, axis=0)) unless the copies matter",
            UserWarning, stacklevel=3)
    ties = np.count_nonzero(distances == distances[:, :1], axis=1)
    short = int(np.count_nonzero(ties > perplexity))
    if short:
        warnings.warn(
            f"{short} points have more than perplexity={perplexity:g} nearest neighbours "
            "at the same distance (too few distinct neighbours): their affinities cannot "
            "reach the perplexity; deduplicate the data or lower the perplexity",
            UserWarning, stacklevel=3)

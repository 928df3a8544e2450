"""Degenerate input data: refuse what cannot be embedded, warn about what distorts the map.

Also the global rescaling that keeps distance computations in floating-point range, so
that the result does not depend on the overall scale of X (t-SNE's should not).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["check_spread", "exact_duplicates", "tie_warnings", "tied_nearest", "to_safe_scale",
           "warn_ties"]

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


# A row whose distance from the data's median exceeds this multiple of the typical row's
# (or, for transform's new rows, whose magnitude exceeds this multiple of the training
# data's) lies far outside the data: at a safe scale it squeezes the other rows' distances
# towards rounding, or has every point about equally far away.
FAR_OUTSIDE = 1e6


def rows_named(rows: np.ndarray, of: str = "") -> str:
    """"row 7 lies" or "rows 3, 9 lie" (the first ten), for warnings that name rows."""
    shown = ", ".join(str(int(i)) for i in rows[:10]) + (", …" if len(rows) > 10 else "")
    return f"row {shown}{of} lies" if len(rows) == 1 else f"rows {shown}{of} lie"


def warn_far_rows(X: np.ndarray, stacklevel: int) -> None:
    """Warn, naming them, about rows of X far outside the others (:data:`FAR_OUTSIDE`)."""
    if X.shape[0] < 3:
        return
    spread = np.max(np.abs(X - np.median(X, axis=0)), axis=1)
    typical = float(np.median(spread))
    far = np.flatnonzero(spread > FAR_OUTSIDE * typical) if typical > 0.0 else []
    if len(far):
        warnings.warn(f"{rows_named(far)} far outside the other rows of X (distance "
                      f"{spread[far].max():.3g} from the median against a typical "
                      f"{typical:.3g}): the other rows' distances shrink towards rounding "
                      "beside it and the map loses their neighbours; check them for unit or "
                      "scaling errors, or leave them out", UserWarning, stacklevel=stacklevel + 1)


def to_safe_scale(X: np.ndarray) -> np.ndarray:
    """X, or X times a power of two when its magnitude is extreme (a scaled copy).

    A power of two rescales exactly (no rounding), so the neighbours and their distance
    ratios are those of X; only squared distances that would underflow (|X| ~ 1e-300) or
    overflow (|X| ~ 1e300) are avoided.
    """
    return to_common_safe_scale(X)[0]


def to_common_safe_scale(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays, all times one power of two where their joint magnitude is extreme (as
    :func:`to_safe_scale`: distances between rows of different arrays keep their ratios)."""
    top = max((float(np.max(np.abs(a))) for a in arrays if a.size), default=0.0)
    exp = int(np.frexp(top)[1]) if top > 0.0 else 0
    if -SAFE_EXP <= exp <= SAFE_EXP:
        return arrays
    return tuple(np.ldexp(a, -exp) for a in arrays)


# Neighbour distances below this share of the largest row norm may be rounding rather than
# distance (pynndescent computes in float32; scikit-learn's brute force expands
# |x − y|² = |x|² − 2x·y + |y|²). Below it, a pair is a duplicate only if its coordinates
# are equal.
DUPLICATE_CHECK_BELOW = 1e-6
# Candidate pairs compared per step (bounds the (pairs, p) temporaries).
_PAIRS_PER_STEP = 1 << 15


def exact_duplicates(X: np.ndarray, indices: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """Which points have an exact copy among their listed neighbours.

    Parameters
    ----------
    X : ndarray (n, p)
        The points searched.
    indices, distances : ndarray (n, k)
        Each point's neighbours, as the search gave them (its distances may be rounded).

    Returns
    -------
    ndarray of bool (n,)
        True where some neighbour has exactly the point's coordinates (compared exactly,
        not by the search's distance).
    """
    n = X.shape[0]
    found = np.zeros(n, dtype=bool)
    if n == 0 or distances.size == 0:
        return found
    norm = float(np.sqrt(X.shape[1])) * float(np.max(np.abs(X)))
    near = DUPLICATE_CHECK_BELOW * norm
    # only rows whose nearest lies that close (a row's minimum: one pass over the table)
    some = np.flatnonzero(distances.min(axis=1) <= near)
    if 2 * len(some) < n:
        sub, cols = np.nonzero(distances[some] <= near)
        rows = some[sub]
    else:  # most rows (data of few values): the whole table at once
        rows, cols = np.nonzero(distances <= near)
    for start in range(0, len(rows), _PAIRS_PER_STEP):
        r = rows[start:start + _PAIRS_PER_STEP]
        c = cols[start:start + _PAIRS_PER_STEP]
        open_ = ~found[r]  # a point with a copy found needs no further comparison
        r, c = r[open_], c[open_]
        same = np.all(X[r] == X[indices[r, c]], axis=1)
        found[r[same]] = True
    return found


# Distances within this many float64 roundings of a row's nearest count as tied with it
# (a tie computed along two paths, e.g. sums in another order, may differ in a last bit;
# the calibration cannot separate such neighbours either).
TIE_ULPS = 4
# Coordinates compared per step when distances are recomputed (bounds the temporaries).
_VALUES_PER_STEP = 1 << 22


def tied_nearest(distances: np.ndarray, perplexity: float, X: np.ndarray | None = None,
                 indices: np.ndarray | None = None) -> np.ndarray:
    """Which points have more nearest neighbours at one distance than the perplexity.

    Parameters
    ----------
    distances : ndarray (n, k)
        Each point's sorted distances to its listed neighbours, as the search gave them.
    perplexity : float
    X : ndarray (n, p), optional
        The points searched. Given with ``indices``, a point the search's distances call
        tied is checked on distances recomputed from ``X`` in float64: the approximate
        search computes in float32, where distinct distances (data with a large offset,
        values closer than float32 resolves) come out equal.
    indices : ndarray (n, k), optional

    Returns
    -------
    ndarray of bool (n,)
    """
    short = np.zeros(distances.shape[0], dtype=bool)
    # more than ``perplexity`` at the nearest distance: in sorted rows, the entry at
    # position ⌊perplexity⌋ equals the first (a test of one column before the count)
    first = int(np.floor(perplexity))
    if first >= distances.shape[1]:
        return short
    some = np.flatnonzero(distances[:, first] == distances[:, 0])
    ties = np.count_nonzero(distances[some] == distances[some, :1], axis=1)
    rows = some[ties > perplexity]
    if X is None or indices is None:
        short[rows] = True
        return short
    k, p = indices.shape[1], max(1, X.shape[1])
    step = max(1, _VALUES_PER_STEP // (k * p))
    for start in range(0, len(rows), step):
        r = rows[start:start + step]
        d = np.sqrt(np.sum((X[r, None, :] - X[indices[r]]) ** 2, axis=2))
        nearest = d.min(axis=1, keepdims=True)
        tied = d <= nearest * (1.0 + TIE_ULPS * np.finfo(np.float64).eps)
        short[r] = np.count_nonzero(tied, axis=1) > perplexity
    return short


def warn_ties(distances: np.ndarray, perplexity: float, X: np.ndarray | None = None,
              indices: np.ndarray | None = None) -> None:
    """Warn about exact duplicates and points whose nearest neighbours tie beyond the perplexity.

    ``distances`` are each point's sorted distances to its k nearest other points. A point
    with more equidistant nearest neighbours than the perplexity cannot reach it: its
    affinities spread evenly over an arbitrary subset of those ties.

    Given the points ``X`` and the neighbours' ``indices``, duplicates are decided by
    comparing coordinates (:func:`exact_duplicates`): the search's distances may round
    distinct close points to 0 and a copy to a little above; and ties by distances
    recomputed in float64 (:func:`tied_nearest`). Without them, a distance of 0 counts as
    a duplicate and the search's distances decide ties.
    """
    n = distances.shape[0]
    if n == 0 or distances.shape[1] == 0:
        return
    if X is not None and indices is not None:
        dup = int(np.count_nonzero(exact_duplicates(X, indices, distances)))
    else:
        dup = int(np.count_nonzero(distances[:, 0] == 0.0))
    short = int(np.count_nonzero(tied_nearest(distances, perplexity, X, indices)))
    tie_warnings(dup, short, n, perplexity, stacklevel=4)


def tie_warnings(duplicates: int, short: int, n: int, perplexity: float,
                 stacklevel: int = 3) -> None:
    """:func:`warn_ties`'s warnings from its counts (an engine that counts on its own
    device calls this): ``duplicates`` of ``n`` points have an exact copy, ``short`` more
    nearest neighbours at one distance than ``perplexity``."""
    if duplicates:
        warnings.warn(
            f"{duplicates} of {n} points have an exact duplicate: copies share their "
            "neighbours' affinities and large groups of copies take over the map; "
            "deduplicate the rows (e.g. numpy.unique(X, axis=0)) unless the copies matter",
            UserWarning, stacklevel=stacklevel)
    if short:
        warnings.warn(
            f"{short} points have more than perplexity={perplexity:g} nearest neighbours "
            "at the same distance (too few distinct neighbours): their affinities cannot "
            "reach the perplexity; deduplicate the data or lower the perplexity",
            UserWarning, stacklevel=stacklevel)

"""How much of the input affinities P connects different prior classes (a diagnostic).

ct-SNE can only remove a prior where P links the classes: pairs with no affinity exert no
attraction, whatever the weight β'. The share of P's mass on pairs of different classes,
compared with what random labels of the same sizes would give, says whether the prior
separates the data in the input space. Computed in one O(nnz) pass over P, or over the
neighbour table that P is symmetrised from (so that "auto" need not symmetrise a P it
will not use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._parallel import sum_in_order, threaded
from ..neighbors.brute import brute_knn
from ..neighbors.merged import PROBE_SAMPLE
from ..neighbors.search import drop_self
from ..tuning import (
    MIXING_NUMPY_BELOW,
    MIXING_PART_CELLS,
    MIXING_TABLE_ROWS,
    PARALLEL_FROM_ENTRIES,
)
from .calibration import calibrate
from .options import n_neighbors_for

__all__ = ["PriorMixing", "SEPARATED_CROSS_BELOW", "SEPARATED_RATIO_BELOW",
           "SampledRows", "labelled_mixing", "labelled_table", "mixing_from_sums",
           "point_cross_ratio",
           "prior_mixing", "random_level", "sampled_rows", "table_mixing",
           "table_mixing_and_ratio", "table_sums"]

# A prior "separates the data" when less than SEPARATED_CROSS_BELOW of P's mass lies
# across classes (too little to pull a point over, whatever β') and that share is also
# well below the random-label one (ratio < SEPARATED_RATIO_BELOW): neither test suffices.
SEPARATED_CROSS_BELOW = 0.05
SEPARATED_RATIO_BELOW = 0.25



@dataclass
class PriorMixing:
    """Share of P's mass across prior classes, against random labels of the same sizes.

    Attributes
    ----------
    cross : float
        Σ p_ij over pairs in different classes (P sums to 1).
    expected : float
        The same share for random labels: ``1 − ρ``, ``ρ = Σ n_l(n_l − 1) / (n(n − 1))``.
    ratio : float
        ``cross / expected``; about 1 for a prior unrelated to P, near 0 when the prior
        separates the data.
    class_cross, class_expected, class_ratio : ndarray (n_classes,)
        Per class l: the share of the mass of l's rows that goes to other classes,
        random value ``1 − (n_l − 1)/(n − 1)``, and their ratio.
    class_sizes : ndarray (n_classes,)
    cross_share : CrossShare or None
        For the P of a fit with ``affinities="auto"`` (or "balanced" without
        ``within_weight``): the cross-class share chosen for each class and why
        (:class:`ctsne.affinities.cross_share.CrossShare`); a fitted model's
        ``prior_mixing_.cross_share``.
    """

    cross: float
    expected: float
    ratio: float
    class_cross: np.ndarray
    class_expected: np.ndarray
    class_ratio: np.ndarray
    class_sizes: np.ndarray
    cross_share: object = None

    @property
    def separates(self) -> bool:
        """True when the cross share and its ratio to random labels are both small.

        ``cross < SEPARATED_CROSS_BELOW`` and ``ratio < SEPARATED_RATIO_BELOW``.
        """
        return bool(self.cross < SEPARATED_CROSS_BELOW and self.ratio < SEPARATED_RATIO_BELOW)

    def to_dict(self) -> dict:
        """Plain floats and lists (JSON-serialisable, e.g. for ``AnnData.uns``)."""
        return {
            "cross": float(self.cross),
            "expected": float(self.expected),
            "ratio": float(self.ratio),
            "separates": self.separates,
            "class_cross": [float(v) for v in self.class_cross],
            "class_expected": [float(v) for v in self.class_expected],
            "class_ratio": [float(v) for v in self.class_ratio],
            "class_sizes": [int(v) for v in self.class_sizes],
            "cross_share": None if self.cross_share is None else self.cross_share.to_dict(),
        }

    def summary(self) -> str:
        """One line for verbose output."""
        worst = int(np.argmin(self.class_ratio)) if len(self.class_ratio) else 0
        return (f"prior mixing: {100 * self.cross:.1f} % of P across classes, random labels "
                f"{100 * self.expected:.1f} % (ratio {self.ratio:.3f}; lowest class "
                f"{worst}: {self.class_ratio[worst]:.3f})")


# The row passes (over P's CSR rows, _row_cross; over C's table, _table_sums) are serial
# builds run in parts on ctsne's threads, from PARALLEL_FROM_ENTRIES. Below
# MIXING_NUMPY_BELOW entries (ctsne.tuning) their numpy twins serve instead: no compile.


@threaded(PARALLEL_FROM_ENTRIES)
def _row_cross(indptr, indices, data, codes, mass, cross, start, stop):
    # per row (rows start … stop − 1, each summed in order); the classes' totals in numpy
    for i in range(start, stop):
        c = codes[i]
        m = 0.0
        x = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            m += data[e]
            if codes[indices[e]] != c:
                x += data[e]
        mass[i] = m
        cross[i] = x


# Twin: a small fit compiles no _row_cross.
@_row_cross.small(below=MIXING_NUMPY_BELOW)
def _row_cross_small(indptr, indices, data, codes, mass, cross):
    # np.add.at adds in the order given: each row's sums in the kernel's order
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    apart = codes[indices] != codes[rows]
    mass[:] = 0.0
    cross[:] = 0.0
    np.add.at(mass, rows, data)
    np.add.at(cross, rows[apart], data[apart])


# Rows per part of the table's pass (_table_sums): a fixed number (MIXING_TABLE_ROWS, more
# with many classes), not one part a thread, so the sums' bits do not depend on threads.


@threaded(PARALLEL_FROM_ENTRIES)
def _table_sums(idx, cond, codes, rows_per, part_mass, part_cross, row_mass, row_cross,
                start, stop):
    # Parts start … stop − 1 of rows_per rows each. Row i's sums of its conditional
    # affinities (mass) and of those on other classes (cross), each in column order
    # (_row_cross's order: point_cross_ratio's bits), and each part's class sums of
    # P = (C + Cᵀ)/2n, where entry c_ij adds to row i's class and to j's. Only entries
    # across classes touch memory; the row's three sums run side by side in registers.
    n, k = idx.shape
    L = part_mass.shape[1]
    for part in range(start, stop):
        for c in range(L):
            part_mass[part, c] = 0.0
            part_cross[part, c] = 0.0
        for i in range(part * rows_per, min(n, (part + 1) * rows_per)):
            ci = codes[i]
            m = 0.0
            x = 0.0
            own = 0.0
            for a in range(k):
                v = cond[i, a]
                cj = codes[idx[i, a]]
                m += v
                if cj != ci:
                    x += v
                    part_mass[part, cj] += v
                    part_cross[part, cj] += v
                else:
                    own += v
            row_mass[i] = m
            row_cross[i] = x
            part_mass[part, ci] += m
            part_mass[part, ci] += own
            part_cross[part, ci] += x


# Twin: a small fit compiles no _table_sums.
@_table_sums.small(below=MIXING_NUMPY_BELOW)
def _table_sums_small(idx, cond, codes, rows_per, part_mass, part_cross, row_mass,
                      row_cross):
    # the kernel's additions in its order, by np.add.at (which adds in the order given):
    # each row's sums entry by entry, then each part's class sums as a sequence per row
    # (its entries, then its three sums), unused places sent to a spare slot
    n, k = idx.shape
    L = part_mass.shape[1]
    v = cond.ravel()
    ci = np.repeat(codes, k)
    apart = (codes[idx.ravel()] != ci).reshape(n, k)
    rows = np.repeat(np.arange(n), k)
    own = np.zeros(n)
    row_mass[:] = 0.0
    row_cross[:] = 0.0
    np.add.at(row_mass, rows, v)
    np.add.at(row_cross, rows[apart.ravel()], v[apart.ravel()])
    np.add.at(own, rows[~apart.ravel()], v[~apart.ravel()])
    cell = (np.arange(n) // rows_per)[:, None] * L
    spare = part_mass.size
    to = np.where(apart, cell + codes[idx], spare)
    mine = cell + codes[:, None]
    for out, seq, vals in (
            (part_mass, np.hstack([to, mine, mine]),
             np.hstack([cond, row_mass[:, None], own[:, None]])),
            (part_cross, np.hstack([to, mine]), np.hstack([cond, row_cross[:, None]]))):
        flat = np.zeros(spare + 1)
        np.add.at(flat, seq.ravel(), vals.ravel())
        out[...] = flat[:spare].reshape(out.shape)


def table_sums(idx: np.ndarray, cond: np.ndarray, codes: np.ndarray, n_classes: int):
    """Class sums of ``P = (C + Cᵀ)/2n`` and row sums of C, from C's table, in one pass.

    Returns
    -------
    mass, cross : ndarray (n_classes,)
        Each class's share of P's mass, and of its mass across classes (unnormalised:
        twice n times P's).
    row_mass, row_cross : ndarray (n,)
        Each row's conditional mass and its mass on other classes.
    """
    idx = np.ascontiguousarray(idx)
    cond = np.ascontiguousarray(cond, dtype=np.float64)
    n = idx.shape[0]
    rows_per = max(MIXING_TABLE_ROWS, -(-n * n_classes // MIXING_PART_CELLS))
    parts = max(1, -(-n // rows_per))
    part_mass, part_cross = np.empty((parts, n_classes)), np.empty((parts, n_classes))
    row_mass, row_cross = np.empty(n), np.empty(n)
    _table_sums.run(idx, cond, codes, rows_per, part_mass, part_cross, row_mass, row_cross,
                    items=parts, work=idx.size)
    # the parts in order, one after the other (not numpy's pairwise sum: the same
    # additions whatever the shape)
    return sum_in_order(part_mass), sum_in_order(part_cross), row_mass, row_cross


def random_level(sizes: np.ndarray, n: int) -> np.ndarray:
    """Each class's cross share under random labels, ``e_l = 1 − (n_l − 1)/(n − 1)``."""
    return 1.0 - (sizes - 1) / max(n - 1, 1)


def prior_mixing(P: sp.spmatrix, codes: np.ndarray) -> PriorMixing:
    """The cross-class share of ``P`` for class ``codes`` (0..L−1, one per point).

    Parameters
    ----------
    P : sparse (n, n)
        Affinities, non-negative; normalised here so that they sum to 1.
    codes : ndarray of int (n,)
    """
    P = sp.csr_matrix(P)
    codes = np.asarray(codes, dtype=np.int64)
    n = P.shape[0]
    if codes.shape != (n,):
        raise ValueError(f"codes must have one class per row of P ({n}), got {codes.shape}")
    sizes = np.bincount(codes)
    row_mass, row_cross = np.empty(n), np.empty(n)
    _row_cross.run(P.indptr, P.indices, np.asarray(P.data, dtype=np.float64), codes,
                   row_mass, row_cross, items=n, work=P.nnz)
    mass = np.bincount(codes, weights=row_mass, minlength=len(sizes))
    cross = np.bincount(codes, weights=row_cross, minlength=len(sizes))
    return _summarise(mass, cross, sizes, n)


def table_mixing(idx: np.ndarray, cond: np.ndarray, codes: np.ndarray) -> PriorMixing:
    """:func:`prior_mixing` of ``P = (C + Cᵀ)/2n`` from C's neighbour table, unsymmetrised.

    Parameters
    ----------
    idx : ndarray of int (n, k)
    cond : ndarray (n, k)
        Row i's conditional affinities to ``idx[i]``.
    codes : ndarray of int (n,)
    """
    return table_mixing_and_ratio(idx, cond, codes)[0]


def table_mixing_and_ratio(idx: np.ndarray, cond: np.ndarray,
                           codes: np.ndarray) -> tuple[PriorMixing, np.ndarray]:
    """:func:`table_mixing` and :func:`point_cross_ratio` of one table, from one pass."""
    codes = np.asarray(codes, dtype=np.int64)
    return mixing_from_sums(*table_sums(idx, cond, codes, int(codes.max()) + 1), codes)


def mixing_from_sums(mass: np.ndarray, cross: np.ndarray, row_mass: np.ndarray,
                     row_cross: np.ndarray, codes: np.ndarray) -> tuple[PriorMixing, np.ndarray]:
    """:func:`table_mixing_and_ratio` from a table's sums (:func:`table_sums`'s four
    arrays, however they were summed: the torch engine sums its tables on the device)."""
    codes = np.asarray(codes, dtype=np.int64)
    sizes = np.bincount(codes, minlength=len(mass))
    return (_summarise(np.asarray(mass), np.asarray(cross), sizes, len(codes)),
            _cross_ratio(np.asarray(row_mass), np.asarray(row_cross), codes, sizes))


def labelled_table(idx: np.ndarray, cond: np.ndarray, codes: np.ndarray,
                   labelled: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The neighbour table among the ``labelled`` points only, renumbered.

    Entries pointing at an unlabelled point keep a valid index but carry no mass.

    Returns
    -------
    idx, cond : ndarray (n_labelled, k)
    codes : ndarray of int (n_labelled,)
        The labelled classes, numbered 0.. in sorted order of their codes.
    """
    labelled = np.asarray(labelled, dtype=bool)
    position = np.full(len(labelled), -1, dtype=np.int64)
    position[labelled] = np.arange(int(labelled.sum()))
    sub_idx = position[np.asarray(idx)[labelled]]
    keep = sub_idx >= 0
    # an entry to an unlabelled point carries no mass; its index only has to be valid
    sub_cond = np.where(keep, np.asarray(cond, dtype=np.float64)[labelled], 0.0)
    _, sub_codes = np.unique(np.asarray(codes)[labelled], return_inverse=True)
    return np.where(keep, sub_idx, 0), sub_cond, sub_codes


def labelled_mixing(idx: np.ndarray, cond: np.ndarray, codes: np.ndarray,
                    labelled: np.ndarray) -> PriorMixing:
    """:func:`table_mixing` among the ``labelled`` points only.

    Points without a label form a class of their own that lies among every other class,
    so they connect classes that the labelled points keep apart; whether the prior
    separates the data is a question about the labelled points.

    Parameters
    ----------
    idx, cond, codes
        As for :func:`table_mixing`.
    labelled : ndarray of bool (n,)
    """
    return table_mixing(*labelled_table(idx, cond, codes, labelled))


def _summarise(mass, cross, sizes, n) -> PriorMixing:
    total = mass.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        class_cross = np.where(mass > 0, cross / np.where(mass > 0, mass, 1.0), 0.0)
        class_expected = random_level(sizes, n)
        class_ratio = np.where(class_expected > 0, class_cross / class_expected, np.nan)
    rho = float(np.sum(sizes * (sizes - 1.0)) / (n * (n - 1.0)))
    share = float(cross.sum() / total) if total > 0 else 0.0
    expected = 1.0 - rho
    ratio = share / expected if expected > 0 else float("nan")
    return PriorMixing(share, expected, ratio, class_cross, class_expected, class_ratio, sizes)


def point_cross_ratio(idx: np.ndarray, cond: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each point's cross-class share of its own conditional row, over its random level.

    ``r_i = (Σ_{j ∉ class(i)} p_{j|i}) / e_{class(i)}`` with ``e_l = 1 − (n_l − 1)/(n − 1)``:
    0 for a point whose neighbours all share its class, about 1 where the prior is
    unrelated to the data.

    Parameters
    ----------
    idx, cond, codes
        As for :func:`table_mixing`.

    Returns
    -------
    ndarray (n,)
    """
    return table_mixing_and_ratio(idx, cond, codes)[1]


def _cross_ratio(total: np.ndarray, across: np.ndarray, codes: np.ndarray,
                 sizes: np.ndarray) -> np.ndarray:
    return _share_and_ratio(total, across, random_level(sizes, len(codes))[codes])[1]


def _share_and_ratio(total: np.ndarray, across: np.ndarray,
                     expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows' cross share (``across / total``, 0 for an empty row) and that share over
    each row's random level ``expected`` (1 where that level is 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, across / np.where(total > 0, total, 1.0), 0.0)
        return share, np.where(expected > 0, share / np.where(expected > 0, expected, 1.0),
                               1.0)


class SampledRows(NamedTuple):
    """Rows of the standard P computed for a sample of points (:func:`sampled_rows`)."""

    rows: np.ndarray  # the sampled points, ascending
    share: np.ndarray  # each row's conditional mass on other classes
    ratio: np.ndarray  # the same over the row's random level (point_cross_ratio)


def sampled_rows(X: np.ndarray, codes: np.ndarray, perplexity: float,
                 sample: int = PROBE_SAMPLE, seed: int = 0, index=None) -> SampledRows:
    """The cross-class share of ``sample`` points' rows of the standard P, without it.

    Each sampled point's k nearest points come from an exact Euclidean scan of all points
    (:func:`ctsne.neighbors.brute.brute_knn`: the block tree's distances and tie order,
    so its row is the standard P's row), calibrated to ``perplexity``. A fixed seed: the
    sample is a property of the data, not of a run. ``sample`` as the apart probe's.

    Parameters
    ----------
    X : ndarray (n, p)
        Euclidean data.
    codes : ndarray of int (n,)
    perplexity : float
    sample, seed : int
    index : ExactIndex, optional
        The standard search's block-tree index of ``X``: the rows are then its own
        answers (:meth:`ctsne.neighbors.search.ExactIndex.lists_of`, the same lists as the
        scan's, and faster), and the standard search that may follow reuses the index.

    Returns
    -------
    SampledRows
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = len(codes)
    k = n_neighbors_for(perplexity, n)
    rows = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    if index is not None and index.uses_blocks:
        i, d = index.lists_of(X, rows, k)
    else:
        i, d = brute_knn(X, X[rows], k + 1)
        i, d = drop_self(i, d, rows, k)
    cond = calibrate(np.ascontiguousarray(d), perplexity)
    sizes = np.bincount(codes)
    expected = random_level(sizes, n)[codes[rows]]
    total = cond.sum(axis=1)
    across = np.where(codes[i] != codes[rows][:, None], cond, 0.0).sum(axis=1)
    return SampledRows(rows, *_share_and_ratio(total, across, expected))

"""Class-stratified negative sampling for the conditional UMAP's repulsion.

The prior re-weights UMAP's repulsion: a point ``i`` of class ``c`` should feel
``Σ_j W[c, c_j] · rep_ij`` over every point ``j``, with ``W`` a positive (L, L) weight
matrix over the prior's joint classes (α' on the diagonal and β' off it for one prior
column; a product of such factors for independent columns). UMAP estimates its
unweighted sum by drawing negatives uniformly; weighting uniform draws by ``W`` would
still work, but with β' ≪ 1 most draws land in other classes and carry almost no
weight, so the few same-class draws make up nearly all the force and its variance.

Here the negative's class ``l`` is drawn with probability
``π_c(l) = W[c, l] · n_l / Z_c`` (``Z_c = Σ_l W[c, l] · n_l``), then a point uniformly
within class ``l``, and the draw carries the weight ``Z_c / n``. For every point ``j``

    E[weight · 1{j drawn}] = (Z_c / n) · π_c(c_j) / n_{c_j} = W[c, c_j] / n,

the same expectation as a uniform draw weighted by ``W`` — the conditional repulsion
exactly — while every draw carries the same weight, so none is wasted.

With ``W`` tied by the paper's Eq. 4 the mean pair weight is 1, so ``Z_c / n`` stays
near 1 and the repulsion budget matches UMAP's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["NegativeSampler", "draw"]


@dataclass
class NegativeSampler:
    """Where a negative sample for a source class comes from, and its weight.

    Build with :meth:`from_classes` (a prior) or :meth:`uniform` (plain UMAP). The arrays
    are passed one by one to :func:`draw` inside numba kernels.

    Attributes
    ----------
    members : ndarray of int64 (n,)
        Point indices sorted by class (stable: by index within a class).
    offsets : ndarray of int64 (L + 1,)
        Class ``l``'s points are ``members[offsets[l]:offsets[l + 1]]``.
    cdf : ndarray of float64 (R, L)
        Row ``r``: cumulative π over the target classes for source row ``r``; the last
        entry with positive probability and all after it are exactly 1. ``R = L`` for
        the classes themselves, more after :meth:`with_source_rows`.
    sample_weight : ndarray of float64 (R,)
        ``Z_r / n``, the weight every draw for source row ``r`` carries.
    classes : ndarray of int64 (n,)
        Each point's class, which is also its source row.
    """

    members: np.ndarray
    offsets: np.ndarray
    cdf: np.ndarray
    sample_weight: np.ndarray
    classes: np.ndarray

    @property
    def n(self) -> int:
        """Number of points negatives are drawn from."""
        return len(self.classes)

    @property
    def n_classes(self) -> int:
        """Number of target classes L."""
        return len(self.offsets) - 1

    @classmethod
    def from_classes(cls, classes: np.ndarray, W: np.ndarray) -> NegativeSampler:
        """Sampler for points with class codes ``classes`` and pair weights ``W``.

        Parameters
        ----------
        classes : array of int (n,)
            Class codes in ``[0, L)``; a class may be empty.
        W : array of float (L, L)
            ``W[c, l]``: weight of the repulsion a class-``c`` point feels from a class-``l``
            point. Non-negative and finite; symmetric for a prior, though the sampler
            does not need it. Each source row must give a positive total ``Z_c``.

        Returns
        -------
        NegativeSampler
        """
        classes = np.asarray(classes)
        W = np.asarray(W, dtype=np.float64)
        if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] == 0:
            raise ValueError(f"W must be a non-empty square matrix, got shape {W.shape}")
        if classes.ndim != 1 or len(classes) == 0:
            raise ValueError("classes must be a non-empty 1-D array")
        if not np.issubdtype(classes.dtype, np.integer):
            raise ValueError(f"classes must be integer codes, got dtype {classes.dtype}")
        n_classes = W.shape[0]
        if classes.min() < 0 or classes.max() >= n_classes:
            raise ValueError(f"class codes must lie in [0, {n_classes}) for a W of that size")
        classes = classes.astype(np.int64)
        # stable: within a class the members keep index order, so draws are reproducible
        members = np.argsort(classes, kind="stable").astype(np.int64)
        sizes = np.bincount(classes, minlength=n_classes)
        offsets = np.zeros(n_classes + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        cdf, sample_weight = _rows(W, sizes)
        return cls(members, offsets, cdf, sample_weight, classes)

    @classmethod
    def uniform(cls, n: int) -> NegativeSampler:
        """Plain UMAP's sampler: one class, every point equally likely, weight 1."""
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        return cls(members=np.arange(n, dtype=np.int64),
                   offsets=np.array([0, n], dtype=np.int64),
                   cdf=np.ones((1, 1)), sample_weight=np.ones(1),
                   classes=np.zeros(n, dtype=np.int64))

    def with_source_rows(self, W_rows: np.ndarray) -> NegativeSampler:
        """A sampler with extra source rows appended, for points outside these classes.

        For ``transform``: a new point whose label the reference map never saw feels
        weight β' from every reference point, i.e. the row ``β' · ones(L)`` (which draws
        uniformly, with weight β'). Extra row ``k`` gets source row ``L + k``; pass that
        in :func:`~ctsne.optimization.sgd.optimize_layout`'s ``source_class``.

        Parameters
        ----------
        W_rows : array of float (m, L)
            Weight of each target class for each new source row.

        Returns
        -------
        NegativeSampler
            Same points and classes; ``cdf`` and ``sample_weight`` have ``m`` more rows.
        """
        W_rows = np.atleast_2d(np.asarray(W_rows, dtype=np.float64))
        if W_rows.ndim != 2 or W_rows.shape[1] != self.n_classes:
            raise ValueError(f"W_rows must have {self.n_classes} columns, got shape "
                             f"{W_rows.shape}")
        cdf, weight = _rows(W_rows, np.diff(self.offsets))
        return NegativeSampler(self.members, self.offsets, np.vstack([self.cdf, cdf]),
                               np.concatenate([self.sample_weight, weight]), self.classes)

    def expected_weights(self, row: int) -> np.ndarray:
        """``E[weight · 1{j drawn}]`` for every point ``j``, one draw from source ``row``.

        Computed from ``cdf`` and ``sample_weight`` (what :func:`draw` uses), so it checks
        the construction: it equals ``W[row, c_j] / n``.
        """
        pi = np.diff(self.cdf[row], prepend=0.0)
        sizes = np.diff(self.offsets)
        per_point = np.divide(pi, sizes, out=np.zeros_like(pi), where=sizes > 0)
        return self.sample_weight[row] * per_point[self.classes]


def _rows(W: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative π and ``Z / n`` for each row of ``W`` against class sizes ``sizes``."""
    if not np.all(np.isfinite(W)) or np.any(W < 0):
        raise ValueError("pair weights must be finite and non-negative")
    mass = W * sizes[None, :]
    Z = mass.sum(axis=1)
    if np.any(Z <= 0):
        raise ValueError("every source class needs a positive weight to some non-empty class")
    cdf = np.cumsum(mass, axis=1) / Z[:, None]
    # From the last class a row can reach onwards the cdf is exactly 1: a uniform u < 1
    # then always finds a class, and never one of probability 0 after it (rounding could
    # otherwise leave the total at 1 − 1e-16 and a u above it with nowhere to go).
    for r in range(len(cdf)):
        last = np.flatnonzero(mass[r] > 0)[-1]
        cdf[r, last:] = 1.0
    return cdf, Z / sizes.sum()


@numba.njit(cache=True)
def draw(offsets, cdf, row, u1, u2):
    """One negative: a class from ``cdf[row]`` by ``u1``, a point in it by ``u2``.

    Parameters
    ----------
    offsets, cdf : ndarray
        The :class:`NegativeSampler`'s arrays.
    row : int
        Source row (the head point's class, or an extra row).
    u1, u2 : float
        Independent uniforms in [0, 1).

    Returns
    -------
    int
        The drawn point's position in ``members`` (its index where the points are
        numbered in member order, as the SGD numbers them).
    """
    # the first class whose cumulative probability exceeds u1: classes of probability 0
    # repeat the previous entry and so are never the first to exceed it
    lo = 0
    hi = cdf.shape[1] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cdf[row, mid] > u1:
            hi = mid
        else:
            lo = mid + 1
    start = offsets[lo]
    size = offsets[lo + 1] - start
    k = int(u2 * size)
    if k >= size:  # u2 within rounding of 1
        k = size - 1
    return start + k

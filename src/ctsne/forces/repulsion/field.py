"""The repulsion field of a fixed 2-D point set, tabulated once on a grid (``transform``).

New points placed into a fitted map are repelled by reference points that never move, so
the field those points create can be computed once and only read at the new points'
positions on every iteration. For a reference set R::

    φ(x) = Σ_{j∈R} t(x − y_j),   ψ(x) = Σ_{j∈R} t(x − y_j)² (x − y_j),   t(v) = 1/(1 + |v|²)

are tabulated on an equispaced grid over R's bounding box (plus a margin) by the
interpolation scheme of :mod:`ctsne.forces.repulsion.fft`: each reference point spreads a
unit charge onto its p × p nearest nodes with Lagrange weights, the charges are convolved
with the kernels ``t`` and ``t² v`` sampled at node offsets (one zero-padded real FFT
forward, three back), and a query point reads φ and ψ by the same Lagrange interpolation
of the node values. For n reference points and G nodes, building costs O(n p² + G log G)
once and each evaluation O(p²) per query point, where a tree walk costs O(log n) cell
visits with a division each.

A query point outside the grid (one pushed far out of the map) is reported, and the
caller evaluates it another way (:class:`ctsne.forces.repulsion.reference.ReferenceTree`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.fft

from ..._parallel import threaded
from ...tuning import FIELD_PARALLEL_FROM_QUERIES as PARALLEL_FROM_QUERIES
from . import _interp
from .fft import grid_shape

__all__ = ["ReferenceField", "FieldGrid"]

# Lagrange nodes per box and dimension, and boxes per unit of the map. The field is a sum
# of kernels of unit width, so its interpolation error falls as (spacing)^p; these keep
# placements close to the exact repulsion's at a modest grid.
N_INTERP = 5
BOXES_PER_UNIT = 0.8
# Margin around the reference box, in map units and as a fraction of its span: new points
# start inside the map (at their neighbours' weighted mean) and stay near it.
MARGIN = 2.0
MARGIN_SHARE = 0.05


class FieldGrid:
    """Geometry shared by the fields of one map: node j of axis k at ``origin[k] + j·delta[k]``.

    Parameters
    ----------
    Y : ndarray (n, 2)
        The reference map (all its points: every class's field lies within its box).
    workers : int
        Threads of the FFTs.
    """

    def __init__(self, Y: np.ndarray, workers: int = 1):
        lo = Y.min(axis=0)
        hi = Y.max(axis=0)
        span = hi - lo
        pad = np.maximum(MARGIN, MARGIN_SHARE * span)
        lo, span = lo - pad, span + 2 * pad
        p = N_INTERP
        self.delta, self.n_nodes, self.half = grid_shape(span, p, 1, BOXES_PER_UNIT)
        self.origin = lo - ((p - 1) // 2) * self.delta
        self.inv_delta = 1.0 / self.delta
        nodes = np.arange(p, dtype=np.float64)
        diff = nodes[:, None] - nodes[None, :]
        np.fill_diagonal(diff, 1.0)
        self.inv_denom = 1.0 / diff.prod(axis=1)
        self.workers = workers
        self.shape = tuple(int(2 * h) for h in self.half)
        # the kernels at every offset of the circulant grid (negative past the middle)
        off = [self.delta[k] * np.fft.ifftshift(np.arange(-h, h)) for k, h in
               enumerate(self.half)]
        vx, vy = np.meshgrid(off[0], off[1], indexing="ij")
        t = 1.0 / (1.0 + vx * vx + vy * vy)
        self.spectra = [scipy.fft.rfft2(k, workers=workers) for k in (t, t * t * vx, t * t * vy)]

    @property
    def nbytes(self) -> int:
        """Memory of one field on this grid (three node tables)."""
        return 3 * 8 * int(np.prod(self.n_nodes))


class ReferenceField:
    """φ and ψ (module docstring) of the points ``Y`` on ``grid``.

    Parameters
    ----------
    Y : ndarray (n, 2)
        The reference points of this field, inside ``grid``'s box.
    grid : FieldGrid
    """

    def __init__(self, Y: np.ndarray, grid: FieldGrid):
        self.grid = g = grid
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        one = np.zeros(1, dtype=np.int64)
        charges = _interp.spread_2d(Y, g.origin, g.inv_delta, g.n_nodes, g.inv_denom, one,
                                    np.array([g.n_nodes[0]]), False)
        spec = scipy.fft.rfft2(charges, s=g.shape, workers=g.workers)
        nx, ny = g.n_nodes
        # a node's three values side by side: one cache line per node read
        self.pot = np.empty((nx, ny, 3))
        for c, k_hat in enumerate(g.spectra):
            self.pot[:, :, c] = scipy.fft.irfft2(spec * k_hat, s=g.shape,
                                                 workers=g.workers)[:nx, :ny]

    def add(self, Yq: np.ndarray, coef: float, F: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Add ``coef·ψ(y_i)`` to ``F[i]`` and ``coef·φ(y_i)`` to ``Z[i]``; return the rows
        of ``Yq`` outside the grid (left unchanged, for the caller to evaluate)."""
        g = self.grid
        inside = np.empty(len(Yq), dtype=np.bool_)
        _read.run(Yq, g.origin, g.inv_delta, g.n_nodes, g.inv_denom, self.pot, coef, F, Z,
                  inside, items=len(Yq), work=len(Yq))
        return np.flatnonzero(~inside)


@threaded(PARALLEL_FROM_QUERIES)
def _read(Yq, origin, inv_delta, n_nodes, inv_denom, pot, coef, F, Z, inside, start, stop):
    # rows start … stop − 1 of Yq, each read from the grid on its own
    p = inv_denom.shape[0]
    wx = np.empty(p)
    wy = np.empty(p)
    for i in range(start, stop):
        ok = True
        for k in range(2):
            x = (Yq[i, k] - origin[k]) * inv_delta[k]
            first = math.floor(x - 0.5 * p + 1.0)
            if not (first >= 0 and first <= n_nodes[k] - p):  # also catches NaN
                ok = False
        inside[i] = ok
        if not ok:
            continue
        ix = _interp.locate(Yq[i, 0], origin[0], inv_delta[0], n_nodes[0] - p, inv_denom, wx)
        iy = _interp.locate(Yq[i, 1], origin[1], inv_delta[1], n_nodes[1] - p, inv_denom, wy)
        z = fx = fy = 0.0
        for a in range(p):
            for b in range(p):
                w = wx[a] * wy[b]
                z += w * pot[ix + a, iy + b, 0]
                fx += w * pot[ix + a, iy + b, 1]
                fy += w * pot[ix + a, iy + b, 2]
        Z[i] += coef * z
        F[i, 0] += coef * fx
        F[i, 1] += coef * fy

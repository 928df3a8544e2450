"""FFT-accelerated interpolation repulsion (Linderman et al., Nature Methods 2019) for d ≤ 2.

For points ``Y`` (m, d) it returns ``F_i = Σ_{j≠i} t_ij² (y_i − y_j)`` and
``Z = Σ_{k≠l} t_kl`` with ``t = 1/(1 + |y_k − y_l|²)``, in O(m p^d + G log G) for a grid of
G nodes:

1. An equispaced grid covers the bounding box: boxes of ``p`` nodes, ``boxes_per_unit``
   per unit of span (more if the span holds fewer than ``min_boxes``).
2. Every point spreads a unit charge onto the ``p^d`` nodes nearest to it with Lagrange
   weights (parallel over points, private grids, points visited in tile order).
3. The charges are convolved with the force kernel ``t(v)² v``, one component per
   dimension, sampled on the grid: Toeplitz products done as circulant ones by
   zero-padded real FFTs (``scipy.fft`` with several workers).
4. The potentials are interpolated back to the points: that is ``F`` (parallel gather).

Departures from FIt-SNE:

* One charge and a vector kernel, where FIt-SNE convolves the charges ``1, y`` (and
  ``|y|²``) with ``t²`` and forms ``F_i = y_i φ₁ − φ_y``, a difference of large terms that
  loses all accuracy for sparse, wide point sets (a scattered ct-SNE class). Here nothing
  cancels, and a point's own charge adds ``Σ t(v)² v = 0`` by symmetry.
* Stencils are centred on the point (its p nearest nodes) instead of being the p nodes of
  the box it falls in: same grid and FFT, smaller interpolation error.
* ``Z`` needs no potential: the sum over i of the interpolated ``Σ_j t_ij`` is the
  quadratic form ``cᵀ T c`` of the spread charges, which Parseval turns into a weighted
  sum over the charge spectrum. The self-pairs are removed as interpolated (each point's
  weights paired through ``t``: ``(2p−1)^d`` terms), not as ``t_ii = 1``; the latter
  leaves m interpolation errors in Z, which dominate for a small or sparse group.
* The kernels are even or odd along each axis, so their spectra come from type-I cosine
  and sine transforms of one quadrant.
* The node spacing is fixed (a ladder of values for spans below ``min_boxes`` boxes), so
  the kernel spectra depend on the FFT size alone and are cached: a slowly growing layout,
  or classes scattered over the same layout, reuse them.
* Large 2-D grids (``SINGLE_ABOVE``) are transformed in float32: the transforms dominate a
  wide layout's cost, and their rounding stays far below the interpolation error.
* All stages use numba ``prange``, ctsne's threads or ``scipy.fft`` workers above a size
  where waking the thread pool pays; below it they run in the calling thread. The points
  are spread and gathered in chunks fixed by the problem's size (:func:`point_chunks`),
  whose private grids and Z terms are summed in chunk order, so the forces and Z are the
  same on any number of threads.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numba
import numpy as np
import scipy.fft

from ..._parallel import chunk_count
from ...tuning import FFT_CHUNK_COST as CHUNK_COST
from ...tuning import FFT_KERNEL_CACHE_BYTES as KERNEL_CACHE_BYTES
from ...tuning import FFT_MOST_CHUNKS as MOST_CHUNKS
from ...tuning import FFT_PARALLEL_ABOVE as PARALLEL_ABOVE
from ...tuning import FFT_SINGLE_ABOVE as SINGLE_ABOVE
from ...tuning import FFT_SORT_ABOVE_BYTES as SORT_ABOVE_BYTES
from ...tuning import FFT_SORT_ABOVE_POINTS as SORT_ABOVE_POINTS
from . import _interp
from ._interp import TILE

__all__ = ["clear_kernel_cache", "exact_is_faster", "grid_shape", "point_chunks", "repulsion_fft"]

# Grid resolution: in 2-D, p = 5 and 0.8 boxes per unit are about as accurate as
# Barnes-Hut at θ = 0.5; in 1-D the grid costs little and keeps a finer spacing. Raising p
# is the cheaper way up: the error falls as the p-th power of the node spacing. It depends
# on the spacing only, so a small minimum number of boxes keeps a small group's grid cheap.
# p = 5 has 2-D passes of its own (_interp.ORDER_5).
N_INTERP = 5
MIN_BOXES = 8
BOXES_PER_UNIT = {1: 1.25, 2: 0.8}
# Most nodes per dimension, so that a wildly spread embedding (a bad step, an unusual
# layout) loses accuracy instead of exhausting memory.
MAX_NODES = {1: 1 << 22, 2: 4096}
# Spans below this (zero included) are flat and keep the nominal spacing: a zero or
# subnormal span would overflow the ladder's exponent. Above it the spacing stays relative
# to the span however small (a map shrunk under early exaggeration needs accurate forces).
FLAT_SPAN = 2.0 ** -1000
# Point chunks (point_chunks): at most MOST_CHUNKS (the most threads a point stage keeps
# busy), each of at least PARALLEL_ABOVE stencil terms; a spreading chunk also of at least
# CHUNK_COST times the nodes of its private grid, cleared and summed on every call (at 8,
# a small grid's spreading on one thread took 20 % longer than in one chunk; at 16, ~4 %).
_SPECTRA: OrderedDict = OrderedDict()
_SPECTRA_LOCK = threading.Lock()


def grid_shape(
    span: np.ndarray,
    n_interp: int = N_INTERP,
    min_boxes: int = MIN_BOXES,
    boxes_per_unit: float | None = None,
    max_nodes: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Node spacing, node count and padded half-length per dimension for a bounding box
    of extent ``span``.

    The spacing is ``h / p`` for boxes of width ``h = 1 / boxes_per_unit``; a span of
    fewer than ``min_boxes`` boxes, or one that would need more than ``max_nodes`` nodes,
    takes the nearest finer (coarser) spacing on a ladder of ratio 2^(1/8); a span below
    ``FLAT_SPAN`` (zero included) keeps ``h / p``. A fixed set of spacings lets successive
    calls reuse the kernel spectra.

    Returns
    -------
    delta : ndarray (d,)
    n_nodes : ndarray of int64 (d,)
        ``span / delta`` plus about p/2 nodes each side for the stencils at the edges.
    half : ndarray of int64 (d,)
        ``M ≥ n_nodes`` such that the circulant length ``2M`` is a fast FFT size.
    """
    span = np.asarray(span, dtype=np.float64)
    if not np.all(np.isfinite(span)) or np.any(span < 0):
        raise ValueError(f"grid_shape needs finite, non-negative spans, got {span}")
    if boxes_per_unit is None:
        boxes_per_unit = BOXES_PER_UNIT[len(span)]
    p = n_interp
    cap = MAX_NODES[len(span)] if max_nodes is None else max_nodes
    nominal = 1.0 / (p * boxes_per_unit)
    delta = np.full(len(span), nominal)
    fine = span / (max(min_boxes, 1) * p)
    coarse = span / max(cap - 2 * p, 1)
    for k in range(len(span)):
        # small span: the largest ladder step below span / min_boxes (logarithms apart:
        # their ratio overflows for a span near FLAT_SPAN)
        if span[k] >= FLAT_SPAN and fine[k] < nominal:
            steps = math.ceil(8 * (math.log2(nominal) - math.log2(fine[k])))
            delta[k] = nominal * 2.0 ** (-steps / 8)
        if coarse[k] > delta[k]:  # capped: the smallest ladder step that fits
            delta[k] = nominal * 2.0 ** (math.ceil(8 * math.log2(coarse[k] / nominal)) / 8)
    n_nodes = (np.floor(span / delta + (p - 1) // 2 + p / 2) + 1).astype(np.int64)
    half = np.array([scipy.fft.next_fast_len(int(n), real=True) for n in n_nodes],
                    dtype=np.int64)
    return delta, n_nodes, half


def exact_is_faster(m: int, span, n_interp: int = N_INTERP, min_boxes: int = MIN_BOXES,
                    boxes_per_unit: float | None = None) -> bool:
    """Whether the exact O(m²) kernel beats this engine for m points over ``span`` (d,).

    A cost model fitted to uniform 2-D groups (one thread, kernel spectra cached): the
    exact kernel's time per pair against this engine's per node of the padded grid and
    per point. The grid follows the span, not m: a class scattered over the whole layout
    needs the whole layout's grid, so the crossover grows with the span.
    """
    span = np.atleast_1d(span)
    _, _, half = grid_shape(span, n_interp, min_boxes, boxes_per_unit)
    per_pair = 1.36 if len(span) == 2 else 3.0
    return per_pair * m * m < 14.0 * float(np.prod(2 * half)) + 45.0 * m


def _tiled(m: int, n_nodes: np.ndarray) -> bool:
    """Whether the points are spread in tile order: a 2-D grid past the cache, many points."""
    return (len(n_nodes) == 2 and 8 * int(n_nodes[0]) * int(n_nodes[1]) > SORT_ABOVE_BYTES
            and m > SORT_ABOVE_POINTS)


def point_chunks(m: int, p: int, n_nodes: np.ndarray) -> tuple[int, int]:
    """Chunks of the m points for spreading and for gathering on a grid of ``n_nodes``.

    Each spreading chunk spreads onto a private grid, and the private grids are summed in
    chunk order; each gathering chunk sums its points' self-pair terms of Z, and the chunks'
    sums are added in chunk order: the chunks fix those sums' rounding. They depend on the
    problem alone, never on the thread count (a thread takes a run of whole chunks), so
    the forces and Z are the same on any number of threads. One chunk each up to
    ``PARALLEL_ABOVE`` stencil terms (m·p^d); above, one per that many terms, at most
    ``MOST_CHUNKS``, and for spreading also one per ``CHUNK_COST`` times a private grid's
    nodes (the whole grid; in tile order a band of the grid's rows: its share plus about
    two tiles and a stencil).

    Returns
    -------
    spread, gather : int
    """
    d = len(n_nodes)
    work = m * p**d
    if work <= PARALLEL_ABOVE:
        return 1, 1
    if _tiled(m, n_nodes):
        own = (2 * TILE + 2 * p) * int(n_nodes[1])
    else:
        own = int(np.prod(n_nodes))
    return (chunk_count(work, max(PARALLEL_ABOVE, CHUNK_COST * own), MOST_CHUNKS),
            chunk_count(work, PARALLEL_ABOVE, MOST_CHUNKS))


class _Clock:
    """Adds wall and process CPU seconds per stage to a dict (``name``, ``name + "_cpu"``)."""

    def __init__(self, out: dict | None):
        self.out = out
        if out is not None:  # process_time is a system call: only when asked
            self.t = time.perf_counter()
            self.c = time.process_time()

    def __call__(self, name: str) -> None:
        if self.out is not None:
            now, cpu = time.perf_counter(), time.process_time()
            self.out[name] = self.out.get(name, 0.0) + now - self.t
            self.out[name + "_cpu"] = self.out.get(name + "_cpu", 0.0) + cpu - self.c
            self.t, self.c = now, cpu


@dataclass
class _Grid:
    """Geometry of one evaluation: node j of dimension k is at ``origin[k] + j·delta[k]``."""

    p: int
    n_nodes: np.ndarray
    half: np.ndarray
    origin: np.ndarray
    inv_delta: np.ndarray
    inv_denom: np.ndarray
    delta: np.ndarray
    t_near: np.ndarray  # t at node offsets 0..p−1 per axis, for the self-pairs
    n_chunks: int  # spreading chunks (point_chunks); 1: spreading runs serially
    gather_chunks: int  # gathering chunks (point_chunks); 1: gathering runs serially
    par_grid: bool  # whether the grid stages run in parallel
    workers: int
    single: bool  # whether the FFTs and spectra are float32 (SINGLE_ABOVE)


def _plan(Y, lo, span, n_interp, min_boxes, boxes_per_unit, max_nodes, workers) -> _Grid:
    p = n_interp
    d = len(span)
    delta, n_nodes, half = grid_shape(span, p, min_boxes, boxes_per_unit, max_nodes)
    padded = int(np.prod(2 * half))
    par_grid = padded > PARALLEL_ABOVE
    nodes = np.arange(p, dtype=np.float64)
    diff = nodes[:, None] - nodes[None, :]
    np.fill_diagonal(diff, 1.0)
    chunks = point_chunks(len(Y), p, n_nodes)
    return _Grid(
        p=p,
        n_nodes=n_nodes,
        half=half,
        origin=lo - ((p - 1) // 2) * delta,
        inv_delta=1.0 / delta,
        inv_denom=1.0 / diff.prod(axis=1),
        delta=delta,
        t_near=_interp.kernel_quadrant(np.full(d, p), delta, False)[0],
        n_chunks=chunks[0],
        gather_chunks=chunks[1],
        par_grid=par_grid,
        workers=workers if par_grid else 1,
        single=d == 2 and padded >= SINGLE_ABOVE,
    )


def _kernel_spectra(g: _Grid) -> tuple[np.ndarray, ...]:
    """Spectra of ``t`` and of the force kernels on the circulant grid, from the cache if
    an earlier call had the same spacing and size (they depend on nothing else: offsets
    past the nodes are never paired, so the quadrant holds the kernels up to ``half``)."""
    key = (tuple(g.delta.tolist()), tuple(g.half.tolist()), g.single)
    with _SPECTRA_LOCK:
        if key in _SPECTRA:
            _SPECTRA.move_to_end(key)
            return _SPECTRA[key]
    w = g.workers
    k = _interp.kernel_quadrant(g.half + 1, g.delta, g.par_grid)
    if len(g.half) == 1:
        M = g.half[0]
        t_hat = scipy.fft.dct(k[0, :, 0], type=1, workers=w)
        # the force kernel is odd: its spectrum is −i times a sine transform
        g_hat = np.zeros(M + 1, dtype=np.complex128)
        g_hat[1:M] = -1j * scipy.fft.dst(k[1, 1:M, 0], type=1, workers=w)
        spectra = (t_hat, g_hat)
    else:
        Mx, My = g.half
        t_hat = scipy.fft.dctn(k[0], type=1, workers=w)
        # the force kernels are odd along their own axis and even along the other
        rx = scipy.fft.dct(scipy.fft.dst(k[1, 1:Mx], type=1, axis=0, workers=w), type=1,
                           axis=1, workers=w)
        ry = scipy.fft.dst(scipy.fft.dct(k[2, :, 1:My], type=1, axis=0, workers=w), type=1,
                           axis=1, workers=w)
        spectra = (t_hat, rx, ry)
        if g.single:
            spectra = tuple(a.astype(np.float32) for a in spectra)
    del k
    size = sum(a.nbytes for a in spectra)
    if size <= KERNEL_CACHE_BYTES:
        for a in spectra:
            a.setflags(write=False)
        with _SPECTRA_LOCK:
            _SPECTRA[key] = spectra
            while sum(a.nbytes for v in _SPECTRA.values() for a in v) > KERNEL_CACHE_BYTES:
                _SPECTRA.popitem(last=False)
    return spectra


def clear_kernel_cache() -> None:
    """Drop the cached kernel spectra (up to ``KERNEL_CACHE_BYTES`` of memory)."""
    with _SPECTRA_LOCK:
        _SPECTRA.clear()


def _spread(Y: np.ndarray, g: _Grid):
    """Unit charges on the grid, and the points in the order they were visited (with
    ``order`` mapping back; None if unchanged)."""
    if Y.shape[1] == 1:
        charges = _interp.spread_1d(Y.ravel(), g.origin[0], g.inv_delta[0], g.n_nodes[0],
                                    g.inv_denom, g.n_chunks, g.n_chunks > 1)
        return charges, Y, None
    m = len(Y)
    nx = g.n_nodes[0]
    if _tiled(m, g.n_nodes):
        order, Ys = _interp.tile_order(Y, g.origin, g.inv_delta, g.n_nodes, g.n_chunks)
        # tile rows are the major key, so a chunk of the sorted points only reaches the
        # grid rows between the tile rows of its first and last point
        bounds = np.arange(g.n_chunks + 1) * m // g.n_chunks
        tx = np.floor((Ys[bounds[:-1], 0] - g.origin[0]) * g.inv_delta[0]) // TILE
        band_lo = np.clip(tx * TILE - g.p, 0, nx).astype(np.int64)
        tx = np.floor((Ys[bounds[1:] - 1, 0] - g.origin[0]) * g.inv_delta[0]) // TILE
        band_hi = np.clip((tx + 1) * TILE + g.p, 0, nx).astype(np.int64)
    else:
        order, Ys = None, Y
        band_lo = np.zeros(g.n_chunks, dtype=np.int64)
        band_hi = np.full(g.n_chunks, nx, dtype=np.int64)
    charges = _interp.spread_2d(Ys, g.origin, g.inv_delta, g.n_nodes, g.inv_denom,
                                band_lo, band_hi, g.n_chunks > 1)
    return charges, Ys, order


def _convolve(charges: np.ndarray, g: _Grid) -> tuple[np.ndarray, float]:
    """Potentials of the force kernel ``t² v`` on the node rows (columns padded), one per
    component, and ``Σ_i Σ_j t̃_ij`` including the interpolated self-pairs."""
    w = g.workers
    length = 2 * g.half
    spectra = _kernel_spectra(g)
    if charges.ndim == 1:
        t_hat, g_hat = spectra
        spec = scipy.fft.rfft(charges, n=length[0], workers=w)
        power = spec.real**2 + spec.imag**2
        power[1:-1] *= 2.0  # conjugate pairs stored once
        pot = scipy.fft.irfft(spec * g_hat, n=length[0], workers=w)
        return pot[None], float(power @ t_hat) / length[0]
    t_hat, rx, ry = spectra
    # rows past the nodes are zero: transform along the rows first, for node rows only,
    # and let the second transform pad; on the way back only node rows are needed
    if g.single:
        charges = charges.astype(np.float32)
    spec = scipy.fft.rfft(charges, n=length[1], axis=-1, workers=w)
    spec = scipy.fft.fft(spec, n=length[0], axis=-2, workers=w, overwrite_x=True)
    pot_hat, z_sum = _interp.apply_spectra_2d(spec, t_hat, rx, ry, g.half[0], g.par_grid)
    del spec
    pot_hat = scipy.fft.ifft(pot_hat, axis=-2, workers=w, overwrite_x=True)
    pot = scipy.fft.irfft(pot_hat[:, : g.n_nodes[0]], n=length[1], axis=-1, workers=w)
    return pot, z_sum / (length[0] * length[1])


def _gather(Ys: np.ndarray, order, pot: np.ndarray, g: _Grid) -> tuple[np.ndarray, float]:
    """Forces in the original row order, and the interpolated self-pairs ``Σ_i t̃_ii``."""
    if Ys.shape[1] == 1:
        return _interp.gather_1d(Ys.ravel(), g.origin[0], g.inv_delta[0], g.n_nodes[0],
                                 g.inv_denom, pot[0], g.t_near[:, 0], g.gather_chunks,
                                 g.gather_chunks > 1)
    if order is None:
        order = np.arange(len(Ys))
    return _interp.gather_2d(Ys, order, g.origin, g.inv_delta, g.n_nodes, g.inv_denom, pot,
                             g.t_near, g.gather_chunks, g.gather_chunks > 1)


def repulsion_fft(
    Y: np.ndarray,
    n_interp: int = N_INTERP,
    min_boxes: int = MIN_BOXES,
    boxes_per_unit: float | None = None,
    max_nodes: int | None = None,
    workers: int = -1,
    timings: dict | None = None,
) -> tuple[np.ndarray, float]:
    """t-SNE repulsion by FFT-accelerated interpolation, for d = 1 or 2.

    Parameters
    ----------
    Y : ndarray (m, d)
        Points, d in {1, 2}.
    n_interp : int
        Lagrange nodes per box and dimension (p); the interpolation has order p.
    min_boxes : int
        Least number of boxes per dimension.
    boxes_per_unit : float, optional
        Boxes per unit of the bounding box's extent (default ``BOXES_PER_UNIT[d]``). The
        kernel varies on the unit scale, so this and p set the accuracy; the FFT cost
        grows as its d-th power.
    max_nodes : int, optional
        Most grid nodes per dimension (default ``MAX_NODES[d]``); past it the boxes
        widen and the accuracy drops, as the p-th power of the box width.
    workers : int
        Threads for the FFTs (-1: numba's current thread count, so that ``n_jobs``
        limits them too); spreading and interpolation use numba's thread pool.
    timings : dict, optional
        If given, wall and CPU seconds per stage are added to it.

    Returns
    -------
    F : ndarray (m, d)
        ``F_i = Σ_{j≠i} t_ij² (y_i − y_j)``.
    Z : float
        ``Σ_{k≠l} t_kl``.
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] not in (1, 2):
        raise ValueError(f"repulsion_fft needs Y of shape (m, 1) or (m, 2), got {Y.shape}")
    if n_interp < 1:
        raise ValueError(f"n_interp must be at least 1, got {n_interp}")
    m, d = Y.shape
    if m < 2:
        return np.zeros_like(Y), 0.0
    clock = _Clock(timings)
    # per column: numpy's axis-0 reduction over an (m, 2) array is many times slower
    lo = np.array([Y[:, k].min() for k in range(d)])
    hi = np.array([Y[:, k].max() for k in range(d)])
    span = hi - lo
    if not np.all(np.isfinite(span)):
        raise ValueError("Y contains non-finite values")
    if not np.any(span > 0):  # all points coincide: every t is 1 and every force 0
        return np.zeros_like(Y), float(m) * (m - 1)
    # a flat dimension still needs a box of positive width; any width is exact there
    span = np.where(span > 0, span, 1.0)
    lo = np.where(hi > lo, lo, lo - 0.5)

    if workers == -1:
        workers = numba.get_num_threads()
    g = _plan(Y, lo, span, n_interp, min_boxes, boxes_per_unit, max_nodes, workers)
    clock("grid")
    charges, Ys, order = _spread(Y, g)
    clock("spread")
    pot, z_sum = _convolve(charges, g)
    clock("fft")
    F, z_self = _gather(Ys, order, pot, g)
    clock("gather")
    return F, float(z_sum - z_self)

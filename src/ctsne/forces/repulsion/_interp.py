"""Numba kernels of the FFT interpolation engine (:mod:`ctsne.forces.repulsion.fft`).

Node j of a dimension sits at ``origin + j·delta``; a point's stencil is the p nodes
nearest to it. Points are cut into contiguous chunks, so that weight buffers are allocated
once per chunk and spreading can use private grids, summed in chunk order. The number of
chunks is the caller's, a function of the problem's size (``fft._plan``), never of the
thread count: each thread takes a run of whole chunks, so the charges, forces and Z are
the same on any number of threads. Grid rows are independent, split between the threads
in any way. Every driver takes ``parallel``: a small problem runs in the calling thread,
because waking the thread pool costs more than the work (and, on a busy machine, a whole
scheduler time slice per parallel region).
"""

import math

import numba
import numpy as np

# Only explicit prange loops run in parallel (ctsne._parallel.PRANGE_ONLY; each kernel
# gets a copy). The 2-D passes instead run one serial build in parts (Threaded).
from ..._parallel import PRANGE_ONLY, Threaded, chunk_runs, equal_parts, renamed, sum_in_order

# Points are visited tile by tile (TILE × TILE nodes) when the 2-D grid outgrows the cache.
TILE = 16


@numba.njit(inline="always")
def locate(y, origin, inv_delta, last, inv_denom, w):
    """First node of the stencil of ``y`` (its p nearest nodes) and the Lagrange weights."""
    p = inv_denom.shape[0]
    x = (y - origin) * inv_delta
    start = int(math.floor(x - 0.5 * p + 1.0))
    start = min(max(start, 0), last)
    u = x - start
    for k in range(p):
        v = inv_denom[k]
        for j in range(p):
            if j != k:
                v *= u - j
        w[k] = v
    return start


# The default order (fft.N_INTERP = 5) has 2-D passes of its own: the weights are five
# scalars and the loops have fixed lengths, so the compiler keeps everything in registers,
# where the general passes loop over runtime-sized weight arrays.
ORDER_5 = 5


@numba.njit(inline="always")
def locate_5(y, origin, inv_delta, last, inv_denom):
    """:func:`locate` for p = 5: the first node, and the five weights as a tuple."""
    x = (y - origin) * inv_delta
    start = min(max(int(math.floor(x - 1.5)), 0), last)
    u = x - start
    a0, a1, a2, a3, a4 = u, u - 1.0, u - 2.0, u - 3.0, u - 4.0
    p01 = a0 * a1
    p34 = a3 * a4
    return start, (inv_denom[0] * a1 * a2 * p34, inv_denom[1] * a0 * a2 * p34,
                   inv_denom[2] * p01 * p34, inv_denom[3] * p01 * a2 * a4,
                   inv_denom[4] * p01 * a2 * a3)


@numba.njit(inline="always")
def autocorrelation(w, out):
    """``out[k] = Σ_a w[a] w[a + k]``: how a point's own weights pair at node offset k."""
    p = w.shape[0]
    for k in range(p):
        acc = 0.0
        for a in range(p - k):
            acc += w[a] * w[a + k]
        out[k] = acc


@numba.njit(inline="always")
def autocorrelation_5(w):
    """:func:`autocorrelation` for p = 5, as a tuple."""
    return (w[0] * w[0] + w[1] * w[1] + w[2] * w[2] + w[3] * w[3] + w[4] * w[4],
            w[0] * w[1] + w[1] * w[2] + w[2] * w[3] + w[3] * w[4],
            w[0] * w[2] + w[1] * w[3] + w[2] * w[4],
            w[0] * w[3] + w[1] * w[4],
            w[0] * w[4])


def _tile_keys(Y, origin, inv_delta, n_nodes, n_chunks, keys, counts, start, stop):
    # chunks start … stop − 1: each point's tile, and the tiles' counts per chunk
    m = Y.shape[0]
    ntx = (n_nodes[0] + TILE - 1) // TILE
    nty = (n_nodes[1] + TILE - 1) // TILE
    for t in range(start, stop):
        for i in range(t * m // n_chunks, (t + 1) * m // n_chunks):
            kx = min(max(int((Y[i, 0] - origin[0]) * inv_delta[0]) // TILE, 0), ntx - 1)
            ky = min(max(int((Y[i, 1] - origin[1]) * inv_delta[1]) // TILE, 0), nty - 1)
            keys[i] = kx * nty + ky
            counts[t, kx * nty + ky] += 1


def _tile_place(Y, keys, counts, n_chunks, order, Ys, start, stop):
    # chunks start … stop − 1: each point to the next place of its tile in its chunk
    m = Y.shape[0]
    for t in range(start, stop):
        for i in range(t * m // n_chunks, (t + 1) * m // n_chunks):
            k = counts[t, keys[i]]
            counts[t, keys[i]] = k + 1
            order[k] = i
            Ys[k, 0] = Y[i, 0]
            Ys[k, 1] = Y[i, 1]


_TILE_KEYS = Threaded(_tile_keys, 0)
_TILE_PLACE = Threaded(_tile_place, 0)


def _chunks(n: int, parallel: bool) -> list[int]:
    """Bounds that hand independent items 0 … n − 1 (grid rows) to the threads in equal
    runs (one run if serial)."""
    return equal_parts(n, numba.get_num_threads() if parallel else 1)


def _per_chunk(n_chunks: int, parallel: bool) -> list[int]:
    """Bounds that hand the point chunks to the threads in runs of whole chunks (one run
    of all if serial): which thread spreads a chunk, never how."""
    return chunk_runs(n_chunks, numba.get_num_threads() if parallel else 1)


def tile_order(Y, origin, inv_delta, n_nodes, n_chunks):
    """Rows of ``Y`` grouped by grid tile (a parallel counting sort): ``(order, Y[order])``."""
    m = Y.shape[0]
    ntx = (n_nodes[0] + TILE - 1) // TILE
    nty = (n_nodes[1] + TILE - 1) // TILE
    keys = np.empty(m, dtype=np.int64)
    counts = np.zeros((n_chunks, ntx * nty), dtype=np.int64)
    every_chunk = _per_chunk(n_chunks, n_chunks > 1)
    _TILE_KEYS(Y, origin, inv_delta, n_nodes, n_chunks, keys, counts, bounds=every_chunk)
    # exclusive scan, tile-major, so chunks keep their order
    flat = counts.T.ravel()
    counts = np.ascontiguousarray((np.cumsum(flat) - flat).reshape(ntx * nty, n_chunks).T)
    order = np.empty(m, dtype=np.int64)
    Ys = np.empty_like(Y)
    _TILE_PLACE(Y, keys, counts, n_chunks, order, Ys, bounds=every_chunk)
    return order, Ys


# ---- 1-D ----------------------------------------------------------------------------


@numba.njit(cache=True)
def _spread_1d_chunk(y, lo, hi, origin, inv_delta, inv_denom, grid):
    p = inv_denom.shape[0]
    last = grid.shape[0] - p
    w = np.empty(p)
    grid[:] = 0.0
    for i in range(lo, hi):
        j0 = locate(y[i], origin, inv_delta, last, inv_denom, w)
        for a in range(p):
            grid[j0 + a] += w[a]


@numba.njit(parallel=dict(PRANGE_ONLY), cache=True)
def spread_1d(y, origin, inv_delta, n_nodes, inv_denom, n_chunks, parallel):
    """Unit charges of the points on the grid."""
    m = y.shape[0]
    private = np.empty((n_chunks, n_nodes))
    if parallel:
        for t in numba.prange(n_chunks):
            _spread_1d_chunk(y, t * m // n_chunks, (t + 1) * m // n_chunks, origin, inv_delta,
                             inv_denom, private[t])
    else:
        for t in range(n_chunks):
            _spread_1d_chunk(y, t * m // n_chunks, (t + 1) * m // n_chunks, origin, inv_delta,
                             inv_denom, private[t])
    out = private[0].copy()
    for t in range(1, n_chunks):
        out += private[t]
    return out


@numba.njit(cache=True)
def _gather_1d_chunk(y, lo, hi, origin, inv_delta, inv_denom, pot, last, kernel, F):
    p = inv_denom.shape[0]
    w = np.empty(p)
    ac = np.empty(p)
    z_self = 0.0
    for i in range(lo, hi):
        j0 = locate(y[i], origin, inv_delta, last, inv_denom, w)
        f = 0.0
        for a in range(p):
            f += w[a] * pot[j0 + a]
        F[i, 0] = f
        autocorrelation(w, ac)
        z_self += ac[0] * kernel[0]
        for k in range(1, p):  # offsets ±k share one kernel value
            z_self += 2.0 * ac[k] * kernel[k]
    return z_self


@numba.njit(parallel=dict(PRANGE_ONLY), cache=True)
def gather_1d(y, origin, inv_delta, n_nodes, inv_denom, pot, kernel, n_chunks, parallel):
    """Forces interpolated from the potential, and the self-pairs as interpolated:
    ``Σ_i Σ_ab w_ia w_ib t(η_a − η_b)``."""
    m = y.shape[0]
    last = n_nodes - inv_denom.shape[0]
    F = np.empty((m, 1))
    z_self = np.zeros(n_chunks)
    if parallel:
        for t in numba.prange(n_chunks):
            z_self[t] = _gather_1d_chunk(y, t * m // n_chunks, (t + 1) * m // n_chunks, origin,
                                         inv_delta, inv_denom, pot, last, kernel, F)
    else:
        for t in range(n_chunks):
            z_self[t] = _gather_1d_chunk(y, t * m // n_chunks, (t + 1) * m // n_chunks, origin,
                                         inv_delta, inv_denom, pot, last, kernel, F)
    return F, z_self.sum()


# ---- 2-D ----------------------------------------------------------------------------


@numba.njit(cache=True)
def _spread_2d_chunk(Y, lo, hi, origin, inv_delta, n_nodes, inv_denom, r0, band):
    p = inv_denom.shape[0]
    wx = np.empty(p)
    wy = np.empty(p)
    band[:] = 0.0
    for i in range(lo, hi):
        ix = locate(Y[i, 0], origin[0], inv_delta[0], n_nodes[0] - p, inv_denom, wx) - r0
        iy = locate(Y[i, 1], origin[1], inv_delta[1], n_nodes[1] - p, inv_denom, wy)
        for a in range(p):
            for b in range(p):
                band[ix + a, iy + b] += wx[a] * wy[b]


@numba.njit(cache=True)
def _spread_2d_chunk_5(Y, lo, hi, origin, inv_delta, n_nodes, inv_denom, r0, band):
    """:func:`_spread_2d_chunk` for p = 5."""
    band[:] = 0.0
    last_x = n_nodes[0] - ORDER_5
    last_y = n_nodes[1] - ORDER_5
    for i in range(lo, hi):
        ix, wx = locate_5(Y[i, 0], origin[0], inv_delta[0], last_x, inv_denom)
        iy, wy = locate_5(Y[i, 1], origin[1], inv_delta[1], last_y, inv_denom)
        ix -= r0
        for a in range(ORDER_5):
            for b in range(ORDER_5):
                band[ix + a, iy + b] += wx[a] * wy[b]


@numba.njit(cache=True)
def _sum_bands_row(private, offset, band_lo, band_hi, r, out):
    # r: np.int64 at every call (here and in the row helpers below): numba types a prange
    # index as uint64 on one pass of a parallel driver, and compiled each helper twice
    ny = out.shape[1]
    out[r, :] = 0.0
    for t in range(band_lo.shape[0]):
        if band_lo[t] <= r < band_hi[t]:
            base = offset[t] + (r - band_lo[t]) * ny
            for s in range(ny):
                out[r, s] += private[base + s]


# Each 2-D pass is compiled once per stencil, as a copy whose stencil is one of the two
# (``renamed``): a pass choosing its stencil at run time would compile both into it. In
# the module's own copies the stencil is the general one.
_spread_2d_band = _spread_2d_chunk


def _spread_2d(Y, origin, inv_delta, n_nodes, inv_denom, band_lo, band_hi, offset, private,
               start, stop):
    # chunks start … stop − 1 of the points, each onto its own band of grid rows
    m = Y.shape[0]
    ny = n_nodes[1]
    n_chunks = band_lo.shape[0]
    for t in range(start, stop):
        band = private[offset[t]:offset[t + 1]].reshape((band_hi[t] - band_lo[t], ny))
        _spread_2d_band(Y, t * m // n_chunks, (t + 1) * m // n_chunks, origin, inv_delta,
                        n_nodes, inv_denom, band_lo[t], band)


def _sum_bands(private, offset, band_lo, band_hi, out, start, stop):
    for r in range(start, stop):  # grid rows
        _sum_bands_row(private, offset, band_lo, band_hi, np.int64(r), out)


_SUM_BANDS = Threaded(_sum_bands, 0)


def spread_2d(Y, origin, inv_delta, n_nodes, inv_denom, band_lo, band_hi, parallel):
    """Unit charges of the points on the grid. Chunk t of the rows of Y only reaches grid
    rows ``band_lo[t]:band_hi[t]``, so its private grid is that band; the bands are then
    summed row by row, in chunk order."""
    nx, ny = int(n_nodes[0]), int(n_nodes[1])
    n_chunks = band_lo.shape[0]
    offset = np.zeros(n_chunks + 1, dtype=np.int64)
    np.cumsum((band_hi - band_lo) * ny, out=offset[1:])
    private = np.empty(offset[n_chunks])
    out = np.empty((nx, ny))
    chunks = _per_chunk(n_chunks, parallel)
    _SPREAD_2D.get(inv_denom.shape[0], _SPREAD_2D[None])(
        Y, origin, inv_delta, n_nodes, inv_denom, band_lo, band_hi, offset, private,
        bounds=chunks)
    _SUM_BANDS(private, offset, band_lo, band_hi, out, bounds=_chunks(nx, parallel))
    return out


@numba.njit(cache=True)
def _gather_2d_chunk(Y, lo, hi, order, origin, inv_delta, n_nodes, inv_denom, pot, kernel, F):
    p = inv_denom.shape[0]
    wx = np.empty(p)
    wy = np.empty(p)
    acx = np.empty(p)
    acy = np.empty(p)
    z_self = 0.0
    for k in range(lo, hi):
        ix = locate(Y[k, 0], origin[0], inv_delta[0], n_nodes[0] - p, inv_denom, wx)
        iy = locate(Y[k, 1], origin[1], inv_delta[1], n_nodes[1] - p, inv_denom, wy)
        fx = 0.0
        fy = 0.0
        for a in range(p):
            for b in range(p):
                w = wx[a] * wy[b]
                fx += w * pot[0, ix + a, iy + b]
                fy += w * pot[1, ix + a, iy + b]
        i = order[k]
        F[i, 0] = fx
        F[i, 1] = fy
        autocorrelation(wx, acx)
        autocorrelation(wy, acy)
        for a in range(p):
            fa = 1.0 if a == 0 else 2.0  # offsets ±a share one kernel value
            for b in range(p):
                fb = 1.0 if b == 0 else 2.0
                z_self += fa * fb * acx[a] * acy[b] * kernel[a, b]
    return z_self


@numba.njit(cache=True)
def _gather_2d_chunk_5(Y, lo, hi, order, origin, inv_delta, n_nodes, inv_denom, pot, kernel,
                       F):
    """:func:`_gather_2d_chunk` for p = 5; the self-pairs as ``acxᵀ K acy`` with the
    offsets ±a, ±b folded into ``K``."""
    K = np.empty((ORDER_5, ORDER_5))
    for a in range(ORDER_5):
        for b in range(ORDER_5):
            K[a, b] = (1.0 if a == 0 else 2.0) * (1.0 if b == 0 else 2.0) * kernel[a, b]
    last_x = n_nodes[0] - ORDER_5
    last_y = n_nodes[1] - ORDER_5
    z_self = 0.0
    for k in range(lo, hi):
        ix, wx = locate_5(Y[k, 0], origin[0], inv_delta[0], last_x, inv_denom)
        iy, wy = locate_5(Y[k, 1], origin[1], inv_delta[1], last_y, inv_denom)
        fx = 0.0
        fy = 0.0
        for a in range(ORDER_5):
            sx = 0.0
            sy = 0.0
            for b in range(ORDER_5):
                sx += wy[b] * pot[0, ix + a, iy + b]
                sy += wy[b] * pot[1, ix + a, iy + b]
            fx += wx[a] * sx
            fy += wx[a] * sy
        i = order[k]
        F[i, 0] = fx
        F[i, 1] = fy
        acx = autocorrelation_5(wx)
        acy = autocorrelation_5(wy)
        for a in range(ORDER_5):
            s = 0.0
            for b in range(ORDER_5):
                s += K[a, b] * acy[b]
            z_self += acx[a] * s
    return z_self


_gather_2d_rows = _gather_2d_chunk


def _gather_2d(Y, order, origin, inv_delta, n_nodes, inv_denom, pot, kernel, n_chunks, F,
               z_self, start, stop):
    # chunks start … stop − 1 of the points
    m = Y.shape[0]
    for t in range(start, stop):
        z_self[t] = _gather_2d_rows(Y, t * m // n_chunks, (t + 1) * m // n_chunks, order,
                                    origin, inv_delta, n_nodes, inv_denom, pot, kernel, F)


def _compiled(body, **passes):
    return Threaded(body if not passes else renamed(body, "_5", **passes), 0)


_SPREAD_2D = {ORDER_5: _compiled(_spread_2d, _spread_2d_band=_spread_2d_chunk_5),
              None: _compiled(_spread_2d)}
_GATHER_2D = {ORDER_5: _compiled(_gather_2d, _gather_2d_rows=_gather_2d_chunk_5),
              None: _compiled(_gather_2d)}


def gather_2d(Y, order, origin, inv_delta, n_nodes, inv_denom, pot, kernel, n_chunks,
              parallel):
    """Forces for the rows of ``Y``, written to rows ``order`` of the result, and the
    self-pairs as interpolated."""
    F = np.empty((Y.shape[0], 2))
    z_self = np.zeros(n_chunks)
    chunks = _per_chunk(n_chunks, parallel)
    _GATHER_2D.get(inv_denom.shape[0], _GATHER_2D[None])(
        Y, order, origin, inv_delta, n_nodes, inv_denom, pot, kernel, n_chunks, F, z_self,
        bounds=chunks)
    return F, float(sum_in_order(z_self[:, None])[0])


# ---- kernels and spectra ------------------------------------------------------------


@numba.njit(cache=True)
def _kernel_row(r, n, spacing, out):
    d = n.shape[0]
    x = r * spacing[0]
    for s in range(n[1] if d == 2 else 1):
        y = s * spacing[1] if d == 2 else 0.0
        t = 1.0 / (1.0 + x * x + y * y)
        out[0, r, s] = t
        out[1, r, s] = t * t * x
        if d == 2:
            out[2, r, s] = t * t * y


def _kernel_rows(n, spacing, out, start, stop):
    for r in range(start, stop):
        _kernel_row(np.int64(r), n, spacing, out)


_KERNEL_ROWS = Threaded(_kernel_rows, 0)


def kernel_quadrant(n, spacing, parallel):
    """The kernels at node offsets ``v = j·spacing``, ``0 ≤ j < n`` per dimension: ``t(v)``
    and each component of ``t(v)² v``, shape ``(1 + d, n₀[, n₁])``."""
    n = np.asarray(n, dtype=np.int64)
    d = n.shape[0]
    out = np.empty((1 + d, n[0], n[1] if d == 2 else 1))
    _KERNEL_ROWS(n, np.asarray(spacing, dtype=np.float64), out,
                 bounds=_chunks(int(n[0]), parallel))
    return out


@numba.njit(cache=True)
def _spectrum_row(C, T, Rx, Ry, r, half_rows, out):
    n_rows, n_cols = C.shape
    kr = np.int64(r)
    if kr > half_rows:  # row L − r of an even spectrum is row r
        kr = n_rows - kr
    # the force kernels' spectra are i·g: g = ∓Rx (odd in the row frequency), g = −Ry
    sx = 0.0 if (kr == 0 or kr == half_rows) else (-1.0 if r < half_rows else 1.0)
    acc = 0.0
    for s in range(n_cols):
        c = C[r, s]
        # the real FFT stores one of each conjugate pair of columns; count it twice
        w = 1.0 if (s == 0 or s == n_cols - 1) else 2.0
        acc += w * (c.real * c.real + c.imag * c.imag) * T[kr, s]
        gx = sx * Rx[kr - 1, s] if sx != 0.0 else 0.0
        gy = -Ry[kr, s - 1] if (s != 0 and s != n_cols - 1) else 0.0
        out[0, r, s] = complex(-c.imag * gx, c.real * gx)
        out[1, r, s] = complex(-c.imag * gy, c.real * gy)
    return acc


def _spectra_rows(C, T, Rx, Ry, half_rows, out, acc, start, stop):
    for r in range(start, stop):
        acc[r] = _spectrum_row(C, T, Rx, Ry, np.int64(r), half_rows, out)


_SPECTRA_ROWS = Threaded(_spectra_rows, 0)


def apply_spectra_2d(C, T, Rx, Ry, half_rows, parallel):
    """Force potential spectra ``(2, L, cols)`` from the unit-charge spectrum ``C`` and
    ``Σ_f |C(f)|² T(f)`` over the full spectrum (Parseval, for Z).

    ``T`` is the ``t`` spectrum on one quadrant; ``Rx`` and ``Ry`` are the real sine-cosine
    transforms of the force kernels (spectra ``−i·R``, odd in their own frequency).
    """
    n_rows, n_cols = C.shape
    out = np.empty((2, n_rows, n_cols), dtype=C.dtype)  # complex64 for a float32 grid
    acc = np.empty(n_rows)
    _SPECTRA_ROWS(C, T, Rx, Ry, half_rows, out, acc, bounds=_chunks(n_rows, parallel))
    return out, float(sum_in_order(acc[:, None])[0])

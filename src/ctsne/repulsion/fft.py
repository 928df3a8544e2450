"""FFT-accelerated interpolation repulsion (Linderman et al., Nature Methods 2019) for d ≤ 2.

For points ``Y`` (m, d) it returns ``F_i = Σ_{j≠i} t_ij² (y_i − y_j)`` and
``Z = Σ_{k≠l} t_kl`` with ``t = 1/(1 + |y_k − y_l|²)``, in O(m + G log G) for a grid of G
nodes, by the scheme of FIt-SNE:

1. Cover the bounding box with equispaced boxes (about one per unit of span, at least
   ``min_boxes`` per dimension) holding ``p`` Lagrange nodes each; the nodes form one
   equispaced grid of spacing ``h / p``.
2. Spread the charges ``1`` and ``y − c`` (c the box centre) of every point onto the nodes
   of its box with the Lagrange weights (parallel, one private grid per thread).
3. Convolve with the kernel ``t²`` sampled on the grid: a Toeplitz product, done as a
   circulant one by zero-padded real FFTs (``scipy.fft`` with several workers).
4. Interpolate the potentials back to the points (parallel gather):
   ``F_i ≈ (y_i − c) φ₁(y_i) − φ_y(y_i)``. The spread self-charge cancels exactly here.

``Z`` needs no potential at all: summing the interpolated ``Σ_j t_ij`` over i is the
quadratic form ``c₁ᵀ K c₁`` of the spread unit charges with the kernel ``t`` on the grid,
which Parseval turns into a weighted sum over the spectrum already computed in step 3.
Using ``t`` itself (rather than FIt-SNE's ``t²(1 + r²)`` with a ``|y|²`` charge) avoids the
cancellation of large ``|y|²`` terms and costs one kernel transform instead of one charge
transform. The self-pairs, ``t_ii = 1``, are then removed by subtracting m.

The kernels are even, so their spectra are real and come from a type-I DCT of one
quadrant of the padded grid: half the work of a real FFT of the whole padded grid. The
charge transforms skip the all-zero rows of the padding, and the inverse transforms only
produce the rows that hold nodes.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np
import scipy.fft

__all__ = ["grid_shape", "repulsion_fft"]

# Defaults of the grid resolution (FIt-SNE uses 50 and 1); see the module tests and
# benchmarks/bench_fft.py for the accuracy and cost they give.
MIN_BOXES = 50
BOXES_PER_UNIT = 1.0
# Cap on boxes per dimension, so that a wildly spread embedding (early optimisation, a bad
# step) degrades accuracy instead of allocating gigabytes: 2-D grid memory grows as boxes².
MAX_BOXES = {1: 1 << 20, 2: 1000}


# --------------------------------------------------------------------------------------
# Numba kernels. Points are processed in contiguous chunks, one per thread, so that the
# Lagrange weight buffers are allocated once per chunk and spreading can use private grids.


@numba.njit(inline="always")
def _locate(y, origin, inv_delta, last, centred, inv_denom, w):
    """First node of the stencil of coordinate ``y`` and its Lagrange weights (into ``w``)."""
    p = inv_denom.shape[0]
    x = (y - origin) * inv_delta  # in node units, node j at origin + j·delta
    if centred:
        start = int(math.floor(x - 0.5 * p + 1.0))
    else:
        start = p * int(math.floor((x + 0.5) / p))
    if start > last:
        start = last
    if start < 0:
        start = 0
    u = x - start
    for k in range(p):
        v = inv_denom[k]
        for j in range(p):
            if j != k:
                v *= u - j
        w[k] = v
    return start


@numba.njit(parallel=True, cache=True)
def _spread_1d(y, c, origin, inv_delta, n_nodes, centred, inv_denom, n_chunks):
    m = y.shape[0]
    p = inv_denom.shape[0]
    private = np.empty((n_chunks, 2, n_nodes))
    for t in numba.prange(n_chunks):
        private[t] = 0.0
        w = np.empty(p)
        for i in range(t * m // n_chunks, (t + 1) * m // n_chunks):
            j0 = _locate(y[i], origin, inv_delta, n_nodes - p, centred, inv_denom, w)
            q = y[i] - c
            for a in range(p):
                private[t, 0, j0 + a] += w[a]
                private[t, 1, j0 + a] += w[a] * q
    return private.sum(axis=0)


@numba.njit(parallel=True, cache=True)
def _spread_2d(Y, c, origin, inv_delta, n_nodes, centred, inv_denom, n_chunks):
    m = Y.shape[0]
    p = inv_denom.shape[0]
    nx, ny = n_nodes[0], n_nodes[1]
    private = np.empty((n_chunks, 3, nx, ny))
    for t in numba.prange(n_chunks):
        private[t] = 0.0
        wx = np.empty(p)
        wy = np.empty(p)
        for i in range(t * m // n_chunks, (t + 1) * m // n_chunks):
            ix = _locate(Y[i, 0], origin[0], inv_delta[0], nx - p, centred, inv_denom, wx)
            iy = _locate(Y[i, 1], origin[1], inv_delta[1], ny - p, centred, inv_denom, wy)
            q0 = Y[i, 0] - c[0]
            q1 = Y[i, 1] - c[1]
            for a in range(p):
                for b in range(p):
                    w = wx[a] * wy[b]
                    private[t, 0, ix + a, iy + b] += w
                    private[t, 1, ix + a, iy + b] += w * q0
                    private[t, 2, ix + a, iy + b] += w * q1
    out = np.empty((3, nx, ny))
    for r in numba.prange(nx):  # the reduction is split by grid rows
        for k in range(3):
            for s in range(ny):
                acc = 0.0
                for t in range(n_chunks):
                    acc += private[t, k, r, s]
                out[k, r, s] = acc
    return out


@numba.njit(inline="always")
def _autocorrelation(w, out):
    """``out[k] = Σ_a w[a] w[a + k]``: how a point's own weights pair at node offset k."""
    p = w.shape[0]
    for k in range(p):
        acc = 0.0
        for a in range(p - k):
            acc += w[a] * w[a + k]
        out[k] = acc


@numba.njit(parallel=True, cache=True)
def _gather_1d(y, c, origin, inv_delta, n_nodes, centred, inv_denom, pot, kernel, n_chunks):
    m = y.shape[0]
    p = inv_denom.shape[0]
    F = np.empty((m, 1))
    self_sum = np.zeros(n_chunks)
    for t in numba.prange(n_chunks):
        w = np.empty(p)
        ac = np.empty(p)
        acc_self = 0.0
        for i in range(t * m // n_chunks, (t + 1) * m // n_chunks):
            j0 = _locate(y[i], origin, inv_delta, n_nodes - p, centred, inv_denom, w)
            a0 = 0.0
            a1 = 0.0
            for a in range(p):
                a0 += w[a] * pot[0, j0 + a]
                a1 += w[a] * pot[1, j0 + a]
            F[i, 0] = (y[i] - c) * a0 - a1
            _autocorrelation(w, ac)
            acc_self += ac[0] * kernel[0]
            for k in range(1, p):
                acc_self += 2.0 * ac[k] * kernel[k]
        self_sum[t] = acc_self
    return F, self_sum.sum()


@numba.njit(parallel=True, cache=True)
def _gather_2d(Y, c, origin, inv_delta, n_nodes, centred, inv_denom, pot, kernel, n_chunks):
    m = Y.shape[0]
    p = inv_denom.shape[0]
    nx, ny = n_nodes[0], n_nodes[1]
    F = np.empty((m, 2))
    self_sum = np.zeros(n_chunks)
    for t in numba.prange(n_chunks):
        wx = np.empty(p)
        wy = np.empty(p)
        acx = np.empty(p)
        acy = np.empty(p)
        acc_self = 0.0
        for i in range(t * m // n_chunks, (t + 1) * m // n_chunks):
            ix = _locate(Y[i, 0], origin[0], inv_delta[0], nx - p, centred, inv_denom, wx)
            iy = _locate(Y[i, 1], origin[1], inv_delta[1], ny - p, centred, inv_denom, wy)
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            for a in range(p):
                for b in range(p):
                    w = wx[a] * wy[b]
                    a0 += w * pot[0, ix + a, iy + b]
                    a1 += w * pot[1, ix + a, iy + b]
                    a2 += w * pot[2, ix + a, iy + b]
            F[i, 0] = (Y[i, 0] - c[0]) * a0 - a1
            F[i, 1] = (Y[i, 1] - c[1]) * a0 - a2
            _autocorrelation(wx, acx)
            _autocorrelation(wy, acy)
            for a in range(p):
                fa = 1.0 if a == 0 else 2.0  # offsets ±a share one kernel value
                for b in range(p):
                    fb = 1.0 if b == 0 else 2.0
                    acc_self += fa * fb * acx[a] * acy[b] * kernel[a, b]
        self_sum[t] = acc_self
    return F, self_sum.sum()


@numba.njit(parallel=True, cache=True)
def _kernel_quadrant(n_nodes, half, spacing):
    """``t`` and ``t²`` at node offsets ``j·spacing`` for ``0 ≤ j < n_nodes``, zero-padded to
    ``half + 1`` per dimension: one quadrant of the even circulant embedding."""
    d = n_nodes.shape[0]
    rows = half[0] + 1
    cols = half[1] + 1 if d == 2 else 1
    ny = n_nodes[1] if d == 2 else 1
    dy = spacing[1] if d == 2 else 0.0
    out = np.zeros((2, rows, cols))
    for r in numba.prange(n_nodes[0]):
        x2 = (r * spacing[0]) ** 2
        for s in range(ny):
            t = 1.0 / (1.0 + x2 + (s * dy) ** 2)
            out[0, r, s] = t
            out[1, r, s] = t * t
    return out


@numba.njit(parallel=True, cache=True)
def _apply_spectrum(C, K, half_rows):
    """Multiply the charge spectra ``C`` (q, L, cols) by the ``t²`` spectrum in place and
    return ``Σ_f |C₀(f)|² K_t(f)`` over the full spectrum (Parseval, for Z)."""
    q, n_rows, n_cols = C.shape
    zrow = np.zeros(n_rows)
    for r in numba.prange(n_rows):
        kr = np.int64(r)
        if kr > half_rows:  # the kernel spectrum is even
            kr = n_rows - kr
        acc = 0.0
        for s in range(n_cols):
            c0 = C[0, r, s]
            # the real FFT stores one of each conjugate pair of columns; count it twice
            w = 1.0 if (s == 0 or s == n_cols - 1) else 2.0
            acc += w * (c0.real * c0.real + c0.imag * c0.imag) * K[0, kr, s]
            k2 = K[1, kr, s]
            for k in range(q):
                C[k, r, s] *= k2
        zrow[r] = acc
    return zrow.sum()


# --------------------------------------------------------------------------------------


def grid_shape(
    span: np.ndarray,
    n_interp: int = 3,
    min_boxes: int = MIN_BOXES,
    boxes_per_unit: float = BOXES_PER_UNIT,
    max_boxes: int | None = None,
    centred: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boxes, nodes and padded half-length per dimension for a bounding box of extent ``span``.

    Returns
    -------
    n_boxes : ndarray of int64 (d,)
        ``clip(ceil(span · boxes_per_unit), min_boxes, max_boxes)``; the node spacing is
        ``span / (n_boxes · n_interp)``.
    n_nodes : ndarray of int64 (d,)
        Grid nodes, with a margin for the stencils of points near the edges if centred.
    half : ndarray of int64 (d,)
        ``M ≥ n_nodes`` such that ``2M`` (the circulant length) is a fast FFT size.
    """
    span = np.asarray(span, dtype=np.float64)
    cap = MAX_BOXES[len(span)] if max_boxes is None else max_boxes
    n_boxes = np.array(
        [max(1, min(max(min_boxes, math.ceil(s * boxes_per_unit)), cap)) for s in span],
        dtype=np.int64,
    )
    p = n_interp
    n_nodes = n_boxes * p
    if centred:
        n_nodes = n_nodes + (p - 1) // 2 + p // 2 + 1
    half = np.array([scipy.fft.next_fast_len(int(n), real=True) for n in n_nodes],
                    dtype=np.int64)
    return n_boxes, n_nodes, half


class _Clock:
    def __init__(self, out):
        self.out = out
        self.t = time.perf_counter()

    def __call__(self, name):
        if self.out is not None:
            now = time.perf_counter()
            self.out[name] = self.out.get(name, 0.0) + now - self.t
            self.t = now


def _lagrange_denominators(p: int) -> np.ndarray:
    nodes = np.arange(p, dtype=np.float64)
    diff = nodes[:, None] - nodes[None, :]
    np.fill_diagonal(diff, 1.0)
    return 1.0 / diff.prod(axis=1)


def repulsion_fft(
    Y: np.ndarray,
    n_interp: int = 3,
    min_boxes: int = MIN_BOXES,
    boxes_per_unit: float = BOXES_PER_UNIT,
    max_boxes: int | None = None,
    workers: int = -1,
    centred: bool = True,
    timings: dict | None = None,
) -> tuple[np.ndarray, float]:
    """t-SNE repulsion by FFT-accelerated interpolation, for d = 1 or 2.

    Parameters
    ----------
    Y : ndarray (m, d)
        Points, d in {1, 2}.
    n_interp : int
        Lagrange nodes per box and dimension (FIt-SNE's p).
    min_boxes : int
        Least number of boxes per dimension.
    boxes_per_unit : float
        Boxes per unit of the bounding box's extent; boxes narrower than a unit keep the
        kernel's curvature resolved, which sets the accuracy.
    max_boxes : int, optional
        Most boxes per dimension (default ``MAX_BOXES[d]``); beyond, boxes widen.
    workers : int
        Threads for the FFTs (``scipy.fft`` convention, -1 = all); spreading and
        interpolation use numba's thread pool.

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
    lo = Y.min(axis=0)
    hi = Y.max(axis=0)
    span = hi - lo
    if not np.all(np.isfinite(span)):
        raise ValueError("Y contains non-finite values")
    if not np.any(span > 0):  # all points coincide: every t is 1 and every force 0
        return np.zeros_like(Y), float(m) * (m - 1)
    # a flat dimension still needs a box of positive width; any width is exact there
    span = np.where(span > 0, span, 1.0)
    lo = np.where(hi > lo, lo, lo - 0.5)

    p = n_interp
    n_boxes, n_nodes, half = grid_shape(span, p, min_boxes, boxes_per_unit, max_boxes, centred)
    delta = span / (n_boxes * p)
    origin = lo - ((p - 1) // 2) * delta if centred else lo + 0.5 * delta
    centre = lo + 0.5 * span
    inv_denom = _lagrange_denominators(p)
    length = 2 * half
    n_chunks = numba.get_num_threads()

    kernel = _kernel_quadrant(n_nodes, half, delta)
    if d == 1:
        kernel_hat = scipy.fft.dct(kernel[:, :, 0], type=1, axis=-1, workers=workers)
        charges = _spread_1d(Y[:, 0], centre[0], origin[0], 1.0 / delta[0], n_nodes[0],
                             centred, inv_denom, n_chunks)
        spec = scipy.fft.rfft(charges, n=length[0], axis=-1, workers=workers)
        z_sum = _apply_spectrum(spec[:, None, :], kernel_hat[:, None, :], 0)
        z_sum /= length[0]
        pot = scipy.fft.irfft(spec, n=length[0], axis=-1, workers=workers, overwrite_x=True)
        F, z_self = _gather_1d(Y[:, 0], centre[0], origin[0], 1.0 / delta[0], n_nodes[0],
                               centred, inv_denom, pot, kernel[0, :, 0], n_chunks)
    else:
        clock = _Clock(timings)
        kernel_hat = scipy.fft.dctn(kernel, type=1, axes=(1, 2), workers=workers)
        clock("kernel")
        charges = _spread_2d(Y, centre, origin, 1.0 / delta, n_nodes, centred, inv_denom,
                             n_chunks)
        clock("spread")
        # rows beyond the nodes are zero: transform the columns of the node rows only,
        # then pad the rows inside the second transform
        spec = scipy.fft.rfft(charges, n=length[1], axis=-1, workers=workers)
        clock("rfft")
        spec = scipy.fft.fft(spec, n=length[0], axis=-2, workers=workers, overwrite_x=True)
        clock("fft")
        z_sum = _apply_spectrum(spec, kernel_hat, half[0])
        z_sum /= length[0] * length[1]
        clock("multiply")
        spec = scipy.fft.ifft(spec, axis=-2, workers=workers, overwrite_x=True)
        clock("ifft")
        pot = scipy.fft.irfft(spec[:, : n_nodes[0]], n=length[1], axis=-1, workers=workers)
        clock("irfft")
        F, z_self = _gather_2d(Y, centre, origin, 1.0 / delta, n_nodes, centred, inv_denom,
                               pot, kernel[0], n_chunks)
        clock("gather")
    return F, float(z_sum - z_self)

"""The ct-SNE repulsion on the device: exact in blocks, or FFT interpolation batched over
the classes of every prior term.

As in :mod:`ctsne.forces.repulsion.conditional`, the pair weight expands into indicator
terms (:meth:`ctsne.prior.Prior.terms`); each term's classes (the all-points term is one
"class") are *groups*, and

    Σ_j w_ij t_ij² (y_i − y_j) = Σ_terms coef · F_i(group of i),
    S = Σ_terms coef · Σ_groups Z(group).

**FFT** (:class:`FFTRepulsion`, d ≤ 2). The numba engine's interpolation scheme and grid
rule (:mod:`ctsne.forces.repulsion.fft`) per group, so a group's result equals
``repulsion_fft`` of that group alone up to rounding. What differs is the batching: all
groups' charges lie in one tensor padded to the largest group's circulant size, spread by
one ``index_add_`` per term and transformed by one batched FFT each way; no Python loop
runs over classes.

**Exact** (:func:`exact_repulsion`): ``w_ij t_ij² (y_i − y_j)`` summed over all pairs in
blocks of rows, any d; the reference, the small-n path, and the path of a map spread so
wide that its grids cost more (:meth:`FFTRepulsion.exact_is_faster`, the numba engine's
rule: a few thousand points over hundreds of units, as a rank-1 input's map grows).

float32: the charges, spectra and potentials in float32 carry ~1e-6 relative rounding,
far below the interpolation's ~2e-4; the sums that form ``Z`` accumulate in float64.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from ..forces.repulsion.fft import (
    BOXES_PER_UNIT,
    MIN_BOXES,
    N_INTERP,
    exact_is_faster,
    grid_shape,
)
from ..tuning import TORCH_EXACT_BLOCK_PAIRS as EXACT_BLOCK_PAIRS
from ..tuning import TORCH_POINT_CHUNK as POINT_CHUNK
from ..tuning import TORCH_SPECTRA_KEPT as SPECTRA_KEPT
from .device import load_torch

__all__ = ["FFTRepulsion", "GridPlan", "Groups", "exact_repulsion"]


class GridPlan(NamedTuple):
    """One evaluation's grids (host arrays): per group the origin, node spacing and node
    count (G, d); the common circulant half-length (d,); and per dimension the largest
    group's extent (d,), which sets that half-length."""

    origin: np.ndarray
    delta: np.ndarray
    n_nodes: np.ndarray
    half: np.ndarray
    span: np.ndarray


class Groups:
    """The prior's terms as groups of points on the device.

    Parameters
    ----------
    terms : list of PriorTerm
    n : int
    device : torch.device

    Attributes
    ----------
    member : int64 tensor (T, n)
        The group (numbered over all terms) of each point in each term.
    coef : float64 tensor (G,)
        The coefficient of each group's term.
    coefs : list of float
        Per term.
    """

    def __init__(self, terms, n: int, device):
        torch = load_torch()
        member, coef, start = [], [], 0
        for term in terms:
            if term.codes is None:
                member.append(torch.full((n,), start, dtype=torch.int64, device=device))
                size = 1
            else:
                member.append(torch.as_tensor(np.asarray(term.codes, dtype=np.int64),
                                              device=device) + start)
                size = int(term.n_groups)
            coef += [float(term.coef)] * size
            start += size
        self.member = torch.stack(member)
        self.coef = torch.tensor(coef, dtype=torch.float64, device=device)
        self.coefs = [float(t.coef) for t in terms]
        self.n_groups = start

    def weights_of_pairs(self, rows, cols):
        """``w_ij`` (float64) of the pairs ``(rows[e], cols[e])``."""
        torch = load_torch()
        w = torch.zeros(rows.shape, dtype=torch.float64, device=rows.device)
        for t, c in enumerate(self.coefs):
            w += c * (self.member[t, rows] == self.member[t, cols]).to(torch.float64)
        return w

    def weights(self, rows):
        """Pair weights ``w_ij`` between ``rows`` (index tensor) and all points."""
        torch = load_torch()
        m = self.member
        w = None
        for t, c in enumerate(self.coefs):
            same = (m[t, rows][:, None] == m[t][None, :]).to(torch.float64) * c
            w = same if w is None else w + same
        return w


def exact_repulsion(Y, groups: Groups, W=None):
    """``F_i = Σ_j w_ij t_ij² (y_i − y_j)`` and ``S = Σ_{i≠j} w_ij t_ij``, all pairs.

    Parameters
    ----------
    Y : tensor (n, d)
    groups : Groups
    W : tensor (n, n), optional
        The pair weights ``groups.weights(all rows)`` in Y's type, kept by a caller that
        evaluates the kernel many times (else rebuilt block by block).

    Returns
    -------
    F : tensor (n, d), like Y
    S : float64 tensor ()
    """
    torch = load_torch()
    n, d = Y.shape
    dev, dt = Y.device, Y.dtype
    F = torch.empty_like(Y)
    S = torch.zeros((), dtype=torch.float64, device=dev)
    # a block holds at most d differences and t per pair
    rows = min(n, max(1, EXACT_BLOCK_PAIRS // max(n * (d + 1), 1)))
    # float64 takes matrix products where float32 takes differences: |y_i|² + |y_j|² −
    # 2 y_i·y_j for r² and y_i Σ_j q_ij − Σ_j q_ij y_j for F are ~1.5× and ~1.6× faster on
    # a CPU, and their sums cancel to ~1e-11 of t and F in float64 on a map hundreds of
    # units wide, but to ~1e-4 in float32 (measured).
    wide = dt == torch.float64
    # One workspace for all blocks, written in place: on a CPU a fresh (rows, n) array per
    # operation cost more than the operation itself (first-touch page faults). float32's
    # differences are one contiguous (rows, n) array per coordinate: an (rows, n, d) array
    # reduced over its short last axis runs strided, several times slower.
    t_buf = torch.empty((rows, n), dtype=dt, device=dev)
    if wide:
        sq = (Y * Y).sum(1)
        base = (sq + 1.0)[None, :]
        Y1 = torch.cat([Y, torch.ones((n, 1), dtype=dt, device=dev)], 1)  # Σ q y and Σ q
    else:
        diff_buf = torch.empty((d, rows, n), dtype=dt, device=dev)
        cols = Y.t().contiguous()
    for s in range(0, n, rows):
        e = min(n, s + rows)
        if wide:  # 1 + r², at least 1 whatever the rounding
            t = torch.addmm(base, Y[s:e], Y.t(), alpha=-2.0, out=t_buf[: e - s])
            t.add_(sq[s:e, None]).clamp_(min=1.0)
        else:
            diff = torch.sub(Y[s:e].t()[:, :, None], cols[:, None, :],
                             out=diff_buf[:, : e - s])
            t = torch.mul(diff[0], diff[0], out=t_buf[: e - s])
            for k in range(1, d):
                t.addcmul_(diff[k], diff[k])
            t.add_(1.0)
        t.reciprocal_()
        t.diagonal(offset=s).zero_()  # no self-pairs
        if W is None:
            w = groups.weights(torch.arange(s, e, device=dev)).to(dt)
        else:
            w = W[s:e]
        if wide:
            S = S + torch.dot(w.reshape(-1), t.view(-1))
        else:  # float32 sums of ~10^6 terms drift: accumulated in float64
            S = S + (w * t).sum(dtype=torch.float64)
        q = t.mul_(t).mul_(w)  # w t²
        if wide:
            m = q @ Y1
            F[s:e] = m[:, d:] * Y[s:e] - m[:, :d]
        else:
            F[s:e] = torch.linalg.vecdot(q[None], diff).t()
    return F, S


class FFTRepulsion:
    """The batched FFT engine for a fixed set of groups (see the module docstring).

    Parameters
    ----------
    groups : Groups
    d : int
        1 or 2.
    n_interp, min_boxes, boxes_per_unit
        The grid rule of :func:`ctsne.forces.repulsion.fft.grid_shape` (its defaults).
    """

    def __init__(self, groups: Groups, d: int, n_interp: int = N_INTERP,
                 min_boxes: int = MIN_BOXES, boxes_per_unit: float | None = None):
        if d not in (1, 2):
            raise ValueError(f"the FFT repulsion needs 1 or 2 output dimensions, got {d}")
        torch = load_torch()
        self.groups, self.d, self.p = groups, d, n_interp
        self.min_boxes = min_boxes
        self.boxes_per_unit = BOXES_PER_UNIT[d] if boxes_per_unit is None else boxes_per_unit
        nodes = np.arange(n_interp, dtype=np.float64)
        diff = nodes[:, None] - nodes[None, :]
        np.fill_diagonal(diff, 1.0)
        self._inv_denom = torch.tensor(1.0 / diff.prod(axis=1))
        self._spectra: OrderedDict = OrderedDict()

    # ---------------------------------------------------------------- geometry
    def plan(self, Y) -> GridPlan:
        """The grids for the layout ``Y`` (n, d): the whole of Y, whichever rows a call
        then spreads."""
        torch = load_torch()
        g = self.groups
        G, d = g.n_groups, self.d
        ids = g.member.reshape(-1)
        src = Y.detach().to(torch.float64).repeat(g.member.shape[0], 1)
        idx = ids[:, None].expand(-1, d)
        lo = torch.full((G, d), np.inf, dtype=torch.float64, device=Y.device)
        hi = torch.full((G, d), -np.inf, dtype=torch.float64, device=Y.device)
        lo = lo.scatter_reduce(0, idx, src, "amin").cpu().numpy()
        hi = hi.scatter_reduce(0, idx, src, "amax").cpu().numpy()
        if not (np.all(np.isfinite(lo[np.isfinite(hi)]))):
            raise ValueError("Y contains non-finite values")
        empty = ~np.isfinite(lo[:, 0])
        lo[empty], hi[empty] = 0.0, 1.0
        span = hi - lo
        flat = span <= 0  # a flat dimension still needs a box of positive width
        span = np.where(flat, 1.0, span)
        lo = np.where(flat, lo - 0.5, lo)
        delta = np.empty((G, d))
        n_nodes = np.empty((G, d), dtype=np.int64)
        half = np.empty((G, d), dtype=np.int64)
        for k in range(G):
            delta[k], n_nodes[k], half[k] = grid_shape(span[k], self.p, self.min_boxes,
                                                       self.boxes_per_unit)
        origin = lo - ((self.p - 1) // 2) * delta
        return GridPlan(origin, delta, n_nodes, half.max(axis=0), span.max(axis=0))

    def exact_is_faster(self, plan: GridPlan) -> bool:
        """Whether :func:`exact_repulsion` over all n points costs less than the grids of
        ``plan``, by the numba engine's rule
        (:func:`ctsne.forces.repulsion.fft.exact_is_faster`).

        That rule weighs one group's m² pairs against its grid. The exact kernel here pays
        for all n² pairs once, with every group's weight, where the FFT transforms G grids
        of the common size: per grid, n²/G pairs, the pairs of m = n/√G points. The grid
        follows the layout's extent, not n, so a sparse, wide map (a few thousand points
        over hundreds of units) or a prior of many groups is cheaper exactly. On a CPU
        (float64, one thread, 2,000 points) the torch kernels took ~5 ns per pair and
        ~100 ns per node of each group's grid, against the rule's 1.36 and 14 for numba:
        the exact kernel is relatively cheaper here, so the shared rule errs towards the
        grids, by up to ~2× in time near the crossover.
        """
        g = self.groups
        n = g.member.shape[1]
        return exact_is_faster(n / math.sqrt(g.n_groups), plan.span, self.p, self.min_boxes,
                               self.boxes_per_unit)

    def _stencils(self, Y, gid, origin, inv_delta, last):
        """First node and Lagrange weights (chunk, d, p) of each point's stencil in its
        group ``gid``."""
        torch = load_torch()
        p = self.p
        x = (Y.to(origin.dtype) - origin[gid]) * inv_delta[gid]
        start = torch.floor(x - 0.5 * p + 1.0)
        start = torch.minimum(torch.clamp(start, min=0.0), last[gid].to(x.dtype))
        u = (x - start)[..., None] - torch.arange(p, dtype=x.dtype, device=x.device)
        w = torch.empty(u.shape, dtype=x.dtype, device=x.device)
        inv_denom = self._inv_denom.to(x.device, x.dtype)
        for a in range(p):
            prod = inv_denom[a].expand(u.shape[:-1]).clone()
            for b in range(p):
                if b != a:
                    prod = prod * u[..., b]
            w[..., a] = prod
        return start.to(torch.int64), w.to(Y.dtype)

    def _flat(self, gid, start, shape):
        """Flat indices (chunk, p^d) of each point's stencil nodes in the charge tensor."""
        torch = load_torch()
        p = self.p
        ar = torch.arange(p, device=gid.device)
        if self.d == 1:
            return (gid * shape[0] + start[:, 0])[:, None] + ar[None, :]
        rows = start[:, 0, None] + ar[None, :]  # (chunk, p)
        cols = start[:, 1, None] + ar[None, :]
        base = gid[:, None, None] * (shape[0] * shape[1])
        return (base + rows[:, :, None] * shape[1] + cols[:, None, :]).reshape(len(gid), -1)

    @staticmethod
    def _outer(w):
        """Stencil weights (chunk, p^d) from per-axis ones (chunk, d, p)."""
        if w.shape[1] == 1:
            return w[:, 0]
        return (w[:, 0, :, None] * w[:, 1, None, :]).reshape(len(w), -1)

    # ---------------------------------------------------------------- kernels
    def _kernel_spectra(self, delta, half, dtype, device):
        """rfft spectra of ``t`` (real part) and of the force kernels ``t² v`` on the
        circulant grid of half-length ``half`` and spacing ``delta``."""
        torch = load_torch()
        key = (tuple(delta.tolist()), tuple(half.tolist()), dtype, str(device))
        if key in self._spectra:
            self._spectra.move_to_end(key)
            return self._spectra[key]
        axes = []
        for k in range(self.d):
            L = 2 * int(half[k])
            j = torch.arange(L, dtype=torch.float64, device=device)
            off = torch.where(j <= half[k], j, j - L)
            axes.append(off * float(delta[k]))
        grids = torch.meshgrid(*axes, indexing="ij")
        r2 = sum(v * v for v in grids)
        t = 1.0 / (1.0 + r2)
        kernels = [t]
        for k, v in enumerate(grids):
            f = t * t * v
            # offset ±M is one node of the circulant grid; no pair of nodes reaches it
            idx = [slice(None)] * self.d
            idx[k] = int(half[k])
            f[tuple(idx)] = 0.0
            kernels.append(f)
        spec = torch.fft.rfftn(torch.stack(kernels).to(dtype), dim=tuple(range(1, self.d + 1)))
        out = (spec[0].real.contiguous(), spec[1:].contiguous())
        self._spectra[key] = out
        while len(self._spectra) > SPECTRA_KEPT:
            self._spectra.popitem(last=False)
        return out

    def _self_pairs(self, w, delta_g):
        """``Σ_ab w_a w_b t(η_a − η_b)`` per point (its own weights paired through t)."""
        torch = load_torch()
        p = self.p
        ac = torch.stack([(w[..., : p - k] * w[..., k:]).sum(-1) for k in range(p)], -1)
        ac = ac * torch.where(torch.arange(p, device=w.device) == 0, 1.0, 2.0).to(w.dtype)
        off = torch.arange(p, dtype=torch.float64, device=w.device)
        v = off[None, None, :] * delta_g[:, :, None]  # (chunk, d, p)
        if self.d == 1:
            t = 1.0 / (1.0 + v[:, 0] ** 2)
            return (ac[:, 0].to(torch.float64) * t).sum(-1)
        t = 1.0 / (1.0 + v[:, 0, :, None] ** 2 + v[:, 1, None, :] ** 2)
        return torch.einsum("ia,ib,iab->i", ac[:, 0].to(torch.float64),
                            ac[:, 1].to(torch.float64), t)

    # ---------------------------------------------------------------- evaluation
    def __call__(self, Y, rows: tuple[int, int] | None = None, reduce=None,
                 plan: GridPlan | None = None):
        """``(F, S)``: the weighted repulsion (n, d) and normaliser (float64 scalar).

        ``rows = (lo, hi)``: only points lo … hi − 1 spread their charges and get their
        forces (F is (hi − lo, d)); ``reduce(tensor)`` then sums the charges and the
        self-pairs over the processes in place (:mod:`ctsne.torch_engine.distributed`),
        so that every process transforms the whole grid. The grid follows all of Y;
        ``plan``: :meth:`plan` of this Y, if the caller has it.
        """
        torch = load_torch()
        g = self.groups
        n, d = Y.shape
        lo, hi = (0, n) if rows is None else rows
        dev, dt = Y.device, Y.dtype
        origin_h, delta_h, n_nodes_h, half, _ = self.plan(Y) if plan is None else plan
        shape = tuple(int(2 * h) for h in half)
        origin = torch.as_tensor(origin_h, device=dev)
        delta = torch.as_tensor(delta_h, device=dev)
        inv_delta = 1.0 / delta
        last = torch.as_tensor(n_nodes_h - self.p, device=dev)
        G = g.n_groups
        charges = torch.zeros(G * int(np.prod(shape)), dtype=dt, device=dev)
        z_self = torch.zeros(G, dtype=torch.float64, device=dev)
        for t in range(g.member.shape[0]):
            for s in range(lo, hi, POINT_CHUNK):
                e = min(s + POINT_CHUNK, hi)
                gid = g.member[t, s:e]
                start, w = self._stencils(Y[s:e], gid, origin, inv_delta, last)
                flat = self._flat(gid, start, shape)
                charges.index_add_(0, flat.reshape(-1), self._outer(w).reshape(-1))
                z_self.index_add_(0, gid, self._self_pairs(w, delta[gid]))
        if reduce is not None:
            reduce(charges)
            reduce(z_self)
        dims = tuple(range(1, d + 1))
        C = torch.fft.rfftn(charges.view(G, *shape), dim=dims)
        del charges
        # Parseval: Σ c·(T*c) over the grid; conjugate columns of the last axis count twice
        last_len = shape[-1] // 2 + 1
        twice = torch.full((last_len,), 2.0, dtype=torch.float64, device=dev)
        twice[0] = twice[-1] = 1.0
        power = (C.real ** 2 + C.imag ** 2).to(torch.float64) * twice
        pot_spec = torch.empty((G, d, *C.shape[1:]), dtype=C.dtype, device=dev)
        z_all = torch.empty(G, dtype=torch.float64, device=dev)
        # one kernel spectrum per distinct spacing, applied to its groups together
        spacings, which = np.unique(delta_h, axis=0, return_inverse=True)
        which = np.asarray(which).reshape(-1)
        for u, sp in enumerate(spacings):
            sel = torch.as_tensor(np.flatnonzero(which == u), device=dev)
            t_hat, f_hat = self._kernel_spectra(sp, half, dt, dev)
            z_all[sel] = (power[sel] * t_hat.to(torch.float64)).sum(dim=dims)
            pot_spec[sel] = C[sel][:, None] * f_hat[None]
        del C, power
        pot = torch.fft.irfftn(pot_spec, s=shape, dim=tuple(range(2, d + 2)))
        del pot_spec
        pot = pot.reshape(G, d, -1).permute(0, 2, 1).reshape(-1, d)
        F = torch.zeros((hi - lo, d), dtype=dt, device=dev)
        # the stencils again (cheaper than keeping n·p^d indices per term in memory)
        for t in range(g.member.shape[0]):
            for s in range(lo, hi, POINT_CHUNK):
                e = min(s + POINT_CHUNK, hi)
                gid = g.member[t, s:e]
                start, w = self._stencils(Y[s:e], gid, origin, inv_delta, last)
                vals = pot[self._flat(gid, start, shape)]  # (chunk, p^d, d)
                F[s - lo:e - lo] += g.coefs[t] * (self._outer(w)[..., None] * vals).sum(1)
        Z = z_all / float(np.prod(shape)) - z_self
        return F, (g.coef * Z).sum()

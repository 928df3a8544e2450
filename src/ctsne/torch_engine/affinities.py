"""A fit's input graph on the device: t-SNE's P (standard, label-balanced, revised) or
UMAP's fuzzy graph, built by the affinity modes themselves.

A mode of :mod:`ctsne.affinities.modes` builds its graph from a lists provider
(:class:`~ctsne.torch_engine.neighbors.DeviceLists`) and a graph family
(:class:`DevicePerplexityGraph`, :class:`DeviceFuzzyGraph`), whose steps run on the device.
Every rule, ``"auto"``'s included, is the modes' own, so from the same lists both engines
give the same graph, its sums equal to rounding; the lists may differ where one engine's
search is exact and the other's approximate (:doc:`/engines`). What reaches the host is
the finished graph (``P_`` or ``graph_``) and per-class and per-row sums.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..affinities import balanced
from ..affinities.graphs import (
    ConditionalTable,
    FinishedGraph,
    FuzzyGraph,
    PerplexityGraph,
    StandardGraph,
)
from ..affinities.mixing import mixing_from_sums
from ..checks import tie_warnings
from .calibration import calibrate_rows
from .device import load_torch
from .fuzzy import fuzzy_graph_device

__all__ = ["DeviceFuzzyGraph", "DevicePerplexityGraph", "DeviceTable", "balanced_device",
           "on_device", "symmetrize_device", "to_scipy"]


def symmetrize_device(idx, cond):
    """``(C + Cᵀ) / 2n`` as a coalesced sparse COO tensor, zero entries left out.

    Parameters
    ----------
    idx : int64 tensor (n, k)
    cond : float64 tensor (n, k)
    """
    torch = load_torch()
    n, k = idx.shape
    rows = torch.arange(n, device=idx.device).repeat_interleave(k)
    cols, vals = idx.reshape(-1), cond.reshape(-1)
    keep = vals > 0
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    ij = torch.stack([torch.cat([rows, cols]), torch.cat([cols, rows])])
    P = torch.sparse_coo_tensor(ij, torch.cat([vals, vals]) / (2.0 * n), (n, n),
                                check_invariants=False)
    return P.coalesce()


def to_scipy(P) -> sp.csr_matrix:
    """A coalesced COO tensor as a scipy CSR matrix (indices int32 where they fit).

    Coalescing sorts the entries by row, then column, and merges duplicates, so the CSR
    arrays are formed on the device (the row pointer from the row counts) and copied as
    they are: a host-side COO-to-CSR conversion is slow at this size.
    """
    torch = load_torch()
    n = P.shape[0]
    rows, cols = P.indices()
    nnz = int(cols.numel())
    itype = np.int32 if max(n, nnz) < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(n + 1, dtype=itype)
    np.cumsum(torch.bincount(rows, minlength=n).cpu().numpy(), out=indptr[1:])
    indices = cols.to(torch.int32 if itype is np.int32 else torch.int64).cpu().numpy()
    data = P.values().to(torch.float64).cpu().numpy()
    out = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    out.has_sorted_indices = True  # the coalesced order, which the CSR keeps
    return out


def _blocks(dist, widths, perplexity: float, k: int, weights, tail: float = 0.0):
    """Each block of columns calibrated over its filled slots at its scaled perplexity
    (:func:`ctsne.affinities.calibration.block_perplexity`), its tail trimmed
    (:func:`_trim_tail`), weighted, rows normalised."""
    torch = load_torch()
    out = torch.zeros_like(dist)
    start = 0
    for b, w in enumerate(widths):
        d = dist[:, start:start + w]
        valid = torch.isfinite(d)
        filled = valid.sum(1).to(torch.float64)
        perp = torch.clamp(torch.minimum(torch.full_like(filled, perplexity),
                                         perplexity * filled / k), min=1.0)
        p = _trim_tail(d, calibrate_rows(d, perp, valid), tail)
        out[:, start:start + w] = p * weights[:, b:b + 1]
        start += w
    return out / out.sum(1, keepdim=True)


def _trim_tail(dist, p, tail: float):
    """:func:`ctsne.affinities.calibration.trim_tail` on every row of a block at once:
    in rows with ascending distances (empty slots, inf, last), the smallest entries that
    hold at most ``tail`` of the row's mass, equal values together, set to 0 and the rest
    scaled back to 1."""
    if tail <= 0.0 or p.shape[1] < 2:
        return p
    torch = load_torch()
    ascending = (dist[:, 1:] >= dist[:, :-1]).all(1)
    # the mass at and after each entry; an entry's group of equal values starts where a
    # search of −p (ascending in these rows; in the others the search's answer is unused,
    # but kept within the row) finds its value first
    after = torch.flip(torch.cumsum(torch.flip(p, [1]), 1), [1])
    first = torch.searchsorted(-p.contiguous(), -p.contiguous(), right=False)
    first.clamp_(max=p.shape[1] - 1)
    drop = (after.gather(1, first) <= tail) & ascending[:, None]
    drop[:, 0] = False  # the nearest entry stays, as in the numba engine
    kept = torch.where(drop, torch.zeros_like(p), p)
    total = kept.sum(1, keepdim=True)
    # an empty block (all slots empty: p is all 0) stays 0, not 0/0
    return torch.where(total > 0, kept / torch.where(total > 0, total, 1.0), p)


def balanced_device(lists, own_weight, perplexity: float, tail: float):
    """The label-balanced P of device lists (:meth:`DeviceLists.balanced
    <ctsne.torch_engine.neighbors.DeviceLists.balanced>`), as
    :func:`ctsne.affinities.balanced.balanced_from_lists` builds it: ``own_weight`` one
    own-class share or one per class, ``tail`` the mass trimmed from each block."""
    torch = load_torch()
    codes, k = lists.codes, lists.k
    n = codes.shape[0]
    sizes = torch.bincount(codes).to(torch.float64)
    L = len(sizes)
    w = torch.as_tensor(np.broadcast_to(np.asarray(own_weight, dtype=np.float64), (L,)).copy(),
                        device=codes.device)[codes][:, None]
    if lists.block_width is None:
        weights = torch.cat([w, 1.0 - w], 1)
        widths = [k, k]
    else:
        ar = torch.arange(L - 1, device=codes.device)[None, :]
        block_class = ar + (ar >= codes[:, None]).to(ar.dtype)
        share = sizes[block_class] / (n - sizes[codes])[:, None]
        weights = torch.cat([w, (1.0 - w) * share], 1)
        widths = [k] + [lists.block_width] * (L - 1)
    cond = _blocks(torch.cat([lists.own_dist, lists.other_dist], 1), widths, perplexity, k,
                   weights, tail)
    return symmetrize_device(torch.cat([lists.own_idx, lists.other_idx], 1), cond)


class DeviceTable(StandardGraph):
    """t-SNE's P before symmetrisation, on the device: the counterpart of
    :class:`ctsne.affinities.graphs.ConditionalTable` (``idx``, ``cond`` tensors)."""

    def __init__(self, idx, cond):
        self.idx, self.cond = idx, cond

    def diagnose(self, codes):
        # table_sums' four sums, summed on the device; the summary is the host's
        torch = load_torch()
        codes = np.asarray(codes, dtype=np.int64)
        c = torch.as_tensor(codes, device=self.idx.device)
        L = int(codes.max()) + 1
        cj = c[self.idx]
        apart = cj != c[:, None]
        row_mass = self.cond.sum(1)
        across = torch.where(apart, self.cond, torch.zeros_like(self.cond))
        row_cross = across.sum(1)
        to_other = torch.bincount(cj[apart], weights=self.cond[apart], minlength=L)
        mass = torch.bincount(c, weights=2.0 * row_mass - row_cross, minlength=L) + to_other
        cross = torch.bincount(c, weights=row_cross, minlength=L) + to_other
        return mixing_from_sums(*(t.cpu().numpy() for t in (mass, cross, row_mass,
                                                              row_cross)), codes)

    def diagnose_labelled(self, codes, labelled):
        # rare (some labels missing): the host's table among the labelled points
        return ConditionalTable(self.idx.cpu().numpy(),
                                self.cond.cpu().numpy()).diagnose_labelled(codes, labelled)

    def finish(self) -> sp.csr_matrix:
        return to_scipy(symmetrize_device(self.idx, self.cond))


def _warn_ties(dist, perplexity: float) -> None:
    """:func:`ctsne.checks.warn_ties` on device lists: their distances are float64 from
    coordinate differences, so a distance of 0 is an exact copy and equal distances tie."""
    n, k = dist.shape
    if n == 0 or k == 0:
        return
    dup = int((dist[:, 0] == 0).sum())
    short = 0
    first = int(np.floor(perplexity))
    if first < k:
        ties = (dist == dist[:, :1]).sum(1)
        short = int(((dist[:, first] == dist[:, 0]) & (ties > perplexity)).sum())
    tie_warnings(dup, short, n, perplexity, stacklevel=4)


class _Calibrated:
    # the families' "how" on the device (their rules are the host families')
    @staticmethod
    def balanced_P(lists, own_weight, perplexity, tail) -> sp.csr_matrix:
        tail = balanced.TAIL_MASS if tail is None else float(tail)
        return to_scipy(balanced_device(lists, own_weight, perplexity, tail))

    @staticmethod
    def revised_P(own, other, alpha, perplexity) -> sp.csr_matrix:
        torch = load_torch()
        n, k = own[0].shape
        weights = torch.tensor([[alpha, 1.0]], dtype=torch.float64,
                               device=own[0].device).expand(n, 2)
        cond = _blocks(torch.cat([own[1], other[1]], 1), [k, k], perplexity, k, weights)
        return to_scipy(symmetrize_device(torch.cat([own[0], other[0]], 1), cond))


class DevicePerplexityGraph(_Calibrated, PerplexityGraph):
    """:class:`ctsne.affinities.graphs.PerplexityGraph` built from :class:`DeviceLists
    <ctsne.torch_engine.neighbors.DeviceLists>`: each step on the device."""

    def standard(self, lists, search=None) -> DeviceTable:
        idx, dist = (lists.standard if search is None else search)(self.k(len(lists.X)))
        _warn_ties(dist, self.perplexity)
        return DeviceTable(idx, calibrate_rows(dist, self.perplexity))

    def probe(self, lists):
        return None  # DeviceLists merge no lists: nothing to guess


class DeviceFuzzyGraph(_Calibrated, FuzzyGraph):
    """:class:`ctsne.affinities.graphs.FuzzyGraph` built from device lists."""

    def standard(self, lists, search=None) -> FinishedGraph:
        idx, dist = (lists.standard if search is None else search)(self.k(len(lists.X)))
        _warn_ties(dist, float(dist.shape[1]))
        return FinishedGraph(to_scipy(fuzzy_graph_device(
            idx, dist, self.n_neighbors, self.set_op_mix_ratio, self.local_connectivity)))


def on_device(graph):
    """The device counterpart of a graph family (:mod:`ctsne.affinities.graphs`); a family
    of one's own (e.g. a given standard graph) as it is."""
    if type(graph) is FuzzyGraph:
        return DeviceFuzzyGraph(graph.n_neighbors, graph.set_op_mix_ratio,
                                graph.local_connectivity)
    if type(graph) is PerplexityGraph:
        return DevicePerplexityGraph(graph.perplexity)
    return graph

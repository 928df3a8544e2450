"""A fit's input graph on the device: t-SNE's P (standard, label-balanced, revised) or
UMAP's fuzzy graph.

The definitions are the numba engine's (:mod:`ctsne.affinities.graphs`, whose families
this module's :func:`device_affinities` takes, and :mod:`~ctsne.affinities.modes`): k
neighbours (:mod:`ctsne.torch_engine.neighbors`), each row (or each block of a row)
calibrated by :mod:`ctsne.torch_engine.calibration` or, for UMAP, by
:mod:`ctsne.torch_engine.fuzzy`, the blocks weighted, then ``P = (C + Cᵀ) / 2n`` (or the
fuzzy union) by a sparse coalesce on the device. The neighbour search, calibration and
symmetrisation run on the device; what stays on the host is small: the check whether the
prior separates the data (:func:`ctsne.affinities.mixing.table_mixing` on the (n, k)
table, :func:`~ctsne.affinities.mixing.prior_mixing` on a graph) and the diagnostic of
the final P. Where the search plan is "host" or "faiss"
(:func:`ctsne.torch_engine.neighbors.search_plan`), or the metric is not Euclidean, the
label-balanced and revised P are built by the numba engine on the host instead (its
by-class searches and representatives), and the standard P calibrates the host's lists
on the device.

Where the P itself is chosen from the data (``affinities="auto"`` with a prior, and
``"balanced"`` without ``within_weight``: each class's cross-class share by the rule of
:mod:`ctsne.affinities.cross_share`, which runs its own searches), the affinity mode
builds P on the host, so that both engines give the same P; the explicit modes
(``"standard"``, ``"revised"``, ``"balanced"`` with ``within_weight``) and fits without a
prior are built on the device. Moving the rule's searches to the device is the next step
(:func:`_balanced` already takes one own-class share per class).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..affinities import balanced
from ..affinities.balanced import PER_CLASS_UP_TO, other_block_width
from ..affinities.graphs import FuzzyGraph, PerplexityGraph
from ..affinities.mixing import prior_mixing, table_mixing
from ..affinities.modes import Affinities, resolve_mode
from ..affinities.options import default_within_weight, n_neighbors_for
from ..checks import to_safe_scale
from ..neighbors.provider import NeighborLists
from .calibration import calibrate_rows
from .device import load_torch
from .fuzzy import fuzzy_graph_device
from .neighbors import (
    other_class_knn,
    own_class_knn,
    pooled_other_knn,
    search_plan,
    standard_knn,
)

__all__ = ["device_affinities", "symmetrize_device", "to_scipy"]


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
    they are: a host-side COO-to-CSR conversion of 3·10⁸ entries took 15.6 s of a 10⁶-point
    fit on an H100.
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


def _balanced(X, codes, perplexity, within_weight, work_dtype, k=None,
              tail=balanced.TAIL_MASS):
    """Label-balanced P (:func:`ctsne.affinities.balanced.balanced_affinities`);
    ``within_weight`` one own-class share, or one per class (a sequence); ``k``
    neighbours per block (default the perplexity's) and ``tail`` the mass trimmed."""
    torch = load_torch()
    n = X.shape[0]
    k = n_neighbors_for(perplexity, n) if k is None else int(k)
    w_own = default_within_weight("balanced") if within_weight is None else within_weight
    own_i, own_d = own_class_knn(X, codes, k, work_dtype)
    sizes = torch.bincount(codes).to(torch.float64)
    L = len(sizes)
    w = torch.as_tensor(np.broadcast_to(np.asarray(w_own, dtype=np.float64), (L,)).copy(),
                        device=X.device)[codes][:, None]
    if L - 1 > PER_CLASS_UP_TO:
        o_i, o_d = pooled_other_knn(X, codes, k, work_dtype)
        weights = torch.cat([w, 1.0 - w], 1)
        widths = [k, k]
    else:
        k_other = other_block_width(k, L)
        o_i, o_d = other_class_knn(X, codes, k_other, work_dtype)
        ar = torch.arange(L - 1, device=X.device)[None, :]
        block_class = ar + (ar >= codes[:, None]).to(ar.dtype)
        share = sizes[block_class] / (n - sizes[codes])[:, None]
        weights = torch.cat([w, (1.0 - w) * share], 1)
        widths = [k] + [k_other] * (L - 1)
    cond = _blocks(torch.cat([own_d, o_d], 1), widths, perplexity, k, weights, tail)
    return symmetrize_device(torch.cat([own_i, o_i], 1), cond)


def _revised(X, codes, perplexity, within_weight, work_dtype):
    """Revised ct-SNE's P (:func:`ctsne.affinities.balanced.revised_affinities`)."""
    torch = load_torch()
    n = X.shape[0]
    k = n_neighbors_for(perplexity, n)
    alpha = default_within_weight("revised") if within_weight is None else within_weight
    own_i, own_d = own_class_knn(X, codes, k, work_dtype)
    o_i, o_d = pooled_other_knn(X, codes, k, work_dtype)
    weights = torch.tensor([[alpha, 1.0]], dtype=torch.float64, device=X.device).expand(n, 2)
    cond = _blocks(torch.cat([own_d, o_d], 1), [k, k], perplexity, k, weights)
    return symmetrize_device(torch.cat([own_i, o_i], 1), cond)


def device_affinities(X: np.ndarray, graph, classes=None, affinities="auto",
                      within_weight=None, neighbors="auto", metric="euclidean",
                      random_state=None, n_jobs=None, labelled=None, device=None,
                      work_dtype=None) -> tuple[Affinities, object]:
    """A fit's input graph, as the affinity mode builds it on the host
    (:meth:`ctsne.affinities.modes.AffinityMode.build`), built on ``device``.

    Parameters
    ----------
    X : ndarray (n, p)
    graph : PerplexityGraph, FuzzyGraph or float
        The method's graph family (:mod:`ctsne.affinities.graphs`); a number is t-SNE's
        P at that perplexity.
    classes, affinities, within_weight, neighbors, metric, random_state, n_jobs, labelled
        As for :func:`ctsne.affinities.modes.input_affinities` (``affinities`` a name or
        a mode object of :mod:`ctsne.affinities.modes`).
    device : torch.device
    work_dtype : torch dtype, optional
        Type of the block distances that choose neighbours (float64 by default).

    Returns
    -------
    Affinities
        With ``P`` a scipy CSR matrix on the host (the estimator's ``P_`` or ``graph_``).
    plan : str
        Where the neighbours were searched ("device", "faiss" or "host").
    """
    torch = load_torch()
    if not isinstance(graph, (PerplexityGraph, FuzzyGraph)):
        graph = PerplexityGraph(float(graph))
    fuzzy = isinstance(graph, FuzzyGraph)
    mode = resolve_mode(affinities, within_weight)
    affinities, within_weight = mode.name, getattr(mode, "within_weight", None)
    X = to_safe_scale(X)
    n = X.shape[0]
    plan = search_plan(n, device, neighbors, metric)
    trivial = classes is None or int(np.max(classes)) == 0
    ruled = affinities == "auto" or (affinities == "balanced" and within_weight is None)
    if not trivial and (ruled or (plan != "device" and affinities != "standard")):
        # the rule's choice, or by-class lists at this size: the numba engine's searches
        # (see the docstring)
        lists = NeighborLists(X, classes, method=neighbors, metric=metric,
                              random_state=random_state, n_jobs=n_jobs)
        return mode.build(lists, graph, labelled), "host"
    Xd = torch.as_tensor(np.ascontiguousarray(X, dtype=np.float64), device=device)
    codes = None if trivial else torch.as_tensor(np.asarray(classes, dtype=np.int64),
                                                 device=device)
    k = graph.k(n)
    if not trivial and affinities in ("balanced", "revised"):
        if fuzzy:  # FuzzyGraph.balanced: blocks of exactly k, every entry kept, P / max
            P = to_scipy(_balanced(Xd, codes, k / 3.0, within_weight, work_dtype, k=k,
                                   tail=0.0))
            P = P / P.data.max()
        elif affinities == "balanced":
            P = to_scipy(_balanced(Xd, codes, graph.perplexity, within_weight, work_dtype))
        else:
            P = to_scipy(_revised(Xd, codes, graph.perplexity, within_weight, work_dtype))
        return Affinities(P, affinities, prior_mixing(P, classes)), plan
    if plan == "device":
        idx, dist = standard_knn(Xd, k, plan, work_dtype)
    else:
        idx, dist = standard_knn(Xd, k, plan, work_dtype, random_state, n_jobs)
    if fuzzy:
        G = to_scipy(fuzzy_graph_device(idx, dist, graph.n_neighbors, graph.set_op_mix_ratio,
                                        graph.local_connectivity))
        return Affinities(G, "standard", None if trivial else prior_mixing(G, classes)), plan
    cond = calibrate_rows(dist, graph.perplexity)
    P = to_scipy(symmetrize_device(idx, cond))
    if trivial:
        return Affinities(P, "standard", None), plan
    return Affinities(P, "standard",
                      table_mixing(idx.cpu().numpy(), cond.cpu().numpy(), classes)), plan

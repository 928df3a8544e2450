"""Input affinities conditioned on the prior: label-balanced P and revised ct-SNE's P.

Where the prior separates the data, a point's k nearest neighbours all lie in its own
class, P has no mass across classes and ct-SNE's β' has nothing to act on. Both
variants here give each point neighbour lists drawn from its own class and from the other
classes separately, calibrate each list (block) on its own — a perplexity search on
that block's distances, so that the nearest counterparts in a far class get real weight
however far the class lies —, drop each block's farthest entries that together hold
:data:`TAIL_MASS` of its mass, mix the blocks with fixed weights per row and symmetrise
``(C + Cᵀ)/2n`` as usual.

``balanced`` (batch-balanced kNN, as BBKNN does for single-cell data)
    Own class: k = 3·perplexity neighbours at the given perplexity, weight
    ``within_weight`` (here default 0.85, :data:`ctsne.affinities.options.WITHIN_WEIGHT`;
    ``ConditionalTSNE`` chooses one per class from the data,
    :mod:`ctsne.affinities.cross_share`, through :func:`balanced_from_lists`). With at most
    :data:`PER_CLASS_UP_TO` other classes every other class m is a block of
    ``min(k, max(K_MIN, ⌈k/(L−1)⌉))`` neighbours at a perplexity scaled by the same
    factor (:func:`block_perplexity`), the blocks
    sharing ``1 − within_weight`` in proportion to the class sizes; with more classes
    all other classes form one pooled block of k neighbours at the given perplexity.
``revised`` (Heiter, Kang, Seurinck & Lijffijt, IDA 2023)
    A within-label block and one pooled across-label block, each of k neighbours at the
    given perplexity; the within-label conditional affinities are multiplied by α
    (``within_weight``, default 1/2) and rows renormalised:
    ``p_{j|i} = (α p^within_{j|i} + p^across_{j|i}) / (1 + α)``. α < 1 down-weights the
    own class; α = 1 gives both halves equal mass.

Several priors are balanced on their joint classes (a point's own block: the points
equal to it in every prior), with ``combine="joint"`` and ``combine="product"`` alike.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..neighbors.by_class import own_class_neighbors
from ..neighbors.class_lists import (
    K_MIN,
    OTHER_SHARE,
    PER_CLASS_UP_TO,
    BalancedLists,
    class_lists,
    other_block_width,
)
from ..neighbors.pooled import pooled_other_neighbors
from .calibration import block_perplexity, calibrate_blocks
from .options import default_within_weight, n_neighbors_for
from .symmetry import symmetrize

__all__ = ["K_MIN", "OTHER_SHARE", "PER_CLASS_UP_TO", "TAIL_MASS", "BalancedLists",
           "balanced_affinities", "balanced_from_lists", "balanced_lists", "block_perplexity",
           "other_block_width", "revised_affinities", "revised_from_lists"]

# Each block of a row keeps the entries that hold 1 − TAIL_MASS of its mass (the rest, its
# farthest neighbours, are dropped and the block scaled back to its weight, so the shares
# across classes stay exact). A block's Gaussian puts little on its far end, and the
# attraction's cost follows P's entries.
TAIL_MASS = 0.05


def _finish(idx_blocks, dist_blocks, weights, perplexity, k, tail=0.0) -> sp.csr_matrix:
    """Calibrate each block at its own perplexity, trim its tail (``tail`` of its mass),
    weight the blocks, symmetrise."""
    n = idx_blocks[0].shape[0]
    # filled block by block: hstack then a cast would write the whole table twice more
    idx = np.empty((n, sum(b.shape[1] for b in idx_blocks)),
                   dtype=np.int32 if n < np.iinfo(np.int32).max else np.int64)
    col = 0
    for block in idx_blocks:
        idx[:, col:col + block.shape[1]] = block
        col += block.shape[1]
    # the distances, copied once into the table they are calibrated in (no second table)
    starts = np.cumsum([0] + [b.shape[1] for b in dist_blocks]).astype(np.int64)
    cond = np.empty((n, int(starts[-1])))
    for b, block in enumerate(dist_blocks):
        cond[:, starts[b]:starts[b + 1]] = block
    weights = np.broadcast_to(weights, (n, len(dist_blocks)))  # laid out by calibrate_blocks
    calibrate_blocks(cond, starts, float(perplexity), k, weights, cond, tail)
    return symmetrize(idx, cond)


def _check_weight(w: float, name: str, upper_open: bool) -> float:
    w = float(w)
    ok = 0.0 < w < 1.0 if upper_open else 0.0 < w <= 1.0
    if not np.isfinite(w) or not ok:
        rng = "(0, 1)" if upper_open else "(0, 1]"
        raise ValueError(f"within_weight must lie in {rng} for this mode, got {w!r}")
    return w


def _own_block(X, codes, perplexity, mode, within_weight, known, **search):
    """Both modes' first step: the weight and the own-class lists.

    Returns the codes (int64), k, the search options, the own-class indices and
    distances, and the own-class weight.
    """
    codes = np.asarray(codes, dtype=np.int64)
    weight = _check_weight(default_within_weight(mode) if within_weight is None
                           else within_weight, "within_weight",
                           upper_open=mode == "balanced")
    k = n_neighbors_for(perplexity, len(codes))
    own_idx, own_dist = own_class_neighbors(X, codes, k, known=known, **search)
    return codes, k, search, own_idx, own_dist, weight


def balanced_lists(X, codes, perplexity, neighbors="auto", metric="euclidean",
                   random_state=None, n_jobs=None, known=None, far_search="scan",
                   own=None) -> BalancedLists:
    """The lists of :func:`balanced_affinities` at k = 3·perplexity
    (:func:`ctsne.neighbors.class_lists.class_lists`, whose parameters these are)."""
    return class_lists(X, codes, n_neighbors_for(perplexity, len(codes)), neighbors, metric,
                       random_state, n_jobs, known, far_search, own)


def balanced_from_lists(lists: BalancedLists, own_weight, perplexity,
                        tail: float | None = None) -> sp.csr_matrix:
    """The balanced P of ``lists`` with each point's own-class weight.

    Parameters
    ----------
    lists : BalancedLists
    own_weight : float or ndarray (n_classes,)
        Share of each point's conditional mass on its own class, one value or one per
        class, each in (0, 1].
    perplexity : float
    tail : float, optional
        The share of each block's mass whose farthest entries are dropped (default
        :data:`TAIL_MASS`; 0 keeps every entry).
    """
    tail = TAIL_MASS if tail is None else float(tail)
    codes, k = lists.codes, lists.k
    n = len(codes)
    w = np.broadcast_to(np.asarray(own_weight, dtype=np.float64),
                        (int(codes.max()) + 1,))[codes][:, None]
    if lists.block_width is None:
        return _finish([lists.own_idx, lists.other_idx], [lists.own_dist, lists.other_dist],
                       np.hstack([w, 1.0 - w]), perplexity, k, tail)
    sizes = np.bincount(codes)
    L = len(sizes)
    width = lists.block_width
    # the other-class blocks share 1 − w in proportion to their class sizes
    block_class = np.arange(L - 1)[None, :] + (np.arange(L - 1)[None, :] >= codes[:, None])
    share = sizes[block_class] / (n - sizes[codes])[:, None]
    weights = np.hstack([w, (1.0 - w) * share])
    blocks = [lists.other_dist[:, t * width:(t + 1) * width] for t in range(L - 1)]
    return _finish([lists.own_idx, lists.other_idx], [lists.own_dist, *blocks], weights,
                   perplexity, k, tail)


def balanced_affinities(X, codes, perplexity, within_weight=None, neighbors="auto",
                        metric="euclidean", random_state=None, n_jobs=None,
                        known=None, far_search="scan") -> sp.csr_matrix:
    """Label-balanced P: own-class and other-class neighbour blocks, calibrated apart.

    Parameters
    ----------
    X : ndarray (n, p)
    codes : ndarray of int (n,)
        Prior classes 0..L−1 (L ≥ 2).
    perplexity : float
    within_weight : float in (0, 1), optional
        Share of each point's conditional mass on its own class (default 0.85,
        :data:`ctsne.affinities.options.WITHIN_WEIGHT`; ``ConditionalTSNE`` chooses it
        from the data instead, :mod:`ctsne.affinities.cross_share`).
    neighbors, metric, random_state, n_jobs, known, far_search
        The searches' options, as for :func:`ctsne.neighbors.class_lists.class_lists`.

    Returns
    -------
    P : csr_matrix (n, n), symmetric, non-negative, summing to 1
    """
    w_own = _check_weight(default_within_weight("balanced") if within_weight is None
                          else within_weight, "within_weight", upper_open=True)
    lists = balanced_lists(X, codes, perplexity, neighbors, metric, random_state, n_jobs,
                           known, far_search)
    return balanced_from_lists(lists, w_own, perplexity)


def revised_affinities(X, codes, perplexity, within_weight=None, neighbors="auto",
                       metric="euclidean", random_state=None, n_jobs=None,
                       known=None, far_search="scan") -> sp.csr_matrix:
    """Revised ct-SNE's P (Heiter et al. 2023): within- and across-label blocks, α on the first.

    Parameters
    ----------
    within_weight : float in (0, 1], optional
        α, the factor on the within-label affinities (default 1/2): each row is
        ``(α p^within + p^across) / (1 + α)``.
    X, codes, perplexity, neighbors, metric, random_state, n_jobs, known, far_search
        As in :func:`balanced_affinities`.
    """
    codes, k, search, own_idx, own_dist, alpha = _own_block(
        X, codes, perplexity, "revised", within_weight, known,
        method=neighbors, metric=metric, random_state=random_state, n_jobs=n_jobs)
    other = pooled_other_neighbors(X, codes, k, own_idx=own_idx, far_search=far_search,
                                   **search)
    return revised_from_lists((own_idx, own_dist), other, alpha, perplexity)


def revised_from_lists(own: tuple, other: tuple, alpha: float,
                       perplexity: float) -> sp.csr_matrix:
    """Revised ct-SNE's P from each point's own-class lists ``own`` and pooled other-class
    lists ``other`` (each ``(idx, dist)``, k columns), α on the first."""
    (own_idx, own_dist), (o_idx, o_dist) = own, other
    return _finish([own_idx, o_idx], [own_dist, o_dist], [alpha, 1.0], perplexity,
                   own_idx.shape[1])

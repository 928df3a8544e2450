"""UMAP's epoch-based stochastic gradient descent, with the prior's negative sampling.

The objective is UMAP's fuzzy cross-entropy: per graph edge ``(i, j)`` of weight
``w_ij`` the attraction ``−w_ij log φ_ij`` and, over all pairs, the repulsion
``−γ log(1 − φ_ij)``, with ``φ = 1 / (1 + a d^{2b})``. As in UMAP, edges are sampled in
proportion to their weights (edge e every ``epochs_per_sample[e]`` epochs) and each
sample moves the head towards the tail and away from ``negative_sample_rate`` negatives.
The conditional UMAP (paper, Appendix B) re-weights the repulsion by the prior's pair
weights; :class:`~ctsne.optimization.negatives.NegativeSampler` draws negatives by class
so that the weighted repulsion is estimated without bias and with little variance.

Random numbers. A draw is a pure function of ``(seed, epoch, edge key, sample)``: the
splitmix64 finaliser of a key chained from seed and epoch, then the edge's key, gives the
state of a splitmix64 stream whose value ``p`` holds negative ``p``'s two uniforms (its
high and low 32 bits: one mix per negative, and 2^-32 resolution is far below any class
or point probability). An edge's key is its position in a fit; in a transform it is made
from the new point's own neighbour list (:func:`edge_keys`), so that a new point's draws,
and with the map held fixed its place, do not depend on which points come with it or in
what order. No generator state is shared between edges, so the draws do not depend on
which thread handles which edge.

Threads. An epoch moves each head point over its own edges in turn, as UMAP does, but
reads every other position (tails, negatives) as it was when the epoch began; the tails
sampled are recorded and moved after, in edge order (heads in turn, each head's
edges in order). A point's moves in an epoch then depend on the epoch's start and its own
edges only, not on which thread handles which points or in what order: a seed gives the
same map bit for bit on any number of threads. A tail's step is computed when it is
applied, from the tail's position at that moment (its earlier moves of the pass done) and
its head's where the heads' pass left it, as umap-learn's tail moves are; the tails run
in parallel, each over its own edges in edge order. Recording each tail's step against
the epoch's start instead, and summing them after, let a point pulled as a tail by many
edges at once overshoot (every pull aimed at where it stood at the epoch's start): on
pc_like data (experiments/umap_quality.py, 20,000 points) the map's 10-NN preservation
was 0.081 against umap-learn's 0.088, and 0.100 with the steps computed as they are
applied. UMAP's layout instead updates shared
points without locks ("hogwild"), so that on several threads the races make runs differ
(two seeded fits of digits on two threads 8-27 units apart). Reading the others at the
epoch's start is the staleness a hogwild thread sees anyway, bounded by one epoch: on
digits the maps' 10-NN preservation moved by −0.002 to −0.005 (seed spread ~0.002), and
the layout still matches umap-learn's (tests/test_sgd.py). The tails' moves are written
by each head into its own range of a buffer (the tail's index), only for the edges
sampled (~6 % an epoch), grouped by tail in one serial counting pass, and applied tail by
tail in parallel.

Precision. ``Y`` is float64: the package's maps are float64 throughout, so a float32
layout would be a copy (no in-place update) and a second compiled specialisation of the
kernel. UMAP uses float32 to halve memory traffic, but the step is dominated by the power
``d2^b`` and the per-sample work, so only the power is taken in single precision
(:func:`_pow`).
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from .._parallel import threaded
from ..tuning import SGD_PARALLEL_FROM_EDGES as PARALLEL_FROM_EDGES
from .negatives import NegativeSampler, draw

__all__ = ["GRADIENT_CLIP", "REPULSION_EPS", "attraction_coefficient", "edge_keys",
           "epochs_per_sample", "optimize_layout", "repulsion_coefficient"]

# UMAP's constants. Each coordinate of a per-sample step is clipped to ±4 before the
# learning rate: the attraction's d^{2(b−1)} and the repulsion's 1/d² blow up near 0.
GRADIENT_CLIP = 4.0
# Added to d² in the repulsion's denominator, as UMAP's layout does, for the same reason.
REPULSION_EPS = 0.001

# splitmix64 (Steele, Lea & Flood 2014): its increment and finaliser constants. Typed as
# uint64 so that numba keeps the arithmetic unsigned and wrapping.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)
_S32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)
_TO_UNIT = 1.0 / 4294967296.0  # 2^-32: 32 bits → a double in [0, 1)


@numba.njit(cache=True)
def _finalize(z):
    """splitmix64's output function: a bijective mix of a uint64."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@numba.njit(cache=True)
def _uniform_pair(state, k):
    """Value ``k`` (from 0) of the splitmix64 stream seeded with ``state``, as two
    uniforms in [0, 1): its high and its low 32 bits."""
    z = _finalize(state + (np.uint64(k) + np.uint64(1)) * _GOLDEN)
    return np.float64(z >> _S32) * _TO_UNIT, np.float64(z & _LOW32) * _TO_UNIT


@numba.njit(cache=True)
def _chain(key, counter):
    """A new key from ``key`` and a counter: one splitmix64 step of the mixed pair."""
    return _finalize((key ^ np.uint64(counter)) + _GOLDEN)


@numba.njit(cache=True)
def _clip(x):
    if x > GRADIENT_CLIP:
        return GRADIENT_CLIP
    if x < -GRADIENT_CLIP:
        return -GRADIENT_CLIP
    return x


@numba.njit(cache=True)
def _pow(d2, b):
    """``d2 ** b`` in single precision (``powf``), returned as a double.

    The power is most of a sample's arithmetic and ``powf`` costs about half of ``pow``
    (a whole fit's SGD ran ~20 % faster); its relative error, ~1e-7, is far below the
    noise of the sampled gradient (umap-learn's float32 layout computes it so too).
    """
    return np.float64(np.float32(d2) ** np.float32(b))


@numba.njit(cache=True)
def attraction_coefficient(d2, a, b):
    """Step coefficient of an edge's attraction: ``−2ab·d2^{b−1} / (1 + a·d2^b)``.

    The negative gradient of ``−log φ`` (``φ = 1 / (1 + a·d2^b)``, ``d2 = ‖y_i − y_j‖²``)
    with respect to ``y_i``, divided by ``y_i − y_j``: ``y_i`` moves by this times
    ``(y_i − y_j)``. 0 at ``d2 = 0``, where it is undefined for b < 1. The power is taken
    in single precision (relative error ~1e-7).
    """
    if d2 <= 0.0:
        return 0.0
    d2b = _pow(d2, b)
    # d2^{b−1} as d2^b / d2: one pow instead of two
    return -2.0 * a * b * (d2b / d2) / (1.0 + a * d2b)


@numba.njit(cache=True)
def repulsion_coefficient(d2, a, b, gamma, eps):
    """Step coefficient of a negative's repulsion: ``2γb / ((eps + d2)(1 + a·d2^b))``.

    With ``eps = 0``, the negative gradient of ``−γ log(1 − φ)`` with respect to ``y_i``,
    divided by ``y_i − y_j``; the layout adds :data:`REPULSION_EPS` to keep it finite.
    The power is taken in single precision (relative error ~1e-7).
    """
    return 2.0 * gamma * b / ((eps + d2) * (1.0 + a * _pow(d2, b)))


@threaded(PARALLEL_FROM_EDGES)
def _heads(Y, Y_tail, same_map, head_ptr, tail, key_of, eps_sample, next_sample,
           eps_negative, next_negative, epoch_end, lr, a, b, gamma, rep_eps, move_other,
           moved, n_moved, offsets, cdf, sample_weight, source_row,
           epoch_key, start, stop):
    # One epoch's head moves, heads start … stop − 1 (edges grouped by head: head i's are
    # head_ptr[i] … head_ptr[i + 1] − 1): every edge due by epoch_end is sampled once,
    # with its negatives. A head moves step after step over its own edges; every other
    # position is read from Y_tail, the epoch's start in a fit (same_map) and the fixed
    # reference in a transform, so no part reads what another writes. A fit's tail moves
    # are only recorded for _tails: head i's c-th sampled edge puts its tail at place
    # head_ptr[i] + c of moved (the part's own range), and their count in n_moved[i].
    # Edge q's draws are keyed by key_of[q]. Points are numbered in the sampler's member
    # order (optimize_layout renumbers them), so a draw's position is the point's index.
    d = Y.shape[1]
    for i in range(start, stop):
        row = source_row[i]
        weight = sample_weight[row]
        place = head_ptr[i]
        for q in range(head_ptr[i], head_ptr[i + 1]):
            if eps_sample[q] <= 0.0 or next_sample[q] > epoch_end:
                continue
            j = tail[q]
            if not (same_map and j == i):  # a self-loop: y_i − y_i = 0, no force
                d2 = 0.0
                for k in range(d):
                    diff = Y[i, k] - Y_tail[j, k]
                    d2 += diff * diff
                coef = attraction_coefficient(d2, a, b)
                for k in range(d):
                    Y[i, k] += lr * _clip(coef * (Y[i, k] - Y_tail[j, k]))
            if move_other:
                moved[place] = j
                place += 1
            next_sample[q] += eps_sample[q]

            # negatives owed since the last sample: negative_sample_rate per eps_sample
            n_neg = int((epoch_end - next_negative[q]) / eps_negative[q])
            if n_neg <= 0:
                continue
            next_negative[q] += n_neg * eps_negative[q]
            state = _chain(epoch_key, key_of[q])
            for p in range(n_neg):
                u1, u2 = _uniform_pair(state, p)
                m = draw(offsets, cdf, row, u1, u2)
                if same_map and m == i:  # a draw of i itself: y_i − y_i = 0, no force
                    continue
                d2 = 0.0
                for k in range(d):
                    diff = Y[i, k] - Y_tail[m, k]
                    d2 += diff * diff
                # a point on top of i has y_i − y_m = 0: no force
                coef = weight * repulsion_coefficient(d2, a, b, gamma, rep_eps)
                for k in range(d):
                    Y[i, k] += lr * _clip(coef * (Y[i, k] - Y_tail[m, k]))
        if move_other:
            n_moved[i] = place - head_ptr[i]


@numba.njit(cache=True)
def _group_by_tail(head_ptr, moved, n_moved, head_order, tail_ptr, tail_heads):
    # The sampled edges grouped by tail, each tail's in edge order (heads in turn, in the
    # caller's numbering, head_order[o] being head o's index here; each head's sampled
    # edges in order): tail j's heads are tail_heads[tail_ptr[j] … tail_ptr[j + 1] − 1].
    # A counting sort: serial, a count and a copy an edge.
    n = n_moved.shape[0]
    tail_ptr[:] = 0
    for i in range(n):
        for place in range(head_ptr[i], head_ptr[i] + n_moved[i]):
            tail_ptr[moved[place] + 1] += 1
    for j in range(n):
        tail_ptr[j + 1] += tail_ptr[j]
    fill = tail_ptr[:-1].copy()
    for o in range(n):
        i = head_order[o]
        for place in range(head_ptr[i], head_ptr[i] + n_moved[i]):
            j = moved[place]
            tail_heads[fill[j]] = i
            fill[j] += 1


@threaded(PARALLEL_FROM_EDGES)
def _tails(Y, heads_at, tail_ptr, tail_heads, lr, a, b, start, stop):
    # The fit's tail moves, tails start … stop − 1: each tail is pulled towards its heads
    # one edge after the other, in edge order, each step computed from the tail's position
    # now and the head's where the heads' pass left it (heads_at), so that a tail of many
    # edges moves step after step, as a head does, instead of by a sum of pulls all aimed
    # from the epoch's start. A tail's moves read only its own position and heads_at: the
    # tails run in parallel and the map does not depend on the threads.
    d = Y.shape[1]
    for j in range(start, stop):
        for e in range(tail_ptr[j], tail_ptr[j + 1]):
            i = tail_heads[e]
            if i == j:  # a self-loop: no force
                continue
            d2 = 0.0
            for k in range(d):
                diff = heads_at[i, k] - Y[j, k]
                d2 += diff * diff
            coef = attraction_coefficient(d2, a, b)
            for k in range(d):
                Y[j, k] -= lr * _clip(coef * (heads_at[i, k] - Y[j, k]))


@numba.njit(cache=True)
def _row_keys(indptr, indices, out):
    for i in range(indptr.shape[0] - 1):
        row = _GOLDEN
        for q in range(indptr[i], indptr[i + 1]):
            row = _chain(row, indices[q])
        for q in range(indptr[i], indptr[i + 1]):
            out[q] = _chain(row, q - indptr[i])


def edge_keys(graph) -> np.ndarray:
    """Keys for the draws of a graph's edges made from each row's own content.

    Edge ``q`` of row ``i`` gets a hash of row ``i``'s column indices chained with ``q``'s
    rank in the row: the same row, wherever it stands among the others, gets the same
    keys, so a transform's draws for a new point depend only on its neighbour list.

    Parameters
    ----------
    graph : scipy.sparse matrix (m, n)
        Rows are the moving points, columns their reference neighbours; converted to CSR
        (canonical: sorted, no duplicates), whose entry order ``tocoo`` keeps.

    Returns
    -------
    ndarray of uint64 (nnz,)
        One key per stored entry, in CSR order.
    """
    G = graph.tocsr()
    G.sum_duplicates()  # also sorts the indices: the keys follow the content, not storage
    out = np.empty(G.nnz, dtype=np.uint64)
    _row_keys(G.indptr.astype(np.int64), G.indices.astype(np.int64), out)
    return out


def epochs_per_sample(weights: np.ndarray, n_epochs: int) -> np.ndarray:
    """How many epochs lie between two samples of each edge: ``max(w) / w``.

    Parameters
    ----------
    weights : array of float (n_edges,)
        Edge weights (UMAP's fuzzy memberships).
    n_epochs : int
        Length of the run.

    Returns
    -------
    ndarray of float64 (n_edges,)
        ``max(w) / w``, in ``[1, n_epochs]``; edges with ``w < max(w) / n_epochs`` (and
        non-positive ones) are marked ``−1``, never sampled. They would come up less
        than once in the run, and UMAP drops them; marking instead of dropping keeps the
        array aligned with ``head`` and ``tail``.
    """
    w = np.asarray(weights, dtype=np.float64)
    if n_epochs < 1:
        raise ValueError(f"n_epochs must be at least 1, got {n_epochs}")
    out = np.full(w.shape, -1.0)
    w_max = w.max() if w.size else 0.0
    if not w_max > 0.0:
        return out
    keep = w >= w_max / n_epochs
    out[keep] = w_max / w[keep]
    return out


def _source_rows(source_class, sampler: NegativeSampler, n_head: int,
                 transform: bool) -> np.ndarray:
    if source_class is None:
        if not transform and sampler.n == n_head:
            return sampler.classes
        if sampler.cdf.shape[0] == 1:
            return np.zeros(n_head, dtype=np.int64)
        raise ValueError("source_class is needed when the moving points are not the "
                         "sampler's points (transform) and the sampler has several rows")
    rows = np.asarray(source_class)
    if rows.shape != (n_head,) or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(f"source_class must be {n_head} integer rows")
    if n_head and (rows.min() < 0 or rows.max() >= sampler.cdf.shape[0]):
        raise ValueError(f"source_class rows must lie in [0, {sampler.cdf.shape[0]})")
    return rows.astype(np.int64)


def _check_edges(head, tail, eps, n_head: int, n_tail: int):
    head = np.ascontiguousarray(head, dtype=np.int64)
    tail = np.ascontiguousarray(tail, dtype=np.int64)
    eps = np.ascontiguousarray(eps, dtype=np.float64)
    if not head.shape == tail.shape == eps.shape or head.ndim != 1:
        raise ValueError("head, tail and epochs_per_sample must be 1-D of one length")
    if head.size:
        if head.min() < 0 or head.max() >= n_head:
            raise ValueError(f"head indices must lie in [0, {n_head})")
        if tail.min() < 0 or tail.max() >= n_tail:
            raise ValueError(f"tail indices must lie in [0, {n_tail})")
    return head, tail, eps


def optimize_layout(
    Y: np.ndarray,
    head: np.ndarray,
    tail: np.ndarray,
    epochs_per_sample: np.ndarray,
    n_epochs: int,
    a: float,
    b: float,
    sampler: NegativeSampler,
    *,
    source_class: np.ndarray | None = None,
    gamma: float = 1.0,
    negative_sample_rate: int = 5,
    initial_lr: float = 1.0,
    seed: int = 0,
    Y_ref: np.ndarray | None = None,
    move_other: bool = True,
    callback: Callable[[int, np.ndarray], object] | None = None,
    callback_every: int = 50,
    keys: np.ndarray | None = None,
) -> np.ndarray:
    """Move ``Y`` by UMAP's SGD over the graph's edges, with class-weighted negatives.

    Epoch ``t`` (0-based) samples every edge due by ``t + 1`` at the learning rate
    ``initial_lr · (1 − t / n_epochs)``; an edge with ``epochs_per_sample`` s is first due
    at epoch s and then every s epochs, and brings ``negative_sample_rate`` negatives per
    s epochs. Each step coordinate is clipped to ±:data:`GRADIENT_CLIP` (a negative's
    after its sample weight is applied).

    Parameters
    ----------
    Y : ndarray (n, d)
        Start; updated in place when it is C-contiguous float64 (else a copy is).
    head, tail : array of int (n_edges,)
        Edge ends: ``head`` indexes ``Y``, ``tail`` ``Y`` or, in a transform, ``Y_ref``.
        A symmetric graph lists both directions, as UMAP's COO matrix does.
    epochs_per_sample : array of float (n_edges,)
        From :func:`epochs_per_sample`; edges marked ≤ 0 are never sampled.
    n_epochs : int
        Number of epochs.
    a, b : float
        The map's curve ``φ = 1 / (1 + a d^{2b})``.
    sampler : NegativeSampler
        Negatives come from its points (``Y``'s, or ``Y_ref``'s in a transform), drawn
        for the head's source row and multiplied by that row's sample weight.
    source_class : array of int (n,), optional
        Each moving point's row in ``sampler.cdf``; default ``sampler.classes`` (a fit),
        or row 0 in a transform with a one-row sampler. Needed in a transform with a
        prior: the new points' classes, or extra rows from
        :meth:`~ctsne.optimization.negatives.NegativeSampler.with_source_rows`.
    gamma : float
        Repulsion strength (UMAP's ``repulsion_strength``).
    negative_sample_rate : int
        Negatives per positive sample.
    initial_lr : float
        First epoch's learning rate; it falls linearly towards 0.
    seed : int
        Seeds the counter-based draws: the same ``Y`` for the same seed on any number of
        threads.
    Y_ref : ndarray (n_ref, d), optional
        Transform mode: a fixed reference map that tails and negatives index; it never
        moves (``move_other`` is ignored).
    move_other : bool
        In a fit, move the tail too (towards the head, after the epoch's head moves), as
        UMAP's fit does.
    callback : callable(epochs_done, Y), optional
        Called every ``callback_every`` epochs and after the last; a truthy return stops
        the run.
    callback_every : int
        Epochs between callbacks.
    keys : array of uint64 (n_edges,), optional
        Per-edge keys of the random draws (:func:`edge_keys`); default the edge's
        position.

    Returns
    -------
    ndarray (n, d)
        ``Y`` after the run. A Ctrl-C raises KeyboardInterrupt between epochs' passes, so
        ``Y`` then holds the last complete epoch, or with it the heads' moves of the next.
    """
    if n_epochs < 0:
        raise ValueError(f"n_epochs must be non-negative, got {n_epochs}")
    if negative_sample_rate < 0:
        raise ValueError(f"negative_sample_rate must be non-negative, got {negative_sample_rate}")
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"Y must be 2-D, got shape {Y.shape}")
    transform = Y_ref is not None
    if transform:
        # only read (move_other is off below), so the caller's array is used as it is
        tail_map = np.ascontiguousarray(Y_ref, dtype=np.float64)
        if tail_map.ndim != 2 or tail_map.shape[1] != Y.shape[1]:
            raise ValueError(f"Y_ref must be 2-D with {Y.shape[1]} columns")
        move_other = False
    else:
        tail_map = Y
    if sampler.n != tail_map.shape[0]:
        raise ValueError(f"the sampler draws from {sampler.n} points, the map it indexes "
                         f"has {tail_map.shape[0]}")
    head, tail, eps = _check_edges(head, tail, epochs_per_sample, Y.shape[0],
                                   tail_map.shape[0])
    rows = _source_rows(source_class, sampler, Y.shape[0], transform)
    keyed = keys is not None
    keys = (np.ascontiguousarray(keys, dtype=np.uint64) if keyed
            else np.zeros(0, dtype=np.uint64))
    if keyed and keys.shape != head.shape:
        raise ValueError(f"keys must hold one key per edge ({head.shape[0]})")

    # The points the sampler draws from are numbered in its member order (each class's
    # points together), so that a negative's draw is its index: reading the member table
    # first made every negative two dependent random loads (~1.5× the SGD's time). A fit
    # moves a renumbered copy and writes it back (also on Ctrl-C); a transform renumbers
    # the reference map. Draws and steps are those of the caller's numbering.
    perm = sampler.members
    renumber = not np.array_equal(perm, np.arange(perm.shape[0]))
    Yw, head_order = Y, np.arange(Y.shape[0])
    if renumber:
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.shape[0])
        tail = inv[tail]
        if transform:
            tail_map = tail_map[perm]
        else:
            head, Yw, rows, head_order = inv[head], Y[perm], rows[perm], inv
    try:
        _epochs(Yw, tail_map if transform else None, head, tail, eps, keys if keyed else None,
                head_order, n_epochs, a, b, sampler, rows, gamma, negative_sample_rate,
                initial_lr, seed, move_other,
                _in_caller_order(callback, Y, Yw, perm) if renumber and callback else callback,
                callback_every)
    finally:
        if renumber and not transform:
            Y[perm] = Yw
    return Y


def _in_caller_order(callback, Y, Yw, perm):
    """``callback(epochs, Y)`` with ``Y`` brought up to date from the renumbered copy."""
    def call(epochs, _):
        Y[perm] = Yw
        return callback(epochs, Y)
    return call


def _epochs(Y, Y_ref, head, tail, eps, keys, head_order, n_epochs, a, b, sampler, rows,
            gamma, negative_sample_rate, initial_lr, seed, move_other, callback,
            callback_every) -> None:
    """The epochs of :func:`optimize_layout`, on points numbered in member order."""
    transform = Y_ref is not None
    # edges grouped by head (stable: in their order within a head), their draws keyed by
    # their given keys or their positions as given
    order = np.argsort(head, kind="stable")
    key_of = keys[order] if keys is not None else order.astype(np.uint64)
    head_ptr = _pointers(head[order], Y.shape[0])
    tail, eps = tail[order], eps[order]
    next_sample = eps.copy()
    if negative_sample_rate > 0:
        eps_negative = np.where(eps > 0, eps / negative_sample_rate, np.inf)
    else:  # no negatives: an infinite spacing makes every count 0
        eps_negative = np.full_like(eps, np.inf)
    next_negative = np.zeros_like(eps)
    move_other = bool(move_other) and eps.size > 0
    size = eps.size if move_other else 0
    moved, tail_heads = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    n_moved = np.zeros(Y.shape[0] if move_other else 0, dtype=np.int64)
    tail_ptr = np.zeros(Y.shape[0] + 1 if move_other else 0, dtype=np.int64)
    # a fit reads every position but the head's from the epoch's start
    frozen = np.empty_like(Y) if not transform else Y_ref
    key = _finalize(np.uint64(int(seed) % (1 << 64)) + _GOLDEN)
    every = max(1, int(callback_every))
    work = eps.size + Y.shape[0]
    for t in range(int(n_epochs)):
        lr = float(initial_lr) * (1.0 - t / n_epochs)
        # as np.uint64: a Python int above 2^63 would not pass as numba's int64
        epoch_key = np.uint64(_chain(np.uint64(key), t))
        if not transform:
            np.copyto(frozen, Y)
        _heads.run(Y, frozen, not transform, head_ptr, tail, key_of, eps, next_sample,
                   eps_negative, next_negative, float(t + 1), lr, float(a), float(b),
                   float(gamma), REPULSION_EPS, move_other, moved, n_moved,
                   sampler.offsets, sampler.cdf, sampler.sample_weight,
                   rows, epoch_key, items=Y.shape[0], work=work)
        if move_other:
            _group_by_tail(head_ptr, moved, n_moved, head_order, tail_ptr, tail_heads)
            np.copyto(frozen, Y)  # the heads where their pass left them
            _tails.run(Y, frozen, tail_ptr, tail_heads, lr, float(a), float(b),
                       items=Y.shape[0], work=work)
        if callback is not None and ((t + 1) % every == 0 or t + 1 == n_epochs):
            if callback(t + 1, Y):
                break


def _pointers(sorted_ends: np.ndarray, n: int) -> np.ndarray:
    """Where each of ``n`` points' run starts in a sorted array of edge ends (n + 1)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(sorted_ends, minlength=n), out=ptr[1:])
    return ptr

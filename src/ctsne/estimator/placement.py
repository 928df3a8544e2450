"""New points into a fitted map, the map held fixed (``ConditionalTSNE.transform``).

Each new point i gets conditional affinities ``p_{j|i}`` to its k nearest reference points
(k = 3·perplexity, calibrated to ``perplexity``, rows summing to 1) and is placed by
minimising, over the new positions only::

    C(Y_new) = Σ_i KL(p_{·|i} ‖ q_{·|i}),   q_{j|i} = w_ij t_ij / Z_i,   Z_i = Σ_{j∈ref} w_ij t_ij

with ``t_ij = 1 / (1 + |y_i − y_j|²)`` over the reference points j and ``w_ij`` the fitted
prior's pair weight (α' if i and j share the class, β' if not; products over several
priors). Its gradient is::

    ∂C/∂y_i = 2 Σ_j p_{j|i} t_ij (y_i − y_j)  −  (2 / Z_i) Σ_j w_ij t_ij² (y_i − y_j).

Design choices:

* New points do not interact with each other (as in openTSNE): each is placed on its
  own, so a point's position does not depend on which other points come with it.
* The normaliser is per point (Z_i), the conditional form of the t-SNE objective; the
  reference map enters only through its positions, which never move.
* A new label that the prior did not have in training forms a class of its own: it
  shares no class with any reference point, so all its pairs get β' (a warning names
  such labels). Without ``prior_new`` every pair gets β': plain t-SNE placement.
* Repulsion: a Barnes-Hut tree over the reference points of each prior class (and one
  over all points), built once since the reference is fixed, evaluated at the new
  points; monopole cells with the opening test ``diameter < θ · distance``.
  ``theta=0`` is exact.
* Start: each point at the ``p_{j|i}``-weighted mean of its neighbours' positions.
"""

from __future__ import annotations

import itertools
import warnings

import numba
import numpy as np

from ..affinities.standard import calibrate
from ..prior import Prior, _is_missing, _split_columns

__all__ = ["ReferenceRepulsion", "encode_new_prior", "placement_objective", "place_points",
           "reference_neighbors"]

_LEAF_SIZE = 16


# ----------------------------------------------------------------------------- tree
@numba.njit(cache=True)
def _build_tree(Y, leaf_size):
    """kd-tree by median splits on the widest axis; node v holds ``perm[start:stop]``."""
    n, d = Y.shape
    cap = max(1, 2 * n)
    perm = np.arange(n)
    start = np.zeros(cap, dtype=np.int64)
    stop = np.zeros(cap, dtype=np.int64)
    child = np.full(cap, -1, dtype=np.int64)  # left child; the right one is child + 1
    com = np.zeros((cap, d))
    diam2 = np.zeros(cap)
    stop[0] = n
    todo = np.empty(cap, dtype=np.int64)
    todo[0] = 0
    top, n_nodes = 1, 1
    lo = np.empty(d)
    hi = np.empty(d)
    while top > 0:
        top -= 1
        v = todo[top]
        a, b = start[v], stop[v]
        lo[:] = np.inf
        hi[:] = -np.inf
        for p in range(a, b):
            for k in range(d):
                x = Y[perm[p], k]
                com[v, k] += x
                lo[k] = min(lo[k], x)
                hi[k] = max(hi[k], x)
        widest, span = 0, -1.0
        for k in range(d):
            com[v, k] /= b - a
            diam2[v] += (hi[k] - lo[k]) ** 2
            if hi[k] - lo[k] > span:
                widest, span = k, hi[k] - lo[k]
        if b - a <= leaf_size or diam2[v] == 0.0:
            continue
        seg = perm[a:b].copy()
        perm[a:b] = seg[np.argsort(Y[seg, widest])]
        mid = (a + b) // 2
        child[v] = n_nodes
        start[n_nodes], stop[n_nodes] = a, mid
        start[n_nodes + 1], stop[n_nodes + 1] = mid, b
        todo[top], todo[top + 1] = n_nodes, n_nodes + 1
        top += 2
        n_nodes += 2
    return perm, start[:n_nodes], stop[:n_nodes], child[:n_nodes], com[:n_nodes], diam2[:n_nodes]


@numba.njit(cache=True, inline="always")
def _query_point(i, Yq, Ys, start, stop, child, com, diam2, theta2, coef, F, Z, stack, f):
    """Add ``coef·Σ_j t_ij² (y_i − y_j)`` to F[i] and ``coef·Σ_j t_ij`` to Z[i]."""
    d = Yq.shape[1]
    stack[0] = 0
    top = 1
    z = 0.0
    f[:] = 0.0
    while top > 0:
        top -= 1
        v = stack[top]
        if child[v] < 0:
            for p in range(start[v], stop[v]):
                r2 = 0.0
                for k in range(d):
                    r2 += (Yq[i, k] - Ys[p, k]) ** 2
                t = 1.0 / (1.0 + r2)
                z += t
                for k in range(d):
                    f[k] += t * t * (Yq[i, k] - Ys[p, k])
            continue
        r2 = 0.0
        for k in range(d):
            r2 += (Yq[i, k] - com[v, k]) ** 2
        if diam2[v] < theta2 * r2:
            cnt = stop[v] - start[v]
            t = 1.0 / (1.0 + r2)
            z += cnt * t
            for k in range(d):
                f[k] += cnt * t * t * (Yq[i, k] - com[v, k])
        else:
            stack[top] = child[v]
            stack[top + 1] = child[v] + 1
            top += 2
    Z[i] += coef * z
    for k in range(d):
        F[i, k] += coef * f[k]


# The tree's depth is at most log2(n) + 1 and the walk keeps two entries per level.
_STACK = 130


@numba.njit(parallel=True, cache=True)
def _query_parallel(Yq, Ys, start, stop, child, com, diam2, theta2, coef, F, Z, n_chunks):
    m, d = Yq.shape
    for c in numba.prange(n_chunks):
        stack = np.empty(_STACK, dtype=np.int64)
        f = np.empty(d)
        for i in range(c * m // n_chunks, (c + 1) * m // n_chunks):
            _query_point(i, Yq, Ys, start, stop, child, com, diam2, theta2, coef, F, Z,
                         stack, f)


@numba.njit(cache=True)
def _query_serial(Yq, Ys, start, stop, child, com, diam2, theta2, coef, F, Z):
    stack = np.empty(_STACK, dtype=np.int64)
    f = np.empty(Yq.shape[1])
    for i in range(Yq.shape[0]):
        _query_point(i, Yq, Ys, start, stop, child, com, diam2, theta2, coef, F, Z, stack, f)


# Below this many query points one thread does the walk: waking the thread pool costs
# more than it saves, and much more on a machine busy with other work.
_PARALLEL_FROM = 1000


class _Tree:
    """A fixed point set, summarised once for evaluations at other points."""

    def __init__(self, Y: np.ndarray):
        perm, self.start, self.stop, self.child, self.com, self.diam2 = _build_tree(
            np.ascontiguousarray(Y, dtype=np.float64), _LEAF_SIZE)
        self.Ys = np.ascontiguousarray(Y[perm], dtype=np.float64)

    def add(self, Yq, theta, coef, F, Z) -> None:
        args = (Yq, self.Ys, self.start, self.stop, self.child, self.com, self.diam2,
                float(theta) ** 2, float(coef), F, Z)
        if len(Yq) < _PARALLEL_FROM:
            _query_serial(*args)
        else:
            _query_parallel(*args, 8 * numba.get_num_threads())


# ----------------------------------------------------------------------------- prior
def encode_new_prior(prior: Prior | None, prior_new, m: int) -> list[np.ndarray]:
    """Class codes of the new points in the fitted prior's encoding, per prior column.

    A label the fitted prior does not know gets code −1 (a class of its own); a warning
    names such labels. Missing labels map to the fitted missing class if there was one.
    """
    if prior_new is None:
        return []
    if prior is None:
        raise ValueError("prior_new was given but the model was fitted without a prior; "
                         "leave prior_new out")
    columns = _split_columns(prior_new, m)
    for k, col in enumerate(columns):
        if len(col) != m:
            raise ValueError(f"prior_new column {k} has {len(col)} labels but X_new has {m} "
                             "rows; give one label per new row, in the same order")
    values = [_label_values(col) for col in columns]
    n_fit = len(prior.codes)
    first = prior.classes[0][0] if len(prior.classes[0]) else None
    width = len(first) if n_fit == 1 and isinstance(first, tuple) else n_fit
    if len(values) != width:
        raise ValueError(f"prior_new has {len(values)} column(s); the model was fitted with "
                         f"{width}: give the new points' labels in the same columns")
    if n_fit == 1 and width > 1:  # joint classes: the labels are tuples
        joint = np.empty(m, dtype=object)
        joint[:] = list(zip(*values, strict=True))
        values = [joint]
    codes = []
    for k, (vals, classes) in enumerate(zip(values, prior.classes, strict=True)):
        lookup = {c: g for g, c in enumerate(classes)}
        col = np.array([lookup.get(v, -1) for v in vals], dtype=np.int64)
        unseen = sorted({repr(v) for v, c in zip(vals, col, strict=True) if c < 0})
        if unseen:
            shown = ", ".join(unseen[:5]) + (" …" if len(unseen) > 5 else "")
            warnings.warn(f"prior_new column {k}: {len(unseen)} label(s) not seen in "
                          f"training ({shown}); each forms a class of its own (weight β' to "
                          "every reference point)", UserWarning, stacklevel=3)
        codes.append(col)
    return codes


def _label_values(col) -> np.ndarray:
    """Labels as an object array, missing values as None (the fitted missing class)."""
    arr = np.empty(len(col), dtype=object)
    arr[:] = list(np.asarray(col, dtype=object))
    arr[_is_missing(arr)] = None
    return arr


# ----------------------------------------------------------------------------- repulsion
class ReferenceRepulsion:
    """``F_i = Σ_j w_ij t_ij² (y_i − y_j)`` and ``Z_i = Σ_j w_ij t_ij`` over reference j.

    The pair weight ``Π_m (β'_m + (α'_m − β'_m)[same class in m])`` expands into one term
    per subset of the prior columns ("same class in all of them"), each a plain sum over
    the reference points of one joint class: one tree per class that new points belong to.

    Parameters
    ----------
    Y_ref : ndarray (n, d)
    codes_ref, codes_new : list of ndarray of int
        Class codes per prior column (−1 for a new point: no reference point shares it).
    alphas, betas : sequence of float
        α'_m and β'_m per column.
    theta : float
        Barnes-Hut opening angle (0: exact).
    """

    def __init__(self, Y_ref, codes_ref, codes_new, alphas, betas, theta: float = 0.5):
        self.theta = float(theta)
        m = len(codes_new[0]) if codes_new else None
        self.terms: list[tuple[float, np.ndarray | None, _Tree]] = []
        for size in range(len(codes_ref) + 1):
            for subset in itertools.combinations(range(len(codes_ref)), size):
                coef = float(np.prod([alphas[k] - betas[k] if k in subset else betas[k]
                                      for k in range(len(codes_ref))]))
                if coef == 0.0:
                    continue
                if not subset:
                    self.terms.append((coef, None, _Tree(Y_ref)))
                    continue
                ref = np.stack([codes_ref[k] for k in subset], axis=1)
                new = np.stack([codes_new[k] for k in subset], axis=1)
                known = np.all(new >= 0, axis=1)
                _, inv = np.unique(np.concatenate([ref, new[known]]), axis=0,
                                   return_inverse=True)
                inv = inv.reshape(-1)
                g_ref = inv[: len(ref)]
                g_new = np.full(m, -1, dtype=np.int64)
                g_new[known] = inv[len(ref):]
                for g in np.unique(g_new[g_new >= 0]):
                    members = np.flatnonzero(g_ref == g)
                    if len(members):
                        self.terms.append((coef, np.flatnonzero(g_new == g),
                                           _Tree(Y_ref[members])))

    def __call__(self, Y_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Y_new = np.ascontiguousarray(Y_new, dtype=np.float64)
        F = np.zeros_like(Y_new)
        Z = np.zeros(len(Y_new))
        for coef, rows, tree in self.terms:
            if rows is None:
                tree.add(Y_new, self.theta, coef, F, Z)
            else:
                Fg, Zg = np.zeros((len(rows), Y_new.shape[1])), np.zeros(len(rows))
                tree.add(np.ascontiguousarray(Y_new[rows]), self.theta, coef, Fg, Zg)
                F[rows] += Fg
                Z[rows] += Zg
        return F, Z


# ----------------------------------------------------------------------------- objective
def reference_neighbors(X_ref: np.ndarray, X_new: np.ndarray, k: int, metric: str = "euclidean",
                        n_jobs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each new row's ``k`` nearest reference rows (exact search): ``(indices, distances)``."""
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=k, metric=metric,
                          n_jobs=-1 if n_jobs is None else n_jobs).fit(X_ref)
    idx = np.empty((len(X_new), k), dtype=np.int64)
    dist = np.empty((len(X_new), k))
    chunk = 5000  # bounds the (chunk, n_ref) distance block of a brute-force search
    for a in range(0, len(X_new), chunk):
        dist[a:a + chunk], idx[a:a + chunk] = nn.kneighbors(X_new[a:a + chunk])
    return idx, dist


def _pair_weights(idx, codes_ref, codes_new, alphas, betas) -> np.ndarray:
    w = np.ones(idx.shape)
    for c_ref, c_new, a, b in zip(codes_ref, codes_new, alphas, betas, strict=True):
        w *= np.where(c_ref[idx] == c_new[:, None], a, b)
    return w


def placement_objective(Y_new, Y_ref, idx, cond, repulsion: ReferenceRepulsion,
                        log_w: np.ndarray | None = None,
                        want_value: bool = True) -> tuple[float | None, np.ndarray]:
    """``C(Y_new)`` (module docstring) and its gradient; ``log_w``: log pair weights of the
    (new, neighbour) pairs, needed for the value only."""
    diff = Y_new[:, None, :] - Y_ref[idx]
    d2 = np.einsum("ikd,ikd->ik", diff, diff)
    t = 1.0 / (1.0 + d2)
    attr = np.einsum("ik,ikd->id", cond * t, diff)
    F, Z = repulsion(Y_new)
    grad = 2.0 * (attr - F / Z[:, None])
    if not want_value:
        return None, grad
    pos = cond > 0
    lw = 0.0 if log_w is None else log_w
    value = float(np.sum(np.where(pos, cond * (np.log(np.where(pos, cond, 1.0)) - lw
                                               + np.log1p(d2)), 0.0)) + np.log(Z).sum())
    return value, grad


def place_points(
    X_ref: np.ndarray,
    Y_ref: np.ndarray,
    X_new: np.ndarray,
    prior: Prior | None = None,
    prior_new=None,
    perplexity: float = 5.0,
    n_iter: int = 250,
    learning_rate: float = 1.0,
    momentum: float = 0.8,
    max_step_norm: float = 1.0,
    theta: float = 0.5,
    metric: str = "euclidean",
    n_jobs: int | None = None,
) -> np.ndarray:
    """Positions of ``X_new``'s rows in the fixed map ``Y_ref`` of ``X_ref`` (see module doc).

    Parameters
    ----------
    X_ref : ndarray (n, p)
        The data the map was fitted on.
    Y_ref : ndarray (n, d)
        The fitted map; not modified.
    X_new : ndarray (m, p)
    prior : Prior, optional
        The fitted prior (its class codes and α', β').
    prior_new : labels (m,) or (m, c), optional
        The new points' labels, in the same columns as the fitted prior.
    perplexity : float
        Of the new points' affinities, on ``k = 3·perplexity`` reference neighbours.
    n_iter, learning_rate, momentum, max_step_norm
        Gradient descent with momentum and per-coordinate gains; each step is capped at
        ``max_step_norm``.
    theta : float
        Barnes-Hut opening angle of the repulsion (0: exact).
    metric : str
        Of the neighbour search (as in the fit).
    n_jobs : int, optional
        Threads of the neighbour search.
    """
    n = len(X_ref)
    m = len(X_new)
    k = int(min(n, max(1, np.floor(3 * perplexity))))
    if perplexity >= k:
        raise ValueError(f"perplexity={perplexity} for placement needs more than {k} "
                         f"reference points; use perplexity < {k}")
    codes_new = encode_new_prior(prior, prior_new, m)
    if prior is not None and not codes_new:
        warnings.warn("prior_new not given for a model fitted with a prior: every pair "
                      "gets weight β' (plain t-SNE placement); pass the new points' labels "
                      "to place them with the conditional repulsion", UserWarning,
                      stacklevel=3)
        codes_new = [np.full(m, -1, dtype=np.int64) for _ in prior.codes]
    codes_ref = list(prior.codes) if prior is not None else []
    alphas = list(prior.alphas) if prior is not None else []
    betas = list(prior.betas) if prior is not None else []

    idx, dist = reference_neighbors(X_ref, X_new, k, metric, n_jobs)
    cond = calibrate(dist, perplexity)
    Y_ref = np.asarray(Y_ref, dtype=np.float64)
    Y = np.einsum("ik,ikd->id", cond, Y_ref[idx])
    repulsion = ReferenceRepulsion(Y_ref, codes_ref, codes_new, alphas, betas, theta)
    update = np.zeros_like(Y)
    gains = np.ones_like(Y)
    for _ in range(int(n_iter)):
        _, grad = placement_objective(Y, Y_ref, idx, cond, repulsion, want_value=False)
        # grow the gain while the gradient keeps its direction, else shrink it
        same_way = update * grad < 0
        gains = np.maximum(np.where(same_way, gains + 0.2, gains * 0.8), 0.01)
        update = momentum * update - learning_rate * gains * grad
        norm = np.linalg.norm(update, axis=1, keepdims=True)
        update *= np.minimum(1.0, max_step_norm / np.maximum(norm, 1e-300))
        Y += update
    return Y

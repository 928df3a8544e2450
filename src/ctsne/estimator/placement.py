"""New points into a fitted map, the map held fixed (``ConditionalTSNE.transform``).

Each new point i gets conditional affinities ``p_{j|i}`` to its k nearest reference points
(k = 3·perplexity, calibrated to ``perplexity``, rows summing to 1) and is placed by
minimising, over the new positions only::

    C(Y_new) = Σ_i KL(p_{·|i} ‖ q_{·|i}),   q_{j|i} = w_ij t_ij / Z_i,   Z_i = Σ_{j∈ref} w_ij t_ij

with ``t_ij = 1 / (1 + |y_i − y_j|²)`` over the reference points j and ``w_ij`` the fitted
prior's pair weight (α' if i and j share the class, β' if not; products over several
priors; with shared states, β' only where they also share the state, 1 otherwise: a new
point's state is the one its own class's neighbours hold). Its gradient is::

    ∂C/∂y_i = 2 Σ_j p_{j|i} t_ij (y_i − y_j)  −  (2 / Z_i) Σ_j w_ij t_ij² (y_i − y_j).

Design choices:

* New points do not interact with each other (as in openTSNE): each is placed on its
  own, so a point's position does not depend on which other points come with it.
* The normaliser is per point (Z_i), the conditional form of the t-SNE objective; the
  reference map enters only through its positions, which never move.
* A new label that the prior did not have in training forms a class of its own: it
  shares no class with any reference point, so all its pairs get β' (a warning names
  such labels). Without ``prior_new`` every pair gets β': plain t-SNE placement.
* Repulsion: the reference never moves, so in 2-D the field of all reference points (and
  of each prior class that new points belong to) is tabulated once on a grid by FFT and
  only interpolated at the new points on each iteration
  (:mod:`ctsne.forces.repulsion.field`, relative error ~1e-4). Otherwise (1-D and 3-D
  maps, classes too small to repay a grid, points off the grid), a Barnes-Hut tree over
  the class, built once, is walked: monopole cells with the opening test
  ``diameter < θ · distance``. ``theta=0`` is exact, with trees only
  (:mod:`ctsne.forces.repulsion.reference`).
* Start: each point at the ``p_{j|i}``-weighted mean of its neighbours' positions.
* Stop: after ``n_iter`` steps; a point whose step stayed below ``step_tol`` for a few
  steps stops earlier (the others go on unchanged: points do not interact).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..affinities.calibration import calibrate
from ..forces.attraction import attraction_to_fixed
from ..forces.repulsion.reference import ANY, ReferenceRepulsion
from ..optimization.optimizer import FINAL_MOMENTUM, GAIN_DECAY, GAIN_GROWTH, MIN_GAIN
from ..prior import Prior, column_names, label_values, split_columns, weight_terms
from ..shared_states import SharedStatePrior
from ..tuning import PLACEMENT_QUERY_CHUNK as QUERY_CHUNK

__all__ = ["encode_new_prior", "placement_objective", "place_points", "reference_neighbors"]

# transform's warning where a model fitted with a prior gets no labels for the new points
NO_PRIOR_NEW = ("prior_new not given for a model fitted with a prior: every pair gets weight "
                "β' (plain placement); pass the new points' labels, transform(X_new, "
                "labels), to place them with the conditional repulsion (in a Pipeline, with "
                "sklearn.set_config(enable_metadata_routing=True): "
                "model.set_transform_request(prior_new=True), then "
                "pipe.transform(X, prior_new=labels))")

# A new point has settled once its step stayed below STEP_TOL (map units, where the kernel
# has unit width) for CALM_STEPS steps in a row; it then stops moving and is no longer
# evaluated. Measured on a 2,000-point map and on the 100,000-point benchmark map: a step
# shrinks ~10x per 25 iterations once below ~1e-2 (most points by iteration 75-100 of the
# 250 default); one point of the 10,000 kept oscillating with steps of ~1.3e-4 up to 400
# iterations, which is why the rule is per point, not on the largest step.
STEP_TOL = 1e-4
CALM_STEPS = 5


# ----------------------------------------------------------------------------- prior
def encode_new_prior(prior: Prior | None, prior_new, m: int) -> list[np.ndarray]:
    """Class codes of the new points in the fitted prior's encoding, per prior column.

    A label the fitted prior does not know gets code −1 (a class of its own); a warning
    names such labels, and the column by its name where ``prior_new`` has names (a
    DataFrame, a dict name -> labels). Missing labels map to the fitted missing class if
    there was one.
    """
    if prior_new is None:
        return []
    if prior is None:
        raise ValueError("prior_new was given but the model was fitted without a prior; "
                         "leave prior_new out")
    columns = split_columns(prior_new, m)
    names = column_names(prior_new, len(columns))
    for k, col in enumerate(columns):
        if len(col) != m:
            raise ValueError(f"prior_new {names[k]} has {len(col)} labels but X_new has {m} "
                             "rows; give one label per new row, in the same order")
    values = [label_values(col) for col in columns]
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
        names = ["columns " + " & ".join(n.removeprefix("column ") for n in names)]
    codes = []
    for k, (vals, classes) in enumerate(zip(values, prior.classes, strict=True)):
        lookup = {c: g for g, c in enumerate(classes)}
        col = np.array([lookup.get(v, -1) for v in vals], dtype=np.int64)
        unseen = sorted({repr(v) for v, c in zip(vals, col, strict=True) if c < 0})
        if unseen:
            shown = ", ".join(unseen[:5]) + (" …" if len(unseen) > 5 else "")
            warnings.warn(f"prior_new {names[k]}: {len(unseen)} label(s) not seen in "
                          f"training ({shown}); each forms a class of its own (weight β' to "
                          "every reference point)", UserWarning, stacklevel=3)
        codes.append(col)
    return codes


# ----------------------------------------------------------------------------- objective
def reference_neighbors(X_ref: np.ndarray, X_new: np.ndarray, k: int, metric: str = "euclidean",
                        n_jobs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each new row's ``k`` nearest reference rows (exact search): ``(indices, distances)``.

    :class:`ctsne.neighbors.search.ExactIndex` (a k-d tree for Euclidean data of at most
    ``TREE_DIMS`` features; 3-4x faster than ``NearestNeighbors``' tree on the 10-feature
    benchmark, benchmarks/bench_transform.py), queried in chunks of at most ``QUERY_CHUNK``,
    near new rows together (the order of a k-d tree over them, as the fit's own search
    does; same answers: 100,000 new points into 200,000, 10 features, k = 91: 8.3–8.5 s
    against 17.3–18.2 s in the given order; 10,000 into 100,000: 0.45 s against 0.47 s).
    """
    from ..neighbors.search import TREE_DIMS, ExactIndex

    index = ExactIndex(X_ref, metric, n_jobs)
    order = np.arange(len(X_new))
    if metric == "euclidean" and X_new.shape[1] <= TREE_DIMS and len(X_new) > QUERY_CHUNK // 4:
        order = ExactIndex(X_new, metric, 1).order  # (a few rows: not worth a tree)
    idx = np.empty((len(X_new), k), dtype=np.int64)
    dist = np.empty((len(X_new), k))
    for start in range(0, len(X_new), QUERY_CHUNK):
        rows = order[start:start + QUERY_CHUNK]
        dist[rows], idx[rows] = index.query(X_new[rows], k)
    return idx, dist


def placement_objective(Y_new, Y_ref, idx, cond, repulsion: ReferenceRepulsion,
                        log_w: np.ndarray | None = None,
                        want_value: bool = True) -> tuple[float | None, np.ndarray]:
    """``C(Y_new)`` (module docstring) and its gradient; ``log_w``: log pair weights of the
    (new, neighbour) pairs, needed for the value only."""
    attr = attraction_to_fixed(Y_new, Y_ref, idx, cond)
    F, Z = repulsion(Y_new)
    grad = 2.0 * (attr - F / Z[:, None])
    if not want_value:
        return None, grad
    diff = Y_new[:, None, :] - Y_ref[idx]
    d2 = np.einsum("ikd,ikd->ik", diff, diff)
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
    momentum: float = FINAL_MOMENTUM,
    max_step_norm: float = 1.0,
    step_tol: float = STEP_TOL,
    theta: float = 0.5,
    metric: str = "euclidean",
    n_jobs: int | None = None,
    field: bool = True,
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
        The fitted prior (its class codes and α', β'; a
        :class:`~ctsne.shared_states.SharedStatePrior` adds the states).
    prior_new : labels (m,) or (m, c), optional
        The new points' labels, in the same columns as the fitted prior.
    perplexity : float
        Of the new points' affinities, on ``k = 3·perplexity`` reference neighbours.
    n_iter, learning_rate, momentum, max_step_norm
        Gradient descent with momentum and per-coordinate gains, at most ``n_iter``
        steps; each step is capped at ``max_step_norm``.
    step_tol : float
        A point stops once its step stayed below this (map units) for ``CALM_STEPS``
        steps in a row (0: every point takes all ``n_iter`` steps).
    theta : float
        Barnes-Hut opening angle of the repulsion's trees (0: exact, trees only).
    metric : str
        Of the neighbour search (as in the fit).
    n_jobs : int, optional
        Threads of the neighbour search.
    field : bool
        For 2-D maps and ``theta > 0``: read the reference's repulsion from fields
        tabulated once on a grid (:mod:`ctsne.forces.repulsion.field`; the class terms too
        unless the prior has too many classes for ``FIELD_BYTES``); False walks the trees
        on every iteration (the path before issue 23).
    """
    n = len(X_ref)
    m = len(X_new)
    k = int(min(n, max(1, np.floor(3 * perplexity))))
    if perplexity >= k:
        raise ValueError(f"perplexity={perplexity} for placement needs more than {k} "
                         f"reference points; use perplexity < {k}")
    codes_new = encode_new_prior(prior, prior_new, m)
    if prior is not None and not codes_new:
        warnings.warn(NO_PRIOR_NEW, UserWarning, stacklevel=3)
        codes_new = [np.full(m, -1, dtype=np.int64) for _ in prior.codes]
    codes_ref = list(prior.codes) if prior is not None else []
    terms = weight_terms(prior.alphas, prior.betas) if prior is not None else [(1.0, ())]

    idx, dist = reference_neighbors(X_ref, X_new, k, metric, n_jobs)
    cond = calibrate(dist, perplexity)
    if isinstance(prior, SharedStatePrior):
        # a new point takes the state its own class's neighbours hold; where none is known
        # (no neighbour of its class, or no class) it is in every state: the paper's weights
        states_new = prior.states_of(codes_new[0], idx, cond)
        states_new[states_new < 0] = ANY
        codes_ref, codes_new = [prior.codes[0], prior.states], [codes_new[0], states_new]
        terms = prior.column_terms()
    Y_ref = np.asarray(Y_ref, dtype=np.float64)
    Y = np.einsum("ik,ikd->id", cond, Y_ref[idx])
    repulsion = ReferenceRepulsion(Y_ref, codes_ref, codes_new, terms, theta, fields=field)
    # the points still moving (a point is done once its step stayed below step_tol for
    # CALM_STEPS steps in a row: points do not interact, so the others go on unchanged),
    # with their rows of the descent's state
    act = np.arange(m)
    Ya, ia, ca, rep = Y, idx, cond, repulsion
    update = np.zeros_like(Y)
    gains = np.ones_like(Y)
    calm = np.zeros(m, dtype=np.int64)
    for _ in range(int(n_iter)):
        _, grad = placement_objective(Ya, Y_ref, ia, ca, rep, want_value=False)
        # grow the gain while the gradient keeps its direction, else shrink it
        same_way = update * grad < 0
        gains = np.maximum(np.where(same_way, gains + GAIN_GROWTH, gains * GAIN_DECAY),
                           MIN_GAIN)
        update = momentum * update - learning_rate * gains * grad
        norm = np.linalg.norm(update, axis=1, keepdims=True)
        update *= np.minimum(1.0, max_step_norm / np.maximum(norm, 1e-300))
        Ya += update
        calm = np.where(norm[:, 0] < step_tol, calm + 1, 0)
        done = calm >= CALM_STEPS
        if done.any():
            Y[act] = Ya
            keep = ~done
            act, Ya, ia, ca = act[keep], Ya[keep], ia[keep], ca[keep]
            update, gains, calm = update[keep], gains[keep], calm[keep]
            if not len(act):
                break
            rep = repulsion.restrict(act)
    Y[act] = Ya
    return Y

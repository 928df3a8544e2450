"""The states of shared-state conditioning, estimated inside a fit, and the rule that uses them.

Shared-state weights (:mod:`ctsne.shared_states`) need each point's state: the cell type
or cluster it belongs to, in a space where the prior's classes are aligned. Two ways:

``"kmeans"`` (the default)
    Harmony (``harmonypy``, the implementation scanpy calls) aligns the classes in the
    first principal components; k-means with ``n_states_rule(n)`` clusters splits the
    aligned space; the clusters' parts of each class are then checked in the unaligned
    components (:func:`_refine`): Harmony's alignment can leave a type split by class, or
    pull together two types that two classes each hold alone.
``"harmony"``
    Harmony's own soft clusters, each point in its most likely one (its diversity
    penalty pulls every cluster towards holding every class).

A state that only some classes hold needs no rule of its own: the weights give β' only to
pairs of different classes in the same state, so a class-specific state keeps its full
repulsion from the other classes. :func:`choose_conditioning` is the rule of
``conditioning="auto"``: shared-state weights where some states are held by several
classes and others by only some of them (the design is confounded), the paper's weights
where every class holds every state or no state is shared at all.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["CONDITIONINGS", "HELD_SHARE", "MIN_POINTS", "STATE_METHODS", "SharedStates",
           "choose_conditioning", "estimate_states", "held_by", "n_states_rule"]

CONDITIONINGS = ("auto", "classes", "states")
STATE_METHODS = ("kmeans", "harmony")
# Harmony runs on at most this many principal components (scanpy's default n_pcs).
N_PCS = 50
# A class holds a state where its points in the state are at least this share of what
# the class's size predicts (its share of the state if states ignored the classes).
HELD_SHARE = 0.25
# Two parts of clusters are one state where their centres (one class each: after the
# classes' typical offset) lie closer than OVERLAP times the sum of their radii (root mean
# square distance to the centre).
OVERLAP = 1.5
# A cluster's points of one class below this share of the class are strays, not a part.
MIN_PART = 0.02
# States are estimated from at least this many points with two or more features: fewer
# leave nothing to cluster, and "auto" keeps the paper's weights.
MIN_POINTS = 100
# States this small (share of the points) do not decide "auto".
MIN_STATE_SHARE = 0.01


def n_states_rule(n: int) -> int:
    """k-means' number of states for ``n`` points: ``n^(1/3)``, within 5 … 30 (a few per
    cell type at single-cell sizes; no more than a map shows apart)."""
    return int(np.clip(round(n ** (1.0 / 3.0)), 5, 30))


def _aligned(X: np.ndarray, classes: np.ndarray, seed: int):
    """The components of ``X`` Harmony reads, its corrected ones and its soft clusters
    (points × clusters)."""
    import harmonypy
    from sklearn.decomposition import PCA

    n, p = X.shape
    k = min(N_PCS, p, n - 1)
    Z = X - X.mean(axis=0) if k == p else PCA(k, random_state=seed).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ho = harmonypy.run_harmony(np.ascontiguousarray(Z, dtype=np.float64),
                                   {"class": np.asarray(classes)}, ["class"],
                                   random_state=seed, verbose=False)
    Zc, R = np.asarray(ho.Z_corr), np.asarray(ho.R)
    Zc = Zc.T if Zc.shape[0] != n else Zc
    R = R.T if R.shape[0] != n else R
    return Z, Zc, R


def estimate_states(X: np.ndarray, classes: np.ndarray, method: str = "kmeans",
                    n_states: int | None = None, random_state=None,
                    given: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each point's state (0..K−1) in a space where ``classes`` are aligned (module note),
    and that space.

    Parameters
    ----------
    X : ndarray (n, p)
    classes : ndarray of int (n,)
        The prior's joint classes.
    method : {"kmeans", "harmony"}
    n_states : int, optional
        k-means' number of states; default :func:`n_states_rule`.
    random_state : int, Generator or None
    given : ndarray (n,), optional
        States known already (any labels): only the aligned space is computed.

    Returns
    -------
    states : ndarray of int64 (n,)
    aligned : ndarray (n, k)
        Harmony's corrected principal components.
    """
    from sklearn.cluster import KMeans

    if method not in STATE_METHODS:
        raise ValueError(f"method must be one of {STATE_METHODS}, got {method!r}")
    seed = int(np.random.default_rng(random_state).integers(2**31 - 1))
    Z, Zc, R = _aligned(X, classes, seed)
    if given is not None:
        states = given
    elif method == "harmony":
        states = R.argmax(axis=1)
    else:
        k = min(n_states_rule(len(X)) if n_states is None else int(n_states), len(X))
        states = _refine(Z, Zc, classes,
                         KMeans(k, n_init=3, random_state=seed).fit_predict(Zc))
    return np.unique(states, return_inverse=True)[1].reshape(-1).astype(np.int64), Zc


def _parts(Z: np.ndarray, part_of: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each part's centre and radius (root mean square distance to the centre) in ``Z``."""
    counts = np.maximum(np.bincount(part_of, minlength=m), 1).astype(np.float64)
    centres = np.zeros((m, Z.shape[1]))
    np.add.at(centres, part_of, Z)
    centres /= counts[:, None]
    spread = np.bincount(part_of, weights=((Z - centres[part_of]) ** 2).sum(axis=1), minlength=m)
    return centres, np.sqrt(spread / counts)


def _typical_offset(a: np.ndarray, b: np.ndarray, tol: np.ndarray) -> np.ndarray | None:
    """The shift from class a's parts (centres ``a``) to class b's that most of them share:
    of the offsets between any two parts, the one after which the most parts of a find a
    part of b within ``tol`` (ties: the smaller total residual); None unless at least two
    parts agree on it (one match alone cannot tell a batch shift from another type)."""
    best, best_key = None, (1, 0.0)
    for t in (b[None, :, :] - a[:, None, :]).reshape(-1, a.shape[1]):
        gap = np.linalg.norm(b[None, :, :] - a[:, None, :] - t, axis=2)
        near = gap < tol
        count = int(near.any(axis=1).sum())
        key = (count, -float(np.where(near, gap, 0.0).sum()))
        if key > best_key:
            best, best_key = t, key
    return best


def _refine(Z: np.ndarray, Zc: np.ndarray, classes: np.ndarray, labels: np.ndarray
            ) -> np.ndarray:
    """States from the clusters ``labels`` of the aligned space ``Zc``, checked against the
    unaligned components ``Z``.

    A cluster's points of one class form a part; parts smaller than :data:`MIN_PART` of
    their class are strays and take the state of their cluster's largest part. Within a
    class, parts that overlap in ``Z`` (centres closer than :data:`OVERLAP` × the sum of
    their radii) are one piece: a type the clustering split. Pieces of classes a and b
    are one state where:

    - a and b share a shift (:func:`_typical_offset`: at least two pieces of a meet a
      piece of b after it, so at least two types both hold): the pieces meet after that
      shift, to within the same tolerance. A type the alignment left split by class is
      joined, and two types the alignment pulled together (one each class holds alone)
      are not;
    - a and b share no shift: each is the other's nearest piece of the other class in
      ``Zc``, they overlap there, and each is nearer the other than any other piece of its
      own class.

    States are the connected pieces.
    """
    from scipy.sparse.csgraph import connected_components

    pairs, part_of = np.unique(np.stack([labels, classes], axis=1), axis=0,
                               return_inverse=True)
    part_of = part_of.reshape(-1)
    m = len(pairs)
    clu, cls = pairs[:, 0], pairs[:, 1]
    counts = np.bincount(part_of, minlength=m)
    big = counts >= MIN_PART * np.bincount(classes)[cls]
    centres, radius = _parts(Z, part_of, m)
    apart = np.linalg.norm(centres[None, :, :] - centres[:, None, :], axis=2)
    same = (cls[:, None] == cls[None, :]) & big[:, None] & big[None, :]
    piece_of_part = connected_components(
        same & (apart < OVERLAP * (radius[:, None] + radius[None, :])), directed=False)[1]
    # pieces (big parts only); a point of a stray part is placed after the states are known
    piece = np.where(big[part_of], piece_of_part[part_of], -1)
    used = np.unique(piece[piece >= 0])
    piece = np.searchsorted(used, piece)
    piece[~big[part_of]] = -1
    q = len(used)
    member = piece >= 0
    pc, pr = _parts(Z[member], piece[member], q)
    pcc, prc = _parts(Zc[member], piece[member], q)
    pcls = np.zeros(q, dtype=np.int64)
    pcls[piece[member]] = classes[member]
    tol = OVERLAP * (pr[:, None] + pr[None, :])
    gap_c = np.linalg.norm(pcc[:, None, :] - pcc[None, :, :], axis=2)
    own_gap = np.where((pcls[:, None] == pcls[None, :]) & ~np.eye(q, dtype=bool), gap_c,
                       np.inf).min(axis=1)
    linked = np.eye(q, dtype=bool)
    for a in np.unique(pcls):
        for b in np.unique(pcls[pcls > a]):
            ia, ib = np.flatnonzero(pcls == a), np.flatnonzero(pcls == b)
            typical = _typical_offset(pc[ia], pc[ib], tol[np.ix_(ia, ib)])
            if typical is not None:
                near = (np.linalg.norm(pc[ib][None, :, :] - pc[ia][:, None, :] - typical,
                                       axis=2) < tol[np.ix_(ia, ib)])
            else:
                g = gap_c[np.ix_(ia, ib)]
                mutual = ((g == g.min(axis=1, keepdims=True))
                          & (g == g.min(axis=0, keepdims=True)))
                overlap = g < OVERLAP * (prc[ia][:, None] + prc[ib][None, :])
                nearer = (g < own_gap[ia][:, None]) & (g < own_gap[ib][None, :])
                near = mutual & overlap & nearer
            linked[np.ix_(ia, ib)] |= near
            linked[np.ix_(ib, ia)] |= near.T
    state_of_piece = connected_components(linked, directed=False)[1]
    states = np.full(len(Z), -1, dtype=np.int64)
    states[member] = state_of_piece[piece[member]]
    for i in np.flatnonzero(~big):  # a stray part: its cluster's largest part's state
        rows = np.flatnonzero(clu == clu[i])
        host = rows[np.argmax(counts[rows])]
        first = np.flatnonzero(part_of == host)[0]
        states[part_of == i] = states[first] if big[host] else state_of_piece.max() + 1 + i
    return states


def held_by(table: np.ndarray) -> np.ndarray:
    """Which class holds which state: ``table`` (K, L) counts → bool (K, L)
    (:data:`HELD_SHARE` of the count the class's size predicts)."""
    n = table.sum()
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / max(n, 1)
    return table >= HELD_SHARE * expected


def choose_conditioning(table: np.ndarray) -> tuple[str, str]:
    """``conditioning="auto"``'s choice from the states × classes counts, and why.

    Shared-state weights where the states show both: a state that several classes hold
    (the classes are comparable) and one, of at least :data:`MIN_STATE_SHARE` of the
    points, that only some of them hold. Where no state is shared, the classes are the
    structure the user asked to factor out (the paper's case): its weights.
    """
    held = held_by(table)
    big = table.sum(axis=1) >= MIN_STATE_SHARE * table.sum()
    partial = np.flatnonzero(big & ~held.all(axis=1))
    shared = np.flatnonzero(held.sum(axis=1) >= 2)
    if len(partial) and len(shared):
        return "states", (f"{len(partial)} of {int(big.sum())} states are held by only some "
                          "classes: the prior is removed only where classes share a state")
    if len(partial):
        return "classes", ("no state is held by two classes: the classes are the structure "
                           "to factor out, the paper's weights")
    return "classes", "every class holds every state: the paper's weights"


class SharedStates:
    """What shared-state conditioning found: the states, and which classes hold each.

    Attributes
    ----------
    table : ndarray of int64 (K, L)
        Points of each state (rows) in each class (columns).
    classes : ndarray (L,)
        The classes' labels.
    held : ndarray of bool (K, L)
        Which class holds which state (:func:`held_by`); the prior is removed between
        classes only within a state both hold.
    reason : str
        Why the weights were chosen.
    """

    def __init__(self, table: np.ndarray, classes, reason: str):
        self.table = np.asarray(table)
        self.classes = np.asarray(classes, dtype=object)
        self.held = held_by(self.table)
        self.reason = reason

    def lines(self) -> list[str]:
        """The table as text: a row per state, its size and the classes that hold it."""
        out = []
        for k, row in enumerate(self.table):
            who = [str(c) for c, h in zip(self.classes, self.held[k], strict=True) if h]
            shared = "all classes" if self.held[k].all() else ", ".join(who)
            out.append(f"state {k}: {int(row.sum())} points, held by {shared}")
        return out

    def __repr__(self) -> str:
        shared = int(self.held.all(axis=1).sum())
        return (f"SharedStates({len(self.table)} states, {shared} held by every class; "
                f"{self.reason})")

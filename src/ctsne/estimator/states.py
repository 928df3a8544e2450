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
``conditioning="auto"``: shared-state weights where some state is held by only some of
the classes (the design is confounded), the paper's weights where every class holds
every state.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["CONDITIONINGS", "HELD_SHARE", "STATE_METHODS", "choose_conditioning",
           "estimate_states", "held_by", "n_states_rule"]

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


def _refine(Z: np.ndarray, Zc: np.ndarray, classes: np.ndarray, labels: np.ndarray
            ) -> np.ndarray:
    """States from the clusters ``labels`` of the aligned space ``Zc``, checked against the
    unaligned components ``Z``.

    A cluster's points of one class form a part; parts smaller than :data:`MIN_PART` of
    their class go with their cluster's largest part. Two parts are one state where:

    - one class: they overlap in ``Z`` (centres closer than :data:`OVERLAP` × the sum of
      their radii), a type the clustering split;
    - classes a and b that share at least two clusters: the offset between the parts'
      centres in ``Z`` is the offset a → b shows across those clusters (its median), to
      within the same tolerance: a type the alignment left split by class is joined, and
      two types that the alignment pulled together (one each class holds alone) are not;
    - classes a and b with no such offset: each is the other's nearest part of the other
      class in ``Zc``, they overlap there, and each is nearer the other than to any other
      part of its own class.

    States are the connected parts.
    """
    from scipy.sparse.csgraph import connected_components

    pairs, part_of = np.unique(np.stack([labels, classes], axis=1), axis=0,
                               return_inverse=True)
    part_of = part_of.reshape(-1)
    m = len(pairs)
    clu, cls = pairs[:, 0], pairs[:, 1]
    counts = np.bincount(part_of, minlength=m)
    small = counts < MIN_PART * np.bincount(classes)[cls]
    centres, radius = _parts(Z, part_of, m)
    centres_c, radius_c = _parts(Zc, part_of, m)
    tol = OVERLAP * (radius[:, None] + radius[None, :])
    offset = centres[None, :, :] - centres[:, None, :]  # part i → part j
    gap_c = np.linalg.norm(centres_c[:, None, :] - centres_c[None, :, :], axis=2)
    linked = (cls[:, None] == cls[None, :]) & (np.linalg.norm(offset, axis=2) < tol)
    for i in np.flatnonzero(small):  # with the largest part of its cluster
        same = np.flatnonzero(clu == clu[i])
        j = same[np.argmax(counts[same])]
        linked[i, j] = linked[j, i] = True
    big = ~small
    own_gap = np.where((cls[:, None] == cls[None, :]) & ~np.eye(m, dtype=bool) & big[None, :],
                       gap_c, np.inf).min(axis=1)
    for a in np.unique(cls):
        for b in np.unique(cls[cls > a]):
            ia, ib = np.flatnonzero((cls == a) & big), np.flatnonzero((cls == b) & big)
            if not len(ia) or not len(ib):
                continue
            both = np.intersect1d(clu[ia], clu[ib])
            if len(both) >= 2:
                pa = dict(zip(clu[ia], ia, strict=True))
                pb = dict(zip(clu[ib], ib, strict=True))
                typical = np.median([offset[pa[k], pb[k]] for k in both], axis=0)
                near = (np.linalg.norm(offset[np.ix_(ia, ib)] - typical, axis=2)
                        < tol[np.ix_(ia, ib)])
            else:
                g = gap_c[np.ix_(ia, ib)]
                mutual = ((g == g.min(axis=1, keepdims=True))
                          & (g == g.min(axis=0, keepdims=True)))
                overlap = g < OVERLAP * (radius_c[ia][:, None] + radius_c[ib][None, :])
                nearer = (g < own_gap[ia][:, None]) & (g < own_gap[ib][None, :])
                near = mutual & overlap & nearer
            linked[np.ix_(ia, ib)] |= near
            linked[np.ix_(ib, ia)] |= near.T
    return connected_components(linked, directed=False)[1][part_of]


def held_by(table: np.ndarray) -> np.ndarray:
    """Which class holds which state: ``table`` (K, L) counts → bool (K, L)
    (:data:`HELD_SHARE` of the count the class's size predicts)."""
    n = table.sum()
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / max(n, 1)
    return table >= HELD_SHARE * expected


def choose_conditioning(table: np.ndarray) -> tuple[str, str]:
    """``conditioning="auto"``'s choice from the states × classes counts, and why."""
    held = held_by(table)
    big = table.sum(axis=1) >= MIN_STATE_SHARE * table.sum()
    partial = np.flatnonzero(big & ~held.all(axis=1))
    if len(partial):
        return "states", (f"{len(partial)} of {int(big.sum())} states are held by only some "
                          "classes: the prior is removed only where classes share a state")
    return "classes", "every class holds every state: the paper's weights"

"""The states of shared-state conditioning, estimated inside a fit, and the rule that uses them.

Shared-state weights (:mod:`ctsne.shared_states`) need each point's state: the cell type
or cluster it belongs to, in a space where the prior's classes are aligned. Harmony
(``harmonypy``, the implementation scanpy calls) aligns the classes in the first principal
components with a soft clustering whose diversity penalty pulls each cluster towards
holding every class; each point's state is its most likely cluster. A cluster the
penalty cannot fill from every class (a type some classes lack) stays held by the classes
that have it, and the clusters are fine enough (Harmony's own rule, about one per 30
points up to 100) never to join two types: a state spans one type, a type may span
several states. ``experiments/state_finders.py`` compares other finders (k-means and
Leiden communities of the aligned space): coarser states join types that only some
classes hold.

A state that only some classes hold needs no rule of its own: the weights give β' only to
pairs of different classes in the same state, so a class-specific state keeps its full
repulsion from the other classes. :func:`choose_conditioning` is the rule of
``conditioning="auto"``. First the classes' counterpart trust
(:func:`ctsne.affinities.counterpart.counterpart_trust`, each class centred on its mean):
where it reaches :data:`~ctsne.affinities.cross_share.TRUST_FROM`, overall and for every
class, the classes are copies of each other (batches of the same cells, however far
shifted) and the paper's weights are kept without looking for states. Harmony cannot align
every shift, and the states of a shift it leaves would be held by one class each. Below
it, shared-state weights where some states are held by several classes and others by only
some of them (the design is confounded), the paper's weights where every class holds every
state or no state is shared at all.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["CONDITIONINGS", "HELD_SHARE", "MIN_POINTS", "SharedStates", "choose_conditioning",
           "classes_are_copies", "estimate_states", "held_by"]

CONDITIONINGS = ("auto", "classes", "states")
# Harmony runs on at most this many principal components (scanpy's default n_pcs).
N_PCS = 50
# A class holds a state where its points in the state are at least this share of what
# the class's size predicts (its share of the state if states ignored the classes).
HELD_SHARE = 0.25
# States are estimated from at least this many points with two or more features: fewer
# leave nothing to cluster, and "auto" keeps the paper's weights.
MIN_POINTS = 100
# States this small (share of the points) do not decide "auto".
MIN_STATE_SHARE = 0.01


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


def estimate_states(X: np.ndarray, classes: np.ndarray, random_state=None,
                    given: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each point's state (0..K−1): its most likely Harmony cluster (module note), and the
    space Harmony aligned.

    Parameters
    ----------
    X : ndarray (n, p)
    classes : ndarray of int (n,)
        The prior's joint classes.
    random_state : int, Generator or None
    given : ndarray (n,), optional
        States known already (any labels): only the aligned space is computed.

    Returns
    -------
    states : ndarray of int64 (n,)
    aligned : ndarray (n, k)
        Harmony's corrected principal components.
    """
    seed = int(np.random.default_rng(random_state).integers(2**31 - 1))
    _, Zc, R = _aligned(X, classes, seed)
    states = R.argmax(axis=1) if given is None else given
    return np.unique(states, return_inverse=True)[1].reshape(-1).astype(np.int64), Zc


def held_by(table: np.ndarray) -> np.ndarray:
    """Which class holds which state: ``table`` (K, L) counts → bool (K, L)
    (:data:`HELD_SHARE` of the count the class's size predicts)."""
    n = table.sum()
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / max(n, 1)
    return table >= HELD_SHARE * expected


def classes_are_copies(class_trust: np.ndarray, trust: float) -> tuple[bool, str]:
    """Whether the classes' counterpart trust says they hold the same cells (module note):
    overall and for every class (a class holding one type alone, centred on its mean,
    can look like a copy of another such class overall, not from each class), and the
    reason ``conditioning_`` then gives."""
    from ..affinities.cross_share import TRUST_FROM

    least = float(np.min(class_trust))
    return (trust >= TRUST_FROM and least >= TRUST_FROM,
            f"the classes hold counterparts of each other (counterpart trust {trust:.2f}, "
            f"each class at least {least:.2f}; ≥ {TRUST_FROM:g}): the paper's weights")


def choose_conditioning(table: np.ndarray) -> tuple[str, str]:
    """``conditioning="auto"``'s choice from the states × classes counts, and why, for
    classes that are not copies of each other (:func:`classes_are_copies`).

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

    def holders(self) -> list[tuple[str, np.ndarray]]:
        """The states grouped by the classes that hold them: (who, the group's state
        indices), groups held by more classes first."""
        order = sorted(range(len(self.table)),
                       key=lambda k: (-int(self.held[k].sum()), tuple(~self.held[k])))
        groups: dict[str, list[int]] = {}
        for k in order:
            who = [str(c) for c, h in zip(self.classes, self.held[k], strict=True) if h]
            name = ("all classes" if self.held[k].all()
                    else ", ".join(who) + (" only" if who else "") if who else "no class")
            groups.setdefault(name, []).append(k)
        return [(name, np.array(ks)) for name, ks in groups.items()]

    def lines(self) -> list[str]:
        """The states as text: a line per set of classes holding states (how many states,
        how many points)."""
        n = max(int(self.table.sum()), 1)
        out = []
        for name, ks in self.holders():
            points = int(self.table[ks].sum())
            out.append(f"held by {name}: {len(ks)} state{'' if len(ks) == 1 else 's'}, "
                       f"{points} points ({100 * points / n:.0f} %)")
        return out

    def __repr__(self) -> str:
        shared = int(self.held.all(axis=1).sum())
        return (f"SharedStates({len(self.table)} states, {shared} held by every class; "
                f"{self.reason})")

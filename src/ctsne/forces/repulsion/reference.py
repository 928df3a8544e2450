"""Repulsion on new points from a fixed reference map (``ConditionalTSNE.transform``).

The engines beside this one move every point of a map; here the reference points stay
where the fit put them and only new points are evaluated against them, each on its own
(new points do not repel each other). For a new point i::

    F_i = Σ_j w_ij t_ij² (y_i − y_j),   Z_i = Σ_j w_ij t_ij,   t_ij = 1 / (1 + |y_i − y_j|²)

over the reference points j, with ``w_ij`` the fitted prior's pair weight. The weight
expands into one term per subset of code columns (the prior's columns,
:func:`ctsne.prior.weight_terms`; or class and state,
:meth:`ctsne.shared_states.SharedStatePrior.column_terms`), each a plain sum over the
reference points of one joint class: one tree per class that new points belong to,
built once since the reference is fixed.

Tree. A kd-tree by median splits on the widest axis; each node keeps its centre of mass
and the squared diagonal of its bounding box. A node is summarised as a monopole at its
centre of mass when ``diameter < θ · distance``; ``theta=0`` is exact. Unlike
:mod:`ctsne.forces.repulsion.barnes_hut`, which rebuilds its tree every call and walks it
for groups of points of the same map, this tree is built once and walked per new point.
"""

from __future__ import annotations

import numba
import numpy as np

from ..._parallel import threaded
from ...tuning import FIELD_BYTES, REFERENCE_LEAF_SIZE, REFERENCE_PARALLEL_FROM_QUERIES

__all__ = ["ANY", "ReferenceRepulsion", "ReferenceTree"]

# Leaf size, parallel threshold and the fields' memory budget: ctsne.tuning (past
# FIELD_BYTES, e.g. priors with hundreds of classes, the class terms walk trees).
# The tree's depth is at most log2(n) + 1 and the walk keeps two entries per level.
_STACK = 130


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


@threaded(REFERENCE_PARALLEL_FROM_QUERIES)
def _query(Yq, Ys, start, stop, child, com, diam2, theta2, coef, F, Z, first, last):
    # _query_point for rows first … last − 1 of Yq (each point's sums are its own: the
    # same for any split)
    stack = np.empty(_STACK, dtype=np.int64)
    f = np.empty(Yq.shape[1])
    for i in range(first, last):
        _query_point(i, Yq, Ys, start, stop, child, com, diam2, theta2, coef, F, Z, stack, f)


class ReferenceTree:
    """A fixed point set, summarised once for evaluations at other points.

    Parameters
    ----------
    Y : ndarray (n, d)
        The reference points.
    """

    def __init__(self, Y: np.ndarray):
        perm, self.start, self.stop, self.child, self.com, self.diam2 = _build_tree(
            np.ascontiguousarray(Y, dtype=np.float64), REFERENCE_LEAF_SIZE)
        self.Ys = np.ascontiguousarray(Y[perm], dtype=np.float64)

    def add(self, Yq: np.ndarray, theta: float, coef: float, F: np.ndarray,
            Z: np.ndarray) -> None:
        """Add ``coef·Σ_j t_ij² (y_i − y_j)`` to ``F[i]`` and ``coef·Σ_j t_ij`` to ``Z[i]``.

        Parameters
        ----------
        Yq : ndarray (m, d), float64, C-contiguous
            The query points i.
        theta : float
            Opening angle (0: exact).
        coef : float
            Factor on both sums.
        F : ndarray (m, d)
        Z : ndarray (m,)
            Accumulated in place.
        """
        _query.run(Yq, self.Ys, self.start, self.stop, self.child, self.com, self.diam2,
                   float(theta) ** 2, float(coef), F, Z, items=len(Yq), work=len(Yq))


# A new point's code that matches every reference point's in its column (a state not
# known for it: in every state, as the paper's weights have it)
ANY = -2


def _joint_members(codes_ref, codes_new, cols, rows):
    """``[(rows of the new points, members of the reference)]`` per joint class of the
    columns ``cols`` that new points ``rows`` hold (a −1 code: none), and the number of
    the reference's joint classes."""
    ref = np.stack([codes_ref[k] for k in cols], axis=1)
    new = np.stack([codes_new[k][rows] for k in cols], axis=1)
    known = np.all(new >= 0, axis=1)
    _, inv = np.unique(np.concatenate([ref, new[known]]), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    g_ref = inv[: len(ref)]
    g_new = np.full(len(rows), -1, dtype=np.int64)
    g_new[known] = inv[len(ref):]
    out = []
    for g in np.unique(g_new[g_new >= 0]):
        members = np.flatnonzero(g_ref == g)
        if len(members):
            out.append((rows[g_new == g], members))
    return out, len(np.unique(g_ref))


class ReferenceRepulsion:
    """``F_i = Σ_j w_ij t_ij² (y_i − y_j)`` and ``Z_i = Σ_j w_ij t_ij`` over reference j.

    The pair weight, expanded into terms over subsets of code columns ("same code in all
    of them", ``terms``), is a sum of plain sums over the reference points of one joint
    class that new points belong to. In 2-D each such sum can be read from its
    field tabulated once on a grid (:mod:`ctsne.forces.repulsion.field`); otherwise, and
    for new points off the grid, a tree over the class is walked (built when first needed).

    Parameters
    ----------
    Y_ref : ndarray (n, d)
    codes_ref, codes_new : list of ndarray of int
        Class codes per column (for a new point, −1: no reference point shares it;
        :data:`ANY`: every reference point does).
    terms : list of (float, tuple of int)
        The weight's expansion ``w_ij = Σ coef·[same code in every column of the
        subset]`` (:func:`ctsne.prior.weight_terms` for a prior's α' and β',
        :meth:`ctsne.shared_states.SharedStatePrior.column_terms` with states).
    theta : float
        Barnes-Hut opening angle of the trees (0: exact, and no fields).
    fields : bool
        Tabulate fields (2-D, ``theta > 0``): always for the all-points term, and for the
        class terms if the fields of every class of the reference fit ``field_bytes``.
    field_bytes : int
        Most memory for the fields together.
    """

    def __init__(self, Y_ref, codes_ref, codes_new, terms, theta: float = 0.5,
                 fields: bool = False, field_bytes: int = FIELD_BYTES):
        self.theta = float(theta)
        self.Y_ref = np.asarray(Y_ref, dtype=np.float64)
        # (coef, rows of the new points or None for all, members of the reference or None)
        parts: list[tuple[float, np.ndarray | None, np.ndarray | None]] = []
        n_classes = 0  # classes of the reference over all class terms
        for coef, subset in terms:
            coef = float(coef)
            if not subset:
                parts.append((coef, None, None))
                continue
            # a new point whose code is ANY in some columns of the term is in relation with
            # every reference point on those: the term is over its other columns alone
            wild = np.stack([codes_new[k] == ANY for k in subset], axis=1)
            patterns, of = np.unique(wild, axis=0, return_inverse=True)
            of = of.reshape(-1)
            for p, pattern in enumerate(patterns):
                rows = np.flatnonzero(of == p)
                cols = [k for k, w in zip(subset, pattern, strict=True) if not w]
                if not cols:
                    parts.append((coef, rows, None))
                    continue
                found, n_found = _joint_members(codes_ref, codes_new, cols, rows)
                n_classes += n_found
                parts.extend((coef, r, members) for r, members in found)
        grid = None
        if fields and self.theta > 0 and self.Y_ref.shape[1] == 2 and parts:
            from .field import FieldGrid

            grid = FieldGrid(self.Y_ref, workers=numba.get_num_threads())
        # Which terms get a field depends on the reference alone, never on the new points
        # (how many, which classes): a point's placement does not depend on its companions.
        # The all-points term gets one; the class terms too if the fields of all the
        # reference's classes would fit in field_bytes.
        class_fields = grid is not None and (1 + n_classes) * grid.nbytes <= field_bytes
        # [coef, rows, members, field or None, key of its tree in self._trees]; every
        # term over all the reference shares one field and one tree
        self.terms: list[list] = []
        self._trees: dict[int, ReferenceTree] = {}  # built when first needed
        everyone = None
        for key, (coef, rows, members) in enumerate(parts):
            field = None
            if grid is not None and (members is None or class_fields):
                from .field import ReferenceField

                if members is not None:
                    field = ReferenceField(self.Y_ref[members], grid)
                else:
                    if everyone is None:
                        everyone = ReferenceField(self.Y_ref, grid)
                    field = everyone
            self.terms.append([coef, rows, members, field, -1 if members is None else key])

    def _tree(self, term: list) -> ReferenceTree:
        if term[4] not in self._trees:
            self._trees[term[4]] = ReferenceTree(self.Y_ref if term[2] is None
                                                 else self.Y_ref[term[2]])
        return self._trees[term[4]]

    def restrict(self, keep: np.ndarray) -> ReferenceRepulsion:
        """The same repulsion for the new points ``keep`` (ascending indices) only: rows
        renumbered, fields and trees shared."""
        out = object.__new__(ReferenceRepulsion)
        out.theta, out.Y_ref, out._trees = self.theta, self.Y_ref, self._trees
        out.terms = []
        for coef, rows, members, field, key in self.terms:
            if rows is not None:
                pos = np.searchsorted(keep, rows)
                hit = pos < len(keep)
                hit[hit] = keep[pos[hit]] == rows[hit]
                rows = pos[hit]
                if not len(rows):
                    continue
            out.terms.append([coef, rows, members, field, key])
        return out

    def fields_used(self) -> int:
        """Number of terms read from a tabulated field."""
        return sum(t[3] is not None for t in self.terms)

    def __call__(self, Y_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(F, Z)`` at the new points ``Y_new`` (m, d)."""
        Y_new = np.ascontiguousarray(Y_new, dtype=np.float64)
        F = np.zeros_like(Y_new)
        Z = np.zeros(len(Y_new))
        for term in self.terms:
            coef, rows, _, field, _ = term
            Yq = Y_new if rows is None else np.ascontiguousarray(Y_new[rows])
            Fg, Zg = np.zeros_like(Yq), np.zeros(len(Yq))
            if field is not None:
                off = field.add(Yq, coef, Fg, Zg)
                if len(off):  # points off the grid: the tree, for those only
                    Fo, Zo = np.zeros((len(off), Yq.shape[1])), np.zeros(len(off))
                    self._tree(term).add(np.ascontiguousarray(Yq[off]), self.theta, coef,
                                         Fo, Zo)
                    Fg[off] += Fo
                    Zg[off] += Zo
            else:
                self._tree(term).add(Yq, self.theta, coef, Fg, Zg)
            if rows is None:
                F += Fg
                Z += Zg
            else:
                F[rows] += Fg
                Z[rows] += Zg
        return F, Z

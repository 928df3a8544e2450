"""Shared-state pair weights: a prior removed only where its classes share a state.

The paper's weights give every pair of different classes β', so a class-specific state (a
cell type that only one batch holds) feels almost no repulsion from the other classes and
is laid over their states. With hard states ``s`` (cell types, clusters of a space where
the classes are aligned) the weights of :class:`SharedStatePrior` are

    w_ij = α'   same class
           β'   different classes, same state
           1    different classes, different states

that is ``w = 1 + (α' − 1)[c_i = c_j] + (β' − 1)[s_i = s_j] + (1 − β')[c_i = c_j, s_i = s_j]``:
four partition terms (all points, the classes, the states, class × state), so every
repulsion engine runs them as it runs the paper's two (:meth:`SharedStatePrior.terms`),
the exact objective reads :meth:`SharedStatePrior.pair_weights`, and the SGD layouts'
negative sampling the group table of :meth:`SharedStatePrior.group_weights`. α' and β'
are the prior's own (paper Eq. 4). One column only: several priors are combined into
joint classes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .prior import Prior, PriorTerm

__all__ = ["SharedStatePrior", "shared_state_table", "with_states"]


@dataclass
class SharedStatePrior(Prior):
    """A one-column :class:`~ctsne.prior.Prior` with a state per point (module note).

    Attributes
    ----------
    states : ndarray of int64 (n,)
        Each point's state, 0..K−1.
    """

    states: np.ndarray = field(default=None, repr=False)

    @property
    def n_states(self) -> int:
        return int(self.states.max()) + 1 if len(self.states) else 0

    def _groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each point's (class, state) group, and each group's class and state."""
        c, s = self.codes[0], self.states
        pairs, groups = np.unique(np.stack([c, s], axis=1), axis=0, return_inverse=True)
        return groups.reshape(-1).astype(np.int64), pairs[:, 0], pairs[:, 1]

    def terms(self) -> list[PriorTerm]:
        """The four partition terms of the module note (zero coefficients left out)."""
        c, s = self.codes[0], self.states
        groups = self._groups()[0]
        codes = {(): None, (0,): c, (1,): s, (0, 1): groups}
        return [PriorTerm(coef, codes[cols], 1 if codes[cols] is None
                          else int(codes[cols].max()) + 1)
                for coef, cols in self.column_terms()]

    def column_terms(self) -> list[tuple[float, tuple[int, ...]]]:
        """:meth:`terms` over the code columns ``[classes, states]``: ``(coef, columns)``,
        as :func:`ctsne.prior.weight_terms` gives them for the paper's weights."""
        a, b = float(self.alphas[0]), float(self.betas[0])
        out = [(1.0, ()), (a - 1.0, (0,)), (b - 1.0, (1,)), (1.0 - b, (0, 1))]
        return [t for t in out if t[0] != 0.0]

    def _weights(self, c_i, s_i, c_j, s_j) -> np.ndarray:
        """The weights of the module note between points (class, state) i and j."""
        a, b = float(self.alphas[0]), float(self.betas[0])
        return np.where(c_i[:, None] == c_j[None, :], a,
                        np.where(s_i[:, None] == s_j[None, :], b, 1.0))

    def pair_weights(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """Dense block of ``w_ij`` for ``i in rows`` and ``j in cols`` (all points if None)."""
        sel = slice(None) if cols is None else cols
        c, s = self.codes[0], self.states
        return self._weights(c[rows], s[rows], c[sel], s[sel])

    def group_weights(self, sources: list | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each point's (class, state) group and the groups' weight table ``W`` (G, G).

        ``sources``: codes of other points (new points), ``[classes]`` or ``[classes,
        states]`` (from :meth:`states_of`); their weights against each group (r, G). A
        point of unknown state (−1, or no states given) is in every state: the paper's
        α' or β'.
        """
        groups, gc, gs = self._groups()
        if sources is not None:
            c = np.asarray(sources[0])
            s = np.asarray(sources[1]) if len(sources) > 1 else np.full(len(c), -1)
            known = self._weights(c, s, gc, gs)
            paper = self._weights(c, np.full(len(c), -1), gc, np.full(len(gs), -1))
            return groups, np.where((s >= 0)[:, None], known, paper)
        return groups, self._weights(gc, gs, gc, gs)

    def states_of(self, classes: np.ndarray, idx: np.ndarray, weights: np.ndarray
                  ) -> np.ndarray:
        """The states of new points: of each point's reference neighbours ``idx`` (m, k;
        edge ``weights``) those of its own class, the state holding most of their weight;
        −1 (unknown) for a point of unknown class or without a neighbour of its class."""
        import scipy.sparse as sp

        classes = np.asarray(classes)
        same = (self.codes[0][idx] == classes[:, None]) & (classes >= 0)[:, None]
        rows = np.broadcast_to(np.arange(len(classes))[:, None], idx.shape)[same]
        # (a tiny floor: a neighbour of weight 0 still names its state)
        votes = sp.csr_matrix((weights[same] + 1e-12, (rows, self.states[idx[same]])),
                              shape=(len(classes), self.n_states))
        out = np.asarray(votes.argmax(axis=1)).reshape(-1).astype(np.int64)
        out[~same.any(axis=1)] = -1
        return out


def with_states(prior: Prior, states: np.ndarray) -> SharedStatePrior:
    """``prior`` (one column) with ``states`` (n,) of any hashable labels."""
    if len(prior.codes) != 1:
        raise ValueError("shared-state conditioning takes one prior column; combine several "
                         "priors into joint classes (combine='joint') or use "
                         "conditioning='classes'")
    states = np.asarray(states)
    if states.shape != (prior.n,):
        raise ValueError(f"states has shape {states.shape}; give one state per point, "
                         f"({prior.n},)")
    codes = np.unique(states, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return SharedStatePrior(codes=prior.codes, classes=prior.classes, alphas=prior.alphas,
                            betas=prior.betas, states=codes)


def shared_state_table(prior: SharedStatePrior) -> np.ndarray:
    """Points of each state (rows) in each class (columns): ``(K, L)`` counts."""
    table = np.zeros((prior.n_states, int(prior.codes[0].max()) + 1), dtype=np.int64)
    np.add.at(table, (prior.states, prior.codes[0]), 1)
    return table

"""The ct-SNE gradient as the optimiser uses it: sparse attraction + composed repulsion."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .._parallel import threaded
from ..prior import Prior, PriorTerm
from ..tuning import ASSEMBLE_IN_PLACE_FROM, KL_FIXED_PARALLEL_FROM_NNZ, LOCALITY_ABOVE
from .attraction import Attraction, locality_order
from .repulsion import ConditionalRepulsion

__all__ = ["ConditionalGradient"]

# The KL's fixed part, computed once per fit, runs compiled in parts on ctsne's threads from
# KL_FIXED_PARALLEL_FROM_NNZ non-zeros of P; below, in numpy (ctsne._parallel): no compile.
# From ASSEMBLE_IN_PLACE_FROM coordinates the gradient is assembled by a kernel, in place
# (numpy's expression allocates four (n, d) temporaries a step); below, numpy.


@threaded(ASSEMBLE_IN_PLACE_FROM)
def _assemble(attr, rep, exaggeration, S, start, stop):
    # attr ← 4·(exaggeration·attr − rep/S) for rows start … stop − 1, element by element as
    # numpy computes it
    for i in range(start, stop):
        for k in range(attr.shape[1]):
            attr[i, k] = 4.0 * (exaggeration * attr[i, k] - rep[i, k] / S)


@threaded(KL_FIXED_PARALLEL_FROM_NNZ)
def _fixed_part(indptr, indices, data, codes, coefs, acc, start, stop):
    # each row's Σ p log p − Σ p log w over its non-zeros, rows start … stop − 1, with
    # w_ij = Σ_t coefs[t]·[codes[t, i] = codes[t, j]] (the prior's terms; (T, n) codes)
    m = codes.shape[0]
    for i in range(start, stop):
        s = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            p = data[e]
            if p <= 0.0:
                continue
            j = indices[e]
            w = 0.0
            for t in range(m):
                if codes[t, i] == codes[t, j]:
                    w += coefs[t]
            s += p * (np.log(p) - np.log(w))
        acc[i] = s


# Twin: a fit below 10⁶ non-zeros compiles no _fixed_part.
@_fixed_part.small
def _fixed_part_small(indptr, indices, data, codes, coefs, acc):
    # the kernel's terms, and each row's sum in its order (np.add.at adds in turn)
    n = indptr.shape[0] - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    keep = data > 0.0
    rows, cols, p = rows[keep], indices[keep], data[keep]
    w = np.zeros(p.shape[0])
    for t in range(codes.shape[0]):
        w += np.where(codes[t, rows] == codes[t, cols], coefs[t], 0.0)
    acc[:] = 0.0
    np.add.at(acc, rows, p * (np.log(p) - np.log(w)))


class ConditionalGradient:
    """``(Y, exaggeration, want_kl) -> (∂KL/∂Y, KL(P‖R) or None)``, factor-4 convention.

    Exaggeration multiplies the attractive force only; the reported KL always uses the
    true P. ``KL = Σ p log p − Σ p log w − Σ p log t + log S``, where the first two sums
    are fixed by P and the prior and computed once.

    Parameters
    ----------
    P : csr_matrix (n, n), symmetric, sums to 1
    prior : Prior or None
    d : int
        Output dimensions.
    method : {"exact", "bh", "fft", "auto"}
    engine_params : dict, optional
        Per-engine keyword arguments (see :class:`ConditionalRepulsion`).
    in_locality_order : bool, default False
        Above the attraction's ``LOCALITY_ABOVE`` points, number the points in
        :func:`~ctsne.forces.attraction.locality_order` (``order``): the gradient and
        :meth:`kl` then take and return arrays whose row r is point ``order[r]``, and the
        caller permutes once per run (``ConditionalTSNE`` does). In the points' own order
        the attraction copies the map into that order and its forces back on every call.

    Attributes
    ----------
    order : ndarray of int64 or None
        The numbering in use; None: the points' own.
    timings : dict
        Seconds spent so far in the attraction and in the repulsion.
    """

    def __init__(self, P: sp.csr_matrix, prior: Prior | None, d: int, method: str,
                 engine_params: dict | None = None, in_locality_order: bool = False):
        self.P = P
        n = P.shape[0]
        self.order = (locality_order(P) if in_locality_order and n > LOCALITY_ABOVE
                      else None)
        self.attraction = Attraction(P, order=self.order)
        terms = prior.terms() if prior is not None else [PriorTerm(1.0, None, 1)]
        codes = np.stack([np.zeros(n, dtype=np.int64) if t.codes is None else t.codes
                          for t in terms])
        fixed = np.empty(n)
        _fixed_part.run(P.indptr, P.indices, P.data, codes,
                        np.array([t.coef for t in terms], dtype=np.float64), fixed, items=n,
                        work=P.nnz)
        if self.order is not None:
            terms = [PriorTerm(t.coef, None if t.codes is None else t.codes[self.order],
                               t.n_groups) for t in terms]
        self.repulsion = ConditionalRepulsion(terms, n, d, method, engine_params)
        self.constant = float(fixed.sum())
        self.timings = {"attraction": 0.0, "repulsion": 0.0}

    def __call__(self, Y: np.ndarray, exaggeration: float = 1.0,
                 want_kl: bool = False) -> tuple[np.ndarray, float | None]:
        t0 = time.perf_counter()
        attr, p_log_t = self.attraction(Y, want_kl)
        t1 = time.perf_counter()
        rep, S = self.repulsion(Y)
        self.timings["attraction"] += t1 - t0
        self.timings["repulsion"] += time.perf_counter() - t1
        # numpy twin of _assemble below: a small first fit compiles no kernel
        if attr.size < ASSEMBLE_IN_PLACE_FROM:
            grad = 4.0 * (exaggeration * attr - rep / S)
        else:  # attr is this call's own array
            _assemble.run(attr, rep, float(exaggeration), float(S), items=len(attr),
                          work=attr.size)
            grad = attr
        kl = self.constant - p_log_t + np.log(S) if want_kl else None
        return grad, kl

    def kl(self, Y: np.ndarray) -> float:
        """KL(P‖R) of the embedding ``Y`` (rows in :attr:`order`)."""
        return self(Y, 1.0, True)[1]

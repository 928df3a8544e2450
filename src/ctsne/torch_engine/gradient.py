"""The ct-SNE gradient on the device: sparse attraction + conditional repulsion, and KL.

The torch counterpart of :class:`ctsne.forces.gradient.ConditionalGradient`, same
convention (the factor 4; exaggeration on the attraction only; the KL with the true P):
``KL = Σ p log p − Σ p log w − Σ p log t + log S``, the first two sums fixed and
computed once.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..prior import Prior, PriorTerm
from ..tuning import TORCH_EXACT_UP_TO as EXACT_UP_TO
from ..tuning import TORCH_KEEP_WEIGHTS_UP_TO as KEEP_WEIGHTS_UP_TO
from .attraction import DeviceAttraction
from .device import TORCH_METHODS, load_torch
from .distributed import Shard
from .repulsion import FFTRepulsion, Groups, exact_repulsion

__all__ = ["EXACT_UP_TO", "TorchGradient", "choose_method"]


def choose_method(method: str, n: int, d: int, device) -> str:
    """The engine for ``method`` at n points in d dimensions: "exact" or "fft" (a
    ValueError for what the torch engine lacks; the estimator refuses those earlier, in
    :func:`~ctsne.torch_engine.device.check_torch_options`)."""
    if method not in TORCH_METHODS or (method == "fft" and d > 2):
        raise ValueError(f"backend='torch' has no method {method!r} for n_components={d}")
    if method == "auto":
        return "exact" if d > 2 or n <= EXACT_UP_TO.get(device.type, 500) else "fft"
    return method


class TorchGradient:
    """``(Y, exaggeration, want_kl) -> (∂KL/∂Y, KL or None)`` on a device, Y a tensor.

    Parameters
    ----------
    P : csr_matrix (n, n)
    prior : Prior or None
    d : int
    method : {"auto", "exact", "fft"}
    device : torch.device
    dtype : torch dtype
        Of the embedding and the forces.
    shard : Shard, optional
        This process's block of points in a process group
        (:mod:`ctsne.torch_engine.distributed`): it computes its rows' forces and the
        gradient is gathered whole. None: one process.

    Attributes
    ----------
    timings : dict
        Seconds in the attraction and in the repulsion (device work synchronised).
    engine : str
        "exact" or "fft": the plan. Under ``method="auto"`` an "fft" plan still takes the
        exact kernel on each call where the layout has spread so far that the grids cost
        more (:meth:`FFTRepulsion.exact_is_faster`, the numba engine's rule); an explicit
        "fft" always transforms.
    last_engine : str or None
        The repulsion of the last call: "exact" or "fft".
    """

    def __init__(self, P: sp.csr_matrix, prior: Prior | None, d: int, method: str,
                 device, dtype, shard: Shard | None = None):
        torch = load_torch()
        n = P.shape[0]
        self.device, self.dtype, self.shard = device, dtype, shard
        self.rows = (0, n) if shard is None else shard.bounds(n)
        if shard is not None:
            shard.check_same(P.nnz, float(P.data.sum()), what="affinities P")
        lo, hi = self.rows
        self.attraction = DeviceAttraction(P[lo:hi] if shard is not None else P, device,
                                           dtype, first_row=lo)
        terms = prior.terms() if prior is not None else [PriorTerm(1.0, None, 1)]
        self.groups = Groups(terms, n, device)
        self.engine = choose_method(method, n, d, device)
        self._fft = FFTRepulsion(self.groups, d) if self.engine == "fft" else None
        self._may_switch = method == "auto"
        self.last_engine = None
        self._W = None  # the exact kernel's pair weights, kept where they are small
        if self.engine == "exact":
            self._W = self._weights()
        # Σ p log p − Σ p log w over P's non-zeros, once
        a = self.attraction
        logw = torch.log(self.groups.weights_of_pairs(a.row, a.col))
        constant = (a.p64 * (torch.log(a.p64) - logw)).sum()
        if shard is not None:  # over every process's rows
            shard.all_reduce(constant)
        self.constant = float(constant)
        self.timings = {"attraction": 0.0, "repulsion": 0.0}

    def _weights(self):
        """The (n, n) pair weights for the exact kernel where they fit
        ``KEEP_WEIGHTS_UP_TO``, built on first use (None: rebuilt block by block)."""
        n = self.groups.member.shape[1]
        if self._W is None and n * n <= KEEP_WEIGHTS_UP_TO:
            torch = load_torch()
            rows = torch.arange(n, device=self.device)
            self._W = self.groups.weights(rows).to(self.dtype)
        return self._W

    def _sync(self) -> None:
        if self.device.type == "cuda":
            load_torch().cuda.synchronize(self.device)

    def __call__(self, Y, exaggeration: float = 1.0, want_kl: bool = False):
        torch = load_torch()
        t0 = time.perf_counter()
        attr, plogt = self.attraction(Y, want_kl)
        self._sync()
        t1 = time.perf_counter()
        lo, hi = self.rows
        shard = self.shard
        plan = self._fft.plan(Y) if self._fft is not None else None
        if plan is not None and not (self._may_switch and self._fft.exact_is_faster(plan)):
            rep, S = self._fft(Y, self.rows, None if shard is None else shard.all_reduce,
                               plan)
            self.last_engine = "fft"
        else:  # whole on every process (the exact kernel is for small or sparse maps)
            rep, S = exact_repulsion(Y, self.groups, self._weights())
            rep = rep[lo:hi]
            self.last_engine = "exact"
        self._sync()
        self.timings["attraction"] += t1 - t0
        self.timings["repulsion"] += time.perf_counter() - t1
        grad = 4.0 * (exaggeration * attr - rep / S.to(Y.dtype))
        if shard is not None:
            grad = shard.gather_rows(grad, Y.shape[0])
            if want_kl:
                plogt = torch.as_tensor(plogt, dtype=torch.float64, device=Y.device).clone()
                shard.all_reduce(plogt)
        kl = None
        if want_kl:
            kl = self.constant - float(plogt) + float(torch.log(S))
        return grad, kl

    def kl(self, Y) -> float:
        """KL(P‖R) of the embedding ``Y`` (tensor or array)."""
        torch = load_torch()
        Y = torch.as_tensor(np.asarray(Y) if not torch.is_tensor(Y) else Y,
                            device=self.device).to(self.dtype)
        return self(Y, 1.0, True)[1]

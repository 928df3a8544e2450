"""The attractive force on the device as a sparse matrix product.

``F_i = Σ_j p_ij t_ij (y_i − y_j) = y_i Σ_j q_ij − Σ_j q_ij y_j`` with ``q_ij = p_ij t_ij``
over P's non-zeros: the values ``q`` are computed per non-zero from the partners'
coordinates, then one CSR product ``Q · [Y, 1]`` gives both sums (cuSPARSE on a GPU).
The product form subtracts two sums of size ``|y|·Σq``; the optimiser keeps the map
centred, so in float32 the rounding is ~6e-8·(span / neighbour distance) relative, ~1e-5
at the spans of 10⁶-point maps, far below the FFT repulsion's error. ``Σ p log t`` for the
KL accumulates in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .device import load_torch

__all__ = ["DeviceAttraction"]


class DeviceAttraction:
    """Attraction for a fixed P on a device and successive embeddings.

    Parameters
    ----------
    P : scipy csr_matrix (n, n), or rows ``first_row …`` of it (m, n)
        Symmetric, so row i lists all of i's partners.
    device : torch.device
    dtype : torch dtype
        Of the embedding (P's values are held in it too).
    first_row : int, default 0
        The point of P's first row: a block of rows gives the forces on those points
        only (:mod:`ctsne.torch_engine.distributed`), from the whole embedding.
    """

    def __init__(self, P: sp.csr_matrix, device, dtype, first_row: int = 0):
        torch = load_torch()
        self.m, self.n = P.shape
        self.first = int(first_row)
        # P's own index type (int32 wherever it fits, as both engines build P): half the
        # index bytes each gradient reads, and cuSPARSE's 32-bit product
        itype = np.result_type(P.indptr, P.indices)
        self.crow = torch.as_tensor(P.indptr.astype(itype, copy=False), device=device)
        self.col = torch.as_tensor(P.indices.astype(itype, copy=False), device=device)
        self.p64 = torch.as_tensor(P.data, dtype=torch.float64, device=device)
        self.p = self.p64.to(dtype)
        self.row = torch.repeat_interleave(
            torch.arange(self.first, self.first + self.m, device=device, dtype=self.col.dtype),
            (self.crow[1:] - self.crow[:-1]).to(torch.int64))

    def __call__(self, Y, want_log: bool = False):
        """``(F, Σ p log t)`` for P's rows (F: (m, d)); the second is 0.0 unless
        ``want_log``."""
        torch = load_torch()
        # coordinate by coordinate: an (nnz, d) difference summed over its short last axis
        # runs strided, ~3× slower on a CPU than these contiguous gathers and products
        cols = Y.t().contiguous()
        d2 = None
        for yk in cols:
            dk = yk.index_select(0, self.row) - yk.index_select(0, self.col)
            d2 = dk * dk if d2 is None else d2.addcmul_(dk, dk)
        q = self.p / (1.0 + d2)
        with warnings.catch_warnings():  # torch calls its CSR support "beta"
            warnings.simplefilter("ignore", UserWarning)
            Q = torch.sparse_csr_tensor(self.crow, self.col, q, (self.m, self.n),
                                        check_invariants=False)
        ones = torch.ones((self.n, 1), dtype=Y.dtype, device=Y.device)
        sums = Q @ torch.cat([Y, ones], 1)
        F = Y[self.first:self.first + self.m] * sums[:, -1:] - sums[:, :-1]
        plogt = 0.0
        if want_log:
            plogt = -(self.p64 * torch.log1p(d2.to(torch.float64))).sum()
        return F, plogt

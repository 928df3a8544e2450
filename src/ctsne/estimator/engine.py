"""The engine an estimator's fit runs on, chosen once per fit: numba or torch.

An engine offers the operations a fit needs: build the input graph from the fit's
neighbour lists in the method's graph family; for ConditionalTSNE, make the gradient of
KL(P‖R) under the prior and run gradient descent on it; for ConditionalUMAP and
ConditionalLargeVis, run the SGD layout over the graph's edges. :func:`choose_engine`
reads ``backend``, ``device`` and ``precision`` once (refusing what the engine cannot do
before any work); the estimator then calls the engine without asking which one it is.
"""

from __future__ import annotations

from ..affinities.modes import Affinities, AffinityMode, Precomputed
from ..forces.gradient import ConditionalGradient
from ..optimization.optimizer import gradient_descent
from ..optimization.sgd import optimize_layout
from ..prior import Prior

__all__ = ["NumbaEngine", "TorchEngine", "choose_engine"]


class NumbaEngine:
    """ctsne's own kernels on the CPU (numba), the default."""

    name = "numba"

    def affinities(self, mode: AffinityMode, lists, graph, labelled=None) -> Affinities:
        """``mode``'s graph of ``lists`` (:class:`~ctsne.neighbors.provider.NeighborLists`)."""
        return mode.build(lists, graph, labelled)

    def gradient(self, P, prior: Prior | None, n_components: int, method: str,
                 theta: float) -> ConditionalGradient:
        """The gradient of KL(P‖R) under ``prior``, in the points' locality order."""
        if method == "auto" and n_components > 3:
            method = "exact"  # Barnes-Hut's trees and the FFT grid end at 3-D and 2-D
        return ConditionalGradient(P, prior, n_components, method, {"bh": {"theta": theta}},
                                   in_locality_order=True)

    def descend(self, *args, **kwargs):
        """:func:`ctsne.optimization.optimizer.gradient_descent`."""
        return gradient_descent(*args, **kwargs)

    def layout(self, *args, **kwargs):
        """A fit's SGD layout: :func:`ctsne.optimization.sgd.optimize_layout`."""
        return optimize_layout(*args, **kwargs)


class TorchEngine(NumbaEngine):
    """The whole fit through PyTorch on ``device`` (:mod:`ctsne.torch_engine`).

    Parameters
    ----------
    device : torch.device
    dtype : torch dtype
        The working precision of the distances and the optimisation.
    """

    name = "torch"

    def __init__(self, device, dtype):
        self.device, self.dtype = device, dtype

    def affinities(self, mode, lists, graph, labelled=None) -> Affinities:
        if isinstance(mode, Precomputed):  # given lists: nothing to search on the device
            return mode.build(lists, graph, labelled)
        from ..torch_engine.affinities import device_affinities

        built, _ = device_affinities(lists.X, graph, lists.classes, mode,
                                     neighbors=lists.method, metric=lists.metric,
                                     random_state=lists.random_state, n_jobs=lists.n_jobs,
                                     labelled=labelled, device=self.device,
                                     work_dtype=self.dtype)
        return built

    def gradient(self, P, prior, n_components, method, theta):
        from ..torch_engine.distributed import Shard
        from ..torch_engine.gradient import TorchGradient

        # inside a torch.distributed group of several processes, each computes its block
        return TorchGradient(P, prior, n_components, method, self.device, self.dtype,
                             shard=Shard.current())

    def descend(self, *args, **kwargs):
        from ..torch_engine.optimizer import torch_gradient_descent

        return torch_gradient_descent(*args, **kwargs)

    def layout(self, *args, **kwargs):
        from ..torch_engine.layout import torch_layout

        return torch_layout(*args, device=self.device, dtype=self.dtype, **kwargs)


def choose_engine(backend: str, device: str | None, precision: str, method: str,
                  n_components: int) -> NumbaEngine:
    """The engine of ``backend`` ("numba" or "torch"), its options checked (torch present,
    the device there, a method it has) before any work."""
    if backend != "torch":
        return NumbaEngine()
    from ..torch_engine.device import check_torch_options

    return TorchEngine(*check_torch_options(device, precision, method, n_components))

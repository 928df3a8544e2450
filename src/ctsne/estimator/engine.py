"""The engine an estimator's fit runs on, chosen once per fit: numba or torch.

An engine is a set of primitives, each asked for by the estimator's one fit
(:class:`ctsne.estimator.base.ConditionalEmbedding`) without asking which engine it is:

- :meth:`~Engine.lists`: the fit's neighbour-lists provider (searched on demand);
- :meth:`~Engine.affinities`: an affinity mode's graph of those lists in the engine's
  version of the method's graph family (the mode's rule runs as written, on either);
- :meth:`~Engine.gradient` and :attr:`~Engine.steps`: ConditionalTSNE's gradient of
  KL(P‖R) and the step primitives of the one descent loop
  (:func:`ctsne.optimization.optimizer.gradient_descent`);
- :meth:`~Engine.layout`: ConditionalUMAP's and ConditionalLargeVis's SGD layout;
- :meth:`~Engine.place`: ConditionalTSNE's placement of new points (``transform``).

:func:`choose_engine` reads ``backend``, ``device`` and ``precision`` once, refusing what
the engine cannot do before any work.
"""

from __future__ import annotations

from ..affinities.modes import Affinities, AffinityMode
from ..forces.gradient import ConditionalGradient
from ..neighbors.provider import NeighborLists
from ..optimization.optimizer import HOST_STEPS
from ..optimization.sgd import optimize_layout
from ..prior import Prior

__all__ = ["Engine", "NumbaEngine", "TorchEngine", "choose_engine"]


class Engine:
    """The primitives a fit asks of its engine (module note); the host's by default."""

    name = "engine"
    steps = HOST_STEPS

    def lists(self, X, classes, *, method: str, metric: str, random_state, n_jobs,
              progress=None):
        """The fit's neighbour lists of ``X`` (at a safe scale) under ``classes``."""
        raise NotImplementedError  # pragma: no cover

    def family(self, graph):
        """This engine's version of a graph family of :mod:`ctsne.affinities.graphs`."""
        return graph

    def affinities(self, mode: AffinityMode, lists, graph, labelled=None) -> Affinities:
        """``mode``'s graph of ``lists`` in ``graph``'s family."""
        return mode.build(lists, self.family(graph), labelled)

    def gradient(self, P, prior: Prior | None, n_components: int, method: str,
                 theta: float):
        """The gradient of KL(P‖R) under ``prior``."""
        raise NotImplementedError  # pragma: no cover

    def layout(self, *args, **kwargs):
        """The SGD layout of a fit, or of new points against a fixed map (``Y_ref``), with
        :func:`ctsne.optimization.sgd.optimize_layout`'s arguments."""
        return optimize_layout(*args, **kwargs)

    def place(self, *args, **kwargs):
        """New points placed into a fitted t-SNE map
        (:func:`ctsne.estimator.placement.place_points`)."""
        from .placement import place_points

        return place_points(*args, **kwargs)


class NumbaEngine(Engine):
    """ctsne's own kernels on the CPU (numba), the default."""

    name = "numba"

    def lists(self, X, classes, *, method, metric, random_state, n_jobs, progress=None):
        return NeighborLists(X, classes, method=method, metric=metric,
                             random_state=random_state, n_jobs=n_jobs, progress=progress)

    def gradient(self, P, prior, n_components, method, theta) -> ConditionalGradient:
        if method == "auto" and n_components > 3:
            method = "exact"  # Barnes-Hut's trees and the FFT grid end at 3-D and 2-D
        return ConditionalGradient(P, prior, n_components, method, {"bh": {"theta": theta}},
                                   in_locality_order=True)


class TorchEngine(Engine):
    """The fit through PyTorch on ``device`` (:mod:`ctsne.torch_engine`).

    The lists, the graph, the gradient, the steps and the layout run on the device; the
    lists provider falls back to the host's searches per request where the device has no
    search for it (:class:`ctsne.torch_engine.neighbors.DeviceLists`). New points are
    placed on the host.

    Parameters
    ----------
    device : torch.device
    dtype : torch dtype
        The working precision of the distances and the optimisation.
    """

    name = "torch"

    def __init__(self, device, dtype):
        from ..torch_engine.optimizer import TorchSteps

        self.device, self.dtype = device, dtype
        self.steps = TorchSteps(device, dtype)

    def lists(self, X, classes, *, method, metric, random_state, n_jobs, progress=None):
        from ..torch_engine.neighbors import DeviceLists

        return DeviceLists(X, classes, self.device, work_dtype=self.dtype,
                           random_state=random_state, n_jobs=n_jobs, method=method,
                           metric=metric)

    def family(self, graph):
        from ..torch_engine.affinities import on_device

        return on_device(graph)

    def gradient(self, P, prior, n_components, method, theta):
        from ..torch_engine.distributed import Shard
        from ..torch_engine.gradient import TorchGradient

        # inside a torch.distributed group of several processes, each computes its block
        return TorchGradient(P, prior, n_components, method, self.device, self.dtype,
                             shard=Shard.current())

    def layout(self, *args, **kwargs):
        if kwargs.get("Y_ref") is not None:  # new points against a fixed map: the host's
            return optimize_layout(*args, **kwargs)
        from ..torch_engine.layout import torch_layout

        return torch_layout(*args, device=self.device, dtype=self.dtype, **kwargs)


def choose_engine(backend: str, device: str | None, precision: str, method: str,
                  n_components: int) -> Engine:
    """The engine of ``backend`` ("numba" or "torch"), its options checked (torch present,
    the device there, a method it has) before any work."""
    if backend != "torch":
        return NumbaEngine()
    from ..torch_engine.device import check_torch_options

    return TorchEngine(*check_torch_options(device, precision, method, n_components))

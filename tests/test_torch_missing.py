"""backend="torch" without PyTorch: a clear error before any work (runs with or without torch)."""

import sys

import numpy as np
import pytest

import ctsne.estimator.tsne as tsne_module
from ctsne.estimator.tsne import ConditionalTSNE


def test_backend_torch_without_torch_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail

    def no_work(*args, **kwargs):
        raise AssertionError("the fit started before refusing the backend")

    monkeypatch.setattr(tsne_module, "initial_embedding", no_work)
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ImportError, match=r"pip install 'ctsne\[gpu\]'"):
        ConditionalTSNE(backend="torch", device="cpu", perplexity=5.0).fit(X)
    # the numba engine does not need torch
    model = ConditionalTSNE(perplexity=5.0, n_iter=5, early_exaggeration_iter=5, random_state=0)
    monkeypatch.undo()
    assert model.fit_transform(X).shape == (30, 2)


@pytest.mark.parametrize("name", ["ConditionalUMAP", "ConditionalLargeVis"])
def test_graph_estimators_refuse_backend_torch_without_torch_first(monkeypatch, name):
    import ctsne
    import ctsne.estimator.engine as engine_module

    monkeypatch.setitem(sys.modules, "torch", None)

    def no_search(*args, **kwargs):
        raise AssertionError("the neighbour search started before refusing the backend")

    monkeypatch.setattr(engine_module, "NeighborLists", no_search)
    X = np.random.default_rng(0).normal(size=(30, 3))
    cls = getattr(ctsne, name)
    with pytest.raises(ImportError, match=r"pip install 'ctsne\[gpu\]'"):
        kw = {"perplexity": 5.0} if name == "ConditionalLargeVis" else {"n_neighbors": 5}
        cls(backend="torch", n_epochs=5, **kw).fit(X)

import numpy as np
import pytest


def random_affinities(n: int, rng: np.random.Generator, density: float = 0.3) -> np.ndarray:
    """A random symmetric P with zero diagonal summing to 1 (every point has a partner)."""
    A = rng.random((n, n)) * (rng.random((n, n)) < density)
    A = A + A.T + np.roll(np.eye(n), 1, axis=1) * 1e-3 + np.roll(np.eye(n), -1, axis=1) * 1e-3
    np.fill_diagonal(A, 0.0)
    return A / A.sum()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="module")
def torch_one_thread():
    """PyTorch on one thread for a module's tests: the test machines are small and shared,
    and torch's thread pool, spinning against other work, ran the torch tests up to ten
    times slower than one thread."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def graphs_built(monkeypatch):
    """A list that gains an entry each time pynndescent's index is built (it still is)."""
    import pynndescent

    real = pynndescent.NNDescent
    built = []

    def counted(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pynndescent, "NNDescent", counted)
    return built


def device_affinities(X, graph, classes, mode, within_weight=None, *, neighbors="auto",
                      metric="euclidean", labelled=None, device=None):
    """A fit's graph built by the torch engine's primitives (float64 on ``device``), and
    where its lists were searched (the provider's plan)."""
    import torch

    from ctsne.affinities.graphs import FuzzyGraph, PerplexityGraph
    from ctsne.affinities.modes import resolve_mode
    from ctsne.checks import to_safe_scale
    from ctsne.estimator.engine import TorchEngine

    engine = TorchEngine(device, torch.float64)
    if not isinstance(graph, (PerplexityGraph, FuzzyGraph)):
        graph = PerplexityGraph(float(graph))
    lists = engine.lists(to_safe_scale(X), classes, method=neighbors, metric=metric,
                         random_state=None, n_jobs=None)
    return (engine.affinities(resolve_mode(mode, within_weight), lists, graph, labelled),
            lists.plan)

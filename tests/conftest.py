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

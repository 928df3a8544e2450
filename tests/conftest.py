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

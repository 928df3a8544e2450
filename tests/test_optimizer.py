"""The fused optimiser step against a plain numpy statement of the same update."""

import numpy as np
import pytest

from ctsne.optimization.optimizer import _step


def _reference(Y, grad, update, gains, lr, momentum, min_gain, cap):
    flipped = update * grad < 0
    gains = np.maximum(np.where(flipped, gains + 0.2, gains * 0.8), min_gain)
    update = momentum * update - lr * gains * grad
    if cap is not None:
        norms = np.linalg.norm(update, axis=1)
        long = norms > cap
        update[long] *= (cap / norms[long])[:, None]
    Y = Y + update
    return Y - Y.mean(axis=0), update, gains


@pytest.mark.parametrize("cap", [None, 5.0, 0.3])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_step_matches_numpy(cap, d, rng):
    n = 1001
    Y, grad, update = (rng.normal(size=(n, d)) for _ in range(3))
    gains = rng.uniform(0.005, 3, size=(n, d))
    ref = _reference(Y.copy(), grad, update.copy(), gains.copy(), 40.0, 0.8, 0.01, cap)
    Yf, uf, gf = Y.copy(), update.copy(), gains.copy()
    Yf -= _step(Yf, grad, uf, gf, 40.0, 0.8, 0.01, -1.0 if cap is None else cap, 2)
    np.testing.assert_allclose(gf, ref[2], rtol=1e-15)
    np.testing.assert_allclose(uf, ref[1], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(Yf, ref[0], rtol=1e-12, atol=1e-12)
    if cap is not None:
        assert np.linalg.norm(uf, axis=1).max() <= cap * (1 + 1e-12)

"""A long early exaggeration must not shrink the map into underflow (issue 21, item 7).

Where P's spectral gap exceeds 1/exaggeration (the paper's synthetic data) the exaggerated
map contracts geometrically; the optimiser keeps its radius above ``SCALE_FLOOR`` by a
power-of-two rescaling, an exact symmetry of the iteration at that scale.
"""

import numpy as np
import pytest

from ctsne import ConditionalTSNE
from ctsne.datasets import make_synthetic
from ctsne.metrics import neighborhood_preservation
from ctsne.optimization import optimizer
from ctsne.optimization.optimizer import SCALE_FLOOR, SCALE_RESET_EXPONENT, _keep_scale

FAST = dict(random_state=0, n_jobs=1)


@pytest.fixture(scope="module")
def synthetic():
    # 500 points: P's spectral gap is wide, so the map contracts under exaggeration
    return make_synthetic(n=500, random_state=0)


def _radius(Y):
    return float(np.abs(Y - Y.mean(axis=0)).max())


@pytest.mark.parametrize("with_prior", [False, True])
def test_long_exaggeration_gives_a_proper_map(synthetic, with_prior):
    prior = synthetic.f14 if with_prior else None
    default = ConditionalTSNE(**FAST).fit(synthetic.X, prior).embedding_
    radii = []
    model = ConditionalTSNE(early_exaggeration_iter=1500, n_iter=100, callbacks_every_iters=1,
                            callbacks=lambda it, kl, Y: radii.append(_radius(Y)), **FAST)
    Y = model.fit(synthetic.X, prior).embedding_
    assert np.all(np.isfinite(Y)) and np.isfinite(model.kl_divergence_)
    # never below the floor (before the fix: ~1e-160, or stalled in float32's subnormals)
    assert min(radii) >= SCALE_FLOOR
    assert Y.std() > 1e-3 * default.std()
    # as good a map as the default schedule's (before the fix: 0.12 against 0.55)
    kept = neighborhood_preservation(synthetic.X, Y)
    reference = neighborhood_preservation(synthetic.X, default)
    assert kept > reference - 0.05


def test_the_rescaling_is_an_exact_symmetry(synthetic, monkeypatch):
    """With the exact engine, the early phase with the floor is the phase without it times
    a power of two, bit for bit, and the KL is the same."""
    monkeypatch.setattr(optimizer, "COLLAPSE_SHRINK", 0.0)  # let the map shrink to the floor
    kw = dict(early_exaggeration_iter=700, n_iter=0, method="exact", **FAST)
    kept = ConditionalTSNE(**kw).fit(synthetic.X)
    monkeypatch.setattr(optimizer, "SCALE_FLOOR", 0.0)
    free = ConditionalTSNE(**kw).fit(synthetic.X)
    assert _radius(free.embedding_) < SCALE_FLOOR  # the floor was reached
    k = round(np.log2(_radius(kept.embedding_) / _radius(free.embedding_)))
    assert k > 0
    np.testing.assert_array_equal(np.ldexp(free.embedding_, k), kept.embedding_)
    assert kept.kl_divergence_ == free.kl_divergence_


def test_fits_that_stay_above_the_floor_are_unchanged(monkeypatch):
    X = make_synthetic(n=300, random_state=0).X
    kept = ConditionalTSNE(n_iter=50, **FAST).fit(X).embedding_
    monkeypatch.setattr(optimizer, "SCALE_FLOOR", 0.0)
    radii = []
    free = ConditionalTSNE(n_iter=50, callbacks_every_iters=1,
                           callbacks=lambda it, kl, Y: radii.append(_radius(Y)),
                           **FAST).fit(X).embedding_
    assert min(radii) > SCALE_FLOOR
    np.testing.assert_array_equal(kept, free)


def test_keep_scale(rng):
    Y = rng.normal(scale=1e-200, size=(50, 2))
    Y -= Y.mean(axis=0)
    update = rng.normal(scale=1e-201, size=(50, 2))
    Y0, u0 = Y.copy(), update.copy()
    k = _keep_scale(Y, update)
    assert 2.0 ** (SCALE_RESET_EXPONENT - 1) <= np.abs(Y).max() < 2.0 ** SCALE_RESET_EXPONENT
    # exact: a power of two, map and momentum alike
    np.testing.assert_array_equal(Y, np.ldexp(Y0, k))
    np.testing.assert_array_equal(update, np.ldexp(u0, k))
    # above the floor, coincident points and non-finite maps are left alone
    for Y in (Y0 * 0 + 2 * SCALE_FLOOR * np.sign(Y0), np.zeros((5, 2)),
              np.full((5, 2), np.nan)):
        before = Y.copy()
        assert _keep_scale(Y, np.zeros_like(Y)) == 0
        np.testing.assert_array_equal(Y, before)

"""Degenerate data: scale, constant data, duplicates (ctsne.checks and its callers)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from ctsne import ConditionalTSNE
from ctsne.affinities.calibration import calibrate
from ctsne.affinities.standard import joint_affinities
from ctsne.metrics import knn_label_homogeneity
from ctsne.optimization.initialization import initial_embedding


@pytest.fixture(scope="module")
def digits():
    d = load_digits()
    # a little jitter breaks the integer pixels' distance ties, whose order is arbitrary
    X = d.data[:300] + np.random.default_rng(0).uniform(0, 0.01, (300, 64))
    return X, d.target[:300]


def test_calibration_does_not_depend_on_the_scale(rng):
    dist = np.sort(rng.random((50, 20)) + 0.5, axis=1)
    ref = calibrate(dist, 5.0)
    H = -np.sum(ref * np.log(ref), axis=1)
    np.testing.assert_allclose(np.exp(H), 5.0, rtol=1e-6)  # it reaches the perplexity
    for s in (1e-300, 1e-160, 1e160, 1e300):
        np.testing.assert_allclose(calibrate(dist * s, 5.0), ref, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("scale", [1e-300, 1e150, 1e300])
def test_scaled_data_give_the_same_affinities_and_map(digits, scale):
    X, y = digits
    P0 = joint_affinities(X, 20)
    P = joint_affinities(X * scale, 20)
    assert P.nnz == P0.nnz
    np.testing.assert_allclose(P.toarray(), P0.toarray(), rtol=1e-9, atol=1e-18)
    np.testing.assert_allclose(initial_embedding(X * scale, 2, "pca"),
                               initial_embedding(X, 2, "pca"), rtol=1e-9, atol=1e-15)
    params = dict(perplexity=20, early_exaggeration_iter=100, n_iter=100, random_state=0,
                  method="exact", n_jobs=1)
    h0 = knn_label_homogeneity(ConditionalTSNE(**params).fit_transform(X), y, k=10)
    h = knn_label_homogeneity(ConditionalTSNE(**params).fit_transform(X * scale), y, k=10)
    assert h0 > 0.9 and abs(h - h0) < 0.01


def test_constant_data_are_refused():
    X = np.tile([1.0, 2.0, 3.0], (300, 1))
    with pytest.raises(ValueError, match="all 300 points are identical .* nothing to embed"):
        ConditionalTSNE().fit(X)


def test_duplicates_are_named(digits):
    X, y = digits
    X = np.vstack([X[:100], np.repeat(X[:1], 1000, axis=0)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        joint_affinities(X, 30)
    text = [str(w.message) for w in caught]
    assert any("1001 of 1100 points have an exact duplicate" in t and "deduplicate" in t
               for t in text), text
    assert any("more than perplexity=30 nearest neighbours at the same distance" in t
               for t in text), text

import sys

import numpy as np
import pytest

from ctsne.baselines import CCAProjection, label_indicators
from ctsne.datasets import make_cca_example, make_synthetic


def _max_abs_corr(Z, labels):
    F = label_indicators(labels)
    C = np.corrcoef(np.hstack([Z, F]).T)[: Z.shape[1], Z.shape[1]:]
    return np.nanmax(np.abs(C))


def _canonical_correlations(X, F):
    """Canonical correlations from orthonormal bases of the centred columns (QR/SVD)."""
    Qx, _ = np.linalg.qr(X - X.mean(0))
    u, s, _ = np.linalg.svd(F - F.mean(0), full_matrices=False)
    Qf = u[:, s > 1e-9 * s[0]]
    return np.linalg.svd(Qx.T @ Qf, compute_uv=False)


def test_label_indicators():
    F = label_indicators(np.array([["a", 1], ["b", 1], ["a", 2]], dtype=object))
    np.testing.assert_array_equal(F, [[1, 0, 1, 0], [0, 1, 1, 0], [1, 0, 0, 1]])


def test_null_variant_is_uncorrelated_with_labels():
    d = make_synthetic(n=500, random_state=1)
    assert _max_abs_corr(d.X, d.f14) > 0.5
    proj = CCAProjection("null")
    Z = proj.fit_transform(d.X, d.f14)
    # 5 labels span 4 directions ≤ d − 2 = 8: all of them are removed.
    assert proj.n_removed_ == 4
    assert Z.shape == d.X.shape and np.linalg.matrix_rank(Z) == 6
    assert _max_abs_corr(Z, d.f14) < 1e-8
    # The label-independent clusters of dimensions 5–6 survive the projection.
    assert _max_abs_corr(Z, d.f56) > 0.5
    np.testing.assert_allclose(Z @ proj.directions_[:, :4], 0, atol=1e-8)


def test_canonical_correlations_match_independent_computation():
    d = make_cca_example(n=600, random_state=2)
    proj = CCAProjection("least").fit(d.X, d.cluster)
    want = _canonical_correlations(d.X, label_indicators(d.cluster))
    np.testing.assert_allclose(proj.correlations_, want, atol=1e-8)
    # The kept variates: unit variance, uncorrelated, correlated with the labels only as
    # much as the two smallest canonical correlations.
    Z = proj.transform(d.X)
    np.testing.assert_allclose(np.cov(Z.T, bias=True), np.eye(2), atol=1e-8)
    got = _canonical_correlations(Z, label_indicators(d.cluster))
    np.testing.assert_allclose(np.sort(got), np.sort(want[-2:]), atol=1e-8)


def test_too_many_labels_cannot_be_removed():
    # 10 clusters in 5 dimensions: only d − 2 = 3 of the 9 label directions can go.
    d = make_cca_example(n=600, random_state=0)
    proj = CCAProjection("null")
    Z = proj.fit_transform(d.X, d.cluster)
    assert proj.n_removed_ == 3
    assert _max_abs_corr(Z, d.cluster) > 0.5


def test_errors():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="variant"):
        CCAProjection("other").fit(X, np.arange(20) % 2)
    with pytest.raises(ValueError, match="rows"):
        CCAProjection().fit(X, np.arange(10) % 2)


def test_aae_censors_labels():
    pytest.importorskip("torch")
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    from ctsne.baselines import AdversarialCensor

    d = make_synthetic(n=300, center_scale_14=8.0, random_state=0)
    params = dict(latent_dim=6, n_epochs=40, batch_size=50, learning_rate=3e-3,
                  adversary_learning_rate=3e-3, random_state=0)
    plain = AdversarialCensor(adversary_weight=0.0, **params).fit_transform(d.X, d.f14)
    censor = AdversarialCensor(adversary_weight=1.0, **params)
    censored = censor.fit_transform(d.X, d.f14)
    assert censored.shape == (300, 6) and len(censor.history_) == 40
    np.testing.assert_array_equal(
        censored, AdversarialCensor(adversary_weight=1.0, **params).fit_transform(d.X, d.f14))

    def acc(Z, labels):
        return cross_val_score(LogisticRegression(max_iter=2000), Z, labels, cv=4).mean()

    # Without the adversary the code keeps f1-4 (5 classes, chance 0.2); with it a fresh
    # classifier is near chance, while the independent f5-6 stays readable.
    assert acc(plain, d.f14) > 0.95
    assert acc(censored, d.f14) < 0.4
    assert acc(censored, d.f56) > 0.8


def test_aae_without_torch_says_how_to_install(monkeypatch):
    from ctsne.baselines import AdversarialCensor

    monkeypatch.setitem(sys.modules, "torch", None)   # makes `import torch` fail
    with pytest.raises(ImportError, match="optional dependency"):
        AdversarialCensor().fit(np.zeros((10, 2)), np.arange(10) % 2)

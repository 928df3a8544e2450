"""PCA initialisation against an independent SVD of the (class-)centred data."""

import numpy as np
import pytest

from ctsne.optimization.initialization import INIT_STD, initial_embedding


def _svd_scores(R, k):
    """Principal component scores of already-centred rows R, by SVD."""
    U, s, _ = np.linalg.svd(R, full_matrices=False)
    return U[:, :k] * s[:k]


def _same_up_to_sign(A, B):
    for j in range(A.shape[1]):
        sign = np.sign(A[:, j] @ B[:, j])
        np.testing.assert_allclose(A[:, j], sign * B[:, j], rtol=1e-7, atol=1e-12)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    classes = rng.integers(0, 4, 300)
    X = rng.normal(size=(300, 6)) * [3, 2, 1, 1, 0.5, 0.2] + 10 * rng.normal(size=(4, 6))[classes]
    return X, classes


def test_pca_matches_svd(data):
    X, _ = data
    Y = initial_embedding(X, 2, "pca")
    ref = _svd_scores(X - X.mean(axis=0), 2)
    _same_up_to_sign(Y, ref / ref[:, 0].std() * INIT_STD)
    assert Y[:, 0].std() == pytest.approx(INIT_STD)


def test_prior_pca_removes_class_means(data):
    X, classes = data
    Y = initial_embedding(X, 2, "pca", classes=classes)
    R = X.copy()
    for c in np.unique(classes):
        R[classes == c] -= R[classes == c].mean(axis=0)
    ref = _svd_scores(R, 2)
    _same_up_to_sign(Y, ref / ref[:, 0].std() * INIT_STD)
    # the start no longer separates the classes: every class mean sits at the origin
    for c in np.unique(classes):
        assert np.abs(Y[classes == c].mean(axis=0)).max() < 1e-12
    # while plain PCA puts the class means far apart
    plain = initial_embedding(X, 2, "pca")
    assert np.ptp([plain[classes == c, 0].mean() for c in range(4)]) > INIT_STD


def test_prior_explaining_everything_falls_back_to_plain_pca(data):
    X, _ = data
    every_point = np.arange(len(X))
    np.testing.assert_allclose(initial_embedding(X, 2, "pca", classes=every_point),
                               initial_embedding(X, 2, "pca"))

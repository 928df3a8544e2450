import numpy as np
import pytest

from ctsne.metrics import knn_label_homogeneity, laplacian_score, neighborhood_preservation


def _dense_score(Y, labels, k):
    """Eq. 7 as the docstring defines it, with dense matrices (independent of the code)."""
    n = len(Y)
    d2 = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    A = np.zeros((n, n))
    A[np.arange(n)[:, None], np.argsort(d2, axis=1)[:, :k]] = 1.0
    W = (A + A.T) / 2
    deg = W.sum(1)
    L = np.diag(deg) - W
    N = np.diag(deg ** -0.5) @ L @ np.diag(deg ** -0.5)
    score = 0.0
    for lab in np.unique(labels):
        f = (labels == lab).astype(float)
        g = np.sqrt(deg) * f
        score += f.sum() / n * (g @ N @ g) / (g @ g)
    return score


def test_laplacian_score_hand_computed_path():
    # Five points on a line, k = 1 (nearest other point): 0→1, 1→0, 2→1, 3→4, 4→3.
    # W = (A + Aᵀ)/2: w01 = 1, w12 = 1/2, w34 = 1; degrees 1, 1.5, 0.5, 1, 1.
    # Labels a a b b b: the only crossing edge is 1–2 (weight 1/2).
    # vol(a) = 2.5, vol(b) = 2.5, cut = 1/2 → score = 2/5·0.2 + 3/5·0.2 = 0.2.
    Y = np.array([[0.0], [1.0], [2.1], [5.0], [6.0]])
    labels = np.array(["a", "a", "b", "b", "b"])
    assert laplacian_score(Y, labels, k=1) == pytest.approx(0.2)
    assert _dense_score(Y, labels, 1) == pytest.approx(0.2)


def test_laplacian_score_matches_dense_definition(rng):
    Y = rng.normal(size=(120, 2))
    labels = rng.integers(0, 3, 120)
    ks = [1, 4, 15]
    got = laplacian_score(Y, labels, k=ks)
    want = [_dense_score(Y, labels, k) for k in ks]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert isinstance(laplacian_score(Y, labels, k=4), float)


def test_laplacian_score_homogeneous_is_zero(rng):
    Y = np.concatenate([rng.normal(size=(50, 2)) + 100 * c for c in range(4)])
    labels = np.repeat([3, 1, 7, 2], 50)
    np.testing.assert_array_equal(laplacian_score(Y, labels, k=[5, 30, 49]), 0.0)


@pytest.mark.parametrize("p", [[0.5, 0.5], [0.1, 0.3, 0.6], [0.1] * 10])
def test_laplacian_score_random_labels(rng, p):
    Y = rng.normal(size=(4000, 2))
    labels = rng.choice(len(p), size=4000, p=p)
    frac = np.bincount(labels) / len(labels)
    expected = 1 - np.sum(frac ** 2)
    scores = laplacian_score(Y, labels, k=[10, 50])
    np.testing.assert_allclose(scores, expected, atol=0.015)


def test_laplacian_score_orders_embeddings(rng):
    labels = np.repeat([0, 1], 200)
    blurred = rng.normal(size=(400, 2)) + labels[:, None] * 1.0
    separated = rng.normal(size=(400, 2)) + labels[:, None] * 6.0
    assert laplacian_score(separated, labels) < laplacian_score(blurred, labels) < 0.5


def test_laplacian_score_duplicates_and_errors():
    Y = np.zeros((6, 2))
    labels = np.array([0, 0, 0, 1, 1, 1])
    assert 0.0 <= laplacian_score(Y, labels, k=2) <= 1.0
    with pytest.raises(ValueError, match="k must"):
        laplacian_score(Y, labels, k=6)
    with pytest.raises(ValueError, match="labels"):
        laplacian_score(Y, labels[:5])


def test_knn_label_homogeneity_reference_values(rng):
    Y = rng.normal(size=(3000, 2))
    labels = rng.integers(0, 4, 3000)
    assert knn_label_homogeneity(Y, labels, k=10) == pytest.approx(0.25, abs=0.015)
    Y2 = np.concatenate([Y[:1500], Y[1500:] + 50])
    assert knn_label_homogeneity(Y2, np.repeat([0, 1], 1500), k=10) == 1.0


def test_neighborhood_preservation(rng):
    X = rng.normal(size=(300, 5))
    assert neighborhood_preservation(X, X * 3.0 + 1.0, k=10) == 1.0
    # A random embedding keeps about k/(n − 1) of each neighbourhood.
    chance = neighborhood_preservation(X, rng.normal(size=(300, 2)), k=10)
    assert chance == pytest.approx(10 / 299, abs=0.02)
    # Dropping the last three (equal-variance) dimensions keeps a middling share, and the
    # sub-sampled estimate agrees with the full one.
    full = neighborhood_preservation(X, X[:, :2], k=10)
    part = neighborhood_preservation(X, X[:, :2], k=10, n_samples=150)
    assert 0.1 < full < 0.6
    assert part == pytest.approx(full, abs=0.05)

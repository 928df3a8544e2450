"""UMAP's curve φ (ctsne.forces.curve) and its starts (ctsne.optimization.spectral)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import make_blobs
from sklearn.decomposition import PCA
from sklearn.neighbors import NearestNeighbors

from ctsne.affinities.fuzzy import fuzzy_graph
from ctsne.forces.curve import check_curve, fit_curve, phi
from ctsne.optimization import spectral
from ctsne.optimization.spectral import pca_init, spectral_init, spectral_layout

# ---- the curve ---------------------------------------------------------------------------

@pytest.mark.parametrize("spread, min_dist", [(1.0, 0.1), (1.0, 0.5), (2.0, 0.3), (1.0, 0.0)])
def test_fit_curve_matches_umap(spread, min_dist):
    umap_ = pytest.importorskip("umap.umap_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # umap-learn's fit may warn about the covariance
        a_ref, b_ref = umap_.find_ab_params(spread, min_dist)
    a, b = fit_curve(spread, min_dist)
    # measured: within 4e-8 relative
    assert a == pytest.approx(a_ref, rel=1e-4)
    assert b == pytest.approx(b_ref, rel=1e-4)
    # and φ follows the target: 1 up to min_dist, exp(−(d − min_dist)/spread) beyond
    d = np.linspace(0.01, 3 * spread, 200)
    target = np.where(d < min_dist, 1.0, np.exp(-(d - min_dist) / spread))
    assert np.abs(phi(d, a, b) - target).max() < 0.1


def test_fit_curve_defaults_and_units():
    assert fit_curve() == fit_curve(1.0, 0.1)
    # b depends only on min_dist / spread, a scales as spread^(−2b): also far from 1,
    # where umap-learn's fit (started at a = b = 1 in the data's units) fails
    a1, b1 = fit_curve(1.0, 0.1)
    for spread in (1e-3, 1e3):
        a, b = fit_curve(spread, 0.1 * spread)
        assert b == pytest.approx(b1, rel=1e-9)
        assert a == pytest.approx(a1 * spread ** (-2 * b1), rel=1e-8)
    a, b = fit_curve(1.0, 1.0)  # min_dist = spread is allowed
    assert a > 0 and b > 0


@pytest.mark.parametrize("spread, min_dist, match", [
    (1.0, 2.0, "lower min_dist or raise spread"),
    (1.0, -0.1, "min_dist must be ≥ 0"),
    (0.0, 0.0, "spread must be > 0"),
    (-1.0, 0.1, "spread must be > 0"),
    (float("nan"), 0.1, "spread must be a finite"),
    (1.0, float("inf"), "min_dist must be a finite"),
    ("1", 0.1, "spread must be a real number"),
])
def test_check_curve_errors(spread, min_dist, match):
    with pytest.raises(ValueError, match=match):
        check_curve(spread, min_dist)
    with pytest.raises(ValueError, match=match):
        fit_curve(spread, min_dist)


# ---- the spectral start ------------------------------------------------------------------

def knn_graph(X, n_neighbors=15):
    d, i = NearestNeighbors(n_neighbors=n_neighbors).fit(X).kneighbors(X)
    return fuzzy_graph(i[:, 1:], d[:, 1:], n_neighbors)


def normalized_laplacian(G):
    inv = 1.0 / np.sqrt(np.asarray(G.sum(axis=1)).ravel())
    return sp.eye(G.shape[0]) - sp.diags(inv) @ G @ sp.diags(inv), inv


@pytest.fixture(scope="module")
def connected():
    X, _ = make_blobs(1500, 8, centers=3, cluster_std=5.0, random_state=0)
    G = knn_graph(X)
    assert connected_components(G)[0] == 1
    return X, G


@pytest.mark.parametrize("n", [200, 1500])  # dense below DENSE_BELOW, ARPACK above
def test_eigenvectors(n, connected):
    X, G = connected
    if n < G.shape[0]:
        G = knn_graph(X[:n])
        assert connected_components(G)[0] == 1
    assert (n < spectral.DENSE_BELOW) == (n == 200)
    V = spectral_layout(G, 2, random_state=0)
    L, inv_sqrt = normalized_laplacian(G)
    lam = np.linalg.eigvalsh(L.toarray())
    rayleigh = (V * (L @ V)).sum(axis=0)
    residual = np.abs(L @ V - V * rayleigh).max()
    # the 2nd and 3rd smallest eigenvalues (the 1st, 0, is the trivial ∝ √degree)
    np.testing.assert_allclose(rayleigh, lam[1:3], atol=1e-8)
    # measured: 4e-16 dense; 7e-8 from ARPACK (its tolerance, 1e-4, is on the eigenvalues)
    assert residual < (1e-10 if n == 200 else 1e-5)
    np.testing.assert_allclose(np.linalg.norm(V, axis=0), 1.0, rtol=1e-10)
    assert np.abs(V.T @ (1.0 / inv_sqrt)).max() < 1e-6 * np.linalg.norm(1.0 / inv_sqrt)
    np.testing.assert_allclose(V.T @ V, np.eye(2), atol=1e-8)


def test_same_subspace_as_umap(connected):
    umap_spectral = pytest.importorskip("umap.spectral")
    X, G = connected
    V = spectral_layout(G, 2, random_state=0)
    U = umap_spectral.spectral_layout(X, G, 2, np.random.RandomState(0))
    U = U / np.linalg.norm(U, axis=0)
    # the same eigenvectors up to sign: |cosines| 1 on the diagonal, 0 off it (measured
    # within 6e-12)
    np.testing.assert_allclose(np.abs(U.T @ V), np.eye(2), atol=1e-6)


def test_spectral_init_scale_and_determinism(connected):
    _, G = connected
    Y = spectral_init(G, 2, random_state=3)
    assert Y.shape == (G.shape[0], 2) and Y.dtype == np.float64
    assert np.abs(Y).max() == pytest.approx(10.0, abs=1e-3)
    np.testing.assert_array_equal(Y, spectral_init(G, 2, random_state=3))
    # another seed: another start vector and jitter, the same layout up to the jitter
    Y2 = spectral_init(G, 2, random_state=4)
    assert not np.array_equal(Y, Y2)
    assert np.abs(Y - Y2).max() < 1e-2  # measured 5e-4
    # the jitter is N(0, 1e-4²) about the scaled layout
    V = spectral_layout(G, 2, random_state=np.random.default_rng(3))
    jitter = Y - V * (10.0 / np.abs(V).max())
    assert 0.5e-4 < jitter.std() < 2e-4


def separated(Y, labels, min_gap):
    groups = [Y[labels == c] for c in np.unique(labels)]
    for a in range(len(groups)):
        for b in range(a + 1, len(groups)):
            diff = groups[a][:, None, :] - groups[b][None, :, :]
            if np.sqrt((diff ** 2).sum(axis=-1)).min() < min_gap:
                return False
    return True


@pytest.mark.parametrize("n_centers, dim", [(2, 2), (3, 2), (7, 2), (5, 3)])
def test_disconnected_graph(n_centers, dim):
    X, _ = make_blobs(120 * n_centers, 5, centers=n_centers, cluster_std=0.5,
                      center_box=(-200, 200), random_state=1)
    G = knn_graph(X, 10)
    n_groups, labels = connected_components(G)
    assert n_groups == n_centers
    Y = spectral_init(G, dim, random_state=0)
    assert Y.shape == (X.shape[0], dim) and np.all(np.isfinite(Y))
    assert np.abs(Y).max() == pytest.approx(10.0, abs=1e-3)
    # each component inside its own ball: at least 20% of the spacing between centres
    # separates them; after the scaling to ±10 that is ≥ 1 here
    assert separated(Y, labels, 1.0)
    for c in range(n_groups):  # and laid out, not collapsed onto its centre
        assert Y[labels == c].std(axis=0).min() > 0.1
    np.testing.assert_array_equal(Y, spectral_init(G, dim, random_state=0))


def test_tiny_components_and_isolated_points():
    # five components: a 40-point chain, a pair, a triangle and two isolated points
    rows, cols = [], []
    for i in range(39):
        rows.append(i)
        cols.append(i + 1)
    rows += [40, 42, 43, 42]
    cols += [41, 43, 44, 44]
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(47, 47))
    G = (A + A.T).tocsr()
    n_groups, labels = connected_components(G)
    assert n_groups == 5
    Y = spectral_init(G, 2, random_state=0)
    assert np.all(np.isfinite(Y)) and separated(Y, labels, 1.0)
    Y1 = spectral_init(G, 1, random_state=0)  # one dimension: centres on a line
    assert np.all(np.isfinite(Y1)) and separated(Y1, labels, 0.5)


def test_arpack_failure_falls_back_with_a_warning(connected, monkeypatch):
    _, G = connected

    def no_convergence(*args, **kwargs):
        raise spectral.splinalg.ArpackNoConvergence("no", np.empty(0), np.empty((0, 0)))

    monkeypatch.setattr(spectral.splinalg, "eigsh", no_convergence)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        Y = spectral_init(G, 2, random_state=0)
    assert np.all(np.isfinite(Y)) and np.abs(Y).max() == pytest.approx(10.0, abs=1e-3)


def test_invalid_graphs():
    with pytest.raises(ValueError, match="symmetric"):
        spectral_init(sp.csr_matrix(np.array([[0, 1.0], [0, 0]])), 2, 0)
    with pytest.raises(ValueError, match="square"):
        spectral_init(sp.csr_matrix(np.ones((2, 3))), 2, 0)
    with pytest.raises(ValueError, match="sparse"):
        spectral_init(np.ones((2, 2)), 2, 0)


# ---- the PCA start -----------------------------------------------------------------------

def test_pca_init(connected):
    X, _ = connected
    Y = pca_init(X, 2, random_state=0)
    assert Y.shape == (X.shape[0], 2) and np.abs(Y).max() == pytest.approx(10.0, abs=1e-3)
    np.testing.assert_array_equal(Y, pca_init(X, 2, random_state=0))
    ref = PCA(2).fit_transform(X)
    for j in range(2):
        assert abs(np.corrcoef(Y[:, j], ref[:, j])[0, 1]) > 1 - 1e-6
    # fewer features than dimensions: random columns, still scaled
    Y3 = pca_init(X[:, :1], 3, random_state=0)
    assert Y3.shape == (X.shape[0], 3) and np.all(np.isfinite(Y3))
    assert np.abs(Y3).max() == pytest.approx(10.0, abs=1e-3)

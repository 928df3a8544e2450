"""UMAP's fuzzy input graph (ctsne.affinities.fuzzy) against umap-learn and by hand.

umap-learn's lists hold the point itself first (index i, distance 0); ours leave it out.
The reference is given our lists with the point prepended, and distances rounded to
float32 on both sides (umap-learn computes in float32), so the two start from the same
numbers. umap-learn's bisection on σ runs in float32 and stops once the row's sum is
within 1e-5 of log₂(n_neighbors); ours solves to 1e-10, so the two σ agree to about 1e-5
relative (measured ≤ 5e-5 with 5 neighbours) and the graphs to about as much. The
membership and union steps are compared at 1e-6 by giving umap-learn our σ and ρ.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs
from sklearn.neighbors import NearestNeighbors

from ctsne.affinities import fuzzy
from ctsne.affinities.fuzzy import fuzzy_graph, fuzzy_union, membership_strengths, smooth_knn


@pytest.fixture(scope="module")
def umap_():
    """umap-learn's module: the reference (the tests that need it skip without it)."""
    return pytest.importorskip("umap.umap_")

N = 600


@pytest.fixture(scope="module")
def blobs():
    X, _ = make_blobs(N, 10, centers=5, random_state=0)
    # a few exact duplicates: zero distances inside the lists
    X[1] = X[0]
    X[2] = X[0]
    X[11] = X[10]
    return X


def exact_lists(X, n_neighbors):
    """Our lists (self left out) and umap-learn's (self first), float32-rounded distances."""
    n = X.shape[0]
    d, i = NearestNeighbors(n_neighbors=n_neighbors + 2).fit(X).kneighbors(X)
    d = d.astype(np.float32).astype(np.float64)
    idx = np.empty((n, n_neighbors - 1), dtype=np.int64)
    dist = np.empty((n, n_neighbors - 1))
    for r in range(n):  # with duplicates the point need not come first: drop it by index
        keep = i[r] != r
        idx[r] = i[r][keep][:n_neighbors - 1]
        dist[r] = d[r][keep][:n_neighbors - 1]
    ref_idx = np.hstack([np.arange(n)[:, None], idx])
    ref_dist = np.hstack([np.zeros((n, 1)), dist])
    return idx, dist, ref_idx, ref_dist


def reference(umap_, X, n_neighbors, ref_idx, ref_dist, mix, lc):
    G, sigmas, rhos = umap_.fuzzy_simplicial_set(
        X, n_neighbors, np.random.RandomState(0), "euclidean", knn_indices=ref_idx,
        knn_dists=ref_dist, set_op_mix_ratio=mix, local_connectivity=lc)
    return G.tocsr().astype(np.float64), sigmas, rhos


def row_sums(dist, sigmas, rhos):
    return np.exp(-np.maximum(dist - rhos[:, None], 0.0) / sigmas[:, None]).sum(axis=1)


def assert_canonical(G, n):
    assert isinstance(G, sp.csr_matrix) and G.dtype == np.float64 and G.shape == (n, n)
    assert G.has_canonical_format and G.has_sorted_indices
    assert np.all(G.data > 0) and np.all(G.data <= 1.0)
    assert np.all(G.diagonal() == 0)
    assert (G != G.T).nnz == 0  # exactly symmetric


@pytest.mark.parametrize("n_neighbors", [15, 5])
@pytest.mark.parametrize("lc", [1.0, 2.0])
@pytest.mark.parametrize("mix", [1.0, 0.5])
def test_matches_umap(umap_, blobs, n_neighbors, lc, mix):
    idx, dist, ref_idx, ref_dist = exact_lists(blobs, n_neighbors)
    G_ref, s_ref, r_ref = reference(umap_, blobs, n_neighbors, ref_idx, ref_dist, mix, lc)
    sigmas, rhos = smooth_knn(dist, n_neighbors, lc)
    G = fuzzy_graph(idx, dist, n_neighbors, mix, lc)
    assert_canonical(G, N)

    # ρ: the same float32 inputs, the same rule (measured: equal)
    np.testing.assert_allclose(rhos, r_ref, rtol=0, atol=1e-6)
    # σ: ours solves the equation, umap-learn's is within its own tolerance of it
    target = np.log2(n_neighbors)
    bound = fuzzy.MIN_SIGMA_SCALE * dist.sum(axis=1) / n_neighbors
    solved = sigmas > bound * (1 + 1e-12)  # rows not held by the lower bound
    assert solved.mean() > 0.9
    np.testing.assert_allclose(row_sums(dist, sigmas, rhos)[solved], target, rtol=0, atol=1e-9)
    np.testing.assert_allclose(row_sums(dist, s_ref, r_ref)[solved], target, rtol=0, atol=2e-5)
    np.testing.assert_allclose(sigmas, s_ref, rtol=1e-4)
    # the graph: the same pattern up to entries umap-learn's float32 rounds to 0
    diff = abs(G - G_ref)
    assert diff.max() < 5e-5
    only_ours = G - G.multiply(G_ref != 0)
    assert only_ours.nnz == 0 or only_ours.data.max() < 1e-12
    assert (G_ref - G_ref.multiply(G != 0)).nnz == 0


@pytest.mark.parametrize("lc", [1.0, 2.0])
@pytest.mark.parametrize("mix", [1.0, 0.5])
def test_membership_and_union_match_umap(umap_, blobs, monkeypatch, lc, mix):
    """Given the same σ and ρ, umap-learn's memberships and set operations give our graph."""
    n_neighbors = 15
    idx, dist, ref_idx, ref_dist = exact_lists(blobs, n_neighbors)
    sigmas, rhos = smooth_knn(dist, n_neighbors, lc)
    monkeypatch.setattr(umap_, "smooth_knn_dist", lambda *a, **k: (
        sigmas.astype(np.float32), rhos.astype(np.float32)))
    G_ref, _, _ = reference(umap_, blobs, n_neighbors, ref_idx, ref_dist, mix, lc)
    G = fuzzy_graph(idx, dist, n_neighbors, mix, lc)
    assert abs(G - G_ref).max() < 1e-6
    only_ours = G - G.multiply(G_ref != 0)
    assert only_ours.nnz == 0 or only_ours.data.max() < 1e-12


def test_hand_computed():
    # points on a line at 0, 1, 3, 7 with 2 neighbours each (n_neighbors = 3): every row's
    # nearest gets 1 and its second c = log₂3 − 1, so that the row sums to log₂3
    x = np.array([0.0, 1.0, 3.0, 7.0])
    idx = np.array([[1, 2], [0, 2], [1, 0], [2, 1]])
    dist = np.abs(x[:, None] - x[idx])
    c = np.log2(3.0) - 1.0
    sigmas, rhos = smooth_knn(dist, 3)
    np.testing.assert_allclose(rhos, [1, 1, 2, 4])
    np.testing.assert_allclose(sigmas, np.array([2, 1, 1, 2]) / -np.log(c), rtol=1e-9)
    np.testing.assert_allclose(membership_strengths(idx, dist, sigmas, rhos),
                               [[1, c], [1, c], [1, c], [1, c]], rtol=1e-9)
    union = np.array([[0, 1, 2 * c - c * c, 0],
                      [1, 0, 1, c],
                      [2 * c - c * c, 1, 0, 1],
                      [0, c, 1, 0]])
    G = fuzzy_graph(idx, dist, 3)
    assert_canonical(G, 4)
    np.testing.assert_allclose(G.toarray(), union, rtol=1e-9, atol=0)
    # half union, half intersection A∘Aᵀ
    inter = np.zeros((4, 4))
    inter[0, 1] = inter[1, 0] = 1.0
    inter[0, 2] = inter[2, 0] = c * c
    inter[1, 2] = inter[2, 1] = c
    np.testing.assert_allclose(fuzzy_graph(idx, dist, 3, 0.5).toarray(),
                               0.5 * union + 0.5 * inter, rtol=1e-9, atol=0)
    # the pure intersection drops the one-sided edges 1–3 and 2–3
    G0 = fuzzy_graph(idx, dist, 3, 0.0)
    assert_canonical(G0, 4)
    np.testing.assert_allclose(G0.toarray(), inter, rtol=1e-9, atol=0)


def test_fractional_local_connectivity_interpolates():
    dist = np.array([[1.0, 2.0, 4.0, 8.0]])
    assert smooth_knn(dist, 5, 1.5)[1][0] == pytest.approx(1.5)
    assert smooth_knn(dist, 5, 0.5)[1][0] == pytest.approx(0.5)
    assert smooth_knn(dist, 5, 0.0)[1][0] == 0.0
    assert smooth_knn(dist, 5, 9.0)[1][0] == 8.0  # fewer neighbours: the farthest


def test_ties_and_duplicates_give_no_nan():
    rng = np.random.default_rng(0)
    dist = np.sort(rng.random((6, 5)), axis=1)
    dist[0] = 0.0          # all neighbours are duplicates: ρ = 0, the table's bound
    dist[1, :3] = 0.0      # some duplicates
    dist[2] = 0.7          # all tied: the sum does not depend on σ
    idx = (np.arange(6)[:, None] + np.arange(1, 6)[None, :]) % 6
    sigmas, rhos = smooth_knn(dist, 6)
    assert np.all(np.isfinite(sigmas)) and np.all(sigmas > 0)
    assert rhos[0] == 0 and rhos[2] == 0.7
    assert sigmas[0] == pytest.approx(fuzzy.MIN_SIGMA_SCALE * dist.sum() / (dist.size + 6))
    w = membership_strengths(idx, dist, sigmas, rhos)
    assert np.all(np.isfinite(w)) and np.all(w[[0, 2]] == 1.0) and np.all(w[1, :4] == 1.0)
    G = fuzzy_graph(idx, dist, 6)
    assert np.all(np.isfinite(G.data))
    assert_canonical(G, 6)
    # the whole table at distance 0 (n identical points)
    zeros = np.zeros((6, 5))
    sigmas, rhos = smooth_knn(zeros, 6)
    assert np.all(sigmas == 1.0) and np.all(rhos == 0.0)
    G = fuzzy_graph(idx, zeros, 6)
    assert np.all(G.data == 1.0) and G.nnz == 30


def test_missing_entries_are_ignored():
    rng = np.random.default_rng(1)
    n, k = 50, 6
    dist = np.sort(rng.random((n, k)) + 0.1, axis=1)
    idx = (np.arange(n)[:, None] + np.arange(1, k + 1)[None, :]) % n
    idx_m, dist_m = idx.copy(), dist.copy()
    idx_m[:, -1], dist_m[:, -1] = -1, np.inf
    s_m, r_m = smooth_knn(dist_m, k + 1)
    s, r = smooth_knn(dist[:, :-1], k + 1)
    np.testing.assert_array_equal(r_m, r)
    np.testing.assert_allclose(s_m, s, rtol=1e-12)
    G_m = fuzzy_graph(idx_m, dist_m, k + 1)
    G = fuzzy_graph(idx[:, :-1], dist[:, :-1], k + 1)
    assert abs(G_m - G).max() < 1e-12 and G_m.nnz == G.nnz


def test_row_order_and_units_do_not_matter(blobs):
    idx, dist, _, _ = exact_lists(blobs, 15)
    perm = np.random.default_rng(2).permuted(np.tile(np.arange(14), (N, 1)), axis=1)
    rows = np.arange(N)[:, None]
    G = fuzzy_graph(idx, dist, 15, local_connectivity=1.5)
    G_perm = fuzzy_graph(idx[rows, perm], dist[rows, perm], 15, local_connectivity=1.5)
    assert abs(G - G_perm).max() < 1e-12
    # far from umap-learn's start at σ = 1: the same graph in other units
    s1, r1 = smooth_knn(dist, 15)
    G1 = fuzzy_graph(idx, dist, 15)
    for scale in (1e-9, 1e9):
        s, r = smooth_knn(dist * scale, 15)
        np.testing.assert_allclose(r, r1 * scale, rtol=1e-12)
        np.testing.assert_allclose(s, s1 * scale, rtol=1e-8)
        assert abs(fuzzy_graph(idx, dist * scale, 15) - G1).max() < 1e-8


def test_kernel_in_parts_agrees_with_one_part(blobs):
    _, dist, _, _ = exact_lists(blobs, 15)
    out = []
    for bounds in ([0, N], [0, N // 3, N // 2, N]):  # one part, and three as threads
        sigmas, rhos = np.empty(N), np.empty(N)
        fuzzy._smooth_kernel(dist, np.log2(15), 1.0, float(dist.mean()), fuzzy.SMOOTH_TOL,
                             fuzzy.SMOOTH_MAX_ITER, sigmas, rhos, bounds=bounds)
        out.append((sigmas, rhos))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_fuzzy_union_of_a_directed_matrix():
    A = sp.csr_matrix(np.array([[0, 0.5, 0], [0.25, 0, 1.0], [0, 0, 0]]))
    G = fuzzy_union(A)
    np.testing.assert_allclose(G.toarray(), [[0, 0.625, 0], [0.625, 0, 1], [0, 1, 0]])
    assert_canonical(G, 3)


def test_invalid_input():
    dist = np.ones((3, 2))
    idx = np.array([[1, 2], [0, 2], [0, 1]])
    with pytest.raises(ValueError, match="n_neighbors"):
        smooth_knn(dist, 1)
    with pytest.raises(ValueError, match="local_connectivity"):
        smooth_knn(dist, 3, -1.0)
    with pytest.raises(ValueError, match="non-negative"):
        smooth_knn(-dist, 3)
    with pytest.raises(ValueError, match="same"):
        fuzzy_graph(idx[:, :1], dist, 3)
    with pytest.raises(ValueError, match="set_op_mix_ratio"):
        fuzzy_graph(idx, dist, 3, set_op_mix_ratio=1.5)

"""Perplexity calibration and the joint affinities P."""

import numpy as np
import pytest

from ctsne.affinities.calibration import calibrate
from ctsne.affinities.standard import joint_affinities
from ctsne.neighbors.search import nearest_neighbors


def test_calibration_reaches_the_perplexity(rng):
    X = rng.normal(size=(300, 5))
    idx, dist = nearest_neighbors(X, 90, method="exact")
    P = calibrate(dist, 30.0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    H = -np.sum(np.where(P > 0, P * np.log(P), 0.0), axis=1)
    np.testing.assert_allclose(np.exp(H), 30.0, rtol=1e-5)


def test_exact_neighbours_match_brute_force(rng):
    X = rng.normal(size=(120, 4))
    idx, dist = nearest_neighbors(X, 7, method="exact")
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    np.testing.assert_allclose(dist, np.sort(D, axis=1)[:, :7], rtol=1e-10)


def test_exact_neighbours_in_the_trees_order_land_in_their_rows(rng, monkeypatch):
    # the queries run in the k-d tree's order, chunk by chunk; each answer must come back
    # to its own row, with the point itself left out
    from ctsne.neighbors import search

    monkeypatch.setattr(search, "QUERY_CHUNK", 37)
    X = rng.normal(size=(500, 3))
    idx, dist = nearest_neighbors(X, 9, method="exact")
    assert not np.array_equal(search.ExactIndex(X).order, np.arange(500))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    np.testing.assert_array_equal(idx, np.argsort(D, axis=1)[:, :9])
    np.testing.assert_allclose(dist, np.sort(D, axis=1)[:, :9], rtol=1e-12)


def test_joint_affinities_symmetric_normalised(rng):
    X = rng.normal(size=(200, 3))
    P = joint_affinities(X, perplexity=10)
    assert P.shape == (200, 200)
    assert abs(P.sum() - 1.0) < 1e-12
    assert abs(P - P.T).max() < 1e-15
    assert P.diagonal().max() == 0


def test_duplicates_do_not_break_affinities(rng):
    X = np.repeat(rng.normal(size=(20, 3)), 10, axis=0)  # every point ten times
    X = np.vstack([X, np.zeros((40, 3))])  # and a block of 40 identical points
    P = joint_affinities(X, perplexity=5)
    assert np.all(np.isfinite(P.data)) and abs(P.sum() - 1) < 1e-12
    assert P.diagonal().max() == 0


def test_approximate_neighbours_have_high_recall(rng):
    X = rng.normal(size=(2000, 10))
    exact, _ = nearest_neighbors(X, 15, method="exact")
    approx, _ = nearest_neighbors(X, 15, method="approx", random_state=0)
    recall = np.mean([len(set(a) & set(e)) / 15 for a, e in zip(approx, exact, strict=True)])
    assert recall > 0.9
    assert not np.any(approx == np.arange(2000)[:, None])


def test_low_dimensional_approximate_search_keeps_its_recall(rng, monkeypatch):
    """Few features: pynndescent with LOW_DIM_DESCENT's few trees and rounds still finds
    nearly every exact neighbour (k = 90, as a fit at perplexity 30 asks); wider data
    keeps pynndescent's defaults."""
    import pynndescent

    from ctsne.neighbors import search

    X = rng.normal(size=(20_000, 10))
    exact, _ = nearest_neighbors(X, 90, method="exact")
    approx, _ = nearest_neighbors(X, 90, method="approx", random_state=0)
    recall = np.mean([len(set(a) & set(e)) / 90 for a, e in zip(approx, exact, strict=True)])
    assert recall > 0.999
    seen = []
    real = pynndescent.NNDescent

    def spy(data, **kwargs):
        seen.append({k: kwargs.get(k) for k in search.LOW_DIM_DESCENT})
        return real(data, **kwargs)

    monkeypatch.setattr(pynndescent, "NNDescent", spy)
    for p in (search.TREE_DIMS, search.TREE_DIMS + 1):
        nearest_neighbors(rng.normal(size=(300, p)), 5, method="approx", random_state=0)
    assert seen == [search.LOW_DIM_DESCENT, dict.fromkeys(search.LOW_DIM_DESCENT)]


@pytest.mark.parametrize("perplexity", [1.5, 50.0])
def test_extreme_perplexities(perplexity, rng):
    X = rng.normal(size=(160, 2))
    P = joint_affinities(X, perplexity=perplexity)
    assert abs(P.sum() - 1) < 1e-12


def _reference_symmetric(idx, cond):
    """(C + Cᵀ)/2n by scipy's own sparse arithmetic."""
    import scipy.sparse as sp

    n, k = idx.shape
    C = sp.csr_matrix((cond.ravel(), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))
    return ((C + C.T) / (2.0 * n)).toarray()


@pytest.mark.parametrize("n,k,zeros", [(50, 7, 0.05), (400, 30, 0.05), (400, 30, 0.45)])
def test_symmetrize_matches_scipy(n, k, zeros, rng):
    """0.45: about as many zero slots as a balanced P's trimmed tails leave."""
    from ctsne.affinities.symmetry import symmetrize

    X = rng.normal(size=(n, 3))
    idx, dist = nearest_neighbors(X, k, method="exact")
    cond = calibrate(dist, k / 3)
    cond[rng.random(cond.shape) < zeros] = 0.0  # zero entries are left out
    cond[3] = 0.0  # a row with no entry of its own (its mirrors still reach it)
    ref = _reference_symmetric(idx, cond)
    idx_in, cond_in = idx.copy(), cond.copy()
    P = symmetrize(idx_in, cond_in)
    np.testing.assert_allclose(P.toarray(), ref, rtol=1e-14, atol=0)
    # reordered in place: each row's positive entries by column, then its zeros at n
    for i in range(n):
        m = np.count_nonzero(cond[i])
        assert np.all(np.diff(idx_in[i, :m]) > 0) and np.all(cond_in[i, :m] > 0)
        assert np.all(idx_in[i, m:] == n) and np.all(cond_in[i, m:] == 0)
        assert sorted(zip(idx_in[i, :m], cond_in[i, :m], strict=True)) == sorted(
            (a, b) for a, b in zip(idx[i], cond[i], strict=True) if b > 0)
    assert P.nnz == np.count_nonzero(ref)
    assert P.indices.dtype == np.int32 and P.indptr.dtype == np.int32
    assert all(np.all(np.diff(P.indices[P.indptr[i]:P.indptr[i + 1]]) > 0) for i in range(n))


@pytest.mark.parametrize("n, k", [(300, 20), (2500, 90)])
def test_symmetrize_with_empty_slots_and_blocks_matches_scipy(n, k, rng):
    """Rows as the label-balanced P gives them: blocks from several searches, empty slots
    (the point itself, weight 0) at the end of some blocks, one-way and mutual entries;
    the larger case runs the parallel passes (n·k above their threshold)."""
    from ctsne.affinities.calibration import PARALLEL_FROM_ENTRIES
    from ctsne.affinities.symmetry import symmetrize

    codes = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3)) + 4.0 * codes[:, None]
    idx, dist = nearest_neighbors(X, k // 2, method="exact")
    # a second block: random points of other classes, some rows with empty slots
    other = np.stack([rng.choice(np.setdiff1d(np.flatnonzero(codes != codes[i]), idx[i]),
                                 k - k // 2, replace=False) for i in range(n)])
    idx = np.hstack([idx, other]).astype(np.int32)
    cond = rng.random((n, k))
    empty = rng.random(n) < 0.2
    idx[empty, -3:] = np.flatnonzero(empty)[:, None]
    cond[empty, -3:] = 0.0
    cond[rng.random(cond.shape) < 0.05] = 0.0
    assert (n * k >= PARALLEL_FROM_ENTRIES) == (n > 1000)  # the parallel twins run at 2500
    ref = _reference_symmetric(idx, cond)
    P = symmetrize(idx.copy(), cond.copy())
    np.testing.assert_allclose(P.toarray(), ref, rtol=1e-14, atol=0)
    assert P.nnz == np.count_nonzero(ref)
    assert np.all(P.data > 0)
    assert all(np.all(np.diff(P.indices[P.indptr[i]:P.indptr[i + 1]]) > 0) for i in range(n))
    # mutual pairs are summed, one-way ones kept: entry by entry against a hand count
    i, a = np.argwhere(cond > 0)[0]
    j = idx[i, a]
    back = cond[j][idx[j] == i].sum()
    assert P[i, j] == pytest.approx((cond[i, a] + back) / (2 * n), rel=1e-14)


def test_neighbours_are_compact(rng):
    X = rng.normal(size=(300, 4))
    idx, dist = nearest_neighbors(X, 10, method="exact")
    assert idx.dtype == np.int32 and idx.flags.c_contiguous and dist.flags.c_contiguous
    assert not np.any(idx == np.arange(300)[:, None])


def test_empty_approximate_slots_fall_back_to_exact(rng, monkeypatch):
    """pynndescent marks neighbours it could not find with −1; they must not reach P."""
    import pynndescent

    class Incomplete:
        def __init__(self, X, n_neighbors, **kwargs):
            n = len(X)
            idx = np.tile(np.arange(n_neighbors), (n, 1))
            idx[:, -1] = -1
            self.neighbor_graph = idx, np.ones((n, n_neighbors), dtype=np.float32)

    monkeypatch.setattr(pynndescent, "NNDescent", Incomplete)
    X = rng.normal(size=(60, 3))
    with pytest.warns(RuntimeWarning, match="exact search"):
        idx, dist = nearest_neighbors(X, 5, method="approx")
    exact_idx, exact_dist = nearest_neighbors(X, 5, method="exact")
    np.testing.assert_array_equal(idx, exact_idx)
    np.testing.assert_allclose(dist, exact_dist)

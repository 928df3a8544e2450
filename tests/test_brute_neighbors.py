"""The brute-force scan for far queries against a dense distance matrix and the tree."""

import numpy as np
import pytest

from ctsne.neighbors.brute import brute_knn
from ctsne.neighbors.by_class import other_class_neighbors


def _dense(Y, Q, k):
    D = np.sqrt(((Q[:, None, :] - Y[None, :, :]) ** 2).sum(axis=2))
    order = np.argsort(D, axis=1, kind="stable")[:, :k]  # ties in row order
    return order, np.take_along_axis(D, order, axis=1)


@pytest.mark.parametrize("m, nq, k", [(37, 20, 37), (600, 150, 9), (700, 2100, 23)])
def test_scan_matches_dense_distances_ties_included(m, nq, k, rng):
    # small integer coordinates: exact distances with many exact ties; 600+ points span
    # several tiles, and 2,100 × 700 pairs take the parallel variant
    Y = rng.integers(0, 4, size=(m, 3)).astype(float)
    Q = rng.integers(0, 4, size=(nq, 3)).astype(float) + 30.0
    idx, dist = brute_knn(Y, Q, k)
    ref_idx, ref_dist = _dense(Y, Q, k)
    np.testing.assert_array_equal(dist, ref_dist)
    np.testing.assert_array_equal(idx, ref_idx)


def test_scan_gives_the_tree_search_bit_for_bit(rng):
    codes = np.repeat(np.arange(3), [300, 200, 120])
    X = rng.normal(size=(len(codes), 6)) + 25.0 * rng.normal(size=(3, 6))[codes]
    scan_idx, scan_dist = other_class_neighbors(X, codes, 12, method="exact")
    tree_idx, tree_dist = other_class_neighbors(X, codes, 12, method="exact", far_search="tree")
    # the same neighbours (continuous data: no ties), at the same distances up to the last
    # bits: the two searches' sums are compiled apart (numba, scikit-learn's C), and a
    # compiler may fuse a multiply-add on one CPU and not on another
    np.testing.assert_array_equal(scan_idx, tree_idx)
    np.testing.assert_allclose(scan_dist, tree_dist, rtol=8 * np.finfo(float).eps, atol=0)


def test_far_queries_beyond_the_scan_size_keep_the_tolerance(monkeypatch):
    # Above SCAN_MAX_PAIRS the far queries use a k-d tree with relative tolerance eps:
    # the j-th distance returned is at most (1 + eps) times the true j-th nearest one.
    from ctsne.neighbors import by_class as ln

    rng = np.random.default_rng(3)
    T = rng.normal(size=(3000, 6))
    Q = rng.normal(size=(500, 6)) + 6.0  # far from the indexed points
    X = np.vstack([T, Q])
    monkeypatch.setattr(ln, "SCAN_MAX_PAIRS", 0)
    idx, dist = ln.SearchIndex(X, np.arange(3000), far=True).query(Q, 15)
    D = np.sqrt(((Q[:, None, :] - T[None, :, :]) ** 2).sum(-1))
    true = np.sort(D, axis=1)[:, :15]
    np.testing.assert_allclose(dist, np.take_along_axis(D, idx, axis=1), rtol=1e-12)
    assert np.all(dist <= (1 + ln.FAR_EPS) * true + 1e-12)
    # far queries see the class at nearly equal distances: the tolerance may swap
    # neighbours (recall here about 0.6) but hardly changes how far they are
    assert np.median(dist[:, -1] / true[:, -1]) < 1.02


def test_brute_within_classes_lists_each_points_own_class_neighbours(rng):
    from ctsne.neighbors.brute import brute_within_classes

    # integer points: exact distances in any order, many ties (broken by point number);
    # classes of 1 to ~60 points, some smaller than k + 1
    codes = rng.integers(0, 80, 2500)
    X = rng.integers(-2, 3, size=(2500, 9)).astype(float)
    k = 25
    idx = np.full((2500, k), -7)
    dist = np.full((2500, k), -7.0)
    asked = np.flatnonzero(codes < 60)
    brute_within_classes(X, codes, asked, k, idx, dist)
    for c in range(60):
        rows = np.flatnonzero(codes == c)
        d2 = ((X[rows, None, :] - X[None, rows, :]) ** 2).sum(-1)
        np.fill_diagonal(d2, np.inf)
        kc = min(k, len(rows) - 1)
        order = np.argsort(d2, axis=1, kind="stable")[:, :kc]
        np.testing.assert_array_equal(idx[rows, :kc], rows[order])
        np.testing.assert_array_equal(dist[rows, :kc], np.sqrt(np.take_along_axis(d2, order, 1)))
        assert np.all(idx[rows, kc:] == rows[:, None]) and np.all(np.isinf(dist[rows, kc:]))
    assert np.all(idx[codes >= 60] == -7)  # rows not asked are left alone

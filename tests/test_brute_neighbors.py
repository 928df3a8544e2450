"""The brute-force scan for far queries against a dense distance matrix and the tree."""

import numpy as np
import pytest

from ctsne import label_neighbors
from ctsne.brute_neighbors import brute_knn
from ctsne.label_neighbors import other_class_neighbors


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


def test_scan_gives_the_tree_search_bit_for_bit(rng, monkeypatch):
    codes = np.repeat(np.arange(3), [300, 200, 120])
    X = rng.normal(size=(len(codes), 6)) + 25.0 * rng.normal(size=(3, 6))[codes]
    scan_idx, scan_dist = other_class_neighbors(X, codes, 12, method="exact")
    monkeypatch.setattr(label_neighbors, "SCAN_FAR", False)
    tree_idx, tree_dist = other_class_neighbors(X, codes, 12, method="exact")
    np.testing.assert_array_equal(scan_dist, tree_dist)  # continuous data: no ties
    np.testing.assert_array_equal(scan_idx, tree_idx)

"""Degenerate data: scale, constant data, duplicates (ctsne.checks and its callers)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from ctsne import ConditionalTSNE
from ctsne.affinities.calibration import calibrate
from ctsne.affinities.standard import joint_affinities
from ctsne.checks import tied_nearest, warn_ties
from ctsne.metrics import knn_label_homogeneity
from ctsne.neighbors.search import nearest_neighbors
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


def _duplicate_warnings(X, perplexity=10, **kw):
    return [t for t in _data_warnings(X, perplexity, **kw) if "exact duplicate" in t]


def _data_warnings(X, perplexity=10, **kw):
    """The warnings about duplicates and ties that building P gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        joint_affinities(X, perplexity, **kw)
    return [str(w.message) for w in caught
            if "exact duplicate" in str(w.message) or "same distance" in str(w.message)]


def test_close_distinct_points_are_not_duplicates():
    # issue 21 item 8: scikit-learn's brute-force search expands |x − y|², so points
    # 1e-4 apart at magnitude 1e4 come out at distance 0; none of them is a duplicate
    X = 1e4 + np.random.default_rng(0).random((500, 20)) * 1e-3
    assert len(np.unique(X, axis=0)) == 500
    assert _duplicate_warnings(X) == []


def test_copies_are_counted_exactly():
    # the same expansion puts a copy at ~4e-8, not 0: copies are found by comparing rows
    X = np.random.default_rng(0).random((500, 20))
    X[250:260] = X[:10]
    found = _duplicate_warnings(X)
    assert len(found) == 1 and found[0].startswith("20 of 500 points"), found


def test_float32_distances_do_not_make_duplicates():
    # the approximate search computes in float32: 200k distinct values (and 50 constant
    # columns) gave "574 of 200000 points have an exact duplicate"; here values 1e-11
    # apart, which float32 cannot tell apart
    from ctsne.checks import exact_duplicates, warn_ties

    n = 600
    X = np.hstack([1.0 + 1e-11 * np.random.default_rng(1).permutation(n)[:, None],
                   np.zeros((n, 50))])
    idx, _ = nearest_neighbors(X, 30, method="exact")
    X32 = X.astype(np.float32)
    dist32 = np.linalg.norm(X32[:, None, :] - X32[idx], axis=2)
    assert np.all(dist32 == 0)  # what the float32 search reports
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_ties(dist32.astype(np.float64), 10, X, idx)
    assert not any("exact duplicate" in str(w.message) for w in caught)
    assert exact_duplicates(X, idx, dist32).sum() == 0
    X[5] = X[7]  # one copy: both points have one
    idx, _ = nearest_neighbors(X, 30, method="exact")
    assert np.flatnonzero(exact_duplicates(X, idx, np.zeros(idx.shape))).tolist() == [5, 7]


def test_approximate_search_reports_no_false_duplicates():
    # the path of the report: pynndescent's float32 distances of distinct close values
    n = 3000
    v = 1.0 + 1e-8 * np.random.default_rng(2).permutation(n)
    X = np.hstack([v[:, None], np.zeros((n, 50))])
    # nor false ties (the float32 distances of the groups of close values are all 0)
    assert _data_warnings(X, neighbors="approx", random_state=0) == []


def _float32_distances(X, idx):
    """The neighbours' distances as the approximate search computes them (float32)."""
    X32 = X.astype(np.float32)
    return np.linalg.norm(X32[:, None, :] - X32[idx], axis=2).astype(np.float64)


def _tie_warnings(dist, perplexity, X, idx):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_ties(dist, perplexity, X, idx)
    return [str(w.message) for w in caught if "same distance" in str(w.message)]


def test_float32_distances_do_not_make_ties():
    # a large offset: float32 keeps ~2 levels of each coordinate, so many distinct
    # neighbours come out at one distance; "915 points have more than perplexity=10
    # nearest neighbours at the same distance (... deduplicate the data)" before
    X = 1e4 + 1e-3 * np.random.default_rng(0).normal(size=(3000, 3))
    idx, dist = nearest_neighbors(X, 30, method="exact")
    dist32 = _float32_distances(X, idx)
    assert np.count_nonzero(dist32 == dist32[:, :1], axis=1).max() > 10  # the trap
    assert np.count_nonzero(dist == dist[:, :1], axis=1).max() == 1  # float64: none
    assert _tie_warnings(dist32, 10, X, idx) == []
    assert not tied_nearest(dist32, 10, X, idx).any()
    assert tied_nearest(dist32, 10).sum() > 100  # the search's distances alone


def test_genuine_ties_are_still_named():
    # a square grid: each inner point has 4 neighbours at distance 1 (exact in float32
    # and float64), more than perplexity 3; corners have 2, edges 3
    g = np.arange(12, dtype=float)
    X = np.array([(a, b) for a in g for b in g]) + 1e4  # an offset float32 still holds
    idx, _ = nearest_neighbors(X, 9, method="exact")
    short = tied_nearest(_float32_distances(X, idx), 3, X, idx)
    inner = np.all((X > 1e4) & (X < 1e4 + 11), axis=1)
    assert np.array_equal(short, inner)
    found = _tie_warnings(_float32_distances(X, idx), 3, X, idx)
    assert len(found) == 1 and found[0].startswith(f"{inner.sum()} points have more than "
                                                   "perplexity=3"), found


@pytest.mark.parametrize("name", ["ConditionalTSNE", "ConditionalUMAP", "ConditionalLargeVis"])
def test_every_estimator_names_a_row_far_outside_the_others(name):
    import ctsne

    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    X[7, 1] = 1e300
    kw = ({"n_iter": 10, "early_exaggeration_iter": 10} if name == "ConditionalTSNE"
          else {"n_epochs": 5})
    with pytest.warns(UserWarning, match=r"row 7 lies far outside the other rows of X") as rec:
        getattr(ctsne, name)(random_state=0, **kw).fit(X)
    far = [w for w in rec if "far outside" in str(w.message)]
    assert far[0].filename == __file__  # pointed at the user's call
    X[7, 1] = 3.0  # an ordinary row: no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        getattr(ctsne, name)(random_state=0, **kw).fit(X)

import numpy as np
import pytest

from ctsne.ranking import rank_features, selection_mask


def _planted(rng, n=400):
    X = rng.normal(size=(n, 6))
    sel = rng.random(n) < 0.3
    X[sel, 3] += 2.5          # the planted feature: larger in the selection
    X[:, 5] *= 100.0          # a large-scale nuisance feature must not win by scale alone
    return X, sel


def test_planted_feature_ranked_first(rng):
    X, sel = _planted(rng)
    names = [f"f{j}" for j in range(6)]
    res = rank_features(X, sel, feature_names=names)
    assert res.top == "f3"
    assert res.order[0] == 3
    assert res.weights[0] > 0
    # measured 3.26 against at most 0.26: by a wide margin, not by rounding
    assert np.abs(res.weights[0]) > 5 * np.abs(res.weights[1:]).max()
    # Standardised mean difference agrees with a direct computation.
    want = (X[sel, 3].mean() - X[~sel, 3].mean()) / X[:, 3].std()
    assert res.mean_difference[0] == pytest.approx(want)
    assert res.auc > 0.85
    assert (res.n_selected, res.n_total) == (sel.sum(), len(sel))


def test_negative_sign_and_selection_forms(rng):
    X, sel = _planted(rng)
    X[:, 3] *= -1
    by_mask = rank_features(X, sel)
    by_index = rank_features(X, np.flatnonzero(sel))
    ids = np.where(sel, "chosen", "other")
    by_cluster = rank_features(X, ids, cluster="chosen")
    for res in (by_mask, by_index, by_cluster):
        assert res.top == "x3" and res.weights[0] < 0
    np.testing.assert_allclose(by_index.weights, by_mask.weights)
    np.testing.assert_allclose(by_cluster.weights, by_mask.weights)


def test_unexplained_selection_has_chance_auc(rng):
    X = rng.normal(size=(600, 4))
    res = rank_features(X, rng.random(600) < 0.5)
    assert abs(res.auc - 0.5) < 0.1


def test_output_forms(rng):
    X, sel = _planted(rng, 200)
    res = rank_features(X, sel, feature_names=list("abcdef"), cv=0)
    assert np.isnan(res.auc)
    text = str(res)
    assert "rank" in text and text.splitlines()[2].split()[1] == "d"
    pd = pytest.importorskip("pandas")
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["feature"]) == res.feature_names


def test_selection_errors():
    with pytest.raises(ValueError, match="repeated"):
        selection_mask(np.array([0, 1, 1]), 5)
    with pytest.raises(ValueError, match="no point"):
        selection_mask(np.zeros(5, int), 5, cluster=3)
    with pytest.raises(ValueError, match="some but not all"):
        rank_features(np.ones((5, 2)), np.ones(5, bool))

"""The exaggeration of the phase after early exaggeration (the attraction-repulsion
spectrum): the same as continuing with optimize(), and tighter clusters above 1."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from ctsne import ConditionalTSNE

FAST = dict(early_exaggeration_iter=100, random_state=0, n_jobs=1, method="bh")


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(400, n_features=6, centers=4, cluster_std=2.0, random_state=2)
    return X, y, np.arange(len(X)) % 2


def test_fit_with_exaggeration_equals_a_continued_fit(blobs):
    X, _, prior = blobs
    fitted = ConditionalTSNE(n_iter=150, exaggeration=3.0, **FAST).fit(X, prior)
    # the same schedule by hand: the early phase only, then optimize with the factor
    stepwise = ConditionalTSNE(n_iter=0, **FAST).fit(X, prior)
    stepwise.optimize(150, exaggeration=3.0)
    np.testing.assert_array_equal(fitted.embedding_, stepwise.embedding_)
    assert fitted.n_iter_ == 250
    # optimize() without a factor continues with the estimator's own
    again = ConditionalTSNE(n_iter=0, exaggeration=3.0, **FAST).fit(X, prior)
    again.optimize(150)
    np.testing.assert_array_equal(fitted.embedding_, again.embedding_)


def _spread_ratio(Y, y):
    """Mean distance to the own cluster's centre over the distance between centres."""
    centres = np.array([Y[y == c].mean(axis=0) for c in np.unique(y)])
    within = np.mean([np.linalg.norm(Y[y == c] - centres[c], axis=1).mean()
                      for c in np.unique(y)])
    between = np.mean([np.linalg.norm(a - b) for i, a in enumerate(centres)
                       for b in centres[i + 1:]])
    return within / between


def test_exaggeration_tightens_the_clusters(blobs):
    X, y, _ = blobs
    plain = ConditionalTSNE(n_iter=300, **FAST).fit_transform(X)
    tight = ConditionalTSNE(n_iter=300, exaggeration=4.0, **FAST).fit_transform(X)
    # measured: 0.091 plain against 0.0035 with 4 (the attraction-repulsion spectrum)
    assert _spread_ratio(tight, y) < 0.6 * _spread_ratio(plain, y)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), "4"])
def test_bad_exaggeration_is_refused_before_work(blobs, value):
    X, _, _ = blobs
    with pytest.raises(ValueError, match="exaggeration must be a finite number > 0"):
        ConditionalTSNE(exaggeration=value).fit(X)


def test_no_iterations_still_report_the_kl_of_the_start(blobs):
    # regression: n_iter=0 with early_exaggeration_iter=0 left kl_divergence_ unset
    from ctsne import exact_objective

    X, _, prior = blobs
    model = ConditionalTSNE(n_iter=0, early_exaggeration_iter=0, random_state=0,
                            method="exact").fit(X, prior)
    assert model.n_iter_ == 0
    np.testing.assert_array_equal(model.embedding_, model.initial_embedding_)
    expected, _ = exact_objective(model.P_, model.embedding_, prior, beta=model.beta_)
    assert model.kl_divergence_ == pytest.approx(expected, rel=1e-9)

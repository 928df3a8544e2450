"""Parameter validation of ConditionalTSNE that used to fail late or silently."""

import numpy as np
import pytest
from sklearn.base import clone

from ctsne import ConditionalTSNE
from ctsne.prior import weights_from_sizes


@pytest.fixture
def data(rng):
    return rng.normal(size=(60, 4)), np.repeat([0, 1, 2], 20)


FAST = dict(early_exaggeration_iter=10, n_iter=10, method="exact", perplexity=5, n_jobs=1)


def test_alpha_and_beta_together_are_refused(data):
    X, labels = data
    with pytest.raises(ValueError, match="give beta or alpha, not both"):
        ConditionalTSNE(alpha=2.0, beta=0.1, **FAST).fit(X, labels)
    # either alone works; beta defaults to the paper's 0.01 unless alpha is given
    model = ConditionalTSNE(alpha=2.0, **FAST).fit(X, labels)
    assert model.alpha_ == pytest.approx(2.0)
    assert model.beta_ == pytest.approx(weights_from_sizes(np.array([20, 20, 20]),
                                                           alpha=2.0)[1])
    rho = 3 * 20 * 19 / (60 * 59)  # paper Eq. 4 by hand
    assert model.beta_ == pytest.approx((1 - 2.0 * rho) / (1 - rho))
    assert ConditionalTSNE(**FAST).fit(X, labels).beta_ == pytest.approx(0.01)
    copy = clone(ConditionalTSNE(alpha=2.0))
    assert copy.get_params()["alpha"] == 2.0 and copy.get_params()["beta"] is None


@pytest.mark.parametrize("value", [0, 0.0, -1.0, np.inf])
def test_early_exaggeration_must_be_positive(data, value):
    with pytest.raises(ValueError, match="early_exaggeration must be a finite number > 0"):
        ConditionalTSNE(early_exaggeration=value, **FAST).fit(data[0])


@pytest.mark.parametrize("n_iter", [-5, 2.5, "10"])
def test_optimize_checks_n_iter(data, n_iter):
    model = ConditionalTSNE(**FAST).fit(data[0])
    done = model.n_iter_
    with pytest.raises(ValueError, match="n_iter must be an integer ≥ 0"):
        model.optimize(n_iter=n_iter)
    with pytest.raises(ValueError, match="exaggeration must be a finite number > 0"):
        model.optimize(n_iter=5, exaggeration=0)
    assert model.n_iter_ == done
    model.optimize(n_iter=np.int64(5))
    assert model.n_iter_ == done + 5


# ---------------------------------------------------------------- the parameter table
def test_the_table_matches_the_signature_and_the_docstring():
    import inspect

    from ctsne.estimator.parameters import PARAMETERS

    signature = inspect.signature(ConditionalTSNE.__init__).parameters
    assert list(PARAMETERS) == [p for p in signature if p != "self"]
    for name, row in PARAMETERS.items():
        assert row.default == signature[name].default, name
        assert f"\n{name} : " in ConditionalTSNE.__doc__, name
    assert "Parameters\n----------\nn_components : int, default 2\n" in ConditionalTSNE.__doc__
    assert "\nAttributes\n----------\n" in ConditionalTSNE.__doc__


def test_defaults_that_depend_on_other_parameters():
    from ctsne.estimator.parameters import resolved
    from ctsne.prior import DEFAULT_BETA

    def used(name, **params):
        return resolved(ConditionalTSNE(**params).get_params(), name)

    assert used("beta") == DEFAULT_BETA == 0.01
    assert used("beta", alpha=2.0) is None and used("beta", beta=0.3) == 0.3
    # "balanced" and "auto" choose each class's share from the data (cross_share)
    assert used("within_weight", affinities="balanced") is None
    assert used("within_weight", affinities="auto") is None
    assert used("within_weight", affinities="revised") == 0.5
    assert used("within_weight", affinities="standard") is None
    assert used("within_weight", affinities="revised", within_weight=0.3) == 0.3


@pytest.mark.parametrize("params, match", [
    ({"random_state": "seed"}, "random_state must be None, an integer or a numpy Generator"),
    ({"callbacks": 3}, "callbacks must be None, a callable or a list of callables"),
    ({"init": "spectral"}, "init must be 'pca', 'random' or an array"),
    ({"n_jobs": 1.5}, "n_jobs must be None or an integer"),
    ({"max_step_norm": np.nan}, "max_step_norm must be None or a number"),
    ({"affinities": "fancy"}, "affinities must be one of"),
    ({"affinities": "balanced", "within_weight": 1.0}, "within_weight=1 gives the other"),
    ({"callbacks_every_iters": 0}, "callbacks_every_iters must be an integer ≥ 1"),
])
def test_table_checks_before_any_work(data, params, match):
    with pytest.raises(ValueError, match=match):
        ConditionalTSNE(**{**FAST, **params}).fit(data[0])


@pytest.mark.parametrize("X, match", [
    (np.ones((12, 0)), r"0 feature\(s\) \(shape=\(12, 0\)\)"),
    (np.ones((1, 3)), "at least 3 points, got n_samples=1"),
    (np.ones((10, 2)) + 1j, "Complex data not supported"),
    (np.ones(4), "Reshape your data"),
])
def test_input_errors_name_the_problem(X, match):
    with pytest.raises(ValueError, match=match):
        ConditionalTSNE(**FAST).fit(X)


@pytest.mark.parametrize("estimator", ["ConditionalTSNE", "ConditionalUMAP"])
def test_a_negative_seed_is_refused_with_the_parameters_message(estimator):
    """Without the parameter check numpy refuses a negative seed with its bare "expected
    non-negative integer" once the first seed is drawn; the check names the parameter."""
    import ctsne

    X = np.random.default_rng(0).normal(size=(60, 3))
    with pytest.raises(ValueError, match=r"random_state must be .*got -1"):
        getattr(ctsne, estimator)(random_state=-1, n_jobs=1).fit(X)

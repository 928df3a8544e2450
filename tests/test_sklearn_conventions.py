"""The estimators against scikit-learn's estimator checks (sklearn.utils.estimator_checks).

The checks fit on 10 to 150 points, so the estimator runs with settings that small data
allows (perplexity 2: k = 6 neighbours) and a few iterations: the checks test the API,
not the embedding.
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    parametrize_with_checks,
)

from ctsne import ConditionalLargeVis, ConditionalTSNE, ConditionalUMAP

FAST = dict(perplexity=2.0, early_exaggeration_iter=5, n_iter=5, method="exact",
            random_state=0, n_jobs=1)

# Checks that test something ConditionalTSNE does differently on purpose, by name.
EXPECTED_FAILURES = {
    "check_transformer_general": (
        "transform places new points into the fitted map without moving it "
        "(out-of-sample); t-SNE has no mapping that would give the training points their "
        "fit_transform coordinates, so transform(X_train) differs from fit_transform"),
    "check_transformer_data_not_an_array": (
        "the same comparison of transform with fit_transform as check_transformer_general, "
        "on lists and array-likes"),
}

ESTIMATORS = [
    ConditionalTSNE(**FAST),
    ConditionalUMAP(n_neighbors=5, n_epochs=5, random_state=0, n_jobs=1),
    ConditionalLargeVis(perplexity=2.0, n_epochs=5, random_state=0, n_jobs=1),
]


def _expected(estimator) -> dict:
    return EXPECTED_FAILURES


_HAS_EXPECTED = "expected_failed_checks" in inspect.signature(parametrize_with_checks).parameters


def _check_name(check) -> str:
    while hasattr(check, "func"):  # functools.partial around the check
        check = check.func
    return check.__name__


if _HAS_EXPECTED:  # scikit-learn ≥ 1.6 marks them xfail with the reason
    _checks = parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected)
else:
    _checks = parametrize_with_checks(ESTIMATORS)


@_checks
def test_sklearn_estimator_checks(estimator, check):
    name = _check_name(check)
    if not _HAS_EXPECTED and name in _expected(estimator):
        pytest.skip(_expected(estimator)[name])
    check(estimator)


def test_dataframe_column_names():
    """Not among the default checks: names from a DataFrame, compared in transform."""
    pytest.importorskip("pandas")
    check_dataframe_column_names_consistency("ConditionalTSNE", ConditionalTSNE(**FAST))


def test_arrays_after_a_dataframe_fit_are_not_compared_by_name(rng):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(rng.normal(size=(30, 3)), columns=["a", "b", "c"])
    model = ConditionalTSNE(**FAST).fit(X)
    np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c"])
    assert model.feature_names_in_.dtype == object
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an array is taken as aligned (the CLI's case)
        assert model.transform(X.to_numpy()[:4]).shape == (4, 2)
    model.fit(X.to_numpy())
    assert not hasattr(model, "feature_names_in_")  # a refit on an array forgets them


def test_get_feature_names_out(rng):
    model = ConditionalTSNE(**FAST).fit(rng.normal(size=(20, 3)))
    np.testing.assert_array_equal(model.get_feature_names_out(),
                                  ["conditionaltsne0", "conditionaltsne1"])


@pytest.mark.parametrize("model", [
    ConditionalTSNE(n_iter=5, early_exaggeration_iter=5, perplexity=5.0, random_state=0),
    ConditionalUMAP(n_epochs=5, n_neighbors=5, random_state=0, n_jobs=1),
    ConditionalLargeVis(n_epochs=5, perplexity=5.0, random_state=0, n_jobs=1),
])
def test_a_pipeline_routes_the_prior_by_name(model):
    # scikit-learn's metadata routing passes fit(Xt, y, prior=...): the prior by keyword
    import sklearn
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X, batch = rng.normal(size=(80, 4)), np.repeat(["a", "b"], 40)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(StandardScaler(), clone(model).set_fit_request(prior=True))
        pipe.fit(X, prior=batch)
    routed = pipe[-1]
    assert list(routed.prior_.classes[0]) == ["a", "b"]
    # and positionally, as before: the same map from the same seed
    plain = clone(model).fit(StandardScaler().fit_transform(X), batch)
    np.testing.assert_array_equal(plain.prior_.joint_codes(), routed.prior_.joint_codes())

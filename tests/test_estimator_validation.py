"""Parameter validation of ConditionalTSNE that used to fail late or silently."""

import numpy as np
import pytest
from ctsne.estimator.tsne import ConditionalTSNE
from sklearn.base import clone

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

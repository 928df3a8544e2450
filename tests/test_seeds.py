"""A seed fixes a UMAP or LargeVis map on any number of threads (issue 51, item 3).

Before, the SGD's epochs updated shared points from several threads without locks
(umap-learn's "hogwild"): two fits of digits with a batch prior, ``random_state=0`` and
two threads, came out 8-12 units apart for UMAP and up to 27 for LargeVis. Each epoch now
moves a head over its own edges, reads every other point as the epoch began and applies
the tails' moves after, in edge order.
"""

import pickle

import numba
import numpy as np
import pytest
from sklearn.datasets import load_digits

from ctsne import ConditionalLargeVis, ConditionalUMAP
from ctsne.optimization.sgd import PARALLEL_FROM_EDGES

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                reason="needs two threads")


@pytest.fixture(scope="module")
def digits():
    d = load_digits()
    rng = np.random.default_rng(0)
    keep = rng.choice(len(d.data), 1300, replace=False)
    X = d.data[keep]
    return X, np.arange(len(X)) % 3, d.data[np.setdiff1d(np.arange(len(d.data)), keep)]


@pytest.mark.parametrize("cls", [ConditionalUMAP, ConditionalLargeVis])
def test_two_seeded_fits_on_two_threads_are_equal(digits, cls):
    X, batch, _ = digits
    fits = [cls(random_state=0, n_epochs=60, n_jobs=j).fit(X, batch) for j in (2, 2, 1)]
    # the epochs ran in parts: the graph has more edges than a part's threshold
    assert fits[0].graph_.nnz > PARALLEL_FROM_EDGES
    np.testing.assert_array_equal(fits[0].embedding_, fits[1].embedding_)
    # and the one-thread map is the same map
    np.testing.assert_array_equal(fits[0].embedding_, fits[2].embedding_)


@pytest.mark.parametrize("cls", [ConditionalUMAP, ConditionalLargeVis])
def test_transform_is_the_same_after_pickling(digits, cls):
    X, batch, new = digits
    model = cls(random_state=0, n_epochs=60, n_jobs=2).fit(X, batch)
    before = model.transform(new, np.arange(len(new)) % 3)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.transform(new, np.arange(len(new)) % 3), before)
    # and on one thread
    again.set_params(n_jobs=1)
    np.testing.assert_array_equal(again.transform(new, np.arange(len(new)) % 3), before)

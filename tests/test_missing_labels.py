"""Missing prior labels do not change what affinities="auto" decides for the labelled
points (regression: 14 % missing labels, a class of their own lying among the groups,
made "auto" keep the standard P and the groups stayed apart)."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from ctsne import ConditionalTSNE
from ctsne.affinities.mixing import labelled_mixing
from ctsne.affinities.standard import standard_conditional
from ctsne.metrics import knn_label_homogeneity


@pytest.fixture(scope="module")
def separated():
    # 5 clusters in each of two groups; the second group is offset far away
    X, y = make_blobs(600, n_features=6, centers=5, cluster_std=1.0, random_state=4)
    group = np.arange(len(X)) % 2
    X = X + 40.0 * group[:, None] * np.eye(6)[0]
    labels = np.where(group == 1, "b", "a").astype(object)
    missing = np.random.default_rng(0).random(len(X)) < 0.14
    with_gaps = labels.copy()
    with_gaps[missing] = None
    return X, y, labels, with_gaps, missing


def test_labelled_mixing_matches_a_dense_computation(separated):
    X, _, labels, _, missing = separated
    codes = (labels == "b").astype(np.int64)
    codes[missing] = 2  # the missing-label class
    table = standard_conditional(X, 10.0, neighbors="exact")
    n = len(X)
    C = np.zeros((n, n))
    np.put_along_axis(C, table.idx, table.cond, axis=1)
    S = C + C.T
    keep = ~missing
    S = S[np.ix_(keep, keep)]
    cross = codes[keep][:, None] != codes[keep][None, :]
    got = labelled_mixing(table.idx, table.cond, codes, keep)
    assert got.cross == pytest.approx(S[cross].sum() / S.sum(), rel=1e-10)


def test_missing_labels_keep_the_decision_of_the_labelled_points(separated):
    X, y, labels, with_gaps, missing = separated
    # the affinity rule under the paper's weights
    fit = dict(random_state=0, n_jobs=1, n_iter=300, conditioning="classes")
    complete = ConditionalTSNE(**fit).fit(X, labels)
    gaps = ConditionalTSNE(**fit).fit(X, with_gaps)
    assert complete.affinities_ == "balanced"
    assert gaps.affinities_ == "balanced"  # was "standard" before the fix
    keep = ~missing
    homog = knn_label_homogeneity(gaps.embedding_[keep], labels[keep], k=10)
    standard = ConditionalTSNE(affinities="standard", **fit).fit(X, with_gaps)
    kept_apart = knn_label_homogeneity(standard.embedding_[keep], labels[keep], k=10)
    # measured: 0.76 (complete labels: 0.72; chance 0.5) against 1.00 with the standard P
    assert homog < 0.85 < kept_apart
    # and the clusters themselves stay together (measured 0.90; complete labels 0.91)
    assert knn_label_homogeneity(gaps.embedding_, y, k=10) > 0.85

"""ConditionalUMAP and ConditionalLargeVis: parameters, determinism, agreement with
umap-learn, removal of a prior that separates the data, transform.

The measured numbers these tests bound (2 cores, n_jobs=1 unless said):
- blobs 2,000 × 20, 6 centres, no prior: 15-NN preservation 0.185 vs umap-learn's 0.184,
  trustworthiness 0.948 vs 0.948;
- 4 clusters × 2 batches 60 apart along a direction the clusters do not vary in: plain
  UMAP batch 10-NN homogeneity 1.0, the default (balanced graph, β' = 0.01) 0.535
  (chance 0.5), cluster homogeneity 1.0; LargeVis 0.513 / 1.0.

The batch offset lies outside the clusters' span on purpose: offset along a direction in
which the clusters spread, a point's nearest points in the other batch are that batch's
points nearest along the offset (the distance is dominated by it), not its counterparts,
and the balanced graph ties each batch to the other's near edge only (measured with the
offset along a feature: batch homogeneity 0.90 for UMAP, 0.67 for ct-SNE).
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.manifold import trustworthiness
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors

from ctsne.estimator.largevis import ConditionalLargeVis
from ctsne.estimator.umap import ConditionalUMAP
from ctsne.estimator.umap_parameters import (
    LARGEVIS_PARAMETERS,
    UMAP_PARAMETERS,
    default_epochs,
)
from ctsne.metrics import knn_label_homogeneity
from ctsne.prior import make_prior


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(2000, 20, centers=6, random_state=0)


@pytest.fixture(scope="module")
def batches():
    """4 Gaussian clusters in 10 features, replicated in 2 batches 60 apart.

    The offset lies along a direction in which the clusters do not vary (an 11th
    feature, then a random rotation), so a point's nearest points in the other batch are
    its counterparts there; no point's 14 nearest neighbours cross batches, so the prior
    separates the data.
    """
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=6.0, size=(4, 10))
    X = np.vstack([np.hstack([np.vstack([c + rng.normal(size=(250, 10)) for c in centres]),
                              np.full((1000, 1), 60.0 * b)]) for b in (0, 1)])
    Q, _ = np.linalg.qr(rng.normal(size=(11, 11)))
    batch = np.repeat([0, 1], 1000)
    clusters = np.tile(np.repeat(np.arange(4), 250), 2)
    return X @ Q, batch, clusters


def knn_preservation(X, Y, k=15):
    a = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X, return_distance=False)
    b = NearestNeighbors(n_neighbors=k + 1).fit(Y).kneighbors(Y, return_distance=False)
    return float(np.mean([len(set(r[1:]) & set(s[1:])) / k for r, s in zip(a, b,
                                                                           strict=True)]))


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("cls, table", [(ConditionalUMAP, UMAP_PARAMETERS),
                                        (ConditionalLargeVis, LARGEVIS_PARAMETERS)])
def test_the_table_matches_the_signature_and_the_docstring(cls, table):
    sig = inspect.signature(cls.__init__).parameters
    assert list(sig)[1:] == list(table)
    for name, row in table.items():
        assert sig[name].default is row.default or sig[name].default == row.default, name
        assert f"\n{name} : " in cls.__doc__


def test_default_epochs_follow_umap_learn():
    assert default_epochs(10_000) == 500
    assert default_epochs(10_001) == 200


BAD = [
    (dict(min_dist=2.0), "min_dist=2.0 is larger than spread"),
    (dict(n_epochs=0), "n_epochs must be None or an integer ≥ 1"),
    (dict(n_epochs=-5), "n_epochs must be None or an integer ≥ 1"),
    (dict(beta=5.0), "beta=5.0 is out of range"),
    (dict(alpha=0.5, beta=0.5), "give beta or alpha, not both"),
    (dict(n_neighbors=1), "n_neighbors must be an integer ≥ 2"),
    (dict(n_neighbors=200), "n_neighbors=200 is too large for 200 points"),
    (dict(init="umap"), "init must be 'spectral', 'pca', 'random' or an array"),
    (dict(init=np.zeros((200, 3))), r"init array has shape \(200, 3\)"),
    (dict(init=np.full((200, 2), np.nan)), "init array contains NaN"),
    (dict(affinities="revised"), "affinities must be one of"),
    (dict(within_weight=1.0, affinities="balanced"), "within_weight=1 gives the other"),
    (dict(learning_rate=0.0), "learning_rate must be a finite number > 0"),
    (dict(negative_sample_rate=0), "negative_sample_rate must be an integer ≥ 1"),
    (dict(set_op_mix_ratio=1.5), r"set_op_mix_ratio must be a number in \[0, 1\]"),
    (dict(spread=0.0), "spread must be a finite number > 0"),
]


@pytest.mark.parametrize("params, match", BAD)
def test_bad_parameters_are_refused_before_any_work(monkeypatch, params, match):
    def no_search(*args, **kwargs):
        raise AssertionError("the neighbour search ran before the parameters were checked")

    # every list of a fit comes through its provider
    from ctsne.neighbors import provider

    monkeypatch.setattr(provider, "nearest_neighbors", no_search)
    monkeypatch.setattr(provider, "class_lists", no_search)
    X = np.random.default_rng(0).normal(size=(200, 5))
    prior = np.repeat([0, 1], 100)
    with pytest.raises(ValueError, match=match):
        ConditionalUMAP(**params).fit(X, prior)


def test_largevis_checks_its_perplexity():
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="perplexity=30.0 is too large for 30 points"):
        ConditionalLargeVis().fit(X)


# ----------------------------------------------------------------------------- the prior
def test_class_weights_are_the_priors_pair_weights():
    rng = np.random.default_rng(1)
    labels = [rng.integers(3, size=300), rng.integers(2, size=300)]
    for combine in ("joint", "product"):
        prior = make_prior(labels, 300, beta=0.1, combine=combine)
        joint, W = prior.group_weights()
        np.testing.assert_allclose(W[joint][:, joint], prior.pair_weights(np.arange(300)),
                                   rtol=1e-15)


def test_a_prior_that_does_not_separate_keeps_the_fuzzy_graph(blobs):
    X, _ = blobs
    X = X[:500]
    prior = np.random.default_rng(0).integers(3, size=500)
    plain = ConditionalUMAP(n_epochs=5, random_state=0, n_jobs=1).fit(X)
    cond = ConditionalUMAP(n_epochs=5, random_state=0, n_jobs=1).fit(X, prior)
    assert cond.affinities_ == "standard" and cond.standard_mixing_ is None
    assert not cond.prior_mixing_.separates
    assert (cond.graph_ != plain.graph_).nnz == 0
    assert cond.alpha_ > 1 > cond.beta_ == 0.01


# ----------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("cls", [ConditionalUMAP, ConditionalLargeVis])
@pytest.mark.parametrize("init", ["spectral", "pca", "random"])
def test_a_seed_gives_the_same_map_bit_for_bit(batches, cls, init):
    X, batch, _ = batches
    fits = [cls(n_epochs=30, init=init, random_state=7, n_jobs=1).fit(X[::4], batch[::4])
            for _ in range(2)]
    assert np.array_equal(fits[0].embedding_, fits[1].embedding_)
    assert np.array_equal(fits[0].transform(X[1::40], batch[1::40]),
                          fits[1].transform(X[1::40], batch[1::40]))
    other = cls(n_epochs=30, init=init, random_state=8, n_jobs=1).fit(X[::4], batch[::4])
    assert not np.array_equal(fits[0].embedding_, other.embedding_)


# ----------------------------------------------------------------------------- quality
def test_without_a_prior_it_agrees_with_umap_learn(blobs):
    umap = pytest.importorskip("umap")
    X, _ = blobs
    ours = ConditionalUMAP(random_state=0, n_jobs=1).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # umap-learn's notes on random_state and threads
        ref = umap.UMAP(random_state=0).fit_transform(X)
    kp, kp_ref = knn_preservation(X, ours), knn_preservation(X, ref)
    tw, tw_ref = (trustworthiness(X, Y, n_neighbors=15) for Y in (ours, ref))
    print(f"15-NN preservation {kp:.4f} (umap-learn {kp_ref:.4f}), "
          f"trustworthiness {tw:.4f} (umap-learn {tw_ref:.4f})")
    assert abs(kp - kp_ref) < 0.02
    assert abs(tw - tw_ref) < 0.01


def test_the_default_removes_a_prior_that_separates_the_data(batches):
    X, batch, clusters = batches
    plain = ConditionalUMAP(random_state=0, n_jobs=1).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "auto" switches quietly; no separation warning
        model = ConditionalUMAP(random_state=0, n_jobs=1).fit(X, batch)
    Y = model.embedding_
    h_plain, h_batch = knn_label_homogeneity(plain, batch), knn_label_homogeneity(Y, batch)
    h_clusters = knn_label_homogeneity(Y, clusters)
    print(f"batch homogeneity plain {h_plain:.3f}, conditioned {h_batch:.3f} (chance 0.5); "
          f"clusters {h_clusters:.3f}")
    assert model.affinities_ == "balanced" and model.standard_mixing_.separates
    assert h_plain > 0.95
    assert h_batch < 0.5 + 0.1
    assert h_clusters > 0.9


def test_standard_graph_warns_when_the_prior_separates(batches):
    X, batch, _ = batches
    with pytest.warns(UserWarning, match="the prior separates the data"):
        ConditionalUMAP(affinities="standard", n_epochs=5, random_state=0,
                        n_jobs=1).fit(X[::2], batch[::2])


def test_largevis_runs_and_separates_blobs(blobs, batches):
    X, y = blobs
    model = ConditionalLargeVis(random_state=0, n_jobs=1).fit(X)
    assert (model.a_, model.b_, model.repulsion_strength) == (1.0, 1.0, 7.0)
    assert knn_label_homogeneity(model.embedding_, y) > 0.99
    Xb, batch, clusters = batches
    Y = ConditionalLargeVis(random_state=0, n_jobs=1).fit_transform(Xb, batch)
    assert knn_label_homogeneity(Y, batch) < 0.6
    assert knn_label_homogeneity(Y, clusters) > 0.9


# ----------------------------------------------------------------------------- transform
def test_transform_places_held_out_points_in_their_cluster(blobs):
    X, y = blobs
    model = ConditionalUMAP(random_state=0, n_jobs=1).fit(X[:1800])
    Y_new = model.transform(X[1800:])
    knn = KNeighborsClassifier(10).fit(model.embedding_, y[:1800])
    assert knn.score(Y_new, y[1800:]) > 0.97


def test_transform_with_a_prior(batches):
    X, batch, clusters = batches
    order = np.random.default_rng(0).permutation(len(X))
    fit, new = order[:1800], order[1800:]
    model = ConditionalUMAP(random_state=0, n_jobs=1).fit(X[fit], batch[fit])
    knn = KNeighborsClassifier(10).fit(model.embedding_, clusters[fit])
    assert knn.score(model.transform(X[new], batch[new]), clusters[new]) > 0.95
    with pytest.warns(UserWarning, match="prior_new not given"):
        model.transform(X[new[:20]])
    with pytest.warns(UserWarning, match="not seen in training"):
        model.transform(X[new[:20]], np.full(20, 9))
    with pytest.raises(ValueError, match="X has 3 features, but ConditionalUMAP"):
        model.transform(X[:5, :3])


@pytest.mark.parametrize("estimator", [ConditionalUMAP, ConditionalLargeVis])
def test_transform_places_a_point_whatever_comes_with_it(blobs, estimator):
    """A new point's draws are keyed by its own neighbour list: alone, in another order
    or in a subset, it lands on exactly the same spot (one thread: no races).

    On 10 of the blobs' 20 features: the reference search is then the k-d tree, whose
    distances are computed pair by pair. Above 15 features it is scikit-learn's brute
    force, whose BLAS product rounds a row's distances by the size of the batch on some
    CPUs (OpenBLAS's Haswell kernels: 4e-14 between odd and even batches), and bit-for-bit
    equality there would hinge on the machine."""
    X = blobs[0][:, :10]
    model = estimator(random_state=0, n_jobs=1, n_epochs=60).fit(X[:300])
    new = X[300:340]
    together = model.transform(new)
    order = np.random.default_rng(0).permutation(len(new))
    np.testing.assert_array_equal(model.transform(new[order]), together[order])
    np.testing.assert_array_equal(model.transform(new[5:9]), together[5:9])
    np.testing.assert_array_equal(model.transform(new[5:8]), together[5:8])  # odd on purpose
    # not merely because the draws do not matter: another seed moves the points
    model.random_state = 1
    assert np.abs(model.transform(new) - together).max() > 1e-3


def test_a_read_only_model_transforms(blobs):
    # models loaded memory-mapped (joblib, scikit-learn's pickling check) are read-only
    X, _ = blobs
    model = ConditionalUMAP(n_epochs=30, random_state=0, n_jobs=1).fit(X[:300])
    expected = model.transform(X[300:320])
    model.embedding_.setflags(write=False)
    np.testing.assert_array_equal(model.transform(X[300:320]), expected)


@pytest.mark.parametrize("estimator", [ConditionalUMAP, ConditionalLargeVis])
def test_callbacks_see_the_epochs_and_can_stop_the_fit(blobs, estimator):
    X, _ = blobs
    seen = []

    def record(epoch, loss, Y):
        seen.append((epoch, loss, Y.copy()))

    full = estimator(random_state=0, n_jobs=1, n_epochs=40, callbacks=record,
                     callbacks_every_iters=15).fit_transform(X[:300])
    assert [s[0] for s in seen] == [15, 30, 40] and all(s[1] is None for s in seen)
    np.testing.assert_array_equal(seen[-1][2], full)  # the last call sees the result
    # a True return stops after that epoch (every callback still runs once): the map
    # is the one they saw; with verbose on too, the bar's more frequent calls change nothing
    seen.clear()
    early = estimator(random_state=0, n_jobs=1, n_epochs=40, verbose=True,
                      callbacks=[record, lambda e, _, Y: e >= 10], callbacks_every_iters=10)
    Y = early.fit_transform(X[:300])
    assert [s[0] for s in seen] == [10]
    np.testing.assert_array_equal(Y, seen[0][2])
    assert not np.array_equal(Y, full)
    with pytest.raises(ValueError, match="callbacks"):
        estimator(callbacks=3).fit(X[:50])


def test_auto_applies_conditional_tsnes_cross_share_rule():
    """The fuzzy graph's cross-class shares go through ctsne.affinities.cross_share: the
    paper's example (classes that are copies, 10 % across) gets the balanced graph with
    the target shares; labels unrelated to the data keep the fuzzy graph."""
    from ctsne.datasets import make_synthetic

    data = make_synthetic(random_state=0)
    model = ConditionalUMAP(random_state=0, n_epochs=2, n_jobs=1).fit(data.X, data.f14)
    share = model.prior_mixing_.cross_share
    assert model.affinities_ == "balanced" and share.trust > 0.9
    np.testing.assert_allclose(share.class_share, share.class_target)
    assert np.all(share.class_standard < share.class_target)
    # (not seed 0: make_synthetic draws its clusters from that stream)
    random_labels = np.random.default_rng(12345).integers(0, 3, len(data.X))
    plain = ConditionalUMAP(random_state=0, n_epochs=2, n_jobs=1).fit(data.X, random_labels)
    assert plain.affinities_ == "standard"
    assert plain.prior_mixing_.cross_share.mode == "standard"

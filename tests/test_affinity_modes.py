"""Affinity modes as objects, shared by the three estimators, over one neighbour provider."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from ctsne import ConditionalLargeVis, ConditionalTSNE, ConditionalUMAP
from ctsne.affinities import AffinityMode, Auto, Balanced, Revised, Standard
from ctsne.affinities.graphs import FuzzyGraph, PerplexityGraph, graph_cross_ratio
from ctsne.affinities.modes import Affinities, input_affinities, resolve_mode
from ctsne.estimator.engine import NumbaEngine, choose_engine
from ctsne.neighbors import provider
from ctsne.neighbors.provider import NeighborLists

FAST_TSNE = {"n_iter": 20, "early_exaggeration_iter": 20, "perplexity": 8.0, "n_jobs": 1,
             "random_state": 0}
FAST_GRAPH = {"n_epochs": 20, "n_jobs": 1, "random_state": 0}


def _separated(rng, n=150, shift=40.0):
    """Two batches, each a copy of the same two clusters, far apart: the standard graph
    has no edge across the batches, but every point has a counterpart in the other."""
    centres = np.array([[0.0, 0.0, 0.0], [8.0, 0.0, 0.0]])
    base = centres[rng.integers(0, 2, n)] + rng.normal(size=(n, 3))
    X = np.vstack([base, base + rng.normal(scale=0.1, size=base.shape) + shift])
    return X, np.repeat([0, 1], n)


def _mixed(rng, n=300):
    return rng.normal(size=(n, 4)), rng.integers(0, 2, n)


@pytest.mark.parametrize("obj, name, weight", [
    (Standard(), "standard", None),
    (Balanced(within_weight=0.7), "balanced", 0.7),
    (Balanced(), "balanced", None),
    (Revised(within_weight=0.4), "revised", 0.4),
    (Auto(), "auto", None),
])
def test_an_object_builds_the_p_of_its_name(rng, obj, name, weight):
    X, codes = _separated(rng)
    got = input_affinities(X, 8.0, codes, obj)
    want = input_affinities(X, 8.0, codes, name, weight)
    assert got.mode == want.mode
    assert abs(got.P - want.P).max() == 0.0


def test_a_weight_beside_an_object_is_refused(rng):
    X, codes = _separated(rng, n=40)
    with pytest.raises(ValueError, match="give the weight to the object"):
        ConditionalTSNE(affinities=Balanced(0.6), within_weight=0.5, **FAST_TSNE).fit(X, codes)
    with pytest.raises(ValueError, match="within_weight"):
        resolve_mode(Balanced(within_weight=1.5))
    with pytest.raises(ValueError, match="affinities must be one of"):
        ConditionalUMAP(affinities=Revised(), **FAST_GRAPH).fit(X, codes)


@pytest.mark.parametrize("make", [
    lambda a: ConditionalTSNE(affinities=a, **FAST_TSNE),
    lambda a: ConditionalUMAP(affinities=a, n_neighbors=16, **FAST_GRAPH),
    lambda a: ConditionalLargeVis(affinities=a, perplexity=5.0, **FAST_GRAPH),
])
def test_every_estimator_takes_the_objects_and_chooses_alike(rng, make):
    # the same rule for every estimator: separated batches with counterparts switch to the
    # balanced graph; labels unrelated to the data keep the standard one
    X, codes = _separated(rng)
    model = make(Auto()).fit(X, codes)
    assert model.affinities_ == "balanced"
    assert model.prior_mixing_.cross_share.mode == "balanced"
    Xm, cm = _mixed(rng)
    assert make("auto").fit(Xm, cm).affinities_ == "standard"
    fitted = make(Balanced(within_weight=0.6)).fit(X, codes)
    assert fitted.affinities_ == "balanced"
    # across-class share of the graph: 0.4 of each row's mass (the given weight)
    assert fitted.prior_mixing_.cross == pytest.approx(0.4, abs=0.02)
    twin = clone(fitted)  # scikit-learn's clone keeps an equal object
    assert twin.get_params()["affinities"] == Balanced(within_weight=0.6)


def test_tsne_and_umap_make_the_same_choice_per_class(rng):
    X, codes = _separated(rng)
    tsne = ConditionalTSNE(**FAST_TSNE).fit(X, codes).prior_mixing_.cross_share
    umap = ConditionalUMAP(n_neighbors=25, **FAST_GRAPH).fit(X, codes).prior_mixing_.cross_share
    assert tsne.mode == umap.mode == "balanced"
    assert tsne.trust == umap.trust  # one counterpart trust, measured on X alike


class _Uniform(AffinityMode):
    """A mode of one's own, one class: every standard neighbour weighs the same."""

    name = "uniform"

    def build(self, lists, graph, labelled=None):
        idx, _ = lists.standard(graph.k(len(lists.X)))
        n, k = idx.shape
        C = sp.csr_matrix((np.full(n * k, 1.0 / k), (np.repeat(np.arange(n), k),
                                                      idx.ravel())), shape=(n, n))
        return Affinities(((C + C.T) / (2 * n)).tocsr(), "standard", None)


@pytest.mark.parametrize("make", [
    lambda a: ConditionalTSNE(affinities=a, **FAST_TSNE),
    lambda a: ConditionalUMAP(affinities=a, n_neighbors=10, **FAST_GRAPH),
    lambda a: ConditionalLargeVis(affinities=a, perplexity=5.0, **FAST_GRAPH),
])
def test_a_new_mode_is_one_class(rng, make):
    X, codes = _mixed(rng, n=120)
    model = make(_Uniform()).fit(X, codes)
    P = getattr(model, "P_", None)
    P = model.graph_ if P is None else P
    assert np.all(np.isfinite(model.embedding_))
    # uniform rows: every stored entry is one weight (one direction) or twice it (both)
    assert set(np.round(P.data / P.data.min(), 9)) == {1.0, 2.0}


def test_the_provider_searches_once_and_reuses(rng, monkeypatch):
    X, codes = _separated(rng)
    calls = []
    real = provider.nearest_neighbors

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(provider, "nearest_neighbors", counted)
    lists = NeighborLists(X, codes, method="exact")
    idx, dist = lists.standard_for_classes(24)[:2]
    own_rows = np.all(codes[idx] == codes[:, None], axis=1)
    assert own_rows.all()  # the batches lie apart: every list is its own class
    own_idx, own_dist = lists.own_class(24)
    np.testing.assert_array_equal(own_idx, idx)  # reused, not searched again
    assert lists.balanced(24).own_idx is own_idx  # the balanced lists reuse them too
    assert calls == [24]  # one standard search in all
    assert Auto().build(NeighborLists(X, codes), PerplexityGraph(8.0)).mode == "balanced"


def test_graph_cross_ratio_by_hand():
    # rows: 0 → 1 (same class) 1.0, 0 → 2 (other) 3.0; 1 → 0 1.0; 2 → 0 3.0
    G = sp.csr_matrix(np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 0.0], [3.0, 0.0, 0.0]]))
    codes = np.array([0, 0, 1])
    # random levels: class 0 (2 of 3 points): 1 − 1/2 = 0.5, class 1: 1
    np.testing.assert_allclose(graph_cross_ratio(G, codes), [0.75 / 0.5, 0.0, 1.0])


def test_the_engine_is_chosen_once():
    assert isinstance(choose_engine("numba", None, "auto", "auto", 2), NumbaEngine)
    torch = pytest.importorskip("torch")
    engine = choose_engine("torch", "cpu", "auto", "exact", 2)
    assert engine.name == "torch" and engine.device == torch.device("cpu")
    with pytest.raises(ValueError, match="Barnes-Hut"):
        choose_engine("torch", "cpu", "auto", "bh", 2)


def test_fuzzy_graph_family_keeps_umaps_graph(rng):
    from ctsne.affinities.fuzzy import fuzzy_graph
    from ctsne.neighbors.search import nearest_neighbors

    X, codes = _mixed(rng, n=200)
    got = Standard().build(NeighborLists(X, codes), FuzzyGraph(12))
    idx, dist = nearest_neighbors(X, 11)
    assert abs(got.P - fuzzy_graph(idx, dist, 12)).max() == 0.0


@pytest.mark.filterwarnings("ignore:.*at the same distance")  # the copies tie, too
def test_every_estimator_warns_of_duplicate_rows(rng):
    X = rng.normal(size=(120, 3))
    X[60:70] = X[0]  # ten copies of one row
    for model in (ConditionalUMAP(n_neighbors=8, **FAST_GRAPH),
                  ConditionalLargeVis(perplexity=5.0, **FAST_GRAPH),
                  ConditionalTSNE(**FAST_TSNE)):
        with pytest.warns(UserWarning, match="11 of 120 points have an exact duplicate"):
            model.fit(X)


@pytest.mark.parametrize("make", [ConditionalTSNE, ConditionalUMAP, ConditionalLargeVis])
def test_an_unknown_metric_is_refused_with_the_closest_name(make, rng, monkeypatch):
    def no_search(*args, **kwargs):
        raise AssertionError("the neighbour search ran before the metric was checked")

    monkeypatch.setattr(provider, "nearest_neighbors", no_search)
    with pytest.raises(ValueError, match="did you mean 'cosine'"):
        make(metric="cosin").fit(rng.normal(size=(40, 3)))

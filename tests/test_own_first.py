"""The standard kNN lists found class by class (ctsne.neighbors.own_first): the same lists
as the one search over all points, on separated, partly overlapping and mixed classes,
and "auto"'s P identical whichever order ran."""

import numpy as np
import pytest

from ctsne.affinities.modes import input_affinities
from ctsne.affinities.standard import joint_affinities
from ctsne.neighbors import own_first
from ctsne.neighbors.own_first import near_other_share, own_first_lists
from ctsne.neighbors.search import nearest_neighbors


def _classes(rng, n, L, gap):
    """Four clusters in 5-D, repeated in L classes shifted ``gap`` apart along one axis."""
    codes = rng.integers(0, L, n)
    centres = rng.normal(scale=3.0, size=(4, 5))
    X = centres[rng.integers(0, 4, n)] + rng.normal(size=(n, 5))
    X[:, 0] += gap * codes
    return X, codes


@pytest.mark.parametrize("gap", [40.0, 4.0, 0.0])  # apart, touching, mixed
def test_own_first_gives_the_standard_search_lists(gap, rng):
    X, codes = _classes(rng, 3000, 3, gap)
    k = 30
    want_idx, want_dist = nearest_neighbors(X, k, method="exact")
    idx, dist, own_idx, own_dist = own_first_lists(X, codes, k)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)
    assert idx.dtype == want_idx.dtype
    searched_again = np.any(idx != own_idx, axis=1).mean()
    assert searched_again == {40.0: 0.0, 4.0: pytest.approx(0.5, abs=0.45),
                              0.0: pytest.approx(1.0, abs=0.01)}[gap], searched_again
    # the own-class lists: each class searched alone, by brute force here
    for c in range(3):
        rows = np.flatnonzero(codes == c)
        D = np.linalg.norm(X[rows, None] - X[None, rows], axis=2)
        np.fill_diagonal(D, np.inf)
        order = np.argsort(D, axis=1)[:, :k]
        np.testing.assert_array_equal(own_idx[rows], rows[order])
        np.testing.assert_allclose(own_dist[rows], np.take_along_axis(D, order, axis=1),
                                   rtol=1e-12)


def test_near_other_share_counts_points_near_another_class(rng):
    X, codes = _classes(rng, 3000, 3, 40.0)
    assert near_other_share(X, codes, 30) == 0.0
    mixed = rng.integers(0, 3, len(codes))
    assert near_other_share(X, mixed, 30) == 1.0
    # touching classes: exactly the sampled points whose own k-th neighbour is farther
    # than their nearest point of another class
    X, codes = _classes(rng, 3000, 2, 6.0)
    sample = np.sort(np.random.default_rng(0).choice(3000, 1000, replace=False))
    D = np.linalg.norm(X[sample, None] - X[None, :], axis=2)
    D[np.arange(len(sample)), sample] = np.inf
    same = codes[None, :] == codes[sample, None]
    kth_own = np.sort(np.where(same, D, np.inf), axis=1)[:, 29]
    near_other = np.where(same, np.inf, D).min(axis=1)
    want = float(np.mean(near_other <= kth_own * (1 + own_first._WIDEN)))  # its radius
    assert 0.0 < want < 1.0
    assert near_other_share(X, codes, 30) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("gap", [40.0, 0.0])  # auto balances / keeps the standard P
def test_auto_builds_the_same_P_in_either_order(gap, rng, monkeypatch):
    X, codes = _classes(rng, 4000, 3, gap)
    before = input_affinities(X, 10.0, codes, "auto")
    calls = []
    real = own_first.own_first_lists

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(own_first, "OWN_FIRST_FROM", 1000)
    monkeypatch.setattr(own_first, "own_first_lists", counted)
    after = input_affinities(X, 10.0, codes, "auto")
    # the probe sends mixed classes to the standard search first
    assert len(calls) == (1 if gap else 0)
    assert after.mode == before.mode == ("balanced" if gap else "standard")
    for P in (before.P, after.P):
        P.sort_indices()
    np.testing.assert_array_equal(after.P.indptr, before.P.indptr)
    np.testing.assert_array_equal(after.P.indices, before.P.indices)
    np.testing.assert_array_equal(after.P.data, before.P.data)
    if not gap:  # kept: t-SNE's own P
        np.testing.assert_array_equal(after.P.data, joint_affinities(X, 10.0).data)


def test_the_order_needs_an_exact_tree_and_large_classes(monkeypatch, rng):
    # a class with fewer points than k: the class-by-class order is not used
    X, codes = _classes(rng, 2000, 3, 40.0)
    codes[:5] = 3
    monkeypatch.setattr(own_first, "OWN_FIRST_FROM", 1000)
    assert not own_first.use_own_first(2000, 5, 30, codes, "auto", "euclidean")
    assert own_first.use_own_first(2000, 5, 30, np.minimum(codes, 2), "auto", "euclidean")
    assert not own_first.use_own_first(2000, 5, 30, np.minimum(codes, 2), "auto", "cosine")
    assert not own_first.use_own_first(2000, 20, 30, np.minimum(codes, 2), "auto",
                                       "euclidean")
    assert not own_first.use_own_first(2000, 5, 30, np.minimum(codes, 2), "approx",
                                       "euclidean")


def test_conditional_umap_builds_the_same_graph_in_either_order(rng, monkeypatch):
    from ctsne import ConditionalUMAP

    X, codes = _classes(rng, 3000, 3, 40.0)

    def fitted():
        return ConditionalUMAP(n_neighbors=15, n_epochs=2, random_state=0,
                               n_jobs=1).fit(X, codes)

    before = fitted()
    calls = []
    real = own_first.own_first_lists
    monkeypatch.setattr(own_first, "OWN_FIRST_FROM", 1000)
    monkeypatch.setattr(own_first, "own_first_lists",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    after = fitted()
    assert calls == [1] and after.affinities_ == before.affinities_ == "balanced"
    for G in (before.graph_, after.graph_):
        G.sort_indices()
    np.testing.assert_array_equal(after.graph_.indices, before.graph_.indices)
    np.testing.assert_array_equal(after.graph_.data, before.graph_.data)

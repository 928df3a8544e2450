"""Label-balanced and revised affinities, the pooled other-class search, and "auto"."""

import warnings

import numpy as np
import pytest

from ctsne import ConditionalTSNE
from ctsne.affinities import balanced
from ctsne.affinities.balanced import (
    balanced_affinities,
    balanced_from_lists,
    balanced_lists,
    revised_affinities,
)
from ctsne.affinities.modes import input_affinities
from ctsne.metrics import knn_label_homogeneity
from ctsne.neighbors import by_class as label_neighbors
from ctsne.neighbors import pooled, search
from ctsne.neighbors.pooled import pooled_other_neighbors


def _bisect(d2: np.ndarray, perplexity: float) -> np.ndarray:
    """Gaussian weights on squared distances with the given perplexity (plain bisection)."""
    if len(d2) == 1:
        return np.ones(1)
    lo, hi = 1e-12, 1e12
    for _ in range(100):
        beta = np.sqrt(lo * hi)
        w = np.exp(-(d2 - d2.min()) * beta)
        p = w / w.sum()
        H = -np.sum(p[p > 0] * np.log(p[p > 0]))
        if H > np.log(perplexity):
            lo = beta
        else:
            hi = beta
    return p


def _trimmed(p: np.ndarray, tail: float) -> np.ndarray:
    """``p`` without the entries whose value v has Σ{p ≤ v} ≤ tail, summing to 1 again."""
    mass_at_or_below = np.array([p[p <= v].sum() for v in p])
    kept = np.where(mass_at_or_below <= tail, 0.0, p)
    return kept / kept.sum()


def _block(D, i, members, width, perplexity, tail=0.0):
    """Row i's ``width`` nearest ``members`` and their calibrated weights, the block's
    tail trimmed."""
    members = members[members != i]
    near = members[np.argsort(D[i, members])[:width]]
    return near, _trimmed(_bisect(D[i, near] ** 2, perplexity), tail)


def _separated(rng, n=120, sizes=(50, 45, 25), shift=40.0):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(size=(sum(sizes), 4)) + shift * codes[:, None]
    return X, codes


def _check_P(P, codes):
    n = len(codes)
    assert abs(P.sum() - 1) < 1e-12 and P.min() >= 0
    assert abs(P - P.T).max() < 1e-15
    assert P.diagonal().max() == 0
    C = P.tocoo()
    cross = np.zeros(n, dtype=bool)
    cross[C.row[codes[C.row] != codes[C.col]]] = True
    assert cross.all(), "every point needs neighbours in other classes"


@pytest.mark.parametrize("tail", [0.0, balanced.TAIL_MASS, 0.1])
def test_balanced_blocks_match_a_dense_computation(tail, rng, monkeypatch):
    monkeypatch.setattr(balanced, "TAIL_MASS", tail)
    X, codes = _separated(rng)
    n, perp, w = len(codes), 5.0, 0.4  # k = 15; other blocks of 10 at perplexity 10/3
    P = balanced_affinities(X, codes, perp, within_weight=w, neighbors="exact")
    _check_P(P, codes)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    sizes = np.bincount(codes)
    C = np.zeros((n, n))
    for i in range(n):
        c = codes[i]
        own = np.flatnonzero(codes == c)
        width = min(15, len(own) - 1)
        near, p = _block(D, i, own, width, max(1.0, perp * width / 15), tail)
        C[i, near] = w * p
        for m in set(range(3)) - {c}:
            members = np.flatnonzero(codes == m)
            width = min(10, len(members))
            near, p = _block(D, i, members, width, max(1.0, perp * width / 15), tail)
            C[i, near] = (1 - w) * sizes[m] / (n - sizes[c]) * p
    np.testing.assert_allclose(P.toarray(), (C + C.T) / (2 * n), rtol=1e-6, atol=1e-12)
    if tail > 0:  # the trim removed entries (untrimmed, every row holds 15 + 2·10)
        assert (C > 0).sum() < n * 35


def test_revised_matches_a_dense_computation(rng):
    X, codes = _separated(rng, sizes=(40, 30, 20, 10))
    n, perp, alpha = len(codes), 4.0, 0.3  # k = 12
    P = revised_affinities(X, codes, perp, within_weight=alpha, neighbors="exact")
    _check_P(P, codes)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    C = np.zeros((n, n))
    for i in range(n):
        own = np.flatnonzero(codes == codes[i])
        width = min(12, len(own) - 1)
        near, p = _block(D, i, own, width, max(1.0, perp * width / 12))
        C[i, near] = alpha * p / (1 + alpha)
        near, p = _block(D, i, np.flatnonzero(codes != codes[i]), 12, perp)
        C[i, near] = p / (1 + alpha)
    np.testing.assert_allclose(P.toarray(), (C + C.T) / (2 * n), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("k, n_indices, rows_indexed", [
    (3, 2 * 6, 6 * 400),  # classes of 10 > 2k + 1: two indices per bit, ⌈log₂ 40⌉ = 6 bits
    (10, 1, 400),  # classes of 10 ≤ 2k + 1: one search of k + 10 over all points
])
def test_pooled_search_is_exact_and_uses_few_indices(k, n_indices, rows_indexed, rng,
                                                     monkeypatch):
    L, n = 40, 400
    codes = rng.permutation(np.arange(n) % L)
    X = rng.normal(size=(n, 3)) + 0.5 * codes[:, None]
    built = []

    class Counting(label_neighbors.SearchIndex):
        def __init__(self, X, rows, *args, **kwargs):
            built.append(len(rows))
            super().__init__(X, rows, *args, **kwargs)

    monkeypatch.setattr(label_neighbors, "SearchIndex", Counting)
    idx, dist = pooled_other_neighbors(X, codes, k, method="exact")
    assert len(built) == n_indices and sum(built) == rows_indexed  # not 40 searches
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    D[codes[:, None] == codes[None, :]] = np.inf
    ref = np.argsort(D, axis=1)[:, :k]
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.sort(ref, axis=1))
    np.testing.assert_allclose(dist, np.take_along_axis(D, ref, axis=1), rtol=1e-10)
    # with 40 classes the balanced P pools the other classes the same way
    _check_P(balanced_affinities(X, codes, k / 3, neighbors="exact"), codes)


def test_pooled_lists_skip_the_own_class_in_one_block_tree_search(rng, monkeypatch):
    # 10 features, searched by the block tree: classes up to SKIP_OWN_UP_TO points ask
    # one search over all points that skips their class; larger classes ask per bit
    monkeypatch.setattr(search, "BLOCK_TREE_FROM", 1000)
    monkeypatch.setattr(pooled, "SKIP_OWN_UP_TO", 60)
    sizes = np.r_[np.full(20, 40), 200, 300, 4]  # 23 classes; the last smaller than k
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    n, k = len(codes), 20
    X = rng.normal(size=(n, 10)) + rng.normal(scale=3.0, size=(len(sizes), 10))[codes]
    skipped, built = [], []
    real = pooled._skip_own_search

    def spy(X, codes, k, rows, idx, dist):
        skipped.append(np.sort(rows))
        real(X, codes, k, rows, idx, dist)

    class Counting(label_neighbors.SearchIndex):
        def __init__(self, X, rows, *args, **kwargs):
            built.append(len(rows))
            super().__init__(X, rows, *args, **kwargs)

    monkeypatch.setattr(pooled, "_skip_own_search", spy)
    monkeypatch.setattr(label_neighbors, "SearchIndex", Counting)
    idx, dist = pooled_other_neighbors(X, codes, k, method="exact")
    np.testing.assert_array_equal(skipped[0], np.flatnonzero(np.bincount(codes)[codes] <= 60))
    # the two large classes (20 = 10100₂, 21 = 10101₂) ask per bit, ⌈log₂ 23⌉ = 5: both
    # sides of bit 0, the other side of each bit they share
    assert len(built) == 6
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    D[codes[:, None] == codes[None, :]] = np.inf
    ref = np.argsort(D, axis=1)[:, :k]
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.sort(ref, axis=1))
    np.testing.assert_allclose(dist, np.take_along_axis(D, ref, axis=1), rtol=1e-12)
    # the same lists as before this search: per bit for every class
    monkeypatch.setattr(pooled, "SKIP_OWN_UP_TO", 0)
    idx0, dist0 = pooled_other_neighbors(X, codes, k, method="exact")
    np.testing.assert_array_equal(idx0, idx)
    np.testing.assert_array_equal(dist0, dist)


def test_skipping_search_leaves_empty_slots_and_needs_many_classes(rng, monkeypatch):
    monkeypatch.setattr(search, "BLOCK_TREE_FROM", 1000)
    codes = np.r_[np.zeros(1300, dtype=np.int64), np.arange(1, 9)]  # 9 classes, 4 bits
    X = rng.normal(size=(len(codes), 10))
    calls = []
    real = pooled._skip_own_search
    monkeypatch.setattr(pooled, "_skip_own_search",
                        lambda *a: calls.append(1) or real(*a))
    idx, dist = pooled_other_neighbors(X, codes, 20, method="exact")
    assert calls == [1]
    big = np.arange(1300)
    # a point of the large class has 8 points elsewhere: those, nearest first, then
    # empty slots (the point itself, inf)
    D = np.sqrt(((X[big, None] - X[None, 1300:]) ** 2).sum(-1))
    np.testing.assert_array_equal(idx[big, :8], 1300 + np.argsort(D, axis=1, kind="stable"))
    np.testing.assert_allclose(dist[big, :8], np.sort(D, axis=1), rtol=1e-12)
    np.testing.assert_array_equal(idx[big, 8:], np.repeat(big[:, None], 12, axis=1))
    assert np.isinf(dist[big, 8:]).all()
    # two classes (revised ct-SNE's pooled list): per bit, not skipping (one far search)
    pooled_other_neighbors(X, (codes > 0).astype(np.int64), 20, method="exact")
    assert calls == [1]


def test_sampled_own_reads_count_the_class_inside_the_kth_other_point(rng, monkeypatch):
    from scipy.spatial.distance import cdist

    monkeypatch.setattr(pooled, "_SAMPLE_CHUNK", 70)  # several chunks on both sides
    codes = rng.permutation(np.repeat(np.arange(4), [300, 90, 120, 5]))
    X = rng.normal(size=(len(codes), 6)) + 2.0 * (codes == 0)[:, None]
    k = 25
    for c in range(4):
        rows = np.flatnonzero(codes == c)
        sample = rows[np.linspace(0, len(rows) - 1,
                                  min(pooled.SKIP_SAMPLE, len(rows))).astype(np.int64)]
        D = cdist(X[sample], X)
        kth = np.sort(D[:, codes != c], axis=1)[:, k - 1]
        want = np.mean((D[:, codes == c] < kth[:, None]).sum(axis=1))
        assert pooled.sampled_own_reads(X, codes, c, k) == want
    # the class of 5 has 510 other points around it, so it reads little of itself; the
    # shifted class of 300 reads a good part of itself
    assert pooled.sampled_own_reads(X, codes, 3, k) <= 5
    assert pooled.sampled_own_reads(X, codes, 0, k) > 50
    # a class with fewer than k points elsewhere: its queries never find k, and read it all
    few = np.r_[np.zeros(300, dtype=np.int64), np.repeat(np.arange(1, 9), 2)]
    assert pooled.sampled_own_reads(rng.normal(size=(316, 6)), few, 0, k) == 300


def test_a_large_class_among_the_others_skips_its_own_class(rng, monkeypatch):
    # SKIP_OWN_UP_TO = 60: classes of 40 skip their class; of the two larger ones, the
    # one spread among the others reads little of itself and skips it too, while the one
    # lying apart reads all of itself and asks per bit
    monkeypatch.setattr(search, "BLOCK_TREE_FROM", 1000)
    monkeypatch.setattr(pooled, "SKIP_OWN_UP_TO", 60)
    centres = rng.normal(scale=3.0, size=(21, 10))
    codes = np.r_[np.repeat(np.arange(20), 40), np.full(300, 20), np.full(200, 21)]
    where = np.r_[np.repeat(np.arange(20), 40), np.arange(300) % 20, np.full(200, 20)]
    X = centres[where] + rng.normal(size=(len(codes), 10))
    X[codes == 21] += 30.0
    order = rng.permutation(len(codes))
    X, codes = X[order], codes[order]
    k = 20
    np.testing.assert_array_equal(pooled.skipping_classes(X, codes, k), np.arange(22) < 21)
    np.testing.assert_array_equal(pooled.skipping_classes(X, codes, k, until_refused=True),
                                  np.arange(22) < 21)
    skipped = []
    real = pooled._skip_own_search
    monkeypatch.setattr(pooled, "_skip_own_search",
                        lambda X, codes, k, rows, idx, dist: skipped.append(np.sort(rows))
                        or real(X, codes, k, rows, idx, dist))
    idx, dist = pooled_other_neighbors(X, codes, k, method="exact")
    np.testing.assert_array_equal(skipped[0], np.flatnonzero(codes < 21))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    D[codes[:, None] == codes[None, :]] = np.inf
    ref = np.argsort(D, axis=1)[:, :k]
    mixed = codes == 20  # exact lists (the class apart's come from the bit searches)
    np.testing.assert_array_equal(np.sort(idx[mixed], axis=1), np.sort(ref[mixed], axis=1))
    np.testing.assert_allclose(dist[mixed], np.take_along_axis(D, ref, axis=1)[mixed],
                               rtol=1e-12)


def test_reused_standard_lists_give_the_same_balanced_p(rng):
    from ctsne.neighbors.search import nearest_neighbors

    X, codes = _separated(rng, sizes=(60, 60), shift=1.5)
    idx, dist = nearest_neighbors(X, 15, method="exact")
    mask = np.all(codes[idx] == codes[:, None], axis=1)
    assert 0 < mask.sum() < len(mask)  # some rows reuse their list, others search
    a = balanced_affinities(X, codes, 5.0, neighbors="exact", known=(idx, dist, mask))
    b = balanced_affinities(X, codes, 5.0, neighbors="exact")
    np.testing.assert_allclose(a.toarray(), b.toarray(), rtol=1e-12, atol=1e-15)
    X, codes = _separated(rng, sizes=(60, 60), shift=6.0)
    got = input_affinities(X, 5.0, codes, "auto", neighbors="exact")
    assert got.mode == "balanced" and got.standard_mixing.separates
    # each point puts its class's chosen share across (ctsne.affinities.cross_share):
    # symmetrising keeps the total, so P's cross mass is their mean over the points
    shares = got.cross_share.class_share[codes]
    assert got.mixing.cross == pytest.approx(shares.mean(), rel=1e-9)
    assert got.cross_share.trust > 0.9  # a shifted copy: its counterparts are trusted


def test_reused_lists_with_only_the_reused_rows_distances_give_the_same_p(rng):
    from ctsne.neighbors.by_class import own_class_neighbors, own_class_rows
    from ctsne.neighbors.search import nearest_neighbors

    X, codes = _separated(rng, sizes=(60, 60), shift=1.5)
    idx, dist = nearest_neighbors(X, 15, method="exact")
    mask = own_class_rows(idx, codes)
    np.testing.assert_array_equal(mask, np.all(codes[idx] == codes[:, None], axis=1))
    assert 0 < mask.sum() < len(mask)
    full = own_class_neighbors(X, codes, 15, method="exact", known=(idx, dist, mask))
    compact = own_class_neighbors(X, codes, 15, method="exact",
                                  known=(idx, dist[mask], mask))
    np.testing.assert_array_equal(full[0], compact[0])
    np.testing.assert_array_equal(full[1], compact[1])
    # the provider keeps exactly those rows' distances, taken before a caller calibrates
    # the lists in place, and its own-class lists are the ones built from them
    from ctsne.neighbors.provider import NeighborLists

    lists = NeighborLists(X, codes, method="exact")
    got_idx, got_dist = lists.standard_for_classes(15)[:2]
    np.testing.assert_array_equal(got_idx, idx)
    got_dist[:] = -1.0  # overwritten, as calibration overwrites them
    own = lists.own_class(15)
    np.testing.assert_array_equal(own[0], compact[0])
    np.testing.assert_array_equal(own[1], compact[1])
    # auto's balanced P (which reuses the kept rows) is the one built from the whole
    # table, on classes close enough that some rows list the other class
    X, codes = _separated(rng, sizes=(60, 60), shift=2.0)
    got = input_affinities(X, 5.0, codes, "auto", neighbors="exact")
    idx, dist = nearest_neighbors(X, 15, method="exact")
    kept = own_class_rows(idx, codes)
    assert got.mode == "balanced" and 0 < kept.sum() < len(codes)
    lists = balanced_lists(X, codes, 5.0, neighbors="exact",
                           known=(idx, dist, np.all(codes[idx] == codes[:, None], 1)))
    want = balanced_from_lists(lists, 1.0 - got.cross_share.class_share, 5.0)
    np.testing.assert_allclose(got.P.toarray(), want.toarray(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("k", [0, 1, 7, 12, 40])
def test_own_class_rows_matches_its_definition(k, rng):
    from ctsne.neighbors.by_class import own_class_rows

    codes = rng.integers(0, 300, 500)  # more classes than int8 holds
    codes[:250] = 3  # many rows wholly own-class
    q = 0.5 ** (1 / max(k, 1))  # about half of class 3's rows list only class 3
    idx = np.where(rng.random((500, k)) < q, rng.integers(0, 250, (500, k)),
                   rng.integers(0, 500, (500, k)))
    # the other rows list themselves first: they pass the first column and fall at a
    # later one (screened out), while class 3's rows mostly pass (read whole)
    idx[250:, :1] = np.arange(250, 500)[:, None]
    want = np.all(codes[idx] == codes[:, None], axis=1)
    np.testing.assert_array_equal(own_class_rows(idx, codes), want)
    assert k == 0 or 0 < want.sum() < 500


def test_approximate_classes_reuse_the_standard_lists_and_search_the_rest_exactly(
        rng, monkeypatch):
    import pynndescent

    from ctsne.neighbors.by_class import own_class_neighbors
    from ctsne.neighbors.search import nearest_neighbors

    X, codes = _separated(rng, sizes=(150, 150), shift=2.5)
    idx, dist = nearest_neighbors(X, 12, method="exact")
    mask = np.all(codes[idx] == codes[:, None], axis=1)
    assert 0.75 < mask.mean() < 1

    def no_graph(*args, **kwargs):
        raise AssertionError("the class should not build an approximate index")

    monkeypatch.setattr(pynndescent, "NNDescent", no_graph)
    monkeypatch.setattr(search, "APPROX_ABOVE", 50)  # both classes "large"
    monkeypatch.setattr(search, "TREE_MAX_N", 50)
    got_idx, got_dist = own_class_neighbors(X, codes, 12, known=(idx, dist, mask))
    exact_idx, exact_dist = own_class_neighbors(X, codes, 12, method="exact")
    np.testing.assert_array_equal(got_idx[mask], idx[mask])
    np.testing.assert_array_equal(got_idx[~mask], exact_idx[~mask])
    direct = np.linalg.norm(X[:, None] - X[got_idx], axis=2)
    np.testing.assert_allclose(got_dist, direct, rtol=1e-12)  # the tree: pair by pair
    # classes this small search by scikit-learn's ‖x‖² + ‖y‖² − 2x·y, which cancels:
    # its error on d is about eps·(‖x‖² + ‖y‖²)/d, so a fixed rtol would hinge on rounding
    sq = np.einsum("ij,ij->i", X, X)
    tol = 16 * np.finfo(float).eps * (sq[:, None] + sq[exact_idx]) / exact_dist
    assert np.all(np.abs(exact_dist - direct) <= tol)


def test_approximate_classes_in_many_features_reuse_the_lists_up_to_the_pair_cap(
        rng, monkeypatch):
    """In more than TREE_DIMS features the rest is searched by brute force (no tree): the
    same lists as the exact class search; above BRUTE_PAIRS the class keeps its own
    approximate index."""
    import pynndescent

    from ctsne.neighbors.by_class import own_class_neighbors
    from ctsne.neighbors.search import nearest_neighbors

    codes = np.repeat([0, 1], 150)
    X = rng.normal(size=(300, 20)) + 1.2 * codes[:, None]
    assert X.shape[1] > search.TREE_DIMS
    idx, dist = nearest_neighbors(X, 12, method="exact")
    mask = np.all(codes[idx] == codes[:, None], axis=1)
    rest = np.bincount(codes[~mask], minlength=2)
    assert np.all(rest > 0) and np.all(rest <= label_neighbors.REUSE_REST_UP_TO * 150)

    def no_graph(*args, **kwargs):
        raise AssertionError("the class should not build an approximate index")

    exact_idx, _ = own_class_neighbors(X, codes, 12, method="exact")
    monkeypatch.setattr(pynndescent, "NNDescent", no_graph)
    monkeypatch.setattr(search, "APPROX_ABOVE", 50)  # both classes "large"
    monkeypatch.setattr(label_neighbors, "BRUTE_UP_TO", 0)  # not one brute-force call
    got_idx, got_dist = own_class_neighbors(X, codes, 12, known=(idx, dist, mask))
    np.testing.assert_array_equal(got_idx[mask], idx[mask])
    np.testing.assert_array_equal(got_idx[~mask], exact_idx[~mask])
    # distances against a direct computation (both sides by scikit-learn's brute force,
    # whose ‖x‖² + ‖y‖² − 2x·y cancels: a tolerance scaled by the norms, as above)
    direct = np.linalg.norm(X[:, None] - X[got_idx], axis=2)
    sq = np.einsum("ij,ij->i", X, X)
    tol = 16 * np.finfo(float).eps * (sq[:, None] + sq[got_idx]) / direct
    assert np.all(np.abs(got_dist - direct) <= tol)
    # one pair fewer than the smaller class's rest needs: that class builds its index
    monkeypatch.setattr(label_neighbors, "BRUTE_PAIRS", rest.min() * 150 - 1)
    with pytest.raises(AssertionError, match="approximate index"):
        own_class_neighbors(X, codes, 12, known=(idx, dist, mask))


def test_far_queries_into_approximate_classes_in_many_features_are_exact(
        rng, monkeypatch, graphs_built):
    """Far queries into a class searched approximately go to brute force (exact lists)
    up to BRUTE_PAIRS, to pynndescent's graph (built only then) above."""
    from ctsne.neighbors.by_class import other_class_neighbors

    built = graphs_built
    codes = np.repeat([0, 1, 2], [120, 100, 80])
    X = rng.normal(size=(300, 20)) + 3.0 * codes[:, None]
    monkeypatch.setattr(search, "APPROX_ABOVE", 50)  # every class "large"
    idx, dist = other_class_neighbors(X, codes, 7)
    assert not built
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    for t in range(2):
        m = np.where(t < codes, t, t + 1)  # block t's class for each row
        for c in range(3):
            rows = np.flatnonzero(codes == c)
            cols = np.flatnonzero(codes == m[rows[0]])
            want = cols[np.argsort(D[np.ix_(rows, cols)], axis=1)[:, :7]]
            got = idx[rows, 7 * t:7 * t + 7]
            # as sets: two neighbours within rounding of each other may swap places
            np.testing.assert_array_equal(np.sort(got, axis=1), np.sort(want, axis=1))
            np.testing.assert_allclose(dist[rows, 7 * t:7 * t + 7],
                                       np.take_along_axis(D[rows], got, axis=1), rtol=1e-9)
    monkeypatch.setattr(label_neighbors, "BRUTE_PAIRS", 1)
    other_class_neighbors(X, codes, 7)
    assert len(built) == 3  # one graph per class, for its far queries


def test_auto_balances_the_paper_example_at_its_target_share():
    """The paper's synthetic priors are partly mixed in the standard P (10–35 % across
    against random levels of 0.75–0.95) and their classes are copies (trust > 0.9):
    "auto" gives each class its target share τ·e/2 (seed 0: removal of f₁₋₄ and the
    view of f₅₋₆ both better than with the standard P, REPORT §12)."""
    from ctsne.datasets import make_synthetic

    data = make_synthetic(random_state=0)
    for prior in (data.f14, data.f56, data.f16):
        got = input_affinities(data.X, 30.0, prior, "auto")
        share = got.cross_share
        assert got.mode == "balanced" and not got.mixing.separates and share.trust > 0.9
        assert np.all(share.class_standard < share.class_target)
        np.testing.assert_allclose(share.class_share, share.class_target)
        # the balanced P carries the chosen shares (symmetrising moves them a little)
        assert got.mixing.cross == pytest.approx(np.average(
            share.class_share, weights=np.bincount(prior)), abs=0.03)
    model = ConditionalTSNE(early_exaggeration_iter=0, n_iter=0, random_state=0)
    model.fit(data.X, data.f14)
    assert model.affinities_ == "balanced" and model.prior_mixing_.cross_share.trust > 0.9


def test_auto_removes_a_separating_prior_that_standard_keeps(rng):
    """Two batches: the same three clusters, one batch shifted far away."""
    n = 300
    cluster = rng.integers(0, 3, n)
    batch = rng.integers(0, 2, n)
    X = 4.0 * np.eye(5)[cluster] + rng.normal(scale=0.5, size=(n, 5))
    X[batch == 1, 3:] += 8.0
    fast = {"method": "exact", "random_state": 0, "early_exaggeration_iter": 100,
            "n_iter": 200}
    with pytest.warns(UserWarning, match="affinities='balanced'"):
        std = ConditionalTSNE(affinities="standard", **fast).fit(X, batch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        auto = ConditionalTSNE(**fast).fit(X, batch)
    assert auto.affinities_ == "balanced" and std.affinities_ == "standard"
    assert std.prior_mixing_.separates and not auto.prior_mixing_.separates
    chance = float(np.sum((np.bincount(batch) / n) ** 2))
    assert knn_label_homogeneity(std.embedding_, batch, 10) > 0.9
    assert knn_label_homogeneity(auto.embedding_, batch, 10) < chance + 0.1
    assert knn_label_homogeneity(auto.embedding_, cluster, 10) > 0.9


@pytest.mark.parametrize("mode, w, beta, cross", [
    ("revised", 0.25, 1.0, 1 / 1.25),  # Heiter et al.: revised P, plain t-SNE Q
    ("revised", None, 0.01, 1 / 1.5),  # combined with ct-SNE's β'
    ("balanced", 0.3, 0.01, 0.7),
])
def test_each_row_puts_the_set_share_across(mode, w, beta, cross, rng):
    X, codes = _separated(rng, sizes=(30, 20, 25))
    model = ConditionalTSNE(affinities=mode, within_weight=w, beta=beta, n_iter=0,
                            early_exaggeration_iter=0, perplexity=5).fit(X, codes)
    assert model.affinities_ == mode and model.beta_ == pytest.approx(beta)
    # symmetrising keeps the total across classes: exactly the rows' share
    assert model.prior_mixing_.cross == pytest.approx(cross, rel=1e-9)


@pytest.mark.parametrize("combine", ["joint", "product"])
def test_several_priors_are_balanced_on_their_joint_classes(combine, rng):
    X, codes = _separated(rng, sizes=(30, 20, 25, 15))
    two = np.column_stack([codes // 2, codes % 2])  # the joint classes are the codes
    model = ConditionalTSNE(affinities="balanced", combine=combine, n_iter=0,
                            early_exaggeration_iter=0, perplexity=5).fit(X, two)
    ref = input_affinities(X, 5.0, codes, "balanced").P  # its shares from the rule
    np.testing.assert_allclose(model.P_.toarray(), ref.toarray(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("params, match", [
    ({"affinities": "bbknn"}, "affinities must be one of"),
    ({"within_weight": 1.5}, "within_weight must be"),
    ({"within_weight": "a"}, "within_weight must be"),
    ({"affinities": "balanced", "within_weight": 1.0}, "no weight"),
])
def test_bad_affinity_options_are_rejected(params, match, rng):
    with pytest.raises(ValueError, match=match):
        ConditionalTSNE(**params).fit(rng.normal(size=(50, 3)), np.arange(50) % 2)


def test_cli_passes_the_affinity_options(tmp_path, monkeypatch, capsys):
    import pickle

    from ctsne.interfaces.cli.main import main

    rng = np.random.default_rng(0)
    X, codes = _separated(rng, sizes=(40, 40), shift=20.0)
    lines = ["a,b,c,d,batch"] + [",".join(map(str, [*x, c])) for x, c in zip(X, codes,
                                                                           strict=True)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    base = ["embed", "d.csv", "--prior", "batch", "-o", "e.csv", "--perplexity", "5",
            "--n-iter", "10", "--exaggeration-iter", "10", "--seed", "0", "--threads", "1",
            "-q"]
    assert main([*base, "--affinities", "revised", "--within-weight", "0.3",
                 "--save-model", "m.pkl"]) == 0
    with open("m.pkl", "rb") as fh:
        model = pickle.load(fh)
    assert model.affinities_ == "revised" and model.within_weight == 0.3
    assert model.prior_mixing_.cross > 0.5  # 1 / (1 + α) of each row lies across
    assert main([*base, "-f", "--within-weight", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--within-weight must be" in err[0], err


def test_tsne_counterpart_of_a_balanced_fit_is_t_sne(rng):
    """A balanced P encodes the prior, so the counterpart builds t-SNE's P of the same
    data; a standard fit hands its own P over. Both start where the fit started."""
    from ctsne.affinities.standard import joint_affinities

    X = np.vstack([rng.normal(size=(60, 4)), rng.normal(size=(60, 4)) + 8.0])
    prior = np.repeat([0, 1], 60)
    fast = dict(perplexity=10.0, n_iter=20, early_exaggeration_iter=10, random_state=0,
                n_jobs=1)
    model = ConditionalTSNE(affinities="balanced", **fast).fit(X, prior)
    plain = model.tsne_counterpart()
    assert model.affinities_ == "balanced" and plain.affinities_ == "standard"
    assert plain.prior_ is None
    ref = joint_affinities(X, 10.0, random_state=0, n_jobs=1)
    assert abs(plain.P_ - ref).max() < 1e-12

    def across(P):  # the P mass between the two blobs
        C = P.tocoo()
        return C.data[prior[C.row] != prior[C.col]].sum()

    assert across(plain.P_) < 1e-3 and across(model.P_) > 0.04
    np.testing.assert_array_equal(plain.initial_embedding_, model.initial_embedding_)
    standard = ConditionalTSNE(affinities="standard", **fast).fit(X, prior)
    assert (standard.tsne_counterpart().P_ != standard.P_).nnz == 0


@pytest.mark.parametrize("p, tail, expected", [
    ([0.5, 0.3, 0.15, 0.04, 0.01], 0.06, [0.5, 0.3, 0.15, 0.0, 0.0]),  # 0.01 + 0.04 ≤ 0.06
    ([0.5, 0.3, 0.15, 0.04, 0.01], 0.045, [0.5, 0.3, 0.15, 0.04, 0.0]),
    ([0.4, 0.3, 0.1, 0.1, 0.1], 0.15, [0.4, 0.3, 0.1, 0.1, 0.1]),  # equal values go together
    ([0.4, 0.3, 0.1, 0.1, 0.1], 0.35, [0.4, 0.3, 0.0, 0.0, 0.0]),
    ([1.0], 0.5, [1.0]),
])
def test_trim_tail_by_hand(p, tail, expected):
    from ctsne.affinities.calibration import trim_tail

    p = np.array(p)
    trim_tail(p, tail)
    expected = np.array(expected)
    np.testing.assert_allclose(p, expected / expected.sum(), rtol=1e-15)


@pytest.mark.parametrize("in_place", [False, True])
def test_a_block_whose_distances_are_not_ascending_is_left_whole(in_place):
    from ctsne.affinities.calibration import calibrate_blocks

    dist = np.array([[0.5, 1.0, 2.0, 4.0, 3.0, 1.0, 1.5, 2.5, 3.5, 6.0]])
    starts, weights = np.array([0, 5, 10]), np.array([[0.5, 0.5]])

    def blocks(tail):
        d = dist.copy()
        out = d if in_place else np.empty_like(d)
        return calibrate_blocks(d, starts, 3.0, 10, weights, out, tail)
    whole, trimmed = blocks(0.0), blocks(0.2)
    d = dist.copy()  # the same numbers calibrated in place and into another table
    np.testing.assert_array_equal(
        calibrate_blocks(d, starts, 3.0, 10, weights, d, 0.2),
        calibrate_blocks(dist.copy(), starts, 3.0, 10, weights, np.empty_like(dist), 0.2))
    # unsorted: kept whole (the row's total is summed in another order: rounding)
    np.testing.assert_allclose(trimmed[0, :5], whole[0, :5], rtol=1e-14)
    assert np.all(trimmed[0, :5] > 0)
    assert trimmed[0, 9] == 0.0 < whole[0, 9]  # the sorted block lost its farthest entry
    np.testing.assert_allclose(trimmed[0, :5].sum(), 0.5, rtol=1e-15)  # shares kept
    np.testing.assert_allclose(trimmed[0, 5:].sum(), 0.5, rtol=1e-15)


def test_the_trim_keeps_each_blocks_share(rng):
    """Each block of a row keeps its weight exactly and loses at most ``tail`` of its
    own mass, its smallest entries; the reference is the untrimmed calibration."""
    from ctsne.affinities.calibration import calibrate_blocks

    n, starts = 500, np.array([0, 30, 40, 50])
    dist = rng.gamma(2.0, size=(n, 50))
    blocks = list(zip(starts[:-1], starts[1:], strict=True))
    dist = np.hstack([np.sort(dist[:, a:b], axis=1) for a, b in blocks])
    weights = rng.dirichlet(np.ones(3), size=n)
    whole, trimmed = np.empty_like(dist), np.empty_like(dist)
    calibrate_blocks(dist, starts, 10.0, 30, weights, whole)
    calibrate_blocks(dist, starts, 10.0, 30, weights, trimmed, tail=0.05)
    assert (trimmed == 0).sum() > n  # entries went
    for a, b in blocks:
        w, t = whole[:, a:b], trimmed[:, a:b]
        np.testing.assert_allclose(t.sum(1), w.sum(1), rtol=1e-12)
        lost = np.where(t == 0, w, 0.0).sum(1) / w.sum(1)
        assert lost.max() <= 0.05
        kept = t > 0
        np.testing.assert_allclose(t[kept], (w * (w.sum(1) / np.where(kept, w, 0).sum(1))
                                             [:, None])[kept], rtol=1e-12)
        # what went is the smallest: each dropped entry lies below each kept one
        assert np.all(np.where(kept, -np.inf, w).max(1) <= np.where(kept, w, np.inf).min(1))


def test_small_classes_leave_empty_slots_and_the_rest_is_exact(rng):
    """Classes of 1, 3 and 40 points, k = 6 own-class and 5 per other class: a brute-force
    reference, with the slots a class cannot fill holding the point itself at inf."""
    from ctsne.neighbors.by_class import other_class_neighbors, own_class_neighbors

    codes = np.repeat([0, 1, 2], [1, 3, 40])
    X = rng.normal(size=(len(codes), 3))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    n = len(codes)

    def expected(i, members, width):
        members = members[members != i]
        near = members[np.argsort(D[i, members], kind="stable")[:width]]
        pad = width - len(near)
        return (np.concatenate([near, np.full(pad, i)]),
                np.concatenate([D[i, near], np.full(pad, np.inf)]))

    idx, dist = own_class_neighbors(X, codes, 6, method="exact")
    for i in range(n):
        e_idx, e_dist = expected(i, np.flatnonzero(codes == codes[i]), 6)
        np.testing.assert_array_equal(idx[i], e_idx)
        np.testing.assert_allclose(dist[i], e_dist, rtol=1e-12)
    idx, dist = other_class_neighbors(X, codes, 5, method="exact")
    for i in range(n):
        parts = [expected(i, np.flatnonzero(codes == m), 5) for m in range(3) if m != codes[i]]
        np.testing.assert_array_equal(idx[i], np.concatenate([p[0] for p in parts]))
        np.testing.assert_allclose(dist[i], np.concatenate([p[1] for p in parts]), rtol=1e-12)

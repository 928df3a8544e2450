"""Standard lists merged from the balanced lists (ctsne.neighbors.merged), against exact
lists from dense distances computed here, and "auto"'s P through that order."""

import numpy as np
import pytest

from ctsne.affinities import modes
from ctsne.affinities.balanced import balanced_from_lists, balanced_lists
from ctsne.affinities.mixing import table_mixing
from ctsne.affinities.standard import joint_affinities, standard_conditional
from ctsne.neighbors import merged, provider, search
from ctsne.neighbors.merged import apart_share, merged_standard_lists


def _classes(rng, sizes, gap, dims=20):
    """Three clusters in ``dims`` features, repeated in each class, classes ``gap`` apart
    along one axis."""
    codes = np.repeat(np.arange(len(sizes)), sizes)
    centres = rng.normal(scale=3.0, size=(3, dims))
    X = centres[rng.integers(0, 3, len(codes))] + rng.normal(size=(len(codes), dims))
    X[:, 0] += gap * codes
    return X, codes


def _dense_lists(X, k):
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1)[:, :k]
    return idx, np.take_along_axis(D, idx, axis=1)


def _close(got, want, X, idx):
    # scikit-learn's brute force computes ‖x‖² + ‖y‖² − 2x·y, which cancels: its error on
    # d is about eps·(‖x‖² + ‖y‖²)/d
    sq = np.einsum("ij,ij->i", X, X)
    tol = 32 * np.finfo(float).eps * (sq[:, None] + sq[idx]) / want
    assert np.all(np.abs(got - want) <= tol)


@pytest.mark.parametrize("sizes, gap", [((150, 120, 90), 3.0),   # per-class blocks, touching
                                        ((40,) * 12, 2.0)])       # pooled, 12 classes
def test_merged_lists_are_the_exact_standard_lists(rng, sizes, gap):
    X, codes = _classes(rng, sizes, gap)
    k = 30
    lists = balanced_lists(X, codes, 10.0, neighbors="exact")
    assert lists.k == k
    want_idx, want_dist = _dense_lists(X, k)
    if lists.block_width is not None:
        # some rows have more points of one other class within their k-th distance than
        # that class's block holds: the exact search of the uncertain rows runs
        width = lists.block_width
        per_class = np.stack([(codes[want_idx] == m).sum(axis=1) for m in range(len(sizes))])
        per_class[codes, np.arange(len(codes))] = 0
        assert (per_class.max(axis=0) > width).any()
    idx, dist = merged_standard_lists(X, lists.own_idx, lists.own_dist, lists.other_idx,
                                      lists.other_dist, lists.block_width, k)
    assert idx.dtype == np.int32 and idx.shape == (len(codes), k)
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.sort(want_idx, axis=1))
    assert np.all(np.diff(dist, axis=1) >= 0)
    _close(np.sort(dist, axis=1), want_dist, X, want_idx)


def test_too_many_uncertain_rows_hand_back_to_the_standard_search(rng, monkeypatch):
    X, codes = _classes(rng, (150, 120, 90), 0.0)  # mixed: many uncertain rows
    lists = balanced_lists(X, codes, 10.0, neighbors="exact")
    monkeypatch.setattr(merged, "MERGE_SEARCH_PAIRS", 10 * len(codes))
    assert merged_standard_lists(X, lists.own_idx, lists.own_dist, lists.other_idx,
                                 lists.other_dist, lists.block_width, 30) is None


def test_apart_share_counts_points_nearer_another_class(rng):
    X, codes = _classes(rng, (150, 120, 90), 40.0)
    assert apart_share(X, codes, 30) == 0.0
    mixed = rng.permutation(codes)
    assert apart_share(X, mixed, 30) == 1.0
    # partly touching: every point's own k-th distance against its nearest other point
    X, codes = _classes(rng, (150, 120, 90), 5.0)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    same = codes[:, None] == codes[None, :]
    kth = np.sort(np.where(same, D, np.inf), axis=1)[:, 29]
    want = np.mean(np.where(same, np.inf, D).min(axis=1) <= kth)
    assert 0.05 < want < 0.95
    assert apart_share(X, codes, 30, sample=len(codes)) == pytest.approx(want, abs=1e-12)


def test_auto_through_merged_lists_gives_the_exact_lists_balanced_p(rng, monkeypatch,
                                                                    graphs_built):
    # 20 features above the patched APPROX_ABOVE, classes below it: "auto" merges the
    # lists and must never build pynndescent's graph for them
    X, codes = _classes(rng, (150, 120, 90), 12.0)
    monkeypatch.setattr(search, "APPROX_ABOVE", 200)
    built = graphs_built
    assert merged.merge_first(X, codes, 30, "auto", "euclidean")
    got = modes.input_affinities(X, 10.0, codes, "auto")
    assert got.mode == "balanced" and not built
    # the same P from the exact lists and the chosen shares, and the decision measured on
    # the exact standard P
    lists = balanced_lists(X, codes, 10.0, neighbors="exact")
    want = balanced_from_lists(lists, 1.0 - got.cross_share.class_share, 10.0)
    assert abs(got.P - want).max() == 0.0
    table = standard_conditional(X, 10.0, neighbors="exact")
    exact = table_mixing(table.idx, table.cond, codes)
    np.testing.assert_allclose(got.standard_mixing.class_cross, exact.class_cross,
                               rtol=1e-9, atol=1e-15)


def test_auto_keeping_the_standard_p_after_merging_gives_its_p(rng, monkeypatch,
                                                              graphs_built):
    X, codes = _classes(rng, (150, 120, 90), 12.0)
    monkeypatch.setattr(search, "APPROX_ABOVE", 200)  # merged, as above
    real = modes.already_mixed

    def keep(standard, ratio):  # as if the standard P were mixed enough
        choice = real(standard, ratio)
        if choice is None:
            standard.class_cross = standard.class_expected.copy()
            choice = real(standard, ratio)
        return choice

    monkeypatch.setattr(modes, "already_mixed", keep)
    assert merged.merge_first(X, codes, 30, "auto", "euclidean")
    got = modes.input_affinities(X, 10.0, codes, "auto", random_state=0)
    assert got.mode == "standard"
    assert len(graphs_built) == 1  # the standard search's, after the merged lists
    want = joint_affinities(X, 10.0, random_state=0)
    assert abs(got.P - want).max() == 0.0
    # the diagnostic is that P's (pynndescent's lists), not the merged table's
    searched = standard_conditional(X, 10.0, random_state=0)
    want_mixing = table_mixing(searched.idx, searched.cond, codes)
    np.testing.assert_array_equal(got.mixing.class_cross, want_mixing.class_cross)


def test_a_merge_handed_back_searches_the_standard_lists_once(rng, monkeypatch,
                                                              graphs_built):
    X, codes = _classes(rng, (150, 120, 90), 12.0)
    monkeypatch.setattr(search, "APPROX_ABOVE", 200)
    monkeypatch.setattr(merged, "MERGE_SEARCH_PAIRS", -1)  # every merge hands back
    got = modes.input_affinities(X, 10.0, codes, "auto", random_state=0)
    assert got.mode == "balanced" and len(graphs_built) == 1
    lists = balanced_lists(X, codes, 10.0, neighbors="exact")
    want = balanced_from_lists(lists, 1.0 - got.cross_share.class_share, 10.0)
    assert abs(got.P - want).max() == 0.0


# ---- many classes, the block tree: the standard lists merged exactly ----------------------

def _many_classes(rng, classes=12, size=150, dims=9, shift=6.0):
    """Four clusters repeated in every class, each class shifted: ``classes`` × ``size``
    points, and exact duplicates across and within classes (ties broken by index)."""
    codes = np.repeat(np.arange(classes), size)
    centres = rng.normal(scale=4.0, size=(4, dims))
    X = (centres[rng.integers(0, 4, len(codes))] + shift * rng.normal(size=(classes, dims))[codes]
         + rng.normal(size=(len(codes), dims)))
    X[[5, 6, 400]] = X[[size + 7, 7, 401]]  # copies in another class and in the own class
    return X, codes


_COPIES = pytest.mark.filterwarnings("ignore:.*exact duplicate")  # the copies are the point


@pytest.fixture
def small_block_tree(monkeypatch):
    """The block tree from 500 points, so that small data take the many-class path."""
    monkeypatch.setattr(search, "BLOCK_TREE_FROM", 500)


@_COPIES
def test_exactly_merged_lists_are_the_standard_search_lists(rng, small_block_tree):
    from ctsne.neighbors.own_first import class_tree_lists
    from ctsne.neighbors.pooled import pooled_other_neighbors

    X, codes = _many_classes(rng)
    k = 30
    assert merged.exact_merge(X, codes, k)
    own_idx, own_dist = class_tree_lists(X, codes, k)
    other_idx, other_dist = pooled_other_neighbors(X, codes, k, own_idx=own_idx)
    idx, dist = merged.exact_merged_lists(X, own_idx, own_dist, other_idx, other_dist, k)
    want_idx, want_dist = search.nearest_neighbors(X, k)
    np.testing.assert_array_equal(idx, want_idx)  # the same code: same lists, same ties
    np.testing.assert_array_equal(dist, want_dist)
    ref_idx, ref_dist = _dense_lists(X, k)  # and an independent reference
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-12)
    same = np.all(np.sort(idx, axis=1) == np.sort(ref_idx, axis=1), axis=1)
    assert same.mean() > 0.99  # the rest differ only at a tie with the k-th (copies)


@_COPIES
def test_exact_merge_needs_the_skipping_search_for_every_class(rng, small_block_tree,
                                                               monkeypatch):
    X, codes = _many_classes(rng)
    assert merged.exact_merge(X, codes, 30)
    assert not merged.exact_merge(X, codes % 5, 30)  # 5 classes: the bit searches
    wide = np.hstack([X, X[:, :11]])
    assert not merged.exact_merge(wide, codes, 30)  # no block tree in 20 features
    assert not merged.exact_merge(X, codes, 30, metric="cosine")
    from ctsne.neighbors import pooled
    # classes of 150 over SKIP_OWN_UP_TO: each skips its own class (and the merge is
    # exact) only where its sampled queries read at most that many of its points
    monkeypatch.setattr(pooled, "SKIP_OWN_UP_TO", 100)
    assert max(pooled.sampled_own_reads(X, codes, c, 30) for c in range(12)) > 100
    assert not merged.exact_merge(X, codes, 30)  # classes lying apart read themselves
    mixed = rng.permutation(codes)  # the same classes spread among each other
    assert max(pooled.sampled_own_reads(X, mixed, c, 30) for c in range(12)) < 20
    assert merged.exact_merge(X, mixed, 30)


def _spy(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)
    return calls


@_COPIES
def test_auto_with_the_balanced_lists_first_gives_the_p_it_chose_before(rng, small_block_tree,
                                                                         monkeypatch):
    X, codes = _many_classes(rng)
    merges = _spy(monkeypatch, provider, "exact_merged_lists")
    searches = _spy(monkeypatch, provider, "nearest_neighbors")
    got = modes.input_affinities(X, 10.0, codes, "auto")
    assert got.mode == "balanced" and merges == ["exact_merged_lists"]
    # the standard-first order: the standard search, then the balanced lists
    monkeypatch.setattr(provider, "exact_merge", lambda *a, **kw: False)
    want = modes.input_affinities(X, 10.0, codes, "auto")
    # the balanced-first order ran no standard search, the standard-first order one
    assert want.mode == "balanced" and len(searches) == 1
    assert abs(got.P - want.P).max() == 0.0
    np.testing.assert_array_equal(got.cross_share.class_share, want.cross_share.class_share)
    np.testing.assert_array_equal(got.standard_mixing.class_cross,
                                  want.standard_mixing.class_cross)


@_COPIES
def test_a_wrong_guess_keeps_the_standard_p_bit_for_bit(rng, small_block_tree, monkeypatch):
    X, codes = _many_classes(rng)
    codes = rng.permutation(codes)  # labels unrelated to the data: the standard P is kept
    monkeypatch.setattr(modes, "SHARE_OF_RANDOM", 10.0)  # past the probe's gate
    monkeypatch.setattr(modes, "switch_expected", lambda *a: True)
    merges = _spy(monkeypatch, provider, "exact_merged_lists")
    got = modes.input_affinities(X, 10.0, codes, "auto")
    assert merges and got.mode == "standard"
    assert abs(got.P - joint_affinities(X, 10.0)).max() == 0.0
    table = standard_conditional(X, 10.0)
    np.testing.assert_array_equal(got.mixing.class_cross,
                                  table_mixing(table.idx, table.cond, codes).class_cross)


@_COPIES
def test_unrelated_labels_go_standard_first_without_the_trust(rng, small_block_tree,
                                                             monkeypatch):
    X, codes = _many_classes(rng)
    codes = rng.permutation(codes)
    trusts = _spy(monkeypatch, modes, "counterpart_trust")
    merges = _spy(monkeypatch, provider, "exact_merged_lists")
    got = modes.input_affinities(X, 10.0, codes, "auto")
    assert got.mode == "standard" and not merges and not trusts


@_COPIES
def test_the_probe_and_the_standard_search_share_one_tree(rng, small_block_tree, monkeypatch):
    # the probe asks the standard search's block tree, which the search then reuses: one
    # tree built; the probe's rows are the scan's (duplicates across classes included),
    # and the kept P is affinities="standard"'s bit for bit
    from ctsne.affinities.mixing import sampled_rows
    from ctsne.neighbors.search import ExactIndex

    X, codes = _many_classes(rng)
    codes = rng.permutation(codes)
    index = ExactIndex(X)
    assert index.uses_blocks
    for a, b in zip(sampled_rows(X, codes, 10.0), sampled_rows(X, codes, 10.0, index=index),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    built = _spy(monkeypatch, provider, "ExactIndex")
    searched = _spy(monkeypatch, search, "ExactIndex")  # the search's own, not built
    got = modes.input_affinities(X, 10.0, codes, "auto")
    assert built == ["ExactIndex"] and not searched and got.mode == "standard"
    assert abs(got.P - joint_affinities(X, 10.0)).max() == 0.0


@_COPIES
def test_nine_classes_are_not_merged_from_per_class_blocks(rng, small_block_tree, monkeypatch):
    # nine classes pass the skipping search's bit count, but the balanced P gives each
    # other class a block of its own (eight other classes): those lists are not pooled
    X, codes = _many_classes(rng, classes=9)
    assert merged.exact_merge(X, codes, 30)
    merges = _spy(monkeypatch, provider, "exact_merged_lists")
    monkeypatch.setattr(modes, "SHARE_OF_RANDOM", 10.0)  # a guess for the balanced order
    monkeypatch.setattr(modes, "switch_expected", lambda *a: True)
    got = modes.input_affinities(X, 10.0, rng.permutation(codes), "auto")
    assert not merges and got.mode == "standard"
    assert abs(got.P - joint_affinities(X, 10.0)).max() == 0.0


def test_equal_distances_merge_in_the_order_of_their_squares(small_block_tree):
    from ctsne.neighbors.own_first import class_tree_lists
    from ctsne.neighbors.pooled import pooled_other_neighbors

    # two points whose squared distances to the origin, summed feature by feature as the
    # searches sum them, are 1.04 and the next float up: one square root, two squares
    a = np.array([-0.5, -0.4, 0.0, 0.4, -0.5, 0.2, 0.30000000000000004, 0.30000000000000004])
    b = np.array([-0.5, 0.30000000000000004, -0.5, -0.2, 0.0, 0.0, -0.4, 0.5])

    def squared(x):
        total = 0.0
        for v in x:
            total += v * v
        return total
    assert squared(a) != squared(b) and np.sqrt(squared(a)) == np.sqrt(squared(b))
    rng = np.random.default_rng(0)
    far = 100 + 5 * rng.normal(size=(600, 8))
    closer = np.abs(rng.normal(size=(28, 8)))  # 28 own-class points nearer the origin
    closer *= (np.linspace(0.5, 0.9, 28) / np.linalg.norm(closer, axis=1))[:, None]
    k = 29  # the origin's list ends with one of the two: the one with the smaller square
    for other, own in ((a, b), (b, a)):  # the other-class point's square larger, smaller
        X = np.vstack([np.zeros(8), other, own, closer, far])
        codes = np.r_[0, 1, 0, np.zeros(28), np.arange(600) % 10].astype(np.int64)
        assert merged.exact_merge(X, codes, k)
        own_idx, own_dist = class_tree_lists(X, codes, k)
        other_idx, other_dist = pooled_other_neighbors(X, codes, k, own_idx=own_idx)
        idx, dist = merged.exact_merged_lists(X, own_idx, own_dist, other_idx, other_dist, k)
        want_idx, want_dist = search.nearest_neighbors(X, k)
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_array_equal(dist, want_dist)
        nearer = 1 if squared(other) < squared(own) else 2
        assert idx[0, k - 1] == nearer and set(idx[0, :k - 1]) == set(range(3, 31))


@_COPIES
@pytest.mark.parametrize("kind", ["clusters", "integer", "tenths", "unrelated"])
def test_auto_gives_one_p_whichever_order(kind, small_block_tree, monkeypatch):
    # random class sizes (some below k + 1), 8-15 features, ties from integer points and
    # from coordinates in tenths (equal roots of unequal squares), copies: "auto" as
    # chosen, standard first, and balanced first forced give one P (the integer and tenths
    # sets switch to the balanced P, the others keep the standard one)
    rng = np.random.default_rng(["clusters", "integer", "tenths", "unrelated"].index(kind))
    L, n, p = int(rng.integers(10, 30)), int(rng.integers(600, 1000)), int(rng.integers(8, 16))
    sizes = rng.multinomial(n - L, rng.dirichlet(np.full(L, 0.5))) + 1
    codes = np.repeat(np.arange(L), sizes)
    if kind == "clusters":
        X = (3 * rng.normal(size=(4, p))[rng.integers(0, 4, n)]
             + 8 * rng.normal(size=(L, p))[codes] + rng.normal(size=(n, p)))
    elif kind == "integer":
        X = (rng.integers(-2, 3, size=(n, p)) + 4 * rng.integers(-1, 2, size=(L, p))[codes]) * 1.0
    elif kind == "tenths":
        X = np.round(rng.normal(size=(n, p)), 1) + 2 * np.round(rng.normal(size=(L, p)), 1)[codes]
    else:
        X, codes = rng.normal(size=(n, p)), rng.permutation(codes)
    X[rng.integers(0, n, 20)] = X[rng.integers(0, n, 20)]
    chosen = modes.input_affinities(X, 10.0, codes, "auto")
    with monkeypatch.context() as m:
        m.setattr(provider, "exact_merge", lambda *a, **kw: False)
        standard_first = modes.input_affinities(X, 10.0, codes, "auto")
    merges = _spy(monkeypatch, provider, "exact_merged_lists")
    monkeypatch.setattr(modes, "SHARE_OF_RANDOM", 10.0)
    monkeypatch.setattr(modes, "switch_expected", lambda *a: True)
    balanced_first = modes.input_affinities(X, 10.0, codes, "auto")
    assert merges  # the forced order ran
    assert chosen.mode == standard_first.mode == balanced_first.mode
    assert abs(chosen.P - standard_first.P).max() == 0.0
    assert abs(balanced_first.P - standard_first.P).max() == 0.0

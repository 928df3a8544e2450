"""The block k-d tree (ctsne.neighbors.kdtree): exact lists in (distance, index) order,
checked against a brute-force reference summed in the same feature order, and the same
lists as scipy's tree where ctsne's exact search hands it the work."""

import numpy as np
import pytest

from ctsne.neighbors import kdtree_build, own_first, search
from ctsne.neighbors.kdtree import BlockTree
from ctsne.neighbors.own_first import own_first_lists


def _brute(X, Q, k):
    """The k smallest (squared distance, index) pairs per query, by numpy; squared
    distances added feature by feature, as the tree does, so they agree bit for bit."""
    idx = np.empty((len(Q), k), dtype=np.int64)
    dist = np.empty((len(Q), k))
    for r, q in enumerate(Q):
        d2 = np.zeros(len(X))
        for j in range(X.shape[1]):
            d2 = d2 + (X[:, j] - q[j]) ** 2
        order = np.lexsort((np.arange(len(X)), d2))[:k]
        idx[r], dist[r] = order, np.sqrt(d2[order])
    return idx, dist


def _check_self(X, k):
    tree = BlockTree(X)
    rows = tree.order
    dist, idx = tree.query(X[rows], k, self_rows=rows)
    want_idx, want_dist = _brute(X, X[rows], k)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)


@pytest.mark.parametrize("shape,k", [((3000, 10), 91), ((2000, 15), 30), ((1500, 1), 7),
                                     ((700, 3), 700), ((40, 9), 5)])
def test_lists_are_the_brute_force_lists(shape, k, rng):
    _check_self(rng.normal(size=shape) * rng.uniform(0.1, 5.0, shape[1]), k)


def test_ties_are_broken_by_index(rng):
    # integer points on a small grid: most distances are tied, many points coincide
    _check_self(rng.integers(0, 3, size=(2500, 8)).astype(float), 40)
    _check_self(np.zeros((600, 10)), 25)  # all points the same: the k lowest indices


def test_each_point_is_in_the_leaf_its_blocks_are_cut_by(rng):
    # self-queries' blocks are runs of one leaf: each point's leaf holds it
    tree = BlockTree(rng.normal(size=(3000, 8)))
    leaf = tree._leaf_of_point
    assert all(p in tree.ids[leaf[p]] for p in range(3000))
    assert len(np.unique(leaf)) == len(tree.counts) > 1


@pytest.mark.parametrize("X", [
    np.random.default_rng(5).normal(size=(2500, 9)),
    np.random.default_rng(6).integers(0, 3, size=(2500, 8)).astype(float),  # ties, copies
    np.zeros((300, 10))])  # every point a copy: its own index not among the first k + 1
def test_leaving_each_point_out_of_its_own_list(X):
    # the k nearest other points: the brute-force k + 1 nearest without the point itself
    # (without its farthest where it is not among them)
    k = 20
    tree = BlockTree(X)
    rows = tree.order
    dist, idx = tree.query(X[rows], k, self_rows=rows, exclude_self=True)
    want_idx, want_dist = _brute(X, X[rows], k + 1)
    want_idx, want_dist = search.drop_self(want_idx, want_dist, rows, k)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)
    assert not np.any(idx == rows[:, None])
    with pytest.raises(ValueError, match="self_rows"):
        tree.query(X[:3], k, exclude_self=True)


def test_queries_that_are_not_indexed_points(rng):
    X = rng.normal(size=(4000, 10))
    Q = np.vstack([rng.normal(size=(300, 10)),              # among the points
                   rng.normal(size=(50, 10)) + 40.0,         # far from all of them
                   X[:20]])                                  # indexed points, asked as queries
    tree = BlockTree(X)
    dist, idx = tree.query(Q, 60)
    want_idx, want_dist = _brute(X, Q, 60)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)
    with pytest.raises(ValueError, match="k must lie"):
        tree.query(Q, 4001)
    dist, idx = tree.query(Q[:0], 5)  # no queries: empty answers of the right shape
    assert dist.shape == idx.shape == (0, 5)


def test_same_lists_on_one_thread_and_two(rng):
    import numba

    from ctsne.tuning import KDTREE_PARALLEL_FROM_WORK

    X = rng.normal(size=(6000, 10))
    tree = BlockTree(X)
    rows = tree.order
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = tree.query(X[rows], 50, self_rows=rows)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        assert 6000 * 50 >= KDTREE_PARALLEL_FROM_WORK  # the parallel variant runs
        two = tree.query(X[rows], 50, self_rows=rows)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


@pytest.fixture
def block_trees_from_1000(monkeypatch):
    monkeypatch.setattr(search, "BLOCK_TREE_FROM", 1000)


def test_exact_search_hands_8_to_15_features_to_the_block_tree(block_trees_from_1000, rng):
    X = rng.normal(size=(3000, 10))
    index = search.ExactIndex(X)
    assert index._blocks is not None
    assert search.ExactIndex(X[:, :7])._blocks is None        # too few features
    assert search.ExactIndex(X[:500])._blocks is None          # too small a search
    assert search.ExactIndex(X[:500], search_size=3000)._blocks is not None
    # the exact search's lists: scipy's tree gives the same (continuous data, no ties)
    idx, dist = search.nearest_neighbors(X, 30, method="exact")
    from scipy.spatial import cKDTree

    d_ref, i_ref = cKDTree(X).query(X, 31)
    np.testing.assert_array_equal(idx, i_ref[:, 1:])
    np.testing.assert_allclose(dist, d_ref[:, 1:], rtol=1e-13)
    # radius counts still answer (scipy's tree, built on first use)
    r = dist[:5, -1] * (1 + 1e-9)
    np.testing.assert_array_equal(index.count_within(X[:5], r), np.full(5, 31))


def test_own_first_lists_with_block_trees(block_trees_from_1000, rng):
    # five clusters in 10-D, two classes apart and one touching: both orders, one code
    codes = rng.integers(0, 3, 3000)
    X = rng.normal(size=(3000, 10)) + rng.normal(scale=3.0, size=(5, 10))[rng.integers(0, 5, 3000)]
    X[:, 0] += np.array([0.0, 40.0, 5.0])[codes]
    want_idx, want_dist = search.nearest_neighbors(X, 30, method="exact")
    got = own_first_lists(X, codes, 30)
    assert all(index._blocks is not None for _, index in own_first._class_indexes(X, codes, None))
    np.testing.assert_array_equal(got.idx, want_idx)
    np.testing.assert_array_equal(got.dist, want_dist)


def test_auto_search_is_exact_further_with_8_to_15_features():
    assert search.is_exact_search(900_000, 10)
    assert search.is_exact_search(search.BLOCK_TREE_MAX_N, 15)
    assert not search.is_exact_search(search.BLOCK_TREE_MAX_N + 1, 10)
    assert not search.is_exact_search(900_000, 7)      # scipy's tree: up to TREE_MAX_N
    assert search.is_exact_search(search.TREE_MAX_N, 7)
    assert not search.is_exact_search(900_000, 16)


def test_class_by_class_lists_only_where_the_block_tree_would_not_be_exact():
    codes = np.repeat(np.arange(5), 250_000)  # 1.25M points, 5 classes
    assert own_first.use_own_first(len(codes), 10, 90, codes, "auto", "euclidean")
    part = codes[:900_000]  # within the block tree's exact range: one search over all
    assert not own_first.use_own_first(len(part), 10, 90, part, "auto", "euclidean")
    assert own_first.use_own_first(len(part), 5, 90, part, "auto", "euclidean")  # scipy's


def test_tolerance_bounds_every_distance_by_the_true_kth(rng):
    X = rng.normal(size=(5000, 10))
    Q = rng.normal(size=(400, 10)) + 6.0  # far queries, as another class's
    tree = BlockTree(X)
    exact_d, exact_i = tree.query(Q, 23)
    for eps in (0.2, 0.5):
        d, i = tree.query(Q, 23, eps=eps)
        assert np.all(d <= (1.0 + eps) * exact_d[:, -1:] * (1 + 1e-12))
        # each listed distance is the true distance of the point listed
        true = np.sqrt(((X[i] - Q[:, None, :]) ** 2).sum(axis=2))
        np.testing.assert_allclose(d, true, rtol=1e-12)
    d0, i0 = tree.query(Q, 23, eps=0.0)
    np.testing.assert_array_equal(i0, exact_i)


def _brute_skipping(X, codes, Q, qcodes, k):
    """The k smallest (squared distance, index) pairs among points of another class;
    index −1 and distance inf where fewer than k are."""
    idx = np.full((len(Q), k), -1, dtype=np.int64)
    dist = np.full((len(Q), k), np.inf)
    for r, q in enumerate(Q):
        d2 = np.zeros(len(X))
        for j in range(X.shape[1]):
            d2 = d2 + (X[:, j] - q[j]) ** 2
        others = np.flatnonzero(codes != qcodes[r])
        order = others[np.lexsort((others, d2[others]))][:k]
        idx[r, :len(order)], dist[r, :len(order)] = order, np.sqrt(d2[order])
    return idx, dist


def test_queries_skipping_their_own_class_get_the_other_classes_lists(rng):
    # clusters with their own class each (a query must walk past its class), classes
    # spread at random, and one class of all but 20 points (its queries get empty slots)
    X = np.vstack([rng.normal(size=(3000, 10)) + rng.normal(scale=4.0, size=(30, 10))[
        np.arange(3000) % 30], rng.integers(0, 3, size=(600, 10)).astype(float)])  # ties
    codes = np.r_[np.arange(3000) % 30, rng.integers(30, 60, 600)]
    tree = BlockTree(X, codes=codes)
    rows = tree.order
    dist, idx = tree.query(X[rows], 40, self_rows=rows, skip_codes=codes[rows])
    want_idx, want_dist = _brute_skipping(X, codes, X[rows], codes[rows], 40)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)
    Q = np.vstack([rng.normal(size=(100, 10)), rng.normal(size=(10, 10)) + 40.0])
    qcodes = rng.integers(0, 60, len(Q))
    dist, idx = tree.query(Q, 25, skip_codes=qcodes)
    want_idx, want_dist = _brute_skipping(X, codes, Q, qcodes, 25)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)
    big = np.r_[np.zeros(len(X) - 20, dtype=np.int64), np.ones(20, dtype=np.int64)]
    dist, idx = BlockTree(X, codes=big).query(X[:5], 30, skip_codes=big[:5])
    want_idx, want_dist = _brute_skipping(X, big, X[:5], big[:5], 30)
    assert (want_idx[:, 20:] == -1).all()
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)
    # split over threads, the same lists
    from ctsne.neighbors import kdtree

    old = kdtree._search.min_work
    try:
        kdtree._search.min_work = 0
        d_par, i_par = tree.query(X[rows], 40, self_rows=rows, skip_codes=codes[rows])
    finally:
        kdtree._search.min_work = old
    want_idx, _ = _brute_skipping(X, codes, X[rows], codes[rows], 40)
    np.testing.assert_array_equal(i_par, want_idx)
    with pytest.raises(ValueError, match="one class per point"):
        BlockTree(X, codes=codes[:-1])
    with pytest.raises(ValueError, match="built with codes"):
        BlockTree(X).query(Q, 5, skip_codes=qcodes)
    with pytest.raises(ValueError, match="one class per query"):
        tree.query(Q, 5, skip_codes=qcodes[:3])


def _tied(rng, n):
    """Adult-like features: one mostly zero with a long tail (the widest), one binary,
    one of a few integer levels, one continuous."""
    gain = np.where(rng.random(n) < 0.9, 0.0, rng.exponential(8.0, n))
    return np.column_stack([gain, rng.integers(0, 2, n), rng.integers(0, 6, n),
                            rng.normal(size=n)]).astype(float)


def test_splits_keep_the_median_ties_on_one_side(rng):
    X = _tied(rng, 4000)
    tree = BlockTree(X, leaf_size=64)
    inner = np.flatnonzero(tree.left >= 0)
    a, b = tree.left[inner], tree.right[inner]
    # every split separates the children's boxes in some feature (the plain median of the
    # widest feature, the mostly-zero one, would leave both holding 0 there)
    apart = (tree.hi[a] < tree.lo[b]) | (tree.hi[b] < tree.lo[a])
    assert apart.any(axis=1).all()
    # and every leaf keeps a quarter of a full one at least
    assert tree.counts.min() >= 64 // 4 and tree.counts.max() <= 64
    assert tree.counts.sum() == len(X)
    _check_self(X, 40)


def test_points_all_equal_still_split():
    X = np.ones((700, 8))
    tree = BlockTree(X, leaf_size=64)
    assert tree.counts.max() <= 64
    dist, idx = tree.query(X[:5], 10)
    np.testing.assert_array_equal(idx, np.tile(np.arange(10), (5, 1)))  # ties by index
    np.testing.assert_array_equal(dist, 0.0)


def test_every_feature_mostly_one_value(rng):
    # near the root no feature can split with its median's ties on one side: plain
    # median splits there, tie-aware ones further down
    X = np.where(rng.random((3000, 9)) < 0.9, 0.0, rng.normal(size=(3000, 9)))
    tree = BlockTree(X, leaf_size=64)
    assert (64 + 1) // 4 <= tree.counts.min() and tree.counts.max() <= 64
    assert tree.counts.sum() == len(X)
    _check_self(X, 30)


def test_leaf_size_below_one_is_refused(rng):
    with pytest.raises(ValueError, match="leaf_size"):
        BlockTree(rng.normal(size=(50, 3)), leaf_size=0)


def test_without_ties_each_node_splits_its_largest_variance_at_the_median(rng):
    X = rng.normal(size=(5000, 6)) * np.array([1.0, 3.0, 0.5, 2.0, 1.5, 2.5])
    perm, start, stop, left, right, lo, hi = kdtree_build.build_tree(X, 64)
    inner = np.flatnonzero(left >= 0)
    assert len(inner) > 20
    for v in inner:
        a, b = left[v], right[v]
        pts = X[perm[start[v]:stop[v]]]
        assert stop[a] - start[a] == (stop[v] - start[v]) // 2
        j = int(np.argmax(pts.var(axis=0)))
        assert X[perm[start[a]:stop[a]], j].max() <= X[perm[start[b]:stop[b]], j].min()


def test_own_class_lists_from_the_tree_the_fit_chooses(monkeypatch, rng):
    """Classes above BRUTE_UP_TO in a fit searched by the block tree: the block tree's
    lists (not scipy's), equal to the brute-force reference with ties by index."""
    from ctsne.neighbors import by_class

    monkeypatch.setattr(search, "BLOCK_TREE_FROM", 2000)
    monkeypatch.setattr(by_class, "BRUTE_UP_TO", 100)
    sizes = [1200, 900, 600, 101, 5, 1]
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    X = rng.integers(0, 3, (len(codes), 10)).astype(float)  # ties everywhere
    built = []
    real = by_class.ExactIndex

    def spy(data, *args, **kwargs):
        index = real(data, *args, **kwargs)
        built.append(index._blocks is not None)
        return index
    monkeypatch.setattr(by_class, "ExactIndex", spy)
    k = 30
    idx, dist = by_class.own_class_neighbors(X, codes, k, method="exact")
    assert built == [True] * 4  # the four classes above 100 points, by the block tree
    for c, size in enumerate(sizes):
        rows = np.flatnonzero(codes == c)
        kc = min(k, size - 1)
        if kc < 1:
            continue
        want_idx, want_dist = _brute(X[rows], X[rows], kc + 1)
        # each point first in its own list (distance 0, and the lowest index among its
        # copies only if it is one): drop it the way the search does
        keep = want_idx != np.arange(len(rows))[:, None]
        keep[keep.all(axis=1), -1] = False
        got = rows[want_idx[keep].reshape(len(rows), kc)]
        np.testing.assert_array_equal(idx[rows, :kc], got)
        np.testing.assert_array_equal(dist[rows, :kc], want_dist[keep].reshape(len(rows), kc))

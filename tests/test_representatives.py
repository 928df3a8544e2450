"""Far lists shared from representatives, against dense distances computed here."""

import numpy as np

from ctsne.neighbors import by_class as ln
from ctsne.neighbors.by_class import other_class_neighbors, own_class_neighbors
from ctsne.neighbors.pooled import pooled_other_neighbors
from ctsne.neighbors.representatives import (
    REP_EVERY,
    REPS_PER_POINT,
    lists_from_representatives,
    representatives,
)


def _shifted(rng, sizes=(900, 700, 400), dims=5, shift=12.0):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    centres = rng.normal(scale=3.0, size=(6, dims))
    X = centres[rng.integers(0, 6, len(codes))] + rng.normal(size=(len(codes), dims))
    return X + shift * rng.normal(size=(len(sizes), dims))[codes], codes


def _dense(X, rows, cols):
    return np.sqrt(((X[rows][:, None, :] - X[cols][None, :, :]) ** 2).sum(-1))


def _class_zero_asked(rng):
    """Three shifted classes, their own lists and representatives, and an exact search of
    class 0 (dense distances, ties in index order) that the other classes' points ask."""
    X, codes = _shifted(rng)
    own, _ = own_class_neighbors(X, codes, 20, method="exact")
    target = np.flatnonzero(codes == 0)

    def exact(Q, kq):
        D = np.sqrt(((Q[:, None, :] - X[target][None, :, :]) ** 2).sum(-1))
        o = np.argsort(D, axis=1, kind="stable")[:, :kq]
        return target[o], np.take_along_axis(D, o, axis=1)
    return (X, codes, own, representatives(codes, own), target, np.flatnonzero(codes != 0),
            exact)


def test_every_point_is_searched_or_has_enough_representatives(rng):
    X, codes = _shifted(rng)
    own, _ = own_class_neighbors(X, codes, 20, method="exact")
    rep = representatives(codes, own)
    for c in range(3):
        share = rep[codes == c].mean()
        assert 1 / REP_EVERY - 0.01 <= share < 0.5, share
    listed = (rep[own] & (own != np.arange(len(codes))[:, None])).sum(axis=1)
    assert np.all(rep | (listed >= REPS_PER_POINT))
    # a class too small for its points to list four representatives: all searched
    tiny = np.r_[codes, [3, 3, 3]]
    own_t, _ = own_class_neighbors(np.vstack([X, X[:3] + 50]), tiny, 20, method="exact")
    assert representatives(tiny, own_t)[-3:].all()


def test_shared_lists_are_the_nearest_candidates_and_nearly_exact(rng):
    X, codes, own, rep, target, queries, exact = _class_zero_asked(rng)
    k = 8

    idx, dist = lists_from_representatives(X, queries, own, rep, exact, k)
    direct = rep[queries]
    ref_idx, ref_dist = exact(X[queries], k)
    np.testing.assert_array_equal(idx[direct], ref_idx[direct])
    # the others: the k nearest of the union of their first four representatives' lists
    rep_list = {int(q): set(ref_idx[t]) for t, q in enumerate(queries) if direct[t]}
    for t in np.flatnonzero(~direct)[::37]:
        q = queries[t]
        reps = [j for j in own[q] if rep[j]][:REPS_PER_POINT]
        cand = np.array(sorted(set().union(*(rep_list[int(r)] for r in reps))))
        d = _dense(X, [q], cand)[0]
        np.testing.assert_array_equal(idx[t], cand[np.argsort(d)[:k]])
    np.testing.assert_allclose(dist, _dense(X, queries, target)[
        np.arange(len(queries))[:, None], np.searchsorted(target, idx)], rtol=1e-12)
    recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(idx, ref_idx, strict=True)])
    assert recall > 0.95, recall
    assert np.median(dist[:, -1] / ref_dist[:, -1]) < 1.0001


def test_large_far_searches_ask_only_the_representatives(rng, monkeypatch):
    X, codes = _shifted(rng)
    own, _ = own_class_neighbors(X, codes, 20, method="exact")
    asked = []
    query = ln.SearchIndex.query

    def counting(self, Q, k):
        asked.append(len(Q))
        return query(self, Q, k)

    monkeypatch.setattr(ln, "SCAN_MAX_PAIRS", 0)  # every far search takes the tolerant tree
    monkeypatch.setattr(ln.SearchIndex, "query", counting)
    idx, dist = other_class_neighbors(X, codes, 6, own_idx=own)
    rep = representatives(codes, own)
    assert asked == [int(rep[codes != m].sum()) for m in range(3)]
    assert sum(asked) < 0.5 * 2 * len(codes)
    # block t of a class-c point holds class t (t < c) or t + 1, at true distances
    for i in range(0, len(codes), 53):
        for t in range(2):
            m = t + (t >= codes[i])
            cols = slice(6 * t, 6 * t + 6)
            assert np.all(codes[idx[i, cols]] == m)
            np.testing.assert_allclose(dist[i, cols], _dense(X, [i], idx[i, cols])[0],
                                       rtol=1e-12)


def test_real_digits_through_a_second_scanner_keep_their_far_lists(monkeypatch):
    # real data: sklearn's handwritten digits, half of them through a simulated second
    # scanner (as experiments/separated_priors.py), 10 principal components
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    X = load_digits().data.astype(float)
    codes = (rng.random(len(X)) < 0.5).astype(np.int64)
    second = codes == 1
    X[second] = (X[second] * rng.uniform(0.7, 1.3, 64) + rng.normal(0, 3, 64)
                 + rng.normal(0, 1, (second.sum(), 64)))
    X = PCA(10, random_state=0).fit_transform(X)
    own, _ = own_class_neighbors(X, codes, 30, method="exact")
    exact_idx, exact_dist = other_class_neighbors(X, codes, 15, method="exact")
    monkeypatch.setattr(ln, "SCAN_MAX_PAIRS", 0)
    idx, dist = other_class_neighbors(X, codes, 15, method="exact", own_idx=own)
    recall = np.mean([len(set(a) & set(b)) / 15
                      for a, b in zip(idx, exact_idx, strict=True)])
    assert recall > 0.85, recall
    ratio = dist[:, -1] / exact_dist[:, -1]
    assert np.median(ratio) < 1.01 and ratio.max() < 1 + ln.FAR_EPS


def test_pooled_bit_searches_through_representatives(rng, monkeypatch):
    # 20 classes (5 bits); each point's nearest points of all other classes
    codes = np.repeat(np.arange(20), 150)
    X = rng.normal(size=(len(codes), 4)) + 4.0 * rng.normal(size=(20, 4))[codes]
    own, _ = own_class_neighbors(X, codes, 40, method="exact")
    exact_idx, exact_dist = pooled_other_neighbors(X, codes, 15, method="exact")
    asked = []
    query = ln.SearchIndex.query

    def counting(self, Q, k):
        asked.append(len(Q))
        return query(self, Q, k)

    monkeypatch.setattr(ln, "REPS_FROM_PAIRS", 0)
    monkeypatch.setattr(ln.SearchIndex, "query", counting)
    idx, dist = pooled_other_neighbors(X, codes, 15, method="exact", own_idx=own)
    assert sum(asked) < 0.35 * 5 * len(codes)  # 5 bit searches of n askers each
    assert np.all(codes[idx] != codes[:, None])
    np.testing.assert_allclose(dist, np.sqrt(((X[idx] - X[:, None, :]) ** 2).sum(-1)),
                               rtol=1e-12)
    recall = np.mean([len(set(a) & set(b)) / 15
                      for a, b in zip(idx, exact_idx, strict=True)])
    assert recall > 0.9, recall
    assert np.median(dist[:, -1] / exact_dist[:, -1]) < 1.01


def test_pooled_lists_hold_each_point_once_when_searches_round_differently(rng, monkeypatch):
    # A point of another class is offered by every bit in which the classes differ. Here
    # bit 1 asks representatives (distances summed in numba) and bit 0 asks scikit-learn
    # (its ‖x‖² − 2x·y + ‖y‖² formula): the copies' distances differ in the last digits
    # on data far from the origin, and must still count once.
    from ctsne.affinities.balanced import revised_affinities

    codes = np.repeat(np.arange(4), [100, 300, 150, 450])
    X = rng.normal(scale=0.01, size=(len(codes), 20)) + 1e3
    monkeypatch.setattr(ln, "REPS_FROM_PAIRS", 2e5)
    own, _ = own_class_neighbors(X, codes, 10)
    idx, dist = pooled_other_neighbors(X, codes, 10, own_idx=own)
    assert all(len(np.unique(row)) == 10 for row in idx)
    assert np.all(codes[idx] != codes[:, None]) and np.all(np.isfinite(dist))
    P = revised_affinities(X, codes, 10.0)
    assert abs(P - P.T).max() < 1e-15
    assert abs(P.sum() - 1.0) < 1e-12


def test_lists_written_into_blocks_are_the_returned_lists(rng):
    # the by-class searches write each query's list into its row's block of a table
    # (out=(idx, dist, rows, cols)); that must be the list returned without out, in the
    # rows and columns given, and nothing else of the table touched
    X, codes, own, rep, target, queries, exact = _class_zero_asked(rng)
    k = 7

    want_idx, want_dist = lists_from_representatives(X, queries, own, rep, exact, k)
    rows = rng.permutation(len(codes))[:len(queries)]
    cols = np.where(codes[queries] == 1, 0, k + 3)
    idx = np.full((len(codes), 2 * k + 3), -1, dtype=np.int64)
    dist = np.full(idx.shape, -1.0)
    assert lists_from_representatives(X, queries, own, rep, exact, k,
                                      out=(idx, dist, rows, cols)) is None
    got_idx = np.stack([idx[r, c:c + k] for r, c in zip(rows, cols, strict=True)])
    got_dist = np.stack([dist[r, c:c + k] for r, c in zip(rows, cols, strict=True)])
    np.testing.assert_array_equal(got_idx, want_idx)
    np.testing.assert_array_equal(got_dist, want_dist)
    written = np.zeros(idx.shape, dtype=bool)
    for r, c in zip(rows, cols, strict=True):
        written[r, c:c + k] = True
    assert np.all(idx[~written] == -1) and np.all(dist[~written] == -1.0)

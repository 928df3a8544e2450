"""The rule that chooses each prior class's cross-class share (ctsne.affinities.cross_share):
hand-computed mutual pairs, each branch of the rule, and constructed data (a prior already
mixed in P, a mild and a strong batch, a prior of different things)."""

import numpy as np
import pytest

from ctsne import ConditionalTSNE
from ctsne.affinities.counterpart import counterpart_trust
from ctsne.affinities.cross_share import TRUST_FROM, choose_cross_share
from ctsne.affinities.mixing import point_cross_ratio, table_mixing
from ctsne.affinities.modes import input_affinities
from ctsne.affinities.standard import joint_affinities, standard_conditional


def _reference_trust(X, codes, k):
    """Mutual-pair shares with scikit-learn's exact neighbours on class-centred data."""
    from sklearn.neighbors import NearestNeighbors

    L = codes.max() + 1
    Z = X - np.array([X[codes == c].mean(0) for c in range(L)])[codes]
    lists = {}
    for b in range(L):
        rb = np.flatnonzero(codes == b)
        nn = NearestNeighbors(n_neighbors=k + 1).fit(Z[rb])
        for a in range(L):
            ra = np.flatnonzero(codes == a)
            got = rb[nn.kneighbors(Z[ra], return_distance=False)]
            lists[a, b] = dict(zip(ra, (got[:, 1:] if a == b else got[:, :k]), strict=True))

    def share(a, b):
        pairs = [(i, j) for i, row in lists[a, b].items() for j in row]
        return np.mean([i in lists[b, a][j] for i, j in pairs])

    own = np.mean([share(a, a) for a in range(L)])
    cross = np.array([np.mean([share(a, b) for b in range(L) if b != a]) for a in range(L)])
    # all other classes pooled: i's k nearest points of any other class
    pooled = {}
    for a in range(L):
        rest = np.flatnonzero(codes != a)
        nn = NearestNeighbors(n_neighbors=k).fit(Z[rest])
        ra = np.flatnonzero(codes == a)
        pooled.update(zip(ra, rest[nn.kneighbors(Z[ra], return_distance=False)],
                          strict=True))
    pooled_cross = np.array([np.mean([i in pooled[j] for i in np.flatnonzero(codes == a)
                                      for j in pooled[i]]) for a in range(L)])
    return own, cross, pooled_cross


@pytest.mark.parametrize("L", [3, 11])  # per class pair, and pooled (> 8 other classes)
def test_counterpart_trust_matches_a_reference(L, rng):
    codes = np.repeat(np.arange(L), 40)
    X = rng.normal(size=(len(codes), 3)) + 0.7 * rng.normal(size=(L, 3))[codes]
    per, tau, m_own, m_cross = counterpart_trust(X, codes, k=4)
    own, cross, pooled_cross = _reference_trust(X, codes, 4)
    if L == 11:
        cross = pooled_cross
    assert m_own == pytest.approx(own)
    assert m_cross == pytest.approx(cross.mean())
    np.testing.assert_allclose(per, np.minimum(cross / own, 1.0))
    assert tau == pytest.approx(min(1.0, m_cross / m_own))
    assert 0 <= m_cross <= 1 and np.all((per >= 0) & (per <= 1))


def test_a_shifted_copy_is_trusted_and_a_different_shape_is_not(rng):
    # three clusters on a line; the copy shifted, the other class's clusters on another axis
    centres = np.repeat([-6.0, 0.0, 6.0], 50)
    base = rng.normal(size=(150, 4))
    base[:, 0] += centres
    copy = base + rng.normal(scale=0.05, size=base.shape) + [0, 0, 0, 25]
    other = rng.normal(size=(150, 4))
    other[:, 2] += centres
    codes = np.repeat([0, 1], 150)
    assert counterpart_trust(np.vstack([base, copy]), codes)[1] > 0.9
    assert counterpart_trust(np.vstack([base, other]), codes)[1] < 0.5


def test_point_cross_ratio_by_hand():
    codes = np.array([0, 0, 1])  # random levels: class 0 1 − 1/2 = 0.5, class 1 1
    idx = np.array([[1, 2], [0, 2], [0, 1]])
    cond = np.array([[0.75, 0.25], [0.5, 0.5], [0.3, 0.7]])
    np.testing.assert_allclose(point_cross_ratio(idx, cond, codes), [0.5, 1.0, 1.0])


@pytest.mark.parametrize("standard, tau, separates, mode, share", [
    ([0.3, 0.3], 0.9, False, "standard", [0.3, 0.3]),       # at the target already
    ([0.1, 0.1], 0.9, False, "balanced", [0.225, 0.225]),   # trusted: raised to τ·e/2
    ([0.1, 0.3], 0.9, False, "balanced", [0.225, 0.3]),     # never below the standard P
    ([0.01, 0.02], 0.3, True, "balanced", [0.075, 0.075]),  # separated: small targets
    ([0.1, 0.3], 0.3, False, "standard", [0.1, 0.3]),       # different things, linked
])
def test_each_branch_of_the_rule(standard, tau, separates, mode, share):
    expected = np.array([0.5, 0.5])
    trust = (np.full(2, tau), tau, 0.6, 0.6 * tau)
    got = choose_cross_share(expected, np.array(standard), trust, separates)
    assert got.mode == mode
    np.testing.assert_allclose(got.class_share, share)
    np.testing.assert_allclose(got.class_target, tau * expected / 2)
    assert got.to_dict()["mode"] == mode and got.reason in got.summary()


def _copies(rng, n_per, offset, noise=0.6):
    """Two batches of the same four clusters; the second offset along a fifth axis."""
    cluster = np.tile(np.arange(4), n_per // 2)
    batch = np.repeat([0, 1], len(cluster) // 2)
    X = 6.0 * np.eye(5)[cluster] + rng.normal(scale=noise, size=(len(cluster), 5))
    X[batch == 1, 4] += offset
    return X, batch, cluster


def test_already_mixed_prior_keeps_the_standard_p_bit_for_bit(rng):
    X, _, _ = _copies(rng, 200, 0.0)
    labels = rng.integers(0, 3, len(X))  # unrelated to the data
    got = input_affinities(X, 10.0, labels, "auto", neighbors="exact")
    ref = joint_affinities(X, 10.0, neighbors="exact")
    assert got.mode == "standard" and (got.P != ref).nnz == 0
    share = got.cross_share
    assert share.mode == "standard" and np.all(share.class_standard >= share.class_target)


def test_no_trust_measured_where_no_target_can_ask_for_more(rng, monkeypatch):
    """Where every class's standard share reaches half its random level, the rule keeps
    the standard P whatever the trust (τ ≤ 1), so "auto" skips measuring it."""
    import ctsne.affinities.modes as modes

    X, _, _ = _copies(rng, 200, 0.0)
    labels = rng.integers(0, 3, len(X))  # unrelated to the data
    table = standard_conditional(X, 10.0, neighbors="exact")
    mixing = table_mixing(table.idx, table.cond, labels)
    assert np.all(mixing.class_cross >= 0.5 * mixing.class_expected)
    measured = choose_cross_share(mixing.class_expected, mixing.class_cross,
                                  counterpart_trust(X, labels))
    assert measured.mode == "standard"

    def fail(*args, **kwargs):
        raise AssertionError("the counterpart trust was measured")

    monkeypatch.setattr(modes, "counterpart_trust", fail)
    got = input_affinities(X, 10.0, labels, "auto", neighbors="exact")
    assert got.mode == "standard"
    assert (got.P != joint_affinities(X, 10.0, neighbors="exact")).nnz == 0


# a mild batch that pulls ~90 % of the points (the rule's first version kept the standard
# P there), a medium one (~40 %) and a strong one (none)
@pytest.mark.parametrize("offset", [1.5, 2.5, 30.0])
def test_a_batch_gets_the_trusted_random_share(offset, rng):
    X, batch, _ = _copies(rng, 200, offset)
    table = standard_conditional(X, 10.0, neighbors="exact")
    pulled = np.mean(point_cross_ratio(table.idx, table.cond, batch) > 0.01)
    got = input_affinities(X, 10.0, batch, "auto", neighbors="exact")
    share = got.cross_share
    # pulled points are reported, not deciding
    assert share.pulled == pytest.approx(pulled)
    assert (pulled > 0.75) == (offset < 2)
    assert got.mode == "balanced" and share.trust >= TRUST_FROM
    # copies: the target is the trusted random level, and the balanced P puts exactly the
    # chosen share across (symmetrising keeps the total; classes of equal size)
    np.testing.assert_allclose(share.class_share,
                               share.class_trust * share.class_expected / 2)
    assert np.all(share.class_share >= share.class_standard)
    assert got.mixing.cross == pytest.approx(np.mean(share.class_share), rel=1e-9)


def test_a_prior_of_different_things_keeps_the_standard_p():
    """sklearn's digits with the digit as prior (the paper's use): few counterparts, and
    the standard P already links the classes."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X = d.data.astype(np.float64)
    got = input_affinities(X, 30.0, d.target, "auto")
    assert got.mode == "standard" and got.cross_share.trust < TRUST_FROM
    assert (got.P != joint_affinities(X, 30.0)).nnz == 0


def test_the_fitted_model_and_verbose_state_the_choice(rng, capsys):
    X, batch, _ = _copies(rng, 120, 30.0)
    model = ConditionalTSNE(perplexity=10, n_iter=0, early_exaggeration_iter=0,
                            random_state=0, verbose=True).fit(X, batch)
    err = capsys.readouterr().err
    choice = model.prior_mixing_.cross_share
    assert model.affinities_ == "balanced" and choice.mode == "balanced"
    assert "cross-class share per class" in err and choice.reason in err
    assert model.prior_mixing_.to_dict()["cross_share"]["mode"] == "balanced"
    given = ConditionalTSNE(perplexity=10, n_iter=0, early_exaggeration_iter=0,
                            within_weight=0.7).fit(X, batch)
    np.testing.assert_allclose(given.prior_mixing_.cross_share.class_share, 0.3)
    assert given.prior_mixing_.cross == pytest.approx(0.3, rel=1e-9)



@pytest.mark.parametrize("dims", [3, 20])  # the block tree, the Gram blocks
def test_pooled_lists_are_each_points_nearest_of_other_classes(dims, rng):
    from ctsne.affinities.counterpart import _pooled_lists

    # integer coordinates: every distance exact in any summation order, and many ties,
    # which both paths break by index
    owner = np.repeat(np.arange(9), rng.integers(5, 40, 9))
    pooled = rng.integers(-3, 4, size=(len(owner), dims)).astype(float)
    got = _pooled_lists(pooled, owner, 6)
    d2 = ((pooled[:, None, :] - pooled[None, :, :]) ** 2).sum(-1)
    d2[owner[:, None] == owner[None, :]] = np.inf
    want = np.argsort(d2, axis=1, kind="stable")[:, :6]
    np.testing.assert_array_equal(got, want)


def _sample(share, ratio, rows=None):
    from ctsne.affinities.mixing import SampledRows

    share, ratio = np.asarray(share, dtype=float), np.asarray(ratio, dtype=float)
    return SampledRows(np.arange(len(ratio)) if rows is None else rows, share, ratio)


def test_switch_expected_by_hand():
    from ctsne.affinities.cross_share import switch_expected

    trusted, untrusted = (None, 0.9, 0.5, 0.45), (None, 0.5, 0.5, 0.25)
    codes = np.zeros(10, dtype=int)
    low, high = np.full(10, 0.3), np.full(10, 0.5)
    assert switch_expected(_sample(low, low), codes, trusted)  # 0.3 < 0.5 · 0.9
    assert not switch_expected(_sample(high, high), codes, trusted)  # 0.5 ≥ 0.45
    assert not switch_expected(_sample(low, low), codes, untrusted)
    separated = np.full(10, 0.04)
    assert switch_expected(_sample(separated, separated), codes, untrusted)
    assert not switch_expected(_sample(separated, np.full(10, 0.3)), codes, untrusted)


def test_a_large_class_short_of_the_bound_is_seen_among_mixed_ones():
    from ctsne.affinities.cross_share import PROBE_CLASS_ROWS, falls_short

    big = PROBE_CLASS_ROWS
    codes = np.repeat([0, 1, 2], [big, 60, 5])  # class 2: too few rows to count alone
    ratio = np.r_[np.full(big, 0.4), np.full(60, 0.9), np.full(5, 0.1)]
    assert np.mean(ratio) > 0.5
    assert falls_short(_sample(ratio, ratio), codes, 0.5)  # class 0's mean, 0.4
    assert not falls_short(_sample(ratio, ratio), codes, 0.39)
    one_short = np.r_[np.full(big - 1, 0.4), [0.9], np.full(60, 0.9), np.full(5, 0.1)]
    codes_few = np.repeat([0, 1, 2], [big - 1, 61, 5])  # class 0 below the row count
    assert not falls_short(_sample(one_short, one_short), codes_few, 0.5)
    # rows index the points: the classes are those of the sampled points
    assert falls_short(_sample(ratio, ratio, rows=np.arange(len(ratio))[::-1]),
                       codes[::-1], 0.5)


def test_sampled_rows_are_the_standard_p_rows(rng):
    from ctsne.affinities.mixing import sampled_rows

    codes = np.repeat(np.arange(6), 50)
    X = rng.normal(size=(300, 4)) + 1.5 * rng.normal(size=(6, 4))[codes]
    rows, share, ratio = sampled_rows(X, codes, 8.0, sample=40, seed=3)
    np.testing.assert_array_equal(rows, np.sort(np.random.default_rng(3).choice(300, 40,
                                                                            replace=False)))
    table = standard_conditional(X, 8.0, neighbors="exact")
    want = point_cross_ratio(table.idx, table.cond, codes)[rows]
    np.testing.assert_allclose(ratio, want, rtol=1e-12, atol=1e-15)
    expected = 1.0 - 49 / 299
    np.testing.assert_allclose(share, want * expected, rtol=1e-12, atol=1e-15)

"""exact_objective against finite differences and against the definitions, written anew."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_affinities

from ctsne import exact_objective, exact_objective_terms
from ctsne.forces.attraction import Attraction, attraction, pair_blocks
from ctsne.forces.repulsion import ConditionalRepulsion
from ctsne.prior import make_prior, weights_from_sizes


def labels_with(n_classes, n, rng):
    lab = np.arange(n) % n_classes
    return rng.permutation(lab)


def beta_above_one(labels):
    """A β' > 1 inside the admissible interval (0, 1/(1 − ρ)) for these classes."""
    sizes = np.bincount(labels)
    n = sizes.sum()
    rho = np.sum(sizes * (sizes - 1)) / (n * (n - 1))
    if rho >= 1.0:
        return 1.5  # one class: β' is irrelevant
    return 1.0 + 0.5 * (1.0 / (1.0 - rho) - 1.0)


def central_differences(f, Y, h=1e-5):
    g = np.zeros_like(Y)
    for idx in np.ndindex(*Y.shape):
        Yp, Ym = Y.copy(), Y.copy()
        Yp[idx] += h
        Ym[idx] -= h
        g[idx] = (f(Yp) - f(Ym)) / (2 * h)
    return g


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("n_classes", [1, 2, 3, 4])
@pytest.mark.parametrize("side", ["below", "above"])
def test_gradient_matches_finite_differences(d, n_classes, side, rng):
    n = 14
    P = random_affinities(n, rng)
    Y = rng.normal(scale=2.0, size=(n, d))
    labels = labels_with(n_classes, n, rng)
    beta = 0.05 if side == "below" else beta_above_one(labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one class: "equals t-SNE"
        prior = make_prior(labels, n, beta=beta)
    kl, grad = exact_objective(P, Y, prior)
    fd = central_differences(lambda Z: exact_objective(P, Z, prior)[0], Y)
    assert np.linalg.norm(grad - fd) / np.linalg.norm(fd) < 1e-5


def test_gradient_finite_differences_sparse_nonsymmetric_P(rng):
    n = 12
    A = rng.random((n, n)) * (rng.random((n, n)) < 0.4)
    np.fill_diagonal(A, 0)
    P = sp.csr_matrix(A / A.sum())  # not symmetric
    Y = rng.normal(size=(n, 2))
    labels = labels_with(3, n, rng)
    kl, grad = exact_objective(P, Y, labels, beta=0.2)
    fd = central_differences(lambda Z: exact_objective(P, Z, labels, beta=0.2)[0], Y)
    assert np.linalg.norm(grad - fd) / np.linalg.norm(fd) < 1e-5


def naive_tsne_kl(P, Y):
    n = len(Y)
    num = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                num[i, j] = 1.0 / (1.0 + np.sum((Y[i] - Y[j]) ** 2))
    Q = num / num.sum()
    kl = 0.0
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0:
                kl += P[i, j] * np.log(P[i, j] / Q[i, j])
    return kl


def naive_ctsne_kl(P, Y, labels, alpha, beta):
    n = len(Y)
    R = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                w = alpha if labels[i] == labels[j] else beta
                R[i, j] = w / (1.0 + np.sum((Y[i] - Y[j]) ** 2))
    R /= R.sum()
    mask = P > 0
    return float(np.sum(P[mask] * np.log(P[mask] / R[mask])))


def test_plain_tsne_kl_when_weights_equal_one(rng):
    n = 20
    P = random_affinities(n, rng)
    Y = rng.normal(size=(n, 2))
    expected = naive_tsne_kl(P, Y)
    assert exact_objective(P, Y, None)[0] == pytest.approx(expected, rel=1e-12)
    labels = labels_with(3, n, rng)
    res = exact_objective_terms(P, Y, labels, beta=1.0)  # α' = β' = 1
    assert res.kl == pytest.approx(expected, rel=1e-12)
    assert res.prior_term == pytest.approx(0.0, abs=1e-12)


def test_kl_from_definition_and_its_split(rng):
    n = 18
    P = random_affinities(n, rng)
    Y = rng.normal(size=(n, 2))
    labels = labels_with(3, n, rng)
    alpha, beta, _ = weights_from_sizes(np.bincount(labels), beta=0.1)
    res = exact_objective_terms(P, Y, labels, beta=0.1, block_size=5)
    assert res.kl == pytest.approx(naive_ctsne_kl(P, Y, labels, alpha, beta), rel=1e-12)
    assert res.kl_tsne == pytest.approx(naive_tsne_kl(P, Y), rel=1e-12)
    assert res.kl == pytest.approx(res.kl_tsne + res.prior_term, rel=1e-12)


def test_relation_between_alpha_and_beta():
    sizes = np.array([5, 3, 2])
    n = sizes.sum()
    rho = np.sum(sizes * (sizes - 1)) / (n * (n - 1))  # 28 / 90
    a, b, r = weights_from_sizes(sizes, beta=0.01)
    assert r == pytest.approx(28 / 90)
    assert a * rho + b * (1 - rho) == pytest.approx(1.0)
    a2, b2, _ = weights_from_sizes(sizes, alpha=a)
    assert b2 == pytest.approx(0.01)


def test_relabelling_changes_nothing(rng):
    n = 30
    P = random_affinities(n, rng)
    Y = rng.normal(size=(n, 2))
    labels = labels_with(4, n, rng)
    perm = np.array([2, 0, 3, 1])
    names = np.array(["red", "green", "blue", "cyan"])
    kl0, g0 = exact_objective(P, Y, labels, beta=0.05)
    for relabelled in (perm[labels], names[labels], list(names[labels])):
        kl1, g1 = exact_objective(P, Y, relabelled, beta=0.05)
        assert kl1 == pytest.approx(kl0, rel=1e-14)
        np.testing.assert_allclose(g1, g0, rtol=1e-13, atol=1e-16)


def test_block_size_does_not_matter_and_sparse_equals_dense(rng):
    n = 25
    P = random_affinities(n, rng)
    Y = rng.normal(size=(n, 3))
    labels = labels_with(2, n, rng)
    a = exact_objective_terms(P, Y, labels, beta=0.3, block_size=n)
    b = exact_objective_terms(sp.csr_matrix(P), Y, labels, beta=0.3, block_size=4)
    assert a.kl == pytest.approx(b.kl, rel=1e-13)
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("combine", ["joint", "product"])
@pytest.mark.parametrize("beta", [0.01, 1.0, 1.05])
def test_decomposition_equals_direct_sum(combine, beta, rng):
    """The per-class composition (numba, exact engine) equals the direct O(n²) sums."""
    n, d = 200, 2
    P = random_affinities(n, rng, density=0.05)
    Y = rng.normal(scale=5.0, size=(n, d))
    prior = make_prior([rng.integers(0, 3, n), rng.integers(0, 4, n)], n, beta=beta,
                       combine=combine)
    ref = exact_objective_terms(P, Y, prior)
    F, S = ConditionalRepulsion(prior.terms(), n, d, "exact")(Y)
    Fa, _ = attraction(sp.csr_matrix(P), Y)
    grad = 4.0 * (Fa - F / S)
    assert S == pytest.approx(ref.S, rel=1e-12)
    np.testing.assert_allclose(grad, ref.grad, rtol=1e-9, atol=1e-14)


def test_product_weights_multiply(rng):
    n = 16
    P = random_affinities(n, rng)
    Y = rng.normal(size=(n, 2))
    l1, l2 = labels_with(2, n, rng), labels_with(3, n, rng)
    a1, b1, _ = weights_from_sizes(np.bincount(l1), beta=0.2)
    a2, b2, _ = weights_from_sizes(np.bincount(l2), beta=0.2)
    R = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                w = (a1 if l1[i] == l1[j] else b1) * (a2 if l2[i] == l2[j] else b2)
                R[i, j] = w / (1 + np.sum((Y[i] - Y[j]) ** 2))
    R /= R.sum()
    m = P > 0
    expected = np.sum(P[m] * np.log(P[m] / R[m]))
    kl, _ = exact_objective(P, Y, [l1, l2], beta=0.2, combine="product")
    assert kl == pytest.approx(expected, rel=1e-12)


def test_bad_P_is_rejected(rng):
    Y = rng.normal(size=(5, 2))
    with pytest.raises(ValueError, match="shape"):
        exact_objective(np.ones((4, 4)), Y)
    with pytest.raises(ValueError, match="sum to 1"):
        exact_objective(np.ones((5, 5)) - np.eye(5), Y)
    with pytest.raises(ValueError, match="diagonal"):
        exact_objective(np.eye(5) / 5, Y)


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_attraction_pairs_over_uneven_rows(threads, rng, monkeypatch):
    """Each pair of P's upper triangle is computed once, by one block of rows, into that
    block's buffer. Rows of very different lengths (2 to ~170 entries, ~100k in all: the
    parallel twin) still give the dense sums on any number of blocks (set here; a fit's
    follow P's size), every block holds about its share of the pairs, and its buffer spans
    every row it touches."""
    n = 1000
    lengths = 1 + (np.arange(n) ** 2) // 12_000
    rows = np.repeat(np.arange(n), lengths)
    cols = np.concatenate([rng.choice(n, size=m, replace=False) for m in lengths])
    A = sp.csr_matrix((rng.random(len(rows)), (rows, cols)), shape=(n, n))
    A.setdiag(0.0)
    P = (A + A.T).tocsr()
    P.eliminate_zeros()
    monkeypatch.setattr("numba.get_num_threads", lambda: threads)
    monkeypatch.setattr("ctsne.forces.attraction.fixed_blocks",
                        lambda indptr, indices: pair_blocks(indptr, indices, threads))
    att = Attraction(P, locality=False)
    U = att.U
    assert U.nnz * 2 == P.nnz
    b_rows, reach, offsets = pair_blocks(U.indptr, U.indices, threads)
    assert b_rows[0] == 0 and b_rows[-1] == n and np.all(np.diff(b_rows) >= 0)
    per_block = np.diff(U.indptr[b_rows])
    assert per_block.max() <= U.nnz / threads + np.diff(U.indptr).max()
    for t in range(threads):
        part = U.indices[U.indptr[b_rows[t]]:U.indptr[b_rows[t + 1]]]
        assert part.size == 0 or (part.min() >= b_rows[t] and part.max() < reach[t])
        assert offsets[t + 1] - offsets[t] == reach[t] - b_rows[t]
    Y = rng.normal(scale=20.0, size=(n, 2))
    diff = Y[:, None, :] - Y[None, :, :]
    T = 1.0 / (1.0 + (diff**2).sum(-1))
    ref = ((P.toarray() * T)[:, :, None] * diff).sum(1)
    F, _ = att(Y)
    assert len(att.blocks[0]) == threads + 1  # the pass ran on this many blocks
    assert np.abs(F - ref).max() <= 1e-12 * np.abs(ref).max()
    F, plogt = att(Y, True)
    assert np.abs(F - ref).max() <= 1e-12 * np.abs(ref).max()
    assert plogt == pytest.approx((P.toarray() * np.log(T)).sum(), rel=1e-12)


def test_attraction_blocks_stay_below_the_pairs_per_point(rng, monkeypatch):
    """A ring (each point paired with its two next points: 2 pairs a point) runs two
    blocks, not one per BLOCK_PAIRS pairs: each block's buffer spans up to n rows, and the
    forces are still the dense sums."""
    n = 20_000
    i = np.arange(n)
    rows = np.concatenate([i, i])
    cols = np.concatenate([(i + 1) % n, (i + 2) % n])
    A = sp.csr_matrix((rng.random(2 * n) + 0.1, (rows, cols)), shape=(n, n))
    P = (A + A.T).tocsr()
    monkeypatch.setattr("numba.get_num_threads", lambda: 8)
    att = Attraction(P, locality=False)
    Y = rng.normal(scale=5.0, size=(n, 2))
    F, _ = att(Y)
    assert len(att.blocks[0]) == 3  # two blocks
    C = P.tocoo()
    diff = Y[C.row] - Y[C.col]
    w = C.data / (1.0 + (diff**2).sum(1))
    ref = np.zeros((n, 2))
    np.add.at(ref, C.row, w[:, None] * diff)
    assert np.abs(F - ref).max() <= 1e-12 * np.abs(ref).max()


@pytest.mark.parametrize("locality", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_attraction_matches_dense_sums(d, threads, locality, rng, monkeypatch):
    """Attraction, each pair computed once (on one block, or on three, set here: the
    parallel twin), equals the dense ``Σ_j p_ij t_ij (y_i − y_j)`` and ``Σ p log t``; the
    same over P's copy in locality order (used above 50k points), whose results come back
    in the points' order."""
    n = 300
    P = random_affinities(n, rng)
    monkeypatch.setattr("numba.get_num_threads", lambda: threads)
    monkeypatch.setattr("ctsne.forces.attraction.fixed_blocks",
                        lambda indptr, indices: pair_blocks(indptr, indices, threads))
    att = Attraction(sp.csr_matrix(P), locality=locality)
    assert 2 * att.U.nnz >= 40_000  # the parallel twin where threads > 1
    if locality:  # a real reordering, not the identity
        assert not np.array_equal(att.order, np.arange(n))
    Y = rng.normal(scale=20.0, size=(n, d))
    diff = Y[:, None, :] - Y[None, :, :]
    T = 1.0 / (1.0 + (diff**2).sum(-1))
    ref = ((P * T)[:, :, None] * diff).sum(1)
    F, _ = att(Y)
    assert len(att.blocks[0]) == threads + 1
    assert np.abs(F - ref).max() <= 1e-12 * np.abs(ref).max()
    F, plogt = att(Y, True)
    np.testing.assert_allclose(F, ref, rtol=1e-12, atol=1e-15)
    assert plogt == pytest.approx((P * np.log(T)).sum(), rel=1e-12)


def test_large_gradient_assembled_in_place_as_numpy_would(rng):
    # above ASSEMBLE_IN_PLACE_FROM coordinates the gradient is built by a kernel in the
    # attraction's own array; same operations, so the same numbers bit for bit
    from ctsne.forces import gradient as gmod
    from ctsne.forces.gradient import ConditionalGradient
    from ctsne.prior import PriorTerm

    n = gmod.ASSEMBLE_IN_PLACE_FROM // 2 + 100
    rows = np.repeat(np.arange(n), 5)
    cols = (rows + rng.integers(1, n, rows.size)) % n
    C = sp.csr_matrix((rng.random(rows.size), (rows, cols)), shape=(n, n))
    P = (C + C.T).tocsr()
    P /= P.sum()
    Y = rng.normal(size=(n, 2)) * 5.0
    Y0 = Y.copy()
    prior = make_prior(rng.integers(0, 3, n), n)
    g = ConditionalGradient(P, prior, 2, "bh")
    grad, _ = g(Y, 12.0)
    attr, _ = g.attraction(Y)
    rep, S = g.repulsion(Y)
    np.testing.assert_array_equal(grad, 4.0 * (12.0 * attr - rep / S))
    np.testing.assert_array_equal(Y, Y0)  # nothing wrote into the map
    # plain t-SNE's one term of all points in their order: no gather, same forces
    from ctsne.forces.repulsion.barnes_hut import repulsion_bh

    plain = ConditionalRepulsion([PriorTerm(1.0, None, 1)], n, 2, "bh")
    assert plain.plans[0].identity
    F, Z = plain(Y)
    F_bh, Z_bh = repulsion_bh(Y, theta=0.5)
    np.testing.assert_array_equal(F, F_bh)
    assert Z == Z_bh
    np.testing.assert_array_equal(Y, Y0)


def test_gradient_in_locality_order_is_the_gradient_renumbered(rng, monkeypatch):
    # the estimator runs above LOCALITY_ABOVE points in P's locality order; the gradient
    # and the KL there are those of the points' own order, row r being point order[r]
    from ctsne.forces import gradient as gmod
    from ctsne.forces.gradient import ConditionalGradient

    monkeypatch.setattr(gmod, "LOCALITY_ABOVE", 0)
    n = 300
    P = sp.csr_matrix(random_affinities(n, rng, density=0.05))
    Y = rng.normal(size=(n, 2)) * 3.0
    prior = make_prior(rng.integers(0, 3, n), n)
    own = ConditionalGradient(P, prior, 2, "exact")
    moved = ConditionalGradient(P, prior, 2, "exact", in_locality_order=True)
    order = moved.order
    assert own.order is None and np.array_equal(np.sort(order), np.arange(n))
    assert not np.array_equal(order, np.arange(n))
    g, kl = own(Y, 4.0, True)
    g_moved, kl_moved = moved(Y[order], 4.0, True)
    np.testing.assert_allclose(g_moved, g[order], rtol=1e-10, atol=1e-12 * np.abs(g).max())
    assert kl_moved == pytest.approx(kl, rel=1e-13)


def test_a_fit_in_locality_order_is_the_fit_in_the_points_order(rng, monkeypatch):
    """The same map, callbacks and optimiser state (up to the summation order's rounding,
    over a short run), the run stopped by a callback included."""
    from ctsne import ConditionalTSNE
    from ctsne.forces import gradient as gmod

    X = rng.normal(size=(400, 5))
    X[:200] += 3.0
    labels = rng.integers(0, 3, 400)

    def fit(threshold):
        monkeypatch.setattr(gmod, "LOCALITY_ABOVE", threshold)
        seen = []

        def watch(iteration, kl, Y):
            seen.append(Y.copy())
            return iteration >= 40  # stops the second phase midway

        model = ConditionalTSNE(random_state=0, method="exact", early_exaggeration_iter=20,
                                n_iter=30, callbacks=watch, callbacks_every_iters=10)
        model.fit(X, labels)
        model.set_params(callbacks=None).optimize(5)
        order = model._descent().order
        assert (order is None) == (threshold > 0)
        assert order is None or not np.array_equal(order, np.arange(len(X)))
        # the KL of the map as the model reports it and as asked for afterwards
        assert model.kl_divergence() == pytest.approx(model.kl_divergence_, rel=1e-12)
        return model, seen

    own, seen_own = fit(10**9)
    moved, seen_moved = fit(0)
    assert moved.n_iter_ == own.n_iter_ == 45
    span = np.abs(own.embedding_).max()
    assert len(seen_moved) == len(seen_own) == 4
    for a, b in zip(seen_moved, seen_own, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6 * span)
    np.testing.assert_allclose(moved.embedding_, own.embedding_, atol=1e-6 * span)
    np.testing.assert_allclose(moved._state.gains, own._state.gains, atol=1e-9)
    np.testing.assert_allclose(moved._state.update, own._state.update, atol=1e-6 * span)
    assert moved.kl_divergence_ == pytest.approx(own.kl_divergence_, rel=1e-6)

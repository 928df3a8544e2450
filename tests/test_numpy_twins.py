"""The numpy twins of the once-per-fit kernels (ctsne._parallel) against the compiled
kernels they stand in for below their thresholds.

A twin follows its kernel's operations, so the two agree to rounding: their values are held
to each other within a relative 1e-12 (:func:`_agree`), and what they choose (neighbour
lists, sorted rows, which entries a trim drops) to be the same. The calibration also calls
``exp`` and ``log``, whose numpy versions differ from the C library's on CPUs with AVX-512,
and its Newton steps stop at the entropy's tolerance: it is held to ``CALIBRATION_RTOL``.
The mixing table's pass split into parts is held to its one-part result bit for bit (its
parts, not the threads, fix the order of its sums), and most twins also to an independent
numpy reference written here.
"""

import numpy as np
import pytest

from ctsne.affinities import calibration, counterpart, mixing, symmetry
from ctsne.neighbors import brute


def _lists(n, k, seed, p=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[3] = X[5]  # a duplicated point: tied distances
    d2 = brute.gram_squared_distances(X, X)
    np.fill_diagonal(d2, np.inf)
    order = np.argsort(d2, axis=1, kind="stable")[:, :k]
    dist = np.sqrt(np.maximum(np.take_along_axis(d2, order, axis=1), 0.0))
    return X, order.astype(np.int64), np.ascontiguousarray(dist)


def _agree(actual, desired, rtol=1e-12):
    """Equal within ``rtol``, relative to each value and (for values near 0) to the largest
    finite one; infinities and NaNs in the same places."""
    desired = np.asarray(desired, dtype=float)
    scale = float(np.max(np.abs(desired[np.isfinite(desired)]), initial=0.0))
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=rtol * scale)


def _both(kernel, *args, out_like):
    # the compiled kernel in two parts (its rows split as between two threads)
    a, b = np.empty_like(out_like), np.empty_like(out_like)
    n = len(out_like)
    kernel(*args, a, bounds=[0, n // 2, n])
    kernel.numpy(*args, b)
    return a, b


# agreement within a few ulps of the probabilities; a Newton step more or less near the
# entropy tolerance (1e-8) moves them far less than this
CALIBRATION_RTOL = 1e-7


@pytest.mark.parametrize("perplexity, k", [(5.0, 15), (30.0, 90), (10.0, 100)])
def test_plain_calibration_matches_the_kernel(perplexity, k):
    _, _, dist = _lists(400, k, int(perplexity))
    args = (dist, perplexity, calibration.CALIBRATE_TOL, calibration.CALIBRATE_MAX_ITER,
            np.zeros(1, dtype=np.int64), k, np.empty((0, 0)), 0.0)
    a, b = _both(calibration._calibrate_kernel, *args, out_like=dist)
    np.testing.assert_allclose(b, a, rtol=CALIBRATION_RTOL, atol=1e-15)
    np.testing.assert_allclose(b.sum(axis=1), 1.0, rtol=1e-12)
    # and each row has the perplexity asked for (an independent check of either)
    H = -np.sum(np.where(b > 0, b * np.log(np.where(b > 0, b, 1.0)), 0.0), axis=1)
    np.testing.assert_allclose(np.exp(H), perplexity, rtol=1e-6)


def _blocks(seed):
    rng = np.random.default_rng(seed)
    n = 300
    own = np.sort(rng.random((n, 60)) * rng.uniform(0.5, 2.0, (n, 1)), axis=1)
    other = np.sort(1.0 + rng.random((n, 40)), axis=1)
    dist = np.concatenate([own, other], axis=1)
    for i in range(0, n, 7):  # a short other-class block: empty slots at its end
        dist[i, 60 + rng.integers(0, 40):] = np.inf
    for i in range(0, n, 11):
        dist[i, rng.integers(0, 60):60] = np.inf
    dist[4, :60] = np.inf  # a row with an empty block gives its share to the other
    dist[5, 50:60] = dist[5, 49]  # equal last entries: trimmed together or not at all
    dist[6, 70:100] = 1.5
    dist[::13, 10] = dist[::13, 9] / 2  # unsorted blocks stay whole
    weights = rng.random((n, 2))
    return dist, np.array([0, 60, 100]), weights


@pytest.mark.parametrize("tail", [0.0, 0.01, 0.3])
def test_block_calibration_matches_the_kernel(tail):
    dist, starts, weights = _blocks(int(100 * tail))
    args = (dist, 30.0, calibration.CALIBRATE_TOL, calibration.CALIBRATE_MAX_ITER, starts,
            90, weights, tail)
    a, b = _both(calibration._calibrate_kernel, *args, out_like=dist)
    np.testing.assert_allclose(b, a, rtol=CALIBRATION_RTOL, atol=1e-15)
    # the same entries trimmed (exact zeros), and the empty block's row still sums to 1
    np.testing.assert_array_equal(a == 0.0, b == 0.0)
    np.testing.assert_allclose(b.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(b[4, :60] == 0.0)
    if tail > 0:
        assert np.count_nonzero(b == 0.0) > np.count_nonzero(~np.isfinite(dist))


def test_trim_tail_twin_drops_equal_entries_together():
    # hand-computed: a block 0.4, 0.3, 0.1, 0.1, 0.1; the three 0.1 hold 0.3 together
    p = np.array([[0.4, 0.3, 0.1, 0.1, 0.1], [0.4, 0.3, 0.1, 0.1, 0.1]])
    calibration._trim_tail_np(p, np.array([5, 5]), 0.35)
    np.testing.assert_allclose(p[0], [0.4 / 0.7, 0.3 / 0.7, 0.0, 0.0, 0.0])
    q = np.array([[0.4, 0.3, 0.1, 0.1, 0.1]])
    calibration._trim_tail_np(q, np.array([5]), 0.25)  # the group exceeds the tail: kept
    np.testing.assert_array_equal(q[0], [0.4, 0.3, 0.1, 0.1, 0.1])


@pytest.mark.parametrize("gather", [5, 64, 32_768])  # runs of rows, and rows longer
@pytest.mark.parametrize("n", [200, 500])  # the row sort's radix passes: one, and two
def test_sorting_and_symmetrisation_match_the_kernels(monkeypatch, gather, n):
    monkeypatch.setattr(symmetry, "SYMMETRY_GATHER", gather)
    _, idx, dist = _lists(n, 30, 1)
    cond = calibration.calibrate(dist, 10.0)
    cond[np.random.default_rng(2).random(cond.shape) < 0.3] = 0.0  # trimmed tails
    small_idx, small_cond = idx.copy(), cond.copy()
    P_small = symmetry.symmetrize(small_idx, small_cond)
    monkeypatch.setattr(symmetry, "NUMPY_BELOW_ENTRIES", 0)  # the kernels' path
    monkeypatch.setattr(symmetry._sort_rows, "numpy", None)
    big_idx, big_cond = idx.copy(), cond.copy()
    P_big = symmetry.symmetrize(big_idx, big_cond)
    for name in ("indptr", "indices"):  # the same entries
        np.testing.assert_array_equal(getattr(P_small, name), getattr(P_big, name))
    _agree(P_small.data, P_big.data)
    np.testing.assert_array_equal(small_idx, big_idx)  # the same rows reordered in place
    _agree(small_cond, big_cond)
    # independently: (C + Cᵀ)/2n
    n = len(idx)
    C = np.zeros((n, n))
    np.put_along_axis(C, idx, cond, axis=1)
    np.testing.assert_allclose(P_small.toarray(), (C + C.T) / (2 * n), rtol=1e-15)


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_transpose_in_parts_is_a_stable_sort_by_column(parts):
    # Cᵀ's rows from C's rows split into parts: the flat positions of C's positive
    # entries stably sorted by column (each Cᵀ row in row order), whatever the parts
    _, idx, dist = _lists(700, 20, 5)
    cond = calibration.calibrate(dist, 7.0)
    cond[np.random.default_rng(4).random(cond.shape) < 0.3] = 0.0
    symmetry._sort_rows.run(idx, cond, items=len(idx), work=0)  # zeros to each row's end
    n, k = idx.shape
    kept = idx.ravel() < n
    want = np.flatnonzero(kept)[np.argsort(idx.ravel()[kept], kind="stable")]
    slots = np.zeros((parts, n), dtype=np.int64)
    bounds = [0, parts // 2, parts]
    symmetry._transpose(idx, slots, np.empty(0, dtype=np.int32), bounds=bounds)
    np.testing.assert_array_equal(slots.sum(axis=0), np.bincount(idx.ravel()[kept],
                                                                 minlength=n))
    tptr = symmetry._part_slots(slots)
    tsrc = np.empty(int(tptr[-1]), dtype=np.int32)
    symmetry._transpose(idx, slots, tsrc, bounds=bounds)
    np.testing.assert_array_equal(tsrc, want)
    np.testing.assert_array_equal(np.diff(tptr), np.bincount(idx.ravel()[kept], minlength=n))


def test_mixing_sums_match_the_kernels():
    _, idx, dist = _lists(400, 30, 3)
    cond = calibration.calibrate(dist, 10.0)
    codes = np.arange(400, dtype=np.int64) % 3
    # the table's pass in parts of 64 rows (7 parts): on one thread and split over two the
    # same bits, in numpy the same to rounding; its row sums are _row_cross's on the table
    # as a CSR matrix
    outs = []
    for run in ("one", "two", "numpy"):
        out = (np.empty((7, 3)), np.empty((7, 3)), np.empty(400), np.empty(400))
        args = (idx, cond, codes, 64, *out)
        if run == "numpy":
            mixing._table_sums.numpy(*args)
        else:
            mixing._table_sums(*args, bounds=[0, 7] if run == "one" else [0, 3, 7])
        outs.append(out)
    for a, b in zip(outs[0], outs[1], strict=True):  # split: the same bits
        np.testing.assert_array_equal(a, b)
    for a, b in zip(outs[0], outs[2], strict=True):  # the numpy twin
        _agree(b, a)
    rows = (np.empty(400), np.empty(400))
    mixing._row_cross(np.arange(0, 400 * 30 + 1, 30), idx.ravel(), cond.ravel(), codes,
                      *rows, bounds=[0, 400])
    np.testing.assert_array_equal(outs[0][2], rows[0])
    np.testing.assert_array_equal(outs[0][3], rows[1])
    # the class sums of P = (C + Cᵀ)/2n by hand: each entry to its row's and column's class
    dense = np.zeros((400, 400))
    np.add.at(dense, (np.repeat(np.arange(400), 30), idx.ravel()), cond.ravel())
    Pn = dense + dense.T
    apart_d = codes[:, None] != codes[None, :]
    mass, cross = outs[0][0].sum(axis=0), outs[0][1].sum(axis=0)
    for c in range(3):
        np.testing.assert_allclose(mass[c], Pn[codes == c].sum(), rtol=1e-13)
        np.testing.assert_allclose(cross[c], (Pn * apart_d)[codes == c].sum(), rtol=1e-13)
    P = symmetry.symmetrize(idx.copy(), cond.copy())
    outs = [(np.empty(400), np.empty(400)) for _ in range(2)]
    mixing._row_cross(P.indptr, P.indices, P.data, codes, *outs[0], bounds=[0, 150, 400])
    mixing._row_cross.numpy(P.indptr, P.indices, P.data, codes, *outs[1])
    _agree(outs[1][0], outs[0][0])
    _agree(outs[1][1], outs[0][1])
    # independently: each row's mass and its mass on other classes, from the dense P
    dense = P.toarray()
    np.testing.assert_allclose(outs[0][0], dense.sum(axis=1), rtol=1e-13)
    apart = codes[:, None] != codes[None, :]
    np.testing.assert_allclose(outs[0][1], (dense * apart).sum(axis=1), rtol=1e-13, atol=0)


@pytest.mark.parametrize("nq, m, p, k", [(150, 700, 10, 90), (4, 9, 3, 12), (200, 600, 2, 30)])
def test_scans_match_the_kernels(nq, m, p, k):
    rng = np.random.default_rng(m)
    Y, Q = rng.normal(size=(m, p)), rng.normal(size=(nq, p)) + 2.0
    Y[5] = Y[1]
    Q[0] = Y[1]
    if p == 2:  # a grid: many equal distances, kept in row order by both
        Y, Q = np.round(Y, 1), np.round(Q, 1)
    Yt = np.ascontiguousarray(Y.T)
    got = []
    blocks = (nq + brute._BLOCK - 1) // brute._BLOCK
    for variant in (lambda *a: brute._knn(*a, bounds=[0, blocks // 2, blocks]),
                    brute._knn.numpy):
        idx, dist = np.empty((nq, k), dtype=np.int64), np.empty((nq, k))
        variant(Q, Yt, k, idx, dist)
        got.append((idx, dist))
    np.testing.assert_array_equal(got[0][0], got[1][0])  # the same lists, ties included
    _agree(got[1][1], got[0][1])
    # the counterpart trust's and pooled lists' scans of one product, by rows (columns
    # own_lo[i]:own_hi[i] left out) and by columns: the kernels in parts, their numpy
    # twins, and a stable sort of the distances (ties in index order)
    gram = Q @ Y.T
    rn, cn = np.einsum("ij,ij->i", Q, Q), np.einsum("ij,ij->i", Y, Y)
    d2 = brute.gram_squared_distances(Q, Y)
    _agree(counterpart._distances_small(gram, rn, cn), d2)  # the twins' distances
    rows = np.arange(nq)
    for own_lo, own_hi in ((np.full(nq, m), np.full(nq, m)),  # nothing left out
                           (rows, rows + 1),  # row i's own point, column i
                           (np.minimum(rows // 2, m), np.minimum(rows // 2 + 3, m))):
        table = d2.copy()
        cols = np.arange(m)
        table[(cols >= own_lo[:, None]) & (cols < own_hi[:, None])] = np.inf
        a, b = np.empty((nq, k), dtype=np.int64), np.empty((nq, k), dtype=np.int64)
        counterpart._smallest_apart(gram, rn, cn, own_lo, own_hi, k, a,
                                    bounds=[0, nq // 3, nq])
        counterpart._smallest_apart.numpy(gram, rn, cn, own_lo, own_hi, k, b)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, _stable_smallest(table, k))
    # both directions in one pass, from the product or summed feature by feature, the
    # rows split into 1-3 parts whose column lists are merged: the same lists as the
    # stable sorts of the rows and of the columns (and of the twins' distances)
    kk = min(k, nq, m)
    direct = counterpart._direct_small(Q, Y)
    np.testing.assert_allclose(direct, d2, atol=1e-9)
    no_gram, no_norm = np.empty((0, 0)), np.empty(0)
    for parts in (1, 2, 3):
        for table, source in ((d2, (gram, rn, cn)), (direct, (no_gram, no_norm, no_norm))):
            a = np.empty((nq, kk), dtype=np.int64)
            col_best = np.empty((parts, m, kk))
            col_rows = np.empty((parts, m, kk), dtype=np.int64)
            counterpart._pair_scan(Q, np.ascontiguousarray(Y.T), *source, kk, False, a,
                                   col_best, col_rows, bounds=[0, parts // 2, parts])
            np.testing.assert_array_equal(a, _stable_smallest(table, kk))
            np.testing.assert_array_equal(counterpart._column_lists(col_best, col_rows, kk),
                                          _stable_smallest(table.T, kk))
    # a set's own lists (each row not its own neighbour), rows only, in 1-3 parts
    own = counterpart._direct_small(Y, Y)
    np.fill_diagonal(own, np.inf)
    km = min(k, m - 1)
    for parts in (1, 2, 3):
        a = np.empty((m, km), dtype=np.int64)
        none = np.empty((parts, 0, km))
        counterpart._pair_scan(Y, np.ascontiguousarray(Y.T), no_gram, no_norm, no_norm, km,
                               True, a, none, none.astype(np.int64),
                               bounds=[0, parts // 2, parts])
        np.testing.assert_array_equal(a, _stable_smallest(own, km))


def _stable_smallest(table, k):
    # each row's k smallest columns, ties in column order; places past the finite
    # entries hold 0, as the scans leave them
    order = np.argsort(table, axis=1, kind="stable")[:, :k]
    finite = np.take_along_axis(table, order, axis=1) < np.inf
    out = np.zeros((len(table), k), dtype=np.int64)
    out[:, :order.shape[1]] = np.where(finite, order, 0)
    return out


def test_smallest_in_rows_by_hand():
    d = np.array([[3.0, 1.0, 2.0, 1.0, np.inf], [np.nan, 0.5, 0.5, 0.5, 0.1]])
    cols, vals = brute.smallest_in_rows(d, 3)
    np.testing.assert_array_equal(cols, [[1, 3, 2], [4, 1, 2]])
    np.testing.assert_array_equal(vals, [[1.0, 1.0, 2.0], [0.1, 0.5, 0.5]])
    cols, vals = brute.smallest_in_rows(d, 0)
    assert cols.shape == vals.shape == (2, 0)


def test_the_fixed_part_matches_the_kernel():
    from ctsne.forces import gradient
    from ctsne.prior import Prior
    from ctsne.shared_states import with_states

    _, idx, dist = _lists(300, 30, 4)
    P = symmetry.symmetrize(idx, calibration.calibrate(dist, 10.0))
    P.data[::17] = 0.0  # explicit zeros are skipped by both
    rng = np.random.default_rng(5)
    for m in (0, 1, 2, "states"):
        cols = 1 if m == "states" else m
        codes = rng.integers(0, 3, size=(cols, 300))
        alphas, betas = rng.uniform(1, 3, cols), rng.uniform(0.01, 0.1, cols)
        prior = Prior(codes=list(codes), classes=[np.arange(3)] * cols, alphas=alphas,
                      betas=betas)
        states = rng.integers(0, 4, 300)
        if m == "states":
            prior = with_states(prior, states)
        terms = prior.terms() if cols else []
        T = np.stack([np.zeros(300, dtype=np.int64) if t.codes is None else t.codes
                      for t in terms]) if terms else np.zeros((1, 300), dtype=np.int64)
        coefs = np.array([t.coef for t in terms]) if terms else np.ones(1)
        args = (P.indptr, P.indices, P.data, T, coefs)
        a, b = np.empty(300), np.empty(300)
        gradient._fixed_part(*args, a, bounds=[0, 100, 300])  # in two parts
        gradient._fixed_part.numpy(*args, b)
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-18)
        # independently: Σ_j p_ij (log p_ij − log w_ij) per row, dense, w by its definition
        D = P.toarray()
        W = np.ones_like(D)
        for c in range(cols):
            same = codes[c][:, None] == codes[c][None, :]
            W *= np.where(same, alphas[c], betas[c])
        if m == "states":  # different classes in different states: full weight
            W = np.where((codes[0][:, None] != codes[0][None, :])
                         & (states[:, None] != states[None, :]), 1.0, W)
        ref = np.sum(np.where(D > 0, D * (np.log(np.where(D > 0, D, 1.0)) - np.log(W)), 0.0),
                     axis=1)
        np.testing.assert_allclose(b, ref, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("local_connectivity", [0.0, 0.5, 1.0, 2.5, 14.0, 20.0])
def test_umap_bandwidths_match_the_kernel(local_connectivity):
    from ctsne.affinities import fuzzy

    rng = np.random.default_rng(int(10 * local_connectivity))
    dist = rng.random((300, 14)) * rng.uniform(0.1, 10.0, (300, 1))
    dist[3] = 0.0  # every neighbour a duplicate: ρ = 0, the table's mean bounds σ
    dist[4, :5] = 0.0
    dist[5, 3:] = np.inf  # missing neighbours
    dist[6] = 1.0  # ties: the sum does not depend on σ
    dist[7] = np.inf
    mean = float(dist[np.isfinite(dist)].mean())
    args = (dist, np.log2(15.0), local_connectivity, mean, fuzzy.SMOOTH_TOL,
            fuzzy.SMOOTH_MAX_ITER)
    got = []
    for variant in (lambda *a: fuzzy._smooth_kernel(*a, bounds=[0, 120, 300]),
                    fuzzy._smooth_kernel.numpy):
        sigmas, rhos = np.empty(300), np.empty(300)
        variant(*args, sigmas, rhos)
        got.append((sigmas, rhos))
    _agree(got[1][1], got[0][1])  # ρ: no exp
    np.testing.assert_allclose(got[1][0], got[0][0], rtol=1e-7)
    # independently: each bisected row's memberships sum to log₂ 15
    sigmas, rhos = got[1]
    w = np.where(np.isfinite(dist), np.exp(-np.maximum(dist - rhos[:, None], 0.0)
                                           / sigmas[:, None]), 0.0)
    # solvable rows: fewer than log₂ 15 entries at or below ρ (each holds membership 1)
    solved = np.isfinite(dist).all(axis=1)
    solved &= np.count_nonzero(dist <= rhos[:, None], axis=1) < np.log2(15.0) - 1e-6
    solved &= sigmas > fuzzy.MIN_SIGMA_SCALE * dist.mean(axis=1)
    if local_connectivity <= 2.5:
        assert solved.sum() > 250
        np.testing.assert_allclose(w[solved].sum(axis=1), np.log2(15.0), atol=1e-8)
    else:  # fewer positive neighbours than local_connectivity: ρ is the farthest of them
        farthest = np.max(np.where(np.isfinite(dist) & (dist > 0), dist, 0.0), axis=1)
        np.testing.assert_array_equal(rhos, farthest)


@pytest.mark.parametrize("n, d", [(1, 2), (7, 2), (1000, 2), (333, 3)])
def test_the_optimiser_step_matches_the_kernel(n, d):
    from ctsne.optimization import optimizer

    rng = np.random.default_rng(n + d)
    for cap in (-1.0, 0.3, 5.0):
        for threads in (1, 2, 3):
            Y, grad = rng.normal(size=(n, d)), rng.normal(size=(n, d))
            update = 0.3 * rng.normal(size=(n, d))
            update[::5] = 0.0  # no sign: the gain decays
            gains = rng.uniform(0.005, 2.0, size=(n, d))  # some below the floor
            a = [x.copy() for x in (Y, grad, update, gains)]
            b = [x.copy() for x in (Y, grad, update, gains)]
            mean_a = optimizer._step_compiled(*a, 40.0, 0.8, 0.01, cap, threads)
            mean_b = optimizer._step_small(*b, 40.0, 0.8, 0.01, cap, threads)
            _agree(mean_b, mean_a)
            for x, y in zip(a, b, strict=True):
                _agree(y, x)
            # independently: the delta-bar-delta rule, the capped step and the new mean
            g = np.maximum(np.where(update * grad < 0, gains + 0.2, gains * 0.8), 0.01)
            u = 0.8 * update - 40.0 * g * grad
            if cap > 0:
                u *= np.minimum(1.0, cap / np.linalg.norm(u, axis=1))[:, None]
            np.testing.assert_allclose(b[3], g, rtol=1e-15)
            np.testing.assert_allclose(b[2], u, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(b[0], Y + u, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(mean_b, (Y + u).mean(axis=0), rtol=1e-9, atol=1e-12)

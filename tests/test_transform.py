"""New points into a fitted map: objective and gradient, tree repulsion, placement, errors."""

import pickle

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import KNeighborsClassifier

from ctsne import ConditionalTSNE
from ctsne.estimator.placement import encode_new_prior, placement_objective
from ctsne.forces.repulsion.reference import ReferenceRepulsion
from ctsne.prior import make_prior, weight_terms


def _dense_objective(Y_flat, Y_ref, P, W):
    """Σ_i KL(p_i ‖ q_i), q_ij = w_ij t_ij / Σ_j w_ij t_ij, over dense (m, n) P and W."""
    Y = Y_flat.reshape(len(P), -1)
    d2 = ((Y[:, None, :] - Y_ref[None, :, :]) ** 2).sum(-1)
    wt = W / (1 + d2)
    Q = wt / wt.sum(axis=1, keepdims=True)
    pos = P > 0
    return float(np.sum(P[pos] * np.log(P[pos] / Q[pos])))


def test_gradient_matches_finite_differences_of_the_objective():
    rng = np.random.default_rng(0)
    n, m, k = 40, 6, 7
    Y_ref = rng.normal(size=(n, 2)) * 3
    Y_new = rng.normal(size=(m, 2)) * 3
    idx = np.stack([rng.choice(n, k, replace=False) for _ in range(m)])
    cond = rng.random((m, k))
    cond /= cond.sum(axis=1, keepdims=True)
    # two independent priors (products of weights); new point 0 has an unseen class
    codes_ref = [rng.integers(0, 3, n), rng.integers(0, 2, n)]
    codes_new = [rng.integers(0, 3, m), rng.integers(0, 2, m)]
    codes_new[0][0] = -1
    alphas, betas = [2.5, 1.4], [0.05, 0.6]
    W = np.ones((m, n))
    for c_r, c_n, a, b in zip(codes_ref, codes_new, alphas, betas, strict=True):
        W *= np.where(c_n[:, None] == c_r[None, :], a, b)
    P = np.zeros((m, n))
    np.put_along_axis(P, idx, cond, axis=1)
    rep = ReferenceRepulsion(Y_ref, codes_ref, codes_new, weight_terms(alphas, betas),
                             theta=0.0)
    log_w = np.log(np.take_along_axis(W, idx, axis=1))
    value, grad = placement_objective(Y_new, Y_ref, idx, cond, rep, log_w)
    expected = _dense_objective(Y_new.ravel(), Y_ref, P, W)
    assert value == pytest.approx(expected, rel=1e-12)
    fd = approx_fprime(Y_new.ravel(), _dense_objective, 1e-7, Y_ref, P, W)
    np.testing.assert_allclose(grad.ravel(), fd, rtol=1e-5, atol=1e-7)


def test_tree_repulsion_matches_the_exact_sums():
    rng = np.random.default_rng(1)
    Y_ref = np.concatenate([rng.normal(size=(1500, 2)) * 5, rng.normal(size=(500, 2)) + 20])
    Y_new = rng.normal(size=(200, 2)) * 8 + 5
    codes_ref, codes_new = [rng.integers(0, 4, 2000)], [rng.integers(0, 4, 200)]
    alphas, betas = [3.0], [0.1]
    W = np.where(codes_new[0][:, None] == codes_ref[0][None, :], 3.0, 0.1)
    diff = Y_new[:, None, :] - Y_ref[None, :, :]
    t = 1 / (1 + (diff**2).sum(-1))
    Z_exact = (W * t).sum(1)
    F_exact = np.einsum("ij,ijd->id", W * t**2, diff)
    # monopole cells at θ = 0.5: measured Z within 1 %, |ΔF|/|F| ~1 % median, 5 % max
    for theta, z_tol, f_tol in ((0.0, 1e-10, 1e-10), (0.5, 1.5e-2, 1.5e-2)):
        terms = weight_terms(alphas, betas)
        F, Z = ReferenceRepulsion(Y_ref, codes_ref, codes_new, terms, theta)(Y_new)
        np.testing.assert_allclose(Z, Z_exact, rtol=z_tol)
        err = np.linalg.norm(F - F_exact, axis=1) / np.linalg.norm(F_exact, axis=1)
        assert np.median(err) < f_tol and err.max() < 6 * f_tol


def test_encode_new_prior_uses_the_fitted_codes():
    # joint classes of two columns: ('a', 1), ('b', 1), ('a', 2), ('c', 2)
    prior = make_prior([["a", "b", "a", "c"] * 2, [1, 1, 2, 2] * 2], 8, beta=0.1)
    with pytest.warns(UserWarning, match=r"1 label\(s\) not seen .*\('d', 1\)"):
        codes = encode_new_prior(prior, [["b", "a", "d"], [1, 2, 1]], 3)
    fitted = prior.codes[0]
    assert codes[0].tolist() == [fitted[1], fitted[2], -1]
    with pytest.raises(ValueError, match="same columns"):
        encode_new_prior(prior, ["a", "b", "c"], 3)


@pytest.fixture(scope="module")
def blobs_map():
    X, y = make_blobs(1100, n_features=8, centers=5, cluster_std=1.5, random_state=3)
    batch = np.random.default_rng(3).integers(0, 3, len(X))
    X[:, :2] += batch[:, None] * 6.0  # a batch effect for the prior to remove
    model = ConditionalTSNE(random_state=0, n_iter=250, early_exaggeration_iter=150, n_jobs=1)
    model.fit(X[:1000], batch[:1000])
    return model, X, y, batch


def test_held_out_points_land_in_their_cluster_without_moving_the_map(blobs_map):
    model, X, y, batch = blobs_map
    before = model.embedding_.copy()
    data_before = model.training_data_.copy()
    Y_new = model.transform(X[1000:], batch[1000:])
    assert Y_new.shape == (100, 2)
    np.testing.assert_array_equal(model.embedding_, before)
    np.testing.assert_array_equal(model.training_data_, data_before)
    knn = KNeighborsClassifier(10).fit(before, y[:1000])
    assert knn.score(before, y[:1000]) > 0.95  # the map separates the clusters
    assert knn.score(Y_new, y[1000:]) >= 0.9
    # new points do not interact: placing half of them gives the same positions
    np.testing.assert_allclose(model.transform(X[1000:1050], batch[1000:1050]), Y_new[:50],
                               rtol=1e-9, atol=1e-9)
    # a pickled model still places points
    again = pickle.loads(pickle.dumps(model)).transform(X[1000:1010], batch[1000:1010])
    np.testing.assert_allclose(again, Y_new[:10], rtol=1e-9, atol=1e-9)


def test_prior_changes_the_placement(blobs_map):
    _, X, y, batch = blobs_map
    # The map is made by hand, not fitted: a fitted map differs from CPU to CPU (summation
    # order, FMA), and so did any comparison made on it. Five groups by cluster y, each
    # mixing the three batches, as a map that factored the batch out would.
    rng = np.random.default_rng(4)
    angle = 2 * np.pi * y[:1000] / 5
    Y_ref = 30 * np.column_stack([np.cos(angle), np.sin(angle)])
    Y_ref += rng.normal(0.0, 3.0, Y_ref.shape)
    model = ConditionalTSNE(init=Y_ref, n_iter=0, early_exaggeration_iter=0, n_jobs=1)
    model.fit(X[:1000], batch[:1000])
    np.testing.assert_array_equal(model.embedding_, Y_ref)
    with_prior = model.transform(X[1000:], batch[1000:])
    with pytest.warns(UserWarning, match="prior_new not given"):
        without = model.transform(X[1000:])

    def same_batch_share(Y_new):
        """Share of the 10 nearest map points in the placed point's own batch (1000 slots)."""
        d2 = ((Y_new[:, None, :] - Y_ref[None, :, :]) ** 2).sum(-1)
        nearest = np.argsort(d2, axis=1, kind="stable")[:, :10]
        return float(np.mean(batch[:1000][nearest] == batch[1000:, None]))

    # With its labels a point is pulled among its own batch less. Measured 0.363 with the
    # labels, 0.395 without (chance: about 1/3); over other noise seeds the gap was
    # 0.019-0.048. The margin, 15 of the 1000 slots, is far above what rounding can move
    # (perturbing X by 1e-9 and the map by 1e-6 changed no slot) and below every gap seen.
    assert same_batch_share(with_prior) < same_batch_share(without) - 0.015


def test_transform_errors(blobs_map):
    model, X, y, batch = blobs_map
    with pytest.raises(NotFittedError, match="call fit"):
        ConditionalTSNE().transform(X)
    with pytest.raises(ValueError, match="has 5 features but the model was fitted on 8"):
        model.transform(X[:, :5], batch)
    with pytest.raises(ValueError, match="one label per new row"):
        model.transform(X[:10], batch[:9])
    plain = ConditionalTSNE(n_iter=0, early_exaggeration_iter=0, random_state=0).fit(X[:100])
    with pytest.raises(ValueError, match="fitted without a prior"):
        plain.transform(X[:5], batch[:5])


def test_reference_neighbours_in_the_new_points_tree_order(rng):
    # above QUERY_CHUNK // 4 new rows the queries run in a k-d tree's order over them;
    # each answer must land in its own row (brute force as the reference)
    from ctsne.estimator import placement

    X_ref, X_new = rng.normal(size=(400, 3)), rng.normal(size=(3 * placement.QUERY_CHUNK, 3))
    idx, dist = placement.reference_neighbors(X_ref, X_new, 6)
    D = np.sqrt(((X_new[:, None] - X_ref[None]) ** 2).sum(-1))
    np.testing.assert_array_equal(idx, np.argsort(D, axis=1)[:, :6])
    np.testing.assert_allclose(dist, np.sort(D, axis=1)[:, :6], rtol=1e-12)


@pytest.mark.parametrize("cls", ["ConditionalTSNE", "ConditionalUMAP"])
def test_a_new_row_far_outside_the_training_data_is_placed_with_a_warning(cls):
    # a value near 1e155 overflowed the squared distances (an IndexError in the search);
    # the training data and the new rows now share one safe scale, as a fit's data does
    import ctsne

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 5)), rng.integers(0, 2, 300)
    kw = {"n_iter": 30, "early_exaggeration_iter": 30} if cls == "ConditionalTSNE" else {
        "n_epochs": 20}
    model = getattr(ctsne, cls)(random_state=0, **kw).fit(X, y)
    X_new = X[:3].copy()
    X_new[1, 2] = 1e155
    with pytest.warns(UserWarning, match=r"row 1 of X_new lies far outside the training"):
        Y = model.transform(X_new, y[:3])
    assert Y.shape == (3, 2) and np.all(np.isfinite(Y))
    # rows within range are placed as they would be on their own
    np.testing.assert_allclose(Y[[0, 2]], model.transform(X_new[[0, 2]], y[[0, 2]]),
                               atol=1e-8)


def test_a_pipeline_routes_the_new_points_labels_as_the_warning_says():
    import sklearn
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(200, 4)), rng.integers(0, 2, 200)
    with sklearn.config_context(enable_metadata_routing=True):
        est = ConditionalTSNE(n_iter=20, early_exaggeration_iter=20, random_state=0)
        pipe = make_pipeline(StandardScaler(), est.set_fit_request(prior=True))
        pipe.fit(X, prior=y)
        with pytest.warns(UserWarning, match=r"set_transform_request\(prior_new=True\)"):
            pipe.transform(X[:3])
        est.set_transform_request(prior_new=True)
        Y = pipe.transform(X[:3], prior_new=y[:3])
    direct = est.transform(StandardScaler().fit(X).transform(X[:3]), y[:3])
    np.testing.assert_allclose(Y, direct, atol=1e-10)

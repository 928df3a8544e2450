"""The torch engine (ctsne.torch_engine) against the numba engine and exact references.

On the CPU (``device="cpu"``) unless ``CTSNE_TEST_TORCH_DEVICE`` names another torch device
(``cuda`` on a GPU machine: the same tests, the same tolerances). Skipped when torch is not
installed (``pip install ctsne[gpu]``; CI's .ci/run installs the CPU build).
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch", reason="the torch engine needs PyTorch "
                            "(pip install 'ctsne[gpu]'); .ci/run installs the CPU build")

from conftest import device_affinities as shared_device_affinities  # noqa: E402

from ctsne.affinities.calibration import calibrate, calibrate_row  # noqa: E402
from ctsne.affinities.modes import input_affinities  # noqa: E402
from ctsne.forces.gradient import ConditionalGradient  # noqa: E402
from ctsne.forces.objective import exact_objective  # noqa: E402
from ctsne.forces.repulsion.fft import repulsion_fft  # noqa: E402
from ctsne.prior import PriorTerm, make_prior  # noqa: E402
from ctsne.torch_engine.affinities import symmetrize_device, to_scipy  # noqa: E402
from ctsne.torch_engine.calibration import calibrate_rows  # noqa: E402
from ctsne.torch_engine.gradient import TorchGradient  # noqa: E402
from ctsne.torch_engine.neighbors import block_knn  # noqa: E402
from ctsne.torch_engine.repulsion import FFTRepulsion, Groups, exact_repulsion  # noqa: E402

DEVICE = torch.device(os.environ.get("CTSNE_TEST_TORCH_DEVICE", "cpu"))


def device_affinities(*args, **kwargs):
    kwargs.setdefault("device", DEVICE)
    return shared_device_affinities(*args, **kwargs)


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _t(a, **kwargs):
    """A tensor on the device under test."""
    return torch.tensor(a, device=DEVICE, **kwargs)


def _host(a) -> np.ndarray:
    return np.asarray(a.cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64)


def _rel(a, b) -> float:
    a, b = _host(a), _host(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def blobs():
    """Three classes, one of them set apart, and a second prior independent of them."""
    rng = np.random.default_rng(3)
    n = 420
    codes = rng.integers(0, 3, n)
    other = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 6)) + 4.0 * (codes == 1)[:, None] + 1.5 * other[:, None]
    return X, codes, other


def _layout(n, seed=0, scale=4.0):
    return np.random.default_rng(seed).normal(size=(n, 2)) * np.array([scale, 0.6 * scale])


# ---------------------------------------------------------------- repulsion
@pytest.mark.parametrize("d", [1, 2])
def test_batched_fft_equals_the_per_class_loop_of_numba_fft(d):
    # every group (the all-points term and each class) on its own grid, as repulsion_fft
    # builds it for that group alone: the batched FFT must give the same sums
    rng = np.random.default_rng(1)
    n = 1500
    codes = rng.integers(0, 4, n)
    Y = _layout(n, 2, 8.0)[:, :d] + 15.0 * (codes == 2)[:, None]
    terms = [PriorTerm(0.02, None, 1), PriorTerm(1.7, codes, 4)]
    F_loop, S_loop = np.zeros_like(Y), 0.0
    for term in terms:
        groups = [np.ones(n, bool)] if term.codes is None else [codes == c for c in range(4)]
        for mask in groups:
            f, z = repulsion_fft(Y[mask])
            F_loop[mask] += term.coef * f
            S_loop += term.coef * z
    engine = FFTRepulsion(Groups(terms, n, DEVICE), d)
    F, S = engine(_t(Y))
    assert _rel(F, F_loop) < 1e-10
    assert abs(float(S) / S_loop - 1) < 1e-10
    F32, S32 = engine(_t(Y, dtype=torch.float32))
    assert _rel(F32, F_loop) < 1e-4 and abs(float(S32) / S_loop - 1) < 1e-5
    # and the interpolation itself against all pairs (the default 2-D grid: measured 2.3e-3)
    Fe, Se = exact_repulsion(_t(Y), engine.groups)
    assert _rel(F, Fe) < 5e-3 and abs(float(S) / float(Se) - 1) < 1e-4


def test_a_class_with_no_points_adds_nothing_to_the_fft_repulsion():
    # a term that counts a fifth class no point is in: its group's bounding box and
    # self-pairs must stay out of the sums (its grid is empty)
    rng = np.random.default_rng(4)
    n = 900
    codes = rng.integers(0, 4, n)
    Y = _layout(n, 5, 6.0) + 9.0 * (codes == 1)[:, None]
    sums = []
    for count in (4, 5):
        engine = FFTRepulsion(Groups([PriorTerm(0.5, None, 1), PriorTerm(1.2, codes, count)],
                                     n, DEVICE), 2)
        sums.append(engine(_t(Y)))
    assert _rel(sums[1][0], sums[0][0]) < 1e-12
    assert abs(float(sums[1][1]) / float(sums[0][1]) - 1) < 1e-12


def test_exact_repulsion_weights_every_pair():
    rng = np.random.default_rng(2)
    n = 40
    Y = rng.normal(size=(n, 3))
    a, b = rng.integers(0, 2, n), rng.integers(0, 3, n)
    # w_ij = (0.3 + 1.1[a]) (0.5 + 0.8[b]) expanded into indicator terms
    terms = [PriorTerm(0.15, None, 1), PriorTerm(0.55, a, 2), PriorTerm(0.24, b, 3),
             PriorTerm(0.88, a * 3 + b, 6)]
    F, S = exact_repulsion(_t(Y), Groups(terms, n, DEVICE))
    W = (0.3 + 1.1 * (a[:, None] == a)) * (0.5 + 0.8 * (b[:, None] == b))
    diff = Y[:, None, :] - Y[None, :, :]
    T = 1.0 / (1.0 + (diff ** 2).sum(-1))
    np.fill_diagonal(T, 0.0)
    assert np.allclose(F.cpu().numpy(), ((W * T * T)[..., None] * diff).sum(1), rtol=1e-12)
    assert np.isclose(float(S), (W * T).sum(), rtol=1e-12)


# ---------------------------------------------------------------- gradient
@pytest.fixture(scope="module")
def problem(blobs):
    X, codes, other = blobs
    P = input_affinities(X, 20.0, codes, "balanced", 0.85).P
    return P, codes, other


@pytest.mark.parametrize("which", ["none", "one", "product"])
def test_gradient_matches_the_numba_engine(problem, which):
    P, codes, other = problem
    n = P.shape[0]
    prior = {"none": None, "one": make_prior(codes, n, beta=0.05),
             "product": make_prior(np.c_[codes, other], n, beta=0.1, combine="product")}[which]
    Y = _layout(n, 5, 3.0)
    ref, kl_ref = ConditionalGradient(P, prior, 2, "exact")(Y.copy(), 3.0, True)
    g64, kl64 = TorchGradient(P, prior, 2, "exact", DEVICE, torch.float64)(_t(Y), 3.0,
                                                                          True)
    assert _rel(g64, ref) < 1e-5 and abs(kl64 - kl_ref) < 1e-9
    g32, kl32 = TorchGradient(P, prior, 2, "exact", DEVICE, torch.float32)(
        _t(Y, dtype=torch.float32), 3.0, True)
    assert g32.dtype == torch.float32
    assert _rel(g32, ref) < 1e-3 and abs(kl32 - kl_ref) < 1e-4
    # the FFT path carries only the interpolation error
    gf, klf = TorchGradient(P, prior, 2, "fft", DEVICE, torch.float64)(_t(Y), 3.0, True)
    assert _rel(gf, ref) < 5e-3 and abs(klf - kl_ref) < 1e-3


def test_gradient_and_kl_match_the_exact_objective_and_finite_differences(problem):
    P, codes, _ = problem
    n = P.shape[0]
    prior = make_prior(codes, n, beta=0.05)
    Y = _layout(n, 6, 2.0)
    kl_ref, grad_ref = exact_objective(P, Y, codes, beta=0.05)
    grad = TorchGradient(P, prior, 2, "exact", DEVICE, torch.float64)
    g, kl = grad(_t(Y), 1.0, True)
    assert abs(kl - kl_ref) < 1e-10
    assert _rel(g, grad_ref) < 1e-10
    # central differences of the engine's own KL along a few coordinates
    rng = np.random.default_rng(0)
    h = 1e-5
    for i, k in zip(rng.choice(n, 6, replace=False), rng.integers(0, 2, 6), strict=True):
        up, down = Y.copy(), Y.copy()
        up[i, k] += h
        down[i, k] -= h
        fd = (grad.kl(up) - grad.kl(down)) / (2 * h)
        assert abs(fd - float(g[i, k])) < 1e-6 + 1e-4 * abs(fd)


def test_unsupported_methods_are_refused():
    from ctsne.torch_engine.device import check_torch_options

    with pytest.raises(ValueError, match="Barnes-Hut runs on backend='numba'"):
        check_torch_options("cpu", "auto", "bh", 2)
    with pytest.raises(ValueError, match="method='fft' supports n_components ≤ 2"):
        check_torch_options("cpu", "auto", "fft", 3)


# ---------------------------------------------------------------- calibration, kNN, P
def test_calibration_matches_the_numba_search():
    rng = np.random.default_rng(4)
    dist = np.sort(rng.gamma(2.0, 1.0, size=(300, 45)), axis=1)
    dist[:10] *= 1e-6  # tiny and huge scales calibrate the same (relative distances)
    dist[10:20] *= 1e5
    ours = calibrate_rows(_t(dist), 15.0).cpu().numpy()
    assert np.abs(ours - calibrate(dist, 15.0)).max() < 1e-9
    # per-row perplexities over a prefix of valid entries, as the balanced blocks do
    filled = rng.integers(3, 46, 300)
    valid = np.arange(45)[None, :] < filled[:, None]
    perp = np.maximum(1.0, 15.0 * filled / 45)
    ours = calibrate_rows(_t(np.where(valid, dist, np.inf)), _t(perp),
                          _t(valid)).cpu().numpy()
    for i in range(300):
        ref = np.zeros(45)
        calibrate_row(dist[i, :filled[i]].copy(), perp[i], 1e-8, 200, ref[:filled[i]])
        assert np.abs(ours[i] - ref).max() < 1e-9
    assert np.allclose(ours.sum(1), 1.0) and np.all(ours[~valid] == 0)


@pytest.mark.parametrize("work", ["float64", "float32"])
def test_block_knn_is_exact(work):
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(5)
    X = rng.normal(size=(700, 12)) * 50.0 + 1e3  # far from the origin: the expanded form
    i, d = block_knn(_t(X), _t(X), 25, same=True,   # cancels there
                     work_dtype=getattr(torch, work))
    d_ref, i_ref = NearestNeighbors(n_neighbors=26).fit(X).kneighbors(X)
    assert np.array_equal(i.cpu().numpy(), i_ref[:, 1:])
    assert np.allclose(d.cpu().numpy(), d_ref[:, 1:], rtol=1e-12)


@pytest.mark.parametrize("mode, weight", [("standard", None), ("balanced", 0.85),
                                          ("balanced", 0.6), ("revised", None)])
def test_P_equals_the_numba_engines(blobs, mode, weight):
    X, codes, _ = blobs
    ref = input_affinities(X, 20.0, codes, mode, weight, neighbors="exact")
    built, plan = device_affinities(X, 20.0, codes, mode, weight, device=DEVICE)
    assert plan == "device" and built.mode == ref.mode == mode
    assert built.P.shape == ref.P.shape and sp.isspmatrix_csr(built.P)
    assert abs(built.P - ref.P).max() <= 1e-6
    assert abs(built.P - built.P.T).max() < 1e-15 and np.isclose(built.P.sum(), 1.0)


def test_the_tail_trim_is_the_numba_engines():
    from ctsne.affinities.calibration import trim_tail
    from ctsne.torch_engine.affinities import _trim_tail

    rng = np.random.default_rng(5)
    n, w = 300, 12
    dist = np.sort(rng.gamma(2.0, size=(n, w)), axis=1)
    dist[::7, 3] = dist[::7, 2]  # equal distances: equal values, dropped together or kept
    dist[::5] = dist[::5, ::-1]  # descending rows are left whole
    dist[::11, 9:] = np.inf  # empty slots last
    p = rng.dirichlet(np.ones(w), size=n)
    p = -np.sort(-p, axis=1)  # values fall as distances grow
    p[::7, 3] = p[::7, 2]
    p[np.isinf(dist)] = 0.0
    p /= p.sum(1, keepdims=True)
    p[1::10] = rng.dirichlet(np.ones(w), size=len(p[1::10]))  # values out of order, in
    dist[1::10] = dist[1::10, ::-1].copy()  # rows left whole (descending distances)
    dist[::13] = np.inf  # a whole block empty (a class of one point): all 0, kept so
    p[::13] = 0.0
    ref = p.copy()
    for i in range(n):
        filled = int(np.isfinite(dist[i]).sum())
        if np.all(np.diff(dist[i, :filled]) >= 0):  # only sorted blocks are trimmed
            trim_tail(ref[i, :filled], 0.2)
    got = _trim_tail(_t(dist, dtype=torch.float64), _t(p, dtype=torch.float64), 0.2)
    assert (ref == 0).sum() > (p == 0).sum() + n  # entries went
    assert np.all(np.isfinite(_host(got)))
    np.testing.assert_allclose(_host(got), ref, rtol=1e-12, atol=1e-15)


def test_P_with_a_class_of_one_point_is_the_numba_engines(blobs):
    X, codes, _ = blobs
    codes = codes.copy()
    codes[7] = 3  # a class of one point: its own block is empty
    ref = input_affinities(X, 20.0, codes, "balanced", 0.8, neighbors="exact")
    built, plan = device_affinities(X, 20.0, codes, "balanced", 0.8, device=DEVICE)
    assert plan == "device"
    assert np.all(np.isfinite(built.P.data))
    assert abs(built.P - ref.P).max() <= 1e-6


@pytest.mark.parametrize("mode", ["auto", "balanced"])
def test_P_chosen_from_the_data_is_the_numba_engines(blobs, mode):
    # "auto" and "balanced" without within_weight choose each class's share by the rule
    # of the mode objects, which runs as written on the device's lists: the same choice,
    # for the same reason, and the same P
    X, codes, other = blobs
    modes = set()
    shuffled = np.random.default_rng(0).permutation(codes)  # labels the data ignores
    for prior in (codes, other, shuffled):
        ref = input_affinities(X, 20.0, prior, mode, neighbors="exact")
        built, plan = device_affinities(X, 20.0, prior, mode, neighbors="exact", device=DEVICE)
        assert plan == "device" and built.mode == ref.mode
        assert built.cross_share.reason == ref.cross_share.reason
        np.testing.assert_allclose(built.cross_share.class_share, ref.cross_share.class_share,
                                   rtol=1e-9)
        np.testing.assert_allclose(built.mixing.class_cross, ref.mixing.class_cross, rtol=1e-9)
        assert abs(built.P - ref.P).max() <= 1e-6
        modes.add(built.mode)
    if mode == "auto":
        assert modes == {"standard", "balanced"}  # both of the rule's answers are checked


def test_the_device_P_reaches_scipy_as_a_canonical_csr():
    # the CSR arrays are taken from the coalesced tensor as they are: they must equal
    # scipy's own conversion of the same entries (duplicates summed, rows sorted)
    rng = np.random.default_rng(6)
    n, k = 300, 7
    idx = rng.integers(0, n, (n, k))  # repeats within rows and pairs listed both ways
    cond = rng.random((n, k))
    cond[rng.random((n, k)) < 0.2] = 0.0  # zero entries are left out
    P = to_scipy(symmetrize_device(_t(idx), _t(cond)))
    rows = np.repeat(np.arange(n), k)
    keep = cond.ravel() > 0
    C = sp.coo_matrix((cond.ravel()[keep], (rows[keep], idx.ravel()[keep])), shape=(n, n))
    ref = ((C + C.T) / (2.0 * n)).tocsr()
    ref.sum_duplicates()
    ref.sort_indices()
    assert P.indices.dtype == np.int32 and P.has_canonical_format
    assert np.array_equal(P.indptr, ref.indptr) and np.array_equal(P.indices, ref.indices)
    assert np.allclose(P.data, ref.data, rtol=1e-14, atol=0)
    copy = P.copy()
    copy.has_sorted_indices = False
    copy.sort_indices()  # the flag set by to_scipy is true
    assert np.array_equal(copy.indices, P.indices)


def test_P_with_many_classes_pools_the_other_classes():
    # more than PER_CLASS_UP_TO other classes: one pooled other-class block
    rng = np.random.default_rng(6)
    X = rng.normal(size=(360, 5))
    codes = np.arange(360) % 12
    ref = input_affinities(X, 10.0, codes, "balanced", 0.7, neighbors="exact")
    built, _ = device_affinities(X, 10.0, codes, "balanced", 0.7, device=DEVICE)
    assert abs(built.P - ref.P).max() <= 1e-6


def test_faiss_search_finds_the_exact_neighbours_with_float64_distances():
    pytest.importorskip("faiss", reason="the FAISS path needs faiss (pip install faiss-cpu)")
    from ctsne.torch_engine.neighbors import standard_knn

    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 8)) + 3.0 * rng.integers(0, 5, 3000)[:, None]
    i, d = standard_knn(_t(X), 20, "faiss", random_state=0)
    i_ref, d_ref = block_knn(_t(X), _t(X), 20, same=True)
    i, d = i.cpu().numpy(), d.cpu().numpy()
    recall = np.mean([len(set(a) & set(b)) / 20 for a, b in zip(i, i_ref.cpu().numpy(),
                                                              strict=True)])
    assert recall > 0.99
    assert np.all(i != np.arange(3000)[:, None])
    assert np.allclose(d, np.linalg.norm(X[i] - X[:, None, :], axis=2), rtol=1e-12)
    assert np.all(np.diff(d, axis=1) >= 0)


def test_auto_with_missing_labels_decides_as_the_numba_engine(blobs):
    # the labelled points decide (the device table's labelled sums go through the host's)
    X, codes, _ = blobs
    labelled = np.random.default_rng(1).random(len(codes)) > 0.3
    prior = np.where(labelled, codes, 3)  # the missing-label class
    ref = input_affinities(X, 20.0, prior, "auto", neighbors="exact", labelled=labelled)
    built, plan = device_affinities(X, 20.0, prior, "auto", neighbors="exact",
                                    labelled=labelled, device=DEVICE)
    assert plan == "device" and built.mode == ref.mode == "balanced"
    assert built.cross_share.reason == ref.cross_share.reason
    assert abs(built.P - ref.P).max() <= 1e-6


def test_the_host_search_keeps_the_metric_and_the_numba_rule(blobs, monkeypatch):
    # where the device does not search (another metric, or above its exact search) the
    # host's search runs with the fit's metric and its own exact/approximate rule: the
    # numba engine's lists, so its P (it searched Euclidean, approximately, before)
    import ctsne.torch_engine.neighbors as device_graphs

    X, codes, _ = blobs
    ref = input_affinities(X, 20.0, None, "standard", metric="cosine")
    built, plan = device_affinities(X, 20.0, None, "standard", metric="cosine",
                                    device=DEVICE)
    assert plan == "host" and abs(built.P - ref.P).max() < 1e-15
    # as above the device's exact search without FAISS
    monkeypatch.setattr(device_graphs, "search_plan", lambda *args: "host")
    ref = input_affinities(X, 20.0, codes, "standard")
    built, plan = device_affinities(X, 20.0, codes, "standard", device=DEVICE)
    assert plan == "host" and abs(built.P - ref.P).max() < 1e-15
    # the by-class lists the plan cannot search come from the host's searches, request
    # by request, and the graph is the host's to rounding
    for mode in ("balanced", "revised", "auto"):
        ref = input_affinities(X, 20.0, codes, mode)
        built, plan = device_affinities(X, 20.0, codes, mode, device=DEVICE)
        assert plan == "host" and built.mode == ref.mode
        assert abs(built.P - ref.P).max() <= 1e-12 * ref.P.max(), mode

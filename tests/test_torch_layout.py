"""ConditionalUMAP and ConditionalLargeVis on the torch engine against the numba engine.

The fuzzy graph is compared entry by entry with the host's, the negative draws draw by
draw with :func:`ctsne.optimization.negatives.draw`, an attraction-only run step by step
with the numba SGD (where both orders of an epoch agree), and whole fits by the quality of
their maps. On the CPU unless ``CTSNE_TEST_TORCH_DEVICE`` names another torch device;
skipped when torch is not installed.
"""

import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch", reason="the torch engine needs PyTorch "
                            "(pip install 'ctsne[gpu]'); .ci/run installs the CPU build")

from conftest import device_affinities as shared_device_affinities  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.manifold import trustworthiness  # noqa: E402
from sklearn.neighbors import NearestNeighbors  # noqa: E402

from ctsne import ConditionalLargeVis, ConditionalUMAP  # noqa: E402
from ctsne.affinities.fuzzy import fuzzy_graph, smooth_knn  # noqa: E402
from ctsne.affinities.graphs import FuzzyGraph  # noqa: E402
from ctsne.affinities.modes import Auto, Balanced, Standard  # noqa: E402
from ctsne.metrics import neighborhood_preservation  # noqa: E402
from ctsne.neighbors.provider import NeighborLists  # noqa: E402
from ctsne.optimization.negatives import NegativeSampler, draw  # noqa: E402
from ctsne.optimization.sgd import epochs_per_sample, optimize_layout  # noqa: E402
from ctsne.torch_engine.affinities import to_scipy  # noqa: E402
from ctsne.torch_engine.fuzzy import fuzzy_graph_device, smooth_knn_device  # noqa: E402
from ctsne.torch_engine.layout import (  # noqa: E402
    draw_negatives,
    last_classes,
    shifted_cdf,
    torch_layout,
)

DEVICE = torch.device(os.environ.get("CTSNE_TEST_TORCH_DEVICE", "cpu"))

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def lists():
    """15-NN lists with duplicated points (ρ = 0 rows) and a row with missing entries."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    X[:12] = X[0]
    dist, idx = NearestNeighbors(n_neighbors=14).fit(X).kneighbors()
    dist[3, 6:], idx[3, 6:] = np.inf, -1
    return idx, dist


@pytest.mark.parametrize("local_connectivity", [0.0, 1.0, 1.5, 3.0])
@pytest.mark.parametrize("mix", [1.0, 0.0, 0.3])
def test_the_fuzzy_graph_is_the_hosts(lists, local_connectivity, mix):
    idx, dist = lists
    sig, rho = smooth_knn(dist, 15, local_connectivity)
    sig_d, rho_d = smooth_knn_device(torch.tensor(dist, device=DEVICE), 15,
                                     local_connectivity)
    np.testing.assert_allclose(sig_d.cpu().numpy(), sig, rtol=1e-12)
    np.testing.assert_allclose(rho_d.cpu().numpy(), rho, rtol=1e-12, atol=0)
    G = fuzzy_graph(idx, dist, 15, mix, local_connectivity)
    G_d = to_scipy(fuzzy_graph_device(torch.tensor(idx, device=DEVICE),
                                      torch.tensor(dist, device=DEVICE), 15, mix,
                                      local_connectivity))
    assert G_d.nnz == G.nnz
    assert (G_d != G_d.T).nnz == 0  # exactly symmetric, as the host's
    np.testing.assert_array_equal(G_d.indices, G.indices)
    np.testing.assert_allclose(G_d.data, G.data, rtol=1e-12)


def device_affinities(*args, **kwargs):
    kwargs.setdefault("device", DEVICE)
    return shared_device_affinities(*args, **kwargs)


def test_device_graphs_are_the_modes_graphs():
    """Each mode's UMAP graph built from the device's lists is the one it builds from the
    host's exact lists: "auto"'s rule decides the same way on both."""
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 3, 300)
    X = rng.normal(size=(300, 4)) + 3.0 * codes[:, None]
    graph = FuzzyGraph(12)
    shuffled = rng.permutation(codes)
    for mode, prior, want in ((Standard(), codes, "standard"), (Balanced(0.7), codes, "balanced"),
                              (Balanced(), codes, "balanced"), (Auto(), codes, "balanced"),
                              (Auto(), shuffled, "standard")):
        host = mode.build(NeighborLists(X, prior, method="exact"), graph)
        built, plan = device_affinities(X, graph, prior, mode, neighbors="exact",
                                        device=DEVICE)
        assert plan == "device" and built.mode == host.mode == want
        diff = abs(built.P - host.P)
        assert diff.max() < 1e-10 * host.P.max(), mode
        assert built.mixing.cross == pytest.approx(host.mixing.cross, abs=1e-10)
        if host.cross_share is not None:  # the rule's choice, and why
            assert built.cross_share.reason == host.cross_share.reason
            np.testing.assert_allclose(built.cross_share.class_share,
                                       host.cross_share.class_share, rtol=1e-9)


def test_a_batch_of_negatives_is_drawn_as_the_numba_draw():
    sizes = np.array([5, 0, 40, 17])  # an empty class: never drawn
    classes = np.repeat(np.arange(4), sizes)
    W = np.where(np.eye(4, dtype=bool), 2.5, 0.3)
    sampler = NegativeSampler.from_classes(classes, W).with_source_rows(np.full((1, 4), 0.3))
    rng = np.random.default_rng(2)
    m = 5000
    src = rng.integers(0, len(sampler.cdf), m)
    u1, u2 = rng.random(m), rng.random(m)
    u1[:4] = [0.0, 1.0 - 2.0**-32, sampler.cdf[0, 0], sampler.cdf[2, 1]]  # the edges
    want = sampler.members[[draw(sampler.offsets, sampler.cdf, s, a, b)
                            for s, a, b in zip(src, u1, u2, strict=True)]]
    got = draw_negatives(torch.tensor(sampler.members, device=DEVICE),
                         torch.tensor(sampler.offsets, device=DEVICE),
                         shifted_cdf(sampler, DEVICE), last_classes(sampler, DEVICE),
                         torch.tensor(src, device=DEVICE),
                         torch.tensor(u1, device=DEVICE), torch.tensor(u2, device=DEVICE))
    np.testing.assert_array_equal(got.cpu().numpy(), want)


def test_a_draw_near_1_stays_in_its_rows_last_class():
    # u1 + 2r rounds up to the next row's start for u1 within 2⁻⁵² of 1; the last class
    # here is empty, so a clamp to the last class would draw a point of class 1's size
    sizes = np.array([5, 40, 0])
    classes = np.repeat(np.arange(3), sizes)
    W = np.where(np.eye(3, dtype=bool), 2.0, 0.5)
    sampler = NegativeSampler.from_classes(classes, W).with_source_rows(np.full((5, 3), 0.5))
    assert last_classes(sampler, DEVICE).cpu().tolist() == [1] * len(sampler.cdf)
    rows = len(sampler.cdf)
    src = np.arange(rows)
    u1, u2 = np.full(rows, 1.0 - 2.0**-53), np.full(rows, 0.3)
    want = sampler.members[[draw(sampler.offsets, sampler.cdf, r, a, b)
                            for r, a, b in zip(src, u1, u2, strict=True)]]
    got = draw_negatives(torch.tensor(sampler.members, device=DEVICE),
                         torch.tensor(sampler.offsets, device=DEVICE),
                         shifted_cdf(sampler, DEVICE), last_classes(sampler, DEVICE),
                         torch.tensor(src, device=DEVICE), torch.tensor(u1, device=DEVICE),
                         torch.tensor(u2, device=DEVICE))
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    assert np.all(classes[got.cpu().numpy()] == 1)


def test_an_attraction_only_run_takes_the_numba_steps():
    """Without negatives and with one edge per head, the numba engine's epoch (heads read
    the others at the epoch's start, tails move after) is the two-pass epoch here."""
    rng = np.random.default_rng(3)
    n = 60
    perm = rng.permutation(n)
    head = perm.copy()
    tail = np.roll(perm, 1)  # a cycle: every point heads one edge and tails one
    w = rng.uniform(0.2, 1.0, n)
    eps = epochs_per_sample(w, 30)
    Y0 = rng.normal(scale=3.0, size=(n, 2))
    sampler = NegativeSampler.uniform(n)
    common = dict(gamma=1.0, negative_sample_rate=0, initial_lr=0.7, seed=4)
    want = optimize_layout(Y0.copy(), head, tail, eps, 30, 1.58, 0.9, sampler, **common)
    got = torch_layout(Y0, head, tail, eps, 30, 1.58, 0.9, sampler, device=DEVICE,
                       dtype=torch.float64, **common)
    # the numba kernel takes d²ᵇ in single precision
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    assert np.abs(got - Y0).max() > 0.5  # the run moved the points


def _quality(cls, backend, X, prior, seeds=(0, 1)):
    scores = []
    for seed in seeds:
        Y = cls(random_state=seed, backend=backend, device=str(DEVICE)).fit_transform(X, prior)
        scores.append((trustworthiness(X, Y, n_neighbors=15),
                       neighborhood_preservation(X, Y, 15)))
    return np.mean(scores, axis=0)


@pytest.mark.parametrize("cls,with_prior", [(ConditionalUMAP, False), (ConditionalUMAP, True),
                                            (ConditionalLargeVis, True)])
def test_torch_maps_are_as_good_as_the_numba_maps(cls, with_prior):
    """The issue's bar: trustworthiness and 15-NN preservation within 0.01 of the numba
    engine's (digits, two seeds each; measured gaps ≤ 0.005)."""
    X, y = load_digits(return_X_y=True)
    prior = y % 2 if with_prior else None
    numba_q = _quality(cls, "numba", X, prior)
    torch_q = _quality(cls, "torch", X, prior)
    assert np.all(torch_q > numba_q - 0.01), (numba_q, torch_q)


def test_a_seed_fixes_a_torch_map_and_transform_runs_on_the_host(monkeypatch):
    import ctsne.torch_engine.affinities as device_graphs
    import ctsne.torch_engine.layout as device_layout

    calls = []
    for module, name in ((device_layout, "torch_layout"),
                         (device_graphs, "fuzzy_graph_device")):
        real = getattr(module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    X, y = load_digits(return_X_y=True)
    X, y = X[:500], y[:500]
    kw = dict(random_state=7, backend="torch", device=str(DEVICE), n_epochs=60)
    a = ConditionalUMAP(**kw).fit(X, y % 3)
    # the fit ran on the device's graph and layout, not on the numba engine's
    assert calls == ["fuzzy_graph_device", "torch_layout"]
    b = ConditionalUMAP(**kw).fit_transform(X, y % 3)
    np.testing.assert_array_equal(a.embedding_, b)
    other = ConditionalUMAP(**{**kw, "random_state": 8}).fit_transform(X, y % 3)
    assert np.abs(other - b).max() > 1e-3
    assert sp.issparse(a.graph_) and a.affinities_ in ("standard", "balanced")
    loaded = pickle.loads(pickle.dumps(a))
    assert "_fit_engine" not in loaded.__dict__  # a device handle is chosen again
    np.testing.assert_array_equal(loaded.transform(X[:20], y[:20] % 3),
                                  a.transform(X[:20], y[:20] % 3))


def test_callbacks_see_the_map_and_stop_the_torch_layout():
    X, _ = load_digits(return_X_y=True)
    seen = []

    def stop_at_20(epoch, kl, Y):
        seen.append((epoch, kl, Y.shape))
        return epoch >= 20

    model = ConditionalUMAP(random_state=0, backend="torch", device=str(DEVICE),
                            n_epochs=100, callbacks=stop_at_20, callbacks_every_iters=10)
    model.fit(X[:300])
    assert seen == [(10, None, (300, 2)), (20, None, (300, 2))]


def test_torch_options_are_refused_before_any_work():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="backend must be one of"):
        ConditionalUMAP(backend="jax").fit(X)
    with pytest.raises(ValueError, match="device must be"):
        ConditionalLargeVis(backend="torch", device="tpu").fit(X)
    with pytest.raises(ValueError, match="precision must be one of"):
        ConditionalUMAP(backend="torch", precision="half").fit(X)

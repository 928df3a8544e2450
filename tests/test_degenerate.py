"""Degenerate geometries give a map or a clear error, never a traceback from deep inside
(issue 51, item 1): rank-1 data, points on a line, a few distinct points, a flat axis of
the start, huge and tiny scales, for every estimator and repulsion engine."""

import importlib.util

import numpy as np
import pytest

from ctsne import ConditionalLargeVis, ConditionalTSNE, ConditionalUMAP
from ctsne.forces.repulsion import conditional
from ctsne.forces.repulsion.exact import repulsion_exact
from ctsne.forces.repulsion.fft import FLAT_SPAN, grid_shape, repulsion_fft

SHORT = dict(n_iter=60, early_exaggeration_iter=40, random_state=0, n_jobs=1)


def _rank1(n, rng):
    X = np.zeros((n, 31))
    X[:, 0] = rng.uniform(size=n)
    return X


def _geometries(n):
    rng = np.random.default_rng(0)
    u = rng.uniform(size=n)
    few = rng.normal(size=(4, 6))
    X = rng.normal(size=(n, 8))
    return {
        "rank 1": _rank1(n, rng),
        "on a line": u[:, None] * rng.normal(size=5) + 3.0,
        "4 distinct points": few[rng.integers(0, 4, n)],
        "half duplicates": np.vstack([np.repeat(X[:1], n // 2, axis=0), X[n // 2:]]),
        "one column": u[:, None],
        "huge": X * 1e300,
        "tiny": X * 1e-300,
    }


@pytest.fixture
def every_engine(monkeypatch):
    """Groups of any size take the engine asked for (not the exact kernel below ~500
    points, nor when the cost model says exact is faster)."""
    monkeypatch.setattr(conditional, "EXACT_BELOW", {"bh": 2, "fft": 2})
    monkeypatch.setattr(conditional, "EXACT_FIT_MAX", 2)
    monkeypatch.setattr(conditional, "_fft_exact_is_faster", lambda m, span, params: False)


@pytest.mark.parametrize("span", [0.0, 5e-324, 1e-310, FLAT_SPAN, 1e-300, 1e-20, 3.0, 1e200])
def test_grid_shape_takes_any_span(span):
    # regression: a zero or subnormal span overflowed the spacing ladder's exponent
    # (OverflowError: cannot convert float infinity to integer)
    delta, n_nodes, half = grid_shape(np.array([10.0, span]))
    assert np.all(np.isfinite(delta)) and np.all(delta > 0)
    assert np.all(np.isfinite(1.0 / delta))
    assert np.all(n_nodes >= 5) and np.all(half >= n_nodes)
    assert n_nodes[1] <= 4096


def test_grid_shape_refuses_a_non_finite_span():
    with pytest.raises(ValueError, match="finite"):
        grid_shape(np.array([np.nan, 1.0]))


@pytest.mark.parametrize("scale", [0.0, 1e-320, 1e-300, 1e-12])
def test_fft_with_a_flat_axis_matches_exact(scale):
    rng = np.random.default_rng(1)
    Y = np.c_[rng.uniform(0, 20, 1500), rng.uniform(0, 1, 1500) * scale]
    F, Z = repulsion_fft(Y)
    Fe, Ze = repulsion_exact(Y)
    assert Z == pytest.approx(Ze, rel=1e-5)
    assert np.abs(F - Fe).max() < 3e-3 * np.abs(Fe).max()


@pytest.mark.parametrize("scale", [1e-300, 1e-28])
def test_fft_is_accurate_on_a_tiny_map(scale):
    # the spacing follows the span however small: a map shrunk under early exaggeration
    # needs forces accurate at its own scale
    Y = np.random.default_rng(2).normal(size=(1500, 2)) * scale
    F, Z = repulsion_fft(Y)
    Fe, Ze = repulsion_exact(Y)
    assert Z == pytest.approx(Ze, rel=1e-12)
    np.testing.assert_allclose(F, Fe, rtol=0, atol=1e-10 * np.abs(Fe).max())


def test_rank_one_data_reaches_the_engine_choice():
    # regression: 50,000 × 31 with one uniform column crashed in fft.grid_shape, called by
    # the Barnes-Hut/FFT cost model with the map's flat second axis; 1,300 points with a
    # prior of two classes are past EXACT_FIT_MAX and EXACT_BELOW, on the same path
    X = _rank1(1300, np.random.default_rng(0))
    for prior in (None, np.arange(1300) % 2):
        Y = ConditionalTSNE(**SHORT).fit_transform(X, prior)
        assert np.all(np.isfinite(Y)) and Y[:, 0].std() > 1.0


def _estimators():
    out = {f"t-SNE {m}": (lambda m=m: ConditionalTSNE(method=m, **SHORT))
           for m in ("exact", "bh", "fft")}
    out["UMAP"] = lambda: ConditionalUMAP(n_epochs=30, random_state=0, n_jobs=1)
    out["LargeVis"] = lambda: ConditionalLargeVis(n_epochs=30, random_state=0, n_jobs=1)
    return out


ESTIMATORS = _estimators()


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_maps_every_degenerate_geometry(name, every_engine):
    n = 240
    prior = np.arange(n) % 2
    for geometry, X in _geometries(n).items():
        for p in (None, prior):
            Y = ESTIMATORS[name]().fit_transform(X, p)
            assert Y.shape == (n, 2), geometry
            assert np.all(np.isfinite(Y)), (geometry, p is not None)
            assert Y.std() > 0.1, (geometry, p is not None)


def _starts(n):
    rng = np.random.default_rng(3)
    base = rng.normal(size=(n, 2))
    return {
        "flat axis": np.c_[base[:, 0], np.zeros(n)],
        "subnormal axis": np.c_[base[:, 0], base[:, 1] * 1e-310],
        "collinear": np.c_[base[:, 0], 2.0 * base[:, 0]],
        "3 distinct points": base[rng.integers(0, 3, n)],
        "tiny": base * 1e-300,
        "wide": base * 30.0,
    }


@pytest.mark.parametrize("method", ["exact", "bh", "fft"])
def test_degenerate_starts_give_maps(method, every_engine):
    n = 240
    X = np.random.default_rng(4).normal(size=(n, 5))
    for start, Y0 in _starts(n).items():
        model = ConditionalTSNE(method=method, init=Y0, n_iter=20, early_exaggeration_iter=20,
                                random_state=0, n_jobs=1).fit(X, np.arange(n) % 2)
        assert np.all(np.isfinite(model.embedding_)), start
        assert np.isfinite(model.kl_divergence_), start


@pytest.mark.parametrize("Y0, message", [
    (np.random.default_rng(5).normal(size=(100, 2)) * 1e200, "scale it down"),
    (np.random.default_rng(5).normal(size=(100, 2)) * 1e5, "scale it down"),
    (np.zeros((100, 2)), "same place"),
    (np.ones((100, 2)) * 7.0, "same place"),
])
def test_hopeless_starts_are_refused_before_work(Y0, message):
    X = np.random.default_rng(5).normal(size=(100, 4))
    with pytest.raises(ValueError, match=message):
        ConditionalTSNE(init=Y0).fit(X)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_torch_engine_on_rank_one_data():
    X = _rank1(300, np.random.default_rng(0))
    for method in ("exact", "fft"):
        Y = ConditionalTSNE(method=method, backend="torch", n_iter=20, early_exaggeration_iter=20,
                            random_state=0).fit_transform(X, np.arange(300) % 2)
        assert np.all(np.isfinite(Y)) and Y.std() > 0.1


@pytest.mark.parametrize("cls", [ConditionalUMAP, ConditionalLargeVis])
@pytest.mark.parametrize("start", ["one place", "flat axis", "collinear"])
def test_graph_maps_refuse_a_start_they_could_never_leave(cls, start):
    # UMAP's and LargeVis's forces between two points lie along their difference: a
    # start with less than n_components dimensions of spread stays so (it gave maps with
    # a zero-width axis, silently)
    rng = np.random.default_rng(6)
    n = 80
    t = rng.normal(size=n)
    Y0 = {"one place": np.full((n, 2), 3.0), "flat axis": np.c_[t, np.zeros(n)],
          "collinear": np.c_[t, 1.0 - 2.0 * t]}[start]
    X = rng.normal(size=(n, 4))
    kw = {"perplexity": 10.0} if cls is ConditionalLargeVis else {"n_neighbors": 10}
    with pytest.raises(ValueError, match="init array spans fewer than n_components"):
        cls(init=Y0, **kw).fit(X)
    Y = cls(init=Y0 + 1e-3 * rng.normal(size=(n, 2)), n_epochs=30, random_state=0,
            **kw).fit_transform(X)  # a start with spread in every direction is taken
    assert np.ptp(Y, axis=0).min() > 0.1

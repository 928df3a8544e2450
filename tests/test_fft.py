"""FFT interpolation repulsion checked against the exact O(m²) reference."""

from __future__ import annotations

import functools
import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import ctsne.forces.repulsion.conditional as conditional
import ctsne.forces.repulsion.fft as fft
from ctsne import exact_objective_terms
from ctsne.forces.attraction import attraction
from ctsne.forces.repulsion import ConditionalRepulsion
from ctsne.forces.repulsion.exact import repulsion_exact
from ctsne.forces.repulsion.fft import exact_is_faster, grid_shape, repulsion_fft
from ctsne.prior import make_prior

N = 2000
# Relative force error allowed on the default 2-D grid (0.8 boxes per unit: 0.7-2.3e-3 measured
# on these small layouts, Barnes-Hut's accuracy at θ = 0.5).
TOL_2D = 3e-3


def tsne_like(n: int, d: int, span: float, n_blobs: int = 10, seed: int = 0):
    """Gaussian blobs of varied widths over a box of side ``span``, plus 10% uniform noise.

    Returns the points and each point's blob (noise points keep a random blob id).
    """
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-span / 2, span / 2, (n_blobs, d))
    widths = span / 25 * rng.uniform(0.5, 1.5, n_blobs)
    blob = rng.integers(0, n_blobs, n)
    Y = centres[blob] + rng.normal(size=(n, d)) * widths[blob, None]
    noise = rng.random(n) < 0.1
    Y[noise] = rng.uniform(-span / 2, span / 2, (noise.sum(), d))
    return Y, blob


def rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("span", [30, 80])
def test_matches_exact_on_tsne_layouts(d, span):
    Y, _ = tsne_like(N, d, span)
    F, Z = repulsion_fft(Y)
    Fe, Ze = repulsion_exact(Y)
    # measured: force 1-D 1.6e-4 (1.25 boxes per unit), 2-D 0.7–1.3e-3 (0.8), Z ≤ 2e-6
    assert rel(F, Fe) < (5e-4 if d == 1 else TOL_2D)
    assert abs(Z - Ze) / Ze < 1e-5


def test_resolution_controls_the_error():
    Y, _ = tsne_like(N, 2, 80, seed=1)
    Fe, Ze = repulsion_exact(Y)
    errors = [rel(repulsion_fft(Y, n_interp=p, boxes_per_unit=b)[0], Fe)
              for p, b in [(3, 1.0), (5, 1.0), (5, 2.0)]]
    # FIt-SNE's p = 3 is near 1e-2; each step buys well over an order of magnitude
    assert 1e-3 < errors[0] < 3e-2
    assert errors[1] < errors[0] / 10
    assert errors[2] < errors[1] / 10


# ---- the ct-SNE gradient through the per-class decomposition ------------------------


def random_P(n: int, k: int = 30, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), k)
    cols = rng.integers(0, n, n * k)
    keep = rows != cols
    P = sp.csr_matrix((rng.random(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    P = P + P.T
    return sp.csr_matrix(P / P.sum())


def make_labels(n_classes: int, blob: np.ndarray) -> np.ndarray:
    if n_classes == 1:
        return np.zeros(len(blob), dtype=np.int64)
    if n_classes == 3:  # classes follow the layout's blobs
        return blob % 3
    return np.random.default_rng(2).integers(0, n_classes, len(blob))  # scattered classes


def admissible_beta(beta: float, labels: np.ndarray) -> float:
    """β' itself if admissible, else 90% of the way from 1 to its bound 1/(1 − ρ): the
    strongest confirmatory setting the class sizes allow is as close as β' = 3 can get."""
    sizes = np.bincount(labels).astype(float)
    n = sizes.sum()
    rho = np.sum(sizes * (sizes - 1)) / (n * (n - 1))
    if rho >= 1.0 or beta < 1.0 / (1.0 - rho):
        return beta
    return 1.0 + 0.9 * (1.0 / (1.0 - rho) - 1.0)


@functools.cache
def case(d: int, n_classes: int, beta: float):
    Y, blob = tsne_like(N, d, 80, seed=3)
    P = random_P(N)
    labels = make_labels(n_classes, blob)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # one class: the prior is void
        prior = make_prior(labels, N, beta=admissible_beta(beta, labels))
    return Y, P, prior, exact_objective_terms(P, Y, prior)


CASES = [(1, 1.0)] + [(k, b) for k in (3, 50) for b in (0.01, 1.0, 3.0)]


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize(
    "n_classes, beta, small_groups",
    [(k, b, "exact") for k, b in CASES]
    # β' = 1 makes α' = β': no class term. The 3 classes have ≥ 500 points: FFT anyway.
    + [(50, 0.01, "fft"), (50, 3.0, "fft")],
)
def test_ctsne_gradient_matches_exact(d, n_classes, beta, small_groups, monkeypatch):
    # groups the exact kernel does faster (by size, or by the per-call span check) would go
    # to it; this test is about FFT, so turn the span check off
    monkeypatch.setattr(conditional, "_fft_exact_is_faster", lambda m, span, params: False)
    if small_groups == "fft":
        monkeypatch.setitem(conditional.EXACT_BELOW, "fft", 0)
        monkeypatch.setitem(conditional.EXACT_BELOW, "bh", 0)
    Y, P, prior, ref = case(d, n_classes, beta)
    rep = ConditionalRepulsion(prior.terms(), N, d, method="fft")
    assert "fft" in rep.engines_used()
    if small_groups == "fft":
        assert rep.engines_used() == {"fft"}
    F, S = rep(Y)
    Fa, _ = attraction(P, Y)
    grad = 4.0 * (Fa - F / S)
    # measured: gradient d = 1 ≤ 3.7e-4 (1.25 boxes per unit), d = 2 ≤ 1.4e-3 (0.8: Barnes-
    # Hut's accuracy at θ = 0.5), S ≤ 1.4e-5; 5.9e-3 for d = 2, 3 classes, α' = 0.1, where
    # the class terms cancel most of the all-points term and so amplify its error
    amplified = d == 2 and n_classes == 3 and beta == 3.0
    assert rel(grad, ref.grad) < (1e-3 if d == 1 else 1e-2 if amplified else TOL_2D)
    assert abs(S - ref.S) / ref.S < 1e-3
    assert rel(grad, ref.grad) > 1e-9  # an interpolation error: FFT really ran


def test_groups_the_exact_kernel_does_faster_go_to_it(monkeypatch):
    Y, P, prior, ref = case(2, 3, 0.01)
    rep = ConditionalRepulsion(prior.terms(), N, 2, method="fft")
    assert "fft" in rep.engines_used()
    monkeypatch.setattr(conditional, "_fft_exact_is_faster", lambda m, span, params: True)
    F, S = rep(Y)
    Fa, _ = attraction(P, Y)
    assert rel(4.0 * (Fa - F / S), ref.grad) < 1e-12


# ---- edge cases ---------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2])
def test_fewer_than_two_points(d):
    for m in (0, 1):
        F, Z = repulsion_fft(np.ones((m, d)))
        assert F.shape == (m, d)
        assert np.all(F == 0) and Z == 0.0


@pytest.mark.parametrize("d", [1, 2])
def test_two_points(d):
    Y = np.array([[0.3, -1.0], [1.5, 0.7]])[:, :d]
    F, Z = repulsion_fft(Y)
    Fe, Ze = repulsion_exact(Y)
    np.testing.assert_allclose(F, Fe, rtol=1e-6, atol=1e-9)
    assert Z == pytest.approx(Ze, rel=1e-6)


@pytest.mark.parametrize("d", [1, 2])
def test_identical_points(d):
    F, Z = repulsion_fft(np.full((7, d), 3.25))
    assert np.all(F == 0)
    assert Z == 42.0


def test_flat_dimension():
    rng = np.random.default_rng(4)
    Y = np.column_stack([rng.uniform(0, 20, 300), np.full(300, -2.0)])
    F, Z = repulsion_fft(Y)
    Fe, Ze = repulsion_exact(Y)
    assert rel(F, Fe) < TOL_2D
    assert np.abs(F[:, 1]).max() < 1e-12 * np.abs(F[:, 0]).max()
    assert abs(Z - Ze) / Ze < 1e-5


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="shape"):
        repulsion_fft(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        repulsion_fft(np.array([[0.0, 1.0], [np.inf, 0.0]]))


def test_capped_grid_degrades_gracefully():
    # 400 points over 10³ units on at most 1024 nodes: ~1 unit apart, too coarse for the
    # closest pairs, but the result stays sound (measured 0.35 and 1.2e-3)
    rng = np.random.default_rng(5)
    Y = rng.uniform(-500, 500, (400, 2))
    _, n_nodes, half = grid_shape(Y.max(0) - Y.min(0), max_nodes=1024)
    assert np.all(n_nodes <= 1024) and np.all(n_nodes <= half)
    F, Z = repulsion_fft(Y, max_nodes=1024)
    Fe, Ze = repulsion_exact(Y)
    assert rel(F, Fe) < 0.6
    assert abs(Z - Ze) / Ze < 1e-2


def test_sorted_and_unsorted_spreading_agree(monkeypatch):
    Y, _ = tsne_like(N, 2, 80, seed=6)
    Fe, _ = repulsion_exact(Y)
    monkeypatch.setattr(fft, "SORT_ABOVE_BYTES", 0)
    monkeypatch.setattr(fft, "SORT_ABOVE_POINTS", 0)
    F_sorted, Z_sorted = repulsion_fft(Y)
    monkeypatch.setattr(fft, "SORT_ABOVE_BYTES", 1 << 62)
    F_plain, Z_plain = repulsion_fft(Y)
    np.testing.assert_allclose(F_sorted, F_plain, rtol=0, atol=1e-10 * np.abs(Fe).max())
    assert Z_sorted == pytest.approx(Z_plain, rel=1e-12)
    assert rel(F_sorted, Fe) < TOL_2D


@pytest.mark.parametrize("d", [1, 2])
def test_result_does_not_depend_on_thread_count(d):
    Y, _ = tsne_like(3000, d, 60, seed=7)
    F2, Z2 = repulsion_fft(Y)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        F1, Z1 = repulsion_fft(Y, workers=1)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_allclose(F1, F2, rtol=1e-9, atol=1e-12 * np.abs(F1).max())
    assert Z1 == pytest.approx(Z2, rel=1e-12)


@pytest.mark.parametrize("n, span", [(N, 80), (400, 300)])
def test_single_precision_grid_matches_double(n, span, monkeypatch):
    # a t-SNE-like layout, and a sparse group scattered over a wide grid (a ct-SNE class),
    # whose forces are small against the grid's largest potential
    Y, _ = tsne_like(n, 2, span, seed=9)
    Fe, Ze = repulsion_exact(Y)
    monkeypatch.setattr(fft, "SINGLE_ABOVE", 1 << 62)
    F64, Z64 = repulsion_fft(Y)
    monkeypatch.setattr(fft, "SINGLE_ABOVE", 0)
    F32, Z32 = repulsion_fft(Y)
    # float32 transforms round to ~1e-7 of the largest potential (measured: forces 0.9 and
    # 1.2e-7, Z 0.8 and 0.6e-7): far below the interpolation error against the exact sums
    assert 0 < rel(F32, F64) < 1e-5
    assert abs(Z32 - Z64) / Z64 < 1e-6
    assert rel(F32, Fe) < TOL_2D and abs(Z32 - Ze) / Ze < 1e-5


def test_large_grids_are_transformed_in_single_precision():
    g = fft._plan(np.zeros((10, 2)), np.zeros(2), np.array([300.0, 300.0]), fft.N_INTERP,
                  fft.MIN_BOXES, None, None, 1)
    assert g.single and np.prod(2 * g.half) >= fft.SINGLE_ABOVE
    g = fft._plan(np.zeros((10, 2)), np.zeros(2), np.array([80.0, 80.0]), fft.N_INTERP,
                  fft.MIN_BOXES, None, None, 1)
    assert not g.single
    g = fft._plan(np.zeros((10, 1)), np.zeros(1), np.array([1e5]), fft.N_INTERP,
                  fft.MIN_BOXES, None, None, 1)
    assert not g.single  # 1-D grids are cheap at any size


def test_order_5_passes_match_the_general_ones():
    # the unrolled p = 5 spreading and gathering against the general loops, on one chunk
    from ctsne.forces.repulsion import _interp

    Y, _ = tsne_like(N, 2, 80, seed=10)
    Y[:, 1] *= 0.05  # a span of ~4: a finer node spacing along y, so t_near is not symmetric
    g = fft._plan(Y, Y.min(0), Y.max(0) - Y.min(0), 5, fft.MIN_BOXES, None, None, 1)
    assert g.delta[1] < g.delta[0] and not np.allclose(g.t_near, g.t_near.T)
    args = (Y, 0, len(Y), g.origin, g.inv_delta, g.n_nodes, g.inv_denom, 0)
    bands = np.ones((2, *g.n_nodes))  # stale values must be cleared
    _interp._spread_2d_chunk(*args, bands[0])
    _interp._spread_2d_chunk_5(*args, bands[1])
    np.testing.assert_allclose(bands[1], bands[0], rtol=0, atol=1e-14)
    assert bands[0].sum() == pytest.approx(len(Y), rel=1e-12)  # weights sum to one
    pot = np.random.default_rng(0).normal(size=(2, *g.n_nodes))
    order = np.arange(len(Y))[::-1].copy()
    F = np.zeros((2, len(Y), 2))
    z = [f(Y, 0, len(Y), order, g.origin, g.inv_delta, g.n_nodes, g.inv_denom, pot,
           g.t_near, F[r]) for r, f in enumerate((_interp._gather_2d_chunk,
                                                  _interp._gather_2d_chunk_5))]
    np.testing.assert_allclose(F[1], F[0], rtol=0, atol=1e-13 * np.abs(F[0]).max())
    assert z[1] == pytest.approx(z[0], rel=1e-13)


def test_grid_shape():
    span = np.array([37.2, 3.0])
    delta, n_nodes, half = grid_shape(span, n_interp=5, min_boxes=8, boxes_per_unit=1.25)
    assert delta[0] == pytest.approx(1 / 6.25)  # p nodes per box, 1.25 boxes per unit
    assert 3.0 / 40 / 2 ** (1 / 8) < delta[1] <= 3.0 / 40  # at least 8 boxes
    assert np.all((n_nodes - 5) * delta >= span) and np.all(n_nodes <= half)
    for length in 2 * half:  # 5-smooth, so the FFTs are fast
        for f in (2, 3, 5):
            while length % f == 0:
                length //= f
        assert length == 1
    delta, n_nodes, _ = grid_shape(np.array([1e5]), max_nodes=4096)
    assert 2500 < n_nodes[0] <= 4096


def test_kernel_spectra_are_reused(monkeypatch):
    Y, _ = tsne_like(N, 2, 80, seed=8)
    fft.clear_kernel_cache()
    F1, Z1 = repulsion_fft(Y)
    assert len(fft._SPECTRA) == 1
    F2, Z2 = repulsion_fft(Y * 1.001)  # same spacing and, here, the same FFT size
    assert len(fft._SPECTRA) == 1
    Fe, Ze = repulsion_exact(Y * 1.001)
    assert rel(F2, Fe) < TOL_2D and abs(Z2 - Ze) / Ze < 1e-5
    monkeypatch.setattr(fft, "KERNEL_CACHE_BYTES", 0)
    fft.clear_kernel_cache()
    F3, Z3 = repulsion_fft(Y * 1.001)
    assert len(fft._SPECTRA) == 0
    np.testing.assert_array_equal(F2, F3)
    assert Z3 == pytest.approx(Z2, rel=1e-13)  # a threaded sum: the last bit may differ


def test_cost_model_for_engine_choice():
    # the crossovers measured on one thread (2026-11-27): 300 points at a group's own
    # t-SNE density (span ~0.3·√m) exact 0.14 ms, FFT 0.22 ms; 1,000 over 30 units 1.36
    # against 0.81 ms; over 80 units 1,000 points 1.36 against 6.1 ms, 3,000 points 12.3
    # against 7.4 ms
    assert exact_is_faster(100, [3.0, 3.0])
    assert exact_is_faster(300, [5.2, 5.2])
    assert not exact_is_faster(500, [7.0, 7.0])
    assert not exact_is_faster(1000, [30.0, 30.0])
    assert exact_is_faster(1000, [80.0, 80.0])
    assert not exact_is_faster(3000, [80.0, 80.0])


@pytest.mark.parametrize("span, engine", [(5.0, "fft"), (400.0, "bh")])
def test_auto_takes_the_cheaper_of_barnes_hut_and_fft(span, engine):
    """Under "auto" a 2-D group planned for Barnes-Hut goes to the FFT grid on a call
    where the cost model prices it lower (a compact layout), not where the grid would
    follow a wide extent; either way the forces are those of the exact sums."""
    from ctsne.prior import PriorTerm

    m = 3000
    Y, _ = tsne_like(m, 2, span, seed=2)
    assert conditional.fft_is_cheaper(m, np.ptp(Y, axis=0), 0.5) == (engine == "fft")
    rep = ConditionalRepulsion([PriorTerm(1.0, None, 1)], m, 2, method="auto")
    F, S = rep(Y)
    assert rep.engines_used() == {engine}
    Fe, Ze = repulsion_exact(Y)
    assert rel(F, Fe) < 3e-3
    assert abs(S - Ze) / Ze < 1e-3


def test_grid_passes_by_hand_and_on_any_thread_count():
    # the 2-D grid passes run in parts on ctsne's threads: each pass's result, its Z sum
    # included (added row after row), is the same on one thread and on two
    from ctsne.forces.repulsion import _interp

    rng = np.random.default_rng(5)
    C = rng.normal(size=(64, 33)) + 1j * rng.normal(size=(64, 33))
    T, Rx, Ry = rng.random((33, 33)), rng.random((32, 33)), rng.random((33, 32))
    Y = rng.random((5000, 2)) * 10
    origin, inv_delta, n_nodes = np.zeros(2), np.array([10.0, 10.0]), np.array([100, 100])
    old = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append((_interp.apply_spectra_2d(C, T, Rx, Ry, 32, True),
                         _interp.kernel_quadrant(np.array([40, 33]), np.array([0.3, 0.2]),
                                                 True),
                         _interp.tile_order(Y, origin, inv_delta, n_nodes, 3)))
    finally:
        numba.set_num_threads(old)
    (spec, z), K, (order, Ys) = runs[0]
    for (spec2, z2), K2, (order2, Ys2) in runs[1:]:
        np.testing.assert_array_equal(spec2, spec)
        assert z2 == z
        np.testing.assert_array_equal(K2, K)
        np.testing.assert_array_equal(order2, order)
        np.testing.assert_array_equal(Ys2, Ys)
    # independently: the kernels at the offsets, by formula
    x = 0.3 * np.arange(40)[:, None]
    y = 0.2 * np.arange(33)[None, :]
    t = 1.0 / (1.0 + x * x + y * y)
    np.testing.assert_allclose(K, np.stack([t, t * t * x, t * t * y]), rtol=1e-15)
    # Parseval's sum: |C|² T over the quadrant's mirrored rows, the paired columns twice
    rows = np.minimum(np.arange(64), 64 - np.arange(64))
    w = np.where((np.arange(33) == 0) | (np.arange(33) == 32), 1.0, 2.0)
    assert z == pytest.approx(np.sum(w * np.abs(C) ** 2 * T[rows]), rel=1e-13)
    # the tile sort: points by tile (row-major tiles of TILE nodes), ties in chunk order,
    # and within a chunk in row order: a stable sort by tile key
    tiles = np.clip((Y * 10.0).astype(np.int64) // _interp.TILE, 0, 100 // _interp.TILE)
    key = tiles[:, 0] * ((100 + _interp.TILE - 1) // _interp.TILE) + tiles[:, 1]
    np.testing.assert_array_equal(order, np.argsort(key, kind="stable"))
    np.testing.assert_array_equal(Ys, Y[order])

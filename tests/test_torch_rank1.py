"""The torch engine on a map that spreads wide (issue 59, item 13).

Rank-1 data (one non-constant column, a 5-class prior) grows a map of 2,000 points over
~200 × 130 units. The FFT grid follows the map's extent, not the number of points, and
the torch engine pads every group (here 6) to the largest grid: each call transformed six
1600 × 1080 grids where the numba engine sums the pairs exactly
(``fft.exact_is_faster``), and the fit ran 15-30× slower than numba's. Checked here: under
method="auto" the torch gradient takes the exact kernel where the numba rule says the
pairs cost less than the grids (no spectra are built), keeps the FFT on a compact map,
and its exact kernel weighs every pair in both precisions.
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch engine needs PyTorch")

from ctsne.affinities.modes import input_affinities  # noqa: E402
from ctsne.forces.repulsion.fft import exact_is_faster  # noqa: E402
from ctsne.prior import PriorTerm, make_prior  # noqa: E402
from ctsne.torch_engine import repulsion  # noqa: E402
from ctsne.torch_engine.gradient import TorchGradient  # noqa: E402
from ctsne.torch_engine.repulsion import Groups, exact_repulsion  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

N = 2000
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def rank1():
    """The issue's data: 31 columns, one of them non-constant, and a 5-class prior."""
    rng = np.random.default_rng(0)
    X = np.zeros((N, 31))
    X[:, 0] = rng.normal(size=N)
    codes = rng.integers(0, 5, N)
    prior = make_prior(codes, N)
    P = input_affinities(X, 30.0, prior.codes[0]).P
    return P, prior


def _wide(seed=1):
    # the extent of the map once it has grown (~200 × 130 units)
    return np.random.default_rng(seed).uniform(size=(N, 2)) * np.array([200.0, 130.0])


def test_a_wide_map_takes_the_exact_kernel_by_the_numba_rule(rank1):
    P, prior = rank1
    grad = TorchGradient(P, prior, 2, "auto", CPU, torch.float64)
    assert grad.engine == "fft"  # planned: n is past the exact kernel's size
    Y = torch.as_tensor(_wide())
    g, _ = grad(Y)
    # no grid was transformed (before the fix: six 1600 × 1080 grids and their spectra)
    assert not grad._fft._spectra
    assert grad.last_engine == "exact"
    # the rule is the numba engine's, at the pairs per grid of the batched engine
    G = grad.groups.n_groups
    assert G == 6
    assert exact_is_faster(N / math.sqrt(G), grad._fft.plan(Y).span)
    # the same gradient as the grids give, within their interpolation error
    fft = TorchGradient(P, prior, 2, "fft", CPU, torch.float64)
    g_fft, _ = fft(Y)
    assert fft._fft._spectra and fft.last_engine == "fft"  # an explicit "fft" transforms
    assert float(torch.linalg.norm(g - g_fft) / torch.linalg.norm(g)) < 5e-3


def test_a_compact_map_keeps_the_fft(rank1):
    P, prior = rank1
    grad = TorchGradient(P, prior, 2, "auto", CPU, torch.float64)
    grad(torch.as_tensor(np.random.default_rng(2).normal(size=(N, 2)) * 3.0))
    assert grad._fft._spectra


def test_the_exact_kernel_weighs_every_pair_in_blocks(monkeypatch):
    # blocks of five rows (the self-pairs at each block's offset), two priors, d = 3, both
    # precisions (float64 forms r² and F by matrix products, float32 by differences):
    # against all pairs at once
    n, d = 700, 3
    monkeypatch.setattr(repulsion, "EXACT_BLOCK_PAIRS", 5 * n * (d + 1))
    rng = np.random.default_rng(3)
    Y = rng.normal(size=(n, d)) * 4.0
    a, b = rng.integers(0, 3, n), rng.integers(0, 2, n)
    terms = [PriorTerm(0.05, None, 1), PriorTerm(0.9, a, 3), PriorTerm(0.3, b, 2)]
    groups = Groups(terms, n, CPU)
    W = 0.05 + 0.9 * (a[:, None] == a) + 0.3 * (b[:, None] == b)
    diff = Y[:, None, :] - Y[None, :, :]
    T = 1.0 / (1.0 + (diff ** 2).sum(-1))
    np.fill_diagonal(T, 0.0)
    F_ref, S_ref = ((W * T * T)[..., None] * diff).sum(1), (W * T).sum()
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        for w in (None, groups.weights(torch.arange(n)).to(dtype)):
            F, S = exact_repulsion(torch.as_tensor(Y, dtype=dtype), groups, w)
            assert F.dtype == dtype
            F = F.double().numpy()
            assert np.abs(F - F_ref).max() < tol * np.abs(F_ref).max()
            assert abs(float(S) / S_ref - 1) < tol

"""A seed fixes a map whatever the number of threads (a laptop's map is a server's).

Every pass whose sums could follow the split of its work between threads cuts it instead
into chunks fixed by the problem's size (``ctsne._parallel.chunk_count``): the
attraction's blocks of P's rows, the FFT grid's point chunks (private grids and Z terms
summed in chunk order); the exact and Barnes-Hut passes sum per point. So the forces, Z
and the gradient are equal bit for bit on 1, 2 and 3 threads, on each repulsion path
(exact, Barnes-Hut, the FFT grid untiled and tiled, in 1-D and 2-D), with and without a
prior. Bit-identity is the right test: each sum's order is fixed, not merely its result
close. Three threads also run in a subprocess of their own (numba's pool is sized when it
starts, at the machine's cores). Whole fits follow once the optimiser's step sums by size
too (marked below).
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from ctsne import ConditionalTSNE
from ctsne._parallel import chunk_count, chunk_runs
from ctsne.forces import attraction
from ctsne.forces.attraction import Attraction, block_count
from ctsne.forces.gradient import ConditionalGradient
from ctsne.forces.repulsion import fft
from ctsne.prior import make_prior

THREADS = (1, 2, 3)


def _on_threads(compute, threads=THREADS):
    """``compute()`` on each of ``threads`` that numba's pool allows (at least two runs
    where it allows two threads)."""
    old = numba.get_num_threads()
    allowed = sorted({min(t, numba.config.NUMBA_NUM_THREADS) for t in threads})
    runs = []
    try:
        for t in allowed:
            numba.set_num_threads(t)
            runs.append(compute())
    finally:
        numba.set_num_threads(old)
    return runs


def _assert_same(runs):
    """Every run's arrays and numbers equal the first run's, bit for bit."""
    first = runs[0]
    for other in runs[1:]:
        for a, b in zip(other, first, strict=True):
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b), np.abs(a - b).max()
            else:
                assert a == b, (a, b)


def _knn_like(n: int, k: int, seed: int) -> sp.csr_matrix:
    """A symmetric P of k random partners a point (no self-pairs), summing to 1."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), k)
    cols = (rows + rng.integers(1, n, size=n * k)) % n
    A = sp.csr_matrix((rng.random(n * k) + 0.01, (rows, cols)), shape=(n, n))
    P = (A + A.T).tocsr()
    P.sort_indices()
    return P / P.sum()


def _layout(n: int, d: int, spread: float, seed: int) -> np.ndarray:
    """A map-like layout: eight clusters of different widths over ``spread`` units."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-spread / 2, spread / 2, size=(8, d))
    which = rng.integers(0, 8, n)
    return centres[which] + rng.normal(size=(n, d)) * rng.uniform(0.5, 4.0, 8)[which, None]


# (points, dimensions, spread) of a layout on each path of the FFT grid, in chunks
FFT_CASES = {"untiled 2-D": (40_000, 2, 20.0), "tiled 2-D": (60_000, 2, 150.0),
             "1-D": (30_000, 1, 100.0)}


def test_chunks_follow_the_size_alone(monkeypatch):
    assert chunk_count(10, 100, 32) == 1  # at least one
    assert chunk_count(1000, 100, 32) == 8  # a count that 2, 4 and 8 threads split evenly
    assert chunk_count(1300, 100, 32) == 12
    assert chunk_count(10**9, 100, 32) == 32
    for chunks in (1, 5, 12, 32):
        for threads in (1, 2, 3, 8, 64):
            b = chunk_runs(chunks, threads)
            assert b[0] == 0 and b[-1] == chunks and len(b) - 1 == min(chunks, threads)
            assert np.all(np.diff(b) >= 1)  # runs of whole chunks, none empty
    # the FFT plan's chunks and the attraction's blocks do not ask the thread count
    Y = _layout(*FFT_CASES["tiled 2-D"], seed=0)
    lo, span = Y.min(0), np.ptp(Y, axis=0)
    plans = []
    for threads in (1, 8):
        monkeypatch.setattr("numba.get_num_threads", lambda t=threads: t)
        g = fft._plan(Y, lo, span, fft.N_INTERP, fft.MIN_BOXES, None, None, threads)
        plans.append((g.n_chunks, g.gather_chunks))
    assert plans[0] == plans[1] and min(plans[0]) > 1
    assert block_count(300_000, 20_000) == 12
    assert block_count(15_000, 1_000) == 1  # below the threads' threshold


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("locality", [False, True])
@pytest.mark.parametrize("n", [6000, 20_000])
def test_attraction_is_the_same_on_any_number_of_threads(n, locality, d, monkeypatch):
    # 6000 points: the blocks on ctsne's threads; 20,000: in numba's prange twin. The
    # blocks' buffers summed by numpy and by the row kernel: the same numbers too.
    P = _knn_like(n, 15, seed=n)
    att = Attraction(P, locality=locality)
    rows, _, offsets = att.blocks
    assert len(rows) > 2 and offsets[-1] <= attraction.BUFFER_ROWS * n
    Y = _layout(n, d, 60.0, seed=1)
    runs = _on_threads(lambda: att(Y, True))
    monkeypatch.setattr(attraction._sum_blocks, "numpy_below", 0)
    _assert_same(runs + _on_threads(lambda: att(Y, True)))


@pytest.mark.parametrize("case", list(FFT_CASES))
def test_fft_is_the_same_on_any_number_of_threads(case):
    m, d, spread = FFT_CASES[case]
    Y = _layout(m, d, spread, seed=2)
    lo, span = Y.min(0), np.ptp(Y, axis=0)
    g = fft._plan(Y, lo, span, fft.N_INTERP, fft.MIN_BOXES, None, None, 1)
    assert g.n_chunks > 1 and g.gather_chunks > 1  # the point stages run in chunks
    assert fft._tiled(m, g.n_nodes) == (case == "tiled 2-D")
    _assert_same(_on_threads(lambda: fft.repulsion_fft(Y)))


def _gradients(method: str, with_prior: bool, threads=THREADS):
    """The ct-SNE gradient and KL of one P and layout on each thread count."""
    n = 3000 if method == "exact" else 25_000
    P = _knn_like(n, 15, seed=7)
    labels = np.random.default_rng(8).integers(0, 3, n)
    prior = make_prior(labels, n) if with_prior else None
    grad = ConditionalGradient(P, prior, 2, method, {"bh": {"theta": 0.5}})
    Y = _layout(n, 2, 120.0, seed=9)
    return _on_threads(lambda: grad(Y, 1.0, True), threads)


@pytest.mark.parametrize("with_prior", [False, True])
@pytest.mark.parametrize("method", ["exact", "bh", "fft", "auto"])
def test_gradient_is_the_same_on_any_number_of_threads(method, with_prior):
    _assert_same(_gradients(method, with_prior))


THREE_THREADS = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numba
    import test_thread_count as t

    assert numba.config.NUMBA_NUM_THREADS == 3
    runs = t._gradients("fft", True)
    assert len(runs) == 3
    t._assert_same(runs)
    P = t._knn_like(20_000, 15, seed=3)
    att = t.Attraction(P)
    Y = t._layout(20_000, 2, 60.0, seed=4)
    t._assert_same(t._on_threads(lambda: att(Y, True)))
    Y = t._layout(*t.FFT_CASES["tiled 2-D"], seed=5)
    t._assert_same(t._on_threads(lambda: t.fft.repulsion_fft(Y)))
    print("same")
""")


def test_three_threads_in_a_subprocess():
    # runs of whole chunks split unevenly over three threads (numba's pool is sized at
    # start, so a process of its own)
    res = subprocess.run([sys.executable, "-c", THREE_THREADS, str(Path(__file__).parent)],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "NUMBA_NUM_THREADS": "3"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["same"]


@pytest.mark.parametrize("with_prior", [False, True])
@pytest.mark.parametrize("method", ["exact", "bh", "fft"])
def test_fits_are_the_same_on_any_number_of_threads(method, with_prior):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread: nothing to compare")
    n = 6000 if method == "fft" else 1500
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=4.0, size=(5, 10))
    X = centres[rng.integers(0, 5, n)] + rng.normal(size=(n, 10))
    labels = rng.integers(0, 3, n) if with_prior else None

    def fit():
        model = ConditionalTSNE(method=method, random_state=0, early_exaggeration_iter=40,
                                n_iter=40, n_jobs=numba.get_num_threads())
        return (model.fit_transform(X, labels),)

    _assert_same(_on_threads(fit, (1, 2)))

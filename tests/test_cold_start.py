"""The first fit in a new environment (issue 23): what it compiles, and that compiling
changes nothing.

A 1,000-point fit (the paper's example) under ``method="auto"`` is evaluated exactly in
every term, so it needs none of the Barnes-Hut or FFT kernels; its once-per-fit passes and
its steps run in numpy, and its two kernels compile one build each for any thread count.
The subprocess test checks this from the files numba writes to a fresh cache, and that
the embedding of a cold cache equals that of a warm one (bit for bit, on one thread and
on two).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ctsne.affinities.symmetry import _sort_rows
from ctsne.forces.repulsion import conditional
from ctsne.forces.repulsion.conditional import EXACT_FIT_MAX, ConditionalRepulsion
from ctsne.forces.repulsion.exact import repulsion_exact
from ctsne.prior import make_prior

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from ctsne import ConditionalTSNE
    from ctsne.datasets import make_synthetic

    d = make_synthetic(n=1000, random_state=0)
    np.save(sys.argv[1], np.stack([
        ConditionalTSNE(random_state=0, n_jobs=threads, early_exaggeration_iter=40,
                        n_iter=40).fit_transform(d.X, d.f14) for threads in (1, 2)]))
""")


def _fit(out, cache):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return np.load(out)


def test_cold_cache_gives_the_warm_embedding_and_compiles_no_engine(tmp_path):
    cache = tmp_path / "numba-cache"
    cold = _fit(tmp_path / "cold.npy", cache)
    compiled = {p.name.split("-")[0] for p in cache.rglob("*.nbi")}
    assert any(name.startswith("exact.") for name in compiled), compiled
    assert not any(name.startswith(("barnes_hut.", "fft.", "_interp.")) for name in compiled)
    # the once-per-fit passes (scans, calibration, symmetrisation, mixing) run as their
    # numpy twins at this size: nothing of theirs compiles (ctsne._parallel)
    once = ("brute.", "calibration.", "symmetry.", "mixing.", "cross_share.", "kdtree.",
            "kdtree_build.")
    assert not any(name.startswith(once) for name in compiled), compiled
    # and of the iteration only the attraction and the exact repulsion compile, once each
    # for one and two threads (ctsne._parallel.Threaded; the steps run in numpy)
    assert compiled == {"attraction._attraction_planar", "exact._grouped_kernel_2d"}, compiled
    warm = _fit(tmp_path / "warm.npy", cache)
    # Equal bit for bit on one thread and on two: the exact kernel sums in fixed lanes, not
    # by fastmath (which rounded differently in the compiling process, ~1e-11 here and
    # ~0.1 % of the layout after a default fit; ctsne._parallel).
    np.testing.assert_array_equal(cold[0], warm[0])
    np.testing.assert_array_equal(cold[1], warm[1])


PARALLEL_SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    from ctsne.affinities import calibration, symmetry
    from ctsne.forces.repulsion import _interp
    from ctsne.forces.repulsion.fft import repulsion_fft

    rng = np.random.default_rng(0)
    repulsion_fft(rng.normal(scale=10, size=(3000, 2)))  # its parallel drivers
    n, k = 6000, 180  # above the (n, k) passes' numpy twins: their parallel kernels
    dist = np.sort(rng.random((n, k)), axis=1)
    idx = np.stack([rng.choice(n, k, replace=False) for _ in range(n)])
    cond = calibration.calibrate_blocks(dist, np.array([0, 90, 180]), 30.0, 90,
                                        np.ones((n, 2)), np.empty_like(dist), 0.01)
    symmetry.symmetrize(idx, cond)
    print(json.dumps({f.__name__: len(f.signatures) for f in (
        _interp._sum_bands_row, _interp._spectrum_row, _interp._kernel_row,
        symmetry._union_row, calibration.block_perplexity)}))
""")


def test_parallel_drivers_compile_each_helper_once(tmp_path):
    # numba compiles every branch of a function: a driver choosing its stencil pass at run
    # time compiled the general passes too, unused at the default order (p = 5); and a
    # parallel twin types its prange index as uint64 on one pass: a helper given the index
    # compiled a second time
    cache = tmp_path / "numba-cache"
    res = subprocess.run([sys.executable, "-c", PARALLEL_SCRIPT], capture_output=True,
                         text=True, env={**os.environ, "NUMBA_CACHE_DIR": str(cache),
                                         "NUMBA_NUM_THREADS": "2"}, timeout=600)
    assert res.returncode == 0, res.stderr
    counts = json.loads(res.stdout.splitlines()[-1])
    assert counts == dict.fromkeys(counts, 1), counts
    compiled = {p.name.split("-")[0] for p in cache.rglob("*.nbi")}
    assert {"symmetry._union", "calibration._calibrate_kernel"} <= compiled, compiled
    assert {"_interp._spread_2d_5", "_interp._gather_2d_5",
            "_interp._spread_2d_chunk_5", "_interp._gather_2d_chunk_5"} <= compiled, compiled
    assert not compiled & {"_interp._spread_2d_chunk", "_interp._gather_2d_chunk",
                           "_interp._spread_2d", "_interp._gather_2d"}, compiled


@pytest.mark.parametrize("n, only_exact", [(1000, True), (EXACT_FIT_MAX, True),
                                           (EXACT_FIT_MAX + 1, False)])
def test_small_fits_are_exact_under_auto(n, only_exact):
    rng = np.random.default_rng(0)
    Y = rng.normal(scale=np.sqrt(n) / 3, size=(n, 2))
    prior = make_prior(np.arange(n) % 5, n, beta=0.01)
    rep = ConditionalRepulsion(prior.terms(), n, 2, method="auto")
    assert (rep.engines_used() == {"exact"}) == only_exact
    if not only_exact:
        return
    F, S = rep(Y)
    # independent: the exact kernel over all points, plus (α' − β') times it per class
    (all_points, classes) = sorted(prior.terms(), key=lambda t: t.codes is not None)
    coef_all, coef_cls, codes = all_points.coef, classes.coef, classes.codes
    F_ref, S_ref = repulsion_exact(Y)
    F_ref, S_ref = coef_all * F_ref, coef_all * S_ref
    for c in range(5):
        rows = np.flatnonzero(codes == c)
        Fc, Sc = repulsion_exact(Y[rows])
        F_ref[rows] += coef_cls * Fc
        S_ref += coef_cls * Sc
    np.testing.assert_allclose(F, F_ref, rtol=1e-9, atol=1e-12)
    assert S == pytest.approx(S_ref, rel=1e-10)


def test_explicit_engines_keep_their_choice_on_small_fits():
    prior = make_prior(np.arange(1000) % 5, 1000, beta=0.01)
    assert ConditionalRepulsion(prior.terms(), 1000, 2, method="bh").engines_used() == \
        {"bh", "exact"}
    assert conditional.choose_engine(1000, 2, "fft", n=1000) == "fft"


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("k", [1, 2, 5, 90, 301])
def test_row_sort_matches_numpy(dtype, k):
    rng = np.random.default_rng(k)
    n = 40
    idx = np.stack([rng.permutation(5 * k)[:k] for _ in range(n)]).astype(dtype)
    cond = rng.random((n, k))
    order = np.argsort(idx, axis=1)
    want_idx = np.take_along_axis(idx, order, axis=1)
    want_cond = np.take_along_axis(cond, order, axis=1)
    for variant in (_sort_rows.numpy, lambda i, c: _sort_rows(i, c, bounds=[0, n]),
                    lambda i, c: _sort_rows(i, c, bounds=[0, 7, 23, n])):
        i2, c2 = idx.copy(), cond.copy()
        variant(i2, c2)
        np.testing.assert_array_equal(i2, want_idx)
        np.testing.assert_array_equal(c2, want_cond)

"""Same inputs and seed give the same embedding, bit for bit, whether numba compiles the
kernels in the process (empty cache) or loads them from its cache."""

import os
import subprocess
import sys
import textwrap

import numpy as np

# Two groups of 600 points: the all-points term and both class terms go to Barnes-Hut
# with its float32 sweeps (from 512 points). The first runs diverged after 12-20
# iterations; 30 are run.
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from ctsne import ConditionalTSNE

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(600, 6)), rng.normal(size=(600, 6)) + 2.5])
    labels = np.repeat([0, 1], 600)
    model = ConditionalTSNE(method="bh", perplexity=10, random_state=3, n_jobs=1,
                            early_exaggeration_iter=15, n_iter=15, neighbors="exact")
    np.save(sys.argv[1], model.fit_transform(X, labels))
""")


def _fit_in_subprocess(out, cache_dir):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return np.load(out)


def test_cold_and_warm_cache_give_identical_embeddings(tmp_path):
    cache = tmp_path / "numba-cache"
    cold = _fit_in_subprocess(tmp_path / "cold.npy", cache)
    assert any(cache.rglob("*.nbi")), "the first run should have filled the cache"
    warm = _fit_in_subprocess(tmp_path / "warm.npy", cache)
    assert np.all(np.isfinite(cold)) and np.ptp(cold, axis=0).min() > 1.0
    assert np.array_equal(cold, warm), np.abs(cold - warm).max()

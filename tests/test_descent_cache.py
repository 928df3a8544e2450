"""pynndescent with numba's cache switched on: same lists, cached functions, quiet."""

import subprocess
import sys

import numpy as np


def test_cache_switched_on_for_pynndescent_functions():
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    from ctsne.neighbors.descent import cache_descent

    cache_descent()
    import pynndescent.utils as utils

    dispatchers = [v for v in vars(utils).values() if isinstance(v, CPUDispatcher)]
    assert len(dispatchers) > 5
    assert not any(isinstance(d._cache, NullCache) for d in dispatchers)
    assert cache_descent() == 0  # once per process


def test_lists_equal_pynndescent_own():
    from pynndescent import NNDescent

    from ctsne.neighbors.descent import descent_index

    X = np.random.default_rng(3).normal(size=(1500, 12)).astype(np.float32)
    kw = dict(n_neighbors=11, random_state=5, n_jobs=1, low_memory=True)
    ours = descent_index(X, **kw).neighbor_graph
    theirs = NNDescent(X, **kw).neighbor_graph
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_no_cache_notes_reach_the_user():
    # a new process compiles the functions numba cannot cache, and numba says so for each;
    # warnings as errors make any such note fail the child
    code = ("import numpy as np\n"
            "from ctsne.neighbors.search import nearest_neighbors\n"
            "X = np.random.default_rng(0).normal(size=(600, 20))\n"
            "i, d = nearest_neighbors(X, 10, 'approx', random_state=0, n_jobs=1)\n"
            "assert i.shape == (600, 10)\n")
    run = subprocess.run([sys.executable, "-W", "error::Warning", "-c", code],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]

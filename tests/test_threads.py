"""Thread use: small problems never enter a parallel region; the wait policy is passive
unless the user chose one."""

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from ctsne._parallel import Kernel, kernel

# A small fit and a small Barnes-Hut call with two threads allowed, in a fresh process
# (other tests may have run large kernels in this one); prints the kernels whose parallel
# variant was compiled (that is, entered) and those whose serial variant was.
SMALL_RUN = textwrap.dedent("""
    import sys
    import numpy as np
    import numba
    from ctsne import ConditionalTSNE
    from ctsne._parallel import Kernel
    from ctsne.forces.repulsion.barnes_hut import repulsion_bh

    assert numba.get_num_threads() == 2
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 5))
    ConditionalTSNE(perplexity=10, n_iter=20, early_exaggeration_iter=10, random_state=0,
                    neighbors="exact").fit(X, np.arange(150) % 3)
    repulsion_bh(rng.normal(size=(400, 2)), 0.5)
    parallel, serial = [], []
    for name, mod in list(sys.modules.items()):
        if name.startswith("ctsne"):
            for attr, obj in vars(mod).items():
                if isinstance(obj, Kernel):
                    if obj.parallel.signatures:
                        parallel.append(name + "." + attr)
                    if obj.serial.signatures:
                        serial.append(name + "." + attr)
    print(",".join(sorted(set(parallel))))
    print(",".join(sorted(set(serial))))
""")


def _run(script, **env):
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=600)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_small_problems_stay_on_the_calling_thread():
    parallel, serial = _run(SMALL_RUN, NUMBA_NUM_THREADS="2")[-2:]
    assert parallel == ""
    # the kernels of a fit and of Barnes-Hut did run, in their serial variants
    for name in ("ctsne.forces.attraction._attraction_planar",
                 "ctsne.optimization.optimizer._step",
                 "ctsne.forces.repulsion.exact._grouped_kernel_2d",
                 "ctsne.forces.repulsion.barnes_hut._traverse"):
        assert name in serial.split(","), serial
    # and the once-per-fit passes in their numpy twins: neither variant compiled
    for name in ("ctsne.affinities.calibration._calibrate_kernel",
                 "ctsne.forces.gradient._fixed_part"):
        assert name not in serial.split(","), serial


def _double(x, out):
    for i in numba.prange(x.shape[0]):
        out[i] = 2.0 * x[i]


def test_kernel_variants_agree_and_dispatch_by_work(monkeypatch):
    k = Kernel(_double, min_work=100)
    monkeypatch.setattr("numba.get_num_threads", lambda: 2)
    assert k.pick(99) is k.serial and k.pick(100) is k.parallel
    monkeypatch.setattr("numba.get_num_threads", lambda: 1)
    assert k.pick(10**9) is k.serial

    # a numpy twin takes the small calls, on any number of threads; large ones stay compiled
    @k.small
    def _double_np(x, out):
        out[:] = 2.0 * x

    assert k.numpy is _double_np
    assert k.pick(99) is _double_np and k.pick(100) is k.serial
    monkeypatch.setattr("numba.get_num_threads", lambda: 2)
    assert k.pick(99) is _double_np and k.pick(100) is k.parallel
    # or below a threshold of its own, above the parallel one
    k.small(below=1000)(_double_np)
    assert k.pick(999) is _double_np and k.pick(1000) is k.parallel
    x = np.arange(5.0)
    out = np.empty(5)
    k.parallel(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    out[:] = 0
    k.serial(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    # each variant has its own cache file name: numba's cache index would mix them up
    assert k.serial.py_func.__qualname__ != k.parallel.py_func.__qualname__


def test_decorator_passes_options():
    k = kernel(7, fastmath=True)(_double)
    assert isinstance(k, Kernel) and k.min_work == 7
    assert k.parallel.targetoptions["fastmath"] and k.serial.targetoptions["fastmath"]


POLICY = "import os, {}; print(os.environ.get('OMP_WAIT_POLICY'))"


# through the estimator (the user's path) once; the cheap module for the other cases
@pytest.mark.parametrize("module, env, expected", [
    ("ctsne.estimator.tsne", {}, "PASSIVE"),
    ("ctsne._parallel", {"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE"),
    ("ctsne._parallel", {"GOMP_SPINCOUNT": "1000"}, "None"),
])
def test_wait_policy_is_passive_unless_the_user_set_one(module, env, expected):
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY",
                                                             "GOMP_SPINCOUNT")}
    res = subprocess.run([sys.executable, "-c", POLICY.format(module)], capture_output=True,
                         text=True, env={**base, **env}, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == expected

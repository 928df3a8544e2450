"""Thread use: small problems never enter a parallel region; the wait policy is passive
unless the user chose one."""

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from ctsne._parallel import Kernel, Threaded, kernel

# A small fit and a small Barnes-Hut call with two threads allowed, in a fresh process
# (other tests may have run large kernels in this one); prints the kernels whose parallel
# variant was compiled (that is, entered) and those whose serial variant was.
SMALL_RUN = textwrap.dedent("""
    import sys
    import threading
    import numpy as np
    import numba
    from ctsne import ConditionalTSNE
    from ctsne._parallel import Kernel, Threaded
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
                if isinstance(obj, Threaded):
                    if obj.parallel is not None and obj.parallel.signatures:
                        parallel.append(name + "." + attr)
                    if obj.compiled.signatures:
                        serial.append(name + "." + attr)
    # ctsne's own worker threads: started by the first call split over threads
    parallel += [t.name for t in threading.enumerate() if t.name == "ctsne-worker"]
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
                 "ctsne.forces.repulsion.exact._grouped_kernel_2d",
                 "ctsne.forces.repulsion.barnes_hut._traverse"):
        assert name in serial.split(","), serial
    # and the once-per-fit passes and a small fit's steps in their numpy twins: neither
    # variant compiled
    for name in ("ctsne.affinities.calibration._calibrate_kernel",
                 "ctsne.forces.gradient._fixed_part",
                 "ctsne.optimization.optimizer._step_kernel"):
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


def _cumulative(x, out, start, stop):
    # a sequential sum per row: a part's result depends on its rows only (prange: a range
    # in the serial build, the parallel loop of a prange twin)
    for i in numba.prange(start, stop):
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j] * (j + 1.0)
        out[i] = s


def _failing(out, start, stop):
    for i in range(start, stop):
        if i == 7:
            raise ValueError("row 7")
        out[i] = i


def test_threaded_parts_agree_with_one_call_and_dispatch_by_work(monkeypatch):
    k = Threaded(_cumulative, min_work=100)
    x = np.random.default_rng(0).normal(size=(1000, 37))
    want = (x * np.arange(1.0, 38.0)).sum(axis=1)
    one = np.empty(1000)
    k(x, one, bounds=[0, 1000])
    np.testing.assert_allclose(one, want, rtol=1e-12)
    for bounds in ([0, 500, 1000], [0, 1, 999, 1000], [0, 0, 300, 301, 1000]):
        parts = np.empty(1000)
        k(x, parts, bounds=bounds)
        np.testing.assert_array_equal(parts, one)
    # the split: one thread below min_work or with one thread allowed
    monkeypatch.setattr("numba.get_num_threads", lambda: 3)
    assert k.threads(99) == 1 and k.threads(100) == 3
    monkeypatch.setattr("numba.get_num_threads", lambda: 1)
    assert k.threads(10**9) == 1
    assert k.parallel is None


def test_threaded_prange_twin_from_its_threshold():
    k = Threaded(_cumulative, min_work=1, prange_from=1000)
    x = np.random.default_rng(1).normal(size=(200, 5))
    a, b = np.empty(200), np.empty(200)
    k(x, a, bounds=[0, 100, 200], work=999)
    assert not k.parallel.signatures  # below prange_from: the serial build on threads
    k(x, b, bounds=[0, 100, 200], work=1000)
    assert k.parallel.signatures
    np.testing.assert_array_equal(a, b)
    # one part never needs the twin
    k.parallel = None
    k(x, b, bounds=[0, 200], work=10**9)
    np.testing.assert_array_equal(a, b)


def test_threaded_errors_reach_the_caller_and_the_workers_go_on():
    k = Threaded(_failing, min_work=1)
    out = np.zeros(20)
    for bounds in ([0, 10, 20], [0, 5, 20], [0, 20]):  # 7 in a worker's part, the caller's
        with pytest.raises(ValueError, match="row 7"):
            k(out, bounds=bounds)
    ok = np.zeros(7)
    k(ok, bounds=[0, 3, 7])
    np.testing.assert_array_equal(ok, np.arange(7.0))


def test_threaded_call_while_the_workers_are_busy_runs_its_parts_itself():
    from ctsne import _parallel

    k = Threaded(_cumulative, min_work=1)
    x = np.random.default_rng(2).normal(size=(50, 3))
    want, got = np.empty(50), np.empty(50)
    k(x, want, bounds=[0, 50])
    with _parallel._busy:  # as if another Python thread's call held the workers
        k(x, got, bounds=[0, 20, 50])
    np.testing.assert_array_equal(got, want)


FORKED = textwrap.dedent("""
    import multiprocessing as mp
    import numpy as np
    from ctsne.forces.repulsion.exact import repulsion_exact

    def child(q):
        q.put(repulsion_exact(Y)[0])

    Y = np.random.default_rng(0).normal(size=(600, 2))
    F, _ = repulsion_exact(Y)  # starts the parent's worker
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    F_child = q.get(timeout=120)
    p.join(timeout=120)
    assert p.exitcode == 0
    assert np.array_equal(F, F_child)
    print("ok")
""")


def test_threaded_kernels_work_in_a_forked_child():
    # a fork copies the worker objects but not their threads: the child starts its own
    assert _run(FORKED, NUMBA_NUM_THREADS="2")[-1] == "ok"


def test_even_parts_by_hand():
    from ctsne._parallel import even_parts

    np.testing.assert_array_equal(even_parts(np.ones(10), 2), [0, 5, 10])
    np.testing.assert_array_equal(even_parts(np.array([9, 1, 1, 1, 1, 1, 1, 1, 1, 1]), 2),
                                  [0, 1, 10])
    np.testing.assert_array_equal(even_parts(np.ones(3), 1), [0, 3])
    np.testing.assert_array_equal(even_parts(np.zeros(0), 4), [0, 0])
    b = even_parts(np.arange(100), 4)
    assert b[0] == 0 and b[-1] == 100 and np.all(np.diff(b) >= 0) and len(b) == 5
    # every part holds about a quarter of the cost
    sums = [np.arange(100)[b[i]:b[i + 1]].sum() for i in range(4)]
    assert max(sums) - min(sums) <= 2 * 99, sums


def test_repulsion_is_the_same_on_any_number_of_threads():
    # the exact and Barnes-Hut kernels run one compiled body in parts that do not depend
    # on the thread count (rows, tree groups): bit for bit on 1, 2 and 3 threads, fastmath
    # sweeps included
    from ctsne.forces.repulsion.barnes_hut import repulsion_bh
    from ctsne.forces.repulsion.exact import repulsion_exact_groups

    rng = np.random.default_rng(3)
    Y = rng.normal(scale=8.0, size=(3000, 2))
    starts = np.array([0, 10, 1700, 3000])
    old = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, 2, 3):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append([repulsion_exact_groups(Y, starts), repulsion_bh(Y, 0.5),
                         repulsion_bh(Y, 0.1), repulsion_bh(Y[:, :1].copy(), 0.5)])
    finally:
        numba.set_num_threads(old)
    for other in runs[1:]:
        for (F, Z), (F1, Z1) in zip(other, runs[0], strict=True):
            np.testing.assert_array_equal(F, F1)
            assert Z == Z1


def test_class_copies_in_parts_give_numpys_results():
    # the conditional repulsion's row copies, each body run in three parts (as three
    # threads would), against numpy
    from ctsne.forces.repulsion import conditional

    rng = np.random.default_rng(5)
    n = 3001
    Y = rng.normal(scale=4.0, size=(n, 2))
    idx = rng.choice(n, 2500, replace=False)
    out = np.empty((len(idx), 2))
    conditional._gather_rows(Y, idx, out, bounds=[0, 1, 1200, len(idx)])
    np.testing.assert_array_equal(out, Y[idx])
    F, G = rng.normal(size=(n, 2)), rng.normal(size=(len(idx), 2))
    want = F.copy()
    want[idx] += 0.37 * G
    conditional._add_rows_kernel(F, idx, 0.37, G, bounds=[0, 1, 1200, len(idx)])
    np.testing.assert_array_equal(F, want)

"""Default threads against ``n_jobs=1``, beside CPU-burning processes and on an idle machine.

    python benchmarks/bench_threads.py                      # busy: n = 700, 2k, 10k, 50k
    python benchmarks/bench_threads.py --burners 0 --sizes 100000 --no-fit   # idle, 100k

With ``--burners B`` (default 1) the script starts B processes that spin
(``while True: pass``), burner b pinned to core b mod cpu_count (one burner: all cores),
and kills them at the end. For each n it times, in the same process and interleaved, the
default (all threads) and ``n_jobs=1``:

* ``opt``: ``optimize()`` from the same fitted state (P computed once);
* ``fit``: ``fit_transform`` from the data (kNN, P, initialisation, both phases).

Each time is the minimum over ``--repeats`` runs. Data: Gaussian blobs in 10 dimensions,
a 5-class prior that cuts across them. The load average before the run is printed and
recorded; the machine may be shared with other work. Run under
``flock /tmp/ctsne-bench.lock``.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ctsne import ConditionalTSNE

RESULTS = Path(__file__).with_name("results.jsonl")


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(8, 10))
    X = centres[rng.integers(0, 8, n)] + rng.normal(size=(n, 10))
    return X, rng.integers(0, 5, n)


def start_burners(count: int) -> list[subprocess.Popen]:
    procs = []
    cores = os.cpu_count() or 1
    for b in range(count):
        p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        if count > 1:
            os.sched_setaffinity(p.pid, {b % cores})
        procs.append(p)
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def iterations(n: int) -> tuple[int, int]:
    """(iterations timed by ``opt``, early + late iterations of ``fit``)."""
    return (100, 100) if n <= 10_000 else (20, 30)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench(n: int, repeats: int, do_fit: bool) -> dict:
    X, labels = data(n)
    n_opt, n_fit = iterations(n)
    params = dict(random_state=0, neighbors="exact")  # pynndescent would compile in a run
    base = ConditionalTSNE(early_exaggeration_iter=0, n_iter=0, **params).fit(X, labels)
    for jobs in (None, 1):  # compile (or load) both kernel variants before timing
        warm = copy.deepcopy(base)
        warm.n_jobs = jobs
        warm.optimize(5)
    out = {"n": n, "opt_iters": n_opt}
    times = {"opt": {None: [], 1: []}, "fit": {None: [], 1: []}}
    for _ in range(repeats):
        for jobs in (None, 1):
            model = copy.deepcopy(base)
            model.n_jobs = jobs
            times["opt"][jobs].append(timed(lambda m=model: m.optimize(n_opt)))
            if do_fit:
                model = ConditionalTSNE(early_exaggeration_iter=n_fit, n_iter=n_fit,
                                        n_jobs=jobs, **params)
                times["fit"][jobs].append(timed(lambda m=model: m.fit(X, labels)))
    for case in ("opt", "fit") if do_fit else ("opt",):
        default, one = min(times[case][None]), min(times[case][1])
        out[f"{case}_default_s"], out[f"{case}_one_s"] = default, one
        out[f"{case}_ratio"] = default / one
    if do_fit:
        out["fit_iters"] = 2 * n_fit
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[700, 2000, 10_000, 50_000])
    ap.add_argument("--burners", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-fit", action="store_true", help="time optimize() only")
    ap.add_argument("--label", default="", help="recorded with the results (e.g. 'main')")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()

    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{os.cpu_count()} cores; {args.burners} burner(s); "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} (before import)")
    burners = start_burners(args.burners)
    rows = []
    try:
        time.sleep(1.0)
        for n in args.sizes:
            row = bench(n, args.repeats, not args.no_fit)
            import numba  # the layer is known once a parallel kernel has run
            row.update(layer=numba.threading_layer(),
                       wait_policy=os.environ.get("OMP_WAIT_POLICY"))
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        stop(burners)
    if args.no_save:
        return
    meta = {"date": datetime.date.today().isoformat(), "machine": "vm",
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "bench": "threads", "label": args.label, "burners": args.burners,
            "load_before": [round(v, 2) for v in load]}
    with RESULTS.open("a") as fh:
        for row in rows:
            fh.write(json.dumps({**meta, **row}) + "\n")


if __name__ == "__main__":
    main()

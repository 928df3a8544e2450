"""ctsne against openTSNE, case by case, each run in a fresh process (peak memory per run).

    python benchmarks/bench_vs_opentsne.py --cases 10k 100k          # what fits in the time
    python benchmarks/bench_vs_opentsne.py --cases 1M 500kx128 --iters 750
    python benchmarks/bench_vs_opentsne.py --startup                  # cold / warm first run

Each case runs openTSNE (plain t-SNE, FFT, n_jobs=2), ctsne with prior=None, a 5-class
prior and a 500-class prior, with the same perplexity (30) and iterations (250 early
exaggeration + 500). Results are printed as a table and appended as JSON lines to
``benchmarks/results.jsonl`` with the machine and date; ratios are to openTSNE in the
same run, the only comparison that means anything on a shared machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = {"10k": (10_000, 10), "100k": (100_000, 10), "1M": (1_000_000, 10),
         "500kx128": (500_000, 128)}


def make_data(n: int, d: int, seed: int = 0):
    """Paper-style synthetic data at scale: 5 clusters in the first dims, sub-clusters, noise.

    The 500-class prior splits each of the 5 clusters into 100 random parts.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    five = rng.integers(0, 5, n)
    four = rng.integers(0, 4, n)
    centers = rng.normal(scale=2.0, size=(5, min(4, d)))
    X = rng.normal(scale=0.5, size=(n, d)).astype(np.float64)
    X[:, : centers.shape[1]] += centers[five]
    if d > 6:
        X[:, 4:6] += rng.normal(scale=3.0, size=(4, 2))[four]
    five_hundred = five * 100 + rng.integers(0, 100, n)
    return X, five, five_hundred


def knn_preservation(X, Y, k=10, sample=20_000, seed=0):
    import numpy as np
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(seed)
    idx = rng.choice(len(X), size=min(sample, len(X)), replace=False)
    nx = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X[idx], return_distance=False)
    ny = NearestNeighbors(n_neighbors=k + 1).fit(Y).kneighbors(Y[idx], return_distance=False)
    return float(np.mean([len(set(a[1:]) & set(b[1:])) / k for a, b in zip(nx, ny, strict=True)]))


def run_one(case: str, runner: str, ee_iter: int, n_iter: int) -> dict:
    """Body of a child process: one library on one case."""
    import resource

    import numpy as np

    n, d = CASES[case]
    X, five, five_hundred = make_data(n, d)
    out = {"case": case, "runner": runner, "n": n, "d": d}
    if runner == "openTSNE":
        import openTSNE

        t0 = time.perf_counter()
        aff = openTSNE.affinity.PerplexityBasedNN(X, perplexity=30, n_jobs=2, random_state=0)
        t1 = time.perf_counter()
        init = openTSNE.initialization.pca(X, random_state=0)
        emb = openTSNE.TSNEEmbedding(init, aff, negative_gradient_method="fft", n_jobs=2,
                                     random_state=0)
        emb = emb.optimize(n_iter=ee_iter, exaggeration=12, momentum=0.5)
        emb = emb.optimize(n_iter=n_iter, momentum=0.8)
        t2 = time.perf_counter()
        Y = np.asarray(emb)
        out.update(affinities_s=t1 - t0, optimization_s=t2 - t1, kl=float(emb.kl_divergence))
    else:
        from ctsne import ConditionalTSNE

        prior = {"ctsne": None, "ctsne-5": five, "ctsne-500": five_hundred}[runner]
        model = ConditionalTSNE(random_state=0, n_jobs=2, early_exaggeration_iter=ee_iter,
                                n_iter=n_iter)
        Y = model.fit_transform(X, prior)
        out.update(affinities_s=model.timings_["affinities"],
                   optimization_s=model.timings_["optimization"], kl=model.kl_divergence_)
    out["total_s"] = out["affinities_s"] + out["optimization_s"]
    out["s_per_iter"] = out["optimization_s"] / max(1, ee_iter + n_iter)
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if runner in ("openTSNE", "ctsne"):
        out["knn10_preservation"] = knn_preservation(X, Y)
    return out


def spawn(args: list[str], env=None) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def startup() -> dict:
    """Time to the first embedding of 1,000 points in a fresh process, cold and warm cache.

    Wall and CPU seconds (all threads) per run: on a machine shared with other work the
    wall time follows the load, the CPU time much less.
    """
    code = ("import time; t=time.perf_counter(); c=time.process_time(); import numpy as np; "
            "from ctsne import ConditionalTSNE; "
            "X=np.random.default_rng(0).normal(size=(1000,10)); "
            "ConditionalTSNE(random_state=0).fit_transform(X, np.arange(1000)%5); "
            "print(time.perf_counter()-t, time.process_time()-c)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        runs = []
        for _ in range(3):
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env)
            runs.append([float(v) for v in p.stdout.strip().splitlines()[-1].split()])
    warm = min(runs[1:])
    return {"cold_s": runs[0][0], "cold_cpu_s": runs[0][1], "warm_s": warm[0],
            "warm_cpu_s": warm[1]}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=["10k"], choices=list(CASES))
    ap.add_argument("--runners", nargs="*", default=["openTSNE", "ctsne", "ctsne-5", "ctsne-500"])
    ap.add_argument("--ee-iter", type=int, default=250)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--startup", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "RUNNER"), help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results.jsonl"))
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(run_one(a.child[0], a.child[1], a.ee_iter, a.iters)))
        return
    meta = {"date": datetime.date.today().isoformat(), "machine": platform.node(),
            "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
            "python": platform.python_version()}

    def record(row: dict) -> None:
        # one line per finished run, so a long session that is cut off keeps what it measured
        print(json.dumps(row), flush=True)
        with open(a.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")

    if a.startup:
        record({**meta, "case": "startup-1000", **startup()})
    for case in a.cases:
        base = None
        for runner in a.runners:
            r = {**meta, **spawn(["--child", case, runner, "--ee-iter", str(a.ee_iter),
                                  "--iters", str(a.iters)])}
            r.setdefault("case", case)
            r.setdefault("runner", runner)
            if runner == "openTSNE" and "total_s" in r:
                base = r
            if base is not None and "total_s" in r:
                r["ratio_total_vs_openTSNE"] = r["total_s"] / base["total_s"]
                r["ratio_opt_vs_openTSNE"] = r["optimization_s"] / base["optimization_s"]
            record(r)


if __name__ == "__main__":
    main()

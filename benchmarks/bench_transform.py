"""New points into a fitted map: ctsne's transform beside openTSNE's, on the same map.

    python benchmarks/bench_transform.py              # 100k + 10k
    python benchmarks/bench_transform.py --n 20000 --new 2000

The reference map and openTSNE's affinities are built first, outside any lock (they are
not what is timed); the timed transform calls then run holding ``--lock``
(``/tmp/ctsne-bench.lock``), so they never overlap another benchmark's timing.

Data: bench_vs_opentsne's synthetic set (10 features: 5 clusters in dims 1-4, 4
sub-clusters in dims 5-6) with 4 more sub-clusters in dims 5-6, the prior. ctsne fits
the reference map with that prior (so the 5 clusters show), then places the held-out
points with their prior labels (ct-SNE placement) and without (β' everywhere: plain
t-SNE placement). openTSNE places the same points into the same map: a TSNEEmbedding
holding ctsne's reference positions and openTSNE's own affinities of the reference data
(its transform queries their kNN index), with its defaults (perplexity 5, 250
iterations). Timed: each ``transform`` call alone, its neighbour search included.
Quality: 10-NN agreement of the new points' cluster label with their reference
neighbours in the map. Rows are appended to ``benchmarks/results.jsonl``; ratios are
ctsne over openTSNE in the same run. openTSNE runs in a child process started without
the ``OMP_WAIT_POLICY=PASSIVE`` that importing ctsne sets (its OpenMP threads keep their
default policy); its timed call runs inside the parent's lock, right after ctsne's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# ctsne sets OMP_WAIT_POLICY=PASSIVE when imported (ctsne._parallel); openTSNE runs in a
# child process with the environment as it was before, its own OpenMP defaults
_ENV_BEFORE = dict(os.environ)

from bench_vs_opentsne import _cpu_model, make_data  # noqa: E402


def agreement(Y_ref, labels_ref, Y_new, labels_new, k: int = 10) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(k).fit(Y_ref, labels_ref).score(Y_new, labels_new))


def opentsne_child(n: int, n_new: int, map_file: str, out_file: str) -> None:
    """Body of the openTSNE child: prepare (untimed), say "ready", time transform on "go"
    with one thread and with all; ``opentsne_s`` is the faster."""
    import openTSNE
    from openTSNE import TSNEEmbedding, affinity

    X, _, _ = _data(n, n_new)
    Y_ref = np.load(map_file)
    aff = affinity.PerplexityBasedNN(X[:n], perplexity=30, n_jobs=os.cpu_count(),
                                     random_state=0)
    # one thread and all: on a machine busy with other work, openTSNE's spinning OpenMP
    # threads can make the parallel call several times slower than the serial one
    embs = {j: TSNEEmbedding(Y_ref, aff, n_jobs=j, random_state=0)
            for j in sorted({1, os.cpu_count() or 1})}
    for emb in embs.values():
        emb.transform(X[n:][:50], n_iter=2)
    print("ready", flush=True)
    sys.stdin.readline()
    out = {"opentsne_version": openTSNE.__version__}
    best = None
    for j, emb in embs.items():
        t0 = time.perf_counter()
        Y_o = np.asarray(emb.transform(X[n:]))
        out[f"opentsne_{j}_threads_s"] = time.perf_counter() - t0
        if best is None or out[f"opentsne_{j}_threads_s"] < best:
            best = out[f"opentsne_{j}_threads_s"]
            np.save(out_file, Y_o)
    out["opentsne_s"] = best  # the faster of the two
    print(json.dumps(out), flush=True)


def _data(n: int, n_new: int):
    X, five, _ = make_data(n + n_new, 10, seed=0)
    # the prior: 4 more sub-clusters, offset in dims 5-6
    rng = np.random.default_rng(1)
    four = rng.integers(0, 4, len(X))
    X[:, 4:6] += rng.normal(scale=3.0, size=(4, 2))[four]
    return X, five, four


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="reference points")
    ap.add_argument("--new", type=int, default=10_000, help="points to place")
    ap.add_argument("--ee-iter", type=int, default=250)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--no-opentsne", action="store_true")
    ap.add_argument("--old-path", action="store_true",
                    help="also time the placement before issue 23 (trees walked on every "
                    "iteration, field=False), with the prior")
    ap.add_argument("--out", default=str(HERE / "results.jsonl"))
    ap.add_argument("--lock", default="/tmp/ctsne-bench.lock")
    ap.add_argument("--map-cache", help="an .npy file holding the reference map: loaded if "
                    "present (the fit is skipped), else written after the fit")
    ap.add_argument("--opentsne-child", nargs=2, metavar=("MAP", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.opentsne_child:
        opentsne_child(a.n, a.new, *a.opentsne_child)
        return

    from ctsne import ConditionalTSNE

    X, five, four = _data(a.n, a.new)
    ref, new = slice(0, a.n), slice(a.n, a.n + a.new)
    row = {"date": datetime.date.today().isoformat(), "machine": platform.node(),
           "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
           "python": platform.python_version(), "case": f"transform-{a.n}+{a.new}",
           "load_at_start": os.getloadavg()[0]}

    t0 = time.perf_counter()
    # one thread for the (untimed) fit: on a machine shared with other work, parallel
    # kernels wait for descheduled threads; the timed calls use all threads
    model = ConditionalTSNE(random_state=0, early_exaggeration_iter=a.ee_iter, n_iter=a.iters,
                            n_jobs=1)
    if a.map_cache and os.path.exists(a.map_cache):
        # the same map as a fit would give (it is deterministic): fit with no iterations
        # for the fitted state (P, prior, training data), then put the saved map in place
        model.set_params(early_exaggeration_iter=0, n_iter=0)
        model.fit(X[ref], four[ref])
        model.embedding_ = np.load(a.map_cache)
        row["map"] = a.map_cache
    else:
        model.fit(X[ref], four[ref])
        if a.map_cache:
            np.save(a.map_cache, model.embedding_)
    model.set_params(n_jobs=None)
    row["fit_s_unlocked"] = time.perf_counter() - t0
    Y_ref = model.embedding_
    half = a.n // 2  # how well the map itself separates the clusters
    row["ref_agreement_five"] = agreement(Y_ref[:half], five[ref][:half], Y_ref[half:],
                                          five[ref][half:])
    # compile what the timed calls run (the variants depend on the sizes: same sizes)
    model.transform(X[new], four[new], n_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.transform(X[new], n_iter=2)
    child = None
    if not a.no_opentsne:
        import subprocess
        import tempfile

        tmp = tempfile.mkdtemp()
        np.save(f"{tmp}/map.npy", Y_ref)
        child = subprocess.Popen(
            [sys.executable, __file__, "--n", str(a.n), "--new", str(a.new),
             "--opentsne-child", f"{tmp}/map.npy", f"{tmp}/out.npy"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_ENV_BEFORE)
        assert child.stdout.readline().strip() == "ready", "the openTSNE child failed"
    print("map ready; waiting for the lock", a.lock, flush=True)

    import fcntl

    with open(a.lock, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # only the timed calls hold the lock
        t0 = time.perf_counter()
        Y_c = model.transform(X[new], four[new])
        row["ctsne_prior_s"] = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            Y_p = model.transform(X[new])
            row["ctsne_plain_s"] = time.perf_counter() - t0
        if child is not None:
            child.stdin.write("go\n")
            child.stdin.flush()
            row.update(json.loads(child.stdout.readline()))
            child.wait()
            Y_o = np.load(f"{tmp}/out.npy")
        if a.old_path:
            from ctsne.estimator.placement import place_points

            t0 = time.perf_counter()
            Y_old = place_points(model.training_data_, Y_ref, X[new], model.prior_, four[new],
                                 field=False)
            row["ctsne_prior_old_path_s"] = time.perf_counter() - t0
            row["max_shift_vs_old_path"] = float(np.linalg.norm(Y_c - Y_old, axis=1).max())
            row["median_shift_vs_old_path"] = float(np.median(np.linalg.norm(Y_c - Y_old,
                                                                             axis=1)))
        row["load_after_timed_calls"] = os.getloadavg()[0]
    for name, Y in (("ctsne_prior", Y_c), ("ctsne_plain", Y_p),
                    *((("opentsne", Y_o),) if child is not None else ())):
        row[f"{name}_agreement"] = agreement(Y_ref, five[ref], Y, five[new])
        row[f"{name}_agreement_sub"] = agreement(Y_ref, four[ref], Y, four[new])
    if child is not None:
        row["ratio_prior_vs_opentsne"] = row["ctsne_prior_s"] / row["opentsne_s"]
        row["ratio_plain_vs_opentsne"] = row["ctsne_plain_s"] / row["opentsne_s"]
    print(json.dumps(row), flush=True)
    with open(a.out, "a") as fh:
        fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

"""ctsne's three maps against openTSNE and umap-learn on data shaped like single cells' PCs.

    python benchmarks/bench_single_cell.py --n 200000 --save
    python benchmarks/bench_single_cell.py --n 1000000 --batches 10 --runs ctsne,ctsne-prior
    python benchmarks/bench_single_cell.py --real --n 200000     # pbmc-stim's PCs, replicated

Data (``pc_like``): 50 principal-component-like features, 30 clusters of uneven sizes
(Zipf-like weights) grouped under 8 cell-type families, centres and within-cluster noise
whose spread falls off with the component, and ``--batches`` batches whose mix differs by
cluster, each batch shifting each cluster its own way (a batch effect that differs by
cluster). ``--real``: the 2,000 pbmc-stim cells' 30 PCs (``../shared/data/pbmc-stim``,
batch = stim, label = marker_label) repeated up to ``--n`` rows, each copy moved by
Gaussian noise of ``--jitter`` × the median nearest-cell distance.

Each run is one fresh child process (peak resident memory its own), one after another:
ctsne's ConditionalTSNE plain, with the batch as prior (default conditioning, and
``conditioning="classes"``), ConditionalUMAP plain and with the prior, ConditionalLargeVis
plain (and with the prior on request); openTSNE's default TSNE, tsne-h2pack's default TSNE
and umap-learn's UMAP() (no random_state, so it runs in parallel) where installed. All on
``--threads`` threads (BLAS, OpenMP and numba capped too); each child first fits 2,000
rows untimed, so numba's compilation and cache loading (and tsne-h2pack's proxy points)
stay out of the times (``--cold`` keeps them in). That small fit searches exactly, so the
part of pynndescent that numba cannot cache (its descent, ~15 s at 50 features) is
compiled in the timed fit of ctsne and of umap-learn alike; ctsne's cacheable part comes
from numba's cache once any earlier process has run a search
(:mod:`ctsne.neighbors.descent`).

Row: total seconds of the fit; affinities_s and optimization_s (ctsne: its ``timings_``,
all of it in ``stages``; openTSNE: ``prepare_initial`` (kNN, P and the PCA start) and the
two optimisation phases); peak RSS of the process, of the data alone and after the
warm-up (``rss_warm_mb``: numba's compilation can hold more than a small fit); the share of
each point's 10 nearest neighbours in X kept among its 10 nearest in the map
(``knn10_preservation``), and the batch's and the label's 10-NN homogeneity in the map
(and in X, ``input_*``; chance ``Σ share²`` beside them), all on a fixed subsample of
``--sample`` points, their neighbours searched exactly among all points. These equal
``ctsne.metrics.knn_label_homogeneity`` where the subsample is every point. Results go to
stdout as a table and to stderr as JSON lines; ``--save`` appends them to results.jsonl.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from common import (
    c_stdout_captured,
    exact_neighbours,
    limit_threads,
    peak_rss_mb,
    query_rows,
    record,
    run_child,
    run_meta,
)

HERE = Path(__file__).resolve().parent
REAL = HERE.parent.parent / "shared" / "data" / "pbmc-stim"
RUNS = ("ctsne", "ctsne-prior", "ctsne-prior-classes", "cumap", "cumap-prior", "clargevis",
        "opentsne", "h2pack", "umap-learn")
EXTRA_RUNS = ("clargevis-prior",)
PEERS = {"opentsne": "openTSNE", "h2pack": "tsne_h2pack", "umap-learn": "umap"}


def pc_like(n: int, rng: np.random.Generator, d: int = 50, clusters: int = 30,
            batches: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points like single cells' PCs (module note): ``(X float64 (n, d), label, batch)``."""
    fall = 1.0 / np.sqrt(np.arange(d) + 1.0)  # spread of component k ∝ (k + 1)^-1/2
    weights = 1.0 / (1.0 + rng.permutation(clusters)) ** 0.9
    label = rng.choice(clusters, n, p=weights / weights.sum())
    families = rng.normal(scale=5.0, size=(8, d))
    centres = (families[rng.integers(0, 8, clusters)]
               + rng.normal(scale=2.0, size=(clusters, d))) * fall
    mix = np.cumsum(rng.dirichlet(np.full(batches, 4.0), clusters), axis=1)
    batch = np.minimum((rng.random(n)[:, None] > mix[label]).sum(axis=1), batches - 1)
    shifts = (rng.normal(size=(batches, 1, d))
              + 0.7 * rng.normal(size=(batches, clusters, d))) * fall
    X = rng.normal(size=(n, d))  # in place from here: one (n, d) array at a time
    X *= np.sqrt(fall)  # noise falls off more slowly than the centres' spread
    X *= rng.uniform(0.6, 1.4, clusters)[label, None]
    X += centres[label]
    X += shifts[batch, label]
    return X, label, batch


def pbmc_replicated(n: int, rng: np.random.Generator, jitter: float):
    """pbmc-stim's 2,000 cells repeated up to ``n`` rows, each copy jittered (module note)."""
    import pandas as pd
    from sklearn.neighbors import NearestNeighbors

    pcs = pd.read_csv(REAL / "pbmc_stim_pcs.tsv.gz", sep="\t", index_col=0)
    meta = pd.read_csv(REAL / "pbmc_stim_meta.tsv.gz", sep="\t", index_col=0).loc[pcs.index]
    base = pcs.to_numpy(np.float64)
    nearest = NearestNeighbors(n_neighbors=2).fit(base).kneighbors(base)[0][:, 1]
    scale = jitter * float(np.median(nearest)) / np.sqrt(base.shape[1])
    pick = np.concatenate([np.arange(len(base))] * (n // len(base))
                          + [rng.permutation(len(base))[:n % len(base)]])
    X = base[pick] + rng.normal(scale=scale, size=(n, base.shape[1]))
    return (X, meta["marker_label"].to_numpy().astype(str)[pick],
            meta["stim"].to_numpy().astype(str)[pick])


def make_data(a) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    if a.real:
        return pbmc_replicated(a.n, rng, a.jitter)
    return pc_like(a.n, rng, a.features, batches=a.batches)


def fit(run: str, X: np.ndarray, batch: np.ndarray, threads: int) -> tuple[np.ndarray, dict]:
    """One run's map of ``X`` and what it reports (seconds, stages, choices)."""
    t0 = time.perf_counter()
    if run == "opentsne":
        from openTSNE import TSNE

        tsne = TSNE(n_jobs=threads, random_state=0)
        emb = tsne.prepare_initial(X)  # as TSNE.fit: affinities and start, then two phases
        t1 = time.perf_counter()
        emb.optimize(n_iter=tsne.early_exaggeration_iter, exaggeration=tsne.early_exaggeration,
                     momentum=tsne.initial_momentum, inplace=True, propagate_exception=True)
        emb.optimize(n_iter=tsne.n_iter, exaggeration=tsne.exaggeration,
                     momentum=tsne.final_momentum, inplace=True, propagate_exception=True)
        t2 = time.perf_counter()
        return np.asarray(emb), {"seconds": t2 - t0, "affinities_s": t1 - t0,
                                 "optimization_s": t2 - t1}
    if run == "h2pack":
        from tsne_h2pack import TSNE

        with c_stdout_captured():  # its C code prints; the parent reads stdout's last line
            Y = TSNE(n_jobs=threads, random_state=0).fit_transform(X)
        return Y, {"seconds": time.perf_counter() - t0}
    if run == "umap-learn":
        import umap

        Y = umap.UMAP(n_jobs=threads).fit_transform(X)  # no random_state: parallel SGD
        return Y, {"seconds": time.perf_counter() - t0, "parallel": True}
    import ctsne

    cls = {"ctsne": ctsne.ConditionalTSNE, "cumap": ctsne.ConditionalUMAP,
           "clargevis": ctsne.ConditionalLargeVis}[run.split("-")[0]]
    kw = {"conditioning": "classes"} if run.endswith("-classes") else {}
    model = cls(random_state=0, n_jobs=threads, **kw)
    Y = model.fit_transform(X, batch if "-prior" in run else None)
    seconds = time.perf_counter() - t0
    stages = {k: float(v) for k, v in model.timings_.items()}
    return Y, {"seconds": seconds, "optimization_s": stages.get("optimization"),
               "affinities_s": stages.get("affinities", stages.get("graph")),
               "stages": stages, "conditioning": getattr(model, "conditioning_", None),
               "affinities": getattr(model, "affinities_", None)}


def homogeneity(values: np.ndarray, rows: np.ndarray, lists: np.ndarray) -> float:
    return float(np.mean(values[lists] == values[rows, None]))


def child(a) -> dict:
    """Body of a child process: one run on the data, then its measures."""
    X, label, batch = make_data(a)
    out = {"run": a.child, "rss_data_mb": peak_rss_mb(), "warmup_s": None}
    if not a.cold:
        t0 = time.perf_counter()
        fit(a.child, X[:2000], batch[:2000], a.threads)
        out["warmup_s"] = time.perf_counter() - t0
    out["rss_warm_mb"] = peak_rss_mb()  # what the timed fit's peak starts from
    Y, info = fit(a.child, X, batch, a.threads)
    out.update(info, peak_rss_mb=peak_rss_mb())
    t0 = time.perf_counter()
    rows = query_rows(len(X), a.sample)
    in_x = exact_neighbours(X, rows, 10, a.threads)
    in_y = exact_neighbours(np.ascontiguousarray(Y, dtype=np.float64), rows, 10, a.threads,
                            algorithm="kd_tree")
    out["knn10_preservation"] = float(np.mean((in_x[:, :, None] == in_y[:, None, :])
                                              .any(axis=2)))
    for name, values in (("batch", batch), ("label", label)):
        shares = np.unique(values, return_counts=True)[1] / len(values)
        out[f"{name}_h"] = homogeneity(values, rows, in_y)
        out[f"input_{name}_h"] = homogeneity(values, rows, in_x)
        out[f"{name}_chance"] = float(np.sum(shares ** 2))
    out["quality_s"] = time.perf_counter() - t0
    return out


def versions() -> dict:
    import importlib.metadata as md

    found = {}
    for dist in ("ctsne", "openTSNE", "tsne-h2pack", "umap-learn", "pynndescent", "numba",
                 "numpy"):
        with contextlib.suppress(md.PackageNotFoundError):
            found[dist] = md.version(dist)
    return found


def available(run: str) -> bool:
    import importlib.util

    return run not in PEERS or importlib.util.find_spec(PEERS[run]) is not None


def fmt(v, spec: str) -> str:
    return format("-", ">" + spec.split(".")[0]) if v is None else format(v, spec)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--runs", default=",".join(RUNS),
                    help=f"comma-separated, of {', '.join(RUNS + EXTRA_RUNS)}")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=int, default=10_000, help="query points of the measures")
    ap.add_argument("--real", action="store_true", help="pbmc-stim's PCs, replicated")
    ap.add_argument("--jitter", type=float, default=0.5)
    ap.add_argument("--cold", action="store_true", help="no untimed warm-up fit")
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a)), flush=True)
        return
    runs = [r.strip() for r in a.runs.split(",") if r.strip()]
    unknown = set(runs) - set(RUNS + EXTRA_RUNS)
    if unknown:
        ap.error(f"unknown runs: {', '.join(sorted(unknown))}")
    if a.real and not REAL.is_dir():
        ap.error(f"no pbmc-stim data at {REAL}")
    limit_threads(a.threads)
    data = ("pbmc-stim replicated (30 PCs; --features, --batches ignored)" if a.real
            else f"pc_like ({a.features} features, 30 clusters, {a.batches} batches)")
    print(f"{data}, n = {a.n:,}, {a.threads} threads")
    print(f"{'run':20} {'total s':>8} {'aff s':>7} {'opt s':>7} {'peak MB':>8} "
          f"{'warm MB':>8} {'knn10':>6} {'batch h':>7} {'label h':>7}")
    passed = [f"--{k}={getattr(a, k)}" for k in ("n", "features", "batches", "threads",
                                                    "sample", "jitter")]
    passed += [f"--{k}" for k in ("real", "cold") if getattr(a, k)]
    meta = {"benchmark": "single_cell", "data": "pbmc-stim-replicated" if a.real else "pc_like",
            "n": a.n, "features": 30 if a.real else a.features,
            "batches": 2 if a.real else a.batches, "threads": a.threads, "sample": a.sample,
            **({"jitter": a.jitter} if a.real else {}), "versions": versions()}
    ref = None
    for run in runs:
        if not available(run):
            print(f"{run:20} skipped: {PEERS[run]} is not installed")
            continue
        load = os.getloadavg()[0]
        row = {**run_meta(load), **meta, **run_child(__file__, [*passed, "--child", run])}
        row.setdefault("run", run)
        if "error" in row:
            print(f"{run:20} error: {row['error'].strip().splitlines()[-1]}")
        else:
            print(f"{run:20} {row['seconds']:8.1f} {fmt(row.get('affinities_s'), '7.1f')} "
                  f"{fmt(row.get('optimization_s'), '7.1f')} {row['peak_rss_mb']:8.0f} "
                  f"{row['rss_warm_mb']:8.0f} {row['knn10_preservation']:6.3f} "
                  f"{row['batch_h']:7.3f} {row['label_h']:7.3f}", flush=True)
        with contextlib.redirect_stdout(sys.stderr):  # the table on stdout, JSON on stderr
            record(row, a.save)
        if "batch_h" in row:
            ref = row
    if ref is not None:
        print(f"{'in X (10-NN)':20} {'':51}{ref['input_batch_h']:7.3f} "
              f"{ref['input_label_h']:7.3f}\n{'chance':20} {'':51}"
              f"{ref['batch_chance']:7.3f} {ref['label_chance']:7.3f}")


if __name__ == "__main__":
    main()

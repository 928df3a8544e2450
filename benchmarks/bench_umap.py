"""ConditionalUMAP against umap-learn and the batch-correction workflows, in one run.

    python benchmarks/bench_umap.py                    # quality: plain and with a prior
    python benchmarks/bench_umap.py --speed 50k 200k   # fit time and memory, fresh processes
    python benchmarks/bench_umap.py --layout 50k       # the two SGD kernels, one graph

Quality. Plain maps (no prior) of real data (scikit-learn's digits, scanpy's bundled
``pbmc68k_reduced``, the bundled UCI Adult sample) by umap-learn and by ConditionalUMAP
with the same neighbours count, ``min_dist`` and epochs: trustworthiness (15 neighbours)
and 15-NN preservation, input → map. With a prior whose removal we know is wanted (each
set's ``prior`` is a batch-like label, ``label`` a structure that must stay): plain UMAP,
Harmony → UMAP, BBKNN → UMAP and ConditionalUMAP's default, scored by the prior's 10-NN
homogeneity (lower mixes better; chance level beside it) and the label's (higher keeps
more). Speed. Each method fits the same synthetic data in a fresh process (peak resident
memory per process), umap-learn plain with all cores and ``random_state=None`` (its
parallel mode), ConditionalUMAP with a 5-class prior. Layout. Both packages' SGD
(umap-learn's ``optimize_layout_euclidean`` and ``ctsne.optimization.sgd``) run 200
epochs over the same graph (ConditionalUMAP's, of the speed data with its 5-class prior) on
one thread, alternating, each timed in CPU seconds of this process: a ratio that other
work on the machine disturbs far less than wall time. Results are printed and appended as
JSON lines to ``benchmarks/results.jsonl`` with the machine, date and load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SIZES = {"10k": 10_000, "50k": 50_000, "200k": 200_000, "1M": 1_000_000}


# ----------------------------------------------------------------------------- data
def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float64), d.target


def _pbmc():
    import scanpy as sc

    a = sc.datasets.pbmc68k_reduced()  # bundled with scanpy: no download
    return np.asarray(a.obsm["X_pca"], dtype=np.float64), np.asarray(a.obs["bulk_labels"])


def _adult():
    from ctsne.datasets import load_adult

    data = load_adult(standardize=True)
    return data.X, data.income


def _adult_gender():
    """The bundled Adult sample, standardised, gender factored out (its indicator column
    left out of the features, as ``ctsne embed --prior gender`` does); income must stay."""
    from ctsne.datasets import load_adult

    data = load_adult(standardize=True)
    keep = [i for i, f in enumerate(data.feature_names) if "gender" not in f.lower()]
    return data.X[:, keep], data.gender, data.income


def _digits_shifted(seed: int = 0):
    """Half of the digits seen through a second "scanner": shifted one pixel right (the
    prior separates the halves; the digit must stay)."""
    X, y = _digits()
    rng = np.random.default_rng(seed)
    half = rng.random(len(X)) < 0.5
    images = X[half].reshape(-1, 8, 8)
    shifted = np.zeros_like(images)
    shifted[:, :, 1:] = images[:, :, :-1]
    X = X.copy()
    X[half] = shifted.reshape(-1, 64)
    return X, half.astype(int), y


def _two_sources(seed: int = 0):
    """Ten clusters measured by two sources whose offsets and scales differ."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(10, 20)) * 4
    label = rng.integers(0, 10, 4000)
    source = rng.integers(0, 2, 4000)
    X = centres[label] + rng.normal(size=(4000, 20))
    X[source == 1] = X[source == 1] * 1.5 + 12.0
    return X, source, label


def _synthetic():
    from ctsne.datasets import make_synthetic

    d = make_synthetic(random_state=0)
    return d.X, d.f14, d.f56


PLAIN_SETS = {"digits": _digits, "pbmc68k_reduced": _pbmc, "Adult (sample)": _adult}
PRIOR_SETS = {"synthetic f1-4 | f5-6": _synthetic, "digits shifted": _digits_shifted,
              "two sources": _two_sources, "Adult gender | income": _adult_gender}


# ----------------------------------------------------------------------------- methods
def _umap_learn(X, seed, n_epochs=None):
    import umap

    return umap.UMAP(random_state=seed, n_epochs=n_epochs).fit_transform(X)


def _conditional(X, prior, seed, **kw):
    from ctsne import ConditionalUMAP

    return ConditionalUMAP(random_state=seed, **kw).fit_transform(X, prior)


def _harmony_umap(X, prior, seed):
    import harmonypy
    import pandas as pd
    from sklearn.decomposition import PCA

    pcs = PCA(min(50, X.shape[1]), random_state=seed).fit_transform(X)
    meta = pd.DataFrame({"batch": np.asarray(prior).astype(str)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corrected = harmonypy.run_harmony(pcs, meta, "batch", random_state=seed).Z_corr
    corrected = np.asarray(corrected)
    if corrected.shape[0] != len(X):
        corrected = corrected.T
    return _umap_learn(corrected, seed)


def _bbknn_umap(X, prior, seed):
    import anndata
    import bbknn
    import scanpy as sc
    from sklearn.decomposition import PCA

    pcs = PCA(min(50, X.shape[1]), random_state=seed).fit_transform(X)
    a = anndata.AnnData(np.zeros((len(X), 1), dtype=np.float32))
    a.obsm["X_pca"] = pcs
    a.obs["batch"] = np.asarray(prior).astype(str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bbknn.bbknn(a, batch_key="batch", use_rep="X_pca")
        sc.tl.umap(a, random_state=seed)
    return np.asarray(a.obsm["X_umap"])


# ----------------------------------------------------------------------------- measures
def _plain_measures(X, Y) -> dict:
    from sklearn.manifold import trustworthiness

    from ctsne.metrics import neighborhood_preservation

    rng = np.random.default_rng(0)
    rows = rng.choice(len(X), min(len(X), 3000), replace=False)  # O(n²) measure
    return {"trustworthiness": float(trustworthiness(X[rows], Y[rows], n_neighbors=15)),
            "knn15": float(neighborhood_preservation(X, Y, k=15))}


def _prior_measures(Y, prior, label) -> dict:
    from ctsne.metrics import knn_label_homogeneity

    prior = np.asarray(prior).astype(str)
    _, counts = np.unique(prior, return_counts=True)
    chance = float(np.sum((counts / counts.sum()) ** 2))
    return {"prior_homogeneity": knn_label_homogeneity(Y, prior, k=10),
            "prior_chance": chance,
            "label_homogeneity": knn_label_homogeneity(Y, np.asarray(label).astype(str), k=10)}


def quality(seed: int) -> list[dict]:
    rows = []
    for name, load in PLAIN_SETS.items():
        X, _ = load()
        for method, fit in (("umap-learn", lambda X: _umap_learn(X, seed)),
                            ("ConditionalUMAP", lambda X: _conditional(X, None, seed))):
            t0 = time.perf_counter()
            Y = fit(X)
            rows.append({"set": name, "method": method, "prior": None,
                         "seconds": time.perf_counter() - t0, **_plain_measures(X, Y)})
            print(rows[-1], flush=True)
    for name, load in PRIOR_SETS.items():
        X, prior, label = load()
        methods = {"UMAP (plain)": lambda X, prior: _umap_learn(X, seed),
                   "Harmony -> UMAP": lambda X, prior: _harmony_umap(X, prior, seed),
                   "BBKNN -> UMAP": lambda X, prior: _bbknn_umap(X, prior, seed),
                   "ConditionalUMAP": lambda X, prior: _conditional(X, prior, seed)}
        for method, fit in methods.items():
            t0 = time.perf_counter()
            try:
                Y = fit(X, prior)
            except Exception as exc:  # a peer that cannot run here is reported, not fatal
                rows.append({"set": name, "method": method, "error": repr(exc)})
                print(rows[-1], flush=True)
                continue
            rows.append({"set": name, "method": method, "seconds": time.perf_counter() - t0,
                         **_prior_measures(Y, prior, label)})
            print(rows[-1], flush=True)
    return rows


# ----------------------------------------------------------------------------- speed
_CHILD = """
import json, resource, sys, time
import numpy as np
n, method = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(0)
centres = rng.normal(size=(20, 10)) * 6
X = centres[rng.integers(0, 20, n)] + rng.normal(size=(n, 10))
prior = rng.integers(0, 5, n)
X += prior[:, None] * 0.5
t0 = time.perf_counter()
if method == "umap-learn":
    import umap
    Y = umap.UMAP(random_state=None, n_jobs=-1).fit_transform(X)
else:
    from ctsne import ConditionalUMAP
    Y = ConditionalUMAP().fit_transform(X, prior)
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak}))
"""


def speed(sizes: list[str]) -> list[dict]:
    rows = []
    for size in sizes:
        n = SIZES[size]
        for method in ("umap-learn", "ConditionalUMAP (5-class prior)"):
            # a warm-up run compiles the numba kernels of either package (cached on disk)
            for warm in (True, False):
                out = subprocess.run([sys.executable, "-c", _CHILD, str(2000 if warm else n),
                                      "umap-learn" if method == "umap-learn" else "ctsne"],
                                     capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append({"n": n, "method": method, **result})
            print(rows[-1], flush=True)
    return rows


def layout(size: str, repeats: int = 2) -> list[dict]:
    import numba
    from sklearn.datasets import make_blobs
    from umap.layouts import optimize_layout_euclidean

    from ctsne import ConditionalUMAP
    from ctsne.optimization.negatives import NegativeSampler
    from ctsne.optimization.sgd import epochs_per_sample, optimize_layout

    n = SIZES[size]
    X, _ = make_blobs(n, 10, centers=20, random_state=0)
    prior = np.random.default_rng(0).integers(0, 5, n)
    model = ConditionalUMAP(n_epochs=1, random_state=0).fit(X, prior)
    G = model.graph_.tocoo()
    eps = epochs_per_sample(G.data, 200)
    keep = eps > 0
    head, tail, eps = G.row[keep].astype(np.int32), G.col[keep].astype(np.int32), eps[keep]
    joint, W = model.prior_.group_weights()
    sampler = NegativeSampler.from_classes(joint, W)
    a, b = model.a_, model.b_
    start = np.random.default_rng(1).normal(size=(n, 2)) * 10
    numba.set_num_threads(1)
    rows = []
    for rep in range(repeats + 1):  # round 0 compiles both, untimed
        for method in ("umap-learn", "ctsne (5-class prior)"):
            t0 = time.process_time()
            if method == "umap-learn":
                Y = start.astype(np.float32)
                state = np.random.RandomState(rep).randint(-2**31 + 1, 2**31 - 1, 3)
                optimize_layout_euclidean(Y, Y, head, tail, 200, n, eps, a, b,
                                          state.astype(np.int64), 1.0, 1.0, 5,
                                          parallel=False, verbose=False)
            else:
                optimize_layout(start.copy(), head, tail, eps, 200, a, b, sampler, seed=rep)
            if rep:
                rows.append({"n": n, "edges": int(head.size), "method": method,
                             "cpu_seconds": time.process_time() - t0})
                print(rows[-1], flush=True)
    return rows


def _record(kind: str, rows: list[dict]) -> None:
    import ctsne

    meta = {"benchmark": "bench_umap", "kind": kind,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
            "load": os.getloadavg()[0], "ctsne": ctsne.__version__}
    with open(HERE / "results.jsonl", "a") as fh:
        for row in rows:
            fh.write(json.dumps({**meta, **row}) + "\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", nargs="+", choices=list(SIZES), help="time these sizes")
    parser.add_argument("--layout", choices=list(SIZES), help="the SGD kernels at this size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    if args.layout:
        kind, rows = "layout", layout(args.layout)
    elif args.speed:
        kind, rows = "speed", speed(args.speed)
    else:
        kind, rows = "quality", quality(args.seed)
    if not args.no_record:
        _record(kind, rows)
    print(f"peak memory of this process: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()

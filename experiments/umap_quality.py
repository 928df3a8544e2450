"""ConditionalUMAP against umap-learn on pc_like data: which ingredient costs quality.

    .venv/bin/python experiments/umap_quality.py --n 20000 --seeds 0,1,2
    .venv/bin/python experiments/umap_quality.py --n 20000 --seeds 0,1 --prior

Rows (each on the same data and seed; 10-NN preservation on a fixed subsample, its
neighbours exact, as benchmarks/bench_single_cell.py measures it):

- ``umap-learn``: ``umap.UMAP(random_state=seed)``, its graph, start and layout.
- ``ctsne``: ``ctsne.ConditionalUMAP(random_state=seed)``, all defaults.
- ``ctsne layout, umap graph``: ctsne's SGD (``optimize_layout``) and spectral start on
  umap-learn's graph.
- ``umap layout, ctsne graph``: umap-learn's ``optimize_layout_euclidean`` on ctsne's graph
  from ctsne's start.
- ``umap layout, umap graph, ctsne start``: umap-learn's layout on its own graph from
  ctsne's spectral start; further swaps by ``--variants`` (see ``no_prior``).

``--prior``: ConditionalTSNE and ConditionalUMAP with the batch (3 batches) as prior;
batch and label 10-NN homogeneity in the map (lower batch = more mixed; chance Σ share²).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))

from bench_single_cell import pc_like  # noqa: E402
from common import exact_neighbours, query_rows  # noqa: E402


def measures(Y, rows, in_x, label, batch) -> dict:
    in_y = exact_neighbours(np.ascontiguousarray(Y, dtype=np.float64), rows, 10, 2,
                            algorithm="kd_tree")
    out = {"knn10": float(np.mean((in_x[:, :, None] == in_y[:, None, :]).any(axis=2)))}
    for name, v in (("batch_h", batch), ("label_h", label)):
        out[name] = float(np.mean(v[in_y] == v[rows, None]))
    return out


def ctsne_layout(G, Y0, n_epochs, a, b, seed, **kw):
    from ctsne.optimization.negatives import NegativeSampler
    from ctsne.optimization.sgd import epochs_per_sample, optimize_layout

    G = G.tocoo()
    eps = epochs_per_sample(G.data, n_epochs)
    keep = eps > 0
    return optimize_layout(np.array(Y0, dtype=np.float64), G.row[keep], G.col[keep],
                           eps[keep], n_epochs, a, b, NegativeSampler.uniform(G.shape[0]),
                           seed=seed, **kw)


def umap_layout(G, Y0, n_epochs, a, b, seed, negative_sample_rate=5):
    from umap.layouts import optimize_layout_euclidean
    from umap.umap_ import make_epochs_per_sample

    G = G.tocoo().copy()
    G.data[G.data < G.data.max() / n_epochs] = 0.0
    G.eliminate_zeros()
    Y = np.ascontiguousarray(Y0, dtype=np.float32)
    rng = np.random.RandomState(seed)
    rng_state = rng.randint(np.iinfo(np.int32).min + 1, np.iinfo(np.int32).max - 1,
                            3).astype(np.int64)
    return optimize_layout_euclidean(Y, Y, G.row, G.col, n_epochs, G.shape[0],
                                     make_epochs_per_sample(G.data, n_epochs), a, b,
                                     rng_state, 1.0, 1.0, negative_sample_rate,
                                     parallel=False, move_other=True)


def boxed_spectral(G, seed):
    from ctsne.estimator.umap import _to_box
    from ctsne.optimization.spectral import spectral_init

    return _to_box(spectral_init(G, 2, seed))


def no_prior(n: int, seed: int, variants: list[str]) -> dict:
    import umap

    import ctsne

    X, label, batch = pc_like(n, np.random.default_rng(seed))
    rows = query_rows(n, 5000)
    in_x = exact_neighbours(X, rows, 10, 2)
    res = {}

    def record(name, Y, t0):
        res[name] = {**measures(Y, rows, in_x, label, batch), "s": time.perf_counter() - t0}
        print(f"  seed {seed} {name:45} {res[name]['knn10']:.4f}", flush=True)

    t0 = time.perf_counter()
    U = umap.UMAP(random_state=seed, n_jobs=1)
    Yu = U.fit_transform(X)
    record("umap-learn", Yu, t0)
    t0 = time.perf_counter()
    C = ctsne.ConditionalUMAP(random_state=seed, n_jobs=2)
    Yc = C.fit_transform(X)
    record("ctsne", Yc, t0)
    a, b, ep = C.a_, C.b_, C.n_epochs_
    Gu, Gc = U.graph_.tocsr(), C.graph_.tocsr()
    starts = {}

    def start(which):
        if which not in starts:
            starts[which] = boxed_spectral(Gu if which == "u" else Gc, seed)
        return starts[which]

    for v in variants:
        t0 = time.perf_counter()
        if v == "ctsne layout, umap graph":
            Y = ctsne_layout(Gu, start("u"), ep, a, b, seed)
        elif v == "umap layout, ctsne graph":
            Y = umap_layout(Gc, start("c"), ep, a, b, seed)
        elif v == "umap layout, umap graph, ctsne start":
            Y = umap_layout(Gu, start("u"), ep, a, b, seed)
        elif v == "ctsne, pca start":
            Y = ctsne.ConditionalUMAP(random_state=seed, n_jobs=2, init="pca").fit_transform(X)
        elif v == "ctsne, random start":
            Y = ctsne.ConditionalUMAP(random_state=seed, n_jobs=2,
                                      init="random").fit_transform(X)
        elif v == "ctsne, 500 epochs":
            Y = ctsne.ConditionalUMAP(random_state=seed, n_jobs=2,
                                      n_epochs=500).fit_transform(X)
        elif v == "umap-learn, 500 epochs":
            Y = umap.UMAP(random_state=seed, n_jobs=1, n_epochs=500).fit_transform(X)
        elif v == "ctsne layout, ctsne graph":
            Y = ctsne_layout(Gc, start("c"), ep, a, b, seed)
        elif v == "ctsne layout, move_other=False":
            Y = ctsne_layout(Gc, start("c"), ep, a, b, seed, move_other=False)
        else:
            raise ValueError(v)
        record(v, Y, t0)
    return res


VARIANTS = ["ctsne layout, umap graph", "umap layout, ctsne graph",
            "umap layout, umap graph, ctsne start"]


def with_prior(n: int, seed: int, skip: str = "") -> dict:
    import ctsne

    X, label, batch = pc_like(n, np.random.default_rng(seed))
    rows = query_rows(n, 5000)
    in_x = exact_neighbours(X, rows, 10, 2)
    res = {"input": measures(X, rows, in_x, label, batch)}  # X's own lists: knn10 = 1
    runs = {
        "ctsne t-SNE, prior": lambda: ctsne.ConditionalTSNE(random_state=seed, n_jobs=2),
        "ctsne UMAP, no prior": lambda: ctsne.ConditionalUMAP(random_state=seed, n_jobs=2),
        "ctsne UMAP, prior": lambda: ctsne.ConditionalUMAP(random_state=seed, n_jobs=2),
    }
    for name, make in runs.items():
        if skip and skip in name:
            continue
        t0 = time.perf_counter()
        m = make()
        Y = m.fit_transform(X, None if "no prior" in name else batch)
        res[name] = {**measures(Y, rows, in_x, label, batch), "s": time.perf_counter() - t0,
                     "affinities": getattr(m, "affinities_", None)}
        r = res[name]
        print(f"  seed {seed} {name:25} knn10 {r['knn10']:.4f} batch {r['batch_h']:.3f} "
              f"label {r['label_h']:.3f} ({r['affinities']})", flush=True)
    shares = np.unique(batch, return_counts=True)[1] / n
    res["chance"] = {"batch_h": float(np.sum(shares ** 2)),
                     "label_h": float(np.sum((np.unique(label, return_counts=True)[1] / n) ** 2))}
    return res


def table(results: dict[int, dict], keys: list[str]) -> str:
    seeds = sorted(results)
    names = list(results[seeds[0]])
    lines = ["| run | " + " | ".join(f"seed {s}" for s in seeds) + " | mean |",
             "|---|" + "---:|" * (len(seeds) + 1)]
    for key in keys:
        for name in names:
            if any(key not in results[s].get(name, {}) for s in seeds):
                continue
            vals = [results[s][name][key] for s in seeds]
            lines.append(f"| {name} ({key}) | " + " | ".join(f"{v:.4f}" for v in vals)
                         + f" | {np.mean(vals):.4f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--prior", action="store_true")
    ap.add_argument("--skip", default="", help="--prior: leave out the runs naming this")
    ap.add_argument("--variants", default="|".join(VARIANTS),
                    help="swaps to run, separated by '|' (see no_prior)")
    a = ap.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",")]
    if a.prior:
        res = {s: with_prior(a.n, s, a.skip) for s in seeds}
        print(table(res, ["batch_h", "label_h", "knn10"]))
    else:
        variants = [v for v in a.variants.split("|") if v]
        res = {s: no_prior(a.n, s, variants) for s in seeds}
        print(table(res, ["knn10"]))


if __name__ == "__main__":
    main()

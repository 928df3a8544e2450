"""Integration benchmark (issue 20): ctsne's defaults against batch-correction workflows.

Every map is scored as scIB does (:func:`ctsne.metrics.integration_score`: batch =
mean(batch 10-NN mixing, iLISI), bio = mean(within-batch 15-NN preservation, label 10-NN
homogeneity, cLISI), overall = 0.4·batch + 0.6·bio). Every t-SNE map comes from ctsne's
own optimiser (``ConditionalTSNE`` with no prior on the corrected input, same seed and
settings), so that only the correction differs. Methods:

* ctsne defaults (prior = batch, ``affinities="auto"``) and variants: the standard P
  (``affinities="standard"``), the balanced P with the former fixed own-class share 0.85;
* plain t-SNE and plain UMAP (umap-learn) of the uncorrected input;
* Harmony (harmonypy) → t-SNE and → UMAP; Scanorama → t-SNE; ComBat (scanpy.pp.combat)
  → t-SNE; BBKNN → UMAP (scanpy's UMAP layout of BBKNN's graph).

A peer that is not installed is skipped with the reason (``pip install ctsne[bench]``).

Data sets (all built offline from what installed packages ship; see :data:`HOW`):
``pbmc-mild`` and ``pbmc-strong`` (scanpy's bundled pbmc68k_reduced, 700 real PBMCs with
their sorted-population labels, split into three simulated donors), ``digits-scanner``
and ``digits-shifted`` (scikit-learn's bundled handwritten digits, half through a
simulated second scanner or shifted by a pixel; REPORT §10), ``adult-gender`` (ctsne's
bundled UCI Adult sample; batch = gender, label = income).

    python experiments/integration.py [--small] [--out DIR] [--seed S] [--sets A B ...]
"""

from __future__ import annotations

import sys
import time
import warnings

import _common as C
import numpy as np

from ctsne.metrics import integration_score

PCS = 30  # principal components of the single-cell input (a usual choice: 30–50)

HOW = {
    "pbmc-mild": "scanpy's pbmc68k_reduced (700 PBMCs, 765 genes, log-normalised; label = "
                 "bulk_labels, 10 sorted populations); cells split at random into 3 "
                 "simulated donors: per donor a log-fold N(0, 0.5²) on every gene, a "
                 "cell-type-specific log-fold N(0, 0.35²) on a random 20 % of genes, a "
                 "library-size factor exp(N(μ_d, 0.3²)) with μ_d in {0, 0.6, −0.6}; "
                 "Poisson counts at ~1,500 per cell, total-count normalisation, log1p, "
                 f"scaling (clipped at ±10), {PCS} PCs",
    "pbmc-strong": "as pbmc-mild with log-folds N(0, 1) per gene and N(0, 0.5²) "
                   "cell-type-specific, library-size means {0, 1, −1}",
    "digits-scanner": "scikit-learn's digits (1,797 8×8 images; label = digit), split "
                      "at random in two halves; the second through a simulated scanner: "
                      "per-pixel gain U(0.7, 1.3), offset N(0, 3²), noise N(0, 1)",
    "digits-shifted": "the same halves; the second shifted one pixel to the right",
    "adult-gender": "ctsne's bundled UCI Adult sample (1,000 people, 6 standardised "
                    "attributes); batch = gender (real, an attribute in the input), "
                    "label = income",
}


# --------------------------------------------------------------------------- data sets
def _pca(Z: np.ndarray, n: int, seed: int) -> np.ndarray:
    from sklearn.decomposition import PCA

    return PCA(n_components=min(n, *Z.shape) - 1 if min(Z.shape) <= n else n,
               random_state=seed).fit_transform(Z)


def _pbmc(rng, small, gene_sd, type_sd, lib_means):
    import scanpy as sc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad = sc.datasets.pbmc68k_reduced()
    logx = ad.raw.X.toarray() if hasattr(ad.raw.X, "toarray") else np.asarray(ad.raw.X)
    label = ad.obs["bulk_labels"].astype(str).to_numpy()
    if small:
        keep = rng.choice(len(label), 240, replace=False)
        logx, label = logx[keep], label[keep]
    n, g = logx.shape
    donors = len(lib_means)
    batch = rng.integers(0, donors, n)
    types, tcode = np.unique(label, return_inverse=True)
    fold = rng.normal(0.0, gene_sd, (donors, g))
    specific = rng.normal(0.0, type_sd, (donors, len(types), g)) * \
        (rng.random((donors, len(types), g)) < 0.2)
    lib = np.exp(np.asarray(lib_means)[batch] + rng.normal(0.0, 0.3, n))
    rate = np.expm1(logx) * np.exp(fold[batch] + specific[batch, tcode])
    rate *= (1500.0 * lib / rate.sum(axis=1))[:, None]
    counts = rng.poisson(rate).astype(np.float64)
    expr = np.log1p(counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0) * 1e4)
    scaled = (expr - expr.mean(0)) / np.maximum(expr.std(0), 1e-8)
    scaled = np.clip(scaled, -10, 10)
    return {"X": _pca(scaled, PCS, 0), "expr": expr, "batch": batch.astype(str),
            "label": label}


def pbmc_mild(rng, small):
    return _pbmc(rng, small, 0.5, 0.35, [0.0, 0.6, -0.6])


def pbmc_strong(rng, small):
    return _pbmc(rng, small, 1.0, 0.5, [0.0, 1.0, -1.0])


def _digits(rng, small, second):
    from sklearn.datasets import load_digits

    d = load_digits()
    rows = rng.permutation(len(d.target))[: 300 if small else None]
    X = d.data[rows].astype(np.float64)
    batch = np.zeros(len(rows), dtype=int)
    batch[len(rows) // 2:] = 1
    X[batch == 1] = second(X[batch == 1])
    return {"X": X, "expr": X, "batch": batch.astype(str), "label": d.target[rows]}


def digits_scanner(rng, small):
    def scanner(Z):
        return (Z * rng.uniform(0.7, 1.3, Z.shape[1]) + rng.normal(0.0, 3.0, Z.shape[1])
                + rng.normal(0.0, 1.0, Z.shape))
    return _digits(rng, small, scanner)


def digits_shifted(rng, small):
    def shift(Z):
        img = Z.reshape(-1, 8, 8)
        out = np.zeros_like(img)
        out[:, :, 1:] = img[:, :, :-1]
        return out.reshape(len(Z), 64)
    return _digits(rng, small, shift)


def adult_gender(rng, small):
    from ctsne.datasets import load_adult

    d = load_adult(standardize=True)
    rows = rng.choice(len(d.X), 300, replace=False) if small else np.arange(len(d.X))
    return {"X": d.X[rows], "expr": d.X[rows], "batch": d.gender[rows],
            "label": d.income[rows]}


DATASETS = {"pbmc-mild": pbmc_mild, "pbmc-strong": pbmc_strong,
            "digits-scanner": digits_scanner, "digits-shifted": digits_shifted,
            "adult-gender": adult_gender}


# --------------------------------------------------------------------------- methods
class Skipped(Exception):
    """A peer that is not installed."""


def _need(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise Skipped(f"{module} not installed (pip install ctsne[bench])") from err


def _tsne(X, prior, seed, small, **kw):
    Y, model, _ = C.embed(X, prior, seed=seed, small=small, **kw)
    return Y, model


def _umap(X, seed, small):
    umap = _need("umap")
    return umap.UMAP(random_state=seed, n_epochs=50 if small else None).fit_transform(X)


def _harmony(d, seed):
    hp = _need("harmonypy")
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ho = hp.run_harmony(d["X"], pd.DataFrame({"batch": d["batch"]}), ["batch"],
                            random_state=seed, verbose=False)
    Z = np.asarray(ho.Z_corr)
    return Z.T if Z.shape[0] != len(d["X"]) else Z


def _scanorama(d, seed):
    scanorama = _need("scanorama")
    expr = d["expr"]
    genes = [f"f{j}" for j in range(expr.shape[1])]
    parts = [np.flatnonzero(d["batch"] == b) for b in np.unique(d["batch"])]
    dim = min(100, expr.shape[1] - 1, min(len(p) for p in parts) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        integrated, _ = scanorama.integrate([expr[p] for p in parts], [genes] * len(parts),
                                            dimred=dim, verbose=0, seed=seed)
    Z = np.empty((len(expr), integrated[0].shape[1]))
    for p, z in zip(parts, integrated, strict=True):
        Z[p] = z
    return Z


def _combat(d, seed):
    sc = _need("scanpy")
    import anndata
    import pandas as pd

    ad = anndata.AnnData(d["expr"].astype(np.float64).copy(),
                         obs=pd.DataFrame({"batch": d["batch"]},
                                          index=[str(i) for i in range(len(d["X"]))]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.pp.combat(ad, key="batch")
    Z = np.asarray(ad.X)
    if d["expr"] is not d["X"]:  # single-cell: scale and PCA as the input was made
        Z = (Z - Z.mean(0)) / np.maximum(Z.std(0), 1e-8)
        Z = _pca(np.clip(Z, -10, 10), PCS, 0)
    return Z


def _bbknn_umap(d, seed, small):
    sc = _need("scanpy")
    bbknn = _need("bbknn")
    _need("umap")
    import anndata
    import pandas as pd

    ad = anndata.AnnData(np.zeros((len(d["X"]), 1)),
                         obs=pd.DataFrame({"batch": d["batch"]},
                                          index=[str(i) for i in range(len(d["X"]))]))
    ad.obsm["X_pca"] = d["X"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bbknn.bbknn(ad, batch_key="batch", use_rep="X_pca", n_pcs=d["X"].shape[1])
        sc.tl.umap(ad, random_state=seed, maxiter=50 if small else None)
    return ad.obsm["X_umap"]


def methods(variants: bool = True) -> dict:
    """name -> f(data, seed, small) returning the map (and the model for ctsne's)."""
    m = {
        "ctsne defaults": lambda d, s, sm: _tsne(d["X"], d["batch"], s, sm),
    }
    if variants:
        m["ctsne standard P"] = lambda d, s, sm: _tsne(d["X"], d["batch"], s, sm,
                                                       affinities="standard")
        m["ctsne balanced 0.85"] = lambda d, s, sm: _tsne(d["X"], d["batch"], s, sm,
                                                          affinities="balanced",
                                                          within_weight=0.85)
    m.update({
        "t-SNE": lambda d, s, sm: _tsne(d["X"], None, s, sm),
        "UMAP": lambda d, s, sm: _umap(d["X"], s, sm),
        "Harmony → t-SNE": lambda d, s, sm: _tsne(_harmony(d, s), None, s, sm),
        "Harmony → UMAP": lambda d, s, sm: _umap(_harmony(d, s), s, sm),
        "Scanorama → t-SNE": lambda d, s, sm: _tsne(_scanorama(d, s), None, s, sm),
        "ComBat → t-SNE": lambda d, s, sm: _tsne(_combat(d, s), None, s, sm),
        "BBKNN → UMAP": lambda d, s, sm: _bbknn_umap(d, s, sm),
    })
    return m


# --------------------------------------------------------------------------- run
FIELDS = ("batch_homogeneity", "batch_chance", "batch_mixing", "ilisi", "batch_asw",
          "preservation", "label_homogeneity", "clisi", "label_asw", "agreement", "batch",
          "bio", "overall")


def run_set(name: str, seed: int, small: bool, variants: bool = True,
            only: list[str] | None = None) -> dict:
    """All methods (or ``only`` these) on one data set: scores, maps, seconds, and what
    ctsne's P chose."""
    data = DATASETS[name](np.random.default_rng(seed), small)
    out = {"n": len(data["X"]), "dims": data["X"].shape[1], "how": HOW[name],
           "scores": {}, "skipped": {}, "seconds": {}, "maps": {}}
    for method, fit in methods(variants).items():
        if only is not None and method not in only:
            continue
        t0 = time.perf_counter()
        try:
            res = fit(data, seed, small)
        except Skipped as why:
            out["skipped"][method] = str(why)
            continue
        Y, model = res if isinstance(res, tuple) else (res, None)
        out["seconds"][method] = round(time.perf_counter() - t0, 2)
        sc = integration_score(data["X"], Y, data["batch"], data["label"],
                               perplexity=10.0 if small else 30.0)
        out["scores"][method] = {f: float(getattr(sc, f)) for f in FIELDS}
        out["maps"][method] = Y
        if method == "ctsne defaults":  # what the rule chose, and why
            choice = getattr(model.prior_mixing_, "cross_share", None)
            out["affinities"] = (model.affinities_ if choice is None
                                 else f"{model.affinities_} P; {choice.summary()}")
    out["data"] = data
    return out


def _figures(results: dict, out) -> None:
    sets = list(results)
    shown = ["t-SNE", "ctsne defaults", "Harmony → t-SNE", "BBKNN → UMAP"]
    fig, axes = C.figure(len(sets) * len(shown), size=2.6, rows=len(sets))
    for r, name in enumerate(sets):
        res = results[name]
        for c, method in enumerate(shown):
            ax = axes[r * len(shown) + c]
            if method not in res["maps"]:
                ax.set_axis_off()
                continue
            C.scatter(ax, res["maps"][method], res["data"]["label"], res["data"]["batch"],
                      title=f"{name}: {method}\noverall "
                      f"{res['scores'][method]['overall']:.3f}", size=3)
    C.save_figure(fig, out / "integration_embeddings.png")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(sets), figsize=(3.6 * len(sets), 4.2), squeeze=False)
    for ax, name in zip(axes[0], sets, strict=True):
        sc = results[name]["scores"]
        for method, s in sc.items():
            own = method.startswith("ctsne")
            ax.scatter(s["batch"], s["bio"], marker="*" if own else "o",
                       s=120 if method == "ctsne defaults" else 40)
            ax.annotate(method, (s["batch"], s["bio"]), fontsize=6)
        ax.set_xlabel("batch axis (1 mixed)")
        ax.set_ylabel("bio axis (1 kept)")
        ax.set_title(name, fontsize=9)
    C.save_figure(fig, out / "integration_axes.png")


def _table(results: dict) -> str:
    lines = ["| set | method | batch homog. (chance) | iLISI | batch ASW | within-batch pres. "
             "| label homog. | cLISI | label ASW | agreement | batch | bio | overall |",
             "|" + "---|" * 13]
    for name, res in results.items():
        best = max(res["scores"].items(), key=lambda kv: kv[1]["overall"])[0]
        for method, s in res["scores"].items():
            overall = f"**{s['overall']:.3f}**" if method == best else f"{s['overall']:.3f}"
            lines.append(
                f"| {name} | {method} | {s['batch_homogeneity']:.3f} "
                f"({s['batch_chance']:.3f}) | {s['ilisi']:.2f} | {s['batch_asw']:.3f} | "
                f"{s['preservation']:.3f} | {s['label_homogeneity']:.3f} | "
                f"{s['clisi']:.3f} | {s['label_asw']:.3f} | {s['agreement']:.3f} | "
                f"{s['batch']:.3f} | {s['bio']:.3f} | {overall} |")
        for method, why in res["skipped"].items():
            lines.append(f"| {name} | {method} | skipped: {why} |" + " |" * 11)
    return "\n".join(lines)


def _save_set(name: str, res: dict, out, stem: str) -> None:
    """One set's numbers (JSON) and maps (npz), so that runs of different sets, e.g. in
    parallel processes, add up to one report."""
    C.save_json({k: v for k, v in res.items() if k not in ("maps", "data")},
                out / f"{stem}_{name}.json")
    np.savez_compressed(out / f"{stem}_{name}.npz", batch=res["data"]["batch"],
                        label=np.asarray(res["data"]["label"]).astype(str),
                        **{f"map {m}": Y for m, Y in res["maps"].items()})


def _load_set(name: str, out, stem: str) -> dict | None:
    path = out / f"{stem}_{name}.json"
    if not path.exists():
        return None
    import json

    res = json.loads(path.read_text())
    with np.load(out / f"{stem}_{name}.npz", allow_pickle=False) as z:
        res["data"] = {"batch": z["batch"], "label": z["label"]}
        res["maps"] = {k.removeprefix("map "): z[k] for k in z.files if k.startswith("map ")}
    return res


def main(argv=None) -> dict:
    def extra(p):
        p.add_argument("--sets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
        p.add_argument("--no-variants", action="store_true",
                       help="only ctsne's defaults among ctsne's maps")
        p.add_argument("--methods", nargs="+", choices=list(methods()), default=None,
                       help="only these methods (default: all)")

    args = C.parse_args(__doc__.splitlines()[0], argv, extra)
    stem = "integration_small" if args.small else "integration"
    for name in args.sets:
        _save_set(name, run_set(name, args.seed, args.small, not args.no_variants,
                                args.methods), args.out, stem)
    # the report covers every set run so far into this folder (with this --small)
    results = {name: res for name in DATASETS
               if (res := _load_set(name, args.out, stem)) is not None}
    _figures(results, args.out)
    summary = {name: {k: v for k, v in res.items() if k not in ("maps", "data")}
               for name, res in results.items()}
    C.save_json({"seed": args.seed, "small": args.small, "sets": summary},
                args.out / f"{stem}.json")
    text = ["# Integration benchmark (experiments/integration.py)", "",
            f"seed {args.seed}{', --small' if args.small else ''}; scores of "
            "ctsne.metrics.integration_score (1 best, except the homogeneities).", "",
            _table(results), "", "## Data sets", ""]
    text += [f"* **{name}** ({res['n']} points, {res['dims']} dims): {res['how']}"
             for name, res in results.items()]
    text += ["", "## What ctsne's default chose", ""]
    for name, res in results.items():
        if "affinities" in res:
            text.append(f"* {name}: {res['affinities']}")
    text += ["", "## Seconds per map (this machine, other work running)", ""]
    for name, res in results.items():
        text.append(f"* {name}: " + ", ".join(f"{m} {s:.0f}"
                                             for m, s in res["seconds"].items()))
    (args.out / f"{stem}.md").write_text("\n".join(text) + "\n")
    return {"sets": summary}


if __name__ == "__main__":
    res = main(sys.argv[1:])
    for name, per in res["sets"].items():
        for method, s in per["scores"].items():
            print(f"{name:15s} {method:22s} batch {s['batch']:.3f} bio {s['bio']:.3f} "
                  f"overall {s['overall']:.3f}")

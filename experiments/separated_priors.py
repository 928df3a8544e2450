"""Priors that separate the input space: t-SNE, ct-SNE and its balanced / revised variants.

Three data sets whose prior (a batch) separates the points in the input space while a
complementary label (cluster, digit) is shared by all batches:

* ``synthetic``: 5 Gaussian clusters (10-D, unit variance, centres N(0, 5²)) in 3
  batches of 100 points per cluster, each batch offset along its own random direction
  (norm 4: enough to separate the batches in the kNN lists, far less than the distance
  between clusters).
* ``digits-scanner``: scikit-learn's bundled handwritten digits (1,797 real 8×8 images),
  split at random into two halves; the second half passes through a simulated second
  scanner (per-pixel gain U(0.7, 1.3), per-pixel offset N(0, 3²), pixel noise N(0, 1)).
* ``digits-shifted``: the same split; the second half is shifted one pixel to the right
  (a registration difference; the vacated column is 0).

Each is embedded by t-SNE, ct-SNE (standard P, β' = 0.01) and, where this version of
``ConditionalTSNE`` has the ``affinities`` parameter, balanced ct-SNE, revised ct-SNE
(P-side conditioning, β' = 1), their combination (revised P, β' = 0.01) and the default
(``affinities="auto"``). Measured: the prior's 10-NN homogeneity and iLISI, the
complementary label's 10-NN homogeneity and cLISI, cross-class agreement, and the share
of P's mass across batches against what random labels would give.

    python experiments/separated_priors.py [--small] [--out DIR] [--seed S]
"""

from __future__ import annotations

import inspect
import sys

import _common as C
import numpy as np

from ctsne.metrics import cross_class_agreement, knn_label_homogeneity, lisi

K = 10             # neighbours for homogeneity and cross-class agreement
LISI_PERPLEXITY = 30.0


# --------------------------------------------------------------------------- data sets
def synthetic(rng: np.random.Generator, small: bool):
    n_clusters, n_batches, dim = 5, 3, 10
    per = 12 if small else 100
    centres = rng.normal(0.0, 5.0, (n_clusters, dim))
    shifts = rng.normal(size=(n_batches, dim))
    shifts *= 4.0 / np.linalg.norm(shifts, axis=1, keepdims=True)
    batch = np.repeat(np.arange(n_batches), n_clusters * per)
    cluster = np.tile(np.repeat(np.arange(n_clusters), per), n_batches)
    X = centres[cluster] + shifts[batch] + rng.normal(size=(len(batch), dim))
    return X, batch, cluster


def _digits_halves(rng: np.random.Generator, small: bool):
    from sklearn.datasets import load_digits

    digits = load_digits()
    rows = rng.permutation(len(digits.target))
    if small:
        rows = rows[:200]
    X = digits.data[rows].astype(np.float64)
    batch = np.zeros(len(rows), dtype=int)
    batch[len(rows) // 2:] = 1
    return X, batch, digits.target[rows]


def digits_scanner(rng: np.random.Generator, small: bool):
    X, batch, digit = _digits_halves(rng, small)
    second = batch == 1
    gain = rng.uniform(0.7, 1.3, X.shape[1])
    offset = rng.normal(0.0, 3.0, X.shape[1])
    X[second] = X[second] * gain + offset + rng.normal(0.0, 1.0, (second.sum(), X.shape[1]))
    return X, batch, digit


def digits_shifted(rng: np.random.Generator, small: bool):
    X, batch, digit = _digits_halves(rng, small)
    second = batch == 1
    images = X[second].reshape(-1, 8, 8)
    shifted = np.zeros_like(images)
    shifted[:, :, 1:] = images[:, :, :-1]
    X[second] = shifted.reshape(len(shifted), 64)
    return X, batch, digit


DATASETS = {"synthetic": synthetic, "digits-scanner": digits_scanner,
            "digits-shifted": digits_shifted}
COMPLEMENT = {"synthetic": "cluster", "digits-scanner": "digit", "digits-shifted": "digit"}


# ---------------------------------------------------------------------------- variants
def variants() -> dict[str, dict | None]:
    """Estimator settings per method (None: t-SNE, no prior); only those this version
    of ConditionalTSNE supports."""
    from ctsne import ConditionalTSNE

    has_affinities = "affinities" in inspect.signature(ConditionalTSNE).parameters
    out: dict[str, dict | None] = {"t-SNE": None}
    if not has_affinities:
        out["ct-SNE"] = {"beta": 0.01}
        return out
    out.update({
        "ct-SNE": {"affinities": "standard", "beta": 0.01},
        "balanced ct-SNE": {"affinities": "balanced", "beta": 0.01},
        "revised ct-SNE": {"affinities": "revised", "beta": 1.0},
        "revised + ct-SNE": {"affinities": "revised", "beta": 0.01},
        "default (auto)": {"affinities": "auto", "beta": 0.01},
    })
    return out


# ----------------------------------------------------------------------------- measures
def _shares(labels) -> np.ndarray:
    _, counts = np.unique(labels, return_counts=True)
    return counts / counts.sum()


def cross_mass(P, prior) -> dict:
    """Share of P's mass between points of different prior classes, overall and per
    class, beside its expectation were the labels drawn at random."""
    P = P.tocoo()
    _, codes = np.unique(prior, return_inverse=True)
    codes = codes.ravel()
    n, sizes = len(codes), np.bincount(codes)
    total = P.data.sum()
    across = codes[P.row] != codes[P.col]
    row_mass = np.bincount(codes[P.row], weights=P.data, minlength=len(sizes))
    row_across = np.bincount(codes[P.row], weights=P.data * across, minlength=len(sizes))
    return {
        "overall": float(P.data[across].sum() / total),
        # a random pair of distinct points lies in two classes with this probability
        "random": float(1.0 - np.sum(sizes * (sizes - 1)) / (n * (n - 1))),
        "per_class": (row_across / row_mass).tolist(),
        "per_class_random": ((n - sizes) / (n - 1)).tolist(),
    }


def measures(Y, prior, complement) -> dict:
    p, q = _shares(prior), _shares(complement)
    n_p, n_q = len(p), len(q)
    ilisi = float(np.median(lisi(Y, prior, LISI_PERPLEXITY)))
    clisi = float(np.median(lisi(Y, complement, LISI_PERPLEXITY)))
    agree = cross_class_agreement(Y, prior, complement, K)
    return {
        "prior_homogeneity": knn_label_homogeneity(Y, prior, K),
        "prior_homogeneity_chance": float(np.sum(p ** 2)),
        "ilisi": ilisi,
        "ilisi_random": float(1.0 / np.sum(p ** 2)),
        "ilisi_norm": (ilisi - 1.0) / (n_p - 1.0),
        "complement_homogeneity": knn_label_homogeneity(Y, complement, K),
        "complement_homogeneity_chance": float(np.sum(q ** 2)),
        "clisi": clisi,
        "clisi_norm": (n_q - clisi) / (n_q - 1.0),
        # None (JSON null) where no point has a neighbour in another class
        "cross_agreement": None if np.isnan(agree.agreement) else agree.agreement,
        "cross_agreement_chance": None if np.isnan(agree.chance) else agree.chance,
        "cross_coverage": agree.coverage,
    }


# ------------------------------------------------------------------------------ outputs
def _f(v, digits: int = 3) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


def markdown(results: dict, missing: list[str]) -> str:
    lines = ["# Separated priors: measured numbers",
             "",
             "Written by `experiments/separated_priors.py` "
             f"(seed {results['seed']}{', --small' if results['small'] else ''}). "
             f"Homogeneity and cross-class agreement use k = {K}; LISI perplexity "
             f"{LISI_PERPLEXITY:g} (median over points). In brackets: the value for random "
             "labels. *P across* is the share of the run's P mass between batches. "
             "*input* measures the kNN graph of the input space itself. *s*: wall seconds "
             "of the fit on a shared machine (indicative only).",
             ""]
    if missing:
        lines += [f"Not run (this ConditionalTSNE has no `affinities` parameter): "
                  f"{', '.join(missing)}.", ""]
    for name, ds in results["datasets"].items():
        cm = ds["p_cross_mass"]
        lines += [f"## {name} (n = {ds['n']}, {ds['n_batches']} batches, complement = "
                  f"{ds['complement']})",
                  "",
                  f"Standard P across batches: {cm['overall']:.2%} of its mass (random "
                  f"labels: {cm['random']:.2%}); per batch: "
                  + ", ".join(f"{a:.2%}" for a in cm["per_class"]) + ".",
                  "",
                  "| method | P across | prior homogeneity ↓ | iLISI ↑ | complement "
                  "homogeneity ↑ | cLISI ↓ | cross-class agreement ↑ | coverage | s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for method, r in ds["runs"].items():
            m = r["measures"]
            lines.append(
                f"| {method} | {_f(r.get('p_cross'), 3)} "
                f"| {_f(m['prior_homogeneity'])} ({_f(m['prior_homogeneity_chance'])}) "
                f"| {_f(m['ilisi'])} ({_f(m['ilisi_random'])}) "
                f"| {_f(m['complement_homogeneity'])} "
                f"({_f(m['complement_homogeneity_chance'])}) "
                f"| {_f(m['clisi'])} "
                f"| {_f(m['cross_agreement'])} ({_f(m['cross_agreement_chance'])}) "
                f"| {_f(m['cross_coverage'])} | {_f(r.get('seconds'), 1)} |")
        lines.append("")
    return "\n".join(lines)


BARS = [("prior_homogeneity", "prior homog. ↓", "prior_homogeneity_chance"),
        ("ilisi_norm", "iLISI (norm.) ↑", None),
        ("complement_homogeneity", "compl. homog. ↑", "complement_homogeneity_chance"),
        ("clisi_norm", "cLISI (norm., 1 pure) ↑", None),
        ("cross_agreement", "cross-class agr. ↑", "cross_agreement_chance")]


def plot_metrics(results: dict, path) -> None:
    fig, axes = C.figure(len(results["datasets"]), size=5.0)
    for ax, (name, ds) in zip(axes, results["datasets"].items(), strict=True):
        methods = list(ds["runs"])
        width = 0.8 / len(methods)
        x = np.arange(len(BARS))
        for j, method in enumerate(methods):
            m = ds["runs"][method]["measures"]
            ax.bar(x + (j - (len(methods) - 1) / 2) * width,
                   [m[key] or 0.0 for key, _, _ in BARS], width, label=method)
        for i, (_, _, chance) in enumerate(BARS):
            if chance:  # the random level depends on the labels only
                level = ds["runs"]["input"]["measures"][chance]
                ax.hlines(level, i - 0.45, i + 0.45, colors="k", linestyles="dashed", lw=1)
        ax.set_xticks(x, [label for _, label, _ in BARS], rotation=30, ha="right",
                      fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(name, fontsize=10)
        ax.legend(fontsize=7)
    fig.suptitle("Dashed: random labels. Normalised LISI: iLISI (m−1)/(L−1), "
                 "cLISI (L−m)/(L−1)", fontsize=9)
    C.save_figure(fig, path)


# --------------------------------------------------------------------------------- main
def main(argv=None) -> dict:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    methods = variants()
    missing = [] if len(methods) > 2 else ["balanced ct-SNE", "revised ct-SNE",
                                           "revised + ct-SNE", "default (auto)"]
    results = {"seed": args.seed, "small": args.small, "k": K,
               "lisi_perplexity": LISI_PERPLEXITY, "methods": methods, "missing": missing,
               "datasets": {}}
    fig, axes = C.figure(len(DATASETS) * len(methods), size=3.2, rows=len(DATASETS))
    axes = iter(axes)
    for name, make in DATASETS.items():
        X, batch, comp = make(np.random.default_rng(args.seed), args.small)
        ds = {"n": len(X), "n_batches": int(batch.max()) + 1, "complement": COMPLEMENT[name],
              "runs": {"input": {"measures": measures(X, batch, comp)}}}
        for method, params in methods.items():
            prior = None if params is None else batch
            # one thread for the tiny runs: parallel kernels only contend there
            Y, model, secs = C.embed(X, prior, seed=args.seed, small=args.small,
                                     **(params or {}), **({"n_jobs": 1} if args.small else {}))
            run = {"seconds": secs, "kl": model.kl_divergence_,
                   "p_cross": cross_mass(model.P_, batch)["overall"],
                   "measures": measures(Y, batch, comp)}
            if getattr(model, "prior_mixing_", None) is not None:
                run["prior_mixing"] = model.prior_mixing_.to_dict()
            if params is None:  # t-SNE's P is the standard P
                ds["p_cross_mass"] = cross_mass(model.P_, batch)
            ds["runs"][method] = run
            C.scatter(next(axes), Y, comp, batch, title=f"{name}: {method}", size=5)
        results["datasets"][name] = ds
    fig.suptitle("Colour = complementary label (cluster / digit), marker = batch",
                 fontsize=10)
    C.save_figure(fig, args.out / "separated_priors_embeddings.png")
    plot_metrics(results, args.out / "separated_priors_metrics.png")
    C.save_json(results, args.out / "separated_priors.json")
    (args.out / "separated_priors.md").write_text(markdown(results, missing) + "\n")
    return results


if __name__ == "__main__":
    res = main(sys.argv[1:])
    print(markdown(res, res["missing"]))

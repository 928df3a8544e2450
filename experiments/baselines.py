"""Paper App. C (Figs. 8-9): AAE + t-SNE and CCA + t-SNE against ct-SNE.

1. Synthetic data, priors f₁₋₄, f₅₋₆, f₁₋₆: an adversarially censored auto-encoder
   (Edwards & Storkey 2015) then t-SNE, for a few adversary weights, against ct-SNE.
   Needs torch; skipped (and said so in the JSON) without it.
2. The CCA example (5-d, 10 clusters each split 20/80): CCA null-space and
   least-correlated variants + t-SNE against ct-SNE, prior = the 10 clusters.
3. UCI Adult: CCA (null space) + t-SNE against ct-SNE for the priors gender and
   ethnicity & gender (the paper says CCA removes gender easily).

Removal is measured by the Laplacian score of the prior (high = removed); what is
revealed by the score of the complementary labels (low = visible).

    python experiments/baselines.py [--small] [--out DIR] [--seed S]
"""

from __future__ import annotations

import importlib.util
import sys

import _common as C
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

from ctsne.baselines import CCAProjection
from ctsne.datasets import load_adult, make_cca_example, make_synthetic
from ctsne.metrics import laplacian_score

K = 30


def _scores(Y, labels: dict, k: int) -> dict:
    return {name: laplacian_score(Y, f, k) for name, f in labels.items()}


def _split_score(Y, data, k: int) -> float:
    """Laplacian score of the 20/80 split computed inside each large cluster, averaged:
    low when every cluster shows its two parts, whatever the clusters' layout."""
    return float(np.mean([
        laplacian_score(Y[data.cluster == c], data.subcluster[data.cluster == c],
                        min(k, int(np.sum(data.cluster == c)) - 1))
        for c in np.unique(data.cluster)
    ]))


def _aae_part(args, k: int) -> dict:
    if importlib.util.find_spec("torch") is None:
        return {"skipped": "torch is not installed (pip install 'ctsne[torch]')"}
    from ctsne.baselines import AdversarialCensor

    n = 200 if args.small else 1000
    data = make_synthetic(n=n, random_state=args.seed)
    labels = {"f1-4": data.f14, "f5-6": data.f56, "f1-6": data.f16}
    priors = {"f1-4": data.f14} if args.small else labels
    weights = [1.0] if args.small else [0.3, 1.0, 3.0]
    aae = dict(n_epochs=10 if args.small else 200, latent_dim=8, random_state=args.seed)
    out = {"n": n, "k": k, "aae_params": aae, "runs": []}
    fig, axes = C.figure(6, rows=2)
    for col, (prior_name, prior) in enumerate(priors.items()):
        Y, _, _ = C.embed(data.X, prior, seed=args.seed, small=args.small, method="exact")
        out["runs"].append({"method": "ct-SNE", "prior": prior_name,
                            "scores": _scores(Y, labels, k)})
        C.scatter(axes[3 + col], Y, data.f14, data.f56, title=f"ct-SNE, prior {prior_name}")
        for w in weights:
            censor = AdversarialCensor(adversary_weight=w, **aae)
            Z = censor.fit_transform(data.X, prior)
            # How much of the prior a fresh linear classifier still reads from the code.
            acc = cross_val_score(LogisticRegression(max_iter=2000), Z, prior, cv=3).mean()
            Yz, _, _ = C.embed(Z, None, seed=args.seed, small=args.small)
            out["runs"].append({"method": "AAE + t-SNE", "prior": prior_name,
                                "adversary_weight": w, "code_accuracy": float(acc),
                                "chance": float(np.max(np.bincount(prior)) / n),
                                "reconstruction": censor.history_[-1]["reconstruction"],
                                "scores": _scores(Yz, labels, k)})
            if w == 1.0:
                C.scatter(axes[col], Yz, data.f14, data.f56,
                          title=f"AAE + t-SNE, prior {prior_name} (β = {w})")
    fig.suptitle("Synthetic: colour = f1-4, marker = f5-6", fontsize=10)
    C.save_figure(fig, args.out / "baselines_aae.png")
    return out


def _cca_part(args, k: int) -> dict:
    n = 200 if args.small else 1000
    data = make_cca_example(n=n, random_state=args.seed)
    joint = data.cluster * 2 + data.subcluster
    labels = {"cluster": data.cluster, "subcluster": data.subcluster, "joint": joint}
    out = {"n": n, "k": k, "runs": []}
    fig, axes = C.figure(3)
    for ax, variant in zip(axes, ["null", "least"], strict=False):
        proj = CCAProjection(variant)
        Z = proj.fit_transform(data.X, data.cluster)
        Y, _, _ = C.embed(Z, None, seed=args.seed, small=args.small)
        out["runs"].append({"method": f"CCA ({variant}) + t-SNE",
                            "removed_directions": proj.n_removed_ if variant == "null" else None,
                            "canonical_correlations": proj.correlations_,
                            "scores": _scores(Y, labels, k),
                            "split_within_clusters": _split_score(Y, data, 10)})
        C.scatter(ax, Y, data.subcluster, data.cluster, title=f"CCA ({variant}) + t-SNE")
    Y, _, _ = C.embed(data.X, data.cluster, seed=args.seed, small=args.small, method="exact")
    out["runs"].append({"method": "ct-SNE", "scores": _scores(Y, labels, k),
                        "split_within_clusters": _split_score(Y, data, 10)})
    C.scatter(axes[2], Y, data.subcluster, data.cluster, title="ct-SNE, prior = 10 clusters")
    fig.suptitle("CCA example: marker = cluster, colour = 20 % / 80 % part", fontsize=10)
    C.save_figure(fig, args.out / "baselines_cca.png")
    return out


def _adult_part(args, k: int) -> dict:
    data = load_adult(standardize=True)
    X = data.X
    idx = np.arange(len(X))
    if args.small:
        idx = np.random.default_rng(args.seed).choice(len(X), 200, replace=False)
    X = X[idx]
    labels = {"gender": data.gender[idx], "ethnicity": data.ethnicity[idx],
              "income": data.income[idx], "ethnicity & gender": data.ethnicity_gender[idx]}
    out = {"n": len(X), "k": k, "runs": []}
    for prior_name in ["gender"] if args.small else ["gender", "ethnicity & gender"]:
        prior = labels[prior_name]
        Z = CCAProjection("null").fit_transform(X, prior)
        Y, _, _ = C.embed(Z, None, seed=args.seed, small=args.small)
        out["runs"].append({"method": "CCA (null) + t-SNE", "prior": prior_name,
                            "scores": _scores(Y, labels, k)})
        Y, _, _ = C.embed(X, prior, seed=args.seed, small=args.small, method="exact")
        out["runs"].append({"method": "ct-SNE", "prior": prior_name,
                            "scores": _scores(Y, labels, k)})
    return out


def main(argv=None) -> dict:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    k = 10 if args.small else K
    results = {"seed": args.seed, "aae": _aae_part(args, k), "cca": _cca_part(args, k),
               "adult_cca": _adult_part(args, k)}
    C.save_json(results, args.out / "baselines.json")
    return results


if __name__ == "__main__":
    res = main(sys.argv[1:])
    for part in ("aae", "cca", "adult_cca"):
        for r in res[part].get("runs", []):
            extra = {key: r[key] for key in ("prior", "adversary_weight", "code_accuracy")
                     if key in r}
            sc = " ".join(f"{lab}={v:.3f}" for lab, v in r["scores"].items())
            if "split_within_clusters" in r:
                sc += f" split-within-clusters={r['split_within_clusters']:.3f}"
            print(f"[{part}] {r['method']:22s} {extra} {sc}")

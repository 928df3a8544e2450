"""Paper App. C (Figs. 4-5): UCI Adult, t-SNE and ct-SNE with gender, ethnicity, both.

Embeddings of the bundled 1,000-row sample (six attributes, standardised), drawn as in
the paper (colour = gender, marker = ethnicity, hollow = income > 50K), and Laplacian
scores for k = 10…100 of gender, ethnicity, their combination and income.

    python experiments/adult.py [--small] [--out DIR] [--seed S]
"""

from __future__ import annotations

import sys

import _common as C
import numpy as np

from ctsne.datasets import load_adult
from ctsne.metrics import knn_label_homogeneity, laplacian_score


def main(argv=None) -> dict:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    data = load_adult(standardize=True)
    X = data.X
    idx = np.arange(len(X))
    if args.small:
        idx = np.random.default_rng(args.seed).choice(len(X), 200, replace=False)
    X = X[idx]
    gender, ethnicity, income = data.gender[idx], data.ethnicity[idx], data.income[idx]
    both = data.ethnicity_gender[idx]
    ks = C.K_RANGE_SMALL if args.small else C.K_RANGE
    labels = {"gender": gender, "ethnicity": ethnicity, "ethnicity & gender": both,
              "income": income}
    runs = {"t-SNE": None, "ct-SNE gender": gender, "ct-SNE ethnicity": ethnicity,
            "ct-SNE ethnicity & gender": both}

    scores = {lab: {} for lab in labels}
    homogeneity = {}
    fig, axes = C.figure(4)
    for ax, (name, prior) in zip(axes, runs.items(), strict=True):
        Y, _, _ = C.embed(X, prior, seed=args.seed, small=args.small, method="exact")
        for lab, f in labels.items():
            scores[lab][name] = laplacian_score(Y, f, ks)
        homogeneity[name] = {lab: knn_label_homogeneity(Y, f, 10) for lab, f in labels.items()}
        # Codes chosen for the paper's encoding: male blue, female orange; White circle,
        # other triangle; income > 50K hollow.
        C.scatter(ax, Y, gender == "Female", ethnicity != "White", title=name,
                  filled=income == "<=50K")
    fig.suptitle("UCI Adult: colour = gender (blue male, orange female), marker = ethnicity "
                 "(o White, ^ other), hollow = income > 50K", fontsize=10)
    C.save_figure(fig, args.out / "adult_embeddings.png")

    fig, axes = C.figure(4)
    for ax, lab in zip(axes, labels, strict=True):
        C.plot_curves(ax, ks, scores[lab], f"labels: {lab}")
    C.save_figure(fig, args.out / "adult_laplacian.png")

    results = {"n": len(X), "seed": args.seed, "k": ks, "scores": scores,
               "homogeneity_k10": homogeneity}
    C.save_json(results, args.out / "adult.json")
    return results


if __name__ == "__main__":
    res = main(sys.argv[1:])
    for lab, per in res["scores"].items():
        for name, s in per.items():
            print(f"{lab:19s} {name:26s} " + " ".join(f"{v:.3f}" for v in s))

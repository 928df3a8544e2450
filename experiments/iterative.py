"""The paper's iterative analysis, scripted: embed, select, rank, factor out, repeat.

Each round embeds the data with ct-SNE given everything factored out so far (round 0 is
plain t-SNE), picks the clusters an analyst would select by eye (k-means on the
embedding, k by silhouette), ranks the features of every cluster against the rest
(paper §3.1), and takes the feature that tops most clusters. If that feature is
categorical its values become the next prior (as in the paper: "all points with the
same value were treated as being in a cluster"); otherwise the visual clusters do.
Priors accumulate as joint classes. In the output, ``clusters[x4]`` names a prior made of
visual clusters whose top-ranked feature was x4.

Run on the synthetic data (expected: f₁₋₄ found first, then f₅₋₆, then only noise) and
on UCI Adult.

    python experiments/iterative.py [--small] [--out DIR] [--seed S] [--rounds R]
"""

from __future__ import annotations

import sys
from collections import Counter

import _common as C
import numpy as np
from sklearn.metrics import adjusted_rand_score

from ctsne.datasets import load_adult, make_synthetic


def iterate(X, names, categorical: dict, truth: dict, rounds: int, seed: int,
            small: bool) -> list[dict]:
    """Run the loop; ``categorical`` maps a feature name to the labels it stands for."""
    priors: list[np.ndarray] = []
    log = []
    for r in range(rounds):
        prior = None if not priors else (priors[0] if len(priors) == 1
                                         else np.column_stack(priors))
        Y, _, _ = C.embed(X, prior, seed=seed, small=small, method="exact")
        clusters, silhouette = C.visual_clusters(Y, seed=seed)
        ranking = C.rank_clusters(X, clusters, names)
        votes = Counter()
        for c in ranking:
            votes[c["top"][0][0]] += c["size"]
        feature = votes.most_common(1)[0][0]
        if feature in categorical:
            new_prior, source = categorical[feature], feature
        else:
            new_prior, source = clusters, f"clusters[{feature}]"
        log.append({
            "round": r,
            "factored_out": [e["next_prior"] for e in log],
            "visual_clusters": int(clusters.max() + 1),
            "silhouette": silhouette,
            "ari": {name: adjusted_rand_score(t, clusters) for name, t in truth.items()},
            "top_feature_votes": dict(votes),
            "clusters": ranking,
            "next_prior": source,
            "_Y": Y,
            "_clusters": clusters,
        })
        priors.append(np.asarray(new_prior))
    return log


def main(argv=None) -> dict:
    def extra(p):
        p.add_argument("--rounds", type=int, default=3, help="rounds per data set")

    args = C.parse_args(__doc__.splitlines()[0], argv, extra)
    rounds = 2 if args.small else args.rounds
    n = 200 if args.small else 1000

    syn = make_synthetic(n=n, random_state=args.seed)
    adult = load_adult(standardize=True)
    idx = np.arange(1000) if not args.small else \
        np.random.default_rng(args.seed).choice(1000, n, replace=False)
    studies = {
        "synthetic": (syn.X, syn.feature_names, {},
                      {"f1-4": syn.f14, "f5-6": syn.f56, "f1-6": syn.f16}),
        "adult": (adult.X[idx], adult.feature_names,
                  {"ethnicity=White": adult.ethnicity[idx], "gender=Male": adult.gender[idx],
                   "income>50K": adult.income[idx]},
                  {"gender": adult.gender[idx], "ethnicity": adult.ethnicity[idx],
                   "income": adult.income[idx]}),
    }
    results = {"seed": args.seed, "rounds": rounds}
    fig, axes = C.figure(len(studies) * rounds, rows=len(studies))
    for s, (name, (X, names, categorical, truth)) in enumerate(studies.items()):
        log = iterate(X, names, categorical, truth, rounds, args.seed, args.small)
        for r, entry in enumerate(log):
            prior = " + ".join(entry["factored_out"]) or "nothing (t-SNE)"
            C.scatter(axes[s * rounds + r], entry.pop("_Y"), entry.pop("_clusters"),
                      title=f"{name}, round {r}\nfactored out: {prior}\n"
                            f"next: {entry['next_prior']}")
        results[name] = log
    C.save_figure(fig, args.out / "iterative.png")
    C.save_json(results, args.out / "iterative.json")
    return results


if __name__ == "__main__":
    res = main(sys.argv[1:])
    for study in ("synthetic", "adult"):
        for e in res[study]:
            ari = {k: round(v, 2) for k, v in e["ari"].items()}
            print(f"{study} round {e['round']}: {e['visual_clusters']} clusters "
                  f"(silhouette {e['silhouette']:.2f}), ARI {ari}, next prior: {e['next_prior']}")

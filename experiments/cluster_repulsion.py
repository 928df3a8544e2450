"""Prototype: ct-SNE's cross-batch repulsion lowered only within clusters (issue 50).

On confounded designs (a batch holding only some cell types) ct-SNE lays types that only
one batch holds over another batch's types: with β' = 0.01 nothing repels two points of
different batches, so each batch's map spreads over the whole layout. This prototype
tests the remedy of lowering the repulsion only between points of different batches
*in the same cluster* of a batch-corrected space (full repulsion across clusters):

    w_ij = α'                  same batch
           β'                  different batches, same cluster
           1                   different batches, different clusters

which is a sum of four partition terms, so the per-class decomposition still applies
(one all-points term, the batch, the clusters, clusters × batch: ~2× the repulsion of
ct-SNE's two terms):

    w = 1 + (α' − 1)[same batch] + (β' − 1)[same cluster] + (1 − β')[same cluster and batch]

Clusters: k-means (K = 8, 20) on Harmony's corrected PCs, and Harmony's own soft
clusters (argmax of R). This is a prototype, not a library feature: it patches
``ctsne.prior.Prior.terms`` for the fit (the exact engine, so that the terms' negative
coefficients meet no approximation), and needs harmonypy. Scores as in
``confounded_modes.py``; the reference rows come from its saved JSON.

    python experiments/cluster_repulsion.py     # → results/cluster_repulsion.md
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import confounded_modes as CM  # noqa: E402

from ctsne import ConditionalTSNE  # noqa: E402
from ctsne import prior as prior_mod  # noqa: E402
from ctsne.metrics import integration_score  # noqa: E402
from ctsne.prior import PriorTerm  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SETS = ("synthetic", "digits-confounded", "pbmc68k-confounded", "pbmc-stim-confounded",
        "pbmc-stim", "pbmc68k-donors")
REFERENCES = ("ctsne auto", "Harmony → t-SNE")
_CLUSTERS: dict = {"codes": None}
_plain_terms = prior_mod.Prior.terms


def _cluster_terms(self):
    """The four partition terms above, for a one-column prior and the clusters set."""
    clusters = _CLUSTERS["codes"]
    if clusters is None or len(self.codes) != 1:
        return _plain_terms(self)
    batch = self.codes[0]
    alpha, beta = float(self.alphas[0]), float(self.betas[0])
    both = np.unique(clusters * (int(batch.max()) + 1) + batch, return_inverse=True)[1]
    return [PriorTerm(1.0, None, 1),
            PriorTerm(alpha - 1.0, batch, int(batch.max()) + 1),
            PriorTerm(beta - 1.0, clusters, int(clusters.max()) + 1),
            PriorTerm(1.0 - beta, both.astype(np.int64), int(both.max()) + 1)]


def _harmony(d, seed):
    import harmonypy
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ho = harmonypy.run_harmony(d["X"], pd.DataFrame({"batch": d["batch"]}), ["batch"],
                                   random_state=seed, verbose=False)
    Z, R = np.asarray(ho.Z_corr), np.asarray(ho.R)
    Z = Z.T if Z.shape[0] != len(d["X"]) else Z
    R = R if R.shape[1] == len(d["X"]) else R.T
    return Z, R.argmax(axis=0)


def run(name: str, seed: int) -> dict:
    from sklearn.cluster import KMeans

    d = CM.DATASETS[name](np.random.default_rng(seed), False)
    saved = json.loads((RESULTS / f"confounded_modes_{name}_s{seed}.json").read_text())
    rows = {ref: saved["scores"][ref] for ref in REFERENCES}
    Z, harmony_clusters = _harmony(d, seed)
    variants = {f"k-means {k} on Harmony": KMeans(k, n_init=3, random_state=seed).fit_predict(Z)
                for k in (8, 20)}
    variants["Harmony's clusters"] = harmony_clusters
    prior_mod.Prior.terms = _cluster_terms
    try:
        for label, clusters in variants.items():
            _CLUSTERS["codes"] = np.unique(clusters, return_inverse=True)[1].astype(np.int64)
            Y = ConditionalTSNE(random_state=seed, method="exact").fit_transform(d["X"],
                                                                                d["batch"])
            sc = integration_score(d["X"], Y, d["batch"], d["label"], perplexity=30.0,
                                   silhouettes=False)
            rows[f"ctsne, {label} ({_CLUSTERS['codes'].max() + 1})"] = {
                f: float(getattr(sc, f)) for f in CM.FIELDS}
    finally:
        _CLUSTERS["codes"] = None
        prior_mod.Prior.terms = _plain_terms
    return rows


def main() -> None:
    lines = ["# Cross-batch repulsion lowered only within clusters (prototype)", "",
             (__doc__ or "").split("\n\n")[1].replace("\n", " "), "",
             "Made by `experiments/cluster_repulsion.py`; seeds 0 and 1.", ""]
    for name in SETS:
        lines += [f"### {name}", "", "| method | seed | batch | bio | overall | label hom. | "
                  "cross-batch agree |", "|---|---|---|---|---|---|---|"]
        for seed in (0, 1):
            print(f"{name}, seed {seed}", flush=True)
            for method, s in run(name, seed).items():
                lines.append(f"| {method} | {seed} | {s['batch']:.3f} | {s['bio']:.3f} | "
                             f"{s['overall']:.3f} | {s['label_homogeneity']:.3f} | "
                             f"{s['agreement']:.3f} |")
        lines.append("")
    out = RESULTS / "cluster_repulsion.md"
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

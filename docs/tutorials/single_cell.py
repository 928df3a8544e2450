"""Factoring the stimulation out of real single-cell data: control and IFN-β PBMCs.

Reads the pbmc-stim files (2,000 blood cells of Kang et al. 2018, half of them stimulated
with interferon-β, as 30 principal components plus a per-cell condition and cell type)
from the folder given as the first argument, or ``pbmc-stim`` in the current folder.
The figure and the annotated data go to the current folder, or ``CTSNE_DOCS_OUT``.
"""

import os
import sys
from pathlib import Path

import anndata as ad
import matplotlib.pyplot as plt
import pandas as pd
import scanpy as sc

import ctsne
from ctsne.metrics import laplacian_score

data = Path(sys.argv[1] if len(sys.argv) > 1 else "pbmc-stim")
out = Path(os.environ.get("CTSNE_DOCS_OUT", "."))

# the file lists the control cells first: shuffled, neither condition is drawn on top
pcs = pd.read_csv(data / "pbmc_stim_pcs.tsv.gz", sep="\t", index_col=0).sample(
    frac=1, random_state=0)
meta = pd.read_csv(data / "pbmc_stim_meta.tsv.gz", sep="\t", index_col=0).loc[pcs.index]
obs = pd.DataFrame({
    "condition": pd.Categorical(meta["stim"].map({"ctrl": "control", "stim": "IFN-β"}),
                                categories=["control", "IFN-β"]),
    "cell type": pd.Categorical(meta["marker_label"]),
}, index=pcs.index)
adata = ad.AnnData(obs=obs, obsm={"X_pca": pcs.to_numpy()})
adata.uns["condition_colors"] = ["#0072b2", "#e69f00"]  # colour-blind safe, equal weight

# Plain t-SNE (no prior) and ct-SNE told the condition: same engine, same start, so the
# prior is the only difference between the two maps.
ctsne.tl.ctsne(adata, prior=None, key_added="X_tsne", random_state=0)
ctsne.tl.ctsne(adata, prior="condition", beta=0.01, random_state=0)

# The usual 2 x 2 figure: a row per map, a column per colouring. The titles give the
# Laplacian score (k = 30): near 0 when a cell's neighbours share its label; about 0.5
# for two equal conditions, 0.8 for these seven cell types, when the map ignores them.
maps = {"t-SNE": "tsne", "ct-SNE, prior = condition": "ctsne"}
fig, axes = plt.subplots(2, 2, figsize=(11, 9.5), layout="constrained")
for row, (name, basis) in zip(axes, maps.items(), strict=True):
    Y = adata.obsm[f"X_{basis}"]
    scores = {col: laplacian_score(Y, adata.obs[col].to_numpy(), k=30)
              for col in ("condition", "cell type")}
    print(f"{name}: Laplacian score of condition {scores['condition']:.2f}, "
          f"of cell type {scores['cell type']:.2f}")
    for ax, col in zip(row, scores, strict=True):
        sc.pl.embedding(adata, basis=basis, color=col, ax=ax, show=False, size=25,
                        frameon=False, title=f"{name}\n{col} (score {scores[col]:.2f})")
fig.savefig(out / "single_cell_pbmc_stim.png", dpi=80)
adata.write_h5ad(out / "pbmc_stim_ctsne.h5ad")

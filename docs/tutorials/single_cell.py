"""Factoring a batch out of single-cell data with scanpy.

Runs from scratch: the data set ships inside scanpy (700 blood cells, 10 cell types).
Figures and the annotated data go to the current folder, or ``CTSNE_DOCS_OUT``.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import scanpy as sc

import ctsne
from ctsne.plotting import plot_comparison, save_figure

out = Path(os.environ.get("CTSNE_DOCS_OUT", "."))
adata = sc.datasets.pbmc68k_reduced()

# Make a batch effect: the cells were (say) processed in two labs, and lab B's protocol
# raised 80 of the genes. Real batch effects look like this to t-SNE: a shift that
# splits every cell type in two.
rng = np.random.default_rng(0)
adata.obs["batch"] = pd.Categorical(rng.choice(["lab A", "lab B"], size=adata.n_obs))
in_b = (adata.obs["batch"] == "lab B").to_numpy()
genes = rng.choice(adata.n_vars, size=80, replace=False)
adata.X[np.ix_(in_b, genes)] += 1.5
sc.pp.pca(adata, n_comps=50)

# The usual t-SNE shows the batch first ...
sc.tl.tsne(adata, use_rep="X_pca", random_state=0)
# ... ct-SNE is told the batch and factors it out: adata.obsm["X_ctsne"], and the
# parameters and diagnostics of the run in adata.uns["X_ctsne"].
ctsne.tl.ctsne(adata, prior="batch", use_rep="X_pca", beta=0.01, random_state=0)

# t-SNE beside ct-SNE, coloured by cell type, marked by batch; the titles give the
# Laplacian score of the batch (low: neighbours share the batch; ~0.5: mixed).
fig = plot_comparison(adata.obsm["X_tsne"], adata.obsm["X_ctsne"],
                      {"batch": adata.obs["batch"].to_numpy()},
                      color=adata.obs["bulk_labels"].to_numpy(),
                      marker=adata.obs["batch"].to_numpy(),
                      color_name="cell type", marker_name="batch")
save_figure(fig, out / "single_cell_comparison.png", force=True)

# In a notebook, ctsne.pl.ctsne(adata, color=[...]) draws the same as scanpy's own
# embedding plot does here:
fig = sc.pl.embedding(adata, basis="X_ctsne", color=["batch", "bulk_labels"], show=False,
                      return_fig=True)
fig.savefig(out / "single_cell_scanpy.png", dpi=100, bbox_inches="tight")
adata.write_h5ad(out / "pbmc_ctsne.h5ad")
print(adata)

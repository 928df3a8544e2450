"""A million points: ct-SNE at scale, from generated data.

Written for 10⁶ points: about 16 minutes and 3.2 GB of memory on the 2-core benchmark
machine (BENCHMARKS.md: 270 s neighbours and affinities, 668 s optimisation).
``CTSNE_DOCS_N`` runs it smaller (CI runs a few thousand points).
Figures and the embedding go to the current folder, or ``CTSNE_DOCS_OUT``.
"""

import json
import os
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ctsne import ConditionalTSNE
from ctsne.datasets import make_scaled
from ctsne.metrics import knn_label_homogeneity
from ctsne.plotting import plot_embedding, save_figure

n = int(os.environ.get("CTSNE_DOCS_N", 1_000_000))
out = Path(os.environ.get("CTSNE_DOCS_OUT", "."))

# Five large clusters spread over all 10 dimensions (the prior: what we already know) and
# four smaller ones, independent of them, in the first two dimensions (what we look for).
data = make_scaled(n, 10, n_classes=5, n_subclasses=4, random_state=0)

# method="auto" picks the engines per class by size: Barnes-Hut (or FFT interpolation)
# for large classes, exact blocks for small ones; approximate neighbours (pynndescent)
# above 200,000 points. verbose=True shows progress bars with the KL.
model = ConditionalTSNE(beta=0.01, random_state=0, verbose=n >= 100_000)
t0 = time.perf_counter()
Y = model.fit_transform(data.X, data.labels)
seconds = time.perf_counter() - t0
times = model.timings_
print(f"{n:,} points in {seconds:.0f} s: neighbours and affinities "
      f"{times['affinities']:.0f} s, optimisation {times['optimization']:.0f} s")

# How visible is each label? 10-NN homogeneity on a sample of points (1 = pure
# neighbourhoods; Σ(n_l/n)² when the map ignores the label).
rng = np.random.default_rng(0)
sample = rng.choice(n, size=min(n, 20_000), replace=False)
summary = {"n": n, "seconds": seconds}
for name, labels in (("prior", data.labels), ("subclusters", data.sublabels)):
    h = knn_label_homogeneity(Y[sample], labels[sample], k=10)
    summary[name] = h
    print(f"10-NN homogeneity of the {name}: {h:.2f}")

# Above 200,000 points the plot shades pixels by the mean colour of their points.
fig = Figure(figsize=(10, 4.5))
for k, (name, labels) in enumerate((("prior (factored out)", data.labels),
                                    ("subclusters (found)", data.sublabels))):
    ax = fig.add_subplot(1, 2, k + 1)
    plot_embedding(Y, labels, ax=ax, title=f"coloured by the {name}", color_name=None,
                   legend=False)
fig.tight_layout()
save_figure(fig, out / "million.png", force=True)
np.save(out / "million_embedding.npy", Y.astype(np.float32))
(out / "million_summary.json").write_text(json.dumps(summary))

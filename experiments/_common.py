"""Shared plumbing for the paper-reproduction scripts in this folder.

Every script is ``python experiments/NAME.py [--small] [--out DIR] [--seed S]`` and
exposes ``main(argv) -> dict`` (the numbers it wrote), so tests can run it in-process.
``--small`` shrinks data and iteration counts so that a run takes seconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
K_RANGE = list(range(10, 101, 10))      # the paper's k for the Laplacian-score curves
K_RANGE_SMALL = [5, 10, 20]


def parse_args(description: str, argv=None, extra=None) -> argparse.Namespace:
    """Common command line: ``--small``, ``--out``, ``--seed`` (+ ``extra(parser)``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--small", action="store_true",
                        help="tiny data and few iterations (seconds; for smoke tests)")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help=f"output folder (default {RESULTS})")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def tsne_params(small: bool, **overrides) -> dict:
    """ConditionalTSNE settings: the estimator's defaults, or a few iterations if small."""
    params = {}
    if small:
        params.update(early_exaggeration_iter=25, n_iter=50, perplexity=10.0)
    params.update(overrides)
    return params


def embed(X, prior=None, beta: float = 0.01, seed: int = 0, small: bool = False,
          **overrides):
    """Fit ConditionalTSNE with the paper's weights (``conditioning="classes"`` unless
    ``overrides`` says otherwise: the reproduction runs the paper's method, whatever the
    estimator's default); returns ``(Y, model, seconds)``."""
    from ctsne import ConditionalTSNE

    overrides.setdefault("conditioning", "classes")
    model = ConditionalTSNE(beta=beta, random_state=seed, **tsne_params(small, **overrides))
    t0 = time.perf_counter()
    Y = model.fit_transform(X, prior)
    return Y, model, time.perf_counter() - t0


def save_json(obj, path: Path) -> None:
    """Write ``obj`` as indented JSON (numpy scalars and arrays converted)."""

    def default(o):
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
        raise TypeError(f"cannot serialise {type(o)}")

    path.write_text(json.dumps(obj, indent=2, default=default) + "\n")


def figure(n_panels: int, size: float = 4.0, rows: int = 1):
    """A row (or grid) of square panels; matplotlib is imported only here."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = int(np.ceil(n_panels / rows))
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False)
    return fig, axes.ravel()


def save_figure(fig, path: Path) -> None:
    """Save as PNG and close."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


MARKERS = ["o", "^", "s", "D", "v", "P", "X", "*", "<", ">"]


def scatter(ax, Y, color_labels, marker_labels=None, title: str = "", size: float = 8,
            filled=None) -> None:
    """Embedding scatter: colour by one label, marker shape by another (optional).

    ``filled`` (boolean per point) draws the False points as hollow markers.
    """
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10")
    _, cidx = np.unique(color_labels, return_inverse=True)
    if marker_labels is None:
        midx = np.zeros(len(Y), dtype=int)
    else:
        _, midx = np.unique(marker_labels, return_inverse=True)
    fill = np.ones(len(Y), dtype=bool) if filled is None else np.asarray(filled, bool)
    for m in np.unique(midx):
        for f in (True, False):
            sel = (midx == m) & (fill == f)
            if not sel.any():
                continue
            colors = cmap(cidx[sel] % 10)
            kw = {"c": colors} if f else {"facecolors": "none", "edgecolors": colors}
            ax.scatter(Y[sel, 0], Y[sel, 1], s=size, marker=MARKERS[m % len(MARKERS)],
                       linewidths=0.6, **kw)
    ax.set_title(title, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])


def plot_curves(ax, ks, curves: dict, title: str, ylabel: str = "Laplacian score") -> None:
    """One line per entry of ``curves`` (name -> values over ``ks``)."""
    for name, values in curves.items():
        ax.plot(ks, values, marker="o", ms=3, label=name)
    ax.set_xlabel("k (neighbours)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


def visual_clusters(Y, max_k: int = 8, seed: int = 0) -> tuple[np.ndarray, float]:
    """Clusters an analyst would pick by eye: k-means on the embedding, k (2…max_k) by
    the best silhouette. Returns the labels and that silhouette."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    best = (None, -1.0)
    for k in range(2, max_k + 1):
        lab = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(Y)
        s = silhouette_score(Y, lab, sample_size=min(len(Y), 2000), random_state=seed)
        if s > best[1]:
            best = (lab, float(s))
    return best


def rank_clusters(X, clusters, feature_names, top: int = 3) -> list[dict]:
    """Feature ranking (paper §3.1) of every cluster against the rest."""
    from ctsne.ranking import rank_features

    out = []
    for c in np.unique(clusters):
        r = rank_features(X, clusters, feature_names, cluster=c, cv=3)
        out.append({"cluster": int(c), "size": r.n_selected, "auc": round(r.auc, 3),
                    "top": [(f, round(float(w), 3))
                            for f, w in zip(r.feature_names[:top], r.weights[:top],
                                            strict=True)]})
    return out

"""Figures and numbers of how much a label shows: Laplacian scores of priors, score curves.

matplotlib is imported inside the functions, so ``import ctsne.plotting`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .canvas import check_embedding, new_figure

__all__ = ["plot_scores", "prior_scores"]


def prior_scores(Y: np.ndarray, priors: Mapping[str, Any], k: int = 30) -> dict[str, float]:
    """Laplacian score (:func:`ctsne.metrics.laplacian_score`) of each prior label in ``Y``.

    Low means the label is visible (neighbours share it). ``k`` is capped at ``n - 1``;
    a missing label (None/NaN) counts as one value.

    Parameters
    ----------
    Y : ndarray (n, 2)
        An embedding.
    priors : dict name -> labels (n,)
    k : int, default 30
        Neighbours for the score.

    Returns
    -------
    dict name -> float
    """
    from ..metrics import label_codes, laplacian_score

    Y = check_embedding(Y)
    k = min(int(k), len(Y) - 1)
    out = {}
    for name, values in priors.items():
        values = np.asarray(values)
        plain = values.tolist() if values.dtype.kind in "iufb" else values
        out[str(name)] = float(laplacian_score(Y, label_codes(plain)[0], k=k))
    return out


def plot_scores(ks: Sequence[int], scores: Mapping[str, Mapping[str, Sequence[float]]],
                chance: Mapping[str, float] | None = None, panel_size: float = 4.0):
    """Laplacian score curves: one panel per label, one line per embedding (paper Fig. 2).

    Parameters
    ----------
    ks : sequence of int
        Neighbourhood sizes (x axis).
    scores : dict label -> dict embedding -> scores aligned with ``ks``
    chance : dict label -> float, optional
        The score of a label placed at random, drawn as a dashed line.
    panel_size : float, default 4
        Height of a panel in inches (its width: a little more).

    Returns
    -------
    The matplotlib Figure.
    """
    from matplotlib import colormaps

    fig = new_figure((panel_size * len(scores) + 0.5, panel_size * 0.85))
    names = list(dict.fromkeys(e for per in scores.values() for e in per))
    colors = {e: colormaps["tab10"](k % 10) for k, e in enumerate(names)}
    axes = [fig.add_subplot(1, len(scores), k + 1) for k in range(len(scores))]
    for ax, (label, per) in zip(axes, scores.items(), strict=True):
        for emb, vals in per.items():
            ax.plot(ks, vals, marker="o", ms=3, color=colors[emb], label=emb)
        if chance is not None and label in chance:
            ax.axhline(chance[label], ls="--", color="0.5", lw=1, label="random labels")
        ax.set_title(f"label: {label}")
        ax.set_xlabel("k (neighbours)")
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("Laplacian score (low = label visible)")
    axes[-1].legend(fontsize="small", frameon=False)
    fig.tight_layout()
    return fig

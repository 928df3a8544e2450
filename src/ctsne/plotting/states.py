"""What shared-state conditioning found, drawn: each state's share of each class."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_states"]


def plot_states(model, ax=None):
    """Each state (rows) as a share of each prior class (columns), held states marked,
    grouped by the classes that hold them.

    A cell reads "this share of class c lies in state k"; a dot marks the classes that hold
    the state (:func:`ctsne.estimator.states.held_by`): between those classes the prior is
    removed, elsewhere the map keeps its full repulsion.

    Parameters
    ----------
    model : fitted ConditionalTSNE, ConditionalUMAP or ConditionalLargeVis
        With ``conditioning_ == "states"`` (``shared_states_`` set).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    found = getattr(model, "shared_states_", None)
    if found is None:
        raise ValueError("this model used the paper's weights (conditioning_ is "
                         f"{getattr(model, 'conditioning_', None)!r}): it found no shared "
                         "states; fit with conditioning='states' to see them")
    groups = found.holders()
    order = np.concatenate([ks for _, ks in groups])
    table = found.table[order].astype(np.float64)
    share = table / np.maximum(table.sum(axis=0, keepdims=True), 1.0)
    if ax is None:
        _, ax = plt.subplots(figsize=(3.0 + 0.6 * table.shape[1],
                                      min(1.0 + 0.3 * table.shape[0], 9.0)))
    image = ax.imshow(share, cmap="Blues", vmin=0.0, vmax=max(share.max(), 1e-12),
                      aspect="auto", interpolation="nearest")
    rows, cols = np.nonzero(found.held[order])
    ax.scatter(cols, rows, s=min(12.0, 600.0 / len(order)), c="black", marker="o",
               label="held")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in found.classes], rotation=45,
                  ha="right")
    # one tick per group of states the same classes hold: many states have no room for a
    # label each, and the groups are what decides the weights
    first = np.cumsum([0] + [len(ks) for _, ks in groups])
    ax.set_yticks((first[:-1] + first[1:] - 1) / 2.0,
                  [f"held by {name}\n({len(ks)} states, {int(found.table[ks].sum())} pts)"
                   for name, ks in groups], fontsize=7)
    for edge in first[1:-1]:
        ax.axhline(edge - 0.5, color="grey", linewidth=0.6)
    ax.set_xlabel("prior class")
    ax.figure.colorbar(image, ax=ax, label="share of the class")
    ax.set_title("shared states (rows; dots: classes that hold the state)", fontsize=9)
    return ax

"""What every figure starts from: a new matplotlib figure and a checked 2-D embedding,
and the formats a figure is saved as.

matplotlib is imported inside the functions, so ``import ctsne.plotting`` stays cheap.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["FIGURE_FORMATS", "check_embedding", "new_figure"]

# What save_figure writes; the command line's output checks read this list too (through
# ctsne.interfaces.files.formats), so it is named here, in the earlier stage, only.
FIGURE_FORMATS = ("png", "svg", "pdf")


def new_figure(figsize: tuple[float, float]):
    """A new figure of ``figsize`` inches.

    Made without pyplot (so no display is needed) unless the caller has imported pyplot
    already, in which case it is a pyplot figure that ``plt.show()`` displays.

    Parameters
    ----------
    figsize : (float, float)
        Width and height in inches.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        return plt.figure(figsize=figsize)
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def check_embedding(Y) -> np.ndarray:
    """The first two coordinates of an embedding, as float64.

    Parameters
    ----------
    Y : array-like (n, d), d ≥ 2

    Returns
    -------
    ndarray (n, 2)

    Raises
    ------
    ValueError
        When ``Y`` is not 2-D with at least two columns.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] < 2:
        raise ValueError(f"an embedding to plot must have shape (n, 2), got {Y.shape}")
    return Y[:, :2]

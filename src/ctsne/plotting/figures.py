"""Figures of embeddings: colour and marker by labels, side-by-side panels, selections.

matplotlib is imported inside the functions, and figures are made without pyplot unless
the caller imported it (:func:`~ctsne.plotting.canvas.new_figure`). Score curves and the
scores of priors are in :mod:`~ctsne.plotting.scores`.

Large embeddings stay readable: above ``RASTERIZE_ABOVE`` points the markers shrink and
are rasterized (vector files stay small); above ``DENSITY_ABOVE`` points, or with
``density=True``, each pixel shows the mean colour of its points with opacity growing
with their (log) count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._output import DataError, atomic_path, listing
from .canvas import FIGURE_FORMATS, check_embedding, new_figure
from .scores import prior_scores

__all__ = [
    "DENSITY_ABOVE",
    "RASTERIZE_ABOVE",
    "FIGURE_FORMATS",
    "label_colors",
    "marker_levels",
    "plot_comparison",
    "plot_embedding",
    "plot_embeddings",
    "save_figure",
]

RASTERIZE_ABOVE = 10_000
DENSITY_ABOVE = 200_000
MARKERS = ("o", "^", "s", "D", "v", "P", "X", "*", "<", ">")
HIGHLIGHT_COLORS = ("tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple")
MAX_LEGEND = 30
# Numeric colour labels with more distinct values than this get a colour scale.
MAX_CATEGORIES = 20
# Points drawn without colour labels.
_UNCOLOURED = (0.35, 0.35, 0.35, 1.0)


def _label_codes(values) -> tuple[np.ndarray, list]:
    """:func:`ctsne.metrics.label_codes` (sorted levels, a missing label last as None),
    imported when first drawn: ``ctsne.metrics`` loads scikit-learn."""
    from ..metrics import label_codes

    return label_codes(values)


def _text(level) -> str:
    if level is None:
        return "missing"
    if isinstance(level, float) and level.is_integer():
        return str(int(level))  # labels read from a CSV come back as 0.0, 1.0, …
    return str(level)


def label_colors(levels: Sequence) -> dict:
    """A colour for each label: tab10 up to 10 labels, tab20 up to 20, else turbo.

    A missing label (None) is grey.
    """
    from matplotlib import colormaps

    named = [lv for lv in levels if lv is not None]
    if len(named) <= 10:
        cols = [colormaps["tab10"](k) for k in range(len(named))]
    elif len(named) <= 20:
        cols = [colormaps["tab20"](k) for k in range(len(named))]
    else:
        cols = [colormaps["turbo"](x) for x in np.linspace(0.05, 0.95, len(named))]
    out: dict = dict(zip(named, cols, strict=True))
    if None in levels:
        out[None] = (0.6, 0.6, 0.6, 1.0)
    return out


def _more_colors(taken: Sequence, count: int) -> list:
    """``count`` colours for labels that a reference figure did not have: from tab10 and
    tab20, those not ``taken`` first."""
    from matplotlib import colormaps

    pool = [colormaps[name](k) for name, size in (("tab10", 10), ("tab20", 20))
            for k in range(size)]
    used = {tuple(c) for c in taken}
    pool = [c for c in pool if tuple(c) not in used] + pool
    return [pool[k % len(pool)] for k in range(count)]


def _plain(values: np.ndarray):
    """Numbers as Python numbers (NaN stays a float, read as missing), other labels as
    objects, so that labels compare as the user wrote them."""
    return values.tolist() if values.dtype.kind in "iuf" else values.astype(object)


class _ColorSpec:
    """How labels map to colours, shared by every panel of a figure.

    With ``reference`` (the labels of another figure, e.g. the map new points were placed
    into), the colours are that figure's: its labels keep their colours, labels it did
    not have get others, and a colour scale keeps its range.
    """

    def __init__(self, values, name: str | None, reference=None):
        self.name = name
        self.continuous = False
        self.levels: list = [None]
        self.colors: dict = {None: _UNCOLOURED}
        if values is None:
            return
        values = np.asarray(values)
        basis = values if reference is None else np.asarray(reference)
        numeric = basis.dtype.kind in "iuf"
        if numeric and len(np.unique(basis[np.isfinite(basis)])) > MAX_CATEGORIES:
            self.continuous = True
            finite = basis[np.isfinite(basis)]
            self.vmin, self.vmax = float(finite.min()), float(finite.max())
            return
        self.levels = _label_codes(_plain(values))[1]
        self.colors = label_colors(self.levels)
        if reference is not None:
            shown = self.levels
            known = _label_codes(_plain(basis))[1]
            self.colors = label_colors(known)
            new = [lv for lv in shown if lv not in self.colors]
            self.colors.update(zip(new, _more_colors(list(self.colors.values()), len(new)),
                                   strict=True))
            if None in shown:
                self.colors[None] = label_colors([None])[None]
            self.levels = [lv for lv in known if lv in set(shown)] + new  # legend order

    def rgba(self, values, n: int) -> np.ndarray:
        if values is None:  # no labels, e.g. for a map's points when the model did not
            # keep the colour column (a spec of categorical levels has no colour for None)
            return np.tile(self.colors.get(None, _UNCOLOURED), (n, 1))
        values = np.asarray(values)
        if self.continuous:
            from matplotlib import colormaps

            span = self.vmax - self.vmin or 1.0
            out = colormaps["viridis"]((values - self.vmin) / span)
            out[~np.isfinite(values)] = (0.6, 0.6, 0.6, 1.0)
            return out
        # each label's colour, whatever the order of the levels
        codes, levels = _label_codes(_plain(values))
        return np.array([self.colors[lv] for lv in levels])[codes]

    def handles(self) -> list:
        from matplotlib.lines import Line2D

        if self.name is None or self.continuous:
            return []
        shown = self.levels if len(self.levels) <= MAX_LEGEND else self.levels[:MAX_LEGEND - 1]
        out = [Line2D([], [], ls="", marker="o", color=self.colors[lv],
                      label=_text(lv)) for lv in shown]
        if len(shown) < len(self.levels):
            out.append(Line2D([], [], ls="", label=f"… {len(self.levels) - len(shown)} more"))
        return out


def marker_levels(values, name: str = "the marker label", reference=None) -> list:
    """The distinct values of a marker label, in drawing order.

    Raises ValueError when there are more values than marker shapes (``len(MARKERS)``),
    so that a caller can check a label before any long work. With ``reference`` (the
    labels of another figure) that figure's values come first, so that each keeps its
    shape, then those it did not have.
    """
    levels = _label_codes(np.asarray(values).tolist())[1]
    if reference is not None:
        known = _label_codes(np.asarray(reference).tolist())[1]
        levels = [lv for lv in known if lv is not None] + [
            lv for lv in levels if lv is not None and lv not in set(known)] + (
            [None] if None in levels or None in known else [])
    if len(levels) > len(MARKERS):
        raise ValueError(f"{name} has {len(levels)} values; markers are told apart for at "
                         f"most {len(MARKERS)}: use colour for this label")
    return levels


def _highlights(highlight, n: int) -> dict[str, np.ndarray]:
    if highlight is None:
        return {}
    items = highlight.items() if isinstance(highlight, Mapping) else [("selection", highlight)]
    out = {}
    for name, mask in items:
        mask = np.asarray(mask)
        if mask.dtype != bool:  # row indices
            idx, mask = mask, np.zeros(n, dtype=bool)
            mask[idx] = True
        if mask.shape != (n,):
            raise ValueError(f"highlight {name!r} has shape {mask.shape}, expected ({n},)")
        out[str(name)] = mask
    if len(out) > len(HIGHLIGHT_COLORS):
        raise ValueError(f"at most {len(HIGHLIGHT_COLORS)} highlighted selections")
    return out


def _draw(ax, Y, color, cspec: _ColorSpec, marker, mlevels, highlights, point_size,
          density, random_state) -> None:
    n = len(Y)
    rgba = cspec.rgba(color, n)
    if highlights:
        rgba[:, 3] = 0.25 if color is not None else 1.0
        if color is None:
            rgba[:, :3] = 0.78
    size = point_size if point_size is not None else float(
        np.clip(12.0 * (1000.0 / max(n, 1)) ** 0.6, 0.2, 12.0))
    raster = n > RASTERIZE_ABOVE
    if density == "auto":
        density = n > DENSITY_ABOVE
    if density:
        _draw_density(ax, Y, rgba)
    else:
        # random drawing order, so that no label hides another by being drawn last
        order = np.random.default_rng(random_state).permutation(n)
        mcodes = np.zeros(n, dtype=np.int64)
        if marker is not None:  # each value's shape in mlevels (marker_levels' encoding)
            codes, levels = _label_codes(np.asarray(marker).tolist())
            shape = {lv: m for m, lv in enumerate(mlevels)}
            mcodes = np.array([shape[lv] for lv in levels], dtype=np.int64)[codes]
        for m in range(max(1, len(mlevels))):
            idx = order[mcodes[order] == m]
            ax.scatter(Y[idx, 0], Y[idx, 1], c=rgba[idx], s=size, marker=MARKERS[m],
                       linewidths=0, rasterized=raster)
    for (name, mask), col in zip(highlights.items(), HIGHLIGHT_COLORS, strict=False):
        # a dark rim tells a selection from label colours that share its hue
        ax.scatter(Y[mask, 0], Y[mask, 1], color=col, s=max(size * 1.5, 1.0), linewidths=0.3,
                   edgecolors="black", rasterized=raster, label=name)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_aspect("equal", adjustable="datalim")


def _draw_density(ax, Y, rgba, bins: int = 500) -> None:
    """Each pixel: mean colour of its points, opacity by log count."""
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ij = np.minimum(((Y - lo) / span * bins).astype(np.int64), bins - 1)
    flat = ij[:, 1] * bins + ij[:, 0]
    count = np.bincount(flat, minlength=bins * bins).astype(np.float64)
    img = np.zeros((bins * bins, 4))
    for c in range(3):
        img[:, c] = np.bincount(flat, weights=rgba[:, c], minlength=bins * bins)
    img[:, :3] /= np.maximum(count, 1.0)[:, None]
    img[:, 3] = np.where(count > 0, 0.2 + 0.8 * np.log1p(count) / np.log1p(count.max()), 0.0)
    ax.imshow(np.clip(img, 0.0, 1.0).reshape(bins, bins, 4), origin="lower",
              interpolation="nearest", extent=(lo[0], lo[0] + span[0], lo[1], lo[1] + span[1]))


def _legends(ax, cspec: _ColorSpec, marker_name, mlevels, highlights, bar_axes,
             background: str | None = None, inside: bool = False) -> None:
    """Colour legend, marker legend (grey), highlight legend and the background's entry,
    right of ``ax``, or with ``inside`` within it (an axes the caller laid out: the strip
    on the right may be a neighbouring panel)."""
    from matplotlib.lines import Line2D

    groups = []
    if cspec.handles():
        groups.append((cspec.name, cspec.handles()))
    if marker_name is not None and mlevels:
        groups.append((marker_name, [
            Line2D([], [], ls="", marker=MARKERS[m], color="0.3",
                   label=_text(lv)) for m, lv in enumerate(mlevels)]))
    if highlights:
        groups.append((None, [Line2D([], [], ls="", marker="o", color=c, label=name)
                              for name, c in zip(highlights, HIGHLIGHT_COLORS, strict=False)]))
    if background is not None:
        groups.append((None, [Line2D([], [], ls="", marker="o", color="0.7", alpha=0.5,
                                     label=f"{background} (faded)")]))
    y = 1.0
    for k, (title, handles) in enumerate(groups):
        where = (dict(loc="best", frameon=True, framealpha=0.8) if inside else
                 dict(loc="upper left", bbox_to_anchor=(1.01, y), borderaxespad=0.0,
                      frameon=False))
        leg = ax.legend(handles=handles, title=title, fontsize="small",
                        title_fontsize="small", **where)
        if k < len(groups) - 1:  # ax.legend() replaces the last legend; keep this one
            ax.add_artist(leg)
            # add_artist clips to the axes, which also hides it from bbox_inches="tight"
            leg.set_clip_on(False)
        y -= 0.06 * (len(handles) + 1.5)
    if cspec.continuous:
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        # below the panels: the legends take the strip on the right
        sm = ScalarMappable(Normalize(cspec.vmin, cspec.vmax), "viridis")
        bar_axes[0].figure.colorbar(sm, ax=bar_axes, label=cspec.name, shrink=0.6,
                                    location="bottom", pad=0.03, aspect=30)


def plot_embedding(Y: np.ndarray, color=None, marker=None, *, highlight=None, ax=None,
                   title: str | None = None, color_name: str | None = "colour",
                   marker_name: str | None = "marker", legend: bool = True,
                   point_size: float | None = None, density: bool | str = "auto",
                   random_state: int = 0, color_reference=None, marker_reference=None,
                   background=None, background_name: str = "map"):
    """Scatter plot of a 2-D embedding, coloured by one label and marked by another.

    Parameters
    ----------
    Y : ndarray (n, 2)
    color : array-like (n,), optional
        Labels (one colour each) or, if numeric with many values, a colour scale.
    marker : array-like (n,), optional
        Labels drawn with different marker shapes (at most 10 values).
    highlight : bool mask or row indices (n,), or dict name -> mask, optional
        Selections drawn on top in red, blue, …; the other points fade.
    ax : matplotlib Axes, optional
        Draw here, the legends inside the axes where they cover the fewest points (the
        space to its right may be another panel); by default a new figure, the legends to
        the right of the map.
    color_name, marker_name : str
        Legend titles.
    density : bool or "auto"
        Shade pixels instead of drawing markers (auto: above ``DENSITY_ABOVE`` points;
        markers shapes are then not shown).
    color_reference, marker_reference : array-like, optional
        The ``color`` and ``marker`` labels of another figure whose colours and shapes
        to keep (e.g. the map that new points were placed into): a label gets the colour
        and shape it has there.
    background : ndarray (m, 2), optional
        Points drawn first, faded, for context: the map that the points ``Y`` were placed
        into. They take the colours of ``color_reference`` when it has one label per
        background point, else grey; the view spans them and ``Y``.
    background_name : str
        The background's entry in the legend.

    Returns
    -------
    The matplotlib Axes.
    """
    Y = check_embedding(Y)
    given_ax = ax is not None
    if ax is None:
        ax = new_figure((6.5, 5.0)).add_subplot()
    cspec = _ColorSpec(color, color_name if color is not None else None, color_reference)
    mlevels = (marker_levels(marker, reference=marker_reference) if marker is not None
               else [])
    highlights = _highlights(highlight, len(Y))
    if background is not None:
        _draw_background(ax, check_embedding(background), cspec, color_reference,
                         point_size, random_state)
    _draw(ax, Y, color, cspec, marker, mlevels, highlights, point_size, density, random_state)
    if title:
        ax.set_title(title)
    if legend:
        _legends(ax, cspec, marker_name if marker is not None else None, mlevels, highlights,
                 [ax], background_name if background is not None else None, inside=given_ax)
    return ax


def _draw_background(ax, B, cspec: _ColorSpec, labels, point_size, random_state) -> None:
    """The context points of :func:`plot_embedding` (``background``): faded, small, drawn
    below the points, in their labels' colours when each has one."""
    labelled = labels is not None and len(labels) == len(B) and cspec.name is not None
    rgba = cspec.rgba(labels if labelled else None, len(B))
    if not labelled:
        rgba[:, :3] = 0.7
    rgba[:, 3] = 0.25
    size = point_size if point_size is not None else float(
        np.clip(8.0 * (1000.0 / max(len(B), 1)) ** 0.6, 0.2, 8.0))
    order = np.random.default_rng(random_state).permutation(len(B))
    ax.scatter(B[order, 0], B[order, 1], c=rgba[order], s=size, linewidths=0,
               rasterized=len(B) > RASTERIZE_ABOVE, zorder=0)


def plot_embeddings(embeddings: Mapping[str, np.ndarray] | Sequence[np.ndarray], color=None,
                    marker=None, *, highlight=None, color_name: str | None = "colour",
                    marker_name: str | None = "marker", panel_size: float = 4.5,
                    ncols: int | None = None, point_size: float | None = None,
                    density: bool | str = "auto", random_state: int = 0):
    """Embeddings of the same points side by side, with shared colours and markers.

    The paper's comparison figures: t-SNE next to ct-SNE coloured by the same label, or
    a selection made in one embedding highlighted in both (``highlight``).

    Parameters
    ----------
    embeddings : dict title -> ndarray (n, 2), or a sequence of arrays
        All with the same rows.
    color, marker, highlight : see :func:`plot_embedding`; one per point, shared.

    Returns
    -------
    The matplotlib Figure (one Axes per embedding, plus a colour bar for a colour scale).
    """
    if not isinstance(embeddings, Mapping):
        embeddings = {f"embedding {k + 1}": Y for k, Y in enumerate(embeddings)}
    if not embeddings:
        raise ValueError("no embeddings to plot")
    Ys = {str(k): check_embedding(v) for k, v in embeddings.items()}
    n = {len(Y) for Y in Ys.values()}
    if len(n) != 1:
        raise ValueError(f"the embeddings have different numbers of points: {sorted(n)}")
    ncols = ncols or min(len(Ys), 4)
    nrows = -(-len(Ys) // ncols)
    fig = new_figure((panel_size * ncols + 1.8, panel_size * nrows))
    cspec = _ColorSpec(color, color_name if color is not None else None)
    mlevels = marker_levels(marker) if marker is not None else []
    highlights = _highlights(highlight, n.pop())
    axes = [fig.add_subplot(nrows, ncols, k + 1) for k in range(len(Ys))]
    for ax, (name, Y) in zip(axes, Ys.items(), strict=True):
        _draw(ax, Y, color, cspec, marker, mlevels, highlights, point_size, density,
              random_state)
        ax.set_title(name)
    fig.tight_layout(rect=(0, 0, 1 - 1.8 / (panel_size * ncols + 1.8), 1))
    _legends(axes[ncols - 1], cspec, marker_name if marker is not None else None, mlevels,
             highlights, axes)
    return fig


def plot_comparison(tsne: np.ndarray, ctsne: np.ndarray, priors: Mapping[str, Any],
                    color=None, marker=None, *, k: int = 30, tsne_title: str = "t-SNE",
                    **kwargs):
    """t-SNE beside ct-SNE of the same points, scored by how much each prior still shows.

    Both panels share the colours and markers; each title gives the Laplacian score of
    every prior (:func:`~ctsne.plotting.scores.prior_scores`), so the reader sees what was
    factored out: the prior's score should rise towards its random level in the ct-SNE
    panel.

    Parameters
    ----------
    tsne, ctsne : ndarray (n, 2)
        The two embeddings of the same rows (ideally from the same P and start, as
        :meth:`ctsne.ConditionalTSNE.tsne_counterpart` makes them).
    priors : dict name -> labels (n,)
        The labels factored out in ``ctsne``.
    color, marker : array-like (n,), optional
        As in :func:`plot_embedding`.
    k : int, default 30
        Neighbours for the Laplacian score.
    tsne_title : str, default "t-SNE"
        Title of the first panel (e.g. naming a P other than t-SNE's own).
    **kwargs
        Passed to :func:`plot_embeddings` (``color_name``, ``marker_name``, ...).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels titled ``tsne_title`` and "ct-SNE (prior ...)", then
        "Laplacian score <k>-NN: <prior> <score>, ..." (two priors per line).
    """
    names = " & ".join(str(p) for p in priors)
    panels = {}
    for title, Y in ((tsne_title, tsne), (f"ct-SNE (prior {names})", ctsne)):
        scores = prior_scores(Y, priors, k)
        kk = min(int(k), len(check_embedding(Y)) - 1)
        items = [f"{p} {v:.3f}" for p, v in scores.items()]
        # two priors per line keep the titles of neighbouring panels apart
        lines = [", ".join(items[i:i + 2]) for i in range(0, len(items), 2)]
        panels[f"{title}\nLaplacian score {kk}-NN: " + ",\n".join(lines)] = Y
    fig = plot_embeddings(panels, color, marker, **kwargs)
    for ax in fig.axes[:2]:
        ax.title.set_fontsize("medium")
    return fig


def save_figure(fig: Any, path: str | os.PathLike, force: bool = False, dpi: int = 150) -> Path:
    """Write ``fig`` as PNG, SVG or PDF (by extension) atomically; returns the path."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise DataError(f"{path}: figures are written as {listing(FIGURE_FORMATS)}")
    with atomic_path(path, force) as tmp:
        fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight")
    return path

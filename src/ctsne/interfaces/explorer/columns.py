"""Per-point columns as the page sends them (colour levels, palettes, coordinates), the
page's two tables and its small HTML readouts (which columns are features, progress)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from .session import MAX_PRIOR_LEVELS

__all__ = ["levels", "palette", "xy", "columns_html", "progress_html", "prior_choices",
           "legend_table", "legend_height", "ranking_table", "ranking_columns",
           "ranking_headline", "choice_options"]


def palette(k: int) -> list[str]:
    """k distinct colours: Category10, Category20, then evenly spaced Turbo."""
    from bokeh.palettes import Category10, Category20, Turbo256

    if k <= 10:
        return list(Category10[10][:max(k, 1)])
    if k <= 20:
        return list(Category20[20][:k])
    return [Turbo256[int(i)] for i in np.linspace(0, 255, k)]


def xy(Y: np.ndarray, which: str) -> dict:
    """Map coordinates as float32 columns (half the bytes to the browser; WebGL draws
    float32 anyway)."""
    return {f"x{which}": Y[:, 0].astype(np.float32), f"y{which}": Y[:, 1].astype(np.float32)}


MISSING = "(missing)"


def _natural_key(text: str) -> tuple:
    """Sort key that reads the digits in a text as a number (c2 before c10)."""
    import re

    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p)
                 for p in re.split(r"(\d+)", text) if p)


def _order(names: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The display order of text levels: by number when they all read as numbers, in
    natural order when each holds a number (c0, c1, …, c10; q1 … q5), else the most
    frequent first (not alphabetically: "medium, thick, thin" says nothing); missing
    values last. (Numbered: all but one level hold a digit; that one goes last.)"""
    def number(t):
        try:
            return float(t)
        except ValueError:
            return None

    present = [k for k, t in enumerate(names) if t != MISSING]
    nums = [number(names[k]) for k in present]
    if all(v is not None for v in nums):
        order = [k for _, k in sorted(zip(nums, present, strict=True))]
    elif sum(not any(ch.isdigit() for ch in names[k]) for k in present) <= 1 < len(present):
        # numbered levels (c0 … c10, q1 … q5), and at most one other (DBSCAN's noise) last
        order = sorted(present, key=lambda k: (not any(ch.isdigit() for ch in names[k]),
                                               _natural_key(names[k])))
    else:
        order = sorted(present, key=lambda k: (-counts[k], _natural_key(names[k])))
    return np.array(order + [k for k, t in enumerate(names) if t == MISSING], dtype=np.int64)


def levels(values: np.ndarray) -> tuple[np.ndarray, list] | None:
    """(codes, levels) for a categorical column, None for a continuous one; levels in
    display order (:func:`_order`; numbers ascending)."""
    if values.dtype == object:
        text = np.array([MISSING if v is None else str(v) for v in values])
        lv, codes = np.unique(text, return_inverse=True)
        order = _order(lv, np.bincount(codes, minlength=len(lv)))
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        return rank[codes], [str(lv[k]) for k in order]
    finite = np.isfinite(values)
    lv = np.unique(values[finite])
    if len(lv) > MAX_PRIOR_LEVELS:
        return None
    codes = np.searchsorted(lv, np.where(finite, values, lv[0] if len(lv) else 0))
    return codes, [f"{v:g}" for v in lv]


def prior_choices(labels: Sequence[str], features: Sequence[str]) -> list[str]:
    """What the prior box offers: every label column, then every feature that is not a
    one-hot ``column=level`` of a label (a numeric feature is made a label, binned into
    quantiles if it has many values, when it is factored out)."""
    out = list(labels)
    have = set(out)
    for f in features:
        if f not in have and f.split("=")[0] not in have:
            out.append(f)
            have.add(f)
    return out


def _names(items: Sequence[str], shown: int = 8) -> str:
    esc = [html.escape(str(n)) for n in items]
    if len(esc) <= shown:
        return ", ".join(esc) or "none"
    return (f"<details><summary>{', '.join(esc[:shown])}, … ({len(esc)})</summary>"
            f"{', '.join(esc)}</details>")


def columns_html(features: Sequence[str], labels: Sequence[str]) -> str:
    """Which columns the map and the ranking use (features) and which describe the points
    (labels)."""
    nf, nl = len(features), len(labels)
    return (f"<b>{nf} feature{'s' if nf != 1 else ''}</b> (the map and the ranking): "
            f"{_names(features)}<br><b>{nl} label{'s' if nl != 1 else ''}</b> (colour, "
            f"marker, hover; any column can be a prior): {_names(labels)}")


def progress_html(iteration: int, total: int | None, kl: float | None,
                  phase: str | None = None, seconds: float | None = None,
                  unit: str = "iteration") -> str:
    """A progress bar with "iteration i / total, KL …" (``unit``: "epoch" for the graph
    methods), or, before the first one (``phase``: the affinities being built, a graph
    method that reports none), the phase and the seconds elapsed."""
    extra = "" if kl is None else f", KL {kl:.4f}"
    clock = "" if seconds is None else f" ({seconds:.{1 if seconds < 10 else 0}f} s)"
    if iteration == 0 and phase:
        pct, text = 0.0, f"{html.escape(phase)} …{clock}"
    else:
        pct = 100.0 * iteration / max(total or iteration, 1)
        text = f"{unit} {iteration} / {total if total else '?'}{extra}{clock}"
    return (f'<div style="width:100%;max-width:320px;border:1px solid #999;height:10px">'
            f'<div style="width:{pct:.0f}%;background:#3a7;height:10px"></div></div>'
            f"{text}")


# The legend table grows with its levels up to this many rows, so that a colour column
# of a few types (cell types, batches) shows whole without a scroll bar; beyond it the
# table scrolls, so that the Cluster controls under it stay on a laptop's screen.
LEGEND_ROWS = 10
ROW_HEIGHT = 25     # DataTable's row height (BokehJS's default, set explicitly here)
HEADER_HEIGHT = 32  # its header row and borders, with a few pixels to spare


def legend_height(k: int) -> int:
    """Pixel height of the legend table.

    Parameters
    ----------
    k : int
        Levels in the legend.

    Returns
    -------
    int
        Room for every row up to :data:`LEGEND_ROWS` (then the table scrolls), and for
        one row in an empty legend.
    """
    return HEADER_HEIGHT + ROW_HEIGHT * min(max(k, 1), LEGEND_ROWS)


def choice_options(names: Sequence[str]) -> list:
    """Options of a MultiChoice that show every name as text.

    Its list (Choices.js, inside BokehJS) writes labels as HTML, so a column name holding
    markup would be drawn (or run) as markup.

    Parameters
    ----------
    names : sequence of str

    Returns
    -------
    list
        Each name as is, or as (name, escaped label) where escaping changes it.
    """
    return [n if html.escape(n) == n else (n, html.escape(n)) for n in names]


def legend_table():
    """(source, DataTable) of the colour legend: a swatch, the level, its count."""
    from bokeh.models import ColumnDataSource, DataTable, HTMLTemplateFormatter, TableColumn

    source = ColumnDataSource({"color": [], "level": [], "count": []}, name="legend")
    # a level too long for its cell is cut there; the cell's tooltip holds all of it
    swatch = HTMLTemplateFormatter(
        template='<span title="<%- value %>"><span style="color:<%= color %>">&#9679;</span> '
                 '<%- value %></span>')
    # not reorderable: dragging columns needs jquery-ui, which BokehJS does not ship (it
    # logs "jquery-ui is required" for every table that asks for it)
    return source, DataTable(source=source, name="legend_table", height=legend_height(0),
                             width=240, index_position=None, reorderable=False,
                             row_height=ROW_HEIGHT, columns=[
                                 TableColumn(field="level", title="level (click: select)",
                                             formatter=swatch),
                                 TableColumn(field="count", title="points", width=60)])


def ranking_columns(r) -> dict[str, list]:
    """The ranking table's columns for the ranking ``r`` (None: empty)."""
    if r is None:
        return {"rank": [], "feature": [], "weight": [], "mean_difference": []}
    return {"rank": list(range(1, len(r.feature_names) + 1)),
            "feature": list(r.feature_names),
            "weight": [float(w) for w in r.weights],
            "mean_difference": [float(m) for m in r.mean_difference]}


def ranking_table():
    """(source, DataTable) of the ranking, empty."""
    from bokeh.models import (
        ColumnDataSource,
        DataTable,
        HTMLTemplateFormatter,
        NumberFormatter,
        TableColumn,
    )

    source = ColumnDataSource(ranking_columns(None), name="ranking_source")
    fmt = NumberFormatter(format="+0.000")
    # a long feature name is cut in its cell; the tooltip holds all of it
    name = HTMLTemplateFormatter(template='<span title="<%- value %>"><%- value %></span>')
    return source, DataTable(source=source, name="ranking", height=260, width=330,
                             index_position=None, reorderable=False, columns=[
                                 TableColumn(field="rank", title="#", width=30),
                                 TableColumn(field="feature", title="feature", width=110,
                                             formatter=name),
                                 TableColumn(field="weight", title="weight", formatter=fmt,
                                             width=70),
                                 TableColumn(field="mean_difference", title="Δmean (sd)",
                                             formatter=fmt, width=80)])


def ranking_headline(r) -> str:
    """How many points the ranking ``r`` separates, how well, and its top feature."""
    auc = "n/a" if not np.isfinite(r.auc) else f"{r.auc:.3f}"
    return (f"<b>{r.n_selected}</b> of {r.n_total} points selected; separation "
            f"(cross-validated ROC AUC) <b>{auc}</b>; top: <b>{html.escape(r.top)}</b>")

"""Per-point columns as the page sends them (colour levels, palettes, coordinates), the
page's two tables and its small HTML readouts (which columns are features, progress)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from .session import MAX_PRIOR_LEVELS

__all__ = ["levels", "palette", "xy", "columns_html", "progress_html", "prior_choices",
           "legend_table", "ranking_table", "ranking_columns", "ranking_headline"]


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


def levels(values: np.ndarray) -> tuple[np.ndarray, list] | None:
    """(codes, levels) for a categorical column, None for a continuous one."""
    if values.dtype == object:
        text = np.array(["(missing)" if v is None else str(v) for v in values])
        lv, codes = np.unique(text, return_inverse=True)
        return codes, list(lv)
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


def progress_html(iteration: int, total: int, kl: float | None) -> str:
    """A progress bar with "iteration i / total, KL …"."""
    pct = 100.0 * iteration / max(total, 1)
    extra = "" if kl is None else f", KL {kl:.4f}"
    return (f'<div style="width:320px;border:1px solid #999;height:10px">'
            f'<div style="width:{pct:.0f}%;background:#3a7;height:10px"></div></div>'
            f"iteration {iteration} / {total}{extra}")


def legend_table():
    """(source, DataTable) of the colour legend: a swatch, the level, its count."""
    from bokeh.models import ColumnDataSource, DataTable, HTMLTemplateFormatter, TableColumn

    source = ColumnDataSource({"color": [], "level": [], "count": []}, name="legend")
    swatch = HTMLTemplateFormatter(
        template='<span style="color:<%= color %>">&#9679;</span> <%= value %>')
    return source, DataTable(source=source, name="legend_table", height=160, width=240,
                             index_position=None, columns=[
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
    from bokeh.models import ColumnDataSource, DataTable, NumberFormatter, TableColumn

    source = ColumnDataSource(ranking_columns(None), name="ranking_source")
    fmt = NumberFormatter(format="+0.000")
    return source, DataTable(source=source, name="ranking", height=260, width=330,
                             index_position=None, columns=[
                                 TableColumn(field="rank", title="#", width=30),
                                 TableColumn(field="feature", title="feature"),
                                 TableColumn(field="weight", title="weight", formatter=fmt,
                                             width=70),
                                 TableColumn(field="mean_difference", title="Δmean (sd)",
                                             formatter=fmt, width=80)])


def ranking_headline(r) -> str:
    """How many points the ranking ``r`` separates, how well, and its top feature."""
    auc = "n/a" if not np.isfinite(r.auc) else f"{r.auc:.3f}"
    return (f"<b>{r.n_selected}</b> of {r.n_total} points selected; separation "
            f"(cross-validated ROC AUC) <b>{auc}</b>; top: <b>{html.escape(r.top)}</b>")

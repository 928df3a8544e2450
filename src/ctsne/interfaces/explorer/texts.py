"""The page's words: its title line, the short help panel and the marker legend."""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["title_html", "help_html", "EXPORT_HELP", "marker_legend_html",
           "MARKER_SYMBOLS"]

# What each Bokeh marker looks like, in text (the marker legend)
MARKER_SYMBOLS = {"circle": "●", "square": "■", "triangle": "▲", "diamond": "◆",
                  "inverted_triangle": "▼", "star": "★", "hex": "⬢", "plus": "✚"}


def title_html(n: int, p: int) -> str:
    """The page's heading: what it is and what it shows."""
    return (f'<span style="font-size:1.25em;font-weight:bold">ctsne explore</span>'
            f'&nbsp; <span style="color:#555">{n:,} points × {p} features · select, rank, '
            "factor out, look again</span>")


# What each export button writes, in the help panel's words (only the buttons shown).
EXPORT_HELP = {
    "csv": "CSV (the shown map as ctsne1/ctsne2, every step, the labels)",
    "parquet": "Parquet (the same table)",
    "png": "PNG",
    "svg": "SVG (the shown map beside its parent)",
    "json": "JSON (the session: reopen it with <code>ctsne explore --session</code>)",
}

# The help opens as a panel over the page (positioned, with a shadow), not in the page's
# flow: in the flow it pushed every control down by its height, and on a laptop screen
# the Cluster button under the legend went below the window's bottom edge.
_HELP_PANEL = ("position:absolute;z-index:20;max-width:720px;margin-top:4px;"
               "padding:6px 12px;background:#fff;border:1px solid #bbb;border-radius:4px;"
               "box-shadow:0 3px 12px rgba(0,0,0,0.25);font-size:0.92em")


def help_html(exports: Sequence[str]) -> str:
    """The help panel: closed, a "Help" line to click; open, a panel over the page.

    Parameters
    ----------
    exports : sequence of str
        The export kinds the page has buttons for (as
        :func:`~ctsne.interfaces.explorer.controller.available_exports` gives them):
        the help names these and no others.

    Returns
    -------
    str
        HTML for a Div.
    """
    known = [EXPORT_HELP[k] for k in exports if k in EXPORT_HELP]
    listed = ", ".join(known) if known else "none in this installation"
    return f"""<details><summary style="cursor:pointer"><b>Help</b></summary>
<div style="{_HELP_PANEL}">
<ol style="margin:4px 0;padding-left:18px">
<li><b>Look</b> at the map. Colour and marker by any column (left); hover shows the point
nearest the cursor.</li>
<li><b>Select</b> a group: box or lasso tool (toolbar above each map; Shift adds to the
selection), a click on a legend row, or <i>Cluster</i> and then a legend row.
Both maps share the selection.</li>
<li><b>Read</b> the ranking (right): the features that set the selection apart, with
the separation (cross-validated ROC AUC).</li>
<li><b>Factor out</b>: put a column, the selection or the clustering into the prior,
choose β' (smaller removes more) and the method, press <i>Factor out</i>. The new map
appears on the right, its parent on the left; History goes back to any step.</li>
</ol>
Toolbar: pan, wheel zoom, box select, lasso select, tap (click a point), reset (frame the
map again). Exports under the maps: {listed}; each downloads in the browser and is also
written to the output folder. The page's address keeps the colour, marker and step shown,
so a reload (or a bookmark) opens the same view. Click <b>Help</b> again to close this.
</div></details>"""


def marker_legend_html(column: str, levels: Sequence[str], markers: Sequence[str]) -> str:
    """Which marker stands for which level of ``column`` (empty without a marker column)."""
    if not levels:
        return ""
    # each item on one line while it fits the panel, broken anywhere when it does not
    # (the symbol held to its level by a no-break space)
    items = "".join(f'<span style="display:inline-block;max-width:100%;margin-right:8px;'
                    f'overflow-wrap:anywhere">'
                    f"{MARKER_SYMBOLS.get(m, '?')}&nbsp;{html.escape(str(v))}</span> "
                    for v, m in zip(levels, markers, strict=False))
    return f"<b>Markers</b> ({html.escape(column)}): {items}"

"""The page's words: its title line, the short help panel and the marker legend."""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["title_html", "HELP_HTML", "marker_legend_html", "MARKER_SYMBOLS"]

# What each Bokeh marker looks like, in text (the marker legend)
MARKER_SYMBOLS = {"circle": "●", "square": "■", "triangle": "▲", "diamond": "◆",
                  "inverted_triangle": "▼", "star": "★", "hex": "⬢", "plus": "✚"}


def title_html(n: int, p: int) -> str:
    """The page's heading: what it is and what it shows."""
    return (f'<span style="font-size:1.25em;font-weight:bold">ctsne explore</span>'
            f'&nbsp; <span style="color:#555">{n:,} points × {p} features · select, rank, '
            "factor out, look again</span>")


HELP_HTML = """<details><summary style="cursor:pointer"><b>Help</b></summary>
<div style="max-width:720px;font-size:0.92em">
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
map again). Exports (CSV with the shown map as ctsne1/ctsne2, Parquet, PNG, SVG, the
session as JSON) download in the browser and are also written to the output folder.
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

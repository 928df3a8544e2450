"""The two maps of the page: Bokeh figures, their hover and framing, and how the browser
draws them (WebGL or the 2-D canvas).

Both maps draw from one ColumnDataSource (columns ``xa, ya`` for the left map, ``xb, yb``
for the right), so a selection made in either is the selection of both. The JavaScript
snippets here run in the browser: framing a new map, keeping one point (the nearest) in
the hover tooltip, and telling a hardware WebGL renderer from a software one.
"""

from __future__ import annotations

__all__ = ["BACKENDS", "TOOLS", "make_map", "backend_probe", "square_styles", "REFRAME_JS",
           "NEAREST_JS"]

# "auto": start with the 2-D canvas and switch to WebGL where the browser reports a
# hardware renderer (BACKEND_JS); the page's switch can change it either way.
BACKENDS = ("auto", "webgl", "canvas")
TOOLS = "pan,wheel_zoom,box_select,lasso_select,tap,reset"
POINT_SIZE = 4

# The maps are square: drawn at equal scale, a tall narrow frame (350 × 643 px beside a
# second map at 1280 × 800) left most of its height empty. Each takes its share of the
# centre column's width (half, with two maps) unless the column's height, less the
# titles, toolbar and History line, is shorter. The centre column is a CSS size
# container (its size comes from the window, never from the maps), so ``cqw``/``cqh``
# are its width and height, also inside the maps' shadow roots; BokehJS fits its canvas
# to the figure's element. Pixels measured on the page (BokehJS 3.9):
MAP_GAP = 10         # between the two maps
AROUND_MAPS = 150    # the maps' titles (two lines), toolbar, and the History row
TOOLBAR_EXTRA = 25   # the toolbar above the frame, less the frame's side borders


def square_styles(maps: int) -> dict:
    """Inline CSS that makes a map's figure square and as large as fits.

    Parameters
    ----------
    maps : int
        How many maps share the centre column's width (1 or 2).

    Returns
    -------
    dict
        ``width``, ``height`` (CSS lengths in the centre column's ``cqw``/``cqh``) and
        ``flex: none``: inline styles win over the flex rules BokehJS gives a stretching
        child, which would otherwise stretch the height again.
    """
    share = "100cqw" if maps <= 1 else f"calc((100cqw - {MAP_GAP * (maps - 1)}px) / {maps})"
    side = f"min({share}, calc(100cqh - {AROUND_MAPS}px))"
    return {"width": side, "height": f"calc({side} + {TOOLBAR_EXTRA}px)", "flex": "none"}

# Run in the browser when the server bumps a map's ``tags``: frame the view to the points
# again (what the Reset tool does to the ranges), also after the user zoomed or panned,
# when DataRange1d stops following the data.
REFRAME_JS = "const v = Bokeh.index.find_one(cb_obj); if (v != null) v.reset_range();"

# A hover filter: of the points under the cursor keep only the nearest (in screen
# pixels; ties by lowest index), so a dense map shows one tooltip. Called once per hit
# point, it finds the nearest on the first call of each cursor position and keeps it.
NEAREST_JS = """
export default (args, tool, {vars}) => {
  const g = vars.glyph_view, sx = vars.sx, sy = vars.sy;
  const memo = tool._ctsne_nearest;
  if (memo == null || memo.sx !== sx || memo.sy !== sy || memo.g !== g ||
      memo.indices !== vars.indices) {
    let best = -1, bd = Infinity;
    for (const i of vars.indices) {
      const dx = g.sx[i] - sx, dy = g.sy[i] - sy, d = dx * dx + dy * dy;
      if (d < bd || (d === bd && i < best)) { bd = d; best = i; }
    }
    tool._ctsne_nearest = {sx, sy, g, indices: vars.indices, best};
  }
  return tool._ctsne_nearest.best === vars.index;
}
"""

# On page load: which WebGL renderer the browser has. A software one draws large scatters
# slower than the 2-D canvas, so "auto" keeps the canvas there. The renderer's name goes
# to the ``backend`` widget's title, so that the page says why.
BACKEND_JS = """
let name = "none";
try {
  const c = document.createElement("canvas");
  const gl = c.getContext("webgl2") || c.getContext("webgl");
  if (gl) {
    const info = gl.getExtension("WEBGL_debug_renderer_info");
    name = String(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL)
                       : gl.getParameter(gl.RENDERER));
  }
} catch (e) { name = "none"; }
const software = name === "none" ||
  /swiftshader|llvmpipe|softpipe|software|basic render|microsoft basic|mesa offscreen/i
    .test(name);
backend.title = "Drawing (WebGL " + (software ? "in software" : "on the GPU") + ")";
backend.description = "WebGL renderer: " + name;
if (auto && !software) backend.value = "webgl";
"""


def backend_probe(doc, backend_widget, auto: bool) -> None:
    """Run :data:`BACKEND_JS` once the page is loaded in the browser: it names the WebGL
    renderer on ``backend_widget`` and, with ``auto``, switches a hardware one to WebGL."""
    from bokeh.events import DocumentReady
    from bokeh.models import CustomJS

    doc.js_on_event(DocumentReady, CustomJS(args={"backend": backend_widget, "auto": auto},
                                            code=BACKEND_JS))


def make_map(source, mapper, x: str, y: str, name: str, backend: str, on_geometry):
    """A stretching, equal-scale map of ``source``'s columns ``x``, ``y`` (figure named
    ``fig_{name}``, renderer ``name``) drawn with ``backend`` ("webgl" or "canvas"),
    coloured through ``mapper`` from column ``c``, with nearest-point hover;
    ``on_geometry(event)`` gets its box and lasso outlines. Returns (figure, renderer).
    """
    from bokeh.events import SelectionGeometry
    from bokeh.models import CustomJS, HoverTool
    from bokeh.plotting import figure

    # match_aspect: the data ranges keep one unit the same length along x and y, whatever
    # the frame's shape; the title is a Div above the map (a long one would push the tools
    # into an overflow menu), so the toolbar has its line to itself.
    fig = figure(output_backend=backend, name=f"fig_{name}", tools=TOOLS,
                 active_scroll="wheel_zoom", toolbar_location="above", match_aspect=True,
                 sizing_mode="stretch_both", min_width=200, min_height=200)
    fig.js_on_change("tags", CustomJS(code=REFRAME_JS))
    r = fig.scatter(x, y, source=source, size=POINT_SIZE, name=name, line_color=None,
                    fill_color={"field": "c", "transform": mapper}, fill_alpha=0.8,
                    nonselection_fill_alpha=0.08, selection_fill_alpha=1.0)
    fig.add_tools(HoverTool(renderers=[r], tooltips=[("id", "@id")], name=f"hover_{name}",
                            description="Hover: the point nearest the cursor",
                            filters={"@id": CustomJS(code=NEAREST_JS)}, limit=1,
                            visible=False))  # always on: its button would overflow
    # auto-ranged on the points only: by default a DataRange1d also spans the box-select
    # overlay's last box, which kept the next map in a view that included the old box
    fig.x_range.renderers = fig.y_range.renderers = [r]
    fig.on_event(SelectionGeometry, on_geometry)
    fig.xaxis.visible = fig.yaxis.visible = False
    fig.grid.visible = False
    fig.toolbar.logo = None
    return fig, r

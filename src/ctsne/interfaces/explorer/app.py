"""The page: a title and help line, the colour/marker/cluster panel, two linked maps with
History and exports under them, and the ranking/factor-out panel.

The maps (:mod:`.maps`) draw from ONE ColumnDataSource, so a selection made in either is
the selection of both; the left map shows the parent of the step on the right. Selection
and ranking are in :mod:`.selection`, runs in :mod:`.runs`, the checks of what the
browser sends (and the view kept in the page's address) in :mod:`.inputs`; slow work
(ranking, every map, the first one included) runs in threads, and a periodic callback
moves its results into the document. The page stretches with the window: the maps,
square, take the width between two fixed-width side panels (:func:`.maps.square_styles`),
and the help opens over the page. Named models (``map_a``, ``map_b``, ``points``,
``ranking``, ``factor_out``, …) are what the browser tests look up.
"""

from __future__ import annotations

import base64
import html
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...prior import DEFAULT_BETA
from .columns import (
    choice_options,
    columns_html,
    legend_height,
    legend_table,
    prior_choices,
    ranking_table,
)
from .columns import levels as _levels
from .columns import palette as _palette
from .columns import xy as _xy
from .controller import MEDIA_TYPES, Explorer, available_exports
from .inputs import NONE, InputsMixin, requested_view
from .maps import BACKENDS, backend_probe, make_map, square_styles
from .methods import METHODS
from .runs import RunMixin
from .selection import PROMPT, SelectionMixin
from .texts import help_html, marker_legend_html, title_html

__all__ = ["make_document", "BACKENDS"]

MARKERS = ["circle", "square", "triangle", "diamond", "inverted_triangle", "star", "hex",
           "plus"]
POLL_MS = 250
HOVER_DEFAULT_MAX = 200_000
# Above this many points the browser draws a fixed random subsample (every row still counts:
# box and lasso selections are computed server-side on all points from their geometry).
DISPLAY_MAX = 200_000
SIDE_WIDTH = 250    # the colour/marker panel
PANEL_WIDTH = 330   # the ranking/factor-out panel
# Save the bytes the server put into the ``download`` source as a file of the browser.
DOWNLOAD_JS = """
const d = cb_obj.data;
if (!d.name || d.name.length === 0) return;
const bytes = Uint8Array.from(atob(d.b64[0]), ch => ch.charCodeAt(0));
const a = document.createElement("a");
a.href = URL.createObjectURL(new Blob([bytes], {type: d.type[0]}));
a.download = d.name[0];
document.body.appendChild(a); a.click(); a.remove();
setTimeout(() => URL.revokeObjectURL(a.href), 60000);
"""


# Text in the side panels breaks anywhere: a long column name, level or feature is one
# word to the browser, which would run past the panel's edge (hidden there, or a
# horizontal scroll bar) instead of wrapping.
WRAP = {"overflow-wrap": "anywhere"}
# the same for a Checkbox's label, which lives in the widget's shadow root
WRAP_LABEL = ":host { overflow-wrap: anywhere; } label { white-space: normal; }"


def _title_style() -> dict:
    # wraps instead of running under the toolbar; two lines kept for both maps, so that
    # their frames line up
    return {"font-weight": "bold", "font-size": "0.95em", "min-height": "2.6em",
            "line-height": "1.3em", "overflow-wrap": "anywhere"}


class _Page(InputsMixin, SelectionMixin, RunMixin):
    """One browser tab's document, driving the shared :class:`Explorer`."""

    def __init__(self, doc, explorer: Explorer, backend: str = "auto",
                 max_points: int = DISPLAY_MAX, view: dict | None = None):
        from bokeh.models import (
            Button,
            Checkbox,
            ColumnDataSource,
            CustomJS,
            Div,
            LinearColorMapper,
            MultiChoice,
            Select,
            Spinner,
        )

        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.doc, self.ex, self.s = doc, explorer, explorer.session
        self.pool = ThreadPoolExecutor(1)
        self.rank_future = None
        self.step_b = max(len(self.s.steps) - 1, 0)
        self.columns = list(self.s.labels)
        self.shown = None  # rows drawn, when a subsample
        if self.s.n > max_points:
            rng = np.random.default_rng(0)
            self.shown = np.sort(rng.choice(self.s.n, max_points, replace=False))
        self.selected_rows = np.zeros(0, dtype=np.int64)
        self.maps: dict[str, np.ndarray] = {}
        self._setting = self._legend_setting = False
        self.job = None
        self._shown_it = -1
        self.clusters = None
        ids = self._d(self.s.ids)
        n = len(ids)
        if not np.issubdtype(ids.dtype, np.number):  # numbers go to the browser as binary
            ids = np.array([str(i) for i in ids])
        zero = np.zeros(n, dtype=np.float32)
        self.source = ColumnDataSource({"xa": zero, "ya": zero, "xb": zero, "yb": zero,
                                        "c": zero, "id": ids}, name="points")
        self.mapper = LinearColorMapper(palette=_palette(1), low=0, high=1)
        self.title_a = Div(text="", name="title_a", sizing_mode="stretch_width",
                           styles=_title_style())
        self.title_b = Div(text="", name="title_b", sizing_mode="stretch_width",
                           styles=_title_style())
        self.backend = Select(title="Drawing", value="canvas" if backend == "auto" else backend,
                              options=[("canvas", "2-D canvas"), ("webgl", "WebGL")],
                              name="backend", width=190)
        self._build_maps(self.backend.value)

        self.heading = Div(text=title_html(self.s.n, self.s.X.shape[1]), name="heading")
        exports = available_exports()
        # the help names the exports this page has buttons for (Parquet only with pyarrow)
        self.help = Div(text=help_html(exports), name="help", sizing_mode="stretch_width")
        self.columns_info = Div(name="columns", sizing_mode="stretch_width",
                                styles={"overflow-wrap": "anywhere"}, text=columns_html(
            self.s.feature_names, [c for c in self.columns if c not in self.s.derived]))
        opts = [NONE, *self.columns, *self.s.feature_names]
        first = next((c for c in self.columns if _levels(self.s.labels[c]) is not None), NONE)
        wide = {"sizing_mode": "stretch_width"}
        text = {**wide, "styles": WRAP}
        self.color = Select(title="Colour by", options=list(dict.fromkeys(opts)), value=first,
                            name="color", **wide)
        self.marker = Select(title="Marker by", value=NONE, name="marker",
                             options=[NONE, *self.columns], **wide)
        # hidden while empty: an empty Div still takes a line of the left panel
        self.marker_legend = Div(text="", name="marker_legend", visible=False, **text)
        # each hover column travels to the browser: none by default on large data
        hover = self.columns[:3] if self.s.n <= HOVER_DEFAULT_MAX else []
        self.hover_cols = MultiChoice(title="Hover shows", options=choice_options(self.columns),
                                      value=hover, name="hover_columns", **wide)
        self.legend_source, self.legend = legend_table()  # its height follows its levels
        self.legend.sizing_mode = "stretch_width"
        self.cluster_method = Select(title="Cluster the map", value="kmeans", width=110,
                                     options=["kmeans", "dbscan"], name="cluster_method")
        self.cluster_param = Spinner(title="k / eps (DBSCAN)", value=8, low=0.01,
                                     step=1, name="cluster_param", width=110)
        self.cluster_btn = Button(label="Cluster", name="cluster")
        self.rank_source, self.rank_table = ranking_table()
        self.rank_table.update(sizing_mode="stretch_width", height=210)
        self.rank_info = Div(text=PROMPT, name="ranking_info", **text)
        # the prior of the next map: the shown map's prior (if kept) and the box's columns
        self.keep_prior = Checkbox(label="", active=True, name="keep_prior", visible=False,
                                   stylesheets=[WRAP_LABEL], **wide)
        self.prior = MultiChoice(title="Add to the prior (factored out of the next map)",
                                 options=choice_options(self.columns), value=[],
                                 name="prior", **wide)
        self.next_prior = Div(text="", name="next_prior", **text)
        self.add_sel = Button(label="+ selection", name="add_selection")
        self.add_clu = Button(label="+ clusters", name="add_clusters")
        self.add_top = Button(label="+ top feature", name="add_top")
        self.beta = Spinner(title="β' (different-class pairs)", value=DEFAULT_BETA,
                            low=1e-4, step=0.01, name="beta", width=150)
        self.method = Select(title="Method", value=self.ex.method, name="method", width=160,
                             options=[(k, v[1]) for k, v in METHODS.items()])
        self.go = Button(label="Factor out", button_type="primary", name="factor_out")
        self.stop = Button(label="Cancel", name="cancel", disabled=True)
        self.progress = Div(text="", name="progress", **text)
        self.history = Select(title="History: the step shown (its parent beside it)",
                              options=[], name="history", sizing_mode="stretch_width",
                              min_width=160)
        # only what this installation can write; sized to their labels
        self.exports = {k: Button(label=k.upper(), name=f"export_{k}") for k in exports}
        # "n" counts the downloads: the same file twice is still a change the browser sees
        self.download = ColumnDataSource({"name": [], "b64": [], "type": [], "n": []},
                                         name="download")
        self.download.js_on_change("data", CustomJS(code=DOWNLOAD_JS))
        self._downloads = 0  # counted here: the browser may write anything into "n"
        self.status = Div(text="", name="status", **text)
        self._apply_view(view or {})
        self._wire()
        if self.s.steps:
            self._show_step(self.step_b)
        else:  # served while the first map is computed
            self._refresh_options()
            self._show_left(False)
            self._set_title("b", "computing the first map …")
            if self.ex.job is not None:
                self._follow(self.ex.job)
            self._say_next_prior()
        self._set_color(self.color.value)
        if self.marker.value != NONE:  # asked for by the page's address
            self._set_marker(self.marker.value)
        self._set_hover()
        self._layout()
        backend_probe(doc, self.backend, auto=backend == "auto")
        doc.title = "ctsne explore"
        doc.add_periodic_callback(self._poll, POLL_MS)

    def _d(self, values: np.ndarray) -> np.ndarray:
        """The drawn rows of a per-point array."""
        return values if self.shown is None else values[self.shown]

    # ------------------------------------------------------------------ building
    def _build_maps(self, backend: str):
        """(Re)build both maps drawn with ``backend`` (a figure cannot change it once
        drawn); the selection tools, hover and framing come with them."""
        self.fig_a, self.r_a = make_map(self.source, self.mapper, "xa", "ya", "map_a",
                                        backend,
                                        lambda e: self._guarded(self._geometry, e, "a"))
        self.fig_b, self.r_b = make_map(self.source, self.mapper, "xb", "yb", "map_b",
                                        backend,
                                        lambda e: self._guarded(self._geometry, e, "b"))
        from bokeh.models import ColorBar

        self.colorbar = ColorBar(color_mapper=self.mapper, width=10, visible=False)
        self.fig_b.add_layout(self.colorbar, "right")

    def _set_backend(self, backend: str):
        """The page's switch: new maps drawn with ``backend``, in place of the old ones."""
        old = (self.fig_a, self.fig_b)
        for fig in old:  # the detached figures lose their names (see _show_ranking)
            fig.name = None
            for r in fig.renderers:
                r.name = None
        visible = self.box_a.visible
        colorbar = (self.colorbar.visible, self.colorbar.title)
        self._build_maps(backend)
        self.colorbar.update(visible=colorbar[0], title=colorbar[1])
        self.box_a.children = [self._no_map]  # _show_left puts the new map in if shown
        self.box_b.children = [self.title_b, self.fig_b]
        self._show_left(visible)
        self._set_marker(self.marker.value)
        self._set_hover()
        self._say(f"maps drawn with {'WebGL' if backend == 'webgl' else 'the 2-D canvas'}")

    def _layout(self):
        from bokeh.layouts import column, row

        fit = {"sizing_mode": "stretch_both"}
        wide = {"sizing_mode": "stretch_width"}
        from bokeh.models import Spacer

        self._no_map = Spacer(width=0, height=0)
        # the maps' boxes are as tall as their square maps (square_styles), so that
        # History and the exports come right under the maps
        self.box_a = column(self._no_map, name="box_a", **wide)
        self.box_b = column(self.title_b, self.fig_b, name="box_b", **wide)
        self._show_left(self.fig_a.visible)
        maps = row(self.box_a, self.box_b, spacing=0, **wide)
        under = row(self.history, *self.exports.values(), **wide)
        # a size container: the maps size themselves from its width and height
        centre = column(maps, under, name="centre", styles={"container-type": "size"},
                        **fit)
        left = column(self.columns_info, self.color, self.marker, self.marker_legend,
                      self.hover_cols, self.legend,
                      row(self.cluster_method, self.cluster_param),
                      self.cluster_btn, width=SIDE_WIDTH,
                      sizing_mode="stretch_height", name="left_panel",
                      styles={"overflow-y": "auto", "overflow-x": "hidden"})
        right = column(self.rank_info, self.rank_table, self.keep_prior, self.prior,
                       row(self.add_sel, self.add_clu, self.add_top), row(self.beta,
                                                                           self.method),
                       self.next_prior, row(self.go, self.stop), self.progress, self.status,
                       width=PANEL_WIDTH, sizing_mode="stretch_height", name="right_panel",
                       styles={"overflow-y": "auto", "overflow-x": "hidden"})
        header = row(self.heading, self.help, self.backend, sizing_mode="stretch_width")
        self.doc.add_root(column(header, row(left, centre, right, **fit), name="page",
                                 **fit))
        self.doc.add_root(self.download)  # drawn by nothing: a root, so that it syncs

    def _say(self, text: str, error: bool = False):
        colour = "#b00" if error else "#333"
        self.status.text = f'<span style="color:{colour}">{html.escape(text)}</span>'

    # ------------------------------------------------------------------ the maps
    def _set_title(self, which: str, text: str):
        div = self.title_a if which == "a" else self.title_b
        div.text = html.escape(text)

    def _show_left(self, visible: bool):
        """Show or hide the left map (the parent of the step shown). A hidden map leaves
        the layout, not only the view: a hidden figure in the page has no frame, so
        BokehJS cannot range it and logs "could not set initial ranges" at every
        change of the shared source."""
        self.fig_a.visible = visible
        for fig in (self.fig_a, self.fig_b):
            fig.styles = square_styles(2 if visible else 1)
        if hasattr(self, "box_a"):
            self.box_a.visible = visible
            # a hidden box holds an empty Spacer: a layout without children is a warning
            children = [self.title_a, self.fig_a] if visible else [self._no_map]
            if list(self.box_a.children) != children:
                self.box_a.children = children

    def _refresh_options(self):
        self.columns = list(self.s.labels)
        self.prior.options = choice_options(prior_choices(self.columns, self.s.feature_names))
        self.marker.options = [NONE, *self.columns]
        self.hover_cols.options = choice_options(self.columns)
        self.color.options = list(dict.fromkeys([NONE, *self.columns, *self.s.feature_names]))
        self.history.options = [f"{k}: {st.title}" for k, st in enumerate(self.s.steps)]

    def _show_step(self, k: int):
        steps = self.s.steps
        self.step_b = k
        parent = steps[k].parent
        Yb = steps[k].embedding
        Ya = steps[parent].embedding if parent is not None else Yb
        self.maps = {"a": Ya, "b": Yb}
        self.source.data.update(_xy(self._d(Ya), "a") | _xy(self._d(Yb), "b"))
        self._reframe(self.fig_a, self.fig_b)
        self._show_left(parent is not None)
        self._set_title("a", f"{parent}: {steps[parent].title}" if parent is not None else "")
        self._set_title("b", f"{k}: {steps[k].title}")
        self._refresh_options()
        label = f"{k}: {steps[k].title}"
        if self.history.value != label:
            self.history.value = label
        # the box holds what the NEXT map adds; the shown map's prior is kept (or not) by
        # the checkbox, so nothing is carried over unseen
        prior = " & ".join(steps[k].prior)
        self.keep_prior.update(active=True, visible=bool(prior),
                               label=f"keep the prior of step {k}: {prior}")
        self.prior.value = []
        self._say_next_prior()
        # the step's own selection and its ranking (ranked again if it never was)
        self._select_rows(steps[k].selection, ranking=steps[k].ranking)

    def _reframe(self, *figs):
        """Frame the views of ``figs`` to their points in the browser (``REFRAME_JS``)."""
        for fig in figs:
            fig.tags = [int(fig.tags[0]) + 1 if fig.tags else 1]

    def _set_color(self, name: str):
        n = len(self.source.data["id"])
        # a row selected in the old legend would select a row of the new one
        self._clear_legend()
        self.legend_source.data = {"color": [], "level": [], "count": []}
        self.legend.height = legend_height(0)
        if name == NONE:
            self.mapper.update(palette=_palette(1), low=0, high=1)
            self.source.data["c"] = np.zeros(n, dtype=np.float32)
            self.colorbar.visible = False
            return
        if name in self.s.labels:
            values = self.s.labels[name]
        else:
            values = self.s.X[:, self.s.feature_names.index(name)]
        cat = _levels(values)
        if cat is None:
            lo, hi = np.nanpercentile(values, [1, 99])
            from bokeh.palettes import Viridis256

            self.mapper.update(palette=list(Viridis256), low=float(lo),
                               high=float(hi if hi > lo else lo + 1))
            self.source.data["c"] = np.asarray(self._d(values), dtype=np.float32)
            self.colorbar.update(visible=True, title=name)
            return
        codes, levels = cat
        pal = _palette(len(levels))
        self.mapper.update(palette=pal, low=-0.5, high=len(levels) - 0.5)
        self.source.data["c"] = self._d(codes).astype(np.float32)
        self.colorbar.visible = False
        self.legend_codes = (name, levels, codes)
        # every level in view (up to LEGEND_ROWS): a few types need no scrolling
        self.legend.height = legend_height(len(levels))
        self.legend_source.data = {"color": pal, "level": levels,
                                   "count": np.bincount(codes, minlength=len(levels)).tolist()}

    def _set_marker(self, name: str):
        from bokeh.transform import factor_mark

        if name == NONE:
            for r in (self.r_a, self.r_b):
                r.glyph.marker = "circle"
            self.marker_legend.update(text="", visible=False)
            return
        cat = _levels(self.s.labels[name])
        if cat is None or len(cat[1]) > len(MARKERS):
            self.marker.value = NONE
            self._say(f"{name!r} has more than {len(MARKERS)} values: too many for markers",
                      error=True)
            return
        codes, levels = cat
        self.source.data["m"] = np.array(levels, dtype=object)[self._d(codes)].astype(str)
        for r in (self.r_a, self.r_b):
            r.glyph.marker = factor_mark("m", MARKERS[:len(levels)], levels)
        self.marker_legend.update(text=marker_legend_html(name, levels, MARKERS[:len(levels)]),
                                  visible=True)

    def _set_hover(self):
        from bokeh.models import HoverTool

        for name in self.hover_cols.value:
            col = self._d(self.s.labels[name])
            self.source.data[f"h_{name}"] = (np.array(["" if v is None else str(v) for v in col])
                                             if col.dtype == object else col)
        tips = [("id", "@id"), *((c, f"@{{h_{c}}}") for c in self.hover_cols.value)]
        for fig in (self.fig_a, self.fig_b):
            for tool in fig.select(type=HoverTool):
                tool.tooltips = tips

    # ------------------------------------------------------------------ export
    def _export(self, kind: str):
        """Write the export into the output folder and hand it to the browser as a
        download (the ``download`` source; :data:`DOWNLOAD_JS` saves it)."""
        if not self.s.steps:
            self._say("wait for the first map", error=True)
            return
        name = self.color.value if self.color.value in self.s.labels else None
        try:
            path = self.ex.export(kind, self.step_b, name)
            data = path.read_bytes()
        except (ValueError, OSError, ImportError) as exc:
            self._say(str(exc), error=True)
            return
        self._downloads += 1
        self.download.data = {"name": [path.name], "type": [MEDIA_TYPES[kind]],
                              "b64": [base64.b64encode(data).decode("ascii")],
                              "n": [self._downloads]}
        self._say(f"downloaded {path.name} ({len(data):,} bytes; also in {path.parent})")


def make_document(explorer: Explorer, backend: str = "auto", max_points: int = DISPLAY_MAX):
    """A Bokeh ``modify_doc`` function serving ``explorer``; ``backend`` draws the maps
    with WebGL, the 2-D canvas, or ("auto") the canvas unless the browser has a hardware
    WebGL renderer; above ``max_points`` points a fixed random subsample of them is drawn."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")

    def modify(doc) -> None:
        _Page(doc, explorer, backend, max_points, view=requested_view(doc))

    return modify

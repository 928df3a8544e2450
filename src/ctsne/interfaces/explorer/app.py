"""The page: two linked maps, selection tools, the ranking table, factor-out, history.

Both maps draw from ONE ColumnDataSource (columns ``xa, ya`` for the left map, ``xb, yb``
for the right), so a selection made in either is the selection of both: Bokeh's linked
brushing. The left map shows the parent of the step on the right. Slow work (ranking,
ct-SNE) runs in threads; a periodic callback moves its results into the document.
Named models (``map_a``, ``map_b``, ``points``, ``ranking``, ``factor_out``, …) are what
the browser tests look up.
"""

from __future__ import annotations

import html
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...prior import DEFAULT_BETA
from .columns import (
    columns_html,
    legend_table,
    prior_choices,
    progress_html,
    ranking_columns,
    ranking_headline,
    ranking_table,
)
from .columns import levels as _levels
from .columns import palette as _palette
from .columns import xy as _xy
from .controller import Explorer

__all__ = ["make_document"]

NONE = "(none)"
MARKERS = ["circle", "square", "triangle", "diamond", "inverted_triangle", "star", "hex",
           "plus"]
POLL_MS = 250
BACKENDS = ("webgl", "canvas")
HOVER_DEFAULT_MAX = 200_000
# Above this many points the browser draws a fixed random subsample (every row still counts:
# box and lasso selections are computed server-side on all points from their geometry).
DISPLAY_MAX = 200_000
PROMPT = ("Select points (box, lasso, legend or cluster) to rank the features that set "
          "them apart.")
# Run in the browser when the server bumps a map's ``tags``: frame the view to the points
# again (what the Reset tool does to the ranges), also after the user zoomed or panned,
# when DataRange1d stops following the data.
REFRAME_JS = "const v = Bokeh.index.find_one(cb_obj); if (v != null) v.reset_range();"


class _Page:
    """One browser tab's document, driving the shared :class:`Explorer`."""

    def __init__(self, doc, explorer: Explorer, backend: str = "webgl",
                 max_points: int = DISPLAY_MAX):
        from bokeh.models import (
            Button,
            Checkbox,
            ColumnDataSource,
            Div,
            LinearColorMapper,
            MultiChoice,
            Select,
            Spinner,
        )

        self.doc, self.ex, self.s = doc, explorer, explorer.session
        self.backend = backend
        self.pool = ThreadPoolExecutor(1)
        self.rank_future = None
        self.step_b = len(self.s.steps) - 1
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
        ids = self._d(self.s.ids)
        n = len(ids)
        if not np.issubdtype(ids.dtype, np.number):  # numbers go to the browser as binary
            ids = np.array([str(i) for i in ids])
        zero = np.zeros(n, dtype=np.float32)
        self.source = ColumnDataSource({"xa": zero, "ya": zero, "xb": zero, "yb": zero,
                                        "c": zero, "id": ids}, name="points")
        self.mapper = LinearColorMapper(palette=_palette(1), low=0, high=1)
        self.fig_a, self.r_a = self._figure("xa", "ya", "map_a")
        self.fig_b, self.r_b = self._figure("xb", "yb", "map_b")
        self.colorbar = self._colorbar()
        self.columns_info = Div(name="columns", width=250, text=columns_html(
            self.s.feature_names, [c for c in self.columns if c not in self.s.derived]))

        opts = [NONE, *self.columns, *self.s.feature_names]
        first = next((c for c in self.columns if _levels(self.s.labels[c]) is not None), NONE)
        self.color = Select(title="Colour by", options=list(dict.fromkeys(opts)), value=first,
                            name="color")
        self.marker = Select(title="Marker by", value=NONE, name="marker",
                             options=[NONE, *self.columns])
        # each hover column travels to the browser: none by default on large data
        hover = self.columns[:3] if self.s.n <= HOVER_DEFAULT_MAX else []
        self.hover_cols = MultiChoice(title="Hover shows", options=self.columns, value=hover,
                                      name="hover_columns")
        self.legend_source, self.legend = legend_table()
        self.cluster_method = Select(title="Cluster the map", value="kmeans",
                                     options=["kmeans", "dbscan"], name="cluster_method")
        self.cluster_param = Spinner(title="k (k-means) / eps (DBSCAN)", value=8, low=0.01,
                                     step=1, name="cluster_param", width=110)
        self.cluster_btn = Button(label="Cluster", name="cluster")
        self.rank_source, self.rank_table = ranking_table()
        self.rank_info = Div(text=PROMPT, name="ranking_info", width=330)
        # the prior of the next map: the shown map's prior (if kept) and the box's columns
        self.keep_prior = Checkbox(label="", active=True, name="keep_prior")
        self.prior = MultiChoice(title="Add to the prior (factored out of the next map)",
                                 options=self.columns, value=[], name="prior", width=330)
        self.next_prior = Div(text="", name="next_prior", width=330)
        self.add_sel = Button(label="+ selection as label", name="add_selection")
        self.add_top = Button(label="+ top-ranked column", name="add_top")
        self.add_clu = Button(label="+ clustering as label", name="add_clusters")
        self.beta = Spinner(title="β' (weight of pairs in different classes)",
                            value=DEFAULT_BETA, low=1e-4, step=0.01, name="beta", width=200)
        self.go = Button(label="Factor out", button_type="primary", name="factor_out")
        self.stop = Button(label="Cancel", name="cancel", disabled=True)
        self.progress = Div(text="", name="progress", width=330)
        self.history = Select(title="History (step shown on the right)", options=[],
                              name="history", width=330)
        # sized to their labels: a fixed width let "PARQUET" run under "PNG"
        self.exports = {k: Button(label=k.upper(), name=f"export_{k}")
                        for k in ("csv", "parquet", "png", "svg", "json")}
        self.status = Div(text="", name="status", width=330)
        self.clusters = None
        self._wire()
        self._show_step(self.step_b)
        self._set_color(self.color.value)
        self._set_hover()
        self._layout()
        doc.title = "ctsne explore"
        doc.add_periodic_callback(self._poll, POLL_MS)

    def _d(self, values: np.ndarray) -> np.ndarray:
        """The drawn rows of a per-point array."""
        return values if self.shown is None else values[self.shown]

    # ------------------------------------------------------------------ building
    def _figure(self, x: str, y: str, name: str):
        from bokeh.models import CustomJS, HoverTool
        from bokeh.plotting import figure

        # match_aspect: the data ranges keep one unit the same length along x and y
        fig = figure(width=470, height=470, output_backend=self.backend, name=f"fig_{name}",
                     tools="pan,wheel_zoom,box_select,lasso_select,tap,reset",
                     active_scroll="wheel_zoom", toolbar_location="above", match_aspect=True)
        fig.js_on_change("tags", CustomJS(code=REFRAME_JS))
        r = fig.scatter(x, y, source=self.source, size=4, name=name, line_color=None,
                        fill_color={"field": "c", "transform": self.mapper}, fill_alpha=0.8,
                        nonselection_fill_alpha=0.08, selection_fill_alpha=1.0)
        fig.add_tools(HoverTool(renderers=[r], tooltips=[("id", "@id")], name=f"hover_{name}"))
        from bokeh.events import SelectionGeometry

        fig.on_event(SelectionGeometry, lambda e, w=name[-1]: self._geometry(e, w))
        fig.xaxis.visible = fig.yaxis.visible = False
        fig.grid.visible = False
        return fig, r

    def _colorbar(self):
        from bokeh.models import ColorBar

        bar = ColorBar(color_mapper=self.mapper, width=10, visible=False)
        self.fig_b.add_layout(bar, "right")
        return bar

    def _layout(self):
        from bokeh.layouts import column, row

        ex = row(*self.exports.values())
        left = column(self.columns_info, self.color, self.marker, self.hover_cols, self.legend,
                      row(self.cluster_method, self.cluster_param), self.cluster_btn, width=260)
        right = column(self.rank_info, self.rank_table, self.keep_prior, self.prior,
                       row(self.add_sel, self.add_clu), self.add_top, self.beta,
                       self.next_prior, row(self.go, self.stop), self.progress, self.history,
                       ex, self.status)
        self.doc.add_root(row(left, self.fig_a, self.fig_b, right, name="page"))

    def _wire(self):
        self.source.selected.on_change("indices", lambda a, o, new: self._selected(new))
        self.color.on_change("value", lambda a, o, v: self._set_color(v))
        self.marker.on_change("value", lambda a, o, v: self._set_marker(v))
        self.hover_cols.on_change("value", lambda a, o, v: self._set_hover())
        for widget, prop in ((self.prior, "value"), (self.keep_prior, "active"),
                             (self.beta, "value")):
            widget.on_change(prop, lambda a, o, v: self._say_next_prior())
        self.legend_source.selected.on_change("indices", lambda a, o, v: self._legend_click(v))
        self.cluster_btn.on_click(self._cluster)
        self.add_sel.on_click(self._add_selection)
        self.add_clu.on_click(self._add_clusters)
        self.add_top.on_click(self._add_top)
        self.go.on_click(self._factor_out)
        self.stop.on_click(lambda: self.ex.cancel())
        self.history.on_change("value", lambda a, o, v: self._show_step(int(v.split(":")[0])))
        for kind, b in self.exports.items():
            b.on_click(lambda k=kind: self._export(k))

    def _say(self, text: str, error: bool = False):
        colour = "#b00" if error else "#333"
        self.status.text = f'<span style="color:{colour}">{html.escape(text)}</span>'

    # ------------------------------------------------------------------ the maps
    def _refresh_options(self):
        self.columns = list(self.s.labels)
        self.prior.options = prior_choices(self.columns, self.s.feature_names)
        self.marker.options = [NONE, *self.columns]
        self.hover_cols.options = self.columns
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
        self.fig_a.visible = parent is not None
        self.fig_a.title.text = f"{parent}: {steps[parent].title}" if parent is not None else ""
        self.fig_b.title.text = f"{k}: {steps[k].title}"
        self._refresh_options()
        label = f"{k}: {steps[k].title}"
        if self.history.value != label:
            self.history.value = label
        # the box holds what the NEXT map adds; the shown map's prior is kept (or not) by
        # the checkbox, so nothing is carried over unseen (issue 22)
        prior = " & ".join(steps[k].prior)
        self.keep_prior.update(active=True, visible=bool(prior),
                               label=f"keep the prior of step {k}: {prior}")
        self.prior.value = []
        self._say_next_prior()
        # the step's own selection and its ranking (ranked again if it never was)
        self._select_rows(steps[k].selection, ranking=steps[k].ranking)

    def _reframe(self, *figs):
        """Frame the views of ``figs`` to their points in the browser (:data:`REFRAME_JS`)."""
        for fig in figs:
            fig.tags = [int(fig.tags[0]) + 1 if fig.tags else 1]

    def _next_prior(self) -> list[str]:
        """The next map's prior: the shown map's (if kept) and the box's columns."""
        kept = self.s.steps[self.step_b].prior if self.keep_prior.active else []
        return list(dict.fromkeys([*kept, *self.prior.value]))

    def _say_next_prior(self):
        prior = self._next_prior()
        self.next_prior.text = "" if not prior else (
            f"Next map factors out <b>{html.escape(' & '.join(prior))}</b> "
            f"(β'={float(self.beta.value or 0):g})")

    def _set_color(self, name: str):
        n = len(self.source.data["id"])
        # a row selected in the old legend would select a row of the new one (issue 22)
        self._clear_legend()
        self.legend_source.data = {"color": [], "level": [], "count": []}
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
        self.legend_source.data = {"color": pal, "level": levels,
                                   "count": np.bincount(codes, minlength=len(levels)).tolist()}

    def _set_marker(self, name: str):
        from bokeh.transform import factor_mark

        if name == NONE:
            for r in (self.r_a, self.r_b):
                r.glyph.marker = "circle"
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

    # ------------------------------------------------------------------ selection
    def _legend_click(self, rows):
        if self._legend_setting or not rows or not hasattr(self, "legend_codes"):
            return
        name, levels, codes = self.legend_codes
        self._legend_setting = True  # the legend keeps its row: the selection is its
        try:
            self._select_rows(np.flatnonzero(np.isin(codes, rows)))
        finally:
            self._legend_setting = False
        self._say(f"selected {', '.join(levels[r] for r in rows)} of {name}")

    def _clear_legend(self):
        """Unselect the legend's rows (without selecting anything)."""
        if self._legend_setting or not self.legend_source.selected.indices:
            return
        self._legend_setting = True
        try:
            self.legend_source.selected.indices = []
        finally:
            self._legend_setting = False

    def _cluster(self):
        Y = self.s.steps[self.step_b].embedding
        from .session import cluster_labels

        try:
            self.clusters = cluster_labels(Y, self.cluster_method.value,
                                           float(self.cluster_param.value))
        except ValueError as exc:
            self._say(str(exc), error=True)
            return
        name = self.s.label_from_clusters(self.clusters)
        self._refresh_options()
        self.color.value = name  # the legend then lists the clusters: click one to select
        self._say(f"{name}: {len(set(self.clusters.tolist()) - {-1})} clusters; click a "
                  "legend row to select one")

    def _select_rows(self, rows, ranking=None):
        """Select data rows (all points, drawn or not) in both maps; rank them unless
        their ``ranking`` is given."""
        rows = np.asarray(rows, dtype=np.int64)
        shown = rows
        if self.shown is not None:
            pos = np.clip(np.searchsorted(self.shown, rows), 0, len(self.shown) - 1)
            shown = pos[self.shown[pos] == rows]
        self._setting = True
        try:
            self.source.selected.indices = shown.tolist()
        finally:
            self._setting = False
        self._rows_selected(rows, ranking)

    def _selected(self, indices):
        """A selection made in the browser (indices of drawn points)."""
        if self._setting:
            return
        if self.shown is None:
            self._rows_selected(np.asarray(indices, dtype=np.int64))
        elif len(indices) == 0:
            self._rows_selected(np.zeros(0, dtype=np.int64))
        # else: box and lasso on a subsample arrive as geometry (_geometry), on all points

    def _geometry(self, event, which: str):
        """Box or lasso on a subsample: select every point inside, drawn or not."""
        if self.shown is None or not event.final or which not in self.maps:
            return
        g, Y = event.geometry, self.maps[which]
        if g.get("type") == "rect":
            x0, x1 = sorted((g["x0"], g["x1"]))
            y0, y1 = sorted((g["y0"], g["y1"]))
            inside = (Y[:, 0] >= x0) & (Y[:, 0] <= x1) & (Y[:, 1] >= y0) & (Y[:, 1] <= y1)
        elif g.get("type") == "poly":
            from matplotlib.path import Path

            inside = Path(np.c_[g["x"], g["y"]]).contains_points(Y)
        else:
            return
        self._rows_selected(np.flatnonzero(inside))

    def _rows_selected(self, rows: np.ndarray, ranking=None):
        """The selection changed: the ranking shown so far no longer describes it (issue
        22); show ``ranking`` (that of ``rows``) or rank ``rows`` in the background."""
        step = self.s.steps[self.step_b]
        some = 0 < len(rows) < self.s.n
        self.selected_rows = rows
        step.selection, step.ranking = rows, ranking if some else None
        self._clear_legend()  # unless the legend made it: a map selection is not a row
        if self.rank_future is not None:  # its selection is gone: never shown
            self.rank_future[2].cancel()
            self.rank_future = None
        self._show_ranking(step.ranking)
        if some and step.ranking is None:
            self.rank_info.text = f"ranking {len(rows)} selected points …"
            self.rank_future = (self.step_b, rows, self.pool.submit(self.s.rank, rows))

    def _show_ranking(self, r):
        """Show the ranking ``r`` in the headline and the table (None: the prompt, an
        empty table)."""
        from bokeh.models import ColumnDataSource

        self.rank_info.text = PROMPT if r is None else ranking_headline(r)
        if r is None and not self.rank_source.data["feature"]:
            return  # already empty
        # A NEW source for the table, not new data in the old one: BokehJS's DataTableView
        # redraws its rows only when its CDSView's indices change or the table model itself
        # changes. Replacing (or patching) the data of a source by data of the same length,
        # as every ranking is (one row per feature), leaves the indices equal, so the page
        # kept drawing the first ranking under the new headline (Bokeh 3.9; issue 22).
        # Assigning a new source changes the table model, which rebuilds its grid from it.
        # The name moves to the new source: the browser keeps a detached model for up to
        # 30 s, and two models named "ranking_source" would make the name ambiguous.
        old = self.rank_source
        self.rank_source = ColumnDataSource(ranking_columns(r), name="ranking_source")
        old.name = None
        self.rank_table.source = self.rank_source

    # ------------------------------------------------------------------ factor out
    def _add_prior(self, name: str):
        self._refresh_options()
        if name not in self.prior.value:
            self.prior.value = [*self.prior.value, name]

    def _add_selection(self):
        if not len(self.selected_rows):
            self._say("select points first", error=True)
            return
        self._add_prior(self.s.label_from_selection(self.selected_rows))

    def _add_clusters(self):
        if self.clusters is None:
            self._say("cluster the map first", error=True)
            return
        self._add_prior(self.s.label_from_clusters(self.clusters))

    def _add_top(self):
        r = self.s.steps[self.step_b].ranking
        if r is None:
            self._say("select points and wait for the ranking first", error=True)
            return
        try:
            self._add_prior(self.s.feature_column(r.top))
        except ValueError as exc:
            self._say(str(exc), error=True)

    def _factor_out(self):
        prior = self._next_prior()
        try:
            job = self.ex.factor_out(prior, float(self.beta.value), self.step_b)
        except ValueError as exc:
            self._say(str(exc), error=True)
            return
        self.job, self._shown_it = job, -1
        self.go.disabled, self.stop.disabled = True, False
        self._progress(job)  # from 0: not the previous run's last line (issue 22)
        # the new map appears on the right, its parent (the current map) on the left
        Y = self.s.steps[self.step_b].embedding
        self.maps["a"] = Y
        self.source.data.update(_xy(self._d(Y), "a"))
        self._reframe(self.fig_a)
        self.fig_a.visible = True
        self.fig_a.title.text = self.fig_b.title.text
        self.fig_b.title.text = f"computing: prior {' & '.join(prior)} …"
        self._say("ct-SNE running in the background (P reused)")

    def _progress(self, job):
        self.progress.text = progress_html(job.iteration, job.total, job.kl)

    def _poll(self):
        job = self.job
        if job is not None:
            if job.embedding is not None and job.iteration != self._shown_it:
                first = self._shown_it < 0
                self._shown_it = job.iteration
                Y = job.embedding
                self.maps["b"] = Y
                self.source.data.update(_xy(self._d(Y), "b"))
                if first:  # a new map in the old view: frame it (the view then follows)
                    self._reframe(self.fig_b)
                self._progress(job)
            try:
                k = self.ex.poll()
            except ValueError as exc:
                self.job = None
                self._say(str(exc), error=True)
                self.go.disabled, self.stop.disabled = False, True
                k = None
            if k is not None or (job is not None and job.done and self.ex.job is None):
                self.job = None
                self.go.disabled, self.stop.disabled = False, True
                if k is not None:
                    self._refresh_options()
                    self._show_step(k)
                    self._say(f"step {k} done: {self.s.steps[k].title}")
        # a pending ranking is always that of the current selection (_rows_selected drops
        # the others)
        if self.rank_future is not None and self.rank_future[2].done():
            k, rows, fut = self.rank_future
            self.rank_future = None
            try:
                r = fut.result()
            except ValueError as exc:
                self.rank_info.text = html.escape(str(exc))
                return
            if self.s.steps[k].selection is rows:
                self.s.steps[k].ranking = r
            if k == self.step_b and self.selected_rows is rows:
                self._show_ranking(r)

    # ------------------------------------------------------------------ export
    def _export(self, kind: str):
        name = self.color.value if self.color.value in self.s.labels else None
        try:
            path = self.ex.export(kind, self.step_b, name)
        except (ValueError, OSError, ImportError) as exc:
            self._say(str(exc), error=True)
            return
        self._say(f"wrote {path}")


def make_document(explorer: Explorer, backend: str = "webgl", max_points: int = DISPLAY_MAX):
    """A Bokeh ``modify_doc`` function serving ``explorer``; ``backend`` draws the maps
    with WebGL (default) or the 2-D canvas; above ``max_points`` points a fixed random
    subsample of them is drawn."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")

    def modify(doc) -> None:
        _Page(doc, explorer, backend, max_points)

    return modify

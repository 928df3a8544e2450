"""The page's selection: legend clicks, clusterings, box and lasso outlines on a
subsample, and the ranking of whatever is selected (in a background thread).

A mixin of :class:`ctsne.interfaces.explorer.app._Page`, which holds the widgets named
here (``source``, ``legend_source``, ``rank_table``, …).
"""

from __future__ import annotations

import numpy as np

from .columns import ranking_columns, ranking_headline

__all__ = ["SelectionMixin", "PROMPT"]

PROMPT = ("Select points (box, lasso, legend or cluster) to rank the features that set "
          "them apart.")


class SelectionMixin:
    """Selecting points and ranking them (see the module docstring)."""

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
        if not self.s.steps:
            self._say("wait for the first map", error=True)
            return
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
        """Box or lasso on a subsample: select every point inside, drawn or not. An
        outline that is neither (sent by hand over the websocket) is refused."""
        if self.shown is None or not event.final or which not in self.maps:
            return
        g, Y = event.geometry, self.maps[which]
        try:
            if g.get("type") == "rect":
                x0, x1 = sorted((float(g["x0"]), float(g["x1"])))
                y0, y1 = sorted((float(g["y0"]), float(g["y1"])))
                inside = (Y[:, 0] >= x0) & (Y[:, 0] <= x1) & (Y[:, 1] >= y0) & (Y[:, 1] <= y1)
            elif g.get("type") == "poly":
                from matplotlib.path import Path

                xy = np.c_[np.asarray(g["x"], dtype=np.float64),
                           np.asarray(g["y"], dtype=np.float64)]
                inside = Path(xy).contains_points(Y) if len(xy) >= 3 else None
            else:
                return
        except (AttributeError, KeyError, TypeError, ValueError):
            inside = None
        if inside is None:
            self._say("refused: a selection outline that is not a box or a lasso", error=True)
            return
        self._rows_selected(np.flatnonzero(inside))

    def _rows_selected(self, rows: np.ndarray, ranking=None):
        """The selection changed: the ranking shown so far no longer describes it (issue
        22); show ``ranking`` (that of ``rows``) or rank ``rows`` in the background."""
        if not self.s.steps:  # the first map is still being computed
            return
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
        # A NEW source for the table: BokehJS's DataTableView does not redraw new data of
        # the same length. The name moves to it: the browser keeps a detached model a
        # while, and two models named "ranking_source" would make the name ambiguous.
        old = self.rank_source
        self.rank_source = ColumnDataSource(ranking_columns(r), name="ranking_source")
        old.name = None
        self.rank_table.source = self.rank_source

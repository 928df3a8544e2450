"""The page's runs: the prior of the next map, Factor out, and the periodic callback that
moves a background run's progress, live map and result into the document.

A mixin of :class:`ctsne.interfaces.explorer.app._Page`. Nothing slow runs in a Bokeh
callback: the run (affinities included) is a thread of the
:class:`~ctsne.interfaces.explorer.controller.Explorer`, and :meth:`RunMixin._poll` only
copies what it has reported.
"""

from __future__ import annotations

import html

from .columns import progress_html
from .columns import xy as _xy
from .methods import METHODS, method_title

__all__ = ["RunMixin"]


class RunMixin:
    """Factor out and follow the run (see the module docstring)."""

    # ------------------------------------------------------------------ the next prior
    def _next_prior(self) -> list[str]:
        """The next map's prior: the shown map's (if kept) and the box's columns."""
        kept = (self.s.steps[self.step_b].prior
                if self.s.steps and self.keep_prior.active else [])
        return list(dict.fromkeys([*kept, *self.prior.value]))

    def _say_next_prior(self):
        prior = self._next_prior()
        self.next_prior.text = "" if not prior else (
            f"Next map ({method_title(self.method.value, True)}) factors out "
            f"<b>{html.escape(' & '.join(prior))}</b> (β'={float(self.beta.value or 0):g})")

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
        r = self.s.steps[self.step_b].ranking if self.s.steps else None
        if r is None:
            self._say("select points and wait for the ranking first", error=True)
            return
        try:
            self._add_prior(self.s.feature_column(r.top))
        except ValueError as exc:
            self._say(str(exc), error=True)

    # ------------------------------------------------------------------ runs
    def _factor_out(self):
        if not self.s.steps:
            self._say("wait for the first map", error=True)
            return
        prior = self._next_prior()
        method = self.method.value
        try:
            job = self.ex.factor_out(prior, float(self.beta.value), self.step_b, method)
        except ValueError as exc:
            self._say(str(exc), error=True)
            return
        self._follow(job)
        # the new map appears on the right, its parent (the current map) on the left
        Y = self.s.steps[self.step_b].embedding
        self.maps["a"] = Y
        self.source.data.update(_xy(self._d(Y), "a"))
        self._reframe(self.fig_a)
        self._show_left(True)
        self.title_a.text = self.title_b.text
        self._set_title("b", f"computing: {method_title(method, True)}, prior "
                        f"{' & '.join(prior)} …")
        name = METHODS[method][1]
        self._say(f"{name} running in the background" +
                  (" (P shared with the other steps)" if method == "tsne" else ""))

    def _follow(self, job):
        """Show ``job``'s progress from now on (from 0: not the last run's end)."""
        self.job, self._shown_it = job, -1
        self.go.disabled, self.stop.disabled = True, False
        self._progress(job)

    def _progress(self, job):
        self.progress.text = progress_html(job.iteration, job.total, job.kl, job.phase,
                                           job.elapsed, job.unit)

    def _live_frame(self, job):
        """The run's latest map in the right-hand map (framed once, then followed)."""
        if job.embedding is None or job.iteration == self._shown_it:
            return
        first = self._shown_it < 0
        self._shown_it = job.iteration
        Y = job.embedding
        self.maps["b"] = Y
        self.source.data.update(_xy(self._d(Y), "b"))
        if first:  # a new map in the old view: frame it (the view then follows)
            self._reframe(self.fig_b)

    def _poll(self):
        if self.job is None and not self.s.steps and self.ex.job is not None:
            self._follow(self.ex.job)  # the first map, started after this page was made
        job = self.job
        if job is not None:
            self._live_frame(job)
            self._progress(job)
            try:
                k = self.ex.poll()
            except ValueError as exc:
                self.job = None
                self._say(str(exc), error=True)
                self.go.disabled, self.stop.disabled = False, True
                k = None
                if self.s.steps:  # the map shown before the run
                    self._show_step(self.step_b)
            if k is None and job.done and self.ex.job is None and self.job is not None:
                k = len(self.s.steps) - 1 if self.s.steps else None  # another tab took it
            if k is not None:
                self.job = None
                self.go.disabled, self.stop.disabled = False, True
                self._progress(job)
                self._refresh_options()
                self._show_step(k)
                secs = f" in {job.seconds:.1f} s" if job.seconds else ""
                self._say(f"step {k} done{secs}: {self.s.steps[k].title}")
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


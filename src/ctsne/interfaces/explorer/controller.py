"""What the page's buttons do, without the page: factor out, poll the run, export.

:class:`Explorer` owns the :class:`~ctsne.interfaces.explorer.session.Session`, the model whose
affinities every step shares, the one background run at a time, and the output folder
(fixed at start: the browser never names a file).
"""

from __future__ import annotations

import threading
from pathlib import Path

from .methods import GraphJob, check_method
from .refit import FirstMapJob, MapJob, RefitJob
from .session import Session, Step

__all__ = ["Explorer", "EXPORTS", "available_exports"]

EXPORTS = ("csv", "parquet", "png", "svg", "json")
MEDIA_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet",
               "png": "image/png", "svg": "image/svg+xml", "json": "application/json"}


def available_exports() -> list[str]:
    """The export kinds this installation can write (Parquet needs pyarrow)."""
    import importlib.util

    return [k for k in EXPORTS if k != "parquet" or importlib.util.find_spec("pyarrow")]


class Explorer:
    """Session + shared affinities + background runs + exports.

    Parameters
    ----------
    session : Session
        With at least one step (the first map), or none: then :meth:`start_first`
        computes it in the background.
    model : ConditionalTSNE
        Fitted (its ``P_`` is shared), or unfitted with the parameters to use: the
        standard P is then computed on the first factor-out
        (:func:`~ctsne.interfaces.explorer.refit.shared_affinities`).
    out_dir : path
        Where exports go.
    every : int
        Iterations between live map updates.
    method : {"tsne", "umap", "largevis"}
        The method the page proposes for the next map (:mod:`.methods`).
    """

    def __init__(self, session: Session, model, out_dir=".", every: int = 10,
                 method: str = "tsne"):
        self.session = session
        self.model = model
        self.out_dir = Path(out_dir)
        self.every = every
        self.method = check_method(method)
        self.job: MapJob | None = None
        self.job_parent: int | None = None
        self.job_prior: list[str] = []
        self.job_beta = 0.0
        self.job_method = "tsne"
        self._lock = threading.Lock()

    def _job(self, method: str, arrays, beta: float):
        """The background run of ``method`` (not started)."""
        if method == "tsne":
            return RefitJob(self.model, self.session.X, arrays, beta, every=self.every)
        return GraphJob(method, self.model, self.session.X, arrays, beta)

    def start_first(self, prior: list[str], beta: float, method: str = "tsne") -> MapJob:
        """Compute the session's first map in the background (the page is served
        meanwhile); :meth:`poll` adds it as step 0. A ct-SNE first map is ``model.fit``,
        whose P the later steps share."""
        method = check_method(method)
        with self._lock:
            if self.session.steps or self.job is not None:
                raise ValueError("the session has its first map already")
            arrays = self.session.prior_arrays(prior)
            if method == "tsne":
                if prior:  # the β' the step records is the one the fit uses
                    self.model.set_params(beta=beta, alpha=None)
                self.job = FirstMapJob(self.model, self.session.X, arrays, every=self.every)
            else:
                self.job = self._job(method, arrays, beta)
            self.job_parent, self.job_prior = None, list(prior)
            self.job_beta, self.job_method = float(beta) if prior else 1.0, method
            return self.job.start()

    # ------------------------------------------------------------------ factor out
    def resolve_prior(self, names: list[str]) -> list[str]:
        """The label columns behind prior choices: a label as is, a feature made a label
        (:meth:`Session.feature_column`), without repeats."""
        s = self.session
        return list(dict.fromkeys(n if n in s.labels else s.feature_column(n)
                                  for n in names))

    def factor_out(self, prior: list[str], beta: float, parent: int,
                   method: str = "tsne") -> MapJob:
        """Start ``method`` (ct-SNE by default) with ``prior`` (label columns or features,
        see :meth:`resolve_prior`) and β' in the background; nothing slow runs in the
        caller's thread (a P not yet built is built by the job)."""
        method = check_method(method)
        with self._lock:
            if self.job is not None and not self.job.done:
                raise ValueError("a run is in progress; cancel it first")
            if not prior:
                raise ValueError("choose at least one label column to factor out")
            if not beta > 0:
                raise ValueError(f"β' must be positive, got {beta}")
            prior = self.resolve_prior(prior)
            arrays = self.session.prior_arrays(prior)
            from ...prior import make_prior

            make_prior(arrays, self.session.n, beta=beta)  # a bad β' fails here, not later
            self.job = self._job(method, arrays, beta)
            self.job_parent, self.job_prior, self.job_beta = parent, list(prior), float(beta)
            self.job_method = method
            return self.job.start()

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def poll(self) -> int | None:
        """The new step's index once the run has finished (once); else None.

        Raises ValueError with the run's error if it failed, or if a UMAP/LargeVis run
        was cancelled (those cannot stop midway: their map is dropped).
        """
        with self._lock:
            job = self.job
            if job is None or not job.done:
                return None
            self.job = None
            if job.error is not None:
                raise ValueError(f"the run failed: {job.error}")
            if job.cancelled and self.job_method != "tsne":
                raise ValueError("cancelled: the map was dropped")
            m = job.model
            n_iter = int(job.iteration)
            return self.session.add_step(Step(
                self.job_prior, self.job_beta, m.embedding_.copy(),
                getattr(m, "kl_divergence_", None), self.job_parent, n_iter=n_iter,
                complete=not job.cancelled and n_iter >= (job.total or 0),
                method=self.job_method))

    # ------------------------------------------------------------------ export
    def export(self, kind: str, step: int, color: str | None = None) -> Path:
        """Write the session's embeddings (csv/parquet: ``ctsne1``/``ctsne2`` hold the
        map of ``step``, so that ``explore --embedding`` reopens it), the map of
        ``step`` with its parent (png/svg) or the session (json) into ``out_dir``;
        returns the path."""
        from ..files.writing import write_columns

        if kind not in EXPORTS:
            raise ValueError(f"export kind must be one of {EXPORTS}, got {kind!r}")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        s = self.session
        if kind == "json":
            return s.save(self.out_dir / "session.json")
        if kind in ("csv", "parquet"):
            path = self.out_dir / f"embeddings.{kind}"
            write_columns(path, s.embeddings_table(step), force=True)
            return path
        from ...plotting import figures as plotting

        shown = [step] if s.steps[step].parent is None else [s.steps[step].parent, step]
        panels = {f"{k}: {s.steps[k].title}": s.steps[k].embedding for k in shown}
        values = s.labels.get(color) if color else None
        fig = plotting.plot_embeddings(panels, values, color_name=color)
        return plotting.save_figure(fig, self.out_dir / f"step{step}.{kind}", force=True)

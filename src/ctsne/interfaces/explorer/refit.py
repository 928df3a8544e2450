"""ct-SNE for a new prior that reuses an existing model's affinities, in a background thread.

The standard P depends on the data only; a new prior changes the repulsion weights. So
every step of an exploration after the first builds a new :class:`~ctsne.ConditionalTSNE`
that shares the first model's ``P_`` (no neighbour search, no calibration) and optimises
from the usual start (PCA on the within-class axes of the new prior). The exception is
the estimator's ``affinities`` rule: a prior that separates the data (measured on the
shared standard P, :mod:`ctsne.affinities.mixing`) gets the label-balanced P under "auto", as a fit
would; the last such P is kept for the next step with the same prior.
"""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np

__all__ = ["fit_sharing_affinities", "RefitJob"]


def fit_sharing_affinities(base, X: np.ndarray, prior, beta: float, callbacks=None,
                           callbacks_every_iters: int = 10):
    """A new model fitted to ``X`` with ``prior`` and β' ``beta``, reusing ``base.P_``.

    Parameters
    ----------
    base : fitted ConditionalTSNE
        Its parameters (perplexity, method, iterations, seed) and its ``P_`` are used.
    X : ndarray (n, p)
        The data ``base`` was fitted on (only the starting point depends on it).
    prior : label array(s) or None
    beta : float
        β' of the new prior.
    callbacks, callbacks_every_iters
        As for :class:`~ctsne.ConditionalTSNE`; a callback returning True stops the run.

    Returns
    -------
    ConditionalTSNE
        Fitted: ``embedding_``, ``kl_divergence_``, ``P_`` (the same object as
        ``base.P_`` or the balanced P of a separating prior); a callback that returns True
        ends the run early.
    """
    from ...estimator.tsne import ConditionalTSNE, _check_X

    X = _check_X(X)
    if not hasattr(base, "P_") or base.P_.shape[0] != len(X):
        raise ValueError("base must be a ConditionalTSNE fitted on the same rows as X")
    model = ConditionalTSNE(**{**base.get_params(), "beta": beta, "alpha": None,
                               "callbacks": callbacks,
                               "callbacks_every_iters": callbacks_every_iters,
                               "verbose": False})
    model._check_params(len(X))
    # the estimator's fit, with the affinity step replaced by the shared P
    classes, Y0 = model._start(X, prior)
    model.P_, model.affinities_ = _affinities_for(base, model, X, classes)
    model.timings_ = {"affinities": 0.0, "optimization": 0.0}
    with warnings.catch_warnings():
        # a cancelled run is reported by the job, not as a warning
        warnings.filterwarnings("ignore", message="optimisation interrupted")
        model._optimize_from(Y0)
    return model


def _affinities_for(base, model, X: np.ndarray, classes):
    """``base.P_``, or the P that ``model.affinities`` asks for with these classes."""
    shared_is_standard = getattr(base, "affinities_", "standard") == "standard"
    mode = model.affinities
    if classes is None or not shared_is_standard or mode == "standard":
        return base.P_, getattr(base, "affinities_", "standard")
    if mode == "auto":
        from ...affinities.mixing import prior_mixing

        if not prior_mixing(base.P_, classes).separates:
            return base.P_, "standard"
        mode = "balanced"
    key = (mode, model.within_weight, classes.tobytes())
    cache = base.__dict__.get("_explorer_affinities")
    if cache is None or cache[0] != key:
        from ...affinities.balanced import balanced_affinities, revised_affinities
        from ...checks import to_safe_scale

        build = balanced_affinities if mode == "balanced" else revised_affinities
        P = build(to_safe_scale(X), classes, model.perplexity, model.within_weight,
                  neighbors=model.neighbors, metric=model.metric,
                  random_state=model.random_state, n_jobs=model.n_jobs)
        cache = (key, P)
        base.__dict__["_explorer_affinities"] = cache  # one P kept: the last prior's
    return cache[1], mode


class RefitJob:
    """One background ct-SNE run: progress, latest map, cancel.

    Parameters
    ----------
    base, X, prior, beta
        As for :func:`fit_sharing_affinities`.
    every : int
        Iterations between progress reports (and live map updates).

    Attributes (read from the page's thread; each is replaced whole, never mutated)
    ----------
    iteration, total : int
    kl : float or None
    embedding : ndarray (n, 2) or None
        A copy of the map at the last report.
    model : the fitted model once done; ``error`` : str if the run failed.
    """

    def __init__(self, base, X, prior, beta: float, every: int = 10):
        self.total = int(base.early_exaggeration_iter + base.n_iter)
        self.iteration = 0
        self.kl: float | None = None
        self.embedding: np.ndarray | None = None
        self.model = None
        self.error: str | None = None
        self.cancelled = False
        self.started = time.perf_counter()
        self.seconds = 0.0
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._work, args=(base, X, prior, beta, every),
                                        name="ctsne-refit", daemon=True)

    def start(self) -> RefitJob:
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop at the next report; the partial map is kept (``cancelled``)."""
        self._cancel.set()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive() and (self.model is not None or self.error is not None)

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return self.done

    def _report(self, iteration: int, kl: float, Y: np.ndarray) -> bool:
        self.embedding = Y.copy()
        self.kl = float(kl)
        self.iteration = int(iteration)
        return self._cancel.is_set()

    def _work(self, base, X, prior, beta, every) -> None:
        try:
            model = fit_sharing_affinities(base, X, prior, beta, callbacks=[self._report],
                                           callbacks_every_iters=every)
            self.cancelled = self._cancel.is_set()
            self.embedding = model.embedding_.copy()
            self.kl = model.kl_divergence_
            self.iteration = model.n_iter_
            self.seconds = time.perf_counter() - self.started
            self.model = model
        except Exception as exc:  # shown on the page; the session goes on
            self.error = f"{type(exc).__name__}: {exc}"

"""ct-SNE for a new prior that reuses an existing model's affinities, in a background thread.

The standard P depends on the data only; a new prior changes the repulsion weights. So
every step of an exploration after the first builds a new :class:`~ctsne.ConditionalTSNE`
that shares the first model's ``P_`` (no neighbour search, no calibration) and optimises
from the usual start (PCA on the within-class axes of the new prior), through
:meth:`~ctsne.ConditionalTSNE.fit_affinities`. The exception is the estimator's
``affinities`` rule: under "auto" the mode object's own rule reads the shared standard P
(:class:`ctsne.affinities.graphs.GivenStandard`) and, where the prior is not mixed in it,
builds the label-balanced P as a fit would; the last such P is kept for the next step
with the same prior. So does shared-state conditioning (``conditioning``): where a fit
would remove the prior only within shared states, the refit finds the same states and
builds the standard P of the space where the classes are aligned, once per prior.
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref

import numpy as np

__all__ = ["SharedAffinities", "fit_sharing_affinities", "shared_affinities", "MapJob",
           "RefitJob", "FirstMapJob"]


class SharedAffinities:
    """The P that every step shares, and the last P built for a separating prior.

    Parameters
    ----------
    P : csr_matrix (n, n)
    kind : str
        What P is ("standard" unless the first fit built another one).
    """

    def __init__(self, P, kind: str):
        self.P = P
        self.kind = kind
        self._last: tuple | None = None  # ((mode, classes, labelled), P, kind)
        self._states: tuple | None = None  # (key, for_states' answer)

    def for_classes(self, model, X: np.ndarray, classes, labelled=None) -> tuple:
        """``(P, kind)`` for a fit of ``model`` with these joint prior classes: the shared
        P, or the P that ``model.affinities`` asks for (built once per prior). "auto"
        runs its own rule with the shared P as its standard graph; ``labelled`` marks the
        points whose labels are known, as a fit passes it."""
        from ...affinities.modes import resolve_mode

        # a mode object with its weight: a name takes the estimator's within_weight
        mode = resolve_mode(model.affinities, model.within_weight)
        if classes is None or self.kind != "standard" or mode.name == "standard":
            return self.P, self.kind
        key = (repr(mode), classes.tobytes(),
               None if labelled is None else np.packbits(labelled).tobytes())
        if self._last is None or self._last[0] != key:
            # one kept: the last prior's
            built = _build(model, X, classes, mode, standard=self.P, labelled=labelled)
            self._last = (key, built.P, built.mode)
        return self._last[1], self._last[2]


    def for_states(self, model, X: np.ndarray, encoded, classes) -> tuple | None:
        """Where ``model.conditioning`` chooses shared states for this prior, as a fit
        would: ``(prior with states, what was found, P)``, P being the standard P of the
        space where the classes are aligned (None where ``model.affinities`` is not
        "auto": a fit then builds its usual P); else None. Kept for the next step with
        the same prior."""
        from ...affinities.options import mode_name
        from ...checks import to_safe_scale
        from ...estimator.validation import threads

        if classes is None or model.conditioning == "classes" or len(encoded.codes) != 1:
            return None
        aligned_graph = mode_name(model.affinities) == "auto"
        key = (model.conditioning, aligned_graph, repr(encoded.betas), classes.tobytes())
        if self._states is None or self._states[0] != key:
            model.prior_ = encoded
            with threads(model.n_jobs):
                aligned = model._condition(to_safe_scale(X), classes, None, aligned_graph)
            if getattr(model, "conditioning_", None) != "states":
                found = None
            else:
                P = (None if aligned is None else
                     _build(model, to_safe_scale(aligned), None, "standard").P)
                found = (model.prior_, model.shared_states_, P)
            self._states = (key, found)
        return self._states[1]


def _build(model, X: np.ndarray, classes, mode, standard=None, labelled=None):
    """The affinities a fit of ``model`` builds in ``mode`` (a name or a mode object),
    reading ``standard`` (a standard P of ``X``) instead of searching for it."""
    from ...affinities.graphs import GivenStandard, PerplexityGraph
    from ...affinities.modes import input_affinities

    graph = None if standard is None else GivenStandard(PerplexityGraph(model.perplexity),
                                                        standard)
    return input_affinities(X, model.perplexity, classes, mode, None,
                            neighbors=model.neighbors, metric=model.metric,
                            random_state=model.random_state, n_jobs=model.n_jobs,
                            labelled=labelled, graph=graph)


# One per base model, dropped with it; nothing is stored on the model itself.
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def shared_affinities(base, X: np.ndarray) -> SharedAffinities:
    """The affinities that refits of ``base`` share: its ``P_`` when fitted, else the
    standard P computed once with its parameters.

    Parameters
    ----------
    base : ConditionalTSNE
        Fitted on ``X``, or unfitted (its parameters are used; the P is then kept for
        later calls with the same base, as for one session's data).
    X : ndarray (n, p)
    """
    P = getattr(base, "P_", None)
    shared = _SHARED.get(base)
    if shared is not None and (shared.P is P or (P is None and shared.P.shape[0] == len(X))):
        return shared
    if P is not None:
        shared = SharedAffinities(P, getattr(base, "affinities_", "standard"))
    else:
        shared = SharedAffinities(_build(base, X, None, "standard").P, "standard")
    _SHARED[base] = shared
    return shared


def fit_sharing_affinities(base, X: np.ndarray, prior, beta: float, callbacks=None,
                           callbacks_every_iters: int = 10):
    """A new model fitted to ``X`` with ``prior`` and β' ``beta``, reusing ``base``'s P.

    Parameters
    ----------
    base : ConditionalTSNE
        Its parameters (perplexity, method, iterations, seed) and its ``P_`` are used;
        unfitted, the standard P is computed with its parameters (once,
        :func:`shared_affinities`).
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
        ``base.P_`` or the balanced P of a separating prior).
    """
    from ...estimator.tsne import ConditionalTSNE
    from ...estimator.validation import check_X
    from ...prior import make_prior

    X = check_X(X)
    if hasattr(base, "P_") and base.P_.shape[0] != len(X):
        raise ValueError("base must be a ConditionalTSNE fitted on the same rows as X")
    model = ConditionalTSNE(**{**base.get_params(), "beta": beta, "alpha": None,
                               "callbacks": callbacks,
                               "callbacks_every_iters": callbacks_every_iters,
                               "verbose": False})
    # encoded here because the classes choose P; the model uses this encoding as is
    encoded = make_prior(prior, len(X), beta=beta, combine=model.combine,
                         missing=model.missing)
    classes = None if encoded is None or encoded.is_trivial else encoded.joint_codes()
    labelled = None if classes is None else ~encoded.missing_mask()
    shared = shared_affinities(base, X)
    states = shared.for_states(model, X, encoded, classes)
    if states is None:
        P, kind = shared.for_classes(model, X, classes, labelled)
    else:
        encoded, found, P = states
        kind = "standard"
        if P is None:  # states, with the P that model.affinities asks for
            P, kind = shared.for_classes(model, X, classes, labelled)
    with warnings.catch_warnings():
        # a cancelled run is reported by the job, not as a warning
        warnings.filterwarnings("ignore", message="optimisation interrupted")
        model.fit_affinities(P, encoded, X=X, kind=kind)
    if states is not None:
        # as a fit says them: why the states were chosen, and that P encodes the prior
        model.shared_states_ = found
        model._P_encodes_prior_ = states[2] is not None
    return model


class MapJob:
    """One background run that makes a map: phase, progress, latest map, cancel.

    Parameters
    ----------
    fit : callable(callbacks, every) -> fitted estimator
        Runs the fit in the job's thread; ``callbacks`` (a list with the job's reporter,
        called as ``(iteration, kl, Y)``, a True return stops the run) and ``every``
        (iterations between reports) go to estimators that take them.
    total : int or None
        Iterations the run will make (None: not known, e.g. a graph embedding).
    phase : str
        What runs until the first report (e.g. the affinities being built).
    every : int
        Iterations between progress reports (and live map updates).

    Attributes (read from the page's thread; each is replaced whole, never mutated)
    ----------
    phase : str
    iteration : int
    total : int or None
    kl : float or None
    embedding : ndarray (n, 2) or None
        A copy of the map at the last report.
    model : the fitted model once done; ``error`` : str if the run failed.
    """

    unit = "iteration"  # what ``iteration`` counts

    def __init__(self, fit, total: int | None, phase: str = "starting", every: int = 10):
        self.total = total
        self.phase = phase
        self.iteration = 0
        self.kl: float | None = None
        self.embedding: np.ndarray | None = None
        self.model = None
        self.error: str | None = None
        self.cancelled = False
        self.started = time.perf_counter()
        self.seconds = 0.0
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._work, args=(fit, every),
                                        name="ctsne-map", daemon=True)

    def start(self):
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop at the next report; the partial map is kept (``cancelled``)."""
        self._cancel.set()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive() and (self.model is not None or self.error is not None)

    @property
    def elapsed(self) -> float:
        """Seconds since the start (the run's time once done)."""
        return self.seconds if self.done else time.perf_counter() - self.started

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return self.done

    def _report(self, iteration: int, kl: float, Y: np.ndarray) -> bool:
        self.embedding = Y.copy()
        self.kl = None if kl is None else float(kl)  # the graph methods report no loss
        self.iteration = int(iteration)
        self.phase = "optimising"
        return self._cancel.is_set()

    def _work(self, fit, every) -> None:
        try:
            model = fit([self._report], every)
            self.cancelled = self._cancel.is_set()
            self.embedding = np.asarray(model.embedding_, dtype=np.float64).copy()
            self.kl = getattr(model, "kl_divergence_", None)
            self.iteration = int(getattr(model, "n_iter_", getattr(model, "n_epochs_", 0)))
            if self.total is None:
                self.total = self.iteration
            self.seconds = time.perf_counter() - self.started
            self.phase = "done"
            self.model = model
        except Exception as exc:  # shown on the page; the session goes on
            self.seconds = time.perf_counter() - self.started
            self.error = f"{type(exc).__name__}: {exc}"


def _needs_affinities(base, X: np.ndarray) -> bool:
    """Whether a refit of ``base`` must first build the shared P (no ``P_``, none kept)."""
    if getattr(base, "P_", None) is not None:
        return False
    shared = _SHARED.get(base)
    return shared is None or shared.P.shape[0] != len(X)


class RefitJob(MapJob):
    """:func:`fit_sharing_affinities` in a background thread (see :class:`MapJob`).

    Parameters
    ----------
    base, X, prior, beta
        As for :func:`fit_sharing_affinities`; the shared P, if not yet computed, is
        built in the job's thread (the ``phase`` says so), never in the caller's.
    every : int
        Iterations between progress reports (and live map updates).
    """

    def __init__(self, base, X, prior, beta: float, every: int = 10):
        def fit(callbacks, every):
            return fit_sharing_affinities(base, X, prior, beta, callbacks=callbacks,
                                          callbacks_every_iters=every)

        phase = ("building the affinities P (once for the session)"
                 if _needs_affinities(base, X) else "starting")
        super().__init__(fit, int(base.early_exaggeration_iter + base.n_iter), phase, every)


class FirstMapJob(MapJob):
    """The session's first map: ``model.fit(X, prior)`` in a background thread, so the
    page is served (and shows this progress) while it runs. The fit is the same call as
    in the foreground, with the job's reporter as ``callbacks`` (restored afterwards);
    ``model`` then holds the ``P_`` that later steps share.
    """

    def __init__(self, model, X, prior, every: int = 10):
        def fit(callbacks, every):
            old = model.get_params()
            model.set_params(callbacks=callbacks, callbacks_every_iters=every)
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="optimisation interrupted")
                    return model.fit(X, prior)
            finally:
                model.set_params(callbacks=old["callbacks"],
                                 callbacks_every_iters=old["callbacks_every_iters"])

        super().__init__(fit, int(model.early_exaggeration_iter + model.n_iter),
                         "neighbours and affinities P", every)

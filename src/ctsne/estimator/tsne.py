"""ConditionalTSNE: t-SNE's steps of the shared fit, its continuation and its new points."""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from .._progress import progress_bar
from ..affinities.graphs import PerplexityGraph
from ..affinities.mixing import prior_mixing
from ..affinities.modes import Standard
from ..affinities.options import mode_name
from ..checks import to_safe_scale
from ..optimization.initialization import initial_embedding
from ..optimization.optimizer import (
    EARLY_MOMENTUM,
    FINAL_MOMENTUM,
    OptimizerState,
    auto_learning_rate,
)
from ..optimization.run import DescentRun
from .base import ConditionalEmbedding, callback_list
from .engine import Engine
from .parameters import PARAMETERS, with_parameters
from .validation import check_P, check_params, check_X, threads

__all__ = ["ConditionalTSNE"]


class ConditionalTSNE(ConditionalEmbedding):
    """Conditional t-SNE: a t-SNE embedding that factors out known labels.

    Pairs of points in the same prior class get weight α', pairs in different classes
    β' (paper Eq. 4 ties them: ``α'ρ + β'(1 − ρ) = 1``). With β' < 1 the embedding no
    longer needs to show the prior, so other structure appears; β' > 1 strengthens it;
    ``prior=None`` (or β' = 1) is plain t-SNE. :meth:`fit_affinities` embeds from a
    given P, :meth:`set_prior` gives a fitted model another prior on the same P.

    Parameters: from ctsne.estimator.parameters.PARAMETERS.

    Attributes
    ----------
    embedding_ : ndarray (n, n_components)
    initial_embedding_ : ndarray (n, n_components)
        Where the optimisation started (see :meth:`tsne_counterpart`).
    kl_divergence_ : float
        Final KL(P‖R) with the true (not exaggerated) P.
    alpha_, beta_ : float or ndarray
        The weights used (one per prior with ``combine="product"``); 1.0 for plain t-SNE.
    prior_ : Prior or None
    P_ : csr_matrix (n, n)
        Input affinities, symmetric, summing to 1.
    affinities_ : str
        The affinities actually built: "standard", "balanced" or "revised" (or the
        ``kind`` given to :meth:`fit_affinities`).
    prior_mixing_ : PriorMixing or None
        Share of ``P_``'s mass across prior classes against random labels
        (:class:`ctsne.affinities.mixing.PriorMixing`, ``to_dict()`` for JSON); None
        without a prior.
        When "auto" switched, ``standard_mixing_`` holds the standard P's.
    n_iter_ : int
        Iterations run in total.
    early_exaggeration_ : float
        The early exaggeration in force at the end of that phase: ``early_exaggeration``,
        or less where it would only have shrunk the map to a point (it is then halved
        until the map grows; the verbose progress names each step).
    timings_ : dict
        Seconds spent on the affinities (kNN + P) and on the optimisation, and within
        the optimisation on the attraction and the repulsion.
    interrupted_ : bool
        True when Ctrl-C stopped the last optimisation; ``embedding_`` is then partial.
    perplexity_ : float
        The perplexity used (below ``perplexity`` only with too few precomputed ``knn``).
    training_data_ : ndarray (n, p)
        The fitted X, kept for :meth:`transform` (the array itself when X was already a
        float64 array, else its float64 copy). It is pickled with the model; delete the
        attribute to save a smaller model that cannot place new points.
    n_features_in_ : int
        Number of features of X.
    feature_names_in_ : ndarray of str
        X's column names when X was a DataFrame with string column names, or as given to
        :meth:`describe_input`; absent otherwise.
    input_provenance_ : dict
        What :meth:`describe_input` recorded about the training data.
    """

    def __init__(
        self,
        n_components: int = 2,
        perplexity: float = 30.0,
        beta: float | None = None,
        alpha: float | None = None,
        combine: str = "joint",
        missing: str = "class",
        method: str = "auto",
        theta: float = 0.5,
        early_exaggeration: float = 12.0,
        early_exaggeration_iter: int = 250,
        n_iter: int = 500,
        exaggeration: float = 1.0,
        learning_rate: float | str = "auto",
        init="pca",
        neighbors: str = "auto",
        metric: str = "euclidean",
        affinities: str = "auto",
        within_weight: float | None = None,
        conditioning: str = "auto",
        max_step_norm: float | None = 5.0,
        random_state=None,
        n_jobs: int | None = None,
        verbose: bool = False,
        callbacks=None,
        callbacks_every_iters: int = 50,
        backend: str = "numba",
        device: str | None = None,
        precision: str = "auto",
    ):
        self.n_components = n_components
        self.perplexity = perplexity
        self.beta = beta
        self.alpha = alpha
        self.combine = combine
        self.missing = missing
        self.method = method
        self.theta = theta
        self.early_exaggeration = early_exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.n_iter = n_iter
        self.exaggeration = exaggeration
        self.learning_rate = learning_rate
        self.init = init
        self.neighbors = neighbors
        self.metric = metric
        self.affinities = affinities
        self.within_weight = within_weight
        self.conditioning = conditioning
        self.max_step_norm = max_step_norm
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callbacks = callbacks
        self.callbacks_every_iters = callbacks_every_iters
        self.backend = backend
        self.device = device
        self.precision = precision

    _table = PARAMETERS
    _method_name = "ct-SNE"

    # ------------------------------------------------------------------ the fit's steps
    def _check_params(self, n: int, builds_affinities: bool = True) -> Engine:
        """Refuse invalid parameters before any work; the fit's engine."""
        check_params(self.get_params(deep=False), n, builds_affinities=builds_affinities)
        return self._engine()

    _check_fit = _check_params

    def _engine_method(self) -> str:
        return self.method

    def _graph(self) -> PerplexityGraph:
        return PerplexityGraph(self.perplexity)

    def _search_classes(self, classes):
        if classes is None and self.prior_ is not None and mode_name(self.affinities) != "auto":
            return self.prior_.joint_codes()  # e.g. revised P with beta=1 (plain Q)
        return classes

    def _keep_affinities(self, built, seconds: float) -> None:
        self.P_ = built.P
        self.perplexity_ = float(self.perplexity if built.perplexity is None
                                 else built.perplexity)
        self.timings_ = {"affinities": seconds, "optimization": 0.0}

    def _prepare(self, X: np.ndarray, classes: np.ndarray | None) -> np.ndarray:
        return initial_embedding(X, self.n_components, self.init, self.random_state, classes)

    def _embed(self, X: np.ndarray, classes: np.ndarray | None, start: np.ndarray) -> None:
        self._optimize_from(start)

    def fit_affinities(self, P, prior=None, *, init=None, X=None,
                       kind: str = "precomputed") -> ConditionalTSNE:
        """Embed from given input affinities: a fit without the neighbour search.

        The optimisation is that of :meth:`fit` (both phases, this estimator's
        parameters); only P is not built. One P serves several priors this way, e.g.
        another model's ``P_`` (:meth:`tsne_counterpart`, the explorer).

        Parameters
        ----------
        P : sparse matrix or ndarray (n, n)
            Input affinities: finite, non-negative, symmetric, zero diagonal, summing to
            1 (ValueError otherwise). A CSR float64 matrix is kept as ``P_`` itself, not
            copied.
        prior : labels, None or Prior, optional
            As for :meth:`fit_transform`; an encoded :class:`~ctsne.prior.Prior` is used
            as is, with its own α'/β' (``beta`` and ``alpha`` are then not applied).
        init : {"pca", "random"} or ndarray (n, n_components), optional
            Where to start; default the estimator's ``init``. "pca" needs ``X``.
        X : array-like (n, n_features), optional
            The data P was computed from: for the "pca" start, and kept (as by
            :meth:`fit`) for :meth:`transform`. Without it the model cannot place new
            points.
        kind : str, default "precomputed"
            Recorded as ``affinities_``: what P is, e.g. "standard" for t-SNE's P built
            elsewhere.

        Returns
        -------
        ConditionalTSNE
            self, fitted: ``embedding_``, ``P_``, ``prior_``, ``alpha_``, ``beta_``, ….
            Attributes of an earlier fit are removed first; ``perplexity_`` is not set.
        """
        P = check_P(P)
        n = P.shape[0]
        self._check_params(n, builds_affinities=False)
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a string, got {kind!r}")
        for name in [a for a in vars(self) if a.endswith("_") and not a.startswith("__")]:
            delattr(self, name)  # an earlier fit's attributes would describe other data
        if X is not None:
            self._record_feature_names(X, reset=True)
            X = check_X(X)
            if X.shape[0] != n:
                raise ValueError(f"X has {X.shape[0]} rows but P is {n} × {n}: give the data "
                                 "P was computed from")
            self._set_input(X)
        self._n_features_out = self.n_components
        classes = self._encode_prior(prior, n)
        start = self.init if init is None else init
        if isinstance(start, str) and start == "pca" and X is None:
            raise ValueError("init='pca' starts from the principal axes of X: pass X (the "
                             "data P was computed from), an init array or init='random'")
        # without X only the number of points matters ("random" or an array)
        Y0 = initial_embedding(np.empty((n, 0)) if X is None else X, self.n_components,
                               start, self.random_state, classes)
        self.P_, self.affinities_, self.standard_mixing_ = P, kind, None
        self.prior_mixing_ = None if classes is None else prior_mixing(P, classes)
        self.timings_ = {"affinities": 0.0, "optimization": 0.0}
        with threads(self.n_jobs):
            self._optimize_from(Y0)
        return self

    def set_prior(self, prior) -> ConditionalTSNE:
        """Give a fitted model another prior, keeping P and the embedding.

        :meth:`optimize` then continues under the new prior (momentum and gains carry
        over); use :meth:`fit_affinities` with ``P_`` instead for a fresh start. The
        estimator's ``beta``, ``alpha``, ``combine`` and ``missing`` apply (change them
        with ``set_params`` first).

        Parameters
        ----------
        prior : labels, None or Prior
            As for :meth:`fit_affinities`; one label per fitted point. None: plain t-SNE.

        Returns
        -------
        ConditionalTSNE
            self, with ``prior_``, ``alpha_``, ``beta_``, ``prior_mixing_`` and
            ``kl_divergence_`` (of the current embedding) for the new prior.
        """
        if not hasattr(self, "embedding_"):
            raise NotFittedError("set_prior() changes a fitted model's prior; call fit() or "
                                 "fit_affinities() first")
        n = self.P_.shape[0]
        self._check_params(n, builds_affinities=False)
        classes = self._encode_prior(prior, n)
        self.prior_mixing_ = None if classes is None else prior_mixing(self.P_, classes)
        with threads(self.n_jobs):
            self.kl_divergence_ = self.kl_divergence()
        return self

    def _optimize_from(self, Y0: np.ndarray) -> None:
        """Both phases (early exaggeration, then the plain objective) from ``Y0``.

        A run stopped by Ctrl-C or by a callback does not start the second phase.
        """
        self.initial_embedding_ = Y0.copy()
        self.embedding_ = Y0
        self._state = OptimizerState.fresh(Y0.shape)
        self.n_iter_ = 0
        self.interrupted_ = self._stopped = False
        t0 = time.perf_counter()
        run = self._descent()  # one gradient for both phases and every later call
        self.timings_["optimization"] += time.perf_counter() - t0
        self.early_exaggeration_ = float(self.early_exaggeration)
        used = self._run(self.early_exaggeration_iter, self.early_exaggeration,
                         EARLY_MOMENTUM)
        if used is not None:
            self.early_exaggeration_ = used
        if not (self.interrupted_ or self._stopped):
            self._run(self.n_iter, self.exaggeration, FINAL_MOMENTUM)
        if self.n_iter_ == 0:  # no iteration ran (n_iter = early_exaggeration_iter = 0)
            self.kl_divergence_ = run.kl(self.embedding_)

    def tsne_counterpart(self) -> ConditionalTSNE:
        """Plain t-SNE of the same data, for comparison: same start, same schedule, t-SNE's P.

        Only the prior differs, so the difference between the two maps is what the prior
        changed. A fit on the standard P (or a given one) hands its P over unchanged; a
        label-balanced or revised P, or the P of the space where shared-state conditioning
        aligned the classes, already encodes the prior, so for those the standard P of the
        training data is built (its neighbour search and calibration, once).

        Returns
        -------
        ConditionalTSNE
            A new fitted model with ``prior_ = None`` and ``affinities_`` naming its P;
            this model is unchanged.
        """
        if not hasattr(self, "initial_embedding_"):
            raise RuntimeError("tsne_counterpart() needs a model fitted by this version of "
                               "ctsne; call fit() first")
        P, kind = self.P_, getattr(self, "affinities_", "standard")
        X = getattr(self, "training_data_", None)
        rebuild = kind in ("balanced", "revised") or getattr(self, "_P_encodes_prior_", False)
        if rebuild and X is None:
            raise RuntimeError(f"this model was fitted on a {kind} P, which encodes the "
                               "prior; its t-SNE counterpart needs the standard P of the "
                               "training data, which the model does not hold: fit "
                               "ConditionalTSNE() without a prior instead")
        plain = clone(self).set_params(callbacks=None)
        if rebuild:
            plain.prior_ = None
            with threads(self.n_jobs):
                P = plain._build_affinities(to_safe_scale(X), None, plain._graph(),
                                            random_state=self.random_state, mode=Standard()).P
            kind = "standard"
        return plain.fit_affinities(P, None, init=self.initial_embedding_, X=X, kind=kind)

    def _descent(self) -> DescentRun:
        """The fit's descent (its gradient on the fit's engine, the optimiser's state),
        made once and reused while P, the prior and the gradient's parameters stay the
        same."""
        engine = self._engine()
        key = (self.P_, self.prior_, engine, self.n_components, self.method, self.theta)
        run = self.__dict__.get("_fit_run")
        if run is None or not run.serves(key):
            grad = engine.gradient(self.P_, self.prior_, self.n_components, self.method,
                                   self.theta)
            run = DescentRun(grad, self._state, engine.steps, key)
            self.__dict__["_fit_run"] = run
        run.state = self._state  # a new fit's state, on the same gradient
        return run

    def _run(self, n_iter: int, exaggeration: float, momentum: float,
             learning_rate=None) -> float | None:
        """``n_iter`` iterations; the exaggeration in force at their end (None if none ran)."""
        if n_iter == 0:
            return None
        n = self.embedding_.shape[0]
        lr = self.learning_rate if learning_rate is None else learning_rate
        if lr == "auto":
            lr = auto_learning_rate(n, exaggeration)
        t0 = time.perf_counter()
        run = self._descent()
        before = dict(run.timings)
        bar = None
        if self.verbose:
            phase = "early exaggeration" if exaggeration != 1 else "optimisation"
            bar = progress_bar(n_iter, phase, "it")
        try:
            res = run.descend(self.embedding_, n_iter, lr, momentum, exaggeration,
                              max_step_norm=self.max_step_norm,
                              callbacks=callback_list(self.callbacks),
                              callbacks_every_iters=self.callbacks_every_iters, progress=bar)
        finally:
            if bar is not None:
                bar.close()
        self.n_iter_ = self._state.n_iter
        self.timings_["optimization"] += time.perf_counter() - t0
        for stage, seconds in run.timings.items():
            self.timings_[stage] = (self.timings_.get(stage, 0.0) + seconds
                                    - before.get(stage, 0.0))
        self.interrupted_ = res.interrupted
        self._stopped = res.stopped_by_callback
        if res.interrupted:
            warnings.warn(
                f"optimisation interrupted after {self.n_iter_} iterations: embedding_ is "
                "partial; call optimize() to continue", UserWarning, stacklevel=3)
        self.kl_divergence_ = run.kl(self.embedding_)
        return float(exaggeration if res.exaggeration is None else res.exaggeration)

    def optimize(self, n_iter: int = 250, exaggeration: float | None = None,
                 momentum: float = FINAL_MOMENTUM,
                 learning_rate: float | str | None = None) -> ConditionalTSNE:
        """Continue optimising a fitted embedding (momentum and gains carry over).

        Parameters
        ----------
        n_iter : int
            Further iterations.
        exaggeration : float or None
            Multiplies the attraction; 1 is the plain objective. None: the estimator's
            ``exaggeration`` (that of the phase after early exaggeration).
        momentum : float
        learning_rate : float, "auto" or None (the estimator's setting)
        """
        if not hasattr(self, "embedding_"):
            raise RuntimeError("optimize() continues a fitted model; call fit() first")
        if exaggeration is None:
            exaggeration = self.exaggeration
        if not isinstance(n_iter, numbers.Integral) or n_iter < 0:
            raise ValueError(f"n_iter must be an integer ≥ 0, got {n_iter!r}")
        if not isinstance(exaggeration, numbers.Real) or not np.isfinite(exaggeration) \
                or exaggeration <= 0:
            raise ValueError(f"exaggeration must be a finite number > 0, got {exaggeration!r}")
        with threads(self.n_jobs):
            self._run(int(n_iter), float(exaggeration), float(momentum), learning_rate)
        return self

    def kl_divergence(self, Y: np.ndarray | None = None) -> float:
        """KL(P‖R) of ``Y`` (default: the current embedding) under the fitted P and prior."""
        Y = self.embedding_ if Y is None else np.asarray(Y, dtype=np.float64)
        return self._descent().kl(Y)

    def transform(self, X_new, prior_new=None, *, perplexity: float = 5.0, n_iter: int = 250,
                  theta: float = 0.5) -> np.ndarray:
        """Place new points into the fitted map without moving it.

        Each new point is attracted to its ``3·perplexity`` nearest training points and
        repelled by all of them, with the conditional pair weights of the fitted prior;
        new points do not interact. See :mod:`ctsne.estimator.placement` for the objective.
        ``fit_transform`` remains the fitting path.

        Parameters
        ----------
        X_new : array-like (m, n_features_in_)
        prior_new : labels (m,) or (m, c), optional
            The new points' labels in the fitted prior's columns. A label unseen in
            training is a class of its own (weight β' to every training point); leaving
            it out (for a model fitted with a prior) gives every pair β', with a warning.
        perplexity : float, default 5
            Of the new points' affinities (a low value places points more locally; 5
            is openTSNE's choice as well).
        n_iter : int, default 250
            Most iterations; a point stops once its step stayed below 1e-4 for 5 steps.
        theta : float, default 0.5
            Accuracy of the repulsion from the training points; 0 sums it exactly. In 2-D
            with ``theta > 0`` it is read from fields tabulated once on an FFT grid
            (:mod:`ctsne.forces.repulsion.field`); Barnes-Hut trees with this opening
            angle serve 1-D and 3-D maps, priors with very many classes and points off
            the grid.

        Returns
        -------
        ndarray (m, n_components)
        """
        X_ref, X_new = self._reference_pair(self._new_points(X_new))
        with threads(self.n_jobs):
            return self._engine().place(X_ref, self.embedding_, X_new, self.prior_, prior_new,
                                        perplexity=perplexity, n_iter=n_iter, theta=theta,
                                        metric=self.metric, n_jobs=self.n_jobs)


# The Parameters section is built from the parameter table, the one place of each
# parameter's default, documentation and admissible values.
ConditionalTSNE.__doc__ = with_parameters(ConditionalTSNE.__doc__)

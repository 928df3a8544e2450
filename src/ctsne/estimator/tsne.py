"""ConditionalTSNE: the scikit-learn estimator (validation and orchestration only)."""

from __future__ import annotations

import contextlib
import numbers
import sys
import time
import warnings

import numba
import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, clone

from .._progress import progress_bar
from ..affinities.modes import check_affinity_params, input_affinities
from ..affinities.standard import n_neighbors_for
from ..checks import check_spread
from ..forces.gradient import ConditionalGradient
from ..optimization.initialization import initial_embedding
from ..optimization.optimizer import OptimizerState, auto_learning_rate, gradient_descent
from ..prior import make_prior

__all__ = ["ConditionalTSNE"]

_METHODS = ("auto", "exact", "bh", "fft")
_MAX_DIMS = {"bh": 3, "fft": 2}


@contextlib.contextmanager
def _threads(n_jobs: int | None):
    """Limit numba's threads for the duration of a fit."""
    if n_jobs is None or n_jobs == -1:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_jobs), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _check_X(X) -> np.ndarray:
    if hasattr(X, "toarray"):
        raise TypeError("X is a sparse matrix; pass a dense array (X.toarray())")
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"X must be a numeric array of shape (n_samples, n_features): {exc}"
        ) from None
    if X.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features), got shape {X.shape}; "
            + ("use X.reshape(-1, 1) for a single feature" if X.ndim == 1
               else "flatten the features")
        )
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))
        rows = ", ".join(str(r) for r in np.unique(bad[:, 0])[:10])
        raise ValueError(
            f"X has {len(bad)} NaN or infinite value(s) "
            f"(rows {rows}{' …' if len(bad) > 10 else ''}); "
            "impute or drop them first"
        )
    return X


class ConditionalTSNE(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Conditional t-SNE: a t-SNE embedding that factors out known labels.

    Pairs of points in the same prior class get weight α', pairs in different classes
    β' (paper Eq. 4 ties them: ``α'ρ + β'(1 − ρ) = 1``). With β' < 1 the embedding no
    longer needs to show the prior, so other structure appears; β' > 1 strengthens it;
    ``prior=None`` (or β' = 1) is plain t-SNE.

    Parameters
    ----------
    n_components : int, default 2
        Output dimensions (Barnes-Hut up to 3, FFT up to 2, exact any).
    perplexity : float, default 30
        Effective number of neighbours; ``k = min(n − 1, 3·perplexity)`` neighbours are used.
    beta : float, optional
        β', the weight of pairs in different classes; None means 0.01 (the paper's rule
        of thumb) unless ``alpha`` is given.
    alpha : float, optional
        α' instead of β' (give one of the two, not both).
    combine : {"joint", "product"}, default "joint"
        Several priors as joint classes (the paper's f₁₋₆) or as independent factors.
    missing : {"class", "error"}, default "class"
        A missing label (None, NaN, pandas NA) is a class of its own, or an error.
    method : {"auto", "exact", "bh", "fft"}, default "auto"
        Repulsion engine; "auto" chooses per class by size and output dimension, and
        sends a term with a small share of the normaliser (the all-points term at small
        β') to a coarse FFT grid within its error budget (see
        :mod:`ctsne.forces.repulsion.conditional`).
    theta : float, default 0.5
        Barnes-Hut opening angle of the dominant terms; minor terms open wider for the
        same absolute error.
    early_exaggeration : float, default 12
    early_exaggeration_iter : int, default 250
    n_iter : int, default 500
        Iterations after the early-exaggeration phase.
    learning_rate : float or "auto", default "auto"
        "auto" is ``max(n / (4·exaggeration), 50)`` per phase (factor-4 gradient).
    init : {"pca", "random"} or ndarray (n, n_components), default "pca"
        "pca" with a prior uses the principal axes of X with each class's mean removed,
        so the start does not already show the prior.
    neighbors : {"auto", "exact", "approx"}, default "auto"
        "auto": exact search up to 10,000 points (200,000 with at most 15 features),
        pynndescent above (see :mod:`ctsne.neighbors.search` for the measurements).
    metric : str, default "euclidean"
    affinities : {"auto", "standard", "balanced", "revised"}, default "auto"
        How the input affinities P treat the prior (README, "Priors that separate the
        data"). "standard": t-SNE's P. "balanced": each point's neighbours are drawn from
        its own class and from the other classes separately, each list calibrated on its
        own (:mod:`ctsne.affinities.balanced`), so that P connects classes the input space keeps
        apart. "revised": Heiter et al.'s revised ct-SNE P, within- and across-label
        lists with the within-label part scaled by α = ``within_weight``; with β' = 1
        (``beta=1``) this is their method (plain t-SNE on the conditioned P), with the
        default β' it combines P-side and Q-side conditioning. How α relates to β': at
        the optimum a pair's embedding similarity follows p_ij / w_ij, so own-class
        pairs weigh α relative to other pairs on the P side as they weigh β'/α' on the
        Q side; the combination gives about α·β'/α'. "auto": the standard P, switched
        to the balanced one when the prior separates the data (:mod:`ctsne.affinities.mixing`);
        any other prior keeps exactly the standard P.
    within_weight : float, optional
        "balanced": the own-class share of each point's conditional affinities, in
        (0, 1), default 0.85. "revised": α in (0, 1], default 0.5. Ignored otherwise.
    max_step_norm : float or None, default 5
        Cap on each point's step length per iteration.
    random_state : int, Generator or None
        Seeds the initialisation and the approximate neighbour search.
    n_jobs : int or None
        Threads for the numba kernels (None: all).
    verbose : bool, default False
        Progress on stderr for the affinities and the optimisation, with the KL: tqdm
        bars on a terminal, a plain line every tenth (at most 50 iterations) otherwise.
    callbacks : callable or list of callables (iteration, kl, embedding) -> stop?
    callbacks_every_iters : int, default 50

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
        The affinities actually built: "standard", "balanced" or "revised".
    prior_mixing_ : PriorMixing or None
        Share of ``P_``'s mass across prior classes against random labels
        (:class:`ctsne.affinities.mixing.PriorMixing`, ``to_dict()`` for JSON); None without a prior.
        When "auto" switched, ``standard_mixing_`` holds the standard P's.
    n_iter_ : int
        Iterations run in total.
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
        learning_rate: float | str = "auto",
        init="pca",
        neighbors: str = "auto",
        metric: str = "euclidean",
        affinities: str = "auto",
        within_weight: float | None = None,
        max_step_norm: float | None = 5.0,
        random_state=None,
        n_jobs: int | None = None,
        verbose: bool = False,
        callbacks=None,
        callbacks_every_iters: int = 50,
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
        self.learning_rate = learning_rate
        self.init = init
        self.neighbors = neighbors
        self.metric = metric
        self.affinities = affinities
        self.within_weight = within_weight
        self.max_step_norm = max_step_norm
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callbacks = callbacks
        self.callbacks_every_iters = callbacks_every_iters

    # ------------------------------------------------------------------ validation
    def _check_params(self, n: int) -> None:
        def positive_int(name, allow_zero=False):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or v < (0 if allow_zero else 1):
                raise ValueError(f"{name} must be an integer ≥ {0 if allow_zero else 1}, got {v!r}")

        positive_int("n_components")
        positive_int("n_iter", allow_zero=True)
        positive_int("early_exaggeration_iter", allow_zero=True)
        positive_int("callbacks_every_iters")
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        limit = _MAX_DIMS.get(self.method)
        if limit is not None and self.n_components > limit:
            raise ValueError(
                f"method={self.method!r} supports up to {limit} output dimensions, got "
                f"n_components={self.n_components}; use method='exact' or fewer components"
            )
        if not isinstance(self.perplexity, numbers.Real) or not self.perplexity > 0:
            raise ValueError(f"perplexity must be a positive number, got {self.perplexity!r}")
        if n < 3:
            raise ValueError(f"t-SNE needs at least 3 points, X has {n}")
        k = n_neighbors_for(self.perplexity, n)
        if self.perplexity >= k:
            raise ValueError(
                f"perplexity={self.perplexity} is too large for {n} points: it must be below "
                f"n − 1 = {n - 1} (the neighbours available); "
                f"use perplexity ≤ {max(1, (n - 2) // 3)} "
                "or more points"
            )
        if not isinstance(self.theta, numbers.Real) or not np.isfinite(self.theta) \
                or self.theta < 0:
            raise ValueError(f"theta must be a finite number ≥ 0, got {self.theta!r}")
        v = self.early_exaggeration
        if not isinstance(v, numbers.Real) or not np.isfinite(v) or v <= 0:
            raise ValueError(f"early_exaggeration must be a finite number > 0 (1 means none, "
                             f"12 is usual), got {v!r}")
        if not (self.learning_rate == "auto" or (
                isinstance(self.learning_rate, numbers.Real) and self.learning_rate > 0)):
            raise ValueError(f"learning_rate must be 'auto' or a positive number, got "
                             f"{self.learning_rate!r}")
        if self.neighbors not in ("auto", "exact", "approx"):
            raise ValueError(
                f"neighbors must be 'auto', 'exact' or 'approx', got {self.neighbors!r}"
            )
        check_affinity_params(self.affinities, self.within_weight)
        if self.beta is not None and self.alpha is not None:
            raise ValueError(f"give beta or alpha, not both (got beta={self.beta!r}, "
                             f"alpha={self.alpha!r}): the other follows from the class sizes")

    # ------------------------------------------------------------------ fitting
    def fit(self, X, prior=None, *, knn=None) -> ConditionalTSNE:
        """Embed ``X`` factoring out ``prior``; see :meth:`fit_transform`."""
        self.fit_transform(X, prior, knn=knn)
        return self

    def fit_transform(self, X, prior=None, y=None, *, knn=None) -> np.ndarray:
        """Embed ``X`` (n, p) factoring out ``prior`` and return the embedding.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        prior : labels (n,), labels (n, m), list of label arrays, DataFrame, or None
            The known structure to factor out; any hashable values. ``None`` is t-SNE.
            (Second positional argument, so the estimator works in a Pipeline.)
        y : ignored
        knn : (indices, distances), optional
            Precomputed neighbours of X's rows, each (n, k), self left out (e.g. from
            :func:`ctsne.affinities.precomputed.knn_from_graph`): P is calibrated on them instead of
            searching. With k < 3·perplexity the perplexity is lowered to k/3, with a
            warning; ``perplexity_`` holds the value used.
        """
        X = _check_X(X)
        n = X.shape[0]
        self._check_params(n)
        check_spread(X)
        if knn is not None:
            from ..affinities.precomputed import check_knn

            knn = check_knn(knn, n)
        classes, Y0 = self._start(X, prior)

        with _threads(self.n_jobs):
            t0 = time.perf_counter()
            by = classes
            if by is None and self.prior_ is not None and self.affinities != "auto":
                by = self.prior_.joint_codes()  # e.g. revised P with beta=1 (plain Q)
            if knn is None:
                self.P_, self.perplexity_ = self._affinities(X, by), float(self.perplexity)
            else:
                from ..affinities.precomputed import knn_affinities

                if self.affinities in ("balanced", "revised"):
                    raise ValueError(f"affinities={self.affinities!r} searches its own "
                                     "neighbours within and across classes; it cannot use "
                                     "precomputed knn (use affinities='auto' or 'standard')")
                self.P_, self.perplexity_ = knn_affinities(*knn, self.perplexity)
                self._record_mixing(self.P_, by)
            self.training_data_ = X
            self.timings_ = {"affinities": time.perf_counter() - t0, "optimization": 0.0}
            self._optimize_from(Y0)
        return self.embedding_

    def _start(self, X: np.ndarray, prior) -> tuple[np.ndarray | None, np.ndarray]:
        """Encode the prior and set the fitted weights; the joint classes and the start."""
        beta = 0.01 if self.beta is None and self.alpha is None else self.beta
        self.prior_ = make_prior(prior, X.shape[0], beta=beta, alpha=self.alpha,
                                 combine=self.combine, missing=self.missing)
        classes = None
        if self.prior_ is not None and not self.prior_.is_trivial:
            classes = self.prior_.joint_codes()
        self.n_features_in_ = X.shape[1]
        self._n_features_out = self.n_components
        if self.prior_ is None:
            self.alpha_ = self.beta_ = 1.0
        else:
            a, b = self.prior_.alphas, self.prior_.betas
            self.alpha_ = float(a[0]) if len(a) == 1 else a.copy()
            self.beta_ = float(b[0]) if len(b) == 1 else b.copy()
        Y0 = initial_embedding(X, self.n_components, self.init, self.random_state, classes)
        return classes, Y0

    def _optimize_from(self, Y0: np.ndarray) -> None:
        """Both phases (early exaggeration, then the plain objective) from ``Y0``.

        A run stopped by Ctrl-C or by a callback does not start the second phase.
        """
        self.initial_embedding_ = Y0.copy()
        self.embedding_ = Y0
        self._state = OptimizerState.fresh(Y0.shape)
        self.n_iter_ = 0
        self.interrupted_ = self._stopped = False
        self._run(self.early_exaggeration_iter, self.early_exaggeration, 0.5)
        if not (self.interrupted_ or self._stopped):
            self._run(self.n_iter, 1.0, 0.8)

    def tsne_counterpart(self) -> ConditionalTSNE:
        """Plain t-SNE of the same data, for comparison: same P, same start, same schedule.

        Only the prior differs, so the difference between the two maps is what the prior
        changed. The neighbours and affinities are not recomputed.

        Returns
        -------
        ConditionalTSNE
            A new fitted model with ``prior_ = None``; this model is unchanged.
        """
        if not hasattr(self, "initial_embedding_"):
            raise RuntimeError("tsne_counterpart() needs a model fitted by this version of "
                               "ctsne; call fit() first")
        plain = clone(self).set_params(callbacks=None)
        plain.prior_ = None
        plain.alpha_ = plain.beta_ = 1.0
        plain.n_features_in_ = self.n_features_in_
        plain._n_features_out = self._n_features_out
        plain.P_ = self.P_
        plain.timings_ = {"affinities": 0.0, "optimization": 0.0}
        with _threads(plain.n_jobs):
            plain._optimize_from(self.initial_embedding_.copy())
        return plain

    def _affinities(self, X: np.ndarray, classes: np.ndarray | None):
        t0 = time.perf_counter()
        bar = None
        if self.verbose:
            bar = progress_bar(X.shape[0], "neighbours", "pt", leave=False)

        def progress(done, total):
            bar.update(done - bar.n)

        built = input_affinities(X, self.perplexity, classes, self.affinities,
                                 self.within_weight, neighbors=self.neighbors,
                                 metric=self.metric, random_state=self.random_state,
                                 n_jobs=self.n_jobs,
                                 progress=progress if bar is not None else None)
        P, self.affinities_ = built.P, built.mode
        self.prior_mixing_, self.standard_mixing_ = built.mixing, built.standard_mixing
        if bar is not None:
            bar.close()
            print(f"ctsne: affinities ({built.mode}): {X.shape[0]} points, {P.nnz} "
                  f"non-zeros, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            if built.standard_mixing is not None:
                print(f"ctsne: standard {built.standard_mixing.summary()}: the prior separates "
                      "the data, so P is label-balanced (affinities='balanced')",
                      file=sys.stderr)
            if built.mixing is not None:
                print(f"ctsne: {built.mixing.summary()}", file=sys.stderr)
        self._warn_if_separated(built.mode, built.mixing)
        return P

    def _record_mixing(self, P, classes: np.ndarray | None) -> None:
        """The diagnostic for a P built outside :func:`input_affinities` (precomputed knn)."""
        from ..affinities.mixing import prior_mixing

        self.affinities_, self.standard_mixing_ = "standard", None
        self.prior_mixing_ = None if classes is None else prior_mixing(P, classes)
        self._warn_if_separated("standard", self.prior_mixing_)

    @staticmethod
    def _warn_if_separated(mode: str, mixing) -> None:
        if mode == "standard" and mixing is not None and mixing.separates:
            warnings.warn(
                f"the prior separates the data: only {100 * mixing.cross:.1f} % of P's mass "
                f"lies across classes (random labels: {100 * mixing.expected:.1f} %), so "
                "ct-SNE cannot remove it; use affinities='balanced' "
                "(CLI: --affinities balanced)", UserWarning, stacklevel=5)

    def _gradient(self) -> ConditionalGradient:
        method = self.method
        if method == "auto" and self.n_components > 3:
            method = "exact"
        return ConditionalGradient(self.P_, self.prior_, self.n_components, method,
                                   {"bh": {"theta": self.theta}})

    def _run(self, n_iter: int, exaggeration: float, momentum: float,
             learning_rate=None) -> None:
        if n_iter == 0:
            return
        n = self.embedding_.shape[0]
        lr = self.learning_rate if learning_rate is None else learning_rate
        if lr == "auto":
            lr = auto_learning_rate(n, exaggeration)
        callbacks = self.callbacks
        if callbacks is None:
            callbacks = []
        elif callable(callbacks):
            callbacks = [callbacks]
        t0 = time.perf_counter()
        grad = self._gradient()
        bar = None
        if self.verbose:
            phase = "early exaggeration" if exaggeration != 1 else "optimisation"
            bar = progress_bar(n_iter, phase, "it")
        try:
            res = gradient_descent(
                self.embedding_, grad, n_iter, lr, momentum, exaggeration, self._state,
                max_step_norm=self.max_step_norm, callbacks=callbacks,
                callbacks_every_iters=self.callbacks_every_iters, progress=bar,
            )
        finally:
            if bar is not None:
                bar.close()
        self.n_iter_ = self._state.n_iter
        self.timings_["optimization"] += time.perf_counter() - t0
        for stage, seconds in grad.timings.items():
            self.timings_[stage] = self.timings_.get(stage, 0.0) + seconds
        self.interrupted_ = res.interrupted
        self._stopped = res.stopped_by_callback
        if res.interrupted:
            warnings.warn(
                f"optimisation interrupted after {self.n_iter_} iterations: embedding_ is "
                "partial; call optimize() to continue", UserWarning, stacklevel=3)
        self.kl_divergence_ = float(grad.kl(self.embedding_))

    def optimize(self, n_iter: int = 250, exaggeration: float = 1.0, momentum: float = 0.8,
                 learning_rate: float | str | None = None) -> ConditionalTSNE:
        """Continue optimising a fitted embedding (momentum and gains carry over).

        Parameters
        ----------
        n_iter : int
            Further iterations.
        exaggeration : float
            Multiplies the attraction; 1 is the plain objective.
        momentum : float
        learning_rate : float, "auto" or None (the estimator's setting)
        """
        if not hasattr(self, "embedding_"):
            raise RuntimeError("optimize() continues a fitted model; call fit() first")
        if not isinstance(n_iter, numbers.Integral) or n_iter < 0:
            raise ValueError(f"n_iter must be an integer ≥ 0, got {n_iter!r}")
        if not isinstance(exaggeration, numbers.Real) or not np.isfinite(exaggeration) \
                or exaggeration <= 0:
            raise ValueError(f"exaggeration must be a finite number > 0, got {exaggeration!r}")
        with _threads(self.n_jobs):
            self._run(int(n_iter), float(exaggeration), float(momentum), learning_rate)
        return self

    def kl_divergence(self, Y: np.ndarray | None = None) -> float:
        """KL(P‖R) of ``Y`` (default: the current embedding) under the fitted P and prior."""
        return float(self._gradient().kl(self.embedding_ if Y is None else
                                         np.asarray(Y, dtype=np.float64)))

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
        theta : float, default 0.5
            Barnes-Hut opening angle of the repulsion from the training points (0: exact).

        Returns
        -------
        ndarray (m, n_components)
        """
        from sklearn.exceptions import NotFittedError

        from .placement import place_points

        if not hasattr(self, "embedding_"):
            raise NotFittedError("transform() places points into a fitted map; call fit() "
                                 "or fit_transform() first")
        if not hasattr(self, "training_data_"):
            raise NotFittedError("this model no longer holds its training data "
                                 "(training_data_), which transform() needs; refit it")
        X_new = _check_X(X_new)
        if X_new.shape[1] != self.n_features_in_:
            raise ValueError(f"X_new has {X_new.shape[1]} features but the model was fitted "
                             f"on {self.n_features_in_}; give the same features, in the same "
                             "order")
        with _threads(self.n_jobs):
            return place_points(self.training_data_, self.embedding_, X_new, self.prior_,
                                prior_new, perplexity=perplexity, n_iter=n_iter, theta=theta,
                                metric=self.metric, n_jobs=self.n_jobs)

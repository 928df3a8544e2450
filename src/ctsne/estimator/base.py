"""What every conditional estimator shares: the fit, the prior, the affinities.

:class:`ConditionalEmbedding` is the base of ConditionalTSNE, ConditionalUMAP and
ConditionalLargeVis. It holds the one :meth:`~ConditionalEmbedding.fit_transform`:

1. check X and the parameters (the method's own checks, :meth:`_check_fit`), choose the
   engine (:mod:`ctsne.estimator.engine`), all before any work;
2. encode the prior (α', β', the joint classes);
3. build the input graph: the engine's neighbour lists, the affinity mode
   (:mod:`ctsne.affinities.modes`) in the method's graph family
   (:mod:`ctsne.affinities.graphs`, :meth:`_graph`), with the progress and the verbose
   report;
4. lay the map out from it (:meth:`_embed`, the method's own step).

It also holds the parameter table's defaults for models pickled by an earlier version,
scikit-learn's tags and the callbacks. A subclass holds its parameter table (``_table``),
its name in messages and its steps.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .._progress import progress_bar
from ..affinities.modes import (
    Affinities,
    AffinityMode,
    Precomputed,
    Standard,
    resolve_mode,
    warn_if_separated,
)
from ..affinities.options import mode_name
from ..checks import check_spread, to_safe_scale, warn_far_rows
from ..prior import Prior, make_prior
from ..shared_states import SharedStatePrior, shared_state_table
from .engine import Engine, choose_engine
from .parameters import Parameter
from .validation import DescribedInput, check_X, threads

__all__ = ["PRIOR_DOC", "ConditionalEmbedding", "callback_list", "document_prior",
           "given_prior"]

# fit's and fit_transform's prior arguments, documented once
PRIOR_DOC = """y : labels (n,), labels (n, m), list of label arrays, DataFrame, or None
            The prior, given positionally: ``fit(X, labels)`` (the place scikit-learn
            gives a target, so a Pipeline passes it along), unless ``prior`` is given.
        prior : the same, optional
            The known structure to factor out, by keyword (a Pipeline with metadata
            routing: ``set_fit_request(prior=True)``); any hashable values. ``None``
            is the plain method."""


def document_prior(method):
    """Decorator: ``PRIOR_DOC`` in the method's docstring (absent under ``python -OO``)."""
    if method.__doc__:
        method.__doc__ = method.__doc__.replace("PRIOR_DOC", PRIOR_DOC)
    return method


def given_prior(y, prior):
    """The prior of ``fit(X, labels)`` (``y``) or ``fit(X, prior=labels)`` (``prior``,
    which wins: a Pipeline may pass its own target as ``y`` beside a routed prior)."""
    return y if prior is None else prior


def callback_list(callbacks) -> list:
    """``callbacks`` (None, one callable or several) as a list."""
    if callbacks is None:
        return []
    return [callbacks] if callable(callbacks) else list(callbacks)


class ConditionalEmbedding(DescribedInput, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                           BaseEstimator):
    """The shared base of the conditional estimators (module note)."""

    _table: Mapping[str, Parameter] = {}
    _method_name = "ct-SNE"  # in messages

    # ------------------------------------------------------------------ conventions
    def __setstate__(self, state: dict) -> None:
        # A model pickled by an earlier version lacks the parameters added since: they
        # take their defaults, which reproduce what that version did.
        for name, row in self._table.items():
            state.setdefault(name, row.default)
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the second positional argument is the prior, which is optional, not a target
        tags.target_tags.required = False
        tags.non_deterministic = False  # a seed fixes the map (the invariance checks apply)
        return tags

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__())  # a copy: pickling leaves the model as it is
        state.pop("_fit_engine", None)  # a device handle; chosen again after loading
        state.pop("_fit_run", None)  # P's copy in the gradient's order; made again on use
        return state

    # ------------------------------------------------------------------ the engine
    def _engine_method(self) -> str:
        """The repulsion method the engine must offer ("auto" for the SGD layouts)."""
        return "auto"

    def _engine(self) -> Engine:
        """The engine of ``backend``, ``device`` and ``precision``, chosen once per fit
        (:func:`ctsne.estimator.engine.choose_engine`, which refuses what it cannot do)."""
        key = (self.backend, self.device, self.precision, self._engine_method(),
               self.n_components)
        cached = self.__dict__.get("_fit_engine")
        if cached is None or cached[0] != key:
            cached = (key, choose_engine(*key))
            self.__dict__["_fit_engine"] = cached
        return cached[1]

    # ------------------------------------------------------------------ the fit
    def fit(self, X, y=None, *, prior=None, knn=None, states=None):
        """Embed ``X`` factoring out the prior (``y``, or ``prior`` by keyword); see
        :meth:`fit_transform`.

        Returns
        -------
        self
        """
        self.fit_transform(X, y, prior=prior, knn=knn, states=states)
        return self

    @document_prior
    def fit_transform(self, X, y=None, *, prior=None, knn=None, states=None) -> np.ndarray:
        """Embed ``X`` (n, p) factoring out the prior and return the embedding.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
            A DataFrame's column names become ``feature_names_in_``.
        PRIOR_DOC
        knn : (indices, distances), optional
            Precomputed neighbours of X's rows, each (n, k), self left out (e.g. from
            :func:`ctsne.affinities.precomputed.knn_from_graph`), for the methods whose
            graph is t-SNE's P (ConditionalTSNE, ConditionalLargeVis): P is calibrated on
            them instead of searching. With k < 3·perplexity the perplexity is lowered
            to k/3, with a warning; ``perplexity_`` holds the value used.
        states : labels (n,), optional
            Each point's state (e.g. its cell type) for shared-state conditioning: the
            prior is removed only between points of the same state
            (:mod:`ctsne.shared_states`); given, they replace the states the fit would
            estimate (``conditioning="states"`` is then implied).

        Returns
        -------
        ndarray (n_samples, n_components)
        """
        prior = given_prior(y, prior)
        self._record_feature_names(X, reset=True)
        X = check_X(X)
        n = X.shape[0]
        engine = self._check_fit(n)  # refuses what the fit could not do, before any work
        check_spread(X)
        warn_far_rows(X, stacklevel=4)  # the user's call to fit (through fit_transform)
        mode = None if knn is None else self._given_lists(knn, n)
        self.__dict__.pop("input_provenance_", None)  # it described the previous data
        classes = self._encode_prior(prior, n)  # refuses β' out of range, before the search
        given_states = self._check_states(states, n, classes)
        self._set_input(X)
        start = self._prepare(X, classes)
        X_safe = to_safe_scale(X)
        # under shared states, "auto" builds the standard graph of the space where the
        # classes are aligned (a balanced graph links every point, a type one class holds
        # alone included, to the other classes)
        graph_on_aligned = mode is None and mode_name(self.affinities) == "auto"
        with threads(self.n_jobs):
            t0 = time.perf_counter()
            aligned = self._condition(X_safe, classes, given_states, graph_on_aligned)
            t_states = time.perf_counter() - t0
            if aligned is not None:
                X_graph, mode = to_safe_scale(aligned), Standard()
            else:
                X_graph = X_safe
            t0 = time.perf_counter()
            # the user's call to fit (through fit_transform)
            built = self._build_affinities(X_graph,
                                           self._search_classes(classes), self._graph(),
                                           random_state=self._search_seed(start), mode=mode,
                                           engine=engine, stacklevel=4)
            self._keep_affinities(built, time.perf_counter() - t0)
            # a P of the aligned space encodes the prior, as a balanced one does
            self._P_encodes_prior_ = aligned is not None
            self.timings_["states"] = t_states
            self._embed(X, classes, start)
        return self.embedding_

    # ------------------------------------------------------------------ conditioning
    def _check_states(self, states, n: int, classes) -> np.ndarray | None:
        """Given states as an array (n,), refused where they cannot apply."""
        if states is None:
            return None
        if self.prior_ is None:
            raise ValueError("states= are the states shared-state conditioning removes the "
                             "prior within; give a prior too (prior=...)")
        states = np.asarray(states)
        if states.shape != (n,):
            raise ValueError(f"states has shape {states.shape}; give one state per row of X, "
                             f"({n},)")
        if len(self.prior_.codes) != 1:
            raise ValueError("states= apply to one prior column; combine several priors into "
                             "joint classes (combine='joint')")
        return states

    def _condition(self, X: np.ndarray, classes: np.ndarray | None, given,
                   want_aligned: bool = True):
        """The prior's pair weights by ``conditioning``: the paper's, or shared-state
        weights (:mod:`ctsne.estimator.states`); sets ``conditioning_``, ``states_`` and
        ``shared_states_`` and says on stderr what was chosen when verbose. ``X`` at a safe
        scale. Returns the space where the classes are aligned where shared states were
        chosen and ``want_aligned``, else None (with given states and no use for that
        space, it is not computed)."""
        from ..shared_states import with_states
        from .states import (
            MIN_POINTS,
            SharedStates,
            choose_conditioning,
            classes_are_copies,
            estimate_states,
        )

        mode = self.conditioning if given is None else "states"
        if classes is None or mode == "classes" or self.prior_ is None:
            return None
        if len(self.prior_.codes) != 1:
            if mode == "states":
                raise ValueError("conditioning='states' takes one prior column; combine "
                                 "several priors into joint classes (combine='joint')")
            return None  # "auto": a product of priors keeps the paper's weights
        t0 = time.perf_counter()
        if given is not None and not want_aligned:
            states, aligned = given, None
        elif len(X) < MIN_POINTS or X.shape[1] < 2:
            if given is None and mode == "states":
                raise ValueError(f"conditioning='states' estimates the states from at least "
                                 f"{MIN_POINTS} points with 2 or more features (got "
                                 f"{X.shape[0]} × {X.shape[1]}): give states= or use "
                                 "conditioning='classes'")
            if given is None:
                return None  # "auto": too few points to find states in
            states, aligned = given, None
        else:
            if mode == "auto":
                from ..affinities.counterpart import counterpart_trust

                copies, why = classes_are_copies(*counterpart_trust(X, classes)[:2])
                if copies:
                    if self.verbose:
                        print(f"ctsne: conditioning classes: {why} "
                              f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
                    return None
            states, aligned = estimate_states(X, classes, random_state=self.random_state,
                                              given=given)
        shared = with_states(self.prior_, states)
        table = shared_state_table(shared)
        reason = "as asked (conditioning='states')" if mode == "states" else ""
        if mode == "auto":
            mode, reason = choose_conditioning(table)
        found = SharedStates(table, self.prior_.classes[0], reason)
        if self.verbose:
            k = len(table)
            print(f"ctsne: conditioning {mode}: {k} state{'' if k == 1 else 's'}, {reason} "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
            for line in found.lines():
                print(f"ctsne:   {line}", file=sys.stderr)
        if mode != "states":
            return None
        self.prior_ = shared
        self.conditioning_, self.states_, self.shared_states_ = mode, shared.states, found
        return aligned if want_aligned else None

    # the method's steps of the fit
    def _check_fit(self, n: int) -> Engine:  # pragma: no cover
        """Refuse invalid parameters for ``n`` points (ValueError); the fit's engine."""
        raise NotImplementedError

    def _graph(self):  # pragma: no cover
        """The graph family of :mod:`ctsne.affinities.graphs` the method lays out."""
        raise NotImplementedError

    def _search_classes(self, classes: np.ndarray | None) -> np.ndarray | None:
        """The classes the neighbour lists are searched by (the prior's joint classes)."""
        return classes

    def _prepare(self, X: np.ndarray, classes: np.ndarray | None):  # pragma: no cover
        """What the method draws before the search (its start, or its seeds: a shared
        ``random_state`` generator is drawn from in this order); handed to the steps
        below."""
        raise NotImplementedError

    def _search_seed(self, start):
        """The neighbour search's seed."""
        return self.random_state

    def _keep_affinities(self, built: Affinities, seconds: float) -> None:  # pragma: no cover
        """Keep the built graph as the fitted model's attribute; start ``timings_``."""
        raise NotImplementedError

    def _embed(self, X: np.ndarray, classes: np.ndarray | None,
               start) -> None:  # pragma: no cover
        """Lay the map out from the kept graph and ``start``: set ``embedding_``."""
        raise NotImplementedError

    def _given_lists(self, knn, n: int) -> Precomputed:
        """The mode of ``fit(..., knn=...)``, refused where the method's graph or the
        ``affinities`` parameter cannot use given lists."""
        from ..affinities.precomputed import check_knn

        if "precomputed" not in self._graph().supports:
            raise ValueError(f"{type(self).__name__} builds its graph from its own neighbour "
                             "search; knn= (precomputed neighbours) is for the methods whose "
                             "graph is t-SNE's P (ConditionalTSNE, ConditionalLargeVis)")
        if mode_name(self.affinities) in ("balanced", "revised"):
            raise ValueError(f"affinities={self.affinities!r} searches its own "
                             "neighbours within and across classes; it cannot use "
                             "precomputed knn (use affinities='auto' or 'standard')")
        return Precomputed(*check_knn(knn, n))

    # ------------------------------------------------------------------ the prior
    def _encode_prior(self, prior, n: int) -> np.ndarray | None:
        """Set ``prior_``, ``alpha_`` and ``beta_`` (only here, with the paper's weights:
        ``conditioning_`` "classes"); the joint classes, or None when there is no prior or
        it does not split the points.

        ``prior``: labels as :func:`ctsne.prior.make_prior` takes them, or an encoded
        :class:`~ctsne.prior.Prior`, used as is (with its own α'/β').
        """
        if isinstance(prior, Prior):
            if prior.n != n:
                raise ValueError(f"the prior encodes {prior.n} points, the model has {n}")
            self.prior_ = prior
        else:
            beta = self._table["beta"].resolve(self.get_params(deep=False))
            self.prior_ = make_prior(prior, n, beta=beta, alpha=self.alpha,
                                     combine=self.combine, missing=self.missing)
        # a freshly encoded prior has the paper's weights (_condition may change them); an
        # encoded prior with states keeps its own
        self.conditioning_, self.states_, self.shared_states_ = "classes", None, None
        if isinstance(self.prior_, SharedStatePrior):
            from .states import SharedStates

            self.conditioning_, self.states_ = "states", self.prior_.states
            self.shared_states_ = SharedStates(shared_state_table(self.prior_),
                                               self.prior_.classes[0], "given with the prior")
        if self.prior_ is None:
            self.alpha_ = self.beta_ = 1.0
            return None
        a, b = self.prior_.alphas, self.prior_.betas
        self.alpha_ = float(a[0]) if len(a) == 1 else a.copy()
        self.beta_ = float(b[0]) if len(b) == 1 else b.copy()
        return None if self.prior_.is_trivial else self.prior_.joint_codes()

    def _set_input(self, X: np.ndarray) -> None:
        self.n_features_in_ = X.shape[1]
        self._n_features_out = self.n_components
        self.training_data_ = X

    # ------------------------------------------------------------------ the affinities
    def _affinity_mode(self) -> AffinityMode:
        """The ``affinities`` parameter (a name or an object) as a mode object."""
        return resolve_mode(self.affinities, self.within_weight)

    def _build_affinities(self, X: np.ndarray, classes: np.ndarray | None, graph, *,
                          random_state=None, mode: AffinityMode | None = None,
                          engine=None, stacklevel: int = 2) -> Affinities:
        """The input graph of ``X`` (at a safe scale) under ``classes``; records
        ``affinities_``, ``prior_mixing_`` and ``standard_mixing_``, warns where a standard
        graph cannot remove the prior and reports on stderr when verbose.

        ``stacklevel`` counts from the caller of this method to the user's call.
        """
        t0 = time.perf_counter()
        bar = progress = None
        if self.verbose:
            bar = progress_bar(X.shape[0], "neighbours", "pt", leave=False)

            def progress(done, total):
                bar.update(done - bar.n)

        engine = self._engine() if engine is None else engine
        lists = engine.lists(X, classes, method=self.neighbors, metric=self.metric,
                             random_state=random_state, n_jobs=self.n_jobs, progress=progress)
        labelled = None if self.prior_ is None else ~self.prior_.missing_mask()
        mode = self._affinity_mode() if mode is None else mode
        try:
            built = engine.affinities(mode, lists, graph, labelled)
        finally:
            if bar is not None:
                bar.close()
        del lists
        if self.verbose:
            for line in built.describe(time.perf_counter() - t0):
                print(f"ctsne: {line}", file=sys.stderr)
        self.affinities_ = built.mode
        self.prior_mixing_, self.standard_mixing_ = built.mixing, built.standard_mixing
        warn_if_separated(built, stacklevel=stacklevel + 1, method=self._method_name)
        return built

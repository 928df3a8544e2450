"""ConditionalUMAP: UMAP that factors out known labels (the paper's Appendix B).

UMAP lays out a weighted graph by SGD: each sampled edge pulls its ends together through
the curve ``φ(d) = 1 / (1 + a·d^(2b))`` and each of ``negative_sample_rate`` negative
samples pushes the head away. The paper conditions UMAP by re-weighting that repulsion:
pairs of the same prior class get weight α > 1, pairs of different classes β < 1, as
two free parameters. Here they are tied as ct-SNE's are (paper Eq. 4):

    α'ρ + β'(1 − ρ) = 1,    ρ = Σ_l n_l(n_l − 1) / (n(n − 1)),

so the mean pair weight is 1, the expected repulsion of a uniformly drawn negative
equals plain UMAP's and one parameter (β', default ``ctsne.prior.DEFAULT_BETA``) sets
the strength. β' < 1 gives α' > 1: the paper's regime α > 1 > β, in which the map no
longer needs to show the prior; β' > 1 strengthens the prior instead. Rather than
drawing uniform negatives that mostly carry the small weight β', negatives are drawn by
class in proportion to the pair weights and each carries the same weight
(:mod:`ctsne.optimization.negatives`): the same expected force with none wasted.

The repulsion cannot remove a prior that the graph does not connect across: where the
prior separates the data, ``affinities="auto"`` (the default) lays out the label-balanced
graph instead, chosen by ConditionalTSNE's rule (:class:`ctsne.affinities.modes.Auto`).

:class:`GraphEmbedding` holds the fit's steps UMAP and LargeVis share (validation, the
start, the SGD, ``transform``) on the shared fit of
:class:`~ctsne.estimator.base.ConditionalEmbedding`; :class:`ConditionalUMAP` adds UMAP's
fuzzy graph and curve, :class:`ctsne.estimator.largevis.ConditionalLargeVis` t-SNE's P
and the Student-t kernel.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import scipy.sparse as sp

from .._progress import progress_bar
from ..affinities.fuzzy import membership_strengths, smooth_knn
from ..affinities.graphs import FuzzyGraph
from ..forces.curve import fit_curve
from ..neighbors.search import is_exact_search
from ..optimization.negatives import NegativeSampler
from ..optimization.sgd import edge_keys, epochs_per_sample
from ..optimization.spectral import pca_init, spectral_init
from ..shared_states import SharedStatePrior
from .base import ConditionalEmbedding, callback_list
from .parameters import with_parameters
from .placement import NO_PRIOR_NEW, encode_new_prior, reference_neighbors
from .umap_parameters import UMAP_PARAMETERS, check_embedding_params, default_epochs
from .validation import threads

__all__ = ["ConditionalUMAP", "GraphEmbedding"]

# Epochs of transform(): a third of the fit's, as umap-learn's transform, but at least
# this many (a fit of 50 epochs would otherwise place points in 16).
TRANSFORM_MIN_EPOCHS = 30
# transform()'s initial learning rate as a share of the fit's (umap-learn's choice: the
# new points start at their neighbours' mean position, already close to where they go).
TRANSFORM_LR_SHARE = 0.25
# Every start is rescaled into [0, BOX]ⁿ, as umap-learn's fit does whatever the start:
# the curve's a and b and the learning rate suit maps of that size.
BOX = 10.0
# Seeds drawn from random_state lie below this (pynndescent takes an int32 seed).
_SEED_HIGH = 2**31 - 1


def _to_box(Y: np.ndarray) -> np.ndarray:
    """``Y`` rescaled per axis into ``[0, BOX]`` (an axis without range goes to 0)."""
    low = Y.min(axis=0)
    span = Y.max(axis=0) - low
    return BOX * (Y - low) / np.where(span > 0, span, 1.0)


class GraphEmbedding(ConditionalEmbedding):
    """What ConditionalUMAP and ConditionalLargeVis share: all but the graph and the curve.

    Subclasses set ``_table`` (their parameter table) and implement ``_graph``,
    ``_curve``, ``_n_reference`` and ``_new_weights``.
    """

    _table = UMAP_PARAMETERS
    _method_name = "conditional UMAP"  # in messages

    # ------------------------------------------------------------------ hooks
    def _edge_weights(self, P: sp.csr_matrix) -> sp.csr_matrix:
        """The layout's edge weights from the built graph (largest weight 1)."""
        return P

    def _curve(self) -> tuple[float, float]:  # pragma: no cover
        """``(a, b)`` of the map's similarity ``1 / (1 + a·d^(2b))``."""
        raise NotImplementedError

    def _n_reference(self) -> int:  # pragma: no cover
        """Neighbours of a new point among the training points in :meth:`transform`."""
        raise NotImplementedError

    def _new_weights(self, idx, dist) -> np.ndarray:  # pragma: no cover
        """Edge weights of new points to their training neighbours (the graph's rows)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ conventions
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a seed fixes the map on any number of threads (optimization/sgd.py)
        tags.non_deterministic = False
        return tags

    # ------------------------------------------------------------------ the fit's steps
    def _check_fit(self, n: int):
        check_embedding_params(self._table, self.get_params(deep=False), n)
        return self._engine()  # refuses a torch fit it cannot run, before any work

    def _prepare(self, X: np.ndarray, classes: np.ndarray | None):
        given = self._check_init(len(X))
        a, b = self._curve()  # refuses a curve it cannot fit, before the search
        self.a_, self.b_ = float(a), float(b)
        n = len(X)
        self.n_epochs_ = int(default_epochs(n) if self.n_epochs is None else self.n_epochs)
        # one stream for everything random, so that a seed fixes the whole fit
        return given, np.random.default_rng(self.random_state).integers(_SEED_HIGH, size=3)

    def _search_seed(self, start):
        return None if self.random_state is None else int(start[1][0])

    def _keep_affinities(self, built, seconds: float) -> None:
        self.graph_ = self._edge_weights(built.P)
        self.timings_ = {"graph": seconds}

    def _embed(self, X: np.ndarray, classes: np.ndarray | None, start) -> None:
        given, seeds = start
        t1 = time.perf_counter()
        Y = self._start(X, given, classes, int(seeds[1]))
        t2 = time.perf_counter()
        sampler = (NegativeSampler.uniform(len(X)) if classes is None
                   else NegativeSampler.from_classes(*self.prior_.group_weights()))
        self.embedding_ = self._layout(Y, self.graph_, sampler, int(seeds[2]))
        self.timings_.update(init=t2 - t1, optimization=time.perf_counter() - t2)

    def _check_init(self, n: int) -> np.ndarray | None:
        """A given start as a float64 (n, n_components) array, checked before any work."""
        if isinstance(self.init, str):
            return None
        try:
            Y = np.array(self.init, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"init must be 'spectral', 'pca', 'random' or a numeric array: "
                             f"{exc}") from None
        if Y.shape != (n, self.n_components):
            raise ValueError(f"init array has shape {Y.shape}; it must be (n_samples, "
                             f"n_components) = ({n}, {self.n_components})")
        if not np.all(np.isfinite(Y)):
            raise ValueError("init array contains NaN or infinite values")
        if len(Y) > self.n_components:
            # every force between two points lies along their difference, so a start in a
            # line (or a point, or a plane of a 3-D map) never leaves it; judged on the
            # start the SGD gets (each axis rescaled into the box)
            boxed = _to_box(Y)
            centred = boxed - boxed.mean(axis=0)
            sv = np.linalg.svd(centred / max(np.abs(centred).max(), np.finfo(float).tiny),
                               compute_uv=False)
            if sv[-1] <= 1e-12 * max(sv[0], np.finfo(float).tiny):
                raise ValueError(
                    f"init array spans fewer than n_components = {self.n_components} "
                    "dimensions (its points lie on a line, a plane or one place): the "
                    "map could never leave them; give a start that varies in every "
                    "direction, or init='spectral'")
        return Y

    def _start(self, X: np.ndarray, given: np.ndarray | None, classes: np.ndarray | None,
               seed: int) -> np.ndarray:
        """The start, rescaled into the box [0, BOX]ⁿ (see the ``init`` parameter)."""
        if given is not None:
            return _to_box(given)
        if self.init == "random":
            return np.random.default_rng(seed).uniform(0.0, BOX, size=(len(X), self.n_components))
        if self.init == "spectral":
            return _to_box(spectral_init(self.graph_, self.n_components, seed))
        # within-class PCA with a prior, as ConditionalTSNE starts
        return _to_box(pca_init(X, self.n_components, seed, classes=classes))

    def _layout(self, Y: np.ndarray, graph: sp.spmatrix, sampler: NegativeSampler, seed: int,
                *, n_epochs: int | None = None, lr: float | None = None, Y_ref=None,
                source_class=None) -> np.ndarray:
        """The SGD over ``graph``'s edges (rows move; columns index ``Y_ref`` if given)."""
        n_epochs = self.n_epochs_ if n_epochs is None else n_epochs
        keys = None
        if Y_ref is None:
            G = graph.tocoo()
            eps = epochs_per_sample(G.data, n_epochs)
        else:
            # New points move alone against the fixed map, so each gets its own schedule
            # (its strongest edge every epoch) and draws keyed by its own neighbour list:
            # its place then does not depend on the other new points or their order.
            C = graph.tocsr()
            C.sum_duplicates()  # canonical order, the one edge_keys and tocoo follow
            row_max = np.maximum(C.max(axis=1).toarray().ravel(), np.finfo(float).tiny)
            G = C.tocoo()
            eps = epochs_per_sample(G.data / row_max[G.row], n_epochs)
            keys = edge_keys(C)
        keep = eps > 0  # edges that would come up less than once in the run, as UMAP drops
        bar = None
        if self.verbose:
            bar = progress_bar(n_epochs, "transform" if Y_ref is not None else "epochs", "ep")
        user = [] if Y_ref is not None else callback_list(self.callbacks)
        every = max(1, n_epochs // 50)
        if user:  # the progress bar's calls are frequent and cheap; a user's may be neither
            every = int(self.callbacks_every_iters)
            if bar is not None:
                every = math.gcd(every, max(1, n_epochs // 50))

        def callback(done, Y_now):
            if bar is not None:
                bar.update(done - bar.n)
            due = done % int(self.callbacks_every_iters) == 0 or done == n_epochs
            # every callback runs (as ConditionalTSNE's); any True stops the fit
            return due and any([bool(f(done, None, Y_now)) for f in user])

        options = dict(gamma=self.repulsion_strength,
                       negative_sample_rate=self.negative_sample_rate,
                       initial_lr=self.learning_rate if lr is None else lr, seed=seed,
                       callback=callback if bar is not None or user else None,
                       callback_every=every)
        if Y_ref is not None:
            options.update(source_class=source_class, Y_ref=Y_ref,
                           keys=None if keys is None else keys[keep])
        try:
            return self._engine().layout(Y, G.row[keep], G.col[keep], eps[keep], n_epochs,
                                         self.a_, self.b_, sampler, **options)
        finally:
            if bar is not None:
                bar.close()

    # ------------------------------------------------------------------ new points
    def transform(self, X_new, prior_new=None) -> np.ndarray:
        """Place new points into the fitted map without moving it.

        Each new point is joined to its nearest training points (as many as a training
        point's list holds, found by the fit's search rule) with the weights a training
        point would give them, starts at their weighted mean position and moves by the
        fit's SGD with the map held fixed: ``n_epochs_ // 3`` epochs (at least 30) at a
        quarter of the learning rate, as umap-learn's transform. New points do not
        interact and their random draws are keyed by their own neighbour lists, so a point's
        place does not depend on which points come with it.

        Parameters
        ----------
        X_new : array-like (m, n_features_in_)
        prior_new : labels (m,) or (m, c), optional
            The new points' labels in the fitted prior's columns: their negatives are
            drawn with the fitted pair weights. A label unseen in training is a class of
            its own (weight β' to every training point); leaving ``prior_new`` out for a
            model fitted with a prior gives every pair β', with a warning.

        Returns
        -------
        ndarray (m, n_components)
        """
        X_new = self._new_points(X_new)
        m = X_new.shape[0]
        columns = self._new_columns(prior_new, m)  # refused or warned about before the work
        n_epochs = max(TRANSFORM_MIN_EPOCHS, self.n_epochs_ // 3)
        seed = int(np.random.default_rng(self.random_state).integers(_SEED_HIGH))
        with threads(self.n_jobs):
            idx, dist = self._reference_neighbors(X_new)
            w = self._new_weights(idx, dist)
            sampler, rows = self._transform_sampler(columns, idx, w)
            total = w.sum(axis=1, keepdims=True)
            share = np.where(total > 0, w / np.where(total > 0, total, 1.0), 1.0 / w.shape[1])
            Y = np.einsum("ik,ikd->id", share, self.embedding_[idx])
            graph = sp.csr_matrix((w.ravel(), (np.repeat(np.arange(m), idx.shape[1]),
                                               idx.ravel())), shape=(m, len(self.embedding_)))
            graph.eliminate_zeros()
            # the SGD kernel is compiled for writable maps (a fit moves the tails too); a
            # model loaded read-only (memory-mapped) has a read-only embedding_
            ref = self.embedding_ if self.embedding_.flags.writeable else self.embedding_.copy()
            return self._layout(Y, graph, sampler, seed, n_epochs=n_epochs,
                                lr=TRANSFORM_LR_SHARE * self.learning_rate, Y_ref=ref,
                                source_class=rows)

    def _new_columns(self, prior_new, m: int) -> list | None:
        """The new points' codes in the fitted prior's columns (unknown: −1), None without
        a prior; refuses ``prior_new`` without a prior, warns when it is missing."""
        prior = self.prior_
        columns = encode_new_prior(prior, prior_new, m)  # refuses prior_new without a prior
        if prior is None or prior.is_trivial:
            return None
        if not columns:
            warnings.warn(NO_PRIOR_NEW, UserWarning, stacklevel=3)
            columns = [np.full(m, -1, dtype=np.int64) for _ in prior.codes]
        return columns

    def _transform_sampler(self, columns, idx: np.ndarray, w: np.ndarray):
        """The negatives of new points: the fit's groups, plus a source row per new
        combination of labels (and, under shared states, of the state the point's
        neighbours of its own class hold); returns ``(sampler, source_class or None)``."""
        prior = self.prior_
        if columns is None:
            return NegativeSampler.uniform(len(self.embedding_)), None
        joint, W = prior.group_weights()
        if isinstance(prior, SharedStatePrior):
            columns = [*columns, prior.states_of(columns[0], idx, w)]
        combos, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
        _, extra = prior.group_weights(list(combos.T))
        sampler = NegativeSampler.from_classes(joint, W).with_source_rows(extra)
        return sampler, len(W) + inverse.reshape(-1).astype(np.int64)

    def _reference_neighbors(self, X_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The new rows' nearest training rows, searched as the fit searched its lists."""
        X_ref, X_new = self._reference_pair(X_new, stacklevel=5)
        k = self._n_reference()
        if is_exact_search(*X_ref.shape, self.neighbors):
            return reference_neighbors(X_ref, X_new, k, self.metric, self.n_jobs)
        from ..neighbors.descent import descent_index, quiet_cache_notes

        seed = None if self.random_state is None else int(
            np.random.default_rng(self.random_state).integers(_SEED_HIGH))
        index = descent_index(X_ref, n_neighbors=k + 1, metric=self.metric,
                              random_state=seed,
                              n_jobs=-1 if self.n_jobs is None else self.n_jobs, low_memory=True)
        with quiet_cache_notes():
            idx, dist = index.query(X_new, k=k)
        return idx.astype(np.int64), dist.astype(np.float64)


class ConditionalUMAP(GraphEmbedding):
    """Conditional UMAP: a UMAP embedding that factors out known labels.

    UMAP's fuzzy graph and curve, with the repulsion re-weighted by the prior: negatives
    of the same class weigh α', of different classes β', tied by ``α'ρ + β'(1 − ρ) = 1``
    (the paper's Eq. 4, so that the expected repulsion per uniform negative equals
    UMAP's) and drawn by class in proportion to those weights. β' < 1 (so α' > 1, the
    paper's α > 1 > β) removes the prior; ``prior=None`` is plain UMAP. Details in
    :mod:`ctsne.estimator.umap`.

    Parameters: from ctsne.estimator.umap_parameters.UMAP_PARAMETERS.

    Attributes
    ----------
    embedding_ : ndarray (n, n_components)
    graph_ : csr_matrix (n, n)
        The edge weights laid out: the fuzzy graph (memberships in (0, 1]), or the
        label-balanced P divided by its largest entry.
    affinities_ : str
        The graph actually used: "standard" (fuzzy) or "balanced".
    prior_ : Prior or None
    alpha_, beta_ : float or ndarray
        The weights used (one per prior with ``combine="product"``); 1.0 without a prior.
    prior_mixing_ : PriorMixing or None
        Share of ``graph_``'s weight across prior classes against random labels (None
        without a prior); ``standard_mixing_`` holds the fuzzy graph's when "auto"
        switched to the balanced one (else None).
    a_, b_ : float
        The curve ``1 / (1 + a·d^(2b))``.
    n_epochs_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        X's column names when X was a DataFrame with string column names.
    training_data_ : ndarray (n, p)
        The fitted X, kept for :meth:`transform` (delete it for a smaller model).
    timings_ : dict
        Seconds spent on the graph (neighbours included), the start and the SGD.
    """

    _table = UMAP_PARAMETERS
    _method_name = "conditional UMAP"

    def __init__(self, n_neighbors: int = 15, n_components: int = 2, min_dist: float = 0.1,
                 spread: float = 1.0, beta: float | None = None, alpha: float | None = None,
                 combine: str = "joint", missing: str = "class", n_epochs: int | None = None,
                 learning_rate: float = 1.0, negative_sample_rate: int = 5,
                 repulsion_strength: float = 1.0, init="spectral", affinities: str = "auto",
                 within_weight: float | None = None, conditioning: str = "auto",
                 neighbors: str = "auto",
                 metric: str = "euclidean", local_connectivity: float = 1.0,
                 set_op_mix_ratio: float = 1.0, random_state=None, n_jobs: int | None = None,
                 verbose: bool = False, callbacks=None,
                 callbacks_every_iters: int = 50, backend: str = "numba",
                 device: str | None = None, precision: str = "auto"):
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.min_dist = min_dist
        self.spread = spread
        self.beta = beta
        self.alpha = alpha
        self.combine = combine
        self.missing = missing
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.negative_sample_rate = negative_sample_rate
        self.repulsion_strength = repulsion_strength
        self.init = init
        self.affinities = affinities
        self.within_weight = within_weight
        self.conditioning = conditioning
        self.neighbors = neighbors
        self.metric = metric
        self.local_connectivity = local_connectivity
        self.set_op_mix_ratio = set_op_mix_ratio
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callbacks = callbacks
        self.callbacks_every_iters = callbacks_every_iters
        self.backend = backend
        self.device = device
        self.precision = precision

    def _curve(self) -> tuple[float, float]:
        return fit_curve(self.spread, self.min_dist)

    def _n_reference(self) -> int:
        return self.n_neighbors - 1

    def _new_weights(self, idx: np.ndarray, dist: np.ndarray) -> np.ndarray:
        # a new point's list is as long as a training point's (self left out), so the same
        # target and local_connectivity give it the memberships a training point would have
        sigmas, rhos = smooth_knn(dist, self.n_neighbors, self.local_connectivity)
        # membership_strengths drops an entry naming its own row (a training point's
        # self); new row i is not training point i, so the indices are shifted past the rows
        return membership_strengths(idx + len(idx), dist, sigmas, rhos)

    def _graph(self) -> FuzzyGraph:
        return FuzzyGraph(self.n_neighbors, self.set_op_mix_ratio, self.local_connectivity)


ConditionalUMAP.__doc__ = with_parameters(
    ConditionalUMAP.__doc__, UMAP_PARAMETERS,
    "Parameters: from ctsne.estimator.umap_parameters.UMAP_PARAMETERS.")

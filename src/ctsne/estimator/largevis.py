"""ConditionalLargeVis: LargeVis (Tang et al., WWW 2016) that factors out known labels.

LargeVis lays out t-SNE's input affinities by the same sampled SGD as UMAP: edges drawn
in proportion to ``p_ij`` pull their ends together, negatives push apart, with the
Student-t similarity ``1 / (1 + d²)`` (UMAP's curve with a = b = 1) and a strong
repulsion (γ = 7). The paper's Appendix B notes that LargeVis can be conditioned as
ct-SNE is; here it is conditioned exactly as :class:`~ctsne.estimator.umap.ConditionalUMAP`
(negatives weighted α' within and β' across prior classes, tied by Eq. 4, drawn by
class), and its graph is ConditionalTSNE's P with the same ``affinities`` modes, the
label-balanced P where the prior separates the data included. Both estimators share
the SGD kernel (:mod:`ctsne.optimization.sgd`) and everything but the graph and the curve
(:class:`~ctsne.estimator.umap.GraphEmbedding`).
"""

from __future__ import annotations

import numpy as np

from ..affinities.calibration import calibrate
from ..affinities.graphs import PerplexityGraph
from ..affinities.options import n_neighbors_for
from .parameters import with_parameters
from .umap import GraphEmbedding
from .umap_parameters import LARGEVIS_PARAMETERS

__all__ = ["ConditionalLargeVis"]


class ConditionalLargeVis(GraphEmbedding):
    """Conditional LargeVis: LargeVis's layout of t-SNE's P, with ct-SNE's conditioning.

    Edge weights are P's entries (divided by the largest, which only sets the sampling
    rate), the map's similarity is the Student-t kernel ``1 / (1 + d²)`` and each
    negative repels with weight γ (``repulsion_strength``, LargeVis's 7) times the
    prior's pair weight: α' within a class, β' across, ``α'ρ + β'(1 − ρ) = 1`` as in
    :class:`~ctsne.estimator.umap.ConditionalUMAP`. ``prior=None`` is plain LargeVis.

    Parameters: from ctsne.estimator.umap_parameters.LARGEVIS_PARAMETERS.

    Attributes
    ----------
    embedding_ : ndarray (n, n_components)
    graph_ : csr_matrix (n, n)
        P divided by its largest entry.
    affinities_ : str
        The P actually built: "standard", "balanced" or "revised".
    prior_, alpha_, beta_, prior_mixing_, standard_mixing_
        As for :class:`~ctsne.estimator.umap.ConditionalUMAP`.
    a_, b_ : float
        1.0 and 1.0: the Student-t kernel.
    n_epochs_, n_features_in_, feature_names_in_, training_data_, timings_
        As for :class:`~ctsne.estimator.umap.ConditionalUMAP`.
    """

    _table = LARGEVIS_PARAMETERS
    _method_name = "conditional LargeVis"

    def __init__(self, perplexity: float = 30.0, n_components: int = 2,
                 beta: float | None = None, alpha: float | None = None, combine: str = "joint",
                 missing: str = "class", n_epochs: int | None = None,
                 learning_rate: float = 1.0, negative_sample_rate: int = 5,
                 repulsion_strength: float = 7.0, init="spectral", affinities: str = "auto",
                 within_weight: float | None = None, conditioning: str = "auto",
                 neighbors: str = "auto",
                 metric: str = "euclidean", random_state=None, n_jobs: int | None = None,
                 verbose: bool = False, callbacks=None,
                 callbacks_every_iters: int = 50, backend: str = "numba",
                 device: str | None = None, precision: str = "auto"):
        self.perplexity = perplexity
        self.n_components = n_components
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
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callbacks = callbacks
        self.callbacks_every_iters = callbacks_every_iters
        self.backend = backend
        self.device = device
        self.precision = precision

    def _curve(self) -> tuple[float, float]:
        return 1.0, 1.0  # φ = 1 / (1 + d²), LargeVis's (and t-SNE's) kernel

    def _n_reference(self) -> int:
        return n_neighbors_for(self.perplexity, len(self.training_data_))

    def _new_weights(self, idx: np.ndarray, dist: np.ndarray) -> np.ndarray:
        # a new point's conditional affinities, calibrated as a training row's were
        return calibrate(dist, self.perplexity)

    def _graph(self) -> PerplexityGraph:
        return PerplexityGraph(self.perplexity)

    def _edge_weights(self, P):
        # only the ratios matter to the sampling (edge e every max(w)/w_e epochs)
        return P / P.data.max()


ConditionalLargeVis.__doc__ = with_parameters(
    ConditionalLargeVis.__doc__, LARGEVIS_PARAMETERS,
    "Parameters: from ctsne.estimator.umap_parameters.LARGEVIS_PARAMETERS.")

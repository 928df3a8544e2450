"""Stage 5, the estimator: scikit-learn's interface over the stages before it.

- :mod:`~ctsne.estimator.tsne`: :class:`ConditionalTSNE`, validation and orchestration.
- :mod:`~ctsne.estimator.placement`: new points into a fitted map (``transform``).
"""

# Models pickled before the stage packages name ``ctsne.estimator.ConditionalTSNE``.
from .tsne import ConditionalTSNE

__all__ = ["ConditionalTSNE"]

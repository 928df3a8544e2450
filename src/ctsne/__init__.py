"""ctsne: conditional t-SNE, a t-SNE that factors out what you already know.

>>> from ctsne import ConditionalTSNE
>>> Y = ConditionalTSNE(beta=0.01, random_state=0).fit_transform(X, prior)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib

from .estimator import ConditionalTSNE
from .objective import ObjectiveTerms, exact_objective, exact_objective_terms
from .prior import make_prior

__version__ = "0.1.0"

__all__ = [
    "ConditionalTSNE",
    "ObjectiveTerms",
    "exact_objective",
    "exact_objective_terms",
    "make_prior",
    "__version__",
]

_SUBMODULES = {"metrics", "datasets", "ranking", "plotting", "baselines", "io", "cli"}


def __getattr__(name: str):
    # submodules load on first use, so `import ctsne` stays light
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ctsne' has no attribute {name!r}")

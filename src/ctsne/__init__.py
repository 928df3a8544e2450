"""ctsne: conditional t-SNE, a t-SNE that factors out what you already know.

>>> from ctsne import ConditionalTSNE
>>> Y = ConditionalTSNE(beta=0.01, random_state=0).fit_transform(X, prior)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Public names load on first use: `import ctsne` (and `ctsne --help`) must not pay for
# numba, scikit-learn and scipy until something actually needs them.
_LAZY = {
    "ConditionalTSNE": "estimator",
    "ObjectiveTerms": "objective",
    "exact_objective": "objective",
    "exact_objective_terms": "objective",
    "make_prior": "prior",
    "explore": "explorer",
}
_SUBMODULES = {"metrics", "datasets", "ranking", "plotting", "baselines", "io", "features",
               "cli", "tl", "pl"}

__all__ = [
    "ConditionalTSNE",
    "ObjectiveTerms",
    "exact_objective",
    "exact_objective_terms",
    "make_prior",
    "explore",
    "__version__",
]

if TYPE_CHECKING:  # pragma: no cover
    from .estimator import ConditionalTSNE
    from .explorer import explore
    from .objective import ObjectiveTerms, exact_objective, exact_objective_terms
    from .prior import make_prior


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ctsne' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_SUBMODULES])

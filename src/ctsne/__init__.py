"""ctsne: conditional t-SNE, a t-SNE that factors out what you already know.

>>> from ctsne import ConditionalTSNE
>>> Y = ConditionalTSNE(beta=0.01, random_state=0).fit_transform(X, prior)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import _moved

__version__ = "0.1.0"

_moved.install()  # old module paths named by pickled models (see ctsne._moved)

# Public names load on first use: `import ctsne` (and `ctsne --help`) must not pay for
# numba, scikit-learn and scipy until something actually needs them.
_LAZY = {
    "ConditionalTSNE": "estimator.tsne",
    "ConditionalUMAP": "estimator.umap",
    "ConditionalLargeVis": "estimator.largevis",
    "ObjectiveTerms": "forces.objective",
    "exact_objective": "forces.objective",
    "exact_objective_terms": "forces.objective",
    "make_prior": "prior",
    "explore": "interfaces.explorer",
}
_SUBMODULES = {"metrics", "datasets", "ranking", "plotting", "baselines", "tl", "pl"}

__all__ = [
    "ConditionalTSNE",
    "ConditionalUMAP",
    "ConditionalLargeVis",
    "ObjectiveTerms",
    "exact_objective",
    "exact_objective_terms",
    "make_prior",
    "explore",
    "__version__",
]

if TYPE_CHECKING:  # pragma: no cover
    from .estimator.largevis import ConditionalLargeVis
    from .estimator.tsne import ConditionalTSNE
    from .estimator.umap import ConditionalUMAP
    from .forces.objective import ObjectiveTerms, exact_objective, exact_objective_terms
    from .interfaces.explorer import explore
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

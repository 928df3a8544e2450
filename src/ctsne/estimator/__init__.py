"""Stage 5, the estimators: scikit-learn's interface over the stages before them.

- :mod:`~ctsne.estimator.parameters`: every ConditionalTSNE parameter in one table (light:
  the command line reads its defaults from it); :mod:`~ctsne.estimator.umap_parameters`
  the same for the UMAP and LargeVis estimators.
- :mod:`~ctsne.estimator.validation`: the checks of the parameters, X and P.
- :mod:`~ctsne.estimator.base`: the one fit every estimator runs, with each method's steps
  as overrides; :mod:`~ctsne.estimator.engine`: the engines' primitives, chosen once per
  fit; :mod:`~ctsne.estimator.registry`: the methods and their names in every interface.
- :mod:`~ctsne.estimator.tsne`: :class:`ConditionalTSNE`'s steps, ``optimize``, ``transform``.
- :mod:`~ctsne.estimator.placement`: new points into a fitted t-SNE map (``transform``).
- :mod:`~ctsne.estimator.umap`: :class:`ConditionalUMAP` (and the graph-embedding base
  shared with LargeVis); :mod:`~ctsne.estimator.largevis`: :class:`ConditionalLargeVis`.
"""

__all__ = ["ConditionalLargeVis", "ConditionalTSNE", "ConditionalUMAP"]

_WHERE = {"ConditionalTSNE": "tsne", "ConditionalUMAP": "umap", "ConditionalLargeVis": "largevis"}


def __getattr__(name: str):
    # Models pickled before the stage packages name ``ctsne.estimator.ConditionalTSNE``.
    # Loaded on demand, so that importing the light parameter tables does not import the
    # estimators (and numba) through this package.
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

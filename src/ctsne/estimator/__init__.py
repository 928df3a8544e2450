"""Stage 5, the estimator: scikit-learn's interface over the stages before it.

- :mod:`~ctsne.estimator.parameters`: every constructor parameter in one table (light:
  the command line reads its defaults from it).
- :mod:`~ctsne.estimator.validation`: the checks of the parameters, X and P.
- :mod:`~ctsne.estimator.tsne`: :class:`ConditionalTSNE`, orchestration.
- :mod:`~ctsne.estimator.placement`: new points into a fitted map (``transform``).
"""

__all__ = ["ConditionalTSNE"]


def __getattr__(name: str):
    # Models pickled before the stage packages name ``ctsne.estimator.ConditionalTSNE``.
    # Loaded on demand, so that importing the light parameter table does not import the
    # estimator (and numba) through this package.
    if name == "ConditionalTSNE":
        from .tsne import ConditionalTSNE

        return ConditionalTSNE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

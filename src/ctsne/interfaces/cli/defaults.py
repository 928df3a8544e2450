"""The library's defaults, for the command line's help texts and options.

The command line passes to :class:`~ctsne.ConditionalTSNE` only the options the user set,
so each default lives in the library alone; where a help text states a default, or an
option needs its value, it is read here from the library, never restated. Reading
loads the estimator's parameter table (no numba, scipy or scikit-learn), and the
parser calls these only when help is shown.
"""

from __future__ import annotations

__all__ = ["beta", "estimator", "help_value", "set_options", "within_weight"]


def estimator(name: str):
    """The default of the :class:`~ctsne.ConditionalTSNE` parameter ``name``.

    Parameters
    ----------
    name : str
        A constructor parameter, e.g. ``"perplexity"``.

    Returns
    -------
    object
        Its default (the estimator's signature has the same; a test keeps them equal).
    """
    from ...estimator.parameters import PARAMETERS

    return PARAMETERS[name].default


def beta() -> float:
    """β' when neither β' nor α' is given (ConditionalTSNE's ``beta=None``):
    :data:`ctsne.prior.DEFAULT_BETA`."""
    from ...prior import DEFAULT_BETA

    return DEFAULT_BETA


def within_weight(mode: str) -> float:
    """The own-class weight of the ``"balanced"`` or ``"revised"`` affinities when
    ``within_weight`` is not given."""
    from ...affinities.options import default_within_weight

    return default_within_weight(mode)


def help_value(key: str):
    """The default a help text names as ``{key}``.

    Parameters
    ----------
    key : str
        ``"beta"``, ``"within_balanced"``, ``"within_revised"``, ``"umap_"`` and a
        ConditionalUMAP parameter, or a ConditionalTSNE parameter.

    Returns
    -------
    object
    """
    if key == "beta":
        return beta()
    if key.startswith("within_"):
        return within_weight(key.removeprefix("within_"))
    if key.startswith("umap_"):
        from ...estimator.umap_parameters import UMAP_PARAMETERS

        return UMAP_PARAMETERS[key.removeprefix("umap_")].default
    return estimator(key)


def set_options(**options) -> dict:
    """The options the user gave (those not None), to pass on as keyword arguments.

    Parameters
    ----------
    **options
        Parameter name -> the parsed option, None where the user did not set it.

    Returns
    -------
    dict
        Only the options that were set: the library's defaults apply to the others.
    """
    return {k: v for k, v in options.items() if v is not None}

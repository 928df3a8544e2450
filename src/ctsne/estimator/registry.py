"""The embedding methods, listed once: what each is called where users meet it.

The command line's ``--algorithm`` choices, the explorer's method menu, the keys an
``.h5ad`` holds the maps under, the scanpy-style functions of :mod:`ctsne.tl` and
:mod:`ctsne.pl` and the names of saved models all read this table. Light: importing it
imports no estimator (:attr:`Method.estimator` loads one on first use).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["METHODS", "Method", "by_class_name", "method", "of_model"]


@dataclass(frozen=True)
class Method:
    """One embedding method and its names.

    Parameters
    ----------
    key : str
        The command line's ``--algorithm`` value and the explorer's method key.
    class_name : str
        The estimator's class, e.g. ``"ConditionalTSNE"``.
    module : str
        The module that defines the class, imported by :attr:`estimator`.
    title : str
        The method's name without a prior, e.g. ``"t-SNE"``.
    conditional_title : str
        Its name with a prior, e.g. ``"ct-SNE"``.
    tool : str
        The name of its function in :mod:`ctsne.tl` and :mod:`ctsne.pl`.
    obsm_key : str
        Where the map goes in an AnnData: ``obsm[obsm_key]``, its record in
        ``uns[obsm_key]``.
    """

    key: str
    class_name: str
    module: str
    title: str
    conditional_title: str
    tool: str
    obsm_key: str

    @property
    def estimator(self) -> type:
        """The estimator class (its module is imported on first use)."""
        return getattr(importlib.import_module(self.module), self.class_name)


METHODS: tuple[Method, ...] = (
    Method("tsne", "ConditionalTSNE", "ctsne.estimator.tsne", "t-SNE", "ct-SNE",
           "ctsne", "X_ctsne"),
    Method("umap", "ConditionalUMAP", "ctsne.estimator.umap", "UMAP", "conditional UMAP",
           "cumap", "X_cumap"),
    Method("largevis", "ConditionalLargeVis", "ctsne.estimator.largevis", "LargeVis",
           "conditional LargeVis", "clargevis", "X_clargevis"),
)
_BY_KEY = {m.key: m for m in METHODS}
_BY_CLASS = {m.class_name: m for m in METHODS}


def method(key: str) -> Method:
    """The method whose ``key`` (the ``--algorithm`` value) is ``key``.

    Raises
    ------
    ValueError
        For any other key, naming the keys.
    """
    try:
        return _BY_KEY[key]
    except (KeyError, TypeError):
        raise ValueError(f"method must be one of {', '.join(_BY_KEY)}, got {key!r}") from None


def by_class_name(name: str) -> Method | None:
    """The method whose estimator class is called ``name``, or None."""
    return _BY_CLASS.get(name)


def of_model(model: object) -> Method | None:
    """The method of ``model``, an estimator (or a subclass of one) of any method.

    Parameters
    ----------
    model : object
        An estimator instance; its class and base classes are matched by name, so that
        an unpickled model or a user's subclass is recognised without importing the
        estimators.

    Returns
    -------
    Method or None
        None when no class in ``model``'s hierarchy is one of :data:`METHODS`.
    """
    for cls in type(model).__mro__:
        found = _BY_CLASS.get(cls.__name__)
        if found is not None:
            return found
    return None

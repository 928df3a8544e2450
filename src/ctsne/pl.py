"""scanpy-style plots of the maps of :mod:`ctsne.tl`, one per method of
:mod:`ctsne.estimator.registry`: :func:`ctsne`, :func:`cumap` and :func:`clargevis` (needs
scanpy: ``pip install ctsne[scanpy]``)."""

from __future__ import annotations

from .estimator import registry

__all__ = ["ctsne", "cumap", "clargevis"]

_TSNE, _UMAP, _LARGEVIS = (registry.method(key) for key in ("tsne", "umap", "largevis"))


def _embedding(adata, method: registry.Method, color, key_added: str, basis: str | None,
               kwargs: dict):
    """The body of the plots: draw ``adata.obsm[key_added]`` (or scanpy's ``basis``) with
    ``sc.pl.embedding``; ``method`` is the plot's own, whose key is the default."""
    if basis is not None:
        if key_added != method.obsm_key:
            raise TypeError(f"give key_added= or basis=, not both (key_added={key_added!r}, "
                            f"basis={basis!r})")
        # scanpy's rule: obsm[basis], or obsm["X_" + basis]
        key_added = basis if basis in adata.obsm or basis.startswith("X_") else f"X_{basis}"
    try:
        import scanpy as sc
    except ImportError:
        raise ImportError(f"ctsne.pl.{method.tool} draws with scanpy, which is not installed: "
                          "pip install scanpy (or ctsne[scanpy]); without it use "
                          f"ctsne.plotting.plot_embedding(adata.obsm[{key_added!r}], ...)"
                          ) from None
    if key_added not in adata.obsm:
        have = ", ".join(k for k in adata.obsm.keys()) or "none"
        # the tool that writes this key, else the plot's own
        maker = next((m for m in registry.METHODS if m.obsm_key == key_added), method)
        raise KeyError(f"adata.obsm has no {key_added!r} (it holds: {have}); run "
                       f"ctsne.tl.{maker.tool}(adata, ...) first, or pass the key_added "
                       "you used")
    basis = key_added[2:] if key_added.startswith("X_") else key_added
    return sc.pl.embedding(adata, basis=basis, color=color, **kwargs)


# the docstring of every plot, filled in from its registry.Method
_PLOT_DOC = """Draw ``adata.obsm[key_added]``, by default the {m.conditional_title} map of
:func:`ctsne.tl.{m.tool}`, with ``sc.pl.embedding``.

Parameters
----------
adata : AnnData
    With the embedding written by :func:`ctsne.tl.{m.tool}` (or any other map, named by
    ``key_added`` or ``basis``).
color : str or list of str, optional
    ``obs`` columns or genes to colour by (scanpy's ``color``).
key_added : str, default "{m.obsm_key}"
    The ``obsm`` key the embedding was written to.
basis : str, optional
    scanpy's name for the same choice, in scanpy's forms: ``"{m.tool}"`` or
    ``"{m.obsm_key}"``; give it or ``key_added``.
**kwargs
    Passed to ``sc.pl.embedding`` (``show``, ``ax``, ``title``, …).

Returns
-------
What ``sc.pl.embedding`` returns (axes when ``show=False``).

Examples
--------
>>> import scanpy as sc
>>> import ctsne
>>> adata = sc.datasets.pbmc68k_reduced()
>>> ctsne.tl.{m.tool}(adata, prior="phase", random_state=0, {quick})
>>> ax = ctsne.pl.{m.tool}(adata, color=["phase", "bulk_labels"], show=False)
"""


def ctsne(adata, color=None, key_added: str = _TSNE.obsm_key, *, basis: str | None = None,
          **kwargs):
    return _embedding(adata, _TSNE, color, key_added, basis, kwargs)


def cumap(adata, color=None, key_added: str = _UMAP.obsm_key, *, basis: str | None = None,
          **kwargs):
    return _embedding(adata, _UMAP, color, key_added, basis, kwargs)


def clargevis(adata, color=None, key_added: str = _LARGEVIS.obsm_key, *,
              basis: str | None = None, **kwargs):
    return _embedding(adata, _LARGEVIS, color, key_added, basis, kwargs)


for _plot, _method, _quick in ((ctsne, _TSNE, "n_iter=250"), (cumap, _UMAP, "n_epochs=200"),
                               (clargevis, _LARGEVIS, "n_epochs=200")):
    _plot.__doc__ = _PLOT_DOC.format(m=_method, quick=_quick)
del _plot, _method, _quick

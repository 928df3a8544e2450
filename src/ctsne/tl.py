"""scanpy-style tools, one per method of :mod:`ctsne.estimator.registry`:
``ctsne.tl.ctsne(adata, prior="batch")`` (conditional t-SNE), :func:`cumap` (UMAP) and
:func:`clargevis` (LargeVis); anndata is imported lazily.

Which data is embedded (scanpy's rule for ``use_rep=None``, as in ``sc.tl.tsne``):

* ``layer=`` given: that layer, all its variables;
* else ``use_rep=`` given: ``adata.obsm[use_rep]``, or ``.X`` for ``use_rep="X"``;
* else ``.X`` when it has 1 to 50 variables (scanpy's ``settings.N_PCS``);
* else ``obsm["X_pca"]`` when present;
* else an error asking for ``sc.pp.pca(adata)`` or ``use_rep="X"``. scanpy would run a
  PCA with default settings here; ctsne does not compute one behind the user's back.

Sparse data is densified (float64): that needs ``8·n_obs·n_vars`` bytes, so above
``DENSE_LIMIT_BYTES`` (2 GiB) it is an error naming the size and the fix (a PCA, or a
smaller ``use_rep``). A neighbour graph from ``sc.pp.neighbors`` can be reused with
``neighbors_key=`` (see :func:`ctsne`).
"""

from __future__ import annotations

import time

import numpy as np

from .estimator import registry
from .prior import DEFAULT_BETA

__all__ = ["representation", "ctsne", "cumap", "clargevis", "fit_record", "DENSE_LIMIT_BYTES"]

DENSE_LIMIT_BYTES = 2 << 30
# scanpy's settings.N_PCS: up to this many variables .X is used directly
_SMALL_X = 50
_TSNE, _UMAP, _LARGEVIS = (registry.method(key) for key in ("tsne", "umap", "largevis"))


def representation(adata, use_rep: str | None = None, layer: str | None = None
                   ) -> tuple[object, str]:
    """The matrix of ``adata`` to embed and a name for it, by scanpy's rule (module
    docstring); ``ctsne embed`` reads an ``.h5ad`` by the same rule."""
    if layer is not None:
        if use_rep not in (None, "X"):
            raise ValueError(f"give layer= or use_rep=, not both (layer={layer!r}, "
                             f"use_rep={use_rep!r})")
        if layer not in adata.layers:
            raise KeyError(f"layer {layer!r} is not in adata.layers "
                           f"(there are: {list(adata.layers.keys())})")
        return adata.layers[layer], f"layers[{layer!r}]"
    if use_rep is None:
        if 0 < adata.n_vars <= _SMALL_X:
            return adata.X, "X"
        if "X_pca" in adata.obsm:
            return adata.obsm["X_pca"], "obsm['X_pca']"
        if adata.n_vars == 0:
            raise ValueError("adata has no variables (an empty .X) and no obsm['X_pca']; "
                             "pass use_rep= the obsm key that holds the data to embed "
                             f"(there are: {list(adata.obsm.keys())})")
        raise ValueError(
            f"adata has {adata.n_vars} variables and no obsm['X_pca']; run sc.pp.pca(adata) "
            "first (scanpy's default representation), or pass use_rep='X' to embed all "
            "variables, or use_rep= another obsm key")
    if use_rep == "X":
        return adata.X, "X"
    if use_rep not in adata.obsm:
        raise KeyError(f"use_rep={use_rep!r} is not in adata.obsm (there are: "
                       f"{list(adata.obsm.keys())}); compute it first or use_rep='X'")
    return adata.obsm[use_rep], f"obsm[{use_rep!r}]"


def _dense(X, name: str) -> np.ndarray:
    if X is None:
        raise ValueError(f"adata.{name} is empty")
    if hasattr(X, "toarray"):
        size = 8 * X.shape[0] * X.shape[1]
        if size > DENSE_LIMIT_BYTES:
            raise MemoryError(
                f"adata.{name} is sparse, {X.shape[0]} × {X.shape[1]}: densifying it needs "
                f"{size / 2**30:.1f} GiB; run sc.pp.pca(adata) and use_rep='X_pca' (the "
                "default when present), or select fewer variables")
        X = X.toarray()
    return np.asarray(X, dtype=np.float64)


def _prior(adata, prior):
    if prior is None:
        return None
    names = [prior] if isinstance(prior, str) else list(prior)
    missing = [c for c in names if c not in adata.obs.columns]
    if missing:
        raise KeyError(f"prior column(s) {missing} not in adata.obs (there are: "
                       f"{list(adata.obs.columns)})")
    return adata.obs[names]


def _batch_prior(prior, kwargs: dict):
    """The prior's column(s): ``prior``, or scanpy's ``batch_key=`` (taken out of
    ``kwargs``), one of the two."""
    batch_key = kwargs.pop("batch_key", None)
    if batch_key is None:
        return prior
    if prior is not None:
        raise ValueError(f"give prior= or batch_key=, not both (prior={prior!r}, "
                         f"batch_key={batch_key!r}): batch_key is scanpy's name for a "
                         "one-column prior")
    return batch_key


def _graph_knn(adata, neighbors_key: str):
    from .affinities.precomputed import knn_from_graph

    key = "neighbors" if neighbors_key is None else neighbors_key
    if key not in adata.uns:
        raise KeyError(f"adata.uns has no {key!r}: run sc.pp.neighbors(adata"
                       + ("" if key == "neighbors" else f", key_added={key!r}") + ") first")
    dist_key = adata.uns[key].get("distances_key", "distances")
    if dist_key not in adata.obsp:
        raise KeyError(f"adata.obsp has no {dist_key!r} (named by uns[{key!r}]); rerun "
                       "sc.pp.neighbors")
    return knn_from_graph(adata.obsp[dist_key]), key, dist_key


def _setup(adata, estimator, copy: bool, use_rep, layer, prior, beta, kwargs: dict):
    """What every tool shares before fitting: the AnnData (copied with
    ``copy``), the representation and its name, the prior's columns and the estimator."""
    if not (hasattr(adata, "obsm") and hasattr(adata, "obs")):
        raise TypeError(f"adata must be an AnnData object, got {type(adata).__name__}")
    if copy:
        adata = adata.copy()
    data, source = representation(adata, use_rep, layer)
    labels = _prior(adata, prior)
    if beta is None and kwargs.get("alpha") is None:
        beta = DEFAULT_BETA  # recorded as used, not as None
    return adata, data, source, labels, estimator(beta=beta, **kwargs)


def _jsonable(value):
    """numpy scalars and arrays, tuples and nested dicts as plain JSON types."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def fit_record(model, seconds: float | None = None, **params) -> dict:
    """What ``adata.uns[key_added]`` holds about the map ``model`` made (JSON-able).

    Written by :func:`ctsne`, :func:`cumap` and :func:`clargevis` here and by
    ``ctsne embed -o out.h5ad``, so that every ``.h5ad`` describes its map the same way.

    Parameters
    ----------
    model : ConditionalTSNE, ConditionalUMAP or ConditionalLargeVis
        Fitted.
    seconds : float, optional
        The whole call's time (``timings["total"]``).
    **params
        What the caller chose besides the estimator's parameters (the prior's columns,
        the representation embedded, …), added to ``params``.

    Returns
    -------
    dict
        ``method`` (the estimator's class), ``params``, ``alpha``, ``beta``,
        ``affinities``, ``timings``, ``conditioning`` ("classes" or "states"; with
        states ``shared_states``: the classes, the points of each state in each class,
        which class holds which state and why), ``prior_mixing`` when there is a prior;
        for t-SNE
        also ``kl_divergence``, ``n_iter``, ``perplexity`` (the one used) and
        ``interrupted``, for UMAP and LargeVis ``n_epochs``, ``a`` and ``b``.
    """
    est = dict(model.get_params())
    est.pop("callbacks", None)  # functions: not JSON, and not what made the map
    est.update(params)
    record = {"method": type(model).__name__, "params": est,
              "alpha": model.alpha_, "beta": model.beta_}
    if hasattr(model, "n_epochs_"):  # UMAP, LargeVis
        record.update(n_epochs=model.n_epochs_, a=model.a_, b=model.b_)
    else:
        # kl_divergence_ is unset after 0 iterations
        record.update(kl_divergence=getattr(model, "kl_divergence_", None),
                      n_iter=model.n_iter_, perplexity=model.perplexity_,
                      interrupted=getattr(model, "interrupted_", False))
    timings = dict(getattr(model, "timings_", {}) or {})
    if seconds is not None:
        timings["total"] = seconds
    record["timings"] = timings
    mixing = getattr(model, "prior_mixing_", None)
    if mixing is not None and hasattr(mixing, "to_dict"):
        record["prior_mixing"] = mixing.to_dict()
    affinities = getattr(model, "affinities_", None)
    if affinities is not None:
        record["affinities"] = affinities  # "standard", "balanced" or "revised"
    record["conditioning"] = getattr(model, "conditioning_", None)
    found = getattr(model, "shared_states_", None)
    if found is not None:
        record["shared_states"] = {"classes": found.classes, "points": found.table,
                                   "held": found.held, "reason": found.reason}
    return _jsonable(record)


def _keep_map(adata, key_added: str, Y, model, record: dict) -> None:
    """The map in ``obsm[key_added]``, its record in ``uns[key_added]`` and, where the fit
    found shared states, each cell's state in ``obs["<key without X_>_state"]``."""
    adata.obsm[key_added] = Y
    adata.uns[key_added] = record
    states = getattr(model, "states_", None)
    name = key_added[2:] if key_added.startswith("X_") else key_added
    if states is None:  # a previous run's states would contradict this record
        if f"{name}_state" in adata.obs:
            del adata.obs[f"{name}_state"]
    else:
        import pandas as pd

        adata.obs[f"{name}_state"] = pd.Categorical(states.astype(str))


def ctsne(
    adata,
    prior: str | list[str] | None = None,
    use_rep: str | None = None,
    beta: float | None = None,
    key_added: str = _TSNE.obsm_key,
    copy: bool = False,
    layer: str | None = None,
    neighbors_key: str | None = None,
    **estimator_kwargs,
):
    """Conditional t-SNE of an AnnData, factoring out ``adata.obs`` columns.

    Parameters
    ----------
    adata : AnnData
    prior : str or list of str, optional
        ``adata.obs`` column(s) to factor out; several columns follow ``combine=``
        (joint classes by default). None: plain t-SNE.
    use_rep : str, optional
        ``obsm`` key, or ``"X"``; default by scanpy's rule (module docstring).
    beta : float, optional
        β', the weight of pairs in different prior classes; None is
        :data:`~ctsne.prior.DEFAULT_BETA` (0.01) unless ``alpha=`` is among the estimator
        arguments.
    key_added : str, default "X_ctsne"
        Writes ``adata.obsm[key_added]`` and ``adata.uns[key_added]`` (plot it with
        ``sc.pl.embedding(adata, basis=key_added)`` or :func:`ctsne.pl.ctsne`).
    copy : bool, default False
        Work on a copy and return it; otherwise modify ``adata`` and return None.
    layer : str, optional
        Embed ``adata.layers[layer]`` instead.
    neighbors_key : str, optional
        Reuse the neighbour graph of ``sc.pp.neighbors(adata, key_added=...)``
        (``"neighbors"`` for the default one): P is calibrated on its distances
        (``obsp[uns[neighbors_key]["distances_key"]]``) instead of searching. The graph
        must be of the same representation; scanpy's default of 15 neighbours (14 stored)
        is fewer than perplexity 30 needs (90), so the perplexity is then lowered to k/3
        with a warning: use ``sc.pp.neighbors(adata, n_neighbors=91)`` for the full one.
    **estimator_kwargs
        Passed to :class:`ctsne.ConditionalTSNE` (perplexity, random_state, n_iter,
        ``conditioning``, …); ``batch_key=`` (scanpy's name) is ``prior=`` with one column.
        A batch is removed only where batches share a cell state by default
        (``conditioning="auto"``, the guide's priors page), so a type one batch holds alone
        stays apart.

    Returns
    -------
    AnnData or None
        The modified copy with ``copy=True``.

    Notes
    -----
    ``adata.uns[key_added]`` is :func:`fit_record`'s JSON-serialisable record, its
    ``params`` also holding prior, use_rep, layer, neighbors_key and the representation.

    Examples
    --------
    >>> import scanpy as sc
    >>> import ctsne
    >>> adata = sc.datasets.pbmc68k_reduced()  # 700 cells, shipped with scanpy
    >>> ctsne.tl.ctsne(adata, prior="phase", random_state=0)
    >>> adata.obsm["X_ctsne"].shape
    (700, 2)
    >>> adata.uns["X_ctsne"]["params"]["prior"]
    'phase'
    >>> ax = ctsne.pl.ctsne(adata, color="bulk_labels", show=False)
    """
    prior = _batch_prior(prior, estimator_kwargs)
    adata, data, source, labels, model = _setup(adata, _TSNE.estimator, copy, use_rep,
                                                layer, prior, beta, estimator_kwargs)
    knn = graph = None
    asked = model.perplexity
    if neighbors_key is not None:
        from .affinities.precomputed import effective_perplexity

        knn, key, dist_key = _graph_knn(adata, neighbors_key)
        k = knn[0].shape[1]
        graph = {"neighbors_key": key, "distances_key": dist_key, "n_neighbors": k}
        # warn here, naming the graph; the estimator then gets the perplexity it can use
        model.set_params(perplexity=effective_perplexity(
            model.perplexity, k, f"the neighbour graph obsp[{dist_key!r}] (uns[{key!r}])"))
    X = _dense(data, source)
    t0 = time.perf_counter()
    Y = model.fit_transform(X, labels, knn=knn)
    seconds = time.perf_counter() - t0

    # the perplexity as asked; record["perplexity"] is the one used
    record = fit_record(model, seconds, perplexity=asked, prior=prior, use_rep=use_rep,
                        layer=layer, neighbors_key=neighbors_key, representation=source)
    if graph is not None:
        record["neighbor_graph"] = _jsonable(graph)
    _keep_map(adata, key_added, Y, model, record)
    return adata if copy else None


def _graph_tool(adata, method: registry.Method, prior, use_rep, beta, key_added: str,
                copy: bool, layer, estimator_kwargs: dict):
    """The body of :func:`cumap` and :func:`clargevis`: fit ``method``'s estimator on the
    selected data and write the map and its record under ``key_added``."""
    prior = _batch_prior(prior, estimator_kwargs)
    adata, data, source, labels, model = _setup(adata, method.estimator, copy, use_rep,
                                                layer, prior, beta, estimator_kwargs)
    X = _dense(data, source)
    t0 = time.perf_counter()
    Y = model.fit_transform(X, labels)
    seconds = time.perf_counter() - t0

    _keep_map(adata, key_added, Y, model, fit_record(model, seconds, prior=prior,
                                                     use_rep=use_rep, layer=layer,
                                                     representation=source))
    return adata if copy else None


# the docstring of cumap and clargevis, filled in from their registry.Method
_GRAPH_DOC = """{title} of an AnnData, factoring out ``adata.obs`` columns.

The same data selection and prior as :func:`ctsne`; the map is
:class:`ctsne.{m.class_name}`'s
({how}, the repulsion re-weighted by the prior's classes).

Parameters
----------
adata : AnnData
prior : str or list of str, optional
    ``adata.obs`` column(s) to factor out. None: plain {m.title}.
use_rep, layer, copy
    As for :func:`ctsne`.
beta : float, optional
    β'; None is :data:`~ctsne.prior.DEFAULT_BETA` unless ``alpha=`` is given.
key_added : str, default "{m.obsm_key}"
    Writes ``adata.obsm[key_added]`` and ``adata.uns[key_added]`` (plot it with
    :func:`ctsne.pl.{m.tool}` or ``sc.pl.embedding(adata, basis=key_added)``).
**estimator_kwargs
    Passed to :class:`ctsne.{m.class_name}` ({kwargs}, random_state, ``conditioning``,
    …); ``batch_key=`` (scanpy's name) is ``prior=`` with one column.

Returns
-------
AnnData or None
    With ``copy=True`` the modified copy, else None.

Notes
-----
As for :func:`ctsne`, without neighbors_key; ``affinities`` is {affinities}.

Examples
--------
>>> import scanpy as sc
>>> import ctsne
>>> adata = sc.datasets.pbmc68k_reduced()
>>> ctsne.tl.{m.tool}(adata, prior="phase", random_state=0{fit_args})
>>> adata.uns["{m.obsm_key}"]["method"]
'{m.class_name}'
>>> ax = ctsne.pl.{m.tool}(adata, color="bulk_labels", show=False)
>>> ax = ctsne.pl.ctsne(adata, basis="{m.tool}", color="phase", show=False)  # scanpy's name
"""


def cumap(adata, prior: str | list[str] | None = None, use_rep: str | None = None,
          beta: float | None = None, key_added: str = _UMAP.obsm_key, copy: bool = False,
          layer: str | None = None, **estimator_kwargs):
    return _graph_tool(adata, _UMAP, prior, use_rep, beta, key_added, copy, layer,
                       estimator_kwargs)


def clargevis(adata, prior: str | list[str] | None = None, use_rep: str | None = None,
              beta: float | None = None, key_added: str = _LARGEVIS.obsm_key, copy: bool = False,
              layer: str | None = None, **estimator_kwargs):
    return _graph_tool(adata, _LARGEVIS, prior, use_rep, beta, key_added, copy, layer,
                       estimator_kwargs)


cumap.__doc__ = _GRAPH_DOC.format(
    m=_UMAP, title="Conditional UMAP", how="UMAP's graph and curve",
    kwargs="n_neighbors, min_dist", fit_args="",
    affinities="the graph laid out: \"standard\" is UMAP's fuzzy graph")
clargevis.__doc__ = _GRAPH_DOC.format(
    m=_LARGEVIS, title="Conditional LargeVis",
    how="t-SNE's P laid out by UMAP's sampled SGD with the Student-t curve",
    kwargs="perplexity, n_epochs", fit_args=", n_epochs=200",
    affinities='the P laid out: "standard", "balanced" or "revised"')

"""``ctsne explore`` / ``ctsne.explore()``: the paper's iterative analysis (§3.1) as a
local web page.

(The subpackage is ``explorer`` so that it does not shadow the function ``ctsne.explore``
once imported.)

Look at the map, select a cluster, rank the features that set it apart, factor the
dominant one out with ct-SNE, look again. Needs the optional extra
``pip install "ctsne[explore]"`` (Bokeh).

>>> handle = ctsne.explore(X, data=df, prior="gender")  # doctest: +SKIP
>>> handle.url, handle.stop()                           # doctest: +SKIP
"""

from __future__ import annotations

import webbrowser
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...prior import DEFAULT_BETA

__all__ = ["explore", "serve", "ExploreHandle", "require_bokeh"]


def require_bokeh() -> None:
    """Raise ImportError naming the extra to install when Bokeh is missing."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        raise ImportError('ctsne explore needs Bokeh: pip install "ctsne[explore]"') from None


@dataclass
class ExploreHandle:
    """A running explore server: ``url`` (with its token), ``explorer`` (the state),
    ``stop()``."""

    url: str
    explorer: object
    server: object

    def stop(self) -> None:
        """Cancel a running ct-SNE and stop serving."""
        self.explorer.cancel()
        self.server.stop()

    def _repr_html_(self) -> str:  # a clickable link in a notebook
        return f'<a href="{self.url}" target="_blank">ctsne explore: {self.url}</a>'


def _labels_from(data, n: int) -> dict[str, np.ndarray]:
    if data is None:
        return {}
    if hasattr(data, "columns") and hasattr(data, "__getitem__"):  # a DataFrame
        items = {str(c): np.asarray(data[c]) for c in data.columns}
    else:
        items = {str(k): np.asarray(v) for k, v in dict(data).items()}
    out = {}
    for name, col in items.items():
        if col.shape != (n,):
            raise ValueError(f"data column {name!r} has shape {col.shape}, expected ({n},)")
        if not np.issubdtype(col.dtype, np.number) or col.dtype == bool:
            col = np.array([None if v is None or v != v else str(v) for v in col],
                           dtype=object)
        out[name] = col
    return out


def explore(X, data=None, prior: str | Sequence[str] | None = None, *,
            beta: float = DEFAULT_BETA,
            embedding: np.ndarray | None = None, ids=None,
            feature_names: Sequence[str] | None = None, session: str | None = None,
            out_dir: str = "ctsne-explore", port: int | None = None,
            open_browser: bool = False, backend: str = "auto",
            max_points: int = 200_000, method: str = "tsne", **params) -> ExploreHandle:
    """Serve the exploration page for ``X`` and return its handle (at once: without
    ``embedding`` or ``session`` the first map is computed in the background while the
    page shows its progress).

    Parameters
    ----------
    X : array-like (n, p)
        Features (ranked on selection; embedded unless ``embedding`` is given).
    data : DataFrame or dict of columns, optional
        Label columns (n rows) for colour, marker, hover and priors; never features (``X``
        is what is embedded and ranked). The page lists both; a feature can be a prior too.
    prior : column name(s) of ``data``, optional
        Factored out of the first map (none: t-SNE).
    beta : float
        β' of the first map's prior.
    embedding : ndarray (n, 2), optional
        The first map, precomputed (then P is computed on the first factor-out).
    ids : array-like (n,), optional
        Row ids shown on hover (default 0..n-1).
    feature_names : sequence of str, optional
        Default: ``data``-free names ``x0, x1, …``.
    session : path, optional
        Reopen the steps of a session saved from the page (same data).
    out_dir : path
        Where the page's exports are written.
    port : int, optional
        Default: a free port on 127.0.0.1.
    open_browser : bool
    backend : {"auto", "webgl", "canvas"}
        How the browser draws the maps: WebGL (fast with a GPU) or the 2-D canvas (faster
        with software rendering). "auto" switches to WebGL on a hardware WebGL renderer;
        the page has a switch either way.
    max_points : int
        Above this many points the browser draws a fixed random subsample; box and lasso
        selections still take every point inside (computed here from their outline).
    method : {"tsne", "umap", "largevis"}
        The method of the first map and the page's default for the next ones: ct-SNE,
        conditional UMAP (:class:`~ctsne.ConditionalUMAP`) or conditional LargeVis
        (:class:`~ctsne.ConditionalLargeVis`); the page can change it at every step.
    **params
        Further :class:`~ctsne.ConditionalTSNE` parameters (perplexity, n_iter, …).
    """
    require_bokeh()
    from ...estimator.tsne import ConditionalTSNE
    from ...estimator.validation import check_X
    from .session import Session

    X = check_X(X)
    n = len(X)
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in
                                                                   range(X.shape[1])]
    s = Session(X, names, np.arange(n) if ids is None else np.asarray(ids),
                _labels_from(data, n))
    priors = [prior] if isinstance(prior, str) else list(prior or [])
    model = ConditionalTSNE(beta=beta, **params)
    return serve(s, model, priors, beta, embedding=embedding, session=session,
                 out_dir=out_dir, port=port, open_browser=open_browser, backend=backend,
                 max_points=max_points, method=method)


def serve(s, model, priors: Sequence[str] = (), beta: float = DEFAULT_BETA, *, embedding=None,
          session=None, out_dir="ctsne-explore", port: int | None = None,
          open_browser: bool = False, backend: str = "auto",
          max_points: int = 200_000, method: str = "tsne") -> ExploreHandle:
    """Give the session ``s`` its first map (saved ``session`` steps, a given ``embedding``,
    or a fit of ``method`` with ``priors`` started in the background) and serve it; see
    :func:`explore`."""
    require_bokeh()
    from .app import BACKENDS, make_document
    from .controller import Explorer
    from .methods import check_method
    from .server import ExploreServer, message_cap
    from .session import Step

    priors = list(priors)
    check_method(method)
    if backend not in BACKENDS:  # before any fit
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if max_points < 1:
        raise ValueError(f"max_points must be at least 1, got {max_points}")
    if session is not None:
        s.load_steps(session)
    elif embedding is not None:
        Y = np.asarray(embedding, dtype=np.float64)
        if Y.shape != (s.n, 2) or not np.all(np.isfinite(Y)):
            raise ValueError(f"the first map must be a finite ({s.n}, 2) array, got {Y.shape}")
        s.add_step(Step(priors, beta if priors else 1.0, Y))
    explorer = Explorer(s, model, out_dir, method=method)
    if not s.steps:
        arrays = s.prior_arrays(priors)  # a missing column fails here, before serving
        if arrays is not None:
            from ...prior import make_prior

            make_prior(arrays, s.n, beta=beta)
    # the server first: the first map's thread (numba, the neighbour search) would slow
    # the server's own start-up; the page then shows that map's progress
    server = ExploreServer(make_document(explorer, backend, max_points), port=port,
                           max_message_size=message_cap(max_points)).start()
    if not s.steps:
        try:
            explorer.start_first(priors, beta, method)
        except BaseException:
            server.stop()
            raise
    if open_browser:
        webbrowser.open(server.url)
    return ExploreHandle(server.url, explorer, server)

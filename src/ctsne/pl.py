"""scanpy-style plot of a ct-SNE embedding (needs scanpy: ``pip install ctsne[scanpy]``)."""

from __future__ import annotations

__all__ = ["ctsne"]


def ctsne(adata, color=None, key_added: str = "X_ctsne", *, basis: str | None = None,
          **kwargs):
    """Draw ``adata.obsm[key_added]`` with ``sc.pl.embedding``.

    Parameters
    ----------
    adata : AnnData
        With the embedding written by :func:`ctsne.tl.ctsne` or :func:`ctsne.tl.cumap`.
    color : str or list of str, optional
        ``obs`` columns or genes to colour by (scanpy's ``color``).
    key_added : str, default "X_ctsne"
        The ``obsm`` key the embedding was written to (``"X_cumap"`` for
        :func:`ctsne.tl.cumap`).
    basis : str, optional
        scanpy's name for the same choice, in scanpy's forms: ``"cumap"`` or
        ``"X_cumap"``; give it or ``key_added``.
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
    >>> ctsne.tl.ctsne(adata, prior="phase", random_state=0, n_iter=250)
    >>> ax = ctsne.pl.ctsne(adata, color=["phase", "bulk_labels"], show=False)
    """
    if basis is not None:
        if key_added != "X_ctsne":
            raise TypeError(f"give key_added= or basis=, not both (key_added={key_added!r}, "
                            f"basis={basis!r})")
        # scanpy's rule: obsm[basis], or obsm["X_" + basis]
        key_added = basis if basis in adata.obsm or basis.startswith("X_") else f"X_{basis}"
    try:
        import scanpy as sc
    except ImportError:
        raise ImportError("ctsne.pl.ctsne draws with scanpy, which is not installed: "
                          "pip install scanpy (or ctsne[scanpy]); without it use "
                          "ctsne.plotting.plot_embedding(adata.obsm['X_ctsne'], ...)") from None
    if key_added not in adata.obsm:
        have = ", ".join(k for k in adata.obsm.keys()) or "none"
        raise KeyError(f"adata.obsm has no {key_added!r} (it holds: {have}); run "
                       "ctsne.tl.ctsne(adata, ...) or ctsne.tl.cumap(adata, ...) first, or "
                       "pass the key_added you used")
    basis = key_added[2:] if key_added.startswith("X_") else key_added
    return sc.pl.embedding(adata, basis=basis, color=color, **kwargs)

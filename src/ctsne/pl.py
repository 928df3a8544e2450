"""scanpy-style plot of a ct-SNE embedding (needs scanpy: ``pip install ctsne[scanpy]``)."""

from __future__ import annotations

__all__ = ["ctsne"]


def ctsne(adata, color=None, key_added: str = "X_ctsne", **kwargs):
    """Draw ``adata.obsm[key_added]`` with ``sc.pl.embedding``.

    Parameters
    ----------
    adata : AnnData
        With the embedding written by :func:`ctsne.tl.ctsne`.
    color : str or list of str, optional
        ``obs`` columns or genes to colour by (scanpy's ``color``).
    key_added : str, default "X_ctsne"
        The ``obsm`` key the embedding was written to.
    **kwargs
        Passed to ``sc.pl.embedding`` (``show``, ``ax``, ``title``, …).

    Returns
    -------
    What ``sc.pl.embedding`` returns (axes when ``show=False``).
    """
    try:
        import scanpy as sc
    except ImportError:
        raise ImportError("ctsne.pl.ctsne draws with scanpy, which is not installed: "
                          "pip install scanpy (or ctsne[scanpy]); without it use "
                          "ctsne.plotting.plot_embedding(adata.obsm['X_ctsne'], ...)") from None
    if key_added not in adata.obsm:
        raise KeyError(f"adata.obsm has no {key_added!r}; run ctsne.tl.ctsne(adata, ...) "
                       "first (or pass the key_added you used)")
    basis = key_added[2:] if key_added.startswith("X_") else key_added
    return sc.pl.embedding(adata, basis=basis, color=color, **kwargs)

"""Writing results atomically, and removing what an aborted command was writing.

Every output goes to a temporary file in the target's folder, then ``os.replace``: a
file is either complete or untouched, and an existing file is only replaced with
``force=True``. The files being written (and those finished since the last
:func:`forget_finished`) are tracked so that an abort that cannot unwind (a second
Ctrl-C) can remove them (:func:`remove_unfinished`).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._output import (
    DataError,
    atomic_path,
    check_writable,
    forget_finished,
    interruption_point,
    listing,
    remove_unfinished,
    track_outputs,
)
from .formats import EMBEDDING_KEYS, TABLE_FORMATS, file_format, open_text, require

if TYPE_CHECKING:  # pragma: no cover
    from .features import Features

__all__ = [
    "EMBEDDING_KEYS",
    "atomic_path",
    "check_output",
    "forget_finished",
    "interruption_point",
    "remove_unfinished",
    "track_outputs",
    "write_columns",
    "write_embedding",
]


def check_output(path: str | os.PathLike, force: bool = False, kinds: Sequence[str] = ()) -> Path:
    """Check before any work that ``path`` can be written.

    Parameters
    ----------
    path : path
        The output file.
    force : bool
        An existing file may be replaced.
    kinds : sequence of str
        Formats allowed (:mod:`.formats`' lists: file formats, or figure extensions such
        as "png"); empty: any.

    Returns
    -------
    Path

    Raises
    ------
    DataError
        When it exists (and not ``force``), its folder is missing or not writable, or its
        format is not one of ``kinds``.
    """
    path = Path(path)
    if kinds:
        try:
            fmt = file_format(path)
        except DataError:
            fmt = path.suffix.lower().lstrip(".")
        if fmt not in kinds:
            raise DataError(f"{path}: cannot write this type; use .{', .'.join(kinds)}")
    return check_writable(path, force)


def _text_out(col: np.ndarray) -> np.ndarray:
    if col.dtype == object:
        return np.array(["" if v is None else str(v) for v in col], dtype=object)
    if np.issubdtype(col.dtype, np.floating):
        # shortest repr that reads back to the same float; whole numbers without ".0"
        text = col.astype(str)
        whole = np.isfinite(col) & (col % 1 == 0) & (np.abs(col) < 2**53)
        text[whole] = col[whole].astype(np.int64).astype(str)
        text[np.isnan(col)] = ""
        return text
    return col.astype(str)


def write_embedding(path: str | os.PathLike, Y: np.ndarray, ids: np.ndarray,
                    labels: dict[str, np.ndarray] | None = None, force: bool = False,
                    adata: Any = None, features: Features | None = None,
                    key: str = "X_ctsne", record: dict | None = None) -> Path:
    """Write an embedding with its row ids (and label columns) atomically.

    CSV/TSV/Parquet: columns ``id``, ``ctsne1`` … ``ctsneD`` (for every method), then
    ``labels``. ``.npz``: arrays ``embedding``, ``ids`` and one per label. ``.npy``: the
    embedding only (rows in input order; use .npz to keep ids). ``.h5ad``: the input
    AnnData (``adata``, restricted to the embedded rows) or a new one holding
    ``features``, with the embedding in ``obsm[key]`` and ``record`` in ``uns[key]``,
    replacing what the input held there.

    Parameters
    ----------
    path : path
        The output file; its extension chooses the format.
    Y : ndarray (n, d)
    ids : ndarray (n,)
    labels : dict of name -> ndarray (n,), optional
    force : bool
        An existing file may be replaced.
    adata : AnnData, optional
        The input's AnnData, for ``.h5ad`` output.
    features : Features, optional
        The embedded features, for a new ``.h5ad``.
    key : str
        The ``.h5ad`` keys (:data:`EMBEDDING_KEYS` by method).
    record : dict, optional
        JSON-able description of the map for ``uns[key]`` (as :func:`ctsne.tl.ctsne`
        writes); without one an old ``uns[key]`` is removed.

    Returns
    -------
    Path
    """
    path = Path(path)
    fmt = file_format(path)
    Y = np.asarray(Y, dtype=np.float64)
    labels = {k: v for k, v in (labels or {}).items()
              if k != "id" and not (k.startswith("ctsne") and k[5:].isdigit())}
    coords = {f"ctsne{j + 1}": Y[:, j] for j in range(Y.shape[1])}
    if fmt == "h5ad":
        ad = require("h5ad", "writing")
    if fmt in TABLE_FORMATS:
        return write_columns(path, {"id": np.asarray(ids), **coords, **labels}, force)
    with atomic_path(path, force) as tmp:
        if fmt == "npy":
            with open(tmp, "wb") as fh:
                np.save(fh, Y)
        elif fmt == "npz":
            arrays = {k: np.asarray(_text_out(v), dtype=str) if v.dtype == object else v
                      for k, v in labels.items()}
            ids_out = np.asarray(ids)
            arrays["ids"] = ids_out.astype(str) if ids_out.dtype == object else ids_out
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, embedding=Y, **arrays)
        else:
            out = adata.copy() if adata is not None else _new_anndata(ad, ids, labels, features)
            if len(out) != len(Y):
                raise ValueError(f"AnnData has {len(out)} rows for {len(Y)} embedded points")
            out.obsm[key] = Y
            if record is None:
                out.uns.pop(key, None)
            else:
                out.uns[key] = record
            out.write_h5ad(tmp)
    return path


def write_columns(path: str | os.PathLike, columns: dict[str, np.ndarray],
                  force: bool = False) -> Path:
    """Write named columns of equal length as CSV, TSV or Parquet, atomically.

    Parameters
    ----------
    path : path
        ``.csv``, ``.tsv`` (optionally ``.gz``) or ``.parquet``.
    columns : dict of name -> ndarray (n,)
        Numbers are written in their shortest exact form, None and NaN as empty fields.
    force : bool
        An existing file may be replaced.

    Returns
    -------
    Path
    """
    path = Path(path)
    fmt = file_format(path)
    if fmt not in TABLE_FORMATS:
        raise DataError(f"{path}: tables are written as {listing(TABLE_FORMATS)}")
    if fmt == "parquet":
        pq = require("parquet", "writing")
        import pyarrow as pa
    with atomic_path(path, force) as tmp:
        if fmt == "parquet":
            pq.write_table(pa.table({k: pa.array(_plain(v)) for k, v in columns.items()}), tmp)
        else:
            with open_text(tmp, "w") as fh:
                w = csv.writer(fh, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
                w.writerow(columns)
                w.writerows(zip(*(_text_out(np.asarray(c)) for c in columns.values()),
                                strict=True))
    return path


def _plain(col) -> list:
    col = np.asarray(col)
    if col.dtype == object:
        return [None if v is None else str(v) for v in col]
    return col.tolist()


def _new_anndata(ad, ids, labels, features: Features | None):
    import pandas as pd

    obs = pd.DataFrame({k: _plain(v) for k, v in labels.items()},
                       index=pd.Index(np.asarray(ids).astype(str)))
    if features is None:
        return ad.AnnData(obs=obs)
    var = pd.DataFrame(index=pd.Index(features.names))
    return ad.AnnData(X=features.X, obs=obs, var=var)

"""Reading tables: every input file becomes one plain :class:`Table`.

Formats are chosen by file extension (:mod:`.formats`): CSV/TSV (optionally ``.gz``) with
a header row, Parquet (needs pyarrow), NumPy ``.npy``/``.npz`` and AnnData ``.h5ad``
(needs anndata). A :class:`Table` is a dict of columns (float64 with NaN for missing, or
object arrays of strings with None for missing), row ids, and for matrix formats the
feature matrix itself. :func:`ctsne.interfaces.files.features.prepare_features` then
turns a table into a numeric feature matrix; :mod:`.writing` writes the results.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..._output import interruption_point
from .formats import EMBEDDING_KEYS, TEXT_FORMATS, DataError, file_format, open_text, require

__all__ = [
    "MISSING_TOKENS",
    "Table",
    "detect_separator",
    "read_embedding",
    "read_ids",
    "read_table",
    "suggest",
]

# Tokens read as missing in text tables (a subset of pandas' defaults, plus "?" of UCI files).
MISSING_TOKENS = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?")


@dataclass
class Table:
    """Columns and row ids read from a file.

    Attributes
    ----------
    columns : dict of name -> ndarray (n,)
        float64 (NaN = missing) or object arrays of str (None = missing).
    ids : ndarray (n,)
        Row ids: row numbers 0..n-1 unless the file names them.
    matrix, matrix_names : ndarray (n, p) and its column names, for matrix formats
        (.npy, .npz, .h5ad; an embedding file's coordinates); None for plain tables.
    adata : the AnnData object when read from .h5ad (for writing it back).
    """

    columns: dict[str, np.ndarray]
    ids: np.ndarray
    matrix: np.ndarray | None = None
    matrix_names: list[str] = field(default_factory=list)
    adata: Any = None
    path: Path | None = None
    source: str | None = None  # which matrix of an .h5ad: "X", "obsm['X_pca']", …

    @property
    def n_rows(self) -> int:
        return len(self.ids)

    def take(self, rows: np.ndarray) -> Table:
        """The table restricted to ``rows`` (indices or mask), in that order."""
        return Table({k: v[rows] for k, v in self.columns.items()}, self.ids[rows],
                     None if self.matrix is None else self.matrix[rows], self.matrix_names,
                     None if self.adata is None else self.adata[rows], self.path, self.source)

    def column(self, name: str) -> np.ndarray:
        """The column ``name``, with an error listing the available columns if absent."""
        if name not in self.columns:
            raise DataError(f"{self.path}: no column {name!r}{suggest(name, self.columns)}")
        return self.columns[name]


def suggest(name: str, names) -> str:
    """The end of a "no column NAME" message: the nearest names (a typo such as
    ``bacth`` for ``batch``), then the names there are (the first 20)."""
    import difflib

    names = [str(n) for n in names]
    near = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if not near:  # a different case (Batch for batch) is a typo too
        lower = {n.lower(): n for n in names}
        near = [lower[m] for m in difflib.get_close_matches(name.lower(), list(lower), n=3,
                                                            cutoff=0.6)]
    hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    have = ", ".join(repr(c) for c in names[:20]) + (" …" if len(names) > 20 else "")
    return f"{hint} (columns: {have or 'none'})"


def _text_column(values: np.ndarray) -> np.ndarray:
    """Text values -> float64 column if every present value is a number, else str/None."""
    values = np.char.strip(np.asarray(values, dtype=str))
    missing = np.isin(values, MISSING_TOKENS)
    try:
        out = np.full(len(values), np.nan)
        out[~missing] = values[~missing].astype(np.float64)
        return out
    except ValueError:
        obj = values.astype(object)
        obj[missing] = None
        return obj


def _not_text(path: Path, exc: UnicodeDecodeError) -> DataError:
    """The error for a text table that is not UTF-8 (or is not text at all)."""
    return DataError(f"{path}: not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} "
                     f"at byte {exc.start}); save the table as UTF-8, or give a binary "
                     "table a .parquet, .npz or .h5ad name")


def _read_delimited(path: Path, sep: str) -> dict[str, np.ndarray]:
    """Header + rows as raw strings, one array per column (pandas' fast parser if present)."""
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        try:
            frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False,
                                na_filter=False, skipinitialspace=True)
        except pd.errors.EmptyDataError:
            raise DataError(f"{path}: the file is empty") from None
        except UnicodeDecodeError as exc:
            raise _not_text(path, exc) from None
        except pd.errors.ParserError as exc:
            raise DataError(f"{path}: cannot parse: {str(exc).strip()}") from None
        raw = [frame[c].to_numpy(dtype=object) for c in frame.columns]
        # pandas renames a repeated name ("a" → "a.1") and an empty one ("Unnamed: j"):
        # the header as written, so that both readers refuse a repeat alike
        with open_text(path) as fh:
            names = next(csv.reader(fh, delimiter=sep, skipinitialspace=True), [])
        if len(names) != len(raw):
            names = ["" if str(c).startswith("Unnamed: ") else str(c) for c in frame.columns]
    else:
        try:
            with open_text(path) as fh:
                rows = [r for r in csv.reader(fh, delimiter=sep, skipinitialspace=True) if r]
        except UnicodeDecodeError as exc:
            raise _not_text(path, exc) from None
        if not rows:
            raise DataError(f"{path}: the file is empty")
        names = rows[0]
        for lineno, r in enumerate(rows[1:], 2):
            if len(r) != len(names):
                raise DataError(f"{path}: line {lineno} has {len(r)} fields, the header has "
                                f"{len(names)}")
        raw = [np.array(c, dtype=object) for c in zip(*rows[1:], strict=True)] if rows[1:] \
            else [np.array([], dtype=object)] * len(names)
    # An empty first header is pandas' index (row ids); other empty headers get a name.
    names = [n if n or j == 0 else f"unnamed{j}" for j, n in enumerate(names)]
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise DataError(f"{path}: the header names {', '.join(map(repr, twice))} more than "
                        "once; rename the repeated columns so each name is unique")
    return dict(zip(names, raw, strict=True))


def _arrow_column(col) -> np.ndarray:
    import pyarrow as pa

    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    return _object_column(col.to_pylist())


def _object_column(values) -> np.ndarray:
    """Any sequence of labels -> str objects with None for missing (NaN, None, NA)."""
    out = np.empty(len(values), dtype=object)
    for k, v in enumerate(values):
        missing = v is None or (isinstance(v, float) and v != v) or str(v) in ("<NA>", "nan")
        out[k] = None if missing else str(v)
    return out


def _frame_columns(frame) -> dict[str, np.ndarray]:
    """pandas DataFrame (AnnData's obs) -> Table columns."""
    import pandas as pd

    out = {}
    for name in frame.columns:
        s = frame[name]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            out[str(name)] = s.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            out[str(name)] = _object_column(s.astype(object).tolist())
    return out


def detect_separator(path: Path) -> str:
    """The field separator of a text table: the one of , ; tab that splits its header into
    the most fields, provided the first data lines split into as many.

    Parameters
    ----------
    path : Path
        A text table (optionally ``.gz``).

    Returns
    -------
    str
        ``","`` when no candidate splits the lines consistently.
    """
    try:
        with open_text(path) as fh:
            lines = [line for line in (fh.readline() for _ in range(6)) if line.strip()]
    except UnicodeDecodeError as exc:
        raise _not_text(path, exc) from None
    if not lines:
        return ","
    rows = {sep: [len(next(csv.reader([line], delimiter=sep))) for line in lines]
            for sep in (",", ";", "\t")}
    consistent = {sep: c[0] for sep, c in rows.items() if c[0] > 1 and len(set(c)) == 1}
    return max(consistent, key=consistent.get) if consistent else ","


def read_table(path: str | os.PathLike, id_column: str | None = None, obsm: str | None = None,
               layer: str | None = None, sep: str | None = None) -> Table:
    """Read a data file into a :class:`Table`.

    Parameters
    ----------
    path : path
        CSV/TSV with a header (an unnamed first column, as pandas writes its index, holds
        the row ids), Parquet, ``.npy`` (a 2-D feature matrix), ``.npz`` (the 2-D array
        ``X``, or the only 2-D array, as features; 1-D arrays of the same length as
        columns; optional ``ids`` and ``feature_names``), or ``.h5ad`` (features from
        ``X``, ``layers[layer]`` or ``obsm[obsm]``; columns from ``obs``).
    id_column : str, optional
        Column holding the row ids; it is then not a feature.
    obsm, layer : str, optional
        Where the features of an AnnData file are.
    sep : str, optional
        Field separator of a text table; default: tab for .tsv, and for .csv the one of
        ``,`` ``;`` tab that splits the header and the first lines consistently.

    Returns
    -------
    Table
    """
    path = Path(path)
    fmt = file_format(path)
    if path.is_dir():
        raise DataError(f"{path} is a folder, not a data file")
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if (obsm or layer) and fmt != "h5ad":
        raise DataError("--obsm and --layer apply to .h5ad input only")
    interruption_point("reading")  # test-only (does nothing unless a test asks)
    if fmt in TEXT_FORMATS:
        if sep is None:
            sep = detect_separator(path) if fmt == "csv" else "\t"
        columns = {k: _text_column(v) for k, v in _read_delimited(path, sep).items()}
        table = Table(columns, np.arange(len(next(iter(columns.values()), []))), path=path)
        if "" in columns:  # pandas' index column
            table.ids = _ids_from(columns.pop(""), path)
    elif fmt == "parquet":
        pq = require("parquet", "reading")
        import pyarrow as pa

        try:
            at = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise DataError(f"{path}: cannot read: {exc}") from None
        columns = {str(n): _arrow_column(at.column(n)) for n in at.column_names}
        table = Table(columns, np.arange(at.num_rows), path=path)
    elif fmt in ("npy", "npz"):
        table = _read_numpy(path, fmt)
    else:
        table = _read_h5ad(path, obsm, layer)
    if id_column is not None:
        table.ids = _ids_from(table.column(id_column), path, id_column)
        del table.columns[id_column]
    return table


def _ids_from(values: np.ndarray, path: Path, name: str = "the index column") -> np.ndarray:
    ids = np.array(["" if v is None else str(v) for v in values], dtype=object)
    if values.dtype == np.float64 and np.all(np.isfinite(values)) and np.all(values % 1 == 0):
        ids = values.astype(np.int64)
    if len(np.unique(ids.astype(str))) != len(ids):
        raise DataError(f"{path}: {name} has repeated ids; ids must be unique")
    return ids


def _read_numpy(path: Path, fmt: str) -> Table:
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: cannot read as {fmt}: {exc}") from None
    if fmt == "npy":
        arrays = {"X": data}
    else:
        with data:
            arrays = {k: data[k] for k in data.files}
    two_d = [k for k, v in arrays.items() if v.ndim == 2]
    key = "X" if "X" in two_d else (two_d[0] if len(two_d) == 1 else None)
    if key is None:
        raise DataError(f"{path}: expected a 2-D feature array (named 'X' in an .npz), "
                        f"found {', '.join(f'{k} {v.shape}' for k, v in arrays.items())}")
    X = arrays.pop(key)
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise DataError(f"{path}: the feature array has non-numeric dtype {X.dtype}")
    names = [str(s) for s in arrays.pop("feature_names", [f"x{j}" for j in range(X.shape[1])])]
    ids = arrays.pop("ids", None)
    columns = {}
    for k, v in arrays.items():
        if v.ndim != 1:
            continue
        if len(v) != len(X):
            raise DataError(f"{path}: array {k!r} has {len(v)} entries but {key!r} has "
                            f"{len(X)} rows; every 1-D array must have one entry per row")
        is_num = np.issubdtype(v.dtype, np.number) and v.dtype != bool
        columns[k] = v.astype(np.float64) if is_num else _object_column(v.tolist())
    table = Table(columns, np.arange(len(X)), X.astype(np.float64), names, path=path)
    if ids is not None:
        if len(ids) != len(X):
            raise DataError(f"{path}: 'ids' has {len(ids)} entries for {len(X)} rows")
        table.ids = ids if np.issubdtype(ids.dtype, np.integer) else ids.astype(str)
    return table


def _read_h5ad(path: Path, obsm: str | None, layer: str | None) -> Table:
    ad = require("h5ad", "reading")
    try:
        adata = ad.read_h5ad(path)
    except Exception as exc:  # h5py raises many types for a damaged file
        raise DataError(f"{path}: cannot read as .h5ad: {exc}") from None
    if obsm is not None:
        if obsm not in adata.obsm:
            raise DataError(f"{path}: no obsm[{obsm!r}] (have: {', '.join(adata.obsm) or 'none'})")
        X = adata.obsm[obsm]
        names = [f"{obsm}_{j}" for j in range(np.shape(X)[1])]
    elif layer is not None:
        if layer not in adata.layers:
            raise DataError(f"{path}: no layer {layer!r} (have: {', '.join(adata.layers)})")
        X, names = adata.layers[layer], [str(v) for v in adata.var_names]
    else:
        # scanpy's rule, as ctsne.tl reads the same object: .X up to 50 variables, else
        # obsm["X_pca"]
        from ...tl import representation

        try:
            X, source = representation(adata)
        except (ValueError, KeyError) as exc:
            raise DataError(f"{path}: {str(exc).strip(chr(39))}; or choose with --obsm KEY "
                            "or --layer NAME") from None
        names = ([str(v) for v in adata.var_names] if source == "X"
                 else [f"X_pca_{j}" for j in range(np.shape(X)[1])])
    if X is None:
        raise DataError(f"{path}: the AnnData has no X; choose features with --obsm KEY")
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    source = (f"obsm[{obsm!r}]" if obsm is not None else f"layers[{layer!r}]"
              if layer is not None else source)
    return Table(_frame_columns(adata.obs), np.asarray(adata.obs_names, dtype=object),
                 X.astype(np.float64), names, adata=adata, path=path, source=source)


def read_ids(path: str | os.PathLike) -> np.ndarray:
    """Ids listed one per line (blank lines and ``#`` comments skipped).

    Parameters
    ----------
    path : path
        A text file (optionally ``.gz``).

    Returns
    -------
    ndarray of str
    """
    try:
        with open_text(Path(path)) as fh:
            lines = [ln.split("#", 1)[0].strip() for ln in fh]
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read ids from {path}: {exc}") from None
    return np.array([ln for ln in lines if ln], dtype=str)


def _embedding_key(path: Path, coords: Sequence[str] | None, obsm: str | None) -> str:
    """The obsm key of the map in an .h5ad: ``obsm``, else ``coords`` if it names one key,
    else the one of :data:`~.formats.EMBEDDING_KEYS` the file holds."""
    if obsm is not None:
        return obsm
    if coords and len(coords) == 1:
        return coords[0]
    ad = require("h5ad", "reading")
    try:  # backed: the keys without loading X
        adata = ad.read_h5ad(path, backed="r")
        keys = list(adata.obsm.keys())
        adata.file.close()
    except Exception as exc:  # h5py raises many types for a damaged file
        raise DataError(f"{path}: cannot read as .h5ad: {exc}") from None
    found = [k for k in EMBEDDING_KEYS.values() if k in keys]
    if len(found) == 1:
        return found[0]
    if not found:
        raise DataError(f"{path}: no map in obsm (looked for {', '.join(EMBEDDING_KEYS.values())}"
                        f"; it holds {', '.join(keys) or 'none'}); name the key with "
                        "--coords KEY")
    raise DataError(f"{path} holds several maps ({', '.join(found)}); choose one with "
                    "--coords KEY")


def read_embedding(path: str | os.PathLike, coords: Sequence[str] | None = None,
                   obsm: str | None = None) -> Table:
    """Read an embedding written by ``ctsne embed`` (or any table of coordinates).

    The coordinates become ``matrix``: the columns ``coords``, else those named
    ``ctsne1``, ``ctsne2``, …, with ids from an ``id`` column; an ``.npy`` is the matrix
    itself; an ``.npz`` holds it as its 2-D array (``embedding``); an ``.h5ad`` as
    ``obsm[obsm]`` (default: ``coords`` if it is one key, else the one map of
    :data:`~.formats.EMBEDDING_KEYS` it holds: ``X_ctsne``, ``X_cumap`` or
    ``X_clargevis``).

    Parameters
    ----------
    path : path
    coords : sequence of str, optional
        The coordinate columns of a table (the obsm key of an ``.h5ad``).
    obsm : str, optional
        Where an ``.h5ad`` holds the embedding.

    Returns
    -------
    Table
        The coordinates as ``matrix``, the other columns as labels.
    """
    path = Path(path)
    h5ad = file_format(path) == "h5ad"
    if h5ad and path.is_file():
        obsm = _embedding_key(path, coords, obsm)
    table = read_table(path, obsm=obsm if h5ad else None)
    if table.matrix is None:
        if "id" in table.columns:
            table.ids = _ids_from(table.columns.pop("id"), path, "id")
        names = list(coords) if coords else sorted(
            (c for c in table.columns if c.startswith("ctsne") and c[5:].isdigit()),
            key=lambda c: int(c[5:]))
        if not names:
            raise DataError(f"{path}: no ctsne1, ctsne2, … columns; name the coordinate "
                            "columns with --coords")
        table.matrix = np.column_stack([table.column(c) for c in names]).astype(np.float64)
        table.matrix_names = names
        for c in names:
            del table.columns[c]
    if not np.all(np.isfinite(table.matrix)):
        raise DataError(f"{path}: the embedding has missing or non-finite coordinates")
    return table

"""Which files ctsne reads and writes, and the error for a file it cannot use.

The one place that lists the formats: reading (:mod:`.tables`), writing (:mod:`.writing`)
and the command line take their lists from here; the figure formats are defined by
:mod:`ctsne.plotting.canvas` (an earlier stage, which writes figures) and listed here too.
Formats are chosen by file extension.
"""

from __future__ import annotations

import gzip
import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import IO

# figures are written by ctsne.plotting, an earlier stage, which names their formats
from ..._output import DataError, listing
from ...estimator.registry import METHODS
from ...plotting.canvas import FIGURE_FORMATS

__all__ = [
    "DataError",
    "EMBEDDING_FORMATS",
    "EMBEDDING_KEYS",
    "EXTENSIONS",
    "FIGURE_FORMATS",
    "TABLE_FORMATS",
    "TEXT_FORMATS",
    "file_format",
    "listing",
    "open_text",
    "require",
]

# extension -> format name; a text table (TEXT_FORMATS) may also end in .gz
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet",
              ".pq": "parquet", ".npy": "npy", ".npz": "npz", ".h5ad": "h5ad"}
TEXT_FORMATS = ("csv", "tsv")
# what a table of columns (rankings, scores) is written as
TABLE_FORMATS = ("csv", "tsv", "parquet")
# what an embedding is written as (the order is the one error messages list)
EMBEDDING_FORMATS = ("csv", "tsv", "parquet", "npy", "npz", "h5ad")
# Where an .h5ad holds each method's map: obsm[key] and its record uns[key], the keys
# the ctsne.tl functions write (so that the command line and the scanpy functions agree,
# and a UMAP beside a t-SNE in one file keeps both).
EMBEDDING_KEYS = {m.key: m.obsm_key for m in METHODS}
# format -> (module to import, pip package, ctsne extra) for the optional dependencies
_EXTRAS = {"parquet": ("pyarrow.parquet", "pyarrow", "parquet"),
           "h5ad": ("anndata", "anndata", "anndata")}


def file_format(path: str | os.PathLike) -> str:
    """Format name of ``path`` from its extension: csv, tsv, parquet, npy, npz or h5ad.

    Parameters
    ----------
    path : path
        A file name; ``.csv.gz`` and ``.tsv.gz`` are text tables too.

    Returns
    -------
    str
        One of the values of :data:`EXTENSIONS`.

    Raises
    ------
    DataError
        For any other extension.
    """
    suffixes = [s.lower() for s in Path(path).suffixes[-2:]]
    gz = suffixes[-1:] == [".gz"]
    fmt = EXTENSIONS.get(suffixes[-2 if gz else -1]) if len(suffixes) > gz else None
    if fmt is None or (gz and fmt not in TEXT_FORMATS):
        raise DataError(f"{path}: unknown file type; use one of "
                        f"{', '.join(sorted(EXTENSIONS))} (.csv/.tsv may end in .gz)")
    return fmt


def require(fmt: str, action: str) -> ModuleType:
    """Import the optional module that ``fmt`` needs, or explain how to install it.

    Parameters
    ----------
    fmt : {"parquet", "h5ad"}
    action : str
        "reading" or "writing", for the message.

    Returns
    -------
    module
        ``pyarrow.parquet`` or ``anndata``.
    """
    module, package, extra = _EXTRAS[fmt]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DataError(f"{action} .{fmt} needs {package}: pip install 'ctsne[{extra}]'") from None


def open_text(path: Path, mode: str = "r") -> IO[str]:
    """Open a text table for reading (``"r"``) or writing (``"w"``), gzipped if ``.gz``."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, mode + "t", newline="", encoding="utf-8")
    return open(path, mode, newline="", encoding="utf-8")

"""Table → numeric feature matrix, by the command line's data-hygiene rules.

Text columns are one-hot encoded (or rejected); a column of numbers with a few cells that
are not numbers (typos) raises, naming those rows; missing values raise (naming rows and
columns) or drop their rows; constant columns are noted, and dropped when standardising.
Every choice that changes the data is recorded in :attr:`Features.notes` for the user, and
those that lose data also in :attr:`Features.warnings`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .formats import DataError
from .tables import Table, suggest

__all__ = ["Features", "prepare_features", "MAX_ONEHOT_LEVELS", "NUMERIC_AT_LEAST"]

# More text levels than this in a feature column is almost surely an identifier.
MAX_ONEHOT_LEVELS = 100
# A text column whose present cells are numbers in at least this share is a column of
# numbers with a few bad cells (typos, units, decimal commas): an error names those cells,
# where one-hot encoding would silently make every number a category.
NUMERIC_AT_LEAST = 0.9


@dataclass
class Features:
    """A numeric feature matrix and where it came from.

    Attributes
    ----------
    X : ndarray (n_kept, p)
    names : list of str
        Feature names (one-hot columns are ``column=level``).
    rows : ndarray of int
        Rows of the table that were kept (all unless ``drop_missing``).
    notes : list of str
        What was done that the user should know about (dropped rows or columns, …).
    warnings : list of str
        Those of the notes that lose data (dropped rows): a command shows them even when
        quiet.
    """

    X: np.ndarray
    names: list[str]
    rows: np.ndarray
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _match(patterns: Sequence[str], available: Sequence[str], what: str) -> list[str]:
    out: list[str] = []
    for pat in patterns:
        hits = fnmatch.filter(available, pat) if any(ch in pat for ch in "*?[") else (
            [pat] if pat in available else [])
        if not hits:
            raise DataError(f"no {what} {pat!r}{suggest(pat, available)}")
        out.extend(h for h in hits if h not in out)
    return out


def _describe_rows(rows: np.ndarray) -> str:
    shown = ", ".join(str(r) for r in rows[:8])
    return f"row{'s' if len(rows) > 1 else ''} {shown}{' …' if len(rows) > 8 else ''}"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _not_numbers(col: np.ndarray, levels: list[str]) -> tuple[np.ndarray, str]:
    """The rows of text column ``col`` whose value is not a number, and a description of
    them for a message; none (and "") when no value of the column is a number."""
    bad = {v for v in levels if _number(v) is None}
    if len(bad) == len(levels):
        return np.empty(0, dtype=np.int64), ""
    rows = np.flatnonzero([v in bad for v in col])
    shown = ", ".join(f"{r} ({col[r]!r})" for r in rows[:5]) + (" …" if len(rows) > 5 else "")
    commas = sorted(v for v in bad if _number(v.replace(",", ".")) is not None)
    hint = f"; {commas[0]!r} has a decimal comma: write numbers with '.'" if commas else ""
    return rows, (f"row{'s' if len(rows) > 1 else ''} {shown} (rows counted from 0 after "
                  f"the header){hint}")


def _numbers_with_typos(name: str, col: np.ndarray, levels: list[str]) -> None:
    """Raise when text column ``col`` holds numbers except in a few cells (see
    :data:`NUMERIC_AT_LEAST`), naming those cells."""
    rows, where = _not_numbers(col, levels)
    present = sum(v is not None for v in col)
    if not where or present - len(rows) < NUMERIC_AT_LEAST * present:
        return
    cells = "1 cell that is not a number" if len(rows) == 1 else (
        f"{len(rows)} cells that are not numbers")
    raise DataError(
        f"column {name!r} holds numbers except {cells}: {where}; correct them, or make "
        f"them missing (empty or NA) and pass --drop-missing, or leave the column out "
        f"with --exclude {name}")


def prepare_features(table: Table, columns: Sequence[str] | None = None,
                     exclude: Sequence[str] = (), categorical: str = "onehot",
                     standardize: bool = False, drop_missing: bool = False,
                     label_columns: Sequence[str] = ()) -> Features:
    """Numeric features from a table, by the CLI's data-hygiene rules.

    Parameters
    ----------
    columns : sequence of str, optional
        Feature columns (names or shell patterns such as ``x*``); default: all columns
        (of the matrix for matrix formats) except ``exclude``.
    exclude : sequence of str
        Columns never used as features (the priors, the ids).
    categorical : {"onehot", "error"}
        Text columns become one 0/1 column per level, or raise.
    standardize : bool
        Scale features to zero mean, unit variance; constant columns are dropped.
    drop_missing : bool
        Drop rows with a missing value in a feature or in ``label_columns``; otherwise a
        missing feature value raises (naming rows and columns).
    """
    if categorical not in ("onehot", "error"):
        raise ValueError(f"categorical must be 'onehot' or 'error', got {categorical!r}")
    notes: list[str] = []
    warned: list[str] = []
    if table.matrix is not None:
        names = list(table.matrix_names)
        use = _match(columns, names, "feature") if columns else names
        pos = {n: j for j, n in enumerate(names)}
        X = table.matrix[:, [pos[n] for n in use]] if use != names else table.matrix
        blocks, out_names = [X], list(use)
    else:
        # named columns are used even if excluded by default (e.g. a prior as a feature)
        candidates = [c for c in table.columns if c not in set(exclude)]
        use = _match(columns, list(table.columns), "feature column") if columns else candidates
        blocks, out_names = [], []
        for name in use:
            col = table.columns[name]
            if col.dtype != object:
                blocks.append(col[:, None])
                out_names.append(name)
                continue
            levels = sorted({v for v in col if v is not None})
            _numbers_with_typos(name, col, levels)
            if categorical == "error":
                raise DataError(f"column {name!r} is not numeric (values such as "
                                f"{', '.join(repr(v) for v in levels[:3])}); exclude it with "
                                f"--exclude {name}, or pass --categorical onehot")
            if len(levels) > MAX_ONEHOT_LEVELS:
                _, where = _not_numbers(col, levels)
                numeric = (f"; if it should be numbers, these cells are not: {where}"
                           if where else "")
                raise DataError(f"column {name!r} has {len(levels)} distinct text values, too "
                                f"many to one-hot encode; exclude it (--exclude {name}) or, "
                                f"if it names the rows, pass --id {name}{numeric}")
            onehot = (col[:, None] == np.array(levels, dtype=object)[None, :]).astype(float)
            onehot[np.array([v is None for v in col])] = np.nan
            blocks.append(onehot)
            out_names.extend(f"{name}={lv}" for lv in levels)
            notes.append(f"one-hot encoded {name!r} ({len(levels)} levels)")
        if not blocks:
            raise DataError("no feature columns left (all were excluded); name them with "
                            "--columns")
    X = np.hstack(blocks) if len(blocks) > 1 else np.asarray(blocks[0], dtype=np.float64)
    rows = np.arange(len(X))
    bad = ~np.isfinite(X)
    if drop_missing:
        drop = bad.any(axis=1)
        for name in label_columns:
            col = table.column(name)
            drop |= np.isnan(col) if col.dtype != object else np.array([v is None for v in col])
        if drop.all():
            raise DataError("every row has a missing value; nothing is left to embed")
        if drop.any():
            warned.append(f"dropped {int(drop.sum())} of {len(X)} rows with missing values "
                          f"({_describe_rows(np.flatnonzero(drop))})")
            notes.append(warned[-1])
            X, rows = X[~drop], rows[~drop]
    elif bad.any():
        cols = sorted({out_names[j].split("=")[0] for j in np.flatnonzero(bad.any(axis=0))})
        raise DataError(
            f"missing or non-finite values in {_describe_rows(np.flatnonzero(bad.any(axis=1)))}"
            f" (counting from 0 after the header), column(s) {', '.join(map(repr, cols))}; "
            "impute them or pass --drop-missing")
    if standardize:
        sd = X.std(axis=0)
        const = sd <= 1e-12 * np.maximum(1.0, np.abs(X).max(axis=0, initial=0.0))
        if const.all():
            raise DataError("every feature column is constant; there is nothing to embed")
        if const.any():
            notes.append("dropped constant column(s) "
                         + ", ".join(repr(n) for n, c in zip(out_names, const, strict=True) if c))
            X, sd = X[:, ~const], sd[~const]
            out_names = [n for n, c in zip(out_names, const, strict=True) if not c]
        X = (X - X.mean(axis=0)) / sd
    elif len(X):
        const = ~(X.max(axis=0) > X.min(axis=0))
        if const.any() and not const.all():  # all constant: the fit refuses the data
            names = [n for n, c in zip(out_names, const, strict=True) if c]
            shown = ", ".join(repr(n) for n in names[:5]) + (" …" if len(names) > 5 else "")
            notes.append(f"{len(names)} of {len(out_names)} feature columns are constant "
                         f"({shown}): they carry no information (they do not change the "
                         "distances); leave them out with --exclude, or --standardize drops "
                         "them")
    return Features(np.ascontiguousarray(X, dtype=np.float64), out_names, rows, notes, warned)

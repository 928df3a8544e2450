"""What several subcommands share: notes on stderr, the output checks, rows by id.

Errors the user can fix are raised as :class:`~ctsne.interfaces.files.formats.DataError`
and turned into one line by :func:`ctsne.interfaces.cli.main.main`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import numpy as np

from ..files.formats import FIGURE_FORMATS, TABLE_FORMATS, DataError

if TYPE_CHECKING:  # pragma: no cover
    from ..files.tables import Table

__all__ = ["aligned", "check_table_and_plot", "fmt", "note", "report_features", "warn"]


def note(args: argparse.Namespace, message: str) -> None:
    """Print ``ctsne: message`` on stderr unless the command runs with ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(f"ctsne: {message}", file=sys.stderr)


def warn(message: str) -> None:
    """Print ``ctsne: warning: message`` on stderr, with ``--quiet`` too (as the library's
    warnings are): ``--quiet`` hides progress and notes, never a warning."""
    print(f"ctsne: warning: {message}", file=sys.stderr)


def report_features(args: argparse.Namespace, messages: list[str],
                    warnings: list[str] = ()) -> None:
    """Print what preparing the features did: ``warnings`` (those of ``messages`` that
    lose data, e.g. dropped rows) always, the other messages as notes."""
    for message in messages:
        if message in warnings:
            warn(message)
        else:
            note(args, f"note: {message}")


def fmt(v) -> str:
    """A weight (α', β') for a message: 4 significant digits, or an array of them."""
    return np.array2string(np.asarray(v), precision=4) if np.ndim(v) else f"{v:.4g}"


def check_table_and_plot(args: argparse.Namespace) -> None:
    """Check before any work that ``--output`` (a table) and ``--plot`` can be written."""
    from ..files.writing import check_output

    for path, kinds in ((args.output, TABLE_FORMATS), (args.plot, FIGURE_FORMATS)):
        if path:
            check_output(path, args.force, kinds)


def aligned(table: Table, emb: Table, what: str) -> Table:
    """``table`` restricted to the embedding's rows, in the embedding's order (by id).

    Parameters
    ----------
    table : Table
        The data (or labels) the embedding was made of.
    emb : Table
        An embedding read by :func:`~ctsne.interfaces.files.tables.read_embedding`.
    what : str
        The table's name, for the error when an embedding id is not in it.

    Returns
    -------
    Table
    """
    pos = {str(i): k for k, i in enumerate(table.ids)}
    rows = np.array([pos.get(str(i), -1) for i in emb.ids])
    if (rows < 0).any():
        raise DataError(f"{int((rows < 0).sum())} embedding ids are not in {what} (e.g. "
                        f"{str(emb.ids[rows < 0][0])!r}); pass the --id used with ctsne embed")
    return table.take(rows)

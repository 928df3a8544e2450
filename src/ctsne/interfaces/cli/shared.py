"""What several subcommands share: notes on stderr, the output checks, rows by id.

Errors the user can fix are raised as :class:`~ctsne.interfaces.files.formats.DataError`
and turned into one line by :func:`ctsne.interfaces.cli.main.main`.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

import numpy as np

from ..files.formats import FIGURE_FORMATS, TABLE_FORMATS, DataError

if TYPE_CHECKING:  # pragma: no cover
    from ..files.tables import Table

__all__ = ["FLAGS", "aligned", "check_device", "check_table_and_plot", "cli_wording", "fmt",
           "label_columns", "note", "report_features", "warn", "written_labels"]

# The estimators' parameters that options set, by the option that sets them: messages
# name the option (cli_wording), and the option checks name it too.
FLAGS = {"n_components": "--dims", "perplexity": "--perplexity", "beta": "--beta",
         "alpha": "--alpha", "combine": "--combine", "method": "--method",
         "n_iter": "--n-iter", "affinities": "--affinities",
         "within_weight": "--within-weight", "early_exaggeration_iter": "--exaggeration-iter",
         "exaggeration": "--exaggeration", "random_state": "--seed", "n_jobs": "--threads",
         "n_neighbors": "--n-neighbors", "min_dist": "--min-dist", "n_epochs": "--n-epochs",
         "backend": "--backend", "device": "--device"}
_QUOTED = r"'[^']*'(?: or '[^']*')*"  # 'bh' or 'exact'


def _as_option(flag: str):
    """A substitution writing ``name=value`` as ``--flag value`` (quotes dropped)."""
    return lambda m: f"{flag} {m.group(1).replace(chr(39), '')}"


def cli_wording(message: str) -> str:
    """A library message as the command line's user needs it: the options, not the
    Python parameters they set (``within_weight=2`` is ``--within-weight 2``), and no
    "None", a value no option can be given ("must be None or an integer" is "must be
    an integer"; "leave it None" is "leave out --within-weight").

    A parameter is rewritten where it is written as code: ``name=value``, ``name must``
    and ``name`` with an underscore (never a word of the prose: "beta < 1 removes"), and
    never inside a call (``Balanced(within_weight=0.7)``), which names Python."""
    first = None
    for name, flag in FLAGS.items():
        # a message the option checks wrote with the option's name: only the None
        if re.search(rf"{flag} must be None(?: or|,) ", message):
            first = first or flag
            message = re.sub(rf"{flag} must be None(?: or|,) ", f"{flag} must be ", message)
        if not re.search(rf"(?<![\w.(`-]){name}\b", message):
            continue
        first = first or flag
        code = rf"(?<![\w.(`-]){name}"
        message = re.sub(code + rf"=({_QUOTED}|[^\s,;:)]+)", _as_option(flag), message)
        message = re.sub(code + r" must be None(?: or|,) ", rf"{flag} must be ", message)
        if name == "random_state":  # a Generator is Python's; a seed is what --seed takes
            message = message.replace(" or a numpy Generator", "")
        message = re.sub(code + r"(?= must\b)", flag, message)
        if "_" in name:
            message = re.sub(code + r"\b(?![=(])", flag, message)
    if first is not None:
        message = message.replace("leave it None", f"leave out {first}")
    return message


def check_device(device: str | None, engine: str | None, flag: str) -> None:
    """Refuse ``--device`` without the torch engine (chosen by ``flag``: embed's
    ``--backend``, explore's ``--engine``), before any work."""
    if device is not None and engine != "torch":
        raise DataError(f"--device {device} chooses the torch engine's device; add "
                        f"{flag} torch")


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
        if not message:  # e.g. no column rule to report for a matrix input
            continue
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


def written_labels(labels: list[str], roles) -> list[str]:
    """The label columns an output keeps: :func:`label_columns`' first, then every other
    label column of the input (``roles.labels``), so that ``ctsne score`` and a plot can
    read them from the embedding file."""
    return list(dict.fromkeys([*labels, *roles.labels]))


def label_columns(args: argparse.Namespace, table: Table) -> tuple[str | None, list[str]]:
    """``ctsne embed``'s colour column and the label columns written with its points.

    The one rule of a fit and of ``--reference``: the colour is ``--color``, else with
    ``--plot`` the first prior column; the labels written are the prior columns, the
    colour, ``--marker`` and ``--keep``. Each is checked now, before any long work: a
    column not in ``table`` fails listing the columns, and a ``--marker`` with more values
    than there are marker shapes fails too.

    Returns
    -------
    (color, labels) : the colour column (None for none) and the label columns, in order.
    """
    from ...plotting.figures import marker_levels

    color = args.color or (args.prior[0] if args.prior and args.plot else None)
    labels = list(dict.fromkeys([*args.prior, *(c for c in (color, args.marker) if c),
                                 *args.keep]))
    for name in labels:
        table.column(name)  # fail early, listing the columns, if one is missing
    if args.marker:
        try:
            marker_levels(table.column(args.marker), f"--marker column {args.marker!r}")
        except DataError:
            raise
        except ValueError as exc:
            raise DataError(f"{exc} (--color {args.marker})") from None
    return color, labels


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

"""Which columns of a table are features and which are labels: one rule for every command.

Features are what a map is computed from and what a ranking ranks; labels colour, mark
and describe the points, and can be priors. ``embed``, ``rank``, ``score --scib`` and
``explore`` all decide by :func:`assign_columns`:

* ``--features COL …`` names the features exactly (shell patterns such as ``x*`` match
  the columns that are not ids, priors, ``--exclude`` or ``--labels`` columns; a plain
  name is taken as given, a prior too). Text ones are one-hot encoded.
* Otherwise every numeric column is a feature, whatever its values. A numeric class
  code (a digit, a cluster id) becomes a label with ``--labels COL``; no guess does it,
  since one by the number of distinct values would drop binary pixels, counts and ratings.
* Text columns (strings, categories, booleans as the readers give them) are labels.
  A text column whose cells are numbers except a few (a typo, a unit, a decimal comma)
  stays a feature, so that the feature checks name those cells instead of it vanishing
  among the labels.
* Matrix inputs (.npy, .npz, .h5ad): the matrix is the features (``--features``
  chooses among its columns), the other arrays (an AnnData's ``obs``) the labels.
* Rows for a saved model (``embed --resume``, ``--reference``): the model's own feature
  columns (its ``feature_names_in_``, one-hot ``column=level`` names read as their
  column), so that a model keeps the features it was fitted on.

The caller prints :attr:`ColumnRoles.note`, one line saying what was decided and how to
change it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .features import NUMERIC_AT_LEAST, _match
from .formats import DataError
from .tables import Table

__all__ = ["ColumnRoles", "assign_columns", "is_text"]

# Names listed in the one-line note before it shortens the list to "a, b, … (N)".
_SHOWN = 6


@dataclass
class ColumnRoles:
    """The outcome of :func:`assign_columns`.

    Attributes
    ----------
    features : list of str or None
        The feature columns, to pass to
        :func:`~ctsne.interfaces.files.features.prepare_features` as ``columns``; None for
        a matrix input without ``--features`` (the whole matrix).
    labels : list of str
        The label columns: every column that is not a feature, an id or ``--exclude``d.
    note : str
        One line for stderr: what was decided and how to change it (empty for a matrix
        input, where nothing was decided).
    text_labels : list of str
        Those of the labels that the rule made labels because they hold text.
    """

    features: list[str] | None
    labels: list[str]
    note: str = ""
    text_labels: list[str] = field(default_factory=list)


def _number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def is_text(values: np.ndarray) -> bool:
    """Whether a table column is text for the rule (module note): an object column
    whose present cells are not almost all numbers."""
    values = np.asarray(values)
    if values.dtype != object:
        return False
    present = [v for v in values if v is not None]
    return sum(_number(v) for v in present) < NUMERIC_AT_LEAST * len(present)


def _names(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= _SHOWN:
        return ", ".join(names)
    return f"{', '.join(names[:_SHOWN - 1])}, … ({len(names)})"


def _check_named(table: Table, names: Sequence[str], flag: str) -> None:
    for name in names:
        if name not in table.columns:
            # names the columns there are, and the nearest one
            try:
                table.column(name)
            except DataError as exc:
                raise DataError(f"{flag}: {exc}") from None


def assign_columns(table: Table, features: Sequence[str] | None = None,
                   labels: Sequence[str] = (), exclude: Sequence[str] = (),
                   prior: Sequence[str] = (), include_prior: bool = False,
                   also_labels: Sequence[str] = (), fitted: Sequence[str] | None = None,
                   fitted_name: str = "the model") -> ColumnRoles:
    """Split ``table``'s columns into features and labels by the rule of the module note.

    Parameters
    ----------
    table : Table
        As read (the id column already taken out).
    features : sequence of str, optional
        ``--features``: names or shell patterns; None: the rule decides.
    labels : sequence of str
        ``--labels``: columns that are labels even where the rule would make them
        features (numeric class codes).
    exclude : sequence of str
        ``--exclude``: neither features nor labels.
    prior : sequence of str
        The prior columns: labels, unless ``include_prior``.
    include_prior : bool
        ``--include-prior``: the prior columns are features too (text ones one-hot).
    also_labels : sequence of str
        Columns that are labels for the caller's own reason (``rank``: the label columns
        of the embedding file), named in the note.
    fitted : sequence of str, optional
        The feature names of the model the rows are for (``feature_names_in_``): its
        columns are the features unless ``features`` is given.
    fitted_name : str
        The model, for the note (its file).

    Returns
    -------
    ColumnRoles

    Raises
    ------
    DataError
        For a name that is not a column, a column given as both feature and label, and
        a table with no feature column left.
    """
    labels, exclude, prior = list(labels), list(exclude), list(prior)
    if table.matrix is not None:
        # a matrix input: its matrix is the features; --labels only names label arrays
        misplaced = [c for c in labels if c not in table.columns]
        if misplaced:
            raise DataError(f"--labels {' '.join(misplaced)}: a matrix input's labels are "
                            "its other arrays (an AnnData's obs), which are labels already; "
                            "choose the matrix's features with --features")
        chosen = None if features is None else list(features)
        return ColumnRoles(chosen, list(table.columns))
    _check_named(table, labels, "--labels")
    _check_named(table, exclude, "--exclude")
    given_prior = [] if include_prior else prior
    skip = {*exclude, *given_prior, *labels, *also_labels}
    candidates = [c for c in table.columns if c not in skip]
    if features is not None:
        patterns = [f for f in features if any(ch in f for ch in "*?[")]
        plain = [f for f in features if f not in patterns]
        _check_named(table, plain, "--features")
        both = [c for c in plain if c in set(labels)]
        if both:
            raise DataError(f"{', '.join(both)} given as both --features and --labels; "
                            "name each column in one of them")
        chosen = []
        for f in features:
            hits = [f] if f in plain else _match([f], candidates, "feature column")
            chosen.extend(h for h in hits if h not in chosen)
        rule = "named by --features"
    elif fitted is not None:
        # the model's columns: "c=level" is the one-hot column of text column c
        chosen = []
        for name in fitted:
            column = name if name in table.columns else name.split("=")[0]
            # a column the user keeps out stays out: the model's checks then name it
            if column in table.columns and column not in chosen and column not in {
                    *exclude, *labels}:
                chosen.append(column)
        if not chosen:
            raise DataError(f"{fitted_name} was fitted on columns this table lacks "
                            f"({_names(list(fitted))}); give the feature columns it was "
                            "fitted on")
        rule = f"those {fitted_name} was fitted on"
    else:
        chosen = [c for c in candidates if not is_text(table.columns[c])]
        if include_prior:  # named as priors and asked for as features: taken as given
            chosen += [c for c in prior if c not in chosen]
        if not chosen:
            text = [c for c in candidates if is_text(table.columns[c])]
            raise DataError(
                "no numeric feature column: "
                + (f"{_names(text)} hold text, which is a label unless named as a feature; "
                   if text else "every column is an id, a prior, --exclude or --labels; ")
                + "name the features with --features COL … (text ones are one-hot encoded)")
        rule = "numeric"
    chosen_set = set(chosen)
    out_labels = [c for c in table.columns if c not in chosen_set and c not in set(exclude)]
    text_labels = [c for c in out_labels if c not in skip and is_text(table.columns[c])]
    parts = [f"{len(chosen)} feature{'s' if len(chosen) != 1 else ''} ({rule}: "
             f"{_names(chosen)})"]
    why = [(text_labels, "text"), ([c for c in labels if c not in chosen_set], "--labels"),
           ([c for c in given_prior if c not in chosen_set], "prior"),
           ([c for c in also_labels if c in table.columns and c not in chosen_set],
            "in the embedding file")]
    if features is not None:
        rest = [c for c in out_labels if c not in {n for group, _ in why for n in group}]
        why.append((rest, "not named"))
    said = [f"{_names(group)} ({reason})" for group, reason in why if group]
    parts.append(f"labels: {'; '.join(said)}" if said else "no labels")
    how = ("--labels COL makes a numeric column a label; --features COL … names the "
           "features (text ones one-hot encoded)")
    note = f"columns: {', '.join(parts)}; {how}"
    return ColumnRoles(chosen, out_labels, note, text_labels)

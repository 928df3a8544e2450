"""``ctsne embed NEWDATA --reference model.pkl``: new rows placed into a saved map.

The subcommand body (the parser is in :mod:`ctsne.interfaces.cli.main`). The saved model
(``ctsne embed --save-model``, loaded by :func:`ctsne.interfaces.files.models.load_model`)
keeps its training data, its feature names and its prior; NEWDATA's features are lined up
with the training ones by name, and ``--prior`` names NEWDATA's columns holding the labels
of the model's prior columns, in the same order.

A model saved by ``ctsne embed --save-model`` also keeps its rows' ids and the label
columns written with the map. ``--with-reference`` writes the map's points with those
ids (prefixed ``reference:`` only where one is also a new row's id, so that the ids of
the file stay unique; a model without ids gets ``reference:ROW``) and labels, and
``--plot`` colours and marks each label as the map's own plot did.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..files.formats import EMBEDDING_FORMATS, FIGURE_FORMATS, DataError
from .shared import label_columns, note, report_features, warn, written_labels

__all__ = ["place"]


def _load(path):
    """The model at ``path``, if new rows can be placed into it."""
    from ..files.models import load_model, provenance

    model = load_model(path, advice="save one with ctsne embed ... --save-model")
    if not hasattr(model, "training_data_"):
        raise DataError(f"{path} does not hold its training data (saved by an older ctsne);"
                        " refit and save it again")
    if provenance(model).get("standardized", False):
        raise DataError(f"{path} was fitted on standardised features (--standardize) and "
                        "does not keep the training means and spreads, so new rows cannot "
                        "be scaled the same way; refit without --standardize (scale the "
                        "table yourself) to place new rows")
    return model


def _align(feats, model, notes: list[str]) -> np.ndarray:
    """NEWDATA's feature matrix in the model's feature order (by name when it has names)."""
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return feats.X
    pos = {n: k for k, n in enumerate(feats.names)}
    missing = [n for n in names if n not in pos and "=" not in n]
    if missing:
        raise DataError(f"NEWDATA lacks the model's feature column(s) {missing[:10]}; "
                        "give the same feature columns as for the fit")
    extra = [n for n in feats.names if n not in set(names)]
    if any("=" not in n for n in extra):
        raise DataError(f"NEWDATA has feature column(s) the model was not fitted on: "
                        f"{[n for n in extra if '=' not in n][:10]}; leave them out "
                        "with --exclude")
    if extra:
        notes.append(f"{len(extra)} text value(s) not seen in training ({', '.join(extra[:5])}"
                     f"{' …' if len(extra) > 5 else ''}) have no feature column in the model")
    X = np.zeros((feats.X.shape[0], len(names)))
    for j, n in enumerate(names):
        if n in pos:  # a one-hot level absent from NEWDATA stays 0
            X[:, j] = feats.X[:, pos[n]]
    return X


def _prior_labels(model, n_prior: int) -> list[np.ndarray | None]:
    """The training rows' labels of each prior column (None where they cannot be told)."""
    prior = model.prior_
    if prior is None or n_prior == 0:
        return [None] * n_prior
    if len(prior.codes) == n_prior:
        return [np.asarray(cl, dtype=object)[c] for c, cl in zip(prior.codes, prior.classes,
                                                               strict=True)]
    joint = np.asarray(prior.classes[0], dtype=object)[prior.codes[0]]
    return [np.array([t[m] for t in joint], dtype=object) for m in range(n_prior)]


def _reference_labels(model, names: list[str], prior: list[str]) -> dict[str, np.ndarray]:
    """The map's own rows' labels of the columns ``names``, where known: as saved with the
    model, else (a model saved before the labels were kept) from its prior, whose columns
    ``prior`` names in the model's order."""
    from ..files.models import provenance

    n = len(model.embedding_)
    saved = provenance(model).get("labels") or {}
    out = {c: np.asarray(v) for c, v in saved.items() if c in names and len(v) == n}
    for c, v in zip(prior, _prior_labels(model, len(prior)), strict=True):
        if c not in out and v is not None:
            out[c] = v
    return out


def _reference_ids(model, new_ids: np.ndarray) -> tuple[np.ndarray, str | None]:
    """The ids of the map's own rows for ``--with-reference``, and a note on how they
    were made when they are not the rows' own ids."""
    from ..files.models import provenance

    n = len(model.embedding_)
    own = provenance(model).get("ids")
    if own is None or len(own) != n:
        return (np.array([f"reference:{i}" for i in range(n)], dtype=object),
                "the model keeps no row ids (saved by an older ctsne, or from Python): the "
                "map's points are written as reference:ROW")
    own = np.asarray(own).astype(str)
    if not set(own).intersection(np.asarray(new_ids).astype(str)):
        return own.astype(object), None
    return (np.array([f"reference:{i}" for i in own], dtype=object),
            "some ids of the map's points are also ids of new rows: the map's points are "
            "written as reference:ID")


def _label_column(values: np.ndarray) -> np.ndarray:
    """A label column as objects, numbers written as the tables write them (1, not 1.0)."""
    values = np.asarray(values)
    if values.dtype == object:
        return values
    out = np.empty(len(values), dtype=object)
    if values.dtype.kind == "f":
        out[:] = [None if v != v else (int(v) if float(v).is_integer() else v)
                  for v in values.tolist()]
    else:
        out[:] = values.tolist()
    return out


def _join(ref: np.ndarray | None, new: np.ndarray, n_ref: int) -> np.ndarray:
    """The map's labels (missing where unknown) followed by the new rows' labels."""
    if ref is not None and ref.dtype.kind in "iuf" and new.dtype.kind in "iuf":
        return np.concatenate([ref.astype(np.float64), new.astype(np.float64)])
    head = np.full(n_ref, None, dtype=object) if ref is None else _label_column(ref)
    return np.concatenate([head, _label_column(new)])


def _plot(args, model, Y_new, table, color, ref_labels, method: str) -> None:
    """Draw ``--plot``: the new points over the map they were placed into (its points
    faded, in their labels' colours where the model kept them), each label in the colour
    and shape it has in the map's own plot."""
    from ...plotting import figures as plotting

    ref = np.asarray(model.embedding_)[:, :2]
    ax = plotting.plot_embedding(
        Y_new, table.columns[color] if color else None,
        table.columns[args.marker] if args.marker else None,
        title=f"new points in the {method} map of {Path(args.reference).name}",
        color_name=color, marker_name=args.marker, random_state=0,
        color_reference=ref_labels.get(color) if color else None,
        marker_reference=ref_labels.get(args.marker) if args.marker else None,
        background=ref)
    plotting.save_figure(ax.figure, args.plot, args.force)


def place(args: argparse.Namespace) -> int:
    """The body of ``ctsne embed NEWDATA --reference MODEL`` (a model of any method)."""
    from ..files.columns import assign_columns
    from ..files.features import prepare_features
    from ..files.formats import EMBEDDING_KEYS
    from ..files.models import method_of
    from ..files.tables import read_table
    from ..files.writing import check_output, write_embedding

    if args.save_model or args.resume:
        raise DataError("--reference places rows into a saved model; it cannot be "
                        "combined with --save-model or --resume")
    if args.standardize:
        raise DataError("--standardize cannot be used with --reference: new rows must be "
                        "scaled like the training rows, not by their own statistics")
    outputs = [check_output(args.output, args.force, EMBEDDING_FORMATS)]
    if args.with_reference and Path(args.output).suffix == ".h5ad":
        raise DataError("--with-reference writes .csv, .tsv, .parquet, .npz or .npy")
    if args.plot:
        outputs.append(check_output(args.plot, args.force, FIGURE_FORMATS))
    paths = [Path(args.input).resolve(), Path(args.reference).resolve(),
             *(p.resolve() for p in outputs)]
    if len(set(paths)) < len(paths):
        raise DataError("the input, model and output files must all be different")
    model = _load(args.reference)
    if args.plot and np.shape(model.embedding_)[1] < 2:
        raise DataError(f"--plot draws 2-D maps; {args.reference} holds a "
                        f"{np.shape(model.embedding_)[1]}-D one")

    table = read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer)
    if args.meta:
        meta = read_table(args.meta)
        if meta.n_rows != table.n_rows:
            raise DataError(f"{args.meta} has {meta.n_rows} rows but {args.input} has "
                            f"{table.n_rows}; they must have the same rows, in order")
        table.columns.update(meta.columns)
    # the columns a fit would write (the same rule), checked before any work
    color, labels = label_columns(args, table)
    exclude = [*args.exclude, *([] if args.include_prior else args.prior)]
    # rows for a saved model take the columns it was fitted on
    roles = assign_columns(table, args.columns, args.label_columns, args.exclude,
                           args.prior, args.include_prior,
                           fitted=getattr(model, "feature_names_in_", None),
                           fitted_name=args.reference or "the model")
    feats = prepare_features(table, roles.features, exclude, args.categorical, False,
                             args.drop_missing, args.prior)
    table = table.take(feats.rows)
    unseen: list[str] = []
    X = _align(feats, model, unseen)
    # by name, so that messages about a prior column name it
    prior = {c: table.columns[c] for c in args.prior} or None
    # the column rule's line with the feature notes: after the checks, so that an error
    # stays the one line on stderr
    report_features(args, [roles.note, *feats.notes], feats.warnings)
    for message in unseen:  # information the map cannot use: a warning
        warn(message)

    # saved quiet (a script's transform prints nothing); here the command's -q decides
    model.set_params(n_jobs=args.threads, verbose=not args.quiet)
    Y = model.transform(X, prior)
    labels = written_labels(labels, roles)
    ids, cols = table.ids, {c: table.columns[c] for c in labels}
    ref_labels = _reference_labels(model, labels, list(args.prior))
    if args.with_reference:
        n_ref = len(model.embedding_)
        ref_ids, how = _reference_ids(model, ids)
        if how:
            note(args, f"note: {how}")
        Y = np.vstack([model.embedding_, Y])
        ids = np.concatenate([ref_ids, np.asarray(ids).astype(str).astype(object)])
        for c in labels:
            cols[c] = _join(ref_labels.get(c), np.asarray(cols[c]), n_ref)
        cols["set"] = np.array(["reference"] * n_ref + ["new"] * table.n_rows, dtype=object)
    algorithm, method = method_of(model)
    record = None
    if Path(args.output).suffix.lower() == ".h5ad":
        from ...tl import fit_record

        # describes these points' map: the model's, which they were placed into
        record = {"placed_into": str(args.reference), "prior": list(args.prior) or None,
                  "n_reference": len(model.embedding_), "command": "ctsne embed --reference",
                  "model": fit_record(model)}
    write_embedding(args.output, Y, ids, cols, args.force,
                    None if args.with_reference else table.adata,
                    None if args.with_reference else feats,
                    key=EMBEDDING_KEYS[algorithm], record=record)
    if args.plot:
        _plot(args, model, Y[len(Y) - table.n_rows:], table, color, ref_labels, method)
    note(args, f"wrote {args.output}: {table.n_rows} new points placed into the map of "
         f"{len(model.embedding_)} points" + (" (both written)" if args.with_reference
                                              else ""))
    return 0

"""``ctsne embed NEWDATA --reference model.pkl``: new rows placed into a saved map.

The subcommand body (the parser is in :mod:`ctsne.interfaces.cli.main`). The saved model
(``ctsne embed --save-model``, loaded by :func:`ctsne.interfaces.files.models.load_model`)
keeps its training data, its feature names and its prior; NEWDATA's features are lined up
with the training ones by name, and ``--prior`` names NEWDATA's columns holding the labels
of the model's prior columns, in the same order.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..files.formats import EMBEDDING_FORMATS, FIGURE_FORMATS, DataError

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


def _reference_labels(model, n_prior: int) -> list[np.ndarray | None]:
    """The training rows' labels of each prior column (None where they cannot be told)."""
    prior = model.prior_
    if prior is None or n_prior == 0:
        return [None] * n_prior
    if len(prior.codes) == n_prior:
        return [np.asarray(cl, dtype=object)[c] for c, cl in zip(prior.codes, prior.classes,
                                                               strict=True)]
    joint = np.asarray(prior.classes[0], dtype=object)[prior.codes[0]]
    return [np.array([t[m] for t in joint], dtype=object) for m in range(n_prior)]


def place(args: argparse.Namespace) -> int:
    """The body of ``ctsne embed NEWDATA --reference MODEL``."""
    from ..files.features import prepare_features
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

    table = read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer)
    if args.meta:
        meta = read_table(args.meta)
        if meta.n_rows != table.n_rows:
            raise DataError(f"{args.meta} has {meta.n_rows} rows but {args.input} has "
                            f"{table.n_rows}; they must have the same rows, in order")
        table.columns.update(meta.columns)
    color = args.color or (args.prior[0] if args.prior and args.plot else None)
    labels = list(dict.fromkeys([*args.prior, *(c for c in (color, args.marker) if c),
                                 *args.keep]))
    for name in labels:
        table.column(name)  # fail early, listing the columns, if one is missing
    exclude = [*args.exclude, *([] if args.include_prior else args.prior)]
    feats = prepare_features(table, args.columns, exclude, args.categorical, False,
                             args.drop_missing, args.prior)
    table = table.take(feats.rows)
    notes = list(feats.notes)
    X = _align(feats, model, notes)
    prior = [table.columns[c] for c in args.prior] or None
    for note in notes:
        if not args.quiet:
            print(f"ctsne: note: {note}", file=sys.stderr)

    model.set_params(n_jobs=args.threads)
    Y = model.transform(X, prior)
    ids, cols = table.ids, {c: table.columns[c] for c in labels}
    if args.with_reference:
        n_ref = len(model.embedding_)
        ref_labels = dict(zip(args.prior, _reference_labels(model, len(args.prior)),
                              strict=True))
        Y = np.vstack([model.embedding_, Y])
        ids = np.concatenate([np.array([f"reference:{i}" for i in range(n_ref)], dtype=object),
                              np.asarray(ids).astype(str).astype(object)])
        for c in labels:
            ref = ref_labels.get(c)
            ref = np.full(n_ref, None, dtype=object) if ref is None else ref
            cols[c] = np.concatenate([ref, np.asarray(cols[c], dtype=object)])
        cols["set"] = np.array(["reference"] * n_ref + ["new"] * table.n_rows, dtype=object)
    write_embedding(args.output, Y, ids, cols, args.force,
                       None if args.with_reference else table.adata,
                       None if args.with_reference else feats)
    if args.plot:
        from ...plotting import figures as plotting

        new = slice(len(Y) - table.n_rows, len(Y))
        ax = plotting.plot_embedding(
            Y[new], table.columns[color] if color else None,
            table.columns[args.marker] if args.marker else None,
            title=f"new points in {Path(args.reference).name}", color_name=color,
            marker_name=args.marker, random_state=0)
        plotting.save_figure(ax.figure, args.plot, args.force)
    if not args.quiet:
        print(f"ctsne: wrote {args.output}: {table.n_rows} new points placed into the map of "
              f"{len(model.embedding_)} points" + (" (both written)" if args.with_reference
                                                   else ""), file=sys.stderr)
    return 0

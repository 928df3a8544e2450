"""The body of ``ctsne explore`` (the parser is in :mod:`ctsne.interfaces.cli.main`).

Which columns are features and which are labels
-----------------------------------------------
Features are what the map is computed from and what a selection's ranking ranks; labels
colour, mark and describe the points, and any label or feature can become a prior.

* With ``--columns``, exactly the named columns are features (text ones one-hot encoded);
  every other column is a label.
* Without it, the features are the numeric columns, except the ``--id``, ``--prior`` and
  ``--exclude`` columns and the columns that look like class labels: text columns, and
  numeric columns of whole numbers with 2 to ``LABEL_MAX_LEVELS`` distinct values, each
  held by at least ``LABEL_MIN_SHARE`` of the rows (a digit, a cluster id, a 0/1 group;
  a pixel that is 0 on almost every row stays a feature). Those become labels, and a
  note on stderr names them.
* Matrix inputs (.npy, .npz, .h5ad): the matrix is the features, the other arrays (an
  AnnData's ``obs``) the labels.

The page lists both (the ``columns`` panel).
"""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["run", "start", "label_like", "LABEL_MAX_LEVELS", "LABEL_MIN_SHARE"]

# A numeric column is read as a class label, not a feature, when its values are whole
# numbers with at most this many distinct values ...
LABEL_MAX_LEVELS = 12
# ... each held by at least this share of the rows (so that a sparse count, 0 on almost
# every row, stays a feature).
LABEL_MIN_SHARE = 0.01


def _number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def label_like(values: np.ndarray) -> bool:
    """Whether a column looks like a class label rather than a feature: text (unless most
    of its values are numbers: a numeric column with typos, which the feature checks
    report), or whole numbers with 2 to ``LABEL_MAX_LEVELS`` distinct values, each held by
    at least ``LABEL_MIN_SHARE`` of the rows with a value."""
    values = np.asarray(values)
    if values.dtype == object:
        present = [v for v in values if v is not None]
        return 2 * sum(_number(v) for v in present) <= len(present)
    v = values.astype(np.float64)
    v = v[np.isfinite(v)]
    if not len(v) or np.any(v != np.round(v)):
        return False
    _, counts = np.unique(v, return_counts=True)
    return 2 <= len(counts) <= LABEL_MAX_LEVELS and counts.min() >= LABEL_MIN_SHARE * len(v)


def _coordinates(path: str):
    """The embedding in ``path``: ``ctsne1``, ``ctsne2`` (as ``ctsne embed`` and the
    page's CSV/Parquet export write them), else the last ``step{k}_1``/``step{k}_2`` pair
    (an export of an older page)."""
    from ..files.formats import DataError
    from ..files.tables import read_embedding, read_table

    try:
        return read_embedding(path)
    except DataError as exc:
        if "ctsne1" not in str(exc):
            raise
    cols = read_table(path).columns
    steps = sorted(int(c[4:-2]) for c in cols if c.startswith("step") and c.endswith("_1")
                   and c[4:-2].isdigit() and f"step{c[4:-2]}_2" in cols)
    if not steps:
        raise DataError(f"{path}: no coordinate columns; explore --embedding reads ctsne1, "
                        "ctsne2 (written by ctsne embed and by the page's CSV export) or "
                        "step<k>_1, step<k>_2") from None
    return read_embedding(path, coords=[f"step{steps[-1]}_1", f"step{steps[-1]}_2"])


def _first_map(path: str, ids: np.ndarray) -> np.ndarray:
    """The first two coordinates of an embedding file, in the order of ``ids``."""
    from ..files.formats import DataError

    emb = _coordinates(path)
    if emb.matrix.shape[1] < 2:
        raise DataError(f"{path}: the embedding has {emb.matrix.shape[1]} coordinate(s); "
                        "explore needs 2")
    pos = {str(i): k for k, i in enumerate(emb.ids)}
    rows = np.array([pos.get(str(i), -1) for i in ids])
    if (rows < 0).any():
        raise DataError(f"{int((rows < 0).sum())} rows of the input are not in {path} "
                        f"(e.g. id {str(ids[rows < 0][0])!r}); pass the --id used with "
                        "ctsne embed")
    return emb.matrix[rows, :2]


def _label_columns(table, args) -> list[str]:
    """The columns that the default rule (no ``--columns``) keeps out of the features."""
    from ..files.formats import DataError

    if args.columns or table.matrix is not None:
        return []
    skip = {*args.exclude, *args.prior}
    candidates = [c for c in table.columns if c not in skip]
    labels = [c for c in candidates if label_like(table.columns[c])]
    if labels and len(labels) == len(candidates):
        raise DataError(
            f"every column looks like a label (text, or whole numbers with at most "
            f"{LABEL_MAX_LEVELS} values): {', '.join(labels[:8])}"
            f"{' …' if len(labels) > 8 else ''}; name the features with --columns")
    if labels:
        print(f"ctsne: note: label columns, not features: {', '.join(labels)} (text, or "
              f"whole numbers with at most {LABEL_MAX_LEVELS} values); name the features "
              "with --columns to use them", file=sys.stderr)
    return labels


def start(args):
    """Read the input, compute or load the first map and start serving; returns the
    :class:`~ctsne.interfaces.explorer.ExploreHandle` (see the module docstring for which
    columns are features)."""
    from ...estimator.tsne import ConditionalTSNE
    from ..cli.defaults import set_options
    from ..files.features import prepare_features
    from ..files.tables import read_table
    from . import require_bokeh, serve
    from .session import Session

    require_bokeh()  # before reading a large file
    table = read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer,
                       sep=getattr(args, "sep", None))
    for name in args.prior:
        table.column(name)  # fail early, listing the columns, if one is missing
    exclude = [*args.exclude, *args.prior, *_label_columns(table, args)]
    feats = prepare_features(table, args.columns, exclude, args.categorical,
                             args.standardize, args.drop_missing, args.prior)
    table = table.take(feats.rows)
    for note in feats.notes:
        print(f"ctsne: note: {note}", file=sys.stderr)
    used = set() if table.matrix is not None else {n.split("=")[0] for n in feats.names}
    # text columns stay labels even when one-hot encoded as features (colour, prior)
    labels = {c: v for c, v in table.columns.items()
              if c not in used or c in args.prior or v.dtype == object}
    session = Session(feats.X, feats.names, table.ids, labels)
    first = _first_map(args.embedding, table.ids) if args.embedding else None
    # only the options the user set: the library's defaults apply to the rest
    beta = set_options(beta=args.beta)
    model = ConditionalTSNE(**set_options(
        beta=args.beta, perplexity=args.perplexity, n_iter=args.n_iter,
        early_exaggeration_iter=args.exaggeration_iter, random_state=args.seed,
        n_jobs=args.threads), verbose=first is None and args.session is None)
    if args.prior and first is None and args.session is None:
        from ...prior import make_prior

        make_prior(session.prior_arrays(args.prior), session.n, **beta)
    return serve(session, model, args.prior, **beta, embedding=first,
                 session=args.session, out_dir=args.out, port=args.port,
                 open_browser=not args.no_browser, backend=args.backend,
                 max_points=args.max_points, method=getattr(args, "algorithm", "tsne"))


def run(args) -> int:
    """Serve the page (:func:`start`) and wait for Ctrl-C."""
    handle = start(args)
    first = "" if handle.explorer.session.steps else \
        " (the first map is computed meanwhile; the page shows its progress)"
    print(f"ctsne explore: serving {handle.explorer.session.n} points{first} at\n\n    "
          f"{handle.url}\n\nexports go to {args.out}/ and download in the browser; Ctrl-C "
          "stops the server", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\nctsne explore: stopped", file=sys.stderr)
    finally:
        handle.stop()
    return 0

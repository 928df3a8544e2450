"""The body of ``ctsne explore`` (the parser is in :mod:`ctsne.interfaces.cli.main`).

Which columns are features and which are labels: the rule every command shares,
:mod:`ctsne.interfaces.files.columns` (numeric columns are features, text columns labels;
``--features`` and ``--labels`` change it), said in one line on stderr. Text columns
named as features stay labels too (colour, prior), and the page lists both (the
``columns`` panel).

The first map is computed on the page, or read from ``--embedding`` (a table of
coordinates), ``--model`` (a model saved by ``ctsne embed --save-model``, of any method:
its map, prior and method become the first step) or ``--session``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["run", "start"]


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


def _model_prior(model) -> list[str]:
    """The prior columns a model saved by ``ctsne embed`` factored out (none if unknown)."""
    from ..files.models import provenance

    return list((provenance(model).get("cli_fingerprint") or {}).get("prior") or [])


def _model_step(model, path: str, ids: np.ndarray, feature_names: list[str]):
    """The first step from a saved model: (Step, algorithm) with its map's first two
    coordinates in the order of ``ids``, its prior's columns and β'."""
    from ..files.formats import DataError
    from ..files.models import method_of, provenance
    from .session import Step

    Y = np.asarray(model.embedding_, dtype=np.float64)
    if Y.shape[1] < 2:
        raise DataError(f"{path}: the model's map has {Y.shape[1]} coordinate(s); explore "
                        "needs 2")
    record = provenance(model)
    own = record.get("ids")
    if own is not None and len(own) == len(Y):
        pos = {str(i): k for k, i in enumerate(np.asarray(own))}
        rows = np.array([pos.get(str(i), -1) for i in ids])
        if (rows < 0).any():
            raise DataError(f"{int((rows < 0).sum())} rows of the input are not in the map "
                            f"of {path} (e.g. id {str(ids[rows < 0][0])!r}); give the INPUT "
                            "and --id the model was fitted on")
    elif len(Y) == len(ids):
        rows = np.arange(len(Y))  # a model saved from Python keeps no ids: rows in order
    else:
        raise DataError(f"{path} holds a map of {len(Y)} points and no row ids; the input "
                        f"has {len(ids)} rows: give the INPUT the model was fitted on")
    names = getattr(model, "feature_names_in_", None)
    if names is not None and list(names) != list(feature_names):
        print(f"ctsne: note: {path} was fitted on other features than the page's "
              f"({len(names)} vs {len(feature_names)}); the next maps use the page's",
              file=sys.stderr)
    prior = _model_prior(model)
    beta = model.beta_ if np.ndim(model.beta_) == 0 else float(np.asarray(model.beta_)[0])
    algorithm = method_of(model)[0]
    return Step(prior, float(beta) if prior else 1.0, Y[rows, :2], method=algorithm), algorithm


def start(args):
    """Read the input, compute or load the first map and start serving; returns the
    :class:`~ctsne.interfaces.explorer.ExploreHandle` (see the module docstring for which
    columns are features)."""
    from ...estimator.tsne import ConditionalTSNE
    from ..cli.defaults import set_options
    from ..cli.shared import check_device
    from ..files.columns import assign_columns
    from ..files.features import prepare_features
    from ..files.formats import DataError
    from ..files.tables import read_table
    from . import require_bokeh, serve
    from .session import Session

    require_bokeh()  # before reading a large file
    engine, device = getattr(args, "engine", None), getattr(args, "device", None)
    check_device(device, engine, "--engine")
    given = [f for f in ("embedding", "model", "session") if getattr(args, f, None)]
    if len(given) > 1:
        raise DataError(f"give one of --embedding, --model and --session, not "
                        f"{' and '.join('--' + f for f in given)}")
    table = read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer,
                       sep=getattr(args, "sep", None))
    saved = None
    if getattr(args, "model", None):
        from ..files.models import load_model

        if args.prior:
            raise DataError("the first map is the --model's, with its own prior; --prior "
                            "applies to a first map computed here (put columns into the "
                            "prior on the page instead)")
        saved = load_model(args.model, advice="save one with ctsne embed ... --save-model")
    # the model's prior columns were labels when it was fitted, and are labels here
    priors = [*args.prior, *([] if saved is None else _model_prior(saved))]
    for name in priors:
        table.column(name)  # fail early, listing the columns, if one is missing
    roles = assign_columns(table, args.columns, getattr(args, "label_columns", []),
                           args.exclude, priors)
    if roles.note:
        print(f"ctsne: note: {roles.note}", file=sys.stderr)
    feats = prepare_features(table, roles.features, args.exclude, args.categorical,
                             args.standardize, args.drop_missing, priors)
    table = table.take(feats.rows)
    for note in feats.notes:
        print(f"ctsne: note: {note}", file=sys.stderr)
    used = set() if table.matrix is not None else {n.split("=")[0] for n in feats.names}
    # text columns stay labels even when one-hot encoded as features (colour, prior)
    labels = {c: v for c, v in table.columns.items()
              if c not in used or c in priors or v.dtype == object}
    session = Session(feats.X, feats.names, table.ids, labels)
    first = _first_map(args.embedding, table.ids) if args.embedding else None
    method = getattr(args, "algorithm", None)
    if saved is not None:
        step, algorithm = _model_step(saved, args.model, table.ids, feats.names)
        session.prior_arrays(step.prior)  # the model's prior columns must be in INPUT
        session.add_step(step)
        method = method or algorithm  # the page proposes the model's method next
    # only the options the user set: the library's defaults apply to the rest
    beta = set_options(beta=args.beta)
    computed = first is None and args.session is None and not session.steps
    model = ConditionalTSNE(**set_options(
        beta=args.beta, perplexity=args.perplexity, n_iter=args.n_iter,
        early_exaggeration_iter=args.exaggeration_iter, backend=engine, device=device,
        random_state=args.seed, n_jobs=args.threads), verbose=computed)
    if args.prior and computed:
        from ...prior import make_prior

        make_prior(session.prior_arrays(args.prior), session.n, **beta)
    return serve(session, model, args.prior, **beta, embedding=first,
                 session=args.session, out_dir=args.out, port=args.port,
                 open_browser=not args.no_browser, backend=args.backend,
                 max_points=args.max_points, method=method or "tsne")


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

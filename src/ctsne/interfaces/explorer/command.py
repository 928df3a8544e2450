"""The body of ``ctsne explore`` (the parser is in :mod:`ctsne.interfaces.cli.main`)."""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["run"]


def _first_map(path: str, ids: np.ndarray) -> np.ndarray:
    """The first two coordinates of an embedding file, in the order of ``ids``."""
    from ..files.formats import DataError
    from ..files.tables import read_embedding

    emb = read_embedding(path)
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


def run(args) -> int:
    """Read the input, compute or load the first map, serve, wait for Ctrl-C."""
    from ...estimator.tsne import ConditionalTSNE
    from ..cli.defaults import set_options
    from ..files.features import prepare_features
    from ..files.tables import read_table
    from . import require_bokeh, serve
    from .session import Session

    require_bokeh()  # before reading a large file
    table = read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer)
    for name in args.prior:
        table.column(name)  # fail early, listing the columns, if one is missing
    exclude = [*args.exclude, *args.prior]
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
    handle = serve(session, model, args.prior, **beta, embedding=first,
                   session=args.session, out_dir=args.out, port=args.port,
                   open_browser=not args.no_browser, backend=args.backend,
                   max_points=args.max_points)
    print(f"ctsne explore: serving {session.n} points at\n\n    {handle.url}\n\n"
          f"exports go to {args.out}/; Ctrl-C stops the server", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\nctsne explore: stopped", file=sys.stderr)
    finally:
        handle.stop()
    return 0

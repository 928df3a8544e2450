"""What each ``ctsne`` subcommand does (the parser and the exit codes are in :mod:`ctsne.cli`).

Each function takes the parsed arguments and returns the exit code; errors the user can
fix are raised as ValueError / OSError and turned into one line by :func:`ctsne.cli.main`.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
import warnings
from pathlib import Path

from .cli import DATA_OUT, FIGURES

__all__ = ["demo", "embed", "rank", "score"]


def _note(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"ctsne: {message}", file=sys.stderr)


# ----------------------------------------------------------------------------- embed
def embed(args) -> int:
    from . import io
    from .features import prepare_features

    outputs = [io.check_output(args.output, args.force, DATA_OUT)]
    if args.plot:
        outputs.append(io.check_output(args.plot, args.force, FIGURES))
        if args.dims < 2:
            raise io.DataError("--plot needs --dims 2 or more")
    if args.save_model:
        outputs.append(io.check_output(args.save_model, args.force))
    paths = [Path(args.input).resolve(), *(p.resolve() for p in outputs)]
    if len(set(paths)) < len(paths):
        raise io.DataError("the input and output files must all be different")

    table = io.read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer)
    if args.meta:
        meta = io.read_table(args.meta)
        if meta.n_rows != table.n_rows:
            raise io.DataError(f"{args.meta} has {meta.n_rows} rows but {args.input} has "
                               f"{table.n_rows}; they must have the same rows, in order")
        table.columns.update(meta.columns)
    color = args.color or (args.prior[0] if args.prior and args.plot else None)
    labels = list(dict.fromkeys([*args.prior, *(c for c in (color, args.marker) if c),
                                 *args.keep]))
    for name in labels:
        table.column(name)  # fail early, listing the columns, if one is missing
    exclude = [*args.exclude, *([] if args.include_prior else args.prior)]
    feats = prepare_features(table, args.columns, exclude, args.categorical,
                             args.standardize, args.drop_missing, args.prior)
    n_read, table = table.n_rows, table.take(feats.rows)
    prior = [table.columns[c] for c in args.prior] or None
    if prior is not None and not args.resume:
        from . import make_prior

        # a bad prior or weight fails now, before the notes and the long work
        make_prior(prior, len(feats.X), beta=None if args.alpha else (args.beta or 0.01),
                   alpha=args.alpha, combine=args.combine)
    for note in feats.notes:
        _note(args, f"note: {note}")
    for name, col in zip(args.prior, prior or [], strict=False):
        n_miss = int(sum(v is None or v != v for v in col))
        if n_miss:
            _note(args, f"note: {n_miss} rows have no {name!r} label; they form a class of "
                  "their own (drop them with --drop-missing)")

    model, interrupted = _fit(args, feats.X, prior)
    Y = model.embedding_
    io.write_embedding(args.output, Y, table.ids, {c: table.columns[c] for c in labels},
                       args.force, table.adata, feats)
    if args.save_model:
        import pickle

        with io.atomic_path(args.save_model, args.force) as tmp, open(tmp, "wb") as fh:
            pickle.dump(model, fh, protocol=pickle.HIGHEST_PROTOCOL)
    if args.plot:
        from . import plotting

        title = f"ct-SNE, prior {' & '.join(args.prior)}" if args.prior else "t-SNE"
        ax = plotting.plot_embedding(
            Y, table.columns[color] if color else None,
            table.columns[args.marker] if args.marker else None,
            title=title, color_name=color, marker_name=args.marker, random_state=0)
        plotting.save_figure(ax.figure, args.plot, args.force)
    if Path(args.output).suffix == ".npy" and (args.id or table.n_rows < n_read):
        _note(args, "note: .npy holds the embedding only; use .npz to keep the row ids")
    weights = (f", α'={_fmt(model.alpha_)}, β'={_fmt(model.beta_)}" if args.prior else "")
    _note(args, f"wrote {args.output}: {Y.shape[0]} points, {model.n_iter_} iterations, "
          f"KL {model.kl_divergence_:.4f}{weights}")
    if interrupted:
        print(f"ctsne: interrupted after {model.n_iter_} iterations: {args.output} holds a "
              "PARTIAL embedding" + (f"; continue with --resume {args.save_model}"
                                     if args.save_model else ""), file=sys.stderr)
        return 130
    return 0


def _check_table_and_plot(args) -> None:
    from . import io

    for path, kinds in ((args.output, ("csv", "tsv", "parquet")), (args.plot, FIGURES)):
        if path:
            io.check_output(path, args.force, kinds)


def _fmt(v) -> str:
    import numpy as np

    return np.array2string(np.asarray(v), precision=4) if np.ndim(v) else f"{v:.4g}"


class _CtrlC:
    """Ctrl-C during the optimisation stops it at the next check instead of raising.

    An exception raised while a numba kernel runs surfaces as a SystemError, so during
    the optimisation the handler only sets a flag, which a callback (every 10 iterations)
    hands to the optimiser as "stop". Before the optimisation (neighbours, affinities) and
    on a second Ctrl-C it raises KeyboardInterrupt: nothing is written.
    """

    every = 10

    def __init__(self):
        self.optimising = False
        self.stop = False

    def callback(self, iteration, kl, Y) -> bool:
        self.optimising = True
        return self.stop

    def handler(self, signum, frame) -> None:
        if not self.optimising or self.stop:
            raise KeyboardInterrupt
        self.stop = True
        print("\nctsne: stopping after the current iterations (Ctrl-C again to abort "
              "without writing)", file=sys.stderr)

    @contextlib.contextmanager
    def watching(self, model):
        old_cb, old_every = model.callbacks, model.callbacks_every_iters
        model.set_params(callbacks=[self.callback], callbacks_every_iters=self.every)
        try:
            old = signal.signal(signal.SIGINT, self.handler)
        except ValueError:  # not the main thread: keep the default behaviour
            old = None
        try:
            with warnings.catch_warnings():
                # the CLI reports an interruption itself, naming the output file
                warnings.filterwarnings("ignore", message="optimisation interrupted")
                yield
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
            # a saved model should not call back into the CLI
            model.set_params(callbacks=old_cb, callbacks_every_iters=old_every)


def _fit(args, X, prior):
    """Fit (or, with --resume, continue) the model; returns (model, interrupted)."""
    from . import ConditionalTSNE, io

    ctrl_c = _CtrlC()
    if args.resume:
        import pickle

        try:
            with open(args.resume, "rb") as fh:
                model = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError) as exc:
            raise io.DataError(f"cannot load the model {args.resume}: {exc}") from None
        if not isinstance(model, ConditionalTSNE) or not hasattr(model, "embedding_"):
            raise io.DataError(f"{args.resume} is not a fitted ConditionalTSNE model")
        if X.shape != (len(model.embedding_), model.n_features_in_):
            raise io.DataError(f"the model was fitted on {len(model.embedding_)} × "
                               f"{model.n_features_in_} features, the input gives {X.shape[0]}"
                               f" × {X.shape[1]}: use the same INPUT and options as then")
        model.set_params(verbose=not args.quiet, n_jobs=args.threads)
        with ctrl_c.watching(model):
            ctrl_c.optimising = True
            model.optimize(n_iter=args.n_iter)
    else:
        model = ConditionalTSNE(
            n_components=args.dims, perplexity=args.perplexity,
            beta=0.01 if args.beta is None else args.beta, alpha=args.alpha,
            combine=args.combine, method=args.method, n_iter=args.n_iter,
            affinities=args.affinities, within_weight=args.within_weight,
            early_exaggeration_iter=args.exaggeration_iter, random_state=args.seed,
            n_jobs=args.threads, verbose=not args.quiet)
        if args.alpha is not None:
            model.set_params(beta=None)
        with ctrl_c.watching(model):
            model.fit_transform(X, prior)
    return model, ctrl_c.stop or model.interrupted_


# ----------------------------------------------------------------------------- rank
def _aligned(table, emb, what: str):
    """``table`` restricted to the embedding's rows, in the embedding's order (by id)."""
    import numpy as np

    from . import io

    pos = {str(i): k for k, i in enumerate(table.ids)}
    rows = np.array([pos.get(str(i), -1) for i in emb.ids])
    if (rows < 0).any():
        raise io.DataError(f"{int((rows < 0).sum())} embedding ids are not in {what} (e.g. "
                           f"{str(emb.ids[rows < 0][0])!r}); pass the --id used with ctsne embed")
    return table.take(rows)


def _cluster_model(spec: str, n: int, seed: int):
    """A scikit-learn clusterer from ``kmeans[:K]``, ``dbscan:EPS[:MIN]``, ``hdbscan[:MIN]``."""
    from . import io

    name, _, rest = spec.partition(":")
    params = rest.split(":") if rest else []
    try:
        if name == "kmeans" and len(params) <= 1:
            from sklearn.cluster import KMeans

            return KMeans(n_clusters=int(params[0]) if params else 8, n_init=4,
                          random_state=seed)
        if name == "dbscan" and 1 <= len(params) <= 2:
            from sklearn.cluster import DBSCAN

            return DBSCAN(eps=float(params[0]), min_samples=int(params[1]) if params[1:] else 10)
        if name == "hdbscan" and len(params) <= 1:
            from sklearn.cluster import HDBSCAN

            return HDBSCAN(min_cluster_size=int(params[0]) if params else max(10, n // 200))
    except ValueError:
        pass
    raise io.DataError(f"--cluster {spec!r}: use kmeans[:K], dbscan:EPS[:MIN_SAMPLES] or "
                       "hdbscan[:MIN_SIZE]")


def _selections(args, Y, ids) -> tuple[dict, object]:
    """The selected point sets (name -> mask) and the cluster labels (or None)."""
    import numpy as np

    from . import io

    if args.select_box:
        x0, y0, x1, y1 = args.select_box
        mask = ((Y[:, 0] >= min(x0, x1)) & (Y[:, 0] <= max(x0, x1))
                & (Y[:, 1] >= min(y0, y1)) & (Y[:, 1] <= max(y0, y1)))
        if not mask.any():
            raise io.DataError(f"no point lies in the box; the embedding spans x "
                               f"[{Y[:, 0].min():.3g}, {Y[:, 0].max():.3g}], y "
                               f"[{Y[:, 1].min():.3g}, {Y[:, 1].max():.3g}]")
        return {"box": mask}, None
    if args.select_ids:
        wanted = io.read_ids(args.select_ids)
        mask = np.isin(np.asarray(ids).astype(str), wanted)
        if not mask.any():
            raise io.DataError(f"none of the ids in {args.select_ids} is in the embedding")
        unknown = len(set(wanted)) - int(mask.sum())
        if unknown:
            _note(args, f"note: {unknown} listed ids are not in the embedding")
        return {"selection": mask}, None
    try:
        clusters = _cluster_model(args.cluster, len(Y), args.seed).fit_predict(Y)
    except ValueError as exc:
        raise io.DataError(f"--cluster {args.cluster}: {exc}") from None
    found = sorted(set(clusters.tolist()) - {-1})
    if args.cluster_id is not None and args.cluster_id not in found:
        raise io.DataError(f"no cluster {args.cluster_id}; the ids are {found}")
    sizes = ", ".join(f"{c}: {int((clusters == c).sum())}" for c in found)
    print(f"{len(found)} clusters (id: size) {sizes}"
          + (f"; {int((clusters == -1).sum())} noise points (-1)" if -1 in clusters else ""))
    wanted = [args.cluster_id] if args.cluster_id is not None else found
    return {f"cluster {c}": clusters == c for c in wanted}, clusters


def rank(args) -> int:
    import numpy as np

    from . import io
    from .features import prepare_features
    from .ranking import rank_features

    _check_table_and_plot(args)
    if args.cluster:
        _cluster_model(args.cluster, 0, args.seed)  # a bad spec fails before any reading
    emb = io.read_embedding(args.embedding, args.coords)
    table = _aligned(io.read_table(args.input, args.id, args.obsm, args.layer), emb,
                     args.input)
    # the embedding's label columns (priors, colours) were not features there
    exclude = [*args.exclude, *(c for c in emb.columns if c in table.columns)]
    feats = prepare_features(table, args.columns, exclude, args.categorical,
                             drop_missing=args.drop_missing)
    Y, ids = emb.matrix[feats.rows], emb.ids[feats.rows]
    selections, clusters = _selections(args, Y, ids)
    for note in feats.notes:
        _note(args, f"note: {note}")

    out: dict[str, list] = {k: [] for k in ("selection", "rank", "feature", "weight",
                                            "mean_difference", "auc", "n_selected")}
    for name, mask in selections.items():
        if mask.all():
            raise io.DataError(f"the {name} holds every point; select fewer")
        r = rank_features(feats.X, mask, feature_names=feats.names, random_state=args.seed)
        print(f"\n{name}:\n" + "\n".join(str(r).splitlines()[:args.top + 2]))
        for k, (f, wt, md) in enumerate(zip(r.feature_names, r.weights, r.mean_difference,
                                            strict=True)):
            for key, v in zip(out, (name, k + 1, f, wt, md, r.auc, r.n_selected), strict=True):
                out[key].append(v)
    if args.output:
        io.write_columns(args.output, {k: np.asarray(v) for k, v in out.items()}, args.force)
    if args.plot:
        from . import plotting

        panels = {Path(args.embedding).name: Y}
        if args.compare:
            other = io.read_embedding(args.compare, args.coords)
            pos = {str(i): k for k, i in enumerate(other.ids)}
            rows = [pos.get(str(i)) for i in ids]
            if None in rows:
                raise io.DataError(f"{args.compare} does not hold the same ids as "
                                   f"{args.embedding}")
            panels[Path(args.compare).name] = other.matrix[rows]
        if clusters is not None and args.cluster_id is None:
            fig = plotting.plot_embeddings(panels, np.where(clusters < 0, np.nan, clusters),
                                           color_name="cluster")
        else:
            fig = plotting.plot_embeddings(panels, highlight=selections)
        plotting.save_figure(fig, args.plot, args.force)
    return 0


# ----------------------------------------------------------------------------- score
def _parse_k(spec: str) -> list[int]:
    from . import io

    try:
        if ":" in spec:
            start, stop, *step = (int(v) for v in spec.split(":"))
            ks = list(range(start, stop + 1, step[0] if step else 10))
        else:
            ks = [int(v) for v in spec.split(",")]
    except ValueError:
        ks = []
    if not ks or min(ks) < 1:
        raise io.DataError(f"--k {spec!r}: give START:STOP:STEP, a list like 10,30,50, or "
                           "one number, all ≥ 1")
    return ks


def _label_array(col):
    import numpy as np

    if col.dtype == object:  # a missing label is a label of its own here
        return np.array(["\0missing" if v is None else v for v in col], dtype=str)
    return col


def score(args) -> int:
    import numpy as np

    from . import io
    from .metrics import laplacian_score

    _check_table_and_plot(args)
    ks = _parse_k(args.k)
    names = args.names or [Path(e).name for e in args.embeddings]
    if len(names) != len(args.embeddings) or len(set(names)) != len(names):
        raise io.DataError("give one distinct --names entry per embedding")
    scores: dict[str, dict[str, np.ndarray]] = {lab: {} for lab in args.labels}
    chance: dict[str, float] = {}
    data = io.read_table(args.data, args.id, args.obsm, args.layer) if args.data else None
    for path, name in zip(args.embeddings, names, strict=True):
        emb = io.read_embedding(path, args.coords)
        if max(ks) >= len(emb.ids):
            raise io.DataError(f"k={max(ks)} is too large for {path} with {len(emb.ids)} "
                               "points; use k below the number of points")
        for lab in args.labels:
            if lab in emb.columns:
                col = emb.columns[lab]
            elif data is not None:
                col = _aligned(data, emb, args.data).column(lab)
            else:
                emb.column(lab)  # raises, naming the columns there are
            labels = _label_array(col)
            scores[lab][name] = np.atleast_1d(laplacian_score(emb.matrix, labels, k=ks))
            _, counts = np.unique(labels, return_counts=True)
            chance[lab] = float(1.0 - np.sum((counts / counts.sum()) ** 2))
    for lab, per in scores.items():
        print(f"Laplacian score of {lab!r} (low: neighbours share it; random labels: "
              f"{chance[lab]:.3f})")
        width = max(8, *(len(n) for n in per))
        print(f"{'k':>5}  " + "  ".join(f"{n:>{width}}" for n in per))
        for j, k in enumerate(ks):
            print(f"{k:>5}  " + "  ".join(f"{v[j]:>{width}.4f}" for v in per.values()))
    if args.output:
        rows = [(lab, n, k, v[j]) for lab, per in scores.items() for n, v in per.items()
                for j, k in enumerate(ks)]
        cols = dict(zip(("label", "embedding", "k", "score"), map(np.asarray, zip(*rows,
                                                                                  strict=True)),
                        strict=True))
        io.write_columns(args.output, cols, args.force)
    if args.plot:
        from . import plotting

        plotting.save_figure(plotting.plot_scores(ks, scores, chance), args.plot, args.force)
    return 0


# ----------------------------------------------------------------------------- demo
def demo(args) -> int:
    import numpy as np

    from . import ConditionalTSNE, io, plotting
    from .datasets import make_synthetic
    from .metrics import knn_label_homogeneity, laplacian_score

    out = Path(args.output_dir)
    if out.exists() and not out.is_dir():
        raise io.DataError(f"{out} exists and is not a folder")
    files = {k: out / f for k, f in (("data", "data.csv"), ("tsne", "tsne.csv"),
                                     ("ctsne", "ctsne.csv"), ("figure", "demo.png"),
                                     ("scores", "scores.png"))}
    if out.exists():
        for f in files.values():
            io.check_output(f, args.force)
    out.mkdir(parents=True, exist_ok=True)
    d = make_synthetic(n=args.n, random_state=args.seed)
    ids = np.arange(args.n)
    io.write_columns(files["data"], {"id": ids, **dict(zip(d.feature_names, d.X.T,
                                                              strict=True)),
                                     "f14": d.f14, "f56": d.f56}, args.force)
    embeddings = {}
    for title, prior in (("t-SNE", None), ("ct-SNE, prior f14", d.f14)):
        _note(args, f"{title}: {args.n} points")
        t0 = time.perf_counter()
        model = ConditionalTSNE(beta=args.beta, n_iter=args.n_iter,
                                early_exaggeration_iter=args.exaggeration_iter,
                                random_state=args.seed, n_jobs=args.threads,
                                verbose=not args.quiet)
        embeddings[title] = model.fit_transform(d.X, prior)
        _note(args, f"{title}: {time.perf_counter() - t0:.1f} s, KL "
              f"{model.kl_divergence_:.4f}")
        if model.interrupted_:
            raise KeyboardInterrupt
    (Y0, Y1) = embeddings.values()
    for key, Y in (("tsne", Y0), ("ctsne", Y1)):
        io.write_embedding(files[key], Y, ids, {"f14": d.f14, "f56": d.f56}, args.force)
    fig = plotting.plot_embeddings(embeddings, color=d.f14, marker=d.f56,
                                   color_name="f14 (dims 1-4)", marker_name="f56 (dims 5-6)")
    plotting.save_figure(fig, files["figure"], args.force)
    ks = list(range(10, min(100, args.n - 1) + 1, 10))
    curves = {lab: {t: laplacian_score(Y, getattr(d, lab), k=ks) for t, Y in embeddings.items()}
              for lab in ("f14", "f56")}
    chance = {lab: 1.0 - float(np.sum((np.bincount(getattr(d, lab)) / args.n) ** 2))
              for lab in ("f14", "f56")}
    plotting.save_figure(plotting.plot_scores(ks, curves, chance), files["scores"], args.force)

    homog = {lab: [knn_label_homogeneity(Y, getattr(d, lab), k=10) for Y in (Y0, Y1)]
             for lab in ("f14", "f56")}
    k30 = ks.index(30) if 30 in ks else 0
    print(f"\n{'':34}{'t-SNE':>10}{'ct-SNE (prior f14)':>21}{'random labels':>16}")
    for lab in ("f14", "f56"):
        h = homog[lab]
        print(f"{'10-NN homogeneity of ' + lab:<34}{h[0]:>10.3f}{h[1]:>21.3f}"
              f"{1 - chance[lab]:>16.3f}")
    for lab in ("f14", "f56"):
        s = [curves[lab][t][k30] for t in embeddings]
        print(f"{f'Laplacian score of {lab} (k={ks[k30]})':<34}{s[0]:>10.3f}{s[1]:>21.3f}"
              f"{chance[lab]:>16.3f}")
    print(f"\nHigh homogeneity or a low score: the label is visible. With f14 as the prior its "
          f"homogeneity went from {homog['f14'][0]:.2f} to {homog['f14'][1]:.2f}; that of f56 "
          f"(dims 5-6) from {homog['f56'][0]:.2f} to {homog['f56'][1]:.2f}."
          f"\nWrote {', '.join(str(f) for f in files.values())}")
    return 0

"""What each ``ctsne`` subcommand does (the parser and the exit codes are in :mod:`ctsne.interfaces.cli.main`).

Each function takes the parsed arguments and returns the exit code; errors the user can
fix are raised as ValueError / OSError and turned into one line by :func:`ctsne.interfaces.cli.main.main`.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

from .interrupt import CtrlC
from .main import DATA_OUT, FIGURES

__all__ = ["demo", "embed", "rank", "score"]


def _note(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"ctsne: {message}", file=sys.stderr)


# ----------------------------------------------------------------------------- embed
def embed(args) -> int:
    from ..files import io

    if args.reference:
        from .reference import place

        return place(args)
    if args.with_reference:
        raise io.DataError("--with-reference needs --reference MODEL")

    outputs = [io.check_output(args.output, args.force, DATA_OUT)]
    if args.plot:
        outputs.append(io.check_output(args.plot, args.force, FIGURES))
        if args.dims is not None and args.dims < 2:
            raise io.DataError("--plot needs --dims 2 or more")
    if args.save_model:
        outputs.append(io.check_output(args.save_model, args.force))
    if args.compare and not (args.plot and args.prior):
        raise io.DataError("--compare draws t-SNE beside ct-SNE: it needs --plot and --prior")
    if args.compare and args.resume:
        raise io.DataError("--compare needs a fresh fit (the t-SNE follows the same schedule "
                           "from the same start); run it without --resume")
    paths = [Path(args.input).resolve(), *(p.resolve() for p in outputs)]
    if len(set(paths)) < len(paths):
        raise io.DataError("the input and output files must all be different")
    io.forget_finished()  # an abort removes only what this command writes
    ctrl_c = CtrlC()
    with ctrl_c.installed(), warnings.catch_warnings():
        if args.quiet:
            warnings.filterwarnings("ignore", message=".*carries no information")
        return _embed(args, ctrl_c)


def _embed(args, ctrl_c: CtrlC) -> int:
    from ..files import io
    from ..files.features import prepare_features

    table = io.read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer,
                          sep=args.sep)
    if args.meta:
        meta = io.read_table(args.meta, sep=args.sep)
        if meta.n_rows != table.n_rows:
            raise io.DataError(f"{args.meta} has {meta.n_rows} rows but {args.input} has "
                               f"{table.n_rows}; they must have the same rows, in order")
        table.columns.update(meta.columns)
    if args.marker:
        from ...plotting.figures import marker_levels

        # fail now, not after the embedding has been computed and written
        try:
            marker_levels(table.column(args.marker), f"--marker column {args.marker!r}")
        except io.DataError:
            raise
        except ValueError as exc:
            raise io.DataError(f"{exc} (--color {args.marker})") from None
    color = args.color or (args.prior[0] if args.prior and args.plot else None)
    labels = list(dict.fromkeys([*args.prior, *(c for c in (color, args.marker) if c),
                                 *args.keep]))
    for name in labels:
        table.column(name)  # fail early, listing the columns, if one is missing
    exclude = [*args.exclude, *([] if args.include_prior else args.prior)]
    feats = prepare_features(table, args.columns, exclude, args.categorical,
                             args.standardize, args.drop_missing, args.prior)
    if len(feats.X) < 3:
        raise io.DataError(f"{args.input} has {len(feats.X)} usable rows: t-SNE needs at "
                           "least 3 points (and more than the perplexity)")
    n_read, table = table.n_rows, table.take(feats.rows)
    prior = [table.columns[c] for c in args.prior] or None
    if prior is not None:
        from ...prior import make_prior

        # a bad prior or weight fails now, before the notes and the long work; the fit
        # warns about an uninformative prior, once
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make_prior(prior, len(feats.X), beta=None if args.alpha is not None else
                       (0.01 if args.beta is None else args.beta), alpha=args.alpha,
                       combine=args.combine or "joint")
    for note in feats.notes:
        _note(args, f"note: {note}")
    for name, col in zip(args.prior, prior or [], strict=False):
        n_miss = int(sum(v is None or v != v for v in col))
        if n_miss:
            _note(args, f"note: {n_miss} rows have no {name!r} label; they form a class of "
                  "their own (drop them with --drop-missing)")

    model, interrupted = _fit(args, feats.X, prior, ctrl_c)
    Y = model.embedding_
    plain = None
    if args.compare and interrupted:
        _note(args, "note: no t-SNE panel for --compare: the ct-SNE run was interrupted")
    elif args.compare:
        # before anything is written: Ctrl-C here aborts the whole command cleanly
        _note(args, "t-SNE for --compare: the same affinities and start, no prior")
        plain = model.tsne_counterpart()
    io.write_embedding(args.output, Y, table.ids, {c: table.columns[c] for c in labels},
                       args.force, table.adata, feats)
    if args.save_model:
        import pickle

        import numpy as np

        from .resume import ATTR, fingerprint

        setattr(model, ATTR, fingerprint(feats.X, args))
        # what ctsne embed --reference needs to line up a new table's columns
        model.feature_names_in_ = np.asarray(feats.names, dtype=object)
        model.standardized_ = bool(args.standardize)
        with io.atomic_path(args.save_model, args.force) as tmp, open(tmp, "wb") as fh:
            pickle.dump(model, fh, protocol=pickle.HIGHEST_PROTOCOL)
    if args.plot:
        from ...plotting import figures as plotting

        colors = table.columns[color] if color else None
        markers = table.columns[args.marker] if args.marker else None
        if plain is not None:
            mode = getattr(model, "affinities_", "standard")
            # the t-SNE panel shares the ct-SNE's P: say so when it is not t-SNE's own
            fig = plotting.plot_comparison(
                plain.embedding_, Y, {c: table.columns[c] for c in args.prior}, colors,
                markers, color_name=color, marker_name=args.marker,
                tsne_title="t-SNE" if mode == "standard" else f"t-SNE on the {mode} P")
        else:
            title = f"ct-SNE, prior {' & '.join(args.prior)}" if args.prior else "t-SNE"
            fig = plotting.plot_embedding(Y, colors, markers, title=title, color_name=color,
                                          marker_name=args.marker, random_state=0).figure
        plotting.save_figure(fig, args.plot, args.force)
    io.forget_finished()  # all written: an abort from here on keeps the files
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
    from ..files import io

    for path, kinds in ((args.output, ("csv", "tsv", "parquet")), (args.plot, FIGURES)):
        if path:
            io.check_output(path, args.force, kinds)


def _fmt(v) -> str:
    import numpy as np

    return np.array2string(np.asarray(v), precision=4) if np.ndim(v) else f"{v:.4g}"


def _fit(args, X, prior, ctrl_c: CtrlC):
    """Fit (or, with --resume, continue) the model; returns (model, interrupted)."""
    from ...estimator.tsne import ConditionalTSNE

    if args.resume:
        from .resume import load_for_resume

        model = load_for_resume(args, X, prior, lambda m: _note(args, m))
        with ctrl_c.watching(model):
            model.optimize(n_iter=args.n_iter)
    else:
        model = ConditionalTSNE(
            n_components=2 if args.dims is None else args.dims,
            perplexity=30.0 if args.perplexity is None else args.perplexity,
            beta=args.beta, alpha=args.alpha, combine=args.combine or "joint",
            method=args.method or "auto", n_iter=args.n_iter,
            affinities=args.affinities, within_weight=args.within_weight,
            early_exaggeration_iter=(250 if args.exaggeration_iter is None
                                     else args.exaggeration_iter),
            random_state=args.seed, n_jobs=args.threads, verbose=not args.quiet)
        with ctrl_c.watching(model):
            model.fit_transform(X, prior)
    return model, ctrl_c.stop or model.interrupted_


# ----------------------------------------------------------------------------- rank
def _aligned(table, emb, what: str):
    """``table`` restricted to the embedding's rows, in the embedding's order (by id)."""
    import numpy as np

    from ..files import io

    pos = {str(i): k for k, i in enumerate(table.ids)}
    rows = np.array([pos.get(str(i), -1) for i in emb.ids])
    if (rows < 0).any():
        raise io.DataError(f"{int((rows < 0).sum())} embedding ids are not in {what} (e.g. "
                           f"{str(emb.ids[rows < 0][0])!r}); pass the --id used with ctsne embed")
    return table.take(rows)


def _cluster_model(spec: str, n: int, seed: int):
    """A scikit-learn clusterer from ``kmeans[:K]``, ``dbscan:EPS[:MIN]``, ``hdbscan[:MIN]``."""
    from ..files import io

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

    from ..files import io

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

    from ...ranking import rank_features
    from ..files import io
    from ..files.features import prepare_features

    _check_table_and_plot(args)
    if args.cluster:
        _cluster_model(args.cluster, 0, args.seed)  # a bad spec fails before any reading
    emb = io.read_embedding(args.embedding, args.coords)
    table = _aligned(io.read_table(args.input, args.id, args.obsm, args.layer, args.sep), emb,
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
        from ...plotting import figures as plotting

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


# ----------------------------------------------------------------------------- demo
def demo(args) -> int:
    import numpy as np

    from ...datasets import make_synthetic
    from ...estimator.tsne import ConditionalTSNE
    from ...metrics import knn_label_homogeneity, laplacian_score
    from ...plotting import figures as plotting
    from ..files import io

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


# the score command lives in its own module; the CLI finds every command here
from .score import score  # noqa: E402

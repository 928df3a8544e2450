"""``ctsne embed``: embed a table, factoring out the prior columns.

The subcommand body (the parser and the exit codes are in :mod:`ctsne.interfaces.cli.main`).
``--reference`` hands over to :mod:`.reference`, ``--resume`` loads through :mod:`.resume`.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from ...estimator import registry
from ..files.formats import EMBEDDING_FORMATS, FIGURE_FORMATS, DataError
from . import defaults
from .interrupt import CtrlC
from .shared import FLAGS, check_device, fmt, label_columns, note, report_features, written_labels

__all__ = ["embed"]


def embed(args: argparse.Namespace) -> int:
    """The body of ``ctsne embed``; returns the exit code (130 when interrupted)."""
    from ..files.writing import check_output, track_outputs

    if args.reference:
        from .reference import place

        return place(args)
    if args.with_reference:
        raise DataError("--with-reference needs --reference MODEL")
    resumed = None
    if args.resume:  # a resumed model keeps its options (checked against it)
        from ..files.models import load_model, method_of, resumable

        resumed = load_model(args.resume, advice="give a file written by ctsne embed ... "
                             "--save-model")
        resumable(resumed, args.resume)  # a UMAP or LargeVis map: why it cannot go on
        if args.algorithm != method_of(resumed)[0]:
            raise DataError(f"{args.resume} holds a {method_of(resumed)[1]} map; --resume "
                            f"continues it as such: drop --algorithm {args.algorithm}")
    _check_algorithm_options(args)
    if not args.resume:
        _check_options(args)

    outputs = [check_output(args.output, args.force, EMBEDDING_FORMATS)]
    if args.plot:
        outputs.append(check_output(args.plot, args.force, FIGURE_FORMATS))
        if args.dims is not None and args.dims < 2:
            raise DataError("--plot needs --dims 2 or more")
    if args.save_model:
        outputs.append(check_output(args.save_model, args.force))
    if args.compare and not (args.plot and args.prior):
        raise DataError("--compare draws t-SNE beside ct-SNE: it needs --plot and --prior")
    if args.compare and args.resume:
        raise DataError("--compare needs a fresh fit (the t-SNE follows the same schedule "
                        "from the same start); run it without --resume")
    paths = [Path(args.input).resolve(), *(p.resolve() for p in outputs)]
    if len(set(paths)) < len(paths):
        raise DataError("the input and output files must all be different")
    ctrl_c = CtrlC()
    # an abort undoes only what this command writes, and restores what it replaced
    # --quiet hides progress and notes; warnings are shown all the same
    with ctrl_c.installed(), track_outputs():
        return _embed(args, ctrl_c, resumed)


# Options that only one family of maps has: t-SNE's optimiser, UMAP's graph and curve.
_TSNE_ONLY = {"method": "--method", "n_iter": "--n-iter",
              "exaggeration_iter": "--exaggeration-iter", "exaggeration": "--exaggeration"}
_ONLY_FOR = {"n_neighbors": ("--n-neighbors", ("umap",)), "min_dist": ("--min-dist", ("umap",)),
             "n_epochs": ("--n-epochs", ("umap", "largevis")),
             "perplexity": ("--perplexity", ("tsne", "largevis"))}


def _check_algorithm_options(args: argparse.Namespace) -> None:
    """Refuse, before any work, an option the chosen --algorithm does not have."""
    algorithm = args.algorithm
    check_device(args.device, args.backend, "--backend")
    for attr, (flag, algorithms) in _ONLY_FOR.items():
        if getattr(args, attr) is not None and algorithm not in algorithms:
            raise DataError(f"{flag} is an option of --algorithm {' or '.join(algorithms)}, "
                            f"not of {algorithm}")
    if algorithm == "tsne":
        return
    for attr, flag in _TSNE_ONLY.items():
        if getattr(args, attr) is not None:
            raise DataError(f"{flag} is an option of t-SNE, not of --algorithm {algorithm}"
                            + ("; use --n-epochs" if attr == "n_iter" else ""))
    if args.compare:
        raise DataError(f"--compare draws t-SNE beside ct-SNE; with --algorithm {algorithm} "
                        "run it twice, with and without --prior")


def _tsne_options(args: argparse.Namespace) -> dict:
    """ConditionalTSNE's parameters that the user set (the library's defaults apply to
    the rest)."""
    return defaults.set_options(
        n_components=args.dims, perplexity=args.perplexity, beta=args.beta,
        alpha=args.alpha, combine=args.combine, method=args.method, n_iter=args.n_iter,
        affinities=args.affinities, within_weight=args.within_weight,
        conditioning=args.conditioning, early_exaggeration_iter=args.exaggeration_iter,
        exaggeration=args.exaggeration,
        backend=args.backend, device=args.device, random_state=args.seed, n_jobs=args.threads)


def _graph_options(args: argparse.Namespace) -> dict:
    """ConditionalUMAP's or ConditionalLargeVis's parameters that the user set."""
    common = dict(n_components=args.dims, beta=args.beta, alpha=args.alpha,
                  combine=args.combine, affinities=args.affinities,
                  within_weight=args.within_weight, conditioning=args.conditioning,
                  n_epochs=args.n_epochs,
                  backend=args.backend, device=args.device, random_state=args.seed,
                  n_jobs=args.threads)
    if args.algorithm == "umap":
        return defaults.set_options(**common, n_neighbors=args.n_neighbors,
                                    min_dist=args.min_dist)
    return defaults.set_options(**common, perplexity=args.perplexity)


def _check_options(args: argparse.Namespace, n: int | None = None) -> None:
    """Refuse option values the fit would refuse, before the work: without ``n``, every
    check that needs no data (run right after parsing: the parameter tables load no
    numba, scipy or scikit-learn); with ``n``, the number of rows read, those against
    the size (the perplexity or the neighbours), before the neighbour search."""
    if args.algorithm == "tsne":
        from ...estimator.parameters import PARAMETERS
        from ...estimator.validation import check_options, check_perplexity

        params = {name: row.default for name, row in PARAMETERS.items()}
        params.update(_tsne_options(args))
        if n is None:
            check_options(params, FLAGS)
        else:
            check_perplexity(params["perplexity"], n)
        return
    from ...estimator.umap_parameters import (
        LARGEVIS_PARAMETERS,
        UMAP_PARAMETERS,
        check_embedding_options,
        check_embedding_params,
    )

    table = UMAP_PARAMETERS if args.algorithm == "umap" else LARGEVIS_PARAMETERS
    params = {name: row.default for name, row in table.items()}
    params.update(_graph_options(args))
    if n is None:
        check_embedding_options(table, params, FLAGS)
    else:
        check_embedding_params(table, params, n)


def _graph_model(args: argparse.Namespace):
    """ConditionalUMAP or ConditionalLargeVis with the options the user set."""
    estimator = registry.method(args.algorithm).estimator
    return estimator(**_graph_options(args), verbose=not args.quiet)


def _embed(args: argparse.Namespace, ctrl_c: CtrlC, resumed=None) -> int:
    from ..files.columns import assign_columns
    from ..files.features import prepare_features
    from ..files.formats import EMBEDDING_KEYS
    from ..files.tables import read_table
    from ..files.writing import interruption_point, write_embedding

    table = read_table(args.input, id_column=args.id, obsm=args.obsm, layer=args.layer,
                       sep=args.sep)
    if table.source is not None:
        note(args, f"note: embedding {table.source} of {args.input} (scanpy's rule, as "
             "ctsne.tl; --obsm KEY or --layer NAME chooses)")
    if args.meta:
        meta = read_table(args.meta, sep=args.sep)
        if meta.n_rows != table.n_rows:
            raise DataError(f"{args.meta} has {meta.n_rows} rows but {args.input} has "
                            f"{table.n_rows}; they must have the same rows, in order")
        table.columns.update(meta.columns)
    if resumed is not None:
        from ..files.models import provenance

        saved = provenance(resumed).get("cli_fingerprint", {}).get("prior") or []
        if saved and not args.prior:
            # the saved prior columns are not features: without them INPUT would not
            # give the model's features
            args.prior = list(saved)
            note(args, f"note: resuming with the model's prior {', '.join(saved)} (give "
                 "--prior to replace it)")
    # fail now, not after the embedding has been computed and written
    color, labels = label_columns(args, table)
    # rows for a saved model take the columns it was fitted on
    roles = assign_columns(table, args.columns, args.label_columns, args.exclude,
                           args.prior, args.include_prior,
                           fitted=getattr(resumed, "feature_names_in_", None),
                           fitted_name=args.resume or "the model")
    feats = prepare_features(table, roles.features, args.exclude, args.categorical,
                             args.standardize, args.drop_missing, args.prior)
    if len(feats.X) < 3:
        needs = {"tsne": " (and more than the perplexity)", "largevis": " (and more than "
                 "the perplexity)", "umap": " (and more than --n-neighbors)"}[args.algorithm]
        title = registry.method(args.algorithm).title
        raise DataError(f"{args.input} has {len(feats.X)} usable rows: "
                        f"{title} needs at least 3 points{needs}")
    if not args.resume:
        _check_options(args, len(feats.X))  # e.g. the perplexity, before the search
    n_read, table = table.n_rows, table.take(feats.rows)
    prior = [table.columns[c] for c in args.prior] or None
    if prior is not None:
        from ...prior import make_prior

        # a bad prior or weight fails now, before the notes and the long work; the fit
        # warns about an uninformative prior, once
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make_prior(prior, len(feats.X), **defaults.set_options(
                beta=args.beta, alpha=args.alpha, combine=args.combine))
    # the column rule's line with the feature notes: after the checks, so that an error
    # stays the one line on stderr
    report_features(args, [roles.note, *feats.notes], feats.warnings)
    for name, col in zip(args.prior, prior or [], strict=False):
        n_miss = int(sum(v is None or v != v for v in col))
        if n_miss:
            note(args, f"note: {n_miss} rows have no {name!r} label; they form a class of "
                 "their own (drop them with --drop-missing)")

    t0 = time.perf_counter()
    model, interrupted = _fit(args, feats.X, prior, ctrl_c, resumed)
    seconds = time.perf_counter() - t0
    Y = model.embedding_
    plain = None
    if args.compare and interrupted:
        note(args, "note: no t-SNE panel for --compare: the ct-SNE run was interrupted")
    elif args.compare:
        # before anything is written: Ctrl-C here aborts the whole command cleanly
        note(args, "t-SNE for --compare: the same start, t-SNE's affinities, no prior")
        plain = model.tsne_counterpart()
    key = EMBEDDING_KEYS[args.algorithm]
    labels = written_labels(labels, roles)
    write_embedding(args.output, Y, table.ids, {c: table.columns[c] for c in labels},
                    args.force, table.adata, feats, key=key,
                    record=_record(args, model, seconds, feats, table.source))
    if args.save_model:
        from ..files.models import annotate, save_model
        from .resume import fingerprint

        annotate(model, fingerprint(feats.X, args), feats.names, args.standardize,
                 ids=table.ids, labels={c: table.columns[c] for c in labels})
        save_model(model, args.save_model, args.force)
    if args.plot:
        _plot(args, model, Y, plain, table, color)
    ctrl_c.commit()  # all written: an abort from here on keeps the files
    interruption_point("committed")  # test-only (does nothing unless a test asks)
    if ctrl_c.stop and not interrupted:
        print("ctsne: the optimisation had run all its iterations before it could stop: "
              f"{args.output} holds the complete embedding", file=sys.stderr)
    if Path(args.output).suffix == ".npy" and (args.id or table.n_rows < n_read):
        note(args, "note: .npy holds the embedding only; use .npz to keep the row ids")
    weights = (f", α'={fmt(model.alpha_)}, β'={fmt(model.beta_)}, conditioning "
               f"{_conditioning(model)}" if args.prior else "")
    if args.algorithm == "tsne":
        done = f"{model.n_iter_} iterations, KL {model.kl_divergence_:.4f}"
    else:
        done = f"{args.algorithm}, {model.n_epochs_} epochs, graph {model.affinities_}"
    note(args, f"wrote {args.output}: {Y.shape[0]} points, {done}{weights}")
    if interrupted:
        print(f"ctsne: interrupted after {model.n_iter_} iterations: {args.output} holds a "
              "PARTIAL embedding" + (f"; continue with --resume {args.save_model}"
                                     if args.save_model else ""), file=sys.stderr)
        return 130
    return 0


def _conditioning(model) -> str:
    """How the prior was removed, for the closing line: by classes, or within N states."""
    found = getattr(model, "shared_states_", None)
    return (f"{getattr(model, 'conditioning_', 'classes')}" if found is None
            else f"states ({len(found.table)} found)")


def _plot(args, model, Y, plain, table, color) -> None:
    """Draw ``--plot``: the embedding, or with ``--compare`` the t-SNE (``plain``) beside it."""
    # through the module, so that a test can watch the calls
    from ...plotting import figures as plotting

    colors = table.columns[color] if color else None
    markers = table.columns[args.marker] if args.marker else None
    if plain is not None:
        mode = getattr(plain, "affinities_", "standard")
        # the t-SNE panel is on t-SNE's own P unless the ct-SNE's P was given (precomputed)
        fig = plotting.plot_comparison(
            plain.embedding_, Y, {c: table.columns[c] for c in args.prior}, colors,
            markers, color_name=color, marker_name=args.marker,
            tsne_title="t-SNE" if mode == "standard" else f"t-SNE on the {mode} P")
    else:
        found = registry.method(args.algorithm)
        title = (f"{found.conditional_title}, prior {' & '.join(args.prior)}" if args.prior
                 else found.title)
        fig = plotting.plot_embedding(Y, colors, markers, title=title, color_name=color,
                                      marker_name=args.marker, random_state=0).figure
    plotting.save_figure(fig, args.plot, args.force)


def _record(args: argparse.Namespace, model, seconds: float, feats,
            source: str | None) -> dict | None:
    """What an .h5ad output keeps in ``uns`` beside the map (:func:`ctsne.tl.fit_record`,
    as the scanpy functions write it): only for .h5ad, where it is stored. ``source``:
    the matrix of an .h5ad input that was embedded (``Table.source``)."""
    if Path(args.output).suffix.lower() != ".h5ad":
        return None
    from ...tl import fit_record

    if source is None:
        source = f"the feature columns of {Path(args.input).name}"
    return fit_record(model, seconds, prior=list(args.prior) or None, input=str(args.input),
                      representation=source, n_features=len(feats.names),
                      standardized=bool(args.standardize), resumed_from=args.resume,
                      command="ctsne embed")


def _fit(args: argparse.Namespace, X, prior, ctrl_c: CtrlC, resumed=None):
    """Fit (or, with --resume, continue ``resumed``, the model loaded from it); returns
    (model, interrupted)."""
    from ...estimator.tsne import ConditionalTSNE

    if args.algorithm != "tsne":
        # no stop-and-keep: a Ctrl-C aborts the SGD like any work before the optimiser
        model = _graph_model(args)
        model.fit_transform(X, prior)
        return model, False
    if args.resume:
        from .resume import load_for_resume

        model = load_for_resume(args, X, prior, lambda m: note(args, m), resumed)
        # without --n-iter, as many further iterations as a new fit would run
        n_iter = defaults.estimator("n_iter") if args.n_iter is None else args.n_iter
        planned = model.n_iter_ + n_iter
        with ctrl_c.watching(model):
            model.optimize(n_iter=n_iter, exaggeration=args.exaggeration)
    else:
        # only the options the user set: the estimator's defaults apply to the rest
        model = ConditionalTSNE(**_tsne_options(args), verbose=not args.quiet)
        with ctrl_c.watching(model):
            model.fit_transform(X, prior)
        planned = model.early_exaggeration_iter + model.n_iter
    # partial: the run ended before its last iteration (a Ctrl-C during the last one,
    # or after it, leaves a complete map)
    return model, model.n_iter_ < planned

"""``ctsne rank``: the features that set a selection of the embedding apart (paper §3.1).

The subcommand body (the parser and the exit codes are in :mod:`ctsne.interfaces.cli.main`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..files.formats import DataError
from .shared import aligned, check_table_and_plot, note, report_features

__all__ = ["rank"]


def _cluster_model(spec: str, n: int, seed: int):
    """A scikit-learn clusterer from ``kmeans[:K]``, ``dbscan:EPS[:MIN]``, ``hdbscan[:MIN]``."""
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
    raise DataError(f"--cluster {spec!r}: use kmeans[:K], dbscan:EPS[:MIN_SAMPLES] or "
                    "hdbscan[:MIN_SIZE]")


def _selections(args, Y, ids) -> tuple[dict, object]:
    """The selected point sets (name -> mask) and the cluster labels (or None)."""
    from ..files.tables import read_ids

    if args.select_box:
        x0, y0, x1, y1 = args.select_box
        mask = ((Y[:, 0] >= min(x0, x1)) & (Y[:, 0] <= max(x0, x1))
                & (Y[:, 1] >= min(y0, y1)) & (Y[:, 1] <= max(y0, y1)))
        if not mask.any():
            raise DataError(f"no point lies in the box; the embedding spans x "
                            f"[{Y[:, 0].min():.3g}, {Y[:, 0].max():.3g}], y "
                            f"[{Y[:, 1].min():.3g}, {Y[:, 1].max():.3g}]")
        return {"box": mask}, None
    if args.select_ids:
        wanted = read_ids(args.select_ids)
        mask = np.isin(np.asarray(ids).astype(str), wanted)
        if not mask.any():
            raise DataError(f"none of the ids in {args.select_ids} is in the embedding")
        unknown = len(set(wanted)) - int(mask.sum())
        if unknown:
            note(args, f"note: {unknown} listed ids are not in the embedding")
        return {"selection": mask}, None
    try:
        clusters = _cluster_model(args.cluster, len(Y), args.seed).fit_predict(Y)
    except ValueError as exc:
        raise DataError(f"--cluster {args.cluster}: {exc}") from None
    found = sorted(set(clusters.tolist()) - {-1})
    if args.cluster_id is not None and args.cluster_id not in found:
        raise DataError(f"no cluster {args.cluster_id}; the ids are {found}")
    sizes = ", ".join(f"{c}: {int((clusters == c).sum())}" for c in found)
    print(f"{len(found)} clusters (id: size) {sizes}"
          + (f"; {int((clusters == -1).sum())} noise points (-1)" if -1 in clusters else ""))
    wanted = [args.cluster_id] if args.cluster_id is not None else found
    return {f"cluster {c}": clusters == c for c in wanted}, clusters


def rank(args: argparse.Namespace) -> int:
    """The body of ``ctsne rank``; returns the exit code."""
    from ...ranking import rank_features
    from ..files.columns import assign_columns
    from ..files.features import prepare_features
    from ..files.tables import read_embedding, read_table
    from ..files.writing import write_columns

    check_table_and_plot(args)
    if args.cluster:
        _cluster_model(args.cluster, 0, args.seed)  # a bad spec fails before any reading
    emb = read_embedding(args.embedding, args.coords)
    table = aligned(read_table(args.input, args.id, args.obsm, args.layer, args.sep), emb,
                    args.input)
    # the embedding's label columns (priors, colours) were not features there
    roles = assign_columns(table, args.columns, args.label_columns, args.exclude,
                           also_labels=[c for c in emb.columns if c in table.columns])
    feats = prepare_features(table, roles.features, args.exclude, args.categorical,
                             drop_missing=args.drop_missing)
    Y, ids = emb.matrix[feats.rows], emb.ids[feats.rows]
    selections, clusters = _selections(args, Y, ids)
    # the column rule's line with the feature notes: after the checks, so that an error
    # stays the one line on stderr
    report_features(args, [roles.note, *feats.notes], feats.warnings)

    out: dict[str, list] = {k: [] for k in ("selection", "rank", "feature", "weight",
                                            "mean_difference", "auc", "n_selected")}
    for name, mask in selections.items():
        if mask.all():
            raise DataError(f"the {name} holds every point; select fewer")
        r = rank_features(feats.X, mask, feature_names=feats.names, random_state=args.seed)
        print(f"\n{name}:\n" + "\n".join(str(r).splitlines()[:args.top + 2]))
        for k, (f, wt, md) in enumerate(zip(r.feature_names, r.weights, r.mean_difference,
                                            strict=True)):
            for key, v in zip(out, (name, k + 1, f, wt, md, r.auc, r.n_selected), strict=True):
                out[key].append(v)
    if args.output:
        write_columns(args.output, {k: np.asarray(v) for k, v in out.items()}, args.force)
    if args.plot:
        _plot(args, Y, ids, selections, clusters)
    return 0


def _plot(args, Y, ids, selections: dict, clusters) -> None:
    """Draw ``--plot``: the embedding (and ``--compare``'s) with the selection or clusters."""
    from ...plotting import figures as plotting
    from ..files.tables import read_embedding

    panels = {Path(args.embedding).name: Y}
    if args.compare:
        other = read_embedding(args.compare, args.coords)
        pos = {str(i): k for k, i in enumerate(other.ids)}
        rows = [pos.get(str(i)) for i in ids]
        if None in rows:
            raise DataError(f"{args.compare} does not hold the same ids as "
                            f"{args.embedding}")
        panels[Path(args.compare).name] = other.matrix[rows]
    if clusters is not None and args.cluster_id is None:
        fig = plotting.plot_embeddings(panels, np.where(clusters < 0, np.nan, clusters),
                                       color_name="cluster")
    else:
        fig = plotting.plot_embeddings(panels, highlight=selections)
    plotting.save_figure(fig, args.plot, args.force)

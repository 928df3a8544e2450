"""``ctsne score``: how much each label still shows in one or more embeddings.

The paper's normalised Laplacian-score curves (``--labels``) and, for a factored-out prior
and a complementary label, kNN homogeneity, iLISI / cLISI and cross-class agreement
(``--prior``, ``--complement``), each beside its random-label level; with ``--scib`` the
scIB-style table of :func:`ctsne.metrics.integration_score` for each prior as the batch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..files.formats import DataError
from .shared import aligned, check_table_and_plot

__all__ = ["score"]


def _parse_k(spec: str) -> list[int]:
    try:
        if ":" in spec:
            start, stop, *step = (int(v) for v in spec.split(":"))
            ks = list(range(start, stop + 1, step[0] if step else 10))
        else:
            ks = [int(v) for v in spec.split(",")]
    except ValueError:
        ks = []
    if not ks or min(ks) < 1:
        raise DataError(f"--k {spec!r}: give START:STOP:STEP, a list like 10,30,50, or "
                        "one number, all ≥ 1")
    return ks


def _shares(labels) -> np.ndarray:
    """Each label's share of the points (a missing label is a label of its own)."""
    from ...metrics import label_codes

    counts = np.bincount(label_codes(labels)[0])
    return counts / counts.sum()


def _integration_rows(name: str, Y, column, args) -> list[tuple]:
    """Rows ``(label, embedding, k, score, metric, random)`` of the --prior/--complement
    measures of one embedding; ``column(lab)`` gives a label array aligned with ``Y``."""
    from ...metrics import cross_class_agreement, knn_label_homogeneity, lisi

    k_lisi = int(min(len(Y) - 1, max(1, np.floor(3 * args.lisi_perplexity))))
    rows = []
    for kind, cols in (("prior", args.prior), ("complement", args.complement)):
        for lab in cols:
            labels = column(lab)
            p = _shares(labels)
            lisi_name = "ilisi" if kind == "prior" else "clisi"
            rows.append((lab, name, args.knn, knn_label_homogeneity(Y, labels, args.knn),
                         "homogeneity", float(np.sum(p ** 2))))
            rows.append((lab, name, k_lisi,
                         float(np.median(lisi(Y, labels, args.lisi_perplexity))), lisi_name,
                         float(1.0 / np.sum(p ** 2))))
    for pri in args.prior:
        for comp in args.complement:
            res = cross_class_agreement(Y, column(pri), column(comp), args.knn)
            rows.append((f"{comp} across {pri}", name, args.knn, res.agreement,
                         "cross_class_agreement", res.chance))
            rows.append((f"{comp} across {pri}", name, args.knn, res.coverage,
                         "cross_class_coverage", _coverage_chance(column(pri), args.knn)))
    return rows


def _coverage_chance(labels, k: int) -> float:
    """The share of points with a neighbour of another class among their ``k`` nearest
    when the neighbours are random points: one minus the chance that all ``k``, drawn
    without replacement from the other points, share the point's class."""
    from ...metrics import label_codes

    sizes = np.bincount(label_codes(labels)[0]).astype(np.float64)
    n = sizes.sum()
    j = np.arange(min(k, int(n) - 1))
    # for a point of class c: prod_j (n_c - 1 - j) / (n - 1 - j), zero once j reaches n_c - 1
    same = np.prod(np.clip(sizes[:, None] - 1 - j, 0, None) / (n - 1 - j), axis=1)
    return float(1.0 - np.sum(sizes / n * same))


_INTEGRATION_NOTES = {
    "homogeneity": "kNN homogeneity (1: neighbours share it)",
    "ilisi": "iLISI, median (1: unmixed)",
    "clisi": "cLISI, median (1: pure)",
    "cross_class_agreement": "cross-class agreement",
    "cross_class_coverage": "points with a cross-class neighbour",
}


_SCIB_COLUMNS = (("batch_mixing", "batch kNN"), ("ilisi", "iLISI"), ("batch_asw", "bASW"),
                 ("preservation", "within-b."), ("label_homogeneity", "label kNN"),
                 ("clisi", "cLISI"), ("label_asw", "lASW"), ("batch", "batch"),
                 ("bio", "bio"), ("overall", "overall"))


def _input_features(data, emb, args) -> np.ndarray:
    """The --data features of the embedding's points, by ``embed``'s rule
    (:mod:`~ctsne.interfaces.files.columns`), without the label columns."""
    from ..files.columns import assign_columns
    from ..files.features import prepare_features

    used = [*args.labels, *args.prior, *args.complement]
    table = aligned(data, emb, args.data)
    roles = assign_columns(table, also_labels=[c for c in used if c in table.columns])
    return prepare_features(table, roles.features, standardize=args.standardize).X


def _scib_rows(name: str, X, Y, column, args) -> list[tuple]:
    """``(batch, label, embedding, IntegrationScore)`` for each --prior as the batch."""
    from ...metrics import integration_score

    label = args.complement[0] if args.complement else None
    return [(pri, label or "-", name,
             integration_score(X, Y, column(pri), None if label is None else column(label),
                               k=args.knn, perplexity=args.lisi_perplexity))
            for pri in args.prior]


def _print_scib(rows: list[tuple], args) -> None:
    print("scIB-style scores (1 best; batch = mean(batch kNN mixing, iLISI), bio = "
          "mean(within-batch 15-NN preservation, label kNN homogeneity, cLISI), overall "
          f"= 0.4·batch + 0.6·bio; k={args.knn}, LISI perplexity {args.lisi_perplexity:g}; "
          "ASW reported, not counted):")
    # each text column as wide as its longest entry plus a gap, so long column names
    # ("marker_label") never run into the next column
    wb, wl, wn = (2 + max(len(head), *(len(str(r[i])) for r in rows))
                  for i, head in enumerate(("batch", "label", "embedding")))
    print(f"  {'batch':<{wb}}{'label':<{wl}}{'embedding':<{wn}}"
          + "".join(f"{head:>11}" for _, head in _SCIB_COLUMNS))
    for batch, label, name, res in rows:
        print(f"  {batch:<{wb}}{label:<{wl}}{name:<{wn}}"
              + "".join(f"{getattr(res, key):>11.3f}" for key, _ in _SCIB_COLUMNS))


def score(args: argparse.Namespace) -> int:
    """``ctsne score``: Laplacian-score curves and integration measures of embeddings."""
    from ...metrics import laplacian_score
    from ..files.tables import read_embedding, read_table
    from ..files.writing import write_columns

    if not (args.labels or args.prior or args.complement):
        raise DataError("nothing to score: give --labels, --prior or --complement")
    if args.plot and not args.labels:
        raise DataError("--plot draws Laplacian score curves; give --labels too")
    if args.knn < 1 or not args.lisi_perplexity > 0:
        raise DataError("--knn must be ≥ 1 and --lisi-perplexity > 0")
    if args.scib and not (args.prior and args.data):
        raise DataError("--scib needs --prior (the batch) and --data (the input the map was "
                        "made from, for the within-batch preservation)")
    check_table_and_plot(args)
    ks = _parse_k(args.k)
    names = args.names or [Path(e).name for e in args.embeddings]
    if len(names) != len(args.embeddings) or len(set(names)) != len(names):
        raise DataError("give one distinct --names entry per embedding")
    scores: dict[str, dict[str, np.ndarray]] = {lab: {} for lab in args.labels}
    chance: dict[str, float] = {}
    integration: list[tuple] = []
    scib: list[tuple] = []
    data = read_table(args.data, args.id, args.obsm, args.layer, args.sep) if args.data else None
    for path, name in zip(args.embeddings, names, strict=True):
        emb = read_embedding(path, args.coords)
        k_max = max(ks) if args.labels else 0
        if args.prior or args.complement:
            k_max = max(k_max, args.knn)
        if k_max >= len(emb.ids):
            raise DataError(f"k={k_max} is too large for {path} with {len(emb.ids)} "
                            "points; use k below the number of points")

        def column(lab, emb=emb):
            # the labels as read (None/NaN missing): the measures encode them themselves
            if lab in emb.columns:
                return emb.columns[lab]
            if data is not None:
                return aligned(data, emb, args.data).column(lab)
            return emb.column(lab)  # raises, naming the columns there are

        for lab in args.labels:
            labels = column(lab)
            scores[lab][name] = np.atleast_1d(laplacian_score(emb.matrix, labels, k=ks))
            chance[lab] = float(1.0 - np.sum(_shares(labels) ** 2))
        if args.prior or args.complement:
            integration += _integration_rows(name, emb.matrix, column, args)
        if args.scib:
            scib += _scib_rows(name, _input_features(data, emb, args), emb.matrix, column,
                               args)
    for lab, per in scores.items():
        print(f"Laplacian score of {lab!r} (low: neighbours share it; random labels: "
              f"{chance[lab]:.3f})")
        width = max(8, *(len(n) for n in per))
        print(f"{'k':>5}  " + "  ".join(f"{n:>{width}}" for n in per))
        for j, k in enumerate(ks):
            print(f"{k:>5}  " + "  ".join(f"{v[j]:>{width}.4f}" for v in per.values()))
    for name in names:
        rows = [r for r in integration if r[1] == name]
        if rows:
            print(f"Integration measures of {name!r} (k={args.knn}, LISI perplexity "
                  f"{args.lisi_perplexity:g}):")
            print(f"  {'measure':<44}{'label':<24}{'value':>8}{'random':>9}")
            for lab, _, _, value, metric, rand in rows:
                # a measure without a random level shows a dash, not "nan"
                level = f"{rand:>9.3f}" if np.isfinite(rand) else f"{'–':>9}"
                print(f"  {_INTEGRATION_NOTES[metric]:<44}{lab:<24}{value:>8.3f}{level}")
    if scib:
        _print_scib(scib, args)
    if args.output:
        rows = [(lab, n, k, v[j]) for lab, per in scores.items() for n, v in per.items()
                for j, k in enumerate(ks)]
        keys = ("label", "embedding", "k", "score")
        # each scIB component is a row of its own: metric "scib_<component>"
        extra = integration + [(batch if label == "-" else f"{label} across {batch}", n,
                                args.knn, float(getattr(res, key)), f"scib_{key}",
                                float("nan"))
                               for batch, label, n, res in scib for key, _ in _SCIB_COLUMNS]
        if extra:
            rows = [(*r, "laplacian", chance[r[0]]) for r in rows] + extra
            keys += ("metric", "random")
        cols = dict(zip(keys, map(np.asarray, zip(*rows, strict=True)), strict=True))
        write_columns(args.output, cols, args.force)
    if args.plot:
        from ...plotting.figures import save_figure
        from ...plotting.scores import plot_scores

        save_figure(plot_scores(ks, scores, chance), args.plot, args.force)
    return 0

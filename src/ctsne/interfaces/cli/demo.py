"""``ctsne demo``: the paper's synthetic example, end to end.

The subcommand body (the parser and the exit codes are in :mod:`ctsne.interfaces.cli.main`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..files.formats import DataError
from . import defaults
from .shared import note

__all__ = ["demo"]


def demo(args: argparse.Namespace) -> int:
    """The body of ``ctsne demo``; returns the exit code."""
    import numpy as np

    from ...datasets import make_synthetic
    from ...estimator.tsne import ConditionalTSNE
    from ...metrics import knn_label_homogeneity, laplacian_score
    from ...plotting import figures, scores
    from ..files.writing import check_output, write_columns, write_embedding

    out = Path(args.output_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"{out} exists and is not a folder")
    files = {k: out / f for k, f in (("data", "data.csv"), ("tsne", "tsne.csv"),
                                     ("ctsne", "ctsne.csv"), ("figure", "demo.png"),
                                     ("scores", "scores.png"))}
    if out.exists():
        for f in files.values():
            check_output(f, args.force)
    out.mkdir(parents=True, exist_ok=True)
    d = make_synthetic(n=args.n, random_state=args.seed)
    ids = np.arange(args.n)
    write_columns(files["data"], {"id": ids, **dict(zip(d.feature_names, d.X.T,
                                                           strict=True)),
                                  "f14": d.f14, "f56": d.f56}, args.force)
    embeddings = {}
    for title, prior in (("t-SNE", None), ("ct-SNE, prior f14", d.f14)):
        note(args, f"{title}: {args.n} points")
        t0 = time.perf_counter()
        # only the options the user set: the estimator's defaults apply to the rest
        model = ConditionalTSNE(**defaults.set_options(
            beta=args.beta, n_iter=args.n_iter, early_exaggeration_iter=args.exaggeration_iter,
            random_state=args.seed, n_jobs=args.threads), verbose=not args.quiet)
        embeddings[title] = model.fit_transform(d.X, prior)
        note(args, f"{title}: {time.perf_counter() - t0:.1f} s, KL "
             f"{model.kl_divergence_:.4f}")
        if model.interrupted_:
            raise KeyboardInterrupt
    (Y0, Y1) = embeddings.values()
    for key, Y in (("tsne", Y0), ("ctsne", Y1)):
        write_embedding(files[key], Y, ids, {"f14": d.f14, "f56": d.f56}, args.force)
    homog = {lab: [knn_label_homogeneity(Y, getattr(d, lab), k=10) for Y in (Y0, Y1)]
             for lab in ("f14", "f56")}
    # each panel's title carries its scores, as the docs' figure does
    titled = {f"{title}\n10-NN homogeneity: f14 {homog['f14'][i]:.2f}, f56 "
              f"{homog['f56'][i]:.2f}": Y for i, (title, Y) in enumerate(embeddings.items())}
    fig = figures.plot_embeddings(titled, color=d.f14, marker=d.f56,
                                  color_name="f14 (dims 1-4)", marker_name="f56 (dims 5-6)")
    figures.save_figure(fig, files["figure"], args.force)
    ks = list(range(10, min(100, args.n - 1) + 1, 10))
    curves = {lab: {t: laplacian_score(Y, getattr(d, lab), k=ks) for t, Y in embeddings.items()}
              for lab in ("f14", "f56")}
    chance = {lab: 1.0 - float(np.sum((np.bincount(getattr(d, lab)) / args.n) ** 2))
              for lab in ("f14", "f56")}
    figures.save_figure(scores.plot_scores(ks, curves, chance), files["scores"], args.force)

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

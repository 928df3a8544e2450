"""One full ct-SNE gradient step (attraction + composed repulsion) at the paper's size.

    python benchmarks/bench_step.py                      # 500,000 points, 5 and 500 classes
    python benchmarks/bench_step.py --n 1000000 --methods bh fft

The paper reports 9.1 s per gradient step for 500,000 × 128 points (its Barnes-Hut code,
quad-core laptop). The step does not depend on the input dimension once P is built, so the
layout imitates a converged t-SNE embedding (blobs over a span growing like √n) and P has
90 partners per point, as perplexity 30 gives:

* ``--graph layout`` (default): each point's 90 nearest neighbours in the layout (the
  3·perplexity that t-SNE keeps), symmetrised, as in a converged embedding, where P's
  partners are close;
* ``--graph random``: 45 random partners per point, the worst case for memory locality.

``--load P.npz Y.npy labels.npy`` times a saved P, layout and labels instead (e.g. from a
real run). Prints seconds per step (median of repeats after a warm-up call), split into
attraction and repulsion, and appends JSON lines to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ctsne.forces.gradient import ConditionalGradient
from ctsne.prior import make_prior

HERE = Path(__file__).resolve().parent


def layout(n: int, rng: np.random.Generator) -> np.ndarray:
    centres = rng.normal(size=(30, 2)) * np.sqrt(n) / 12
    Y = centres[rng.integers(0, 30, n)] + rng.normal(size=(n, 2)) * np.sqrt(n) / 60
    return Y


def _symmetric_P(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int) -> sp.csr_matrix:
    P = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    P = P + P.T
    P.setdiag(0)
    P.eliminate_zeros()
    return (P / P.sum()).tocsr()


def knn_like_P(n: int, k: int, rng: np.random.Generator) -> sp.csr_matrix:
    return _symmetric_P(np.repeat(np.arange(n), k), rng.integers(0, n, n * k),
                        rng.random(n * k), n)


def layout_P(Y: np.ndarray, k: int, rng: np.random.Generator) -> sp.csr_matrix:
    from scipy.spatial import cKDTree

    n = len(Y)
    _, nbr = cKDTree(Y).query(Y, k=k + 1, workers=-1)
    return _symmetric_P(np.repeat(np.arange(n), k), nbr[:, 1:].ravel(),
                        rng.random(n * k) + 0.1, n)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500_000)
    ap.add_argument("--classes", type=int, nargs="*", default=[0, 5, 500],
                    help="0 = no prior (plain t-SNE)")
    ap.add_argument("--methods", nargs="*", default=["auto", "bh", "fft"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--graph", choices=["layout", "random"], default="layout")
    ap.add_argument("--load", nargs=3, metavar=("P_NPZ", "Y_NPY", "LABELS_NPY"),
                    help="time a saved P, layout and class labels (--classes: 0 and/or 1)")
    ap.add_argument("--out", default=str(HERE / "results.jsonl"))
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    if a.load:
        P = sp.load_npz(a.load[0]).tocsr()
        Y = np.load(a.load[1])
        labels = np.load(a.load[2])
        a.n = len(Y)
        graph = "loaded:" + os.path.basename(a.load[1])
    else:
        Y = layout(a.n, rng)
        P = layout_P(Y, 90, rng) if a.graph == "layout" else knn_like_P(a.n, 45, rng)
        graph = a.graph
    meta = {"date": datetime.date.today().isoformat(), "machine": platform.node(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "case": f"step-{a.n}", "graph": graph, "nnz_per_point": P.nnz / a.n}
    for classes in a.classes:
        if a.load:
            prior = None if classes == 0 else make_prior(labels, a.n)
        else:
            prior = None if classes == 0 else make_prior(rng.integers(0, classes, a.n), a.n)
        for method in a.methods:
            grad = ConditionalGradient(P, prior, Y.shape[1], method)
            grad(Y)
            times, parts = [], []
            for _ in range(a.repeats):
                before = dict(grad.timings)
                t = time.perf_counter()
                grad(Y)
                times.append(time.perf_counter() - t)
                parts.append([grad.timings[k] - before[k] for k in ("attraction", "repulsion")])
            att, rep = np.median(parts, axis=0)
            row = {**meta, "classes": classes, "method": method,
                   "s_per_step": float(np.median(times)), "attraction_s": float(att),
                   "repulsion_s": float(rep)}
            print(json.dumps(row), flush=True)
            with open(a.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

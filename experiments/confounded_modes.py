"""What ctsne's existing affinity modes do when a batch holds only some cell types.

The "measure first" step of issue 50 (no over-correction): on confounded designs, where a
batch holds only some of the cell types, compare ConditionalTSNE with affinities
standard / balanced / revised / auto (β' = 0.01) and auto at β' = 0.1 and 0.3,
ConditionalUMAP auto / standard / balanced, Harmony → t-SNE, Harmony → UMAP, plain t-SNE and
UMAP. Every map is scored with :func:`ctsne.metrics.integration_score` (batch part, bio
part, overall = 0.4·batch + 0.6·bio, label 10-NN homogeneity, cross-batch label agreement,
batch 10-NN homogeneity and its chance level). Nothing in the library is changed.

Sets: a synthetic confounded mixture (an A-only batch of type 1, a 50:50 batch, a C-only
batch of type 2, like the cell-line mixture of issue 50); scanpy's bundled pbmc68k_reduced
with simulated donors and with confounded batches; digits with a batch holding only some
digits; the real control/stimulated PBMCs of ../shared/data/pbmc-stim as is and confounded.

    python experiments/confounded_modes.py            # all sets, seed 0 (+ --seed2 for auto)
    python experiments/confounded_modes.py --small    # a quick smoke run
    python experiments/confounded_modes.py --sets synthetic digits-confounded

Each set's result is written to results/confounded_modes_<set>.json as soon as it is done
(and reused on a rerun unless --fresh); the tables go to results/confounded_modes.md.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

# the same peers as integration.py
from integration import _bbknn_umap, _combat, _harmony, _scanorama  # noqa: E402

from ctsne.metrics import integration_score  # noqa: E402

STIM = Path(__file__).resolve().parents[2] / "shared" / "data" / "pbmc-stim"
FIELDS = ("batch", "bio", "overall", "label_homogeneity", "agreement",
          "batch_homogeneity", "batch_chance")


# --------------------------------------------------------------------------- data sets
def synthetic(rng, small):
    """Batch A: type 1 only; batch B: types 1 and 2 (50:50); batch C: type 2 only.

    20-D Gaussians; each type has two sub-clusters (3 apart, sd 1) so that the map's
    structure within a type matters; types 10 apart; each batch a random offset of norm 5
    (every batch's copy of a type is shifted)."""
    d, per = 20, (100 if small else 500)
    type_c = np.zeros((2, d))
    type_c[1, 0] = 10.0
    sub = np.zeros((2, 2, d))
    for t in range(2):
        for s in range(2):
            v = rng.normal(size=d)
            sub[t, s] = type_c[t] + 1.5 * v / np.linalg.norm(v) * (1 if s else -1)
    off = rng.normal(size=(3, d))
    off = 5.0 * off / np.linalg.norm(off, axis=1, keepdims=True)
    rows, batch, label = [], [], []
    design = {"A": [(0, per)], "B": [(0, per // 2), (1, per // 2)], "C": [(1, per)]}
    for b, (name, parts) in enumerate(design.items()):
        for t, m in parts:
            s = rng.integers(0, 2, m)
            rows.append(sub[t, s] + off[b] + rng.normal(size=(m, d)))
            batch += [name] * m
            label += [f"type{t + 1}"] * m
    return {"X": np.vstack(rows), "batch": np.array(batch), "label": np.array(label)}


def _pbmc68k():
    import scanpy as sc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad = sc.datasets.pbmc68k_reduced()
    return np.asarray(ad.obsm["X_pca"], dtype=np.float64), \
        ad.obs["bulk_labels"].astype(str).to_numpy()


def _offsets(rng, X, n_batches, scale):
    """Per-batch offsets in PCA space: random directions, norm ``scale`` × the median
    distance of a point to the data mean."""
    r = np.median(np.linalg.norm(X - X.mean(0), axis=1))
    off = rng.normal(size=(n_batches, X.shape[1]))
    return scale * r * off / np.linalg.norm(off, axis=1, keepdims=True)


def pbmc68k_donors(rng, small):
    """pbmc68k_reduced's 50 PCs, cells split at random into 3 simulated donors, each
    shifted by its own offset (norm 0.6 × the median radius)."""
    X, label = _pbmc68k()
    if small:
        keep = rng.choice(len(X), 300, replace=False)
        X, label = X[keep], label[keep]
    batch = rng.integers(0, 3, len(X))
    X = X + _offsets(rng, X, 3, 0.6)[batch]
    return {"X": X, "batch": np.array([f"donor{b}" for b in batch]), "label": label}


def pbmc68k_confounded(rng, small):
    """pbmc68k_reduced, 2 batches: the largest sorted population is split at random
    between both, the others go by size alternately to batch 1 or batch 2 (each batch
    holds only its own); batch offsets of norm 0.6 × the median radius."""
    X, label = _pbmc68k()
    if small:
        keep = rng.choice(len(X), 300, replace=False)
        X, label = X[keep], label[keep]
    types, counts = np.unique(label, return_counts=True)
    order = types[np.argsort(-counts)]
    shared = order[0]
    only1 = set(order[1::2])  # alternate the rest by size so both batches are similar
    batch = np.empty(len(X), dtype=int)
    for i, t in enumerate(label):
        batch[i] = rng.integers(0, 2) if t == shared else (0 if t in only1 else 1)
    X = X + _offsets(rng, X, 2, 0.6)[batch]
    return {"X": X, "batch": np.array([f"b{b + 1}" for b in batch]), "label": label,
            "note": f"shared: {shared}; batch 1 only: {sorted(only1)}"}


def digits_confounded(rng, small):
    """sklearn digits: batch 1 holds digits 0–4 and half the 5s, batch 2 the other 5s and
    6–9, shifted one pixel to the right (as integration.py's digits-shifted)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X, y = d.data.astype(np.float64), d.target
    if small:
        keep = rng.choice(len(X), 400, replace=False)
        X, y = X[keep], y[keep]
    batch = np.where(y < 5, 0, 1)
    five = np.flatnonzero(y == 5)
    batch[rng.choice(five, len(five) // 2, replace=False)] = 0
    img = X[batch == 1].reshape(-1, 8, 8)
    out = np.zeros_like(img)
    out[:, :, 1:] = img[:, :, :-1]
    X[batch == 1] = out.reshape(-1, 64)
    return {"X": X, "batch": np.array([f"b{b + 1}" for b in batch]), "label": y}


def _stim(rng, small):
    import pandas as pd

    pcs = pd.read_csv(STIM / "pbmc_stim_pcs.tsv.gz", sep="\t", index_col=0)
    meta = pd.read_csv(STIM / "pbmc_stim_meta.tsv.gz", sep="\t", index_col=0).loc[pcs.index]
    X = pcs.to_numpy(np.float64)
    batch, label = meta["stim"].to_numpy(str), meta["marker_label"].to_numpy(str)
    if small:
        keep = rng.choice(len(X), 400, replace=False)
        X, batch, label = X[keep], batch[keep], label[keep]
    return X, batch, label


def pbmc_stim(rng, small):
    """The real control vs interferon-β stimulated PBMCs (2,000 cells, 30 PCs)."""
    X, batch, label = _stim(rng, small)
    return {"X": X, "batch": batch, "label": label}


def pbmc_stim_confounded(rng, small):
    """As pbmc-stim without the control B cells and without the stimulated NK cells."""
    X, batch, label = _stim(rng, small)
    keep = ~(((batch == "ctrl") & (label == "B")) | ((batch == "stim") & (label == "NK")))
    return {"X": X[keep], "batch": batch[keep], "label": label[keep],
            "note": "B only in stim, NK only in ctrl"}


DATASETS = {"synthetic": synthetic, "pbmc-stim-confounded": pbmc_stim_confounded,
            "digits-confounded": digits_confounded, "pbmc68k-confounded": pbmc68k_confounded,
            "pbmc68k-donors": pbmc68k_donors, "pbmc-stim": pbmc_stim}


# --------------------------------------------------------------------------- methods
def _ct(d, seed, small, beta=0.01, **kw):
    from ctsne import ConditionalTSNE

    m = ConditionalTSNE(beta=beta, random_state=seed, n_jobs=1,
                        **C.tsne_params(small, **kw))
    return m.fit_transform(d["X"], d["batch"]), m


def _cu(d, seed, small, **kw):
    from ctsne import ConditionalUMAP

    m = ConditionalUMAP(random_state=seed, n_jobs=1, n_epochs=50 if small else None, **kw)
    return m.fit_transform(d["X"], d["batch"]), m


def _tsne(X, seed, small):
    from ctsne import ConditionalTSNE

    return ConditionalTSNE(random_state=seed, n_jobs=1,
                           **C.tsne_params(small)).fit_transform(X), None


def _umap(X, seed, small):
    import umap

    return umap.UMAP(random_state=seed, n_epochs=50 if small else None).fit_transform(X), None


METHODS = {
    "ctsne auto": lambda d, s, sm: _ct(d, s, sm, affinities="auto"),
    "ctsne standard": lambda d, s, sm: _ct(d, s, sm, affinities="standard"),
    "ctsne balanced": lambda d, s, sm: _ct(d, s, sm, affinities="balanced"),
    "ctsne revised": lambda d, s, sm: _ct(d, s, sm, affinities="revised"),
    "ctsne auto β'=0.1": lambda d, s, sm: _ct(d, s, sm, beta=0.1, affinities="auto"),
    "ctsne auto β'=0.3": lambda d, s, sm: _ct(d, s, sm, beta=0.3, affinities="auto"),
    "Harmony → t-SNE": lambda d, s, sm: _tsne(_harmony(d, s), s, sm),
    "t-SNE": lambda d, s, sm: _tsne(d["X"], s, sm),
    "cUMAP auto": lambda d, s, sm: _cu(d, s, sm, affinities="auto"),
    "cUMAP standard": lambda d, s, sm: _cu(d, s, sm, affinities="standard"),
    "cUMAP balanced": lambda d, s, sm: _cu(d, s, sm, affinities="balanced"),
    "Harmony → UMAP": lambda d, s, sm: _umap(_harmony(d, s), s, sm),
    "UMAP": lambda d, s, sm: _umap(d["X"], s, sm),
    # conditioning on top of a linear correction: the map's repulsion still factors out
    # what Harmony left of the batch (auto keeps the standard graph on every set here)
    "Harmony → ctsne": lambda d, s, sm: _ct({**d, "X": _harmony(d, s)}, s, sm),
    "Harmony → cUMAP": lambda d, s, sm: _cu({**d, "X": _harmony(d, s)}, s, sm),
    # the other workflows of integration.py, on the same PCs (these sets have no counts)
    "Scanorama → t-SNE": lambda d, s, sm: _tsne(_scanorama({**d, "expr": d["X"]}, s), s, sm),
    "ComBat → t-SNE": lambda d, s, sm: _tsne(_combat({**d, "expr": d["X"]}, s), s, sm),
    "BBKNN → UMAP": lambda d, s, sm: (_bbknn_umap(d, s, sm), None),
}
SEED2 = ("ctsne auto", "ctsne auto β'=0.1", "ctsne auto β'=0.3", "cUMAP auto",
         "Harmony → t-SNE", "Harmony → UMAP", "Harmony → ctsne", "Harmony → cUMAP",
         "Scanorama → t-SNE", "ComBat → t-SNE", "BBKNN → UMAP")


# --------------------------------------------------------------------------- counterparts
def counterpart_scores(X, batch, k=10):
    """Per point, the share of its k nearest points of each other batch that list it
    among their k nearest of its batch (mutual nearest neighbours, as MNN and Scanorama
    pair cells), the largest over the other batches, averaged over the point and its k
    own-batch neighbours. Exact search (sklearn), for the sets here only."""
    from sklearn.neighbors import NearestNeighbors

    codes = np.unique(batch, return_inverse=True)[1]
    idx = [np.flatnonzero(codes == c) for c in range(codes.max() + 1)]
    lists = {}
    for c, rows in enumerate(idx):
        for e, cols in enumerate(idx):
            kk = min(k + (c == e), len(cols))
            found = NearestNeighbors(n_neighbors=kk).fit(X[cols]).kneighbors(
                X[rows], return_distance=False)
            lists[c, e] = cols[found[:, 1:] if c == e else found]
    cross = np.zeros(len(X))
    pos = np.empty(len(X), dtype=np.int64)
    for rows in idx:
        pos[rows] = np.arange(len(rows))
    for c, rows in enumerate(idx):
        for e in range(len(idx)):
            if e == c:
                continue
            back = lists[e, c]
            # row r's share: its cross-batch neighbours j whose own list back[pos[j]] holds it
            share = (back[pos[lists[c, e]]] == rows[:, None, None]).any(axis=2).mean(axis=1)
            cross[rows] = np.maximum(cross[rows], share)
    smooth = cross.copy()
    for c, rows in enumerate(idx):
        smooth[rows] = (cross[rows] + cross[lists[c, c]].sum(1)) / (1 + lists[c, c].shape[1])
    return smooth


def counterpart_table(name, seed=0) -> str:
    """The counterpart score per (batch, label) group, with whether that label exists in
    another batch (a true counterpart)."""
    d = DATASETS[name](np.random.default_rng(seed), False)
    score = counterpart_scores(d["X"], d["batch"])
    lines = [f"### {name}", "", "| batch | label | n | label in another batch | mean | 10 % | "
             "90 % |", "|---|---|---|---|---|---|---|"]
    for b in np.unique(d["batch"]):
        for t in np.unique(d["label"]):
            m = (d["batch"] == b) & (d["label"] == t)
            if m.sum() < 5:
                continue
            shared = int(np.sum((d["batch"] != b) & (d["label"] == t)))
            q = np.quantile(score[m], [0.1, 0.9])
            lines.append(f"| {b} | {t} | {m.sum()} | {'yes' if shared else 'no'} | "
                         f"{score[m].mean():.3f} | {q[0]:.3f} | {q[1]:.3f} |")
    return "\n".join(lines) + "\n"


def _choice(model) -> str | None:
    if model is None:
        return None
    share = getattr(getattr(model, "prior_mixing_", None), "cross_share", None)
    built = getattr(model, "affinities_", None)
    return f"{built}" + ("" if share is None else f"; {share.summary()}")


def run_set(name, seed, small, only=None):
    data = DATASETS[name](np.random.default_rng(seed), small)
    out = {"n": len(data["X"]), "dims": int(data["X"].shape[1]),
           "how": (DATASETS[name].__doc__ or "").split("\n\n")[0].strip(),
           "note": data.get("note"),
           "composition": {str(b): {str(t): int(np.sum((data["batch"] == b)
                                                        & (data["label"] == t)))
                                    for t in np.unique(data["label"])}
                           for b in np.unique(data["batch"])},
           "scores": {}, "chose": {}}
    for method, fit in METHODS.items():
        if only is not None and method not in only:
            continue
        print(f"  {name}: {method}", flush=True)
        Y, model = fit(data, seed, small)
        sc = integration_score(data["X"], Y, data["batch"], data["label"],
                               perplexity=10.0 if small else 30.0, silhouettes=False)
        out["scores"][method] = {f: float(getattr(sc, f)) for f in FIELDS}
        c = _choice(model)
        if c is not None:
            out["chose"][method] = c
    return out


def _table(name, res, res2=None) -> str:
    lines = [f"### {name} (n = {res['n']}, {res['dims']}-D)", "", res["how"], ""]
    if res.get("note"):
        lines += [f"({res['note']})", ""]
    lines += ["| method | batch | bio | overall | label hom. | cross-batch agree | "
              "batch hom. (chance) |", "|---|---|---|---|---|---|---|"]
    for m, s in res["scores"].items():
        row = (f"| {m} | {s['batch']:.3f} | {s['bio']:.3f} | {s['overall']:.3f} | "
               f"{s['label_homogeneity']:.3f} | {s['agreement']:.3f} | "
               f"{s['batch_homogeneity']:.3f} ({s['batch_chance']:.3f}) |")
        lines.append(row)
        if res2 and m in res2["scores"]:
            t = res2["scores"][m]
            lines.append(f"| ↳ seed 1 | {t['batch']:.3f} | {t['bio']:.3f} | "
                         f"{t['overall']:.3f} | {t['label_homogeneity']:.3f} | "
                         f"{t['agreement']:.3f} | {t['batch_homogeneity']:.3f} "
                         f"({t['batch_chance']:.3f}) |")
    if res["chose"]:
        lines += ["", "What the ctsne estimators built (affinities_; the auto rule's "
                  "cross_share summary):", ""]
        lines += [f"- {m}: {c}" for m, c in res["chose"].items()]
    return "\n".join(lines) + "\n"


COUNTERPART_NOTE = """# Can mutual nearest neighbours tell a cell's counterpart in another batch?

Per point: the share of its 10 nearest points of each other batch that list it among
their 10 nearest of its batch (the largest over the other batches), averaged over the
point and its 10 own-batch neighbours (`counterpart_scores` in
`experiments/confounded_modes.py`). A rule that gives cross-batch weight only where a
counterpart exists needs this score to be high where the label exists in another batch
and low where it does not. Made by `experiments/confounded_modes.py --counterparts`.

"""


def main(argv=None):
    def extra(p):
        p.add_argument("--sets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
        p.add_argument("--seed2", action="store_true",
                       help="also run the auto rows with seed + 1")
        p.add_argument("--fresh", action="store_true", help="ignore saved per-set JSON")
        p.add_argument("--write-only", action="store_true",
                       help="only rebuild the markdown from saved JSON")
        p.add_argument("--add", action="store_true",
                       help="run only the methods a saved JSON lacks, and merge them in")
        p.add_argument("--counterparts", action="store_true",
                       help="write results/confounded_counterparts.md and stop")

    args = C.parse_args(__doc__.split("\n")[0], argv, extra)
    import json

    if args.counterparts:
        path = args.out / "confounded_counterparts.md"
        path.write_text(COUNTERPART_NOTE + "\n".join(counterpart_table(n, args.seed)
                                                     for n in args.sets))
        print(f"wrote {path}")
        return
    tag = "_small" if args.small else ""
    for name in args.sets:
        for seed, only in ([(args.seed, None)]
                           + ([(args.seed + 1, SEED2)] if args.seed2 else [])):
            path = args.out / f"confounded_modes_{name}_s{seed}{tag}.json"
            if args.write_only:
                continue
            if path.exists() and args.add:
                saved = json.loads(path.read_text())
                todo = [m for m in (only or METHODS) if m not in saved["scores"]]
                if todo:
                    print(f"{name}, seed {seed}: {', '.join(todo)}", flush=True)
                    new = run_set(name, seed, args.small, todo)
                    saved["scores"].update(new["scores"])
                    saved["chose"].update(new["chose"])
                    C.save_json(saved, path)
                continue
            if path.exists() and not args.fresh:
                continue
            print(f"{name}, seed {seed}", flush=True)
            C.save_json(run_set(name, seed, args.small, only), path)
    parts = ["# Affinity modes on confounded designs (issue 50, measure first)", "",
             "Scores of `ctsne.metrics.integration_score` (k = 10; overall = 0.4·batch + "
             "0.6·bio; silhouettes off). *cross-batch agree*: of a point's cross-batch "
             "10-NN, the share of its own label (Harmony's value is the reference). "
             "*batch hom.*: batch 10-NN homogeneity, chance in brackets (lower = mixed). "
             f"Seed {args.seed}; ↳ rows seed {args.seed + 1}. Made by "
             "`experiments/confounded_modes.py`" + (" --small" if args.small else "") + ".",
             ""]
    for name in DATASETS:
        p = args.out / f"confounded_modes_{name}_s{args.seed}{tag}.json"
        if not p.exists():
            continue
        p2 = args.out / f"confounded_modes_{name}_s{args.seed + 1}{tag}.json"
        parts.append(_table(name, json.loads(p.read_text()),
                            json.loads(p2.read_text()) if p2.exists() else None))
    md = args.out / f"confounded_modes{tag}.md"
    obs = args.out / "confounded_modes_observations.md"
    text = "\n".join(parts)
    if obs.exists() and not args.small:
        text += "\n" + obs.read_text()
    md.write_text(text)
    print(f"wrote {md}")


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    main()

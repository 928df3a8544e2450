"""Shared-state conditioning (the default for batches) against the paper's weights and peers.

On eight designs, seeds 0, 1, 2: the six sets of ``confounded_modes.py`` (a synthetic
mixture, digits, pbmc68k_reduced and the real control/IFN-β PBMCs, confounded and not),
sklearn's digits with partial classes (each batch holds digits the other lacks) and UCI
Adult with the high incomes of one gender removed. ConditionalTSNE and ConditionalUMAP
with their default (``conditioning="auto"``: shared states where some state is held by
only some batches) and with the paper's weights (``"classes"``); the peers (Harmony,
Scanorama, ComBat → t-SNE; Harmony, BBKNN → UMAP) from ``confounded_modes``' saved
results where they exist, else run here. Scores of
:func:`ctsne.metrics.integration_score`; one figure per set (maps coloured by batch and
by type).

    python experiments/shared_states.py [--small] [--sets NAME ...] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import confounded_modes as CM  # noqa: E402

from ctsne.metrics import integration_score  # noqa: E402

PEERS_TSNE = ("Harmony → t-SNE", "Scanorama → t-SNE", "ComBat → t-SNE")
PEERS_UMAP = ("Harmony → UMAP", "BBKNN → UMAP")
FIGURE = ("ctsne default", "ctsne classes", "Harmony → t-SNE", "cUMAP default",
          "Harmony → UMAP")


def _ctsne(d, seed, small, **kw):
    from ctsne import ConditionalTSNE

    m = ConditionalTSNE(random_state=seed, n_jobs=1, **C.tsne_params(small), **kw)
    return m, m.fit_transform(d["X"], d["batch"])


def _cumap(d, seed, small, **kw):
    from ctsne import ConditionalUMAP

    m = ConditionalUMAP(random_state=seed, n_jobs=1, n_epochs=50 if small else None, **kw)
    return m, m.fit_transform(d["X"], d["batch"])


OURS = {
    "ctsne default": lambda d, s, sm: _ctsne(d, s, sm),
    "ctsne classes": lambda d, s, sm: _ctsne(d, s, sm, conditioning="classes"),
    "cUMAP default": lambda d, s, sm: _cumap(d, s, sm),
    "cUMAP classes": lambda d, s, sm: _cumap(d, s, sm, conditioning="classes"),
}


def digits_partial(rng, small):
    """sklearn digits, 2 batches: both hold digits 0–5 (split at random), batch 1 alone
    holds 6 and 7, batch 2 alone 8 and 9; batch 2 shifted one pixel to the right."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X, y = d.data.astype(np.float64), d.target
    if small:
        keep = rng.choice(len(X), 400, replace=False)
        X, y = X[keep], y[keep]
    batch = np.where(y >= 8, 1, np.where(y >= 6, 0, rng.integers(0, 2, len(y))))
    img = X[batch == 1].reshape(-1, 8, 8)
    out = np.zeros_like(img)
    out[:, :, 1:] = img[:, :, :-1]
    X[batch == 1] = out.reshape(-1, 64)
    return {"X": X, "batch": np.array([f"b{b + 1}" for b in batch]), "label": y.astype(str),
            "note": "b1 only: 6, 7; b2 only: 8, 9"}


def adult_partial(rng, small):
    """UCI Adult's bundled sample (six standardised attributes), batch = gender, type =
    ethnicity × income; the women with incomes over 50K are left out, so two types are
    the men's alone."""
    from ctsne.datasets import load_adult

    a = load_adult(standardize=True)
    label = np.array([f"{e} {i}" for e, i in zip(a.ethnicity, a.income, strict=True)])
    keep = ~((a.gender == "Female") & (a.income == ">50K"))
    # a tiny jitter: the attributes are few and discrete, and ties would make the map's
    # neighbours arbitrary
    X = a.X[keep] + rng.normal(scale=0.05, size=a.X[keep].shape)
    return {"X": X, "batch": a.gender[keep], "label": label[keep],
            "note": "income >50K only among the men"}


DATASETS = {**CM.DATASETS, "digits-partial": digits_partial, "adult-partial": adult_partial}


def _score(d, Y, small):
    sc = integration_score(d["X"], Y, d["batch"], d["label"],
                           perplexity=10.0 if small else 30.0, silhouettes=False)
    return {f: float(getattr(sc, f)) for f in CM.FIELDS}


def run(name: str, seed: int, small: bool, draw: bool) -> tuple[dict, dict, dict]:
    d = DATASETS[name](np.random.default_rng(seed), small)
    saved = C.RESULTS / f"confounded_modes_{name}_s{seed}.json"
    peers = json.loads(saved.read_text())["scores"] if saved.exists() and not small else {}
    rows, maps, notes = {}, {}, {}
    for method, fit in OURS.items():
        t0 = time.perf_counter()
        model, Y = fit(d, seed, small)
        rows[method] = _score(d, Y, small)
        rows[method]["seconds"] = time.perf_counter() - t0
        maps[method] = Y
        k = getattr(model, "shared_states_", None)
        notes[method] = (f"{model.conditioning_}, {model.affinities_}"
                         + ("" if k is None else f", {len(k.table)} states"))
    for method in PEERS_TSNE + PEERS_UMAP:
        if method in peers and not (draw and method in FIGURE):
            rows[method] = peers[method]
            continue
        Y, _ = CM.METHODS[method](d, seed, small)
        rows[method] = _score(d, Y, small)
        maps[method] = Y
    return rows, {m: maps[m] for m in FIGURE if m in maps} | {"_d": d}, notes


def _figure(name: str, maps: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = maps.pop("_d")
    fig, axes = plt.subplots(2, len(maps), figsize=(3.2 * len(maps), 6.4), squeeze=False)
    for j, (method, Y) in enumerate(maps.items()):
        for i, key in enumerate(("batch", "label")):
            ax = axes[i, j]
            _, codes = np.unique(d[key], return_inverse=True)
            ax.scatter(Y[:, 0], Y[:, 1], c=codes, cmap="tab10", s=3, linewidths=0,
                       vmin=0, vmax=9)
            ax.set_xticks([]), ax.set_yticks([])
            ax.set_title(f"{method}\nby {'batch' if key == 'batch' else 'type'}",
                         fontsize=8)
    fig.suptitle(name, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _summary(name: str, runs: list[dict]) -> list[str]:
    methods = list(runs[0])
    lines = [f"### {name}", "", "Mean over seeds " + ", ".join(str(s) for s in range(len(runs)))
             + " (± the spread between them).", "",
             "| method | batch | bio | overall | label hom. | cross-batch agree |",
             "|---|---|---|---|---|---|"]
    for m in methods:
        cells = []
        for f in ("batch", "bio", "overall", "label_homogeneity", "agreement"):
            v = np.array([r[m][f] for r in runs if m in r])
            cells.append(f"{v.mean():.3f} ± {(v.max() - v.min()) / 2:.3f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    mean = {m: {f: float(np.mean([r[m][f] for r in runs])) for f in CM.FIELDS}
            for m in methods}
    checks = []
    for ours, harmony, peers in (("ctsne default", "Harmony → t-SNE", PEERS_TSNE),
                                 ("cUMAP default", "Harmony → UMAP", PEERS_UMAP)):
        o, h = mean[ours], mean[harmony]
        best = max(mean[p]["overall"] for p in peers)
        checks.append(f"{ours}: label hom. {o['label_homogeneity']:.3f} vs Harmony − 0.02 = "
                      f"{h['label_homogeneity'] - 0.02:.3f}; agreement {o['agreement']:.3f} vs "
                      f"{h['agreement'] - 0.02:.3f}; overall {o['overall']:.3f} vs best peer + "
                      f"0.02 = {best + 0.02:.3f}")
    return lines + [""] + [f"- {c}" for c in checks] + [""]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--sets", nargs="*", default=list(DATASETS))
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    args = ap.parse_args(argv)
    out = [C.RESULTS / "shared_states.md"]
    lines = ["# Shared-state conditioning on confounded and balanced designs", "",
             (__doc__ or "").split("\n\n")[1].replace("\n", " "), "",
             "Made by `experiments/shared_states.py`. *label hom.*: label 10-NN "
             "homogeneity; *cross-batch agree*: of a point's cross-batch 10-NN, the share of "
             "its own label; overall = 0.4·batch + 0.6·bio.", ""]
    for name in args.sets:
        runs, chose = [], []
        for seed in args.seeds:
            print(f"{name} seed {seed}", flush=True)
            rows, maps, notes = run(name, seed, args.small, draw=seed == args.seeds[0])
            runs.append(rows)
            chose.append(notes)
            if seed == args.seeds[0]:
                _figure(name, maps, C.RESULTS / f"shared_states_{name}.png")
            C.save_json({"rows": rows, "chose": notes},
                        C.RESULTS / f"shared_states_{name}_s{seed}.json")
        lines += _summary(name, runs)
        lines += ["What the estimators chose (seed by seed): "
                  + "; ".join(f"{m}: " + " / ".join(c[m] for c in chose) for m in OURS), "",
                  f"![{name}](shared_states_{name}.png)", ""]
        out[0].write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

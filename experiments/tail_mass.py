"""How much of each balanced-P block's tail can go: REPORT §12's five integration sets.

For each set, seed and value of ``ctsne.affinities.balanced.TAIL_MASS`` (the share of a
block's mass whose smallest entries are dropped), ctsne's default map is scored as
``integration.py`` scores it; P's non-zeros are reported beside the scores. Writes
``tail_mass.json`` and ``tail_mass.md`` into ``--out``.

``python experiments/tail_mass.py [--tails 0 0.01 0.02] [--seeds 0 1 2] [--small]``
"""

from __future__ import annotations

import sys

import _common as C
import integration as I
import numpy as np

from ctsne.affinities import balanced
from ctsne.metrics import integration_score

FIELDS = ("batch", "preservation", "label_homogeneity", "overall")


def run(name: str, seed: int, tail: float, small: bool) -> dict:
    data = I.DATASETS[name](np.random.default_rng(seed), small)
    old = balanced.TAIL_MASS
    balanced.TAIL_MASS = tail
    try:
        Y, model, seconds = C.embed(data["X"], data["batch"], seed=seed, small=small)
    finally:
        balanced.TAIL_MASS = old
    sc = integration_score(data["X"], Y, data["batch"], data["label"],
                           perplexity=10.0 if small else 30.0)
    return {"nnz": int(model.P_.nnz), "affinities": model.affinities_,
            **{f: float(getattr(sc, f)) for f in FIELDS}}


def main(argv=None) -> dict:
    def extra(p):
        p.add_argument("--tails", nargs="+", type=float, default=[0.0, 0.01, 0.02])
        p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
        p.add_argument("--sets", nargs="+", choices=list(I.DATASETS), default=list(I.DATASETS))

    args = C.parse_args(__doc__.splitlines()[0], argv, extra)
    rows = []
    for name in args.sets:
        for seed in args.seeds:
            for tail in args.tails:
                r = {"set": name, "seed": seed, "tail": tail, **run(name, seed, tail, args.small)}
                rows.append(r)
                print(" ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                               for k, v in r.items()), flush=True)
    C.save_json({"rows": rows}, args.out / "tail_mass.json")
    base = {(r["set"], r["seed"]): r for r in rows if r["tail"] == args.tails[0]}
    text = ["# Tail mass of the balanced P's blocks (experiments/tail_mass.py)", "",
            f"Differences from TAIL_MASS = {args.tails[0]} on the same set and seed.", "",
            "| tail | runs | non-zeros vs base | within-batch preservation | overall | batch |",
            "|---|---|---|---|---|---|"]
    for tail in args.tails[1:]:
        mine = [r for r in rows if r["tail"] == tail]
        d = {f: np.array([r[f] - base[(r["set"], r["seed"])][f] for r in mine])
             for f in ("preservation", "overall", "batch")}
        nnz = np.array([r["nnz"] / base[(r["set"], r["seed"])]["nnz"] for r in mine])
        cell = [f"{np.mean(v):+.4f} mean ({np.min(v):+.4f} to {np.max(v):+.4f}; "
                f"lower on {int((v < 0).sum())})" for v in d.values()]
        text.append(f"| {tail} | {len(mine)} | {nnz.min():.2f}–{nnz.max():.2f} | "
                    + " | ".join(cell) + " |")
    (args.out / "tail_mass.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    return {"rows": rows}


if __name__ == "__main__":
    main(sys.argv[1:])

"""Which clustering finds the states of shared-state conditioning: Harmony's own clusters
against coarser ones (the same joined where their soft memberships overlap, k-means and
Leiden communities of the space Harmony aligned).

Shared-state weights lower the repulsion between two classes only within a state both
hold, so a state that joins two types merges them in the map, and a state that splits a
shared type only mixes the classes less. On the designs of ``shared_states.py`` (seeds 0
and 1), for each finder, against the true types: the number of states; of the pairs of
points in different batches and of the same type, the share in one state (*same-type
shared*: higher mixes more); of the pairs in different batches and of different types,
the share in one state (*cross-type shared*: the pairs whose repulsion is wrongly lowered,
it should be 0); and what ``conditioning="auto"`` chooses from the states (the true
types' choice beside it). Leiden runs where ``leidenalg`` is installed (the ``bench``
extra).

    python experiments/state_finders.py [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import shared_states as SS  # noqa: E402

from ctsne.estimator import states as S  # noqa: E402


def _kmeans(Zc, seed):
    from sklearn.cluster import KMeans

    k = int(np.clip(round(len(Zc) ** (1 / 3)), 5, 30))  # a few per type at these sizes
    return KMeans(k, n_init=3, random_state=seed).fit_predict(Zc)


def _leiden(Zc, seed, resolution, k=15):
    import igraph
    import leidenalg
    from sklearn.neighbors import NearestNeighbors

    idx = NearestNeighbors(n_neighbors=k).fit(Zc).kneighbors(Zc, return_distance=False)
    rows = np.repeat(np.arange(len(Zc)), k)
    keep = rows != idx.reshape(-1)
    graph = igraph.Graph(n=len(Zc), edges=list(zip(rows[keep], idx.reshape(-1)[keep],
                                                   strict=True)))
    graph.simplify()
    part = leidenalg.find_partition(graph, leidenalg.RBConfigurationVertexPartition,
                                    resolution_parameter=resolution, seed=seed)
    return np.asarray(part.membership)


def _joined(R, threshold=0.2):
    """Harmony's clusters joined where their soft memberships overlap (cosine of the
    membership columns above ``threshold``), each point in its cluster's group."""
    from scipy.sparse.csgraph import connected_components

    C = R.T @ R
    norm = np.sqrt(np.diag(C))
    overlap = C / np.outer(norm, norm)
    np.fill_diagonal(overlap, 0.0)
    group = connected_components(overlap > threshold, directed=False)[1]
    return group[R.argmax(axis=1)]


def pair_shares(states, batch, label) -> tuple[float, float]:
    """(same-type shared, cross-type shared) over the pairs of points in different batches
    (module note), counted from the states × batches × types table."""
    codes = [np.unique(v, return_inverse=True)[1].reshape(-1) for v in (states, batch, label)]
    T = np.zeros([c.max() + 1 for c in codes])
    np.add.at(T, tuple(codes), 1.0)
    by_type = T.sum(axis=0)  # batches × types
    same_all = diff_all = same_in = diff_in = 0.0
    for a in range(T.shape[1]):
        for b in range(T.shape[1]):
            if a == b:
                continue
            pairs_same = float((by_type[a] * by_type[b]).sum())
            same_all += pairs_same
            diff_all += by_type[a].sum() * by_type[b].sum() - pairs_same
            in_state_same = float((T[:, a, :] * T[:, b, :]).sum())
            same_in += in_state_same
            diff_in += float((T[:, a, :].sum(1) * T[:, b, :].sum(1)).sum()) - in_state_same
    return same_in / max(same_all, 1.0), diff_in / max(diff_all, 1.0)


def _auto(states, batch) -> str:
    s = np.unique(states, return_inverse=True)[1]
    b = np.unique(batch, return_inverse=True)[1]
    table = np.zeros((s.max() + 1, b.max() + 1))
    np.add.at(table, (s, b), 1.0)
    return S.choose_conditioning(table)[0]


def finders():
    out = {"Harmony's clusters (default)": lambda Z, R, seed: R.argmax(axis=1),
           "Harmony's clusters joined by soft overlap > 0.2":
               lambda Z, R, seed: _joined(R),
           "k-means, n^(1/3) clusters": lambda Z, R, seed: _kmeans(Z, seed)}
    try:
        import leidenalg  # noqa: F401
    except ImportError:
        return out
    for r in (0.5, 1.0):
        out[f"Leiden, resolution {r}"] = lambda Z, R, seed, r=r: _leiden(Z, seed, r)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1])
    ap.add_argument("--sets", nargs="*", default=list(SS.DATASETS))
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--out", type=Path, default=C.RESULTS)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: dict = {}
    lines = ["# Which clustering finds the shared states", "",
             " ".join((__doc__ or "").split("\n\n")[1].split()), "",
             "Made by `experiments/state_finders.py`; means over seeds "
             + ", ".join(map(str, args.seeds)) + ".", "",
             "| design | finder | states | same-type shared | cross-type shared | auto "
             "chooses | true types' choice |", "|---|---|---|---|---|---|---|"]
    for name in args.sets:
        per: dict = {}
        for seed in args.seeds:
            d = SS.DATASETS[name](np.random.default_rng(seed), args.small)
            codes = np.unique(d["batch"], return_inverse=True)[1]
            _, Zc, R = S._aligned(d["X"], codes, seed)
            truth = _auto(d["label"], d["batch"])
            for finder, find in finders().items():
                states = find(Zc, R, seed)
                same, cross = pair_shares(states, d["batch"], d["label"])
                per.setdefault(finder, []).append(
                    (len(np.unique(states)), same, cross, _auto(states, d["batch"]), truth))
        for finder, runs in per.items():
            k, same, cross = (np.mean([r[i] for r in runs]) for i in range(3))
            chose = " / ".join(r[3] for r in runs)
            truth = " / ".join(r[4] for r in runs)
            rows[(name, finder)] = {"states": k, "same": same, "cross": cross}
            lines.append(f"| {name} | {finder} | {k:.0f} | {same:.3f} | {cross:.3f} | "
                         f"{chose} | {truth} |")
        (args.out / "state_finders.md").write_text("\n".join(lines) + "\n")
        print(name, flush=True)
    return {f"{n} | {f}": v for (n, f), v in rows.items()}


if __name__ == "__main__":
    main()

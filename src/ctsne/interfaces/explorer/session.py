"""The state of an exploration, free of any web code: data, labels, steps, save/load.

One :class:`Session` holds the data (features ``X`` and their names, row ids, label
columns) and the list of :class:`Step` s. A step is one map: the prior it factored out,
β', its embedding, and the selection made on it with that selection's ranking. The page
(:mod:`ctsne.interfaces.explorer.app`) only calls these methods, so everything the user can do is
testable here without a browser.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Session", "Step", "SESSION_FORMAT", "prior_labels", "cluster_labels"]

SESSION_FORMAT = "ctsne-explore-session/1"
# A numeric column with more distinct values than this is binned before it becomes a prior:
# a class per distinct value of a continuous feature would factor out every point.
MAX_PRIOR_LEVELS = 12
PRIOR_BINS = 5
# Ranking a selection: beyond this many points the logistic regression runs on a random
# subsample (all selected points kept up to half of it), so a large selection ranks fast.
RANK_SAMPLE = 20_000


@dataclass
class Step:
    """One map of the session.

    Attributes
    ----------
    prior : list of str
        Label columns factored out (empty: plain t-SNE).
    beta : float
        β' used (1.0 for plain t-SNE).
    embedding : ndarray (n, 2)
    kl : float or None
        Final KL(P‖R), None for a loaded map.
    parent : int or None
        The step this one was factored out from.
    selection : ndarray of int
        Row indices selected on this map (may be empty).
    ranking : FeatureRanking or None
        Ranking of ``selection``.
    n_iter : int
        Iterations run (0 for a loaded map); ``complete`` is False when cancelled.
    method : {"tsne", "umap", "largevis"}
        What made the map (:mod:`ctsne.interfaces.explorer.methods`).
    """

    prior: list[str]
    beta: float
    embedding: np.ndarray
    kl: float | None = None
    parent: int | None = None
    selection: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ranking: object = None
    n_iter: int = 0
    complete: bool = True
    method: str = "tsne"

    @property
    def title(self) -> str:
        from .methods import method_title

        # "(cancelled)" next to the method, where a long prior cannot push it out of view
        name = method_title(self.method, bool(self.prior)) + (
            "" if self.complete else " (cancelled)")
        if self.prior:
            name += f", prior {' & '.join(self.prior)}, β'={self.beta:g}"
        return name


def prior_labels(values: np.ndarray) -> np.ndarray:
    """Class labels for a column used as a prior: text as is, numbers binned if many.

    A numeric column with more than ``MAX_PRIOR_LEVELS`` distinct values is cut into
    ``PRIOR_BINS`` quantile bins (labels ``q1`` … ``q5``); missing values get ``None``.
    """
    values = np.asarray(values)
    if values.dtype == object:
        return values
    v = values.astype(np.float64)
    finite = np.isfinite(v)
    levels = np.unique(v[finite])
    if len(levels) <= MAX_PRIOR_LEVELS:
        out = np.array([None] * len(v), dtype=object)
        out[finite] = v[finite]
        return out
    edges = np.quantile(v[finite], np.linspace(0, 1, PRIOR_BINS + 1)[1:-1])
    bins = np.searchsorted(edges, v, side="right")
    out = np.array([f"q{b + 1}" for b in bins], dtype=object)
    out[~finite] = None
    return out


def cluster_labels(Y: np.ndarray, method: str, param: float, seed: int = 0) -> np.ndarray:
    """Cluster ids of the map ``Y``: ``kmeans`` with ``param`` clusters, or ``dbscan`` with
    ``eps = param`` (noise is -1).

    DBSCAN's ``eps`` is in map units; k-means runs with 4 restarts, seeded.
    """
    if method == "kmeans":
        k = int(param)
        if k < 2 or k > len(Y):
            raise ValueError(f"k-means needs 2 ≤ k ≤ {len(Y)} clusters, got {param}")
        from sklearn.cluster import KMeans

        return KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(Y)
    if method == "dbscan":
        if not param > 0:
            raise ValueError(f"DBSCAN needs eps > 0 (a distance in the map), got {param}")
        from sklearn.cluster import DBSCAN

        return DBSCAN(eps=float(param), min_samples=10).fit_predict(Y)
    raise ValueError(f"clustering method must be 'kmeans' or 'dbscan', got {method!r}")


def _fingerprint(X: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(X, dtype=np.float64).tobytes()).hexdigest()[:16]


def _jsonable(values: np.ndarray) -> list:
    if values.dtype == object:
        return [None if v is None else str(v) for v in values]
    return [None if not np.isfinite(v) else float(v) for v in values.astype(np.float64)]


def _from_json(values: list) -> np.ndarray:
    if any(isinstance(v, str) for v in values):
        return np.array(values, dtype=object)
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


class Session:
    """Data and steps of one exploration.

    Parameters
    ----------
    X : ndarray (n, p)
        The features that were embedded (ranking runs on them).
    feature_names : sequence of str
    ids : ndarray (n,)
        Row ids shown on hover and written on export.
    labels : dict of name -> ndarray (n,)
        Columns available for colour, marker, hover and as priors (float64 with NaN, or
        object arrays of str with None).
    """

    def __init__(self, X: np.ndarray, feature_names: Sequence[str], ids: np.ndarray,
                 labels: dict[str, np.ndarray] | None = None):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        n = len(self.X)
        self.feature_names = [str(f) for f in feature_names]
        if len(self.feature_names) != self.X.shape[1]:
            raise ValueError(f"{len(self.feature_names)} feature names for "
                             f"{self.X.shape[1]} columns")
        self.ids = np.asarray(ids)
        if len(self.ids) != n:
            raise ValueError(f"{len(self.ids)} ids for {n} rows")
        self.labels: dict[str, np.ndarray] = {}
        self.derived: list[str] = []  # labels made in the session (selections, clusterings)
        for name, col in (labels or {}).items():
            self.set_label(name, col, derived=False)
        self.steps: list[Step] = []

    @property
    def n(self) -> int:
        return len(self.X)

    # ------------------------------------------------------------------ labels
    def set_label(self, name: str, values, derived: bool = True) -> None:
        """Add (or replace) a label column."""
        values = np.asarray(values)
        if values.shape != (self.n,):
            raise ValueError(f"label {name!r} has shape {values.shape}, expected ({self.n},)")
        if values.dtype != object and not np.issubdtype(values.dtype, np.number):
            values = values.astype(object)
        elif values.dtype != object:
            values = values.astype(np.float64)
        self.labels[name] = values
        if derived and name not in self.derived:
            self.derived.append(name)

    def _new_name(self, stem: str) -> str:
        k = 1
        while f"{stem}{k}" in self.labels:
            k += 1
        return f"{stem}{k}"

    def label_from_selection(self, indices, name: str | None = None) -> str:
        """Turn a selection into a two-class label ("selected" / "rest"); returns its name."""
        mask = self._mask(indices)
        name = name or self._new_name("selection")
        self.set_label(name, np.where(mask, "selected", "rest").astype(object))
        return name

    def label_from_clusters(self, clusters, name: str | None = None) -> str:
        """Turn cluster ids into a label (``c0``, ``c1``, …; DBSCAN noise ``noise``)."""
        clusters = np.asarray(clusters)
        name = name or self._new_name("clusters")
        self.set_label(name, np.array(["noise" if c < 0 else f"c{c}" for c in clusters],
                                      dtype=object))
        return name

    def feature_column(self, feature: str) -> str:
        """The label column behind a ranked feature, for the prior: the column itself, the
        column of a one-hot ``col=level`` feature, or else the numeric feature made into a
        label (binned into quantiles when it becomes a prior)."""
        for name in (feature, feature.split("=")[0]):
            if name in self.labels:
                return name
        if feature not in self.feature_names:
            raise ValueError(f"{feature!r} is neither a label column nor a feature")
        self.set_label(feature, self.X[:, self.feature_names.index(feature)])
        return feature

    def prior_arrays(self, names: Sequence[str]) -> list[np.ndarray] | None:
        """The prior (one label array per name) for :class:`ConditionalTSNE`, or None."""
        for name in names:
            if name not in self.labels:
                have = ", ".join(repr(c) for c in self.labels) or "none"
                raise ValueError(f"no label column {name!r} (columns: {have})")
        return [prior_labels(self.labels[c]) for c in names] or None

    # ------------------------------------------------------------------ selection
    def _mask(self, indices) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64).ravel()
        if len(idx) and (idx.min() < 0 or idx.max() >= self.n):
            raise ValueError(f"selected indices must lie in [0, {self.n - 1}]")
        mask = np.zeros(self.n, dtype=bool)
        mask[idx] = True
        return mask

    def select_levels(self, column: str, levels: Sequence) -> np.ndarray:
        """Indices of the rows whose ``column`` takes one of ``levels`` (a legend click)."""
        col = self.labels[column]
        if col.dtype == object:
            wanted = {str(v) for v in levels}
            hit = np.array([v is not None and str(v) in wanted for v in col])
        else:
            hit = np.isin(col, np.asarray(levels, dtype=np.float64))
        return np.flatnonzero(hit)

    def rank(self, indices, seed: int = 0):
        """Feature ranking (:func:`ctsne.ranking.rank_features`) of a selection.

        Above ``RANK_SAMPLE`` points the regression sees a seeded subsample; ``n_selected``
        and ``n_total`` still count the whole data.
        """
        from ...ranking import FeatureRanking, rank_features

        mask = self._mask(indices)
        n_sel = int(mask.sum())
        if n_sel == 0 or n_sel == self.n:
            raise ValueError("select some but not all points to rank the features")
        rows = np.arange(self.n)
        if self.n > RANK_SAMPLE:
            rng = np.random.default_rng(seed)
            sel, rest = rows[mask], rows[~mask]
            k_sel = min(len(sel), RANK_SAMPLE // 2)
            k_rest = min(len(rest), RANK_SAMPLE - k_sel)
            rows = np.sort(np.concatenate([rng.choice(sel, k_sel, replace=False),
                                           rng.choice(rest, k_rest, replace=False)]))
        r = rank_features(self.X[rows], mask[rows], self.feature_names, cv=3,
                          random_state=seed)
        if len(rows) < self.n:
            r = FeatureRanking(r.feature_names, r.weights, r.order, r.mean_difference, r.auc,
                               n_sel, self.n)
        return r

    # ------------------------------------------------------------------ steps
    def add_step(self, step: Step) -> int:
        if step.embedding.shape != (self.n, 2):
            raise ValueError(f"a map must have shape ({self.n}, 2), got {step.embedding.shape}")
        self.steps.append(step)
        return len(self.steps) - 1

    # ------------------------------------------------------------------ save / load
    def to_dict(self) -> dict:
        """Everything needed to reopen the session with the same data."""
        steps = []
        for s in self.steps:
            r = s.ranking
            steps.append({
                "prior": list(s.prior), "beta": s.beta, "kl": s.kl, "parent": s.parent,
                "n_iter": s.n_iter, "complete": s.complete, "method": s.method,
                "selection": [int(i) for i in s.selection],
                "ranking": None if r is None else {
                    "features": list(r.feature_names), "weights": [float(w) for w in r.weights],
                    "mean_difference": [float(m) for m in r.mean_difference],
                    "order": [int(o) for o in r.order],
                    "auc": None if not np.isfinite(r.auc) else float(r.auc),
                    "n_selected": r.n_selected, "n_total": r.n_total},
                "embedding": np.round(s.embedding, 5).tolist(),
            })
        return {"format": SESSION_FORMAT, "n": self.n, "features": self.feature_names,
                "data_sha256": _fingerprint(self.X),
                "ids": [str(i) for i in self.ids],
                "derived_labels": {c: _jsonable(self.labels[c]) for c in self.derived},
                "steps": steps}

    def save(self, path: str | os.PathLike, force: bool = True) -> Path:
        """Write the session as JSON (atomically)."""
        from ..files.writing import atomic_path

        with atomic_path(path, force) as tmp:
            Path(tmp).write_text(json.dumps(self.to_dict()))
        return Path(path)

    def load_steps(self, source: str | os.PathLike | dict) -> None:
        """Replace the steps (and session-made labels) by those of a saved session.

        The saved session must come from the same data: same number of rows, features and
        values (checked by a hash of ``X``).
        """
        from ...ranking import FeatureRanking

        if isinstance(source, dict):
            d, where = source, "the session"
        else:
            where = str(source)
            try:
                d = json.loads(Path(source).read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise ValueError(f"cannot read the session {where}: {exc}") from None
        if not isinstance(d, dict) or d.get("format") != SESSION_FORMAT:
            raise ValueError(f"{where} is not a ctsne explore session "
                             f"(expected format {SESSION_FORMAT!r})")
        if d["n"] != self.n or d["features"] != self.feature_names:
            raise ValueError(f"{where} was saved with {d['n']} rows × {len(d['features'])} "
                             f"features, the input gives {self.n} × {len(self.feature_names)}; "
                             "open it with the same INPUT and options")
        if d["data_sha256"] != _fingerprint(self.X):
            raise ValueError(f"{where} was saved with different data values; open it with the "
                             "same INPUT and options")
        for name, values in d.get("derived_labels", {}).items():
            self.set_label(name, _from_json(values))
        steps = []
        for s in d["steps"]:
            r = s.get("ranking")
            ranking = None if r is None else FeatureRanking(
                r["features"], np.array(r["weights"]), np.array(r["order"], dtype=np.int64),
                np.array(r["mean_difference"]), np.nan if r["auc"] is None else r["auc"],
                r["n_selected"], r["n_total"])
            Y = np.array(s["embedding"], dtype=np.float64)
            if Y.shape != (self.n, 2):
                raise ValueError(f"{where}: a map has shape {Y.shape}, expected ({self.n}, 2)")
            steps.append(Step(list(s["prior"]), float(s["beta"]), Y, s.get("kl"),
                              s.get("parent"), np.array(s["selection"], dtype=np.int64),
                              ranking, int(s.get("n_iter", 0)), bool(s.get("complete", True)),
                              str(s.get("method", "tsne"))))
        self.steps = steps

    # ------------------------------------------------------------------ export
    def embeddings_table(self, shown: int | None = None) -> dict[str, np.ndarray]:
        """Columns ``id``, ``ctsne1``/``ctsne2`` (the map of step ``shown``, default the
        last: what ``ctsne explore --embedding`` and ``ctsne score`` read), then
        ``step{k}_1``/``step{k}_2`` per step, then the labels."""
        cols: dict[str, np.ndarray] = {"id": self.ids}
        if self.steps:
            Y = self.steps[len(self.steps) - 1 if shown is None else shown].embedding
            cols["ctsne1"], cols["ctsne2"] = Y[:, 0], Y[:, 1]
        for k, s in enumerate(self.steps):
            cols[f"step{k}_1"], cols[f"step{k}_2"] = s.embedding[:, 0], s.embedding[:, 1]
        for name, col in self.labels.items():
            if name not in cols:
                cols[name] = col
        return cols

"""Feature ranking for a selected group of points (paper §3.1).

Given a selection (for instance a cluster picked in an embedding), a logistic regression
of "selected vs the rest" on standardised features says which features set the selection
apart: the larger a weight's magnitude, the more the feature matters, and its sign says
whether the selection has larger (+) or smaller (−) values. A cross-validated ROC AUC says
how well a linear rule separates the selection at all, so a ranking of a selection that
no feature explains is not over-read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

__all__ = ["FeatureRanking", "rank_features", "selection_mask"]


@dataclass(frozen=True)
class FeatureRanking:
    """Features ordered by how strongly they separate a selection from the rest.

    Attributes
    ----------
    feature_names : list of str
        Names, most important first.
    weights : ndarray
        Logistic-regression weights on standardised features, in the same order
        (sign: + means larger values in the selection).
    order : ndarray of int
        Column index in the input ``X`` of each ranked feature.
    mean_difference : ndarray
        Mean of the selection minus mean of the rest, in standard deviations of the
        feature, in the same order: a model-free companion to the weights.
    auc : float
        Cross-validated ROC AUC of the classifier (nan when the selection or the rest
        is too small for the folds).
    n_selected, n_total : int
        Size of the selection and of the data.
    """

    feature_names: list[str]
    weights: np.ndarray
    order: np.ndarray
    mean_difference: np.ndarray
    auc: float
    n_selected: int
    n_total: int

    @property
    def top(self) -> str:
        """Name of the highest-ranked feature."""
        return self.feature_names[0]

    def to_frame(self):
        """The ranking as a pandas DataFrame (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is a test dependency
            raise ImportError("FeatureRanking.to_frame needs pandas; pip install pandas")\
                from exc
        return pd.DataFrame(
            {
                "feature": self.feature_names,
                "weight": self.weights,
                "abs_weight": np.abs(self.weights),
                "mean_difference": self.mean_difference,
                "column": self.order,
            }
        )

    def __str__(self) -> str:
        width = max(7, *(len(f) for f in self.feature_names))
        lines = [
            f"Feature ranking: {self.n_selected} of {self.n_total} points selected, "
            f"cross-validated ROC AUC {self.auc:.3f}",
            f"{'rank':>4}  {'feature':<{width}}  {'weight':>8}  {'mean diff (sd)':>14}",
        ]
        for r, (f, w, m) in enumerate(
            zip(self.feature_names, self.weights, self.mean_difference, strict=True), 1
        ):
            lines.append(f"{r:>4}  {f:<{width}}  {w:>+8.3f}  {m:>+14.3f}")
        return "\n".join(lines)


def selection_mask(selection, n: int, cluster=None) -> np.ndarray:
    """Boolean mask of length ``n`` from a mask, an index array, or cluster ids.

    Parameters
    ----------
    selection : array-like
        A boolean mask (n,); an array of distinct row indices; or, with ``cluster``,
        one cluster id per row.
    n : int
        Number of points.
    cluster : optional
        The id of the selected cluster in ``selection``.
    """
    sel = np.asarray(selection)
    if cluster is not None:
        if sel.shape != (n,):
            raise ValueError(f"cluster ids must have shape ({n},), got {sel.shape}")
        mask = sel == cluster
        if not mask.any():
            raise ValueError(f"no point has cluster id {cluster!r}")
        return mask
    if sel.dtype == bool:
        if sel.shape != (n,):
            raise ValueError(f"a boolean selection must have shape ({n},), got {sel.shape}")
        return sel.copy()
    if sel.ndim != 1 or not np.issubdtype(sel.dtype, np.integer):
        raise ValueError(
            "selection must be a boolean mask, an integer index array, or cluster ids "
            "together with cluster=<id>"
        )
    if len(np.unique(sel)) != len(sel):
        raise ValueError(
            "an index selection has repeated entries; to select a cluster from cluster "
            "ids, pass cluster=<id>"
        )
    if len(sel) and (sel.min() < -n or sel.max() >= n):
        raise ValueError(f"indices must lie in [0, {n - 1}]")
    mask = np.zeros(n, dtype=bool)
    mask[sel] = True
    return mask


def rank_features(
    X: np.ndarray,
    selection,
    feature_names: Sequence[str] | None = None,
    cluster=None,
    C: float = 1.0,
    cv: int = 5,
    random_state: int | None = 0,
) -> FeatureRanking:
    """Rank features by how well they separate a selection of points from the rest.

    Parameters
    ----------
    X : ndarray (n, d)
        Data in the original features (numeric; encode categories as 0/1 columns).
    selection : array-like
        Boolean mask, index array, or cluster ids (then give ``cluster``).
    feature_names : sequence of str, optional
        Column names; default ``x0, x1, …``.
    cluster : optional
        The selected id when ``selection`` holds cluster ids.
    C : float
        Inverse L2 regularisation strength of the logistic regression.
    cv : int
        Folds for the ROC AUC; 0 or 1 skips it (``auc`` is then nan).
    random_state : int, optional
        Seed for the fold split.

    Returns
    -------
    FeatureRanking
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
    n, d = X.shape
    mask = selection_mask(selection, n, cluster)
    n_sel = int(mask.sum())
    if n_sel == 0 or n_sel == n:
        raise ValueError("the selection must contain some but not all points")
    if feature_names is None:
        feature_names = [f"x{j}" for j in range(d)]
    feature_names = [str(f) for f in feature_names]
    if len(feature_names) != d:
        raise ValueError(f"{len(feature_names)} feature names for {d} columns")

    y = mask.astype(int)
    # Balanced classes: a small selection should not be ranked by how well the model
    # predicts "the rest".
    model = make_pipeline(
        StandardScaler(), LogisticRegression(C=C, class_weight="balanced", max_iter=2000)
    )
    model.fit(X, y)
    w = model[-1].coef_.ravel()

    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    mean_diff = (X[mask].mean(axis=0) - X[~mask].mean(axis=0)) / sd

    auc = float("nan")
    n_folds = min(cv, n_sel, n - n_sel)
    if cv > 1 and n_folds >= 2:
        folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
        auc = float(np.mean(cross_val_score(model, X, y, cv=folds, scoring="roc_auc")))

    order = np.argsort(-np.abs(w), kind="stable")
    return FeatureRanking(
        feature_names=[feature_names[j] for j in order],
        weights=w[order],
        order=order,
        mean_difference=mean_diff[order],
        auc=auc,
        n_selected=n_sel,
        n_total=n,
    )

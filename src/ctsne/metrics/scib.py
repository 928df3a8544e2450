"""scIB-style scoring of an integrated map (Luecken et al. 2022): silhouettes, structure
kept within each batch, and the overall 0.4·batch + 0.6·bio score.

The overall score's axes use neighbourhood measures only (:class:`IntegrationScore`);
the silhouettes, which compare distances across the whole map (little meaning between a
t-SNE or UMAP map's clusters), are reported beside them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .integration import clisi, cross_class_agreement, ilisi
from .neighborhoods import (
    _check_Y_labels,
    knn_label_homogeneity,
    label_codes,
    neighborhood_preservation,
)

__all__ = ["IntegrationScore", "batch_silhouette", "integration_score", "label_silhouette",
           "silhouette_samples", "within_batch_preservation"]

# Rows of the distance block per step: 2,000 × n distances (16 MB at n = 1,000 per 1M).
_SIL_CHUNK = 2_000
# The weights of the overall score (scIB: 0.4·batch correction + 0.6·bio conservation).
BATCH_WEIGHT, BIO_WEIGHT = 0.4, 0.6


def silhouette_samples(Y: np.ndarray, labels) -> np.ndarray:
    """Silhouette width of every point (Rousseeuw 1987), Euclidean, in row chunks.

    ``s_i = (b_i − a_i) / max(a_i, b_i)``: ``a_i`` the mean distance to the other points
    of its label, ``b_i`` the smallest mean distance to the points of another label;
    0 for a point alone in its label. O(n²) time, O(chunk · n) memory.

    Parameters
    ----------
    Y : ndarray (n, d)
    labels : array-like (n,)
        At least two distinct values.

    Returns
    -------
    ndarray (n,) in [−1, 1]
    """
    Y, labels = _check_Y_labels(Y, labels)
    codes, levels = label_codes(labels)
    n_lab = len(levels)
    if n_lab < 2:
        raise ValueError("a silhouette needs at least 2 distinct labels")
    sizes = np.bincount(codes, minlength=n_lab).astype(np.float64)
    onehot = np.zeros((len(Y), n_lab))
    onehot[np.arange(len(Y)), codes] = 1.0
    sq = np.einsum("ij,ij->i", Y, Y)
    out = np.empty(len(Y))
    for start in range(0, len(Y), _SIL_CHUNK):
        r = slice(start, start + _SIL_CHUNK)
        d2 = sq[r, None] + sq[None, :] - 2.0 * Y[r] @ Y.T
        sums = np.sqrt(np.maximum(d2, 0.0)) @ onehot  # distance to each label, summed
        own = codes[r]
        rows = np.arange(sums.shape[0])
        own_n = sizes[own] - 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            a = sums[rows, own] / own_n
            means = sums / sizes[None, :]
        means[rows, own] = np.inf
        b = means.min(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            s = (b - a) / np.maximum(a, b)
        out[r] = np.where((own_n > 0) & np.isfinite(s), s, 0.0)
    return out


def label_silhouette(Y: np.ndarray, labels) -> float:
    """scIB's label ASW: the mean silhouette of ``labels``, rescaled to ``(s + 1)/2``.

    1 when the labels form compact, well separated groups; 0.5 about random labels.
    """
    return float((np.mean(silhouette_samples(Y, labels)) + 1.0) / 2.0)


def batch_silhouette(Y: np.ndarray, batch, labels=None) -> float:
    """scIB's batch ASW: ``1 − |silhouette of the batch|`` within each label, averaged.

    Within the points of each label (all points when ``labels`` is None) the silhouette
    of the batch is taken per point; its absolute value is 0 where the batches
    interleave, so ``1 − |s|`` is 1 for a perfect mix. Averaged over the label's points,
    then over the labels (labels met in a single batch are skipped, as in scIB).

    Parameters
    ----------
    Y : ndarray (n, d)
    batch : array-like (n,)
    labels : array-like (n,), optional

    Returns
    -------
    float in [0, 1]: 1 mixed.
    """
    Y, batch = _check_Y_labels(Y, batch)
    groups = np.zeros(len(Y), dtype=np.int64) if labels is None else \
        label_codes(_check_Y_labels(Y, labels)[1])[0]
    bcodes = label_codes(batch)[0]
    per_label = []
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        if len(np.unique(bcodes[rows])) < 2:
            continue
        per_label.append(float(np.mean(1.0 - np.abs(silhouette_samples(Y[rows],
                                                                         bcodes[rows])))))
    if not per_label:
        raise ValueError("no label holds points of two batches: the batch silhouette is "
                         "undefined")
    return float(np.mean(per_label))


def within_batch_preservation(X: np.ndarray, Y: np.ndarray, batch, k: int = 15) -> float:
    """Mean fraction of each point's ``k`` nearest neighbours within its own batch kept.

    For every batch, each point's ``k`` nearest points of the same batch in the input
    ``X`` and in the map ``Y`` (:func:`ctsne.metrics.neighborhood_preservation` on that
    batch); averaged over all points of batches with more than ``k`` points. Needs no
    cell-type labels: it asks how much of each batch's own structure a correction keeps,
    which mixing the batches should not cost.

    Parameters
    ----------
    X : ndarray (n, D)
        The input, before any correction.
    Y : ndarray (n, d)
        The map.
    batch : array-like (n,)
    k : int

    Returns
    -------
    float in [0, 1]: 1 when every within-batch neighbourhood is kept.
    """
    X = np.asarray(X, dtype=np.float64)
    Y, batch = _check_Y_labels(Y, batch)
    if X.ndim != 2 or len(X) != len(Y):
        raise ValueError(f"X and Y must be 2-D with the same rows, got {X.shape}, {Y.shape}")
    codes = label_codes(batch)[0]
    kept = weight = 0.0
    for b in np.unique(codes):
        rows = np.flatnonzero(codes == b)
        if len(rows) > k:
            kept += len(rows) * neighborhood_preservation(X[rows], Y[rows], k)
            weight += len(rows)
    if weight == 0:
        raise ValueError(f"no batch has more than k={k} points; use a smaller k")
    return kept / weight


class IntegrationScore(NamedTuple):
    """Result of :func:`integration_score`: the components, the two axes and the overall.

    Batch axis (1 = mixed): the mean of ``batch_mixing`` and ``ilisi``. Bio axis
    (1 = kept): the mean of ``preservation``, ``label_homogeneity`` and ``clisi``, or
    ``preservation`` alone without labels. ``overall = 0.4·batch + 0.6·bio``. The
    silhouettes and the cross-batch agreement are reported, not counted (module note).

    Attributes
    ----------
    batch_homogeneity : float
        k-NN homogeneity of the batch (lower mixes better).
    batch_chance : float
        Its value for randomly placed batches, ``Σ_b (n_b/n)²``.
    batch_mixing : float
        ``(1 − homogeneity) / (1 − chance)``, clipped to [0, 1].
    ilisi : float
        Normalised iLISI, ``(median − 1)/(B − 1)``.
    batch_asw : float
        :func:`batch_silhouette` (within labels when given).
    preservation : float
        :func:`within_batch_preservation`.
    label_homogeneity, clisi, label_asw, agreement : float
        k-NN homogeneity of the label, normalised cLISI ``(L − median)/(L − 1)``,
        :func:`label_silhouette` and the cross-batch label agreement
        (:func:`ctsne.metrics.cross_class_agreement`); NaN without labels.
    batch, bio, overall : float
    """

    batch_homogeneity: float
    batch_chance: float
    batch_mixing: float
    ilisi: float
    batch_asw: float
    preservation: float
    label_homogeneity: float
    clisi: float
    label_asw: float
    agreement: float
    batch: float
    bio: float
    overall: float


def integration_score(X: np.ndarray, Y: np.ndarray, batch, labels=None, k: int = 10,
                      k_preservation: int = 15, perplexity: float = 30.0,
                      silhouettes: bool = True) -> IntegrationScore:
    """scIB-style score of a map ``Y`` of ``X`` whose ``batch`` should not show.

    Parameters
    ----------
    X : ndarray (n, D)
        The uncorrected input (for the within-batch preservation).
    Y : ndarray (n, d)
        The map.
    batch : array-like (n,)
        At least two batches.
    labels : array-like (n,), optional
        A label the map should keep (cell type, digit, …).
    k : int
        Neighbours of the homogeneities and the agreement (10).
    k_preservation : int
        Neighbours of the within-batch preservation (15).
    perplexity : float
        LISI perplexity (30).
    silhouettes : bool
        Compute the silhouettes (O(n²); NaN when False).

    Returns
    -------
    IntegrationScore
    """
    Y, batch = _check_Y_labels(Y, batch)
    shares = np.bincount(label_codes(batch)[0]) / len(batch)
    if len(shares) < 2:
        raise ValueError("the batch needs at least 2 distinct values")
    h = knn_label_homogeneity(Y, batch, k)
    chance = float(np.sum(shares ** 2))
    mixing = float(np.clip((1.0 - h) / (1.0 - chance), 0.0, 1.0))
    i_lisi = ilisi(Y, batch, perplexity, normalize=True)
    pres = within_batch_preservation(X, Y, batch, k_preservation)
    nan = float("nan")
    b_asw = batch_silhouette(Y, batch, labels) if silhouettes else nan
    if labels is None:
        lab_h = c_lisi = l_asw = agree = nan
        bio = pres
    else:
        lab_h = knn_label_homogeneity(Y, labels, k)
        c_lisi = clisi(Y, labels, perplexity, normalize=True)
        l_asw = label_silhouette(Y, labels) if silhouettes else nan
        agree = cross_class_agreement(Y, batch, labels, k).agreement
        bio = float(np.mean([pres, lab_h, c_lisi]))
    batch_axis = float(np.mean([mixing, i_lisi]))
    return IntegrationScore(h, chance, mixing, i_lisi, b_asw, pres, lab_h, c_lisi, l_asw,
                            agree, batch_axis, bio,
                            BATCH_WEIGHT * batch_axis + BIO_WEIGHT * bio)

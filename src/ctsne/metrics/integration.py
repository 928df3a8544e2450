"""Integration measures: how well the classes of a factored-out prior mix in an embedding,
and whether the neighbours found across classes share a complementary label.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .neighborhoods import _check_k, _check_Y_labels, _knn_chunks, label_codes

__all__ = ["CrossClassAgreement", "clisi", "cross_class_agreement", "ilisi", "lisi"]


def lisi(Y: np.ndarray, labels, perplexity: float = 30.0) -> np.ndarray:
    r"""Local inverse Simpson index of a labelling at every point (Korsunsky et al. 2019).

    The effective number of labels around each point. Its ``k = min(n − 1,
    ⌊3·perplexity⌋)`` nearest other points in ``Y`` get weights :math:`w_{ij} \propto
    \exp(-\beta_i d_{ij})`, :math:`d_{ij}` the Euclidean distance and :math:`\beta_i`
    found by bisection so that the weights have the given perplexity; with
    :math:`m_{il}` the weight on label :math:`l`, the point's LISI is
    :math:`1 / \sum_l m_{il}^2`.

    The kernel acts on distances, not their squares, as in the reference implementations
    (the R package ``lisi`` and ``harmonypy``) although the paper calls it Gaussian;
    the neighbours are 3·perplexity points besides the point itself, as in
    ``harmonypy`` ≥ 2 (the R package uses one fewer).

    Parameters
    ----------
    Y : ndarray (n, d)
        Embedding.
    labels : array-like (n,)
        Any sortable values; each distinct value is one label.
    perplexity : float
        Effective number of neighbours each point weighs (30 in the Harmony paper).

    Returns
    -------
    ndarray (n,): values in [1, number of labels]; 1 where a point's neighbourhood holds
    one label.
    """
    from ..affinities.calibration import calibrate

    Y, labels = _check_Y_labels(Y, labels)
    n = len(Y)
    if n < 2:
        raise ValueError("LISI needs at least 2 points")
    if not np.isfinite(perplexity) or perplexity <= 0:
        raise ValueError(f"perplexity must be a positive number, got {perplexity}")
    k = int(min(n - 1, max(1, np.floor(3 * perplexity))))
    codes, levels = label_codes(labels)
    n_lab = len(levels)
    out = np.empty(n)
    for r, idx, dist in _knn_chunks(Y, k, distances=True):
        # calibrate's Gaussian acts on squared inputs, so √d gives the kernel exp(−β·d)
        w = calibrate(np.sqrt(dist), perplexity)
        key = (np.arange(len(r))[:, None] * n_lab + codes[idx]).ravel()
        mass = np.bincount(key, weights=w.ravel(), minlength=len(r) * n_lab)
        out[r] = 1.0 / np.sum(mass.reshape(len(r), n_lab) ** 2, axis=1)
    return out


def _one_label_check(n_lab: int, what: str) -> None:
    if n_lab < 2:
        raise ValueError(f"normalize needs {what} with at least 2 distinct values; with one "
                         "the LISI is 1 everywhere (pass normalize=False)")


def ilisi(Y: np.ndarray, prior, perplexity: float = 30.0, normalize: bool = False) -> float:
    """Integration LISI: the median over points of the :func:`lisi` of the prior.

    How well the prior's classes mix in the embedding: 1 when every neighbourhood holds
    one class, the number of classes ``L`` when each holds all classes in equal shares.
    Classes of unequal sizes placed at random give about ``1 / Σ_l (n_l/n)²``, not ``L``.

    Parameters
    ----------
    Y : ndarray (n, d)
        Embedding.
    prior : array-like (n,)
        The labels that were factored out (batch, source, donor, ...).
    perplexity : float
        As in :func:`lisi`.
    normalize : bool
        Return ``(median − 1) / (L − 1)`` instead: 0 unmixed, 1 perfectly mixed.

    Returns
    -------
    float: the median (not the mean) of the per-point values.
    """
    return _median_lisi(Y, prior, perplexity, normalize, "the prior", mixed_is_best=True)


def clisi(Y: np.ndarray, labels, perplexity: float = 30.0, normalize: bool = False) -> float:
    """Cell-type LISI: the median over points of the :func:`lisi` of a complementary label.

    How pure the neighbourhoods stay in a label that the embedding should keep: 1 when
    every neighbourhood holds one label (best), up to the number of labels ``L``.

    Parameters
    ----------
    Y : ndarray (n, d)
        Embedding.
    labels : array-like (n,)
        A label the embedding should show (cell type, digit, cluster, ...).
    perplexity : float
        As in :func:`lisi`.
    normalize : bool
        Return ``(L − median) / (L − 1)`` instead: 1 pure, 0 fully mixed.

    Returns
    -------
    float: the median (not the mean) of the per-point values.
    """
    return _median_lisi(Y, labels, perplexity, normalize, "labels", mixed_is_best=False)


def _median_lisi(Y, labels, perplexity: float, normalize: bool, what: str,
                 mixed_is_best: bool) -> float:
    """Median LISI, or mapped to [0, 1] with 1 the best end (mixed for iLISI, pure for cLISI)."""
    med = float(np.median(lisi(Y, labels, perplexity)))
    if not normalize:
        return med
    n_lab = len(label_codes(labels)[1])
    _one_label_check(n_lab, what)
    return (med - 1.0 if mixed_is_best else n_lab - med) / (n_lab - 1.0)


class CrossClassAgreement(NamedTuple):
    """Result of :func:`cross_class_agreement`.

    Attributes
    ----------
    agreement : float
        Mean, over points with at least one neighbour from another prior class, of the
        fraction of those neighbours that share the point's complementary label (NaN
        when no point has one).
    coverage : float
        Fraction of points with at least one neighbour from another prior class.
    chance : float
        The agreement those same points would get if their other-class neighbours were
        drawn at random from the other classes (NaN when no point has one).
    """

    agreement: float
    coverage: float
    chance: float


def cross_class_agreement(
    Y: np.ndarray, prior, complement, k: int = 10
) -> CrossClassAgreement:
    """Whether the neighbours an embedding finds across prior classes are counterparts.

    Among each point's ``k`` nearest neighbours in ``Y`` that belong to another class
    of ``prior``, the fraction sharing the point's ``complement`` label. Mixing the
    classes is only useful when these neighbours are counterparts (same cell type in
    another batch), not strangers; compare ``agreement`` with ``chance``.

    Parameters
    ----------
    Y : ndarray (n, d)
        Embedding.
    prior : array-like (n,)
        The labels that were factored out.
    complement : array-like (n,)
        A label the classes share (cell type, digit, ...).
    k : int
        Neighbours per point.

    Returns
    -------
    CrossClassAgreement
    """
    Y, prior = _check_Y_labels(Y, prior)
    _, complement = _check_Y_labels(Y, complement)
    n = len(Y)
    k = _check_k(k, n)
    (pc, p_levels), (cc, c_levels) = label_codes(prior), label_codes(complement)
    n_p, n_c = len(p_levels), len(c_levels)
    # Points of complementary label l outside prior class c, for the random expectation.
    joint = np.bincount(pc * n_c + cc, minlength=n_p * n_c).reshape(n_p, n_c)
    outside = joint.sum(axis=0)[None, :] - joint
    outside_total = n - joint.sum(axis=1)
    agree_sum = chance_sum = 0.0
    covered = 0
    for r, idx in _knn_chunks(Y, k):
        cross = pc[idx] != pc[r][:, None]
        n_cross = cross.sum(axis=1)
        n_agree = (cross & (cc[idx] == cc[r][:, None])).sum(axis=1)
        has = n_cross > 0
        covered += int(has.sum())
        agree_sum += float(np.sum(n_agree[has] / n_cross[has]))
        p_r, c_r = pc[r][has], cc[r][has]
        chance_sum += float(np.sum(outside[p_r, c_r] / outside_total[p_r]))
    if covered == 0:
        return CrossClassAgreement(float("nan"), 0.0, float("nan"))
    return CrossClassAgreement(agree_sum / covered, covered / n, chance_sum / covered)

"""How much of a labelling, or of the input neighbourhoods, an embedding's kNN graph shows.

Neighbours are found in row chunks so that memory stays O(chunk · k) however many points
there are; the chunked search and the one label encoding here serve the other measure
modules too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from sklearn.neighbors import NearestNeighbors

from ..prior import encode_labels

__all__ = [
    "knn_label_homogeneity",
    "label_codes",
    "laplacian_score",
    "neighborhood_preservation",
]

# Rows per neighbour query: 2·10⁴ rows × 100 neighbours × 8 bytes = 16 MB per chunk.
_CHUNK = 20_000


def _knn_chunks(
    Y: np.ndarray, k: int, rows: np.ndarray | None = None, chunk: int = _CHUNK,
    distances: bool = False,
) -> Iterator[tuple[np.ndarray, ...]]:
    """Yield ``(rows, idx)``: each query row's ``k`` nearest other points, nearest first.

    A point is never its own neighbour, even when it has exact duplicates: the query
    asks for ``k + 1`` neighbours and drops the point itself where it appears, else the
    farthest one. With ``distances`` the tuples are ``(rows, idx, dist)``.
    """
    nn = NearestNeighbors(n_neighbors=k + 1).fit(Y)
    rows_all = np.arange(len(Y)) if rows is None else np.asarray(rows)
    for start in range(0, len(rows_all), chunk):
        r = rows_all[start:start + chunk]
        dist, idx = nn.kneighbors(Y[r], n_neighbors=k + 1)
        is_self = idx == r[:, None]
        # A stable sort on the self flag moves the point itself (if found) to the end.
        order = np.argsort(is_self, axis=1, kind="stable")[:, :k]
        idx = np.take_along_axis(idx, order, axis=1)
        if distances:
            yield r, idx, np.take_along_axis(dist, order, axis=1)
        else:
            yield r, idx


def label_codes(labels) -> tuple[np.ndarray, list]:
    """Integer codes of a labelling, numbered in sorted order with a missing label last.

    The one label encoding of the measures here, of :mod:`ctsne.plotting` and of
    ``ctsne score``: :func:`ctsne.prior.encode_labels` (a missing label, None or NaN,
    is a class of its own), renumbered. ``encode_labels`` numbers classes by first
    appearance, which the estimator needs; here they are sorted (numbers before text),
    so that colours and legends, and the order in which the scores add up the labels,
    do not depend on the order of the rows.

    Parameters
    ----------
    labels : array-like (n,)
        Hashable values; numbers and text may be mixed.

    Returns
    -------
    codes : ndarray of int64 (n,)
        ``levels[codes[i]]`` is the label of point ``i``.
    levels : list
        The distinct labels in sorted order, then None if some label is missing.
    """
    codes, classes = encode_labels(labels, missing="class", name="labels")
    present = [k for k, c in enumerate(classes) if c is not None]
    order = sorted(present, key=lambda k: (isinstance(classes[k], str), classes[k]))
    order += [k for k, c in enumerate(classes) if c is None]
    rank = np.empty(len(classes), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes], [classes[k] for k in order]


def _check_Y_labels(Y, labels) -> tuple[np.ndarray, np.ndarray]:
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"Y must be 2-D (n, d), got shape {Y.shape}")
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != len(Y):
        raise ValueError(
            f"labels must be 1-D with one entry per row of Y ({len(Y)}), got shape "
            f"{labels.shape}"
        )
    return Y, labels


def _check_k(k: int, n: int) -> int:
    if int(k) != k or not 0 < k < n:
        raise ValueError(f"k must be an integer in [1, n - 1] = [1, {n - 1}], got {k}")
    return int(k)


def knn_label_homogeneity(Y: np.ndarray, labels, k: int = 10) -> float:
    """Mean fraction of each point's ``k`` nearest neighbours (in ``Y``) sharing its label.

    1 when every neighbourhood is pure; about Σ(n_l/n)² when labels are random.
    """
    Y, labels = _check_Y_labels(Y, labels)
    k = _check_k(k, len(Y))
    same = 0
    for r, idx in _knn_chunks(Y, k):
        same += int(np.count_nonzero(labels[idx] == labels[r][:, None]))
    return same / (len(Y) * k)


def laplacian_score(
    Y: np.ndarray, labels, k: int | Sequence[int] = 30
) -> float | np.ndarray:
    r"""Normalised Laplacian score of a labelling on the kNN graph of an embedding (Eq. 7).

    Small means the label is homogeneous in the embedding (neighbours share it); a
    label the embedding ignores scores about :math:`1 - \sum_l (n_l/n)^2`.

    Definition. Let :math:`A` be the directed kNN adjacency of ``Y`` (:math:`A_{ij} = 1`
    iff :math:`j` is among the ``k`` nearest neighbours of :math:`i`), symmetrised as
    :math:`W = (A + A^\top)/2`, with degrees :math:`D = \mathrm{diag}(W\mathbf 1)` and
    Laplacian :math:`L = D - W` (the paper writes :math:`A - D`, which makes every score
    ≤ 0). With :math:`f_l` the indicator of label :math:`l`,

    .. math::

        \mathrm{score} = \sum_l \frac{n_l}{n}\,
            \frac{g_l^\top D^{-1/2} L D^{-1/2} g_l}{g_l^\top g_l},
        \qquad g_l = D^{1/2} f_l,

    i.e. each label contributes the Rayleigh quotient of the normalised Laplacian at
    :math:`D^{1/2} f_l`, which equals :math:`f_l^\top L f_l / f_l^\top D f_l =
    \mathrm{cut}(l)/\mathrm{vol}(l)`: the share of the edge weight at label-:math:`l`
    points that leaves the label. Each quotient lies in [0, 1], so the score does too.
    It is 0 exactly when no kNN edge joins two labels; at random an edge leaves label
    :math:`l` with probability about :math:`1 - n_l/n`.

    Why this normalisation: the paper's :math:`f_l^\top D^{-1/2} L D^{-1/2} f_l` grows with
    :math:`n_l`, and dividing it by :math:`f_l^\top f_l` is not 0 for a homogeneous label
    once degrees differ (the null vector of the normalised Laplacian is :math:`D^{1/2}
    \mathbf 1`, not :math:`\mathbf 1`), and symmetrised kNN graphs have unequal degrees.
    Why :math:`(A + A^\top)/2` rather than :math:`\max(A, A^\top)`: it keeps every kNN
    relation (a mutual pair weighs twice, being a neighbour relation seen from both
    ends), so :math:`2\,f_l^\top L f_l` is simply the number of kNN relations that cross
    the boundary of label :math:`l`, and the graph's total weight stays :math:`nk`.

    Parameters
    ----------
    Y : ndarray (n, d)
        Embedding.
    labels : array-like (n,)
        Any hashable values; each distinct value is one label.
    k : int or sequence of int
        Neighbours per point. A sequence gives one score per ``k`` from a single
        neighbour search for the largest.

    Returns
    -------
    float for an integer ``k``, else ndarray of scores aligned with ``k``.
    """
    Y, labels = _check_Y_labels(Y, labels)
    n = len(Y)
    scalar = np.ndim(k) == 0
    ks = np.atleast_1d(np.asarray(k))
    if ks.ndim != 1 or len(ks) == 0:
        raise ValueError("k must be an integer or a non-empty 1-D sequence of integers")
    ks = np.array([_check_k(kk, n) for kk in ks])
    kmax = int(ks.max())
    codes, levels = label_codes(labels)
    n_lab = len(levels)
    sizes = np.bincount(codes, minlength=n_lab)

    # Per neighbour rank c and label l: edges leaving l, edges entering l from another
    # label, and all edges entering l. Cumulative sums over c then give every k at once.
    out_cross = np.zeros((kmax, n_lab))
    in_cross = np.zeros((kmax, n_lab))
    in_all = np.zeros((kmax, n_lab))
    rank_offset = (np.arange(kmax) * n_lab)[None, :]
    size = kmax * n_lab
    for r, idx in _knn_chunks(Y, kmax):
        src = np.broadcast_to(codes[r][:, None], idx.shape)
        dst = codes[idx]
        cross = (src != dst).ravel().astype(np.float64)
        key_src = (rank_offset + src).ravel()
        key_dst = (rank_offset + dst).ravel()
        out_cross += np.bincount(key_src, weights=cross, minlength=size).reshape(kmax, n_lab)
        in_cross += np.bincount(key_dst, weights=cross, minlength=size).reshape(kmax, n_lab)
        in_all += np.bincount(key_dst, minlength=size).reshape(kmax, n_lab)
    out_cross = np.cumsum(out_cross, axis=0)
    in_cross = np.cumsum(in_cross, axis=0)
    in_all = np.cumsum(in_all, axis=0)

    scores = np.empty(len(ks))
    for a, kk in enumerate(ks):
        # With W = (A + Aᵀ)/2: 2·cut(l) = crossing edges out of and into l,
        # 2·vol(l) = k·n_l out-edges + all in-edges of l.
        cut2 = out_cross[kk - 1] + in_cross[kk - 1]
        vol2 = kk * sizes + in_all[kk - 1]
        scores[a] = float(np.sum(sizes / n * cut2 / vol2))
    return float(scores[0]) if scalar else scores


def neighborhood_preservation(
    X: np.ndarray,
    Y: np.ndarray,
    k: int = 10,
    n_samples: int | None = None,
    random_state: int | None = 0,
) -> float:
    """Mean fraction of each point's ``k`` nearest neighbours in ``X`` kept in ``Y``.

    Parameters
    ----------
    X : ndarray (n, D)
        Input data (Euclidean distances).
    Y : ndarray (n, d)
        Embedding of the same points.
    k : int
        Neighbourhood size.
    n_samples : int, optional
        Average over this many randomly chosen query points instead of all of them
        (their neighbours are still searched among all points); for large ``n``.
    random_state : int, optional
        Seed for the choice of query points.

    Returns
    -------
    float in [0, 1]: 1 when every neighbourhood is kept, about k/(n − 1) for an
    embedding unrelated to ``X``.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2 or len(X) != len(Y):
        raise ValueError(f"X and Y must be 2-D with the same rows, got {X.shape}, {Y.shape}")
    n = len(X)
    k = _check_k(k, n)
    rows = None
    if n_samples is not None and n_samples < n:
        rows = np.sort(np.random.default_rng(random_state).choice(n, n_samples, replace=False))
    kept = 0
    n_rows = 0
    # Small chunks: the comparison below holds chunk · k² booleans.
    chunk = max(1, min(_CHUNK, 4_000_000 // (k * k)))
    for (r, ix), (_, iy) in zip(_knn_chunks(X, k, rows, chunk), _knn_chunks(Y, k, rows, chunk),
                                strict=True):
        kept += int(np.count_nonzero(ix[:, :, None] == iy[:, None, :]))
        n_rows += len(r)
    return kept / (n_rows * k)

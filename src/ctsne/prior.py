"""Prior knowledge as class labels: encoding, the α'/β' relation, pair-weight terms.

A prior assigns every point a class. Pairs in the same class get weight α', pairs in
different classes β', tied by the paper's Eq. 4 ``α'·ρ + β'·(1 − ρ) = 1`` with
``ρ = Σ_l n_l(n_l − 1) / (n(n − 1))``, so that α' = β' = 1 is plain t-SNE.

Several priors are either combined into joint classes (``combine="joint"``, the paper's
f₁₋₆: a class per observed combination of labels) or treated as independent
(``combine="product"``: ``w_ij = Π_m w^(m)_ij``).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DEFAULT_BETA", "Prior", "PriorTerm", "column_names", "encode_labels", "is_missing",
           "label_values", "make_prior", "split_columns", "weight_terms", "weights_from_sizes"]

# β' when neither β' nor α' is given: the ct-SNE paper's rule of thumb. Every default β'
# (estimator, command line, explorer, exact objective) refers to this one, so that they
# cannot drift apart.
DEFAULT_BETA = 0.01


@dataclass(frozen=True)
class PriorTerm:
    """One term of the pair-weight expansion ``w_ij = Σ_t coef_t · [i ~_t j]``.

    ``codes is None`` means every pair is in relation (the "all points" term); otherwise
    ``i ~ j`` iff ``codes[i] == codes[j]``.
    """

    coef: float
    codes: np.ndarray | None
    n_groups: int


@dataclass
class Prior:
    """Encoded prior: integer class codes per (combined) column and their weights.

    Attributes
    ----------
    codes : list of ndarray of int64
        One array of class codes per column (one column after a joint combination).
    classes : list of ndarray
        The original label values of each column's codes (joint: tuples of labels).
    alphas, betas : ndarray
        α' and β' per column.
    """

    codes: list[np.ndarray]
    classes: list[np.ndarray]
    alphas: np.ndarray
    betas: np.ndarray
    n: int = field(init=False)

    def __post_init__(self) -> None:
        self.n = len(self.codes[0]) if self.codes else 0

    @property
    def is_trivial(self) -> bool:
        """True when every pair weight is the same, i.e. ct-SNE is plain t-SNE."""
        return not self.codes or bool(np.all(self.alphas == self.betas))

    def pair_weights(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """Dense block of ``w_ij`` for ``i in rows`` and ``j in cols`` (all points if None)."""
        cols_sel = slice(None) if cols is None else cols
        w = None
        for c, a, b in zip(self.codes, self.alphas, self.betas, strict=True):
            same = c[rows][:, None] == c[cols_sel][None, :]
            wm = np.where(same, a, b)
            w = wm if w is None else w * wm
        if w is None:
            n_cols = self.n if cols is None else len(cols)
            w = np.ones((len(rows), n_cols))
        return w

    def group_weights(self, sources: list | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The points' groups (joint classes, 0..G−1) and the groups' weight table.

        ``sources``: one code array per column (r,) for other points (−1, a label unseen
        in training, matches no class); ``W`` is then (r, G): their weights against each
        group (the SGD layouts' negatives of new points). Default: the groups' own (G, G).
        """
        joint = self.joint_codes()
        first = np.unique(joint, return_index=True)[1]  # a point of each group
        if sources is None:
            sources = [c[first] for c in self.codes]
        W = np.ones((len(sources[0]), len(first)))
        for src, codes, a, b in zip(sources, self.codes, self.alphas, self.betas, strict=True):
            W *= np.where(np.asarray(src)[:, None] == codes[first][None, :], a, b)
        return joint, W

    def missing_mask(self) -> np.ndarray:
        """True for the points whose label is missing in some column (``missing="class"``
        puts them in a class of their own)."""
        mask = np.zeros(self.n, dtype=bool)
        for codes, labels in zip(self.codes, self.classes, strict=True):
            absent = np.array([v is None or (isinstance(v, tuple) and None in v)
                               for v in labels], dtype=bool)
            if absent.any():
                mask |= absent[codes]
        return mask

    def joint_codes(self) -> np.ndarray:
        """One class code per point for the combination of every column (the finest split)."""
        if len(self.codes) == 1:
            return self.codes[0]
        return _joint_codes(self.codes)[0]

    def terms(self) -> list[PriorTerm]:
        """Expand ``Π_m (β'_m + (α'_m − β'_m)[same in m])`` into a sum of indicator terms.

        The terms of :func:`weight_terms`, each with the joint class codes of its columns
        ("same class in every column of T"); the empty subset is the all-points term.
        """
        out: list[PriorTerm] = []
        for coef, subset in weight_terms(self.alphas, self.betas):
            if not subset:
                out.append(PriorTerm(coef, None, 1))
                continue
            codes, n_groups = _joint_codes([self.codes[k] for k in subset])
            out.append(PriorTerm(coef, codes, n_groups))
        return out


def weight_terms(alphas: Sequence[float],
                 betas: Sequence[float]) -> list[tuple[float, tuple[int, ...]]]:
    """Expand ``Π_m (β'_m + (α'_m − β'_m)[same class in m])`` into a sum over column subsets.

    Each subset T of the columns contributes ``Π_{m∉T} β'_m · Π_{m∈T} (α'_m − β'_m)`` times
    "same class in every column of T"; the empty subset is the all-points term.

    Parameters
    ----------
    alphas, betas : sequence of float
        α'_m and β'_m per prior column.

    Returns
    -------
    list of (coef, subset)
        The coefficient and the columns of each term, by subset size and then in
        :func:`itertools.combinations` order; terms with a zero coefficient are dropped.
    """
    m = len(alphas)
    out = []
    for size in range(m + 1):
        for subset in itertools.combinations(range(m), size):
            coef = 1.0
            for k in range(m):
                coef *= (alphas[k] - betas[k]) if k in subset else betas[k]
            if coef == 0.0:
                continue
            out.append((coef, subset))
    return out


def is_missing(values: np.ndarray) -> np.ndarray:
    """Missing-label mask: None, float NaN, pandas NA and NaT count as missing.

    Parameters
    ----------
    values : ndarray of object (n,)
        Labels, compared one by one.

    Returns
    -------
    ndarray of bool (n,)
    """
    mask = np.zeros(len(values), dtype=bool)
    for k, v in enumerate(values):
        if v is None:
            mask[k] = True
            continue
        try:
            mask[k] = bool(v != v)  # NaN, NaT and pd.NA are not equal to themselves
        except (TypeError, ValueError):
            mask[k] = True  # pd.NA raises on bool(): it is missing
    return mask


def label_values(labels) -> np.ndarray:
    """Labels as an object array, missing ones as None (the value of the missing class).

    A :class:`Prior`'s ``classes`` hold the label of each code and None for the class of
    missing labels (``missing="class"``), so these values can be looked up there.

    Parameters
    ----------
    labels : array-like (n,)
        One column of labels.

    Returns
    -------
    ndarray of object (n,)
    """
    arr = np.empty(len(labels), dtype=object)
    arr[:] = list(np.asarray(labels, dtype=object))
    arr[is_missing(arr)] = None
    return arr


def encode_labels(
    labels, missing: str = "class", name: str = "prior"
) -> tuple[np.ndarray, np.ndarray]:
    """Map one column of hashable labels to integer codes ``0..L-1``.

    Parameters
    ----------
    labels : array-like of shape (n,)
        Any hashable values; a pandas Categorical or Series is read through its codes.
    missing : {"class", "error"}
        A missing label (None, NaN, pandas NA) forms a class of its own, or raises.
    name : str
        Used in error messages.

    Returns
    -------
    codes : ndarray of int64, shape (n,)
    classes : ndarray of object, the label of each code (None for the missing class)
    """
    if missing not in ("class", "error"):
        raise ValueError(f"missing must be 'class' or 'error', got {missing!r}")
    cat = getattr(labels, "cat", None)  # pandas Series with categorical dtype
    if cat is not None:
        labels = labels.array
    if hasattr(labels, "codes") and hasattr(labels, "categories"):  # pandas Categorical
        raw = np.asarray(labels.codes, dtype=np.int64)
        miss = raw < 0
        classes = list(labels.categories)
        codes = raw.copy()
        return _finish_codes(codes, miss, np.array(classes, dtype=object), missing, name)

    if isinstance(labels, (list, tuple)):
        # element by element, so that tuple labels stay single labels
        arr = np.empty(len(labels), dtype=object)
        arr[:] = labels
        kinds = {type(v) for v in labels}
        if len(kinds) == 1 and kinds <= {bool, int, str, np.str_, np.bool_, np.int64}:
            arr = np.asarray(labels)  # one plain type: numpy's fast unique is safe
    else:
        arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected one label per point (1-D), got shape {arr.shape}")
    if arr.dtype.kind in "biu" or arr.dtype.kind in "USa":
        uniq, codes = np.unique(arr, return_inverse=True)
        return _finish_codes(codes.reshape(-1).astype(np.int64), np.zeros(len(arr), bool),
                             uniq.astype(object), missing, name)
    if arr.dtype.kind == "f":
        miss = np.isnan(arr)
        uniq, codes = np.unique(np.where(miss, 0.0, arr), return_inverse=True)
        if miss.any():
            # recompute on non-missing values so that 0.0 is not invented as a class
            uniq, inv = np.unique(arr[~miss], return_inverse=True)
            codes = np.zeros(len(arr), dtype=np.int64)
            codes[~miss] = inv
        return _finish_codes(codes.astype(np.int64), miss, uniq.astype(object), missing, name)

    obj = arr.astype(object)
    miss = is_missing(obj)
    lookup: dict = {}
    codes = np.zeros(len(obj), dtype=np.int64)
    for k, v in enumerate(obj):
        if miss[k]:
            continue
        try:
            codes[k] = lookup.setdefault(v, len(lookup))
        except TypeError:
            raise TypeError(
                f"{name}: label {v!r} at position {k} is not hashable; labels must be "
                "hashable values such as ints, strings or bools"
            ) from None
    classes = np.empty(len(lookup), dtype=object)
    for v, c in lookup.items():
        classes[c] = v
    return _finish_codes(codes, miss, classes, missing, name)


def _finish_codes(codes, miss, classes, missing, name):
    if miss.any():
        if missing == "error":
            rows = np.flatnonzero(miss)
            shown = ", ".join(map(str, rows[:10])) + (" …" if len(rows) > 10 else "")
            raise ValueError(
                f"{name}: {len(rows)} missing label(s) at rows {shown}; fill them in, drop "
                "those rows, or pass missing='class' to treat missing as a class of its own"
            )
        codes = codes.copy()
        codes[miss] = len(classes)
        classes = np.append(classes, np.array([None], dtype=object))
    # number classes by first appearance: relabelling the classes then gives identical
    # codes, hence bit-identical results; unused classes (pandas categories) drop out
    used, first, codes = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    codes = rank[codes.reshape(-1)]
    return codes.astype(np.int64), np.asarray(classes, dtype=object)[used[order]]


def _joint_codes(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, int]:
    stacked = np.stack(columns, axis=1)
    uniq, codes = np.unique(stacked, axis=0, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), len(uniq)


def split_columns(prior, n: int) -> list:
    """Split a user's prior into its label columns.

    Parameters
    ----------
    prior : array-like (n,) or (n, m), list of m arrays, dict name -> labels, pandas
        DataFrame or Categorical
        Class labels, one column per prior.
    n : int
        Number of points (the columns' lengths are checked by the caller).

    Returns
    -------
    list
        The 1-D label columns, each as given (a pandas column stays a Series).
    """
    if hasattr(prior, "columns") and hasattr(prior, "iloc"):  # pandas DataFrame
        return [prior[c] for c in prior.columns]
    if isinstance(prior, Mapping):
        return list(prior.values())
    if isinstance(prior, (list, tuple)) and len(prior) > 0 and all(
        isinstance(c, list) or getattr(c, "ndim", 0) == 1 for c in prior
    ):
        return list(prior)
    if hasattr(prior, "codes") and hasattr(prior, "categories"):
        return [prior]
    if getattr(prior, "cat", None) is not None:
        return [prior]
    arr = np.asarray(prior) if not hasattr(prior, "dtype") else prior
    if getattr(arr, "ndim", 1) == 2:
        arr = np.asarray(arr)
        return [arr[:, k] for k in range(arr.shape[1])]
    if getattr(arr, "ndim", 1) != 1:
        raise ValueError(
            f"prior must be labels of shape (n,) or (n, m), got an array of shape {arr.shape}"
        )
    # an object that only converts (``__array__``, no length) is used as its array
    return [prior if hasattr(prior, "__len__") else arr]


def column_names(prior, count: int) -> list[str]:
    """How messages call the ``count`` columns of ``prior`` (:func:`split_columns`): by
    name where the prior has names (a DataFrame's columns, a dict's keys, a named pandas
    Series), else "column 0", "column 1", …"""
    if hasattr(prior, "columns") and hasattr(prior, "iloc"):
        names = list(prior.columns)
    elif isinstance(prior, Mapping):
        names = list(prior)
    elif count == 1 and isinstance(getattr(prior, "name", None), str):
        names = [prior.name]
    else:
        return [f"column {k}" for k in range(count)]
    return [f"column {str(name)!r}" for name in names]


def weights_from_sizes(
    sizes: np.ndarray, beta: float | None = None, alpha: float | None = None
) -> tuple[float, float, float]:
    """α' and β' from class sizes by the paper's Eq. 4; returns ``(alpha, beta, rho)``.

    Exactly one of ``beta`` and ``alpha`` is given. Raises ``ValueError`` naming the
    admissible range when the other weight would not be positive.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    n = sizes.sum()
    rho = float(np.sum(sizes * (sizes - 1)) / (n * (n - 1)))
    if (beta is None) == (alpha is None):
        raise ValueError("give exactly one of beta and alpha (the other follows from Eq. 4)")
    if rho <= 0.0 or rho >= 1.0:
        return 1.0, 1.0, rho  # every pair on one side: the prior carries no information
    if beta is not None:
        beta = float(beta)
        upper = 1.0 / (1.0 - rho)
        if not np.isfinite(beta) or not 0.0 < beta < upper:
            raise ValueError(
                f"beta={beta!r} is out of range: for these class sizes (rho = {rho:.6g}) "
                f"beta must lie in the open interval (0, {upper:.6g}) so that both alpha' and "
                "beta' are positive; beta < 1 removes the prior, beta > 1 strengthens it"
            )
        return (1.0 - beta * (1.0 - rho)) / rho, beta, rho
    alpha = float(alpha)
    upper = 1.0 / rho
    if not np.isfinite(alpha) or not 0.0 < alpha < upper:
        raise ValueError(
            f"alpha={alpha!r} is out of range: for these class sizes (rho = {rho:.6g}) alpha "
            f"must lie in the open interval (0, {upper:.6g}) so that both alpha' and beta' are "
            "positive; alpha > 1 removes the prior, alpha < 1 strengthens it"
        )
    return alpha, (1.0 - alpha * rho) / (1.0 - rho), rho


def make_prior(
    prior,
    n: int,
    beta: float | Sequence[float] | None = DEFAULT_BETA,
    alpha: float | Sequence[float] | None = None,
    combine: str = "joint",
    missing: str = "class",
) -> Prior | None:
    """Encode a user prior for ``n`` points; ``None`` stays ``None`` (plain t-SNE).

    Parameters
    ----------
    prior : array-like (n,) or (n, m), list of m arrays, pandas DataFrame, or None
        Class labels of any hashable type; several columns are several priors.
    n : int
        Number of points; the prior must have one label per point.
    beta, alpha : float or sequence of float
        β' or α' (give one; ``alpha`` wins if both are set and ``beta`` is the default).
        A sequence gives one value per prior with ``combine="product"``.
    combine : {"joint", "product"}
        Several priors become joint classes, or independent weights that multiply.
    missing : {"class", "error"}
        How to treat missing labels.
    """
    if prior is None:
        return None
    if combine not in ("joint", "product"):
        raise ValueError(f"combine must be 'joint' or 'product', got {combine!r}")
    if alpha is not None:
        beta = None
    columns = split_columns(prior, n)
    names = column_names(prior, len(columns))
    encoded = []
    for k, col in enumerate(columns):
        length = len(col)
        if length != n:
            raise ValueError(
                f"prior {names[k]} has {length} labels but X has {n} rows; give one label "
                "per row of X, in the same order"
            )
        encoded.append(encode_labels(col, missing=missing, name=f"prior {names[k]}"))

    if combine == "joint" or len(encoded) == 1:
        if len(encoded) == 1:
            codes, classes = encoded[0]
        else:
            stacked = np.stack([c for c, _ in encoded], axis=1)
            uniq, codes = np.unique(stacked, axis=0, return_inverse=True)
            codes = codes.reshape(-1).astype(np.int64)
            classes = np.empty(len(uniq), dtype=object)
            for g, row in enumerate(uniq):
                classes[g] = tuple(encoded[m][1][row[m]] for m in range(len(encoded)))
        encoded = [(codes, classes)]

    per_beta = _per_prior(beta, len(encoded), "beta")
    per_alpha = _per_prior(alpha, len(encoded), "alpha")
    alphas, betas = [], []
    for k, (codes, _) in enumerate(encoded):
        sizes = np.bincount(codes)
        a, b, rho = weights_from_sizes(sizes, beta=per_beta[k], alpha=per_alpha[k])
        if rho <= 0.0 or rho >= 1.0:
            what = "one class" if rho >= 1.0 else "every point in a class of its own"
            warnings.warn(
                f"the prior{'' if len(encoded) == 1 else f' {names[k]}'} puts {what}: it "
                "carries no information, so factoring it out leaves the map as it is "
                "without a prior",
                UserWarning,
                stacklevel=3,
            )
        alphas.append(a)
        betas.append(b)
    return Prior(
        codes=[c for c, _ in encoded],
        classes=[cl for _, cl in encoded],
        alphas=np.array(alphas),
        betas=np.array(betas),
    )


def _per_prior(value, m: int, name: str) -> list:
    if value is None or np.isscalar(value):
        return [value] * m
    values = list(value)
    if len(values) != m:
        raise ValueError(f"{name} has {len(values)} values but there are {m} priors")
    return values

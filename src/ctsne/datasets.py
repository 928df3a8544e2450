"""Data sets: the paper's synthetic examples, a bundled UCI Adult sample, scalable data.

Nothing is downloaded: the Adult sample ships with the package (``ctsne/data/``, with its
citation and licence notice) and the rest is generated from a seed.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

__all__ = [
    "ADULT_COLUMNS",
    "derive_adult_sample",
    "load_adult",
    "make_cca_example",
    "make_scaled",
    "make_synthetic",
]


def _simplex(k: int, dim: int) -> np.ndarray:
    """``k`` points in ``dim`` dimensions at unit pairwise distance (needs k ≤ dim + 1)."""
    if k > dim + 1:
        raise ValueError(f"{k} equidistant centres need at least {k - 1} dimensions")
    # The standard basis vectors of R^k are equidistant (√2 apart); centre them and
    # express them in an orthonormal basis of the (k−1)-dimensional plane they span.
    E = np.eye(k) - 1.0 / k
    U, _, _ = np.linalg.svd(E)
    V = E @ U[:, : k - 1] / np.sqrt(2.0)
    out = np.zeros((k, dim))
    out[:, : k - 1] = V
    return out


def _grid(k: int) -> np.ndarray:
    """``k`` points on the unit-spaced square grid in 2-D, as square as possible."""
    side = int(np.ceil(np.sqrt(k)))
    g = np.array([(i % side, i // side) for i in range(k)], dtype=float)
    return g - g.mean(axis=0)


def make_synthetic(
    n: int = 1000,
    n_clusters_14: int = 5,
    n_clusters_56: int = 4,
    center_scale_14: float = 4.5,
    center_scale_56: float = 3.5,
    cluster_std: float = 0.5,
    noise_std: float = 2.0,
    random_state: int | None = 0,
) -> Bunch:
    """The paper's synthetic example (§1): 10 dimensions, two independent cluster labels.

    Dimensions 1–4 hold ``n_clusters_14`` Gaussian clusters whose centres are the
    vertices of a regular simplex with edge ``center_scale_14`` (all equally far apart),
    dimensions 5–6 hold ``n_clusters_56`` clusters on a square grid with spacing
    ``center_scale_56``, labels assigned independently of the first, and dimensions 7–10
    are Gaussian noise with the larger standard deviation ``noise_std``. Clusters have
    standard deviation ``cluster_std`` per dimension.

    The defaults reproduce the paper's Figure 1 with seed 0: t-SNE shows the five
    clusters of dimensions 1–4 and only blurred traces of the four of dimensions 5–6,
    while ct-SNE with prior ``f14`` mixes the five and shows the four. Fixed centre
    layouts keep that true across seeds (random ones often overlap two clusters).

    Returns
    -------
    Bunch with ``X`` (n, 10), integer labels ``f14``, ``f56``, ``f16`` (the joint label,
    ``f14 * n_clusters_56 + f56``) and ``feature_names``.
    """
    rng = np.random.default_rng(random_state)
    f14 = rng.integers(0, n_clusters_14, n)
    f56 = rng.integers(0, n_clusters_56, n)
    c14 = center_scale_14 * _simplex(n_clusters_14, 4)
    c56 = center_scale_56 * _grid(n_clusters_56)
    X = np.empty((n, 10))
    X[:, 0:4] = c14[f14] + rng.normal(scale=cluster_std, size=(n, 4))
    X[:, 4:6] = c56[f56] + rng.normal(scale=cluster_std, size=(n, 2))
    X[:, 6:10] = rng.normal(scale=noise_std, size=(n, 4))
    return Bunch(
        X=X,
        f14=f14,
        f56=f56,
        f16=f14 * n_clusters_56 + f56,
        feature_names=[f"x{k}" for k in range(1, 11)],
    )


def make_cca_example(
    n: int = 1000,
    n_clusters: int = 10,
    n_features: int = 5,
    minor_fraction: float = 0.2,
    center_scale: float = 10.0,
    cluster_std: float = 0.5,
    split_distance: float = 3.0,
    random_state: int | None = 0,
) -> Bunch:
    """The paper's CCA-baseline data (App. C): clusters, each split in two along one axis.

    ``n_clusters`` Gaussian clusters of (nearly) equal size, centres drawn uniformly from
    ``[-center_scale, center_scale]`` in each of ``n_features`` dimensions. Every cluster
    is cut into a minor part (``minor_fraction`` of its points) and a major part,
    ``split_distance`` apart along one coordinate axis chosen at random per cluster.

    Returns
    -------
    Bunch with ``X`` (n, n_features), ``cluster`` (n,) in [0, n_clusters), ``subcluster``
    (n,) with 1 for the minor and 0 for the major part, ``split_axis`` (n_clusters,),
    ``centers`` (n_clusters, n_features) and ``feature_names``.
    """
    if not 0 < minor_fraction < 1:
        raise ValueError(f"minor_fraction must lie in (0, 1), got {minor_fraction}")
    rng = np.random.default_rng(random_state)
    centers = rng.uniform(-center_scale, center_scale, size=(n_clusters, n_features))
    split_axis = rng.integers(0, n_features, n_clusters)
    cluster = rng.permutation(np.arange(n) % n_clusters)
    subcluster = np.zeros(n, dtype=np.int64)
    for c in range(n_clusters):
        members = np.flatnonzero(cluster == c)
        n_minor = int(round(minor_fraction * len(members)))
        subcluster[rng.choice(members, n_minor, replace=False)] = 1
    # Minor part on the + side, major on the − side of the centre along the split axis.
    offset = np.zeros((n, n_features))
    offset[np.arange(n), split_axis[cluster]] = np.where(subcluster == 1, 0.5, -0.5)
    X = centers[cluster] + split_distance * offset
    X += rng.normal(scale=cluster_std, size=X.shape)
    return Bunch(
        X=X,
        cluster=cluster,
        subcluster=subcluster,
        split_axis=split_axis,
        centers=centers,
        feature_names=[f"x{k}" for k in range(1, n_features + 1)],
    )


def make_scaled(
    n: int,
    d: int,
    n_classes: int = 5,
    n_subclasses: int = 4,
    center_scale: float = 5.0,
    dtype=np.float32,
    random_state: int | None = 0,
    chunk_size: int = 65_536,
) -> Bunch:
    """Gaussian-cluster data of any size, for runtime measurements.

    ``n_classes`` clusters spread over all ``d`` dimensions (the prior one would factor
    out) plus an independent label of ``n_subclasses`` clusters in the first two
    dimensions, the rest unit noise. Rows are filled in chunks straight into the output
    array, so 10⁶ × 128 in float32 needs its 512 MB and little more.

    Returns
    -------
    Bunch with ``X`` (n, d) of ``dtype``, ``labels`` (n,) and ``sublabels`` (n,).
    """
    if d < 2:
        raise ValueError(f"d must be at least 2, got {d}")
    rng = np.random.default_rng(random_state)
    centers = rng.normal(scale=center_scale, size=(n_classes, d)).astype(dtype)
    sub_centers = np.zeros((n_subclasses, d), dtype=dtype)
    sub_centers[:, :2] = rng.normal(scale=center_scale / 2, size=(n_subclasses, 2))
    labels = rng.integers(0, n_classes, n)
    sublabels = rng.integers(0, n_subclasses, n)
    X = np.empty((n, d), dtype=dtype)
    noise_dtype = dtype if np.dtype(dtype) in (np.float32, np.float64) else np.float64
    for start in range(0, n, chunk_size):
        stop = min(n, start + chunk_size)
        block = X[start:stop]
        block[...] = rng.standard_normal((stop - start, d), dtype=noise_dtype)
        block += centers[labels[start:stop]]
        block += sub_centers[sublabels[start:stop]]
    return Bunch(X=X, labels=labels, sublabels=sublabels,
                 feature_names=[f"x{k}" for k in range(1, d + 1)])


# ---------------------------------------------------------------------------------------
# UCI Adult sample

ADULT_COLUMNS = ["age", "education-num", "hours-per-week", "ethnicity", "gender", "income"]
_ADULT_FILE = "adult_sample.csv"


def derive_adult_sample(
    source: str | Path,
    out: str | Path | None = None,
    n: int = 1000,
    random_state: int = 0,
) -> list[list[str]]:
    """Draw the bundled Adult sample from the UCI ``adult.data`` file (run once, offline).

    Keeps the paper's six attributes: age, education-num, hours-per-week, ethnicity
    (``White`` or ``Other``, from ``race``), gender (``sex``) and income (``>50K`` or
    ``<=50K``), for ``n`` rows drawn uniformly without replacement with the given seed.
    The bundled ``adult_sample.csv`` is ``derive_adult_sample(adult_csv, out, 1000, 0)``.

    Parameters
    ----------
    source : path
        The UCI file with a header line; fields separated by ", ".
    out : path, optional
        Where to write the sample as CSV (header + rows).
    n, random_state : int
        Sample size and seed.

    Returns
    -------
    The sampled rows (as strings), header first.
    """
    with open(source, newline="") as fh:
        rows = [[f.strip() for f in r] for r in csv.reader(fh, skipinitialspace=True) if r]
    header, body = rows[0], rows[1:]
    col = {name: header.index(name) for name in
           ("age", "education-num", "hours-per-week", "race", "sex", "Salary")}
    # The six attributes have no missing values ("?") in adult.data; check anyway so a
    # different source file cannot silently slip them in.
    body = [r for r in body if all(r[i] != "?" for i in col.values())]
    rng = np.random.default_rng(random_state)
    pick = np.sort(rng.choice(len(body), n, replace=False))
    sample = [ADULT_COLUMNS]
    for i in pick:
        r = body[i]
        sample.append([
            r[col["age"]],
            r[col["education-num"]],
            r[col["hours-per-week"]],
            "White" if r[col["race"]] == "White" else "Other",
            r[col["sex"]],
            r[col["Salary"]].rstrip("."),
        ])
    if out is not None:
        with open(out, "w", newline="") as fh:
            csv.writer(fh, lineterminator="\n").writerows(sample)
    return sample


def load_adult(standardize: bool = False) -> Bunch:
    """The bundled 1,000-row sample of UCI Adult with the paper's six attributes.

    Source: Becker and Kohavi (1996), "Adult", UCI Machine Learning Repository,
    https://doi.org/10.24432/C5XW20, licensed CC BY 4.0 (see ``ctsne/data/README.md``).

    Parameters
    ----------
    standardize : bool
        Scale every column of ``X`` to zero mean and unit variance, as needed before
        t-SNE so that the 0/1 attributes weigh as much as age or hours.

    Returns
    -------
    Bunch with ``X`` (1000, 6) float: age, education-num, hours-per-week and the 0/1
    indicators ethnicity = White, gender = Male, income > 50K; ``feature_names``;
    the string attributes ``ethnicity``, ``gender``, ``income``; the integer codes
    ``ethnicity_gender`` (joint prior); and ``rows``, the CSV rows as read (strings).
    """
    text = resources.files("ctsne").joinpath("data", _ADULT_FILE).read_text()
    rows = list(csv.reader(text.splitlines()))
    header, body = rows[0], rows[1:]
    if header != ADULT_COLUMNS:
        raise ValueError(f"unexpected columns in the bundled sample: {header}")
    cols = list(zip(*body, strict=True))
    ethnicity = np.array(cols[3])
    gender = np.array(cols[4])
    income = np.array(cols[5])
    X = np.column_stack([
        np.array(cols[0], dtype=float),
        np.array(cols[1], dtype=float),
        np.array(cols[2], dtype=float),
        (ethnicity == "White").astype(float),
        (gender == "Male").astype(float),
        (income == ">50K").astype(float),
    ])
    if standardize:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    _, eg = np.unique(np.char.add(np.char.add(ethnicity, "/"), gender), return_inverse=True)
    return Bunch(
        X=X,
        feature_names=["age", "education-num", "hours-per-week", "ethnicity=White",
                       "gender=Male", "income>50K"],
        ethnicity=ethnicity,
        gender=gender,
        income=income,
        ethnicity_gender=eg.ravel(),
        rows=body,
    )

"""Fuzz: the table reader and ``fit`` end in a result or a ValueError with a message.

Seeded random inputs (own generator, so a failure names its case and reproduces): tables
of random shape with numbers, text, missing values, NaN/inf spellings, ragged rows, quotes
and odd headers through :func:`read_table` and :func:`prepare_features` (what ``ctsne
embed`` does with a file); matrices of random shape and dtype with NaN/inf at random
places, labels of every type and parameters valid or not through
:class:`~ctsne.ConditionalTSNE` and :class:`~ctsne.ConditionalUMAP`. Every case must end
in a result (finite, of the right shape) or a ``ValueError`` (``DataError`` is one) whose
message is not empty: never another exception. About 20 s on one core.
"""

import math
import warnings

import numpy as np
import pytest

from ctsne import ConditionalTSNE, ConditionalUMAP
from ctsne.interfaces.files.features import prepare_features
from ctsne.interfaces.files.tables import read_table

CSV_CASES = 1000
FIT_CASES = {"tsne": 300, "umap": 120}


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _params(rng, table):
    """Parameters from ``table`` (name -> (valid values, invalid values)): all valid in
    half the cases, one invalid in the others (so that most cases reach the work)."""
    broken = _pick(rng, list(table) + [None] * len(table))
    return {name: _pick(rng, bad if name == broken else good)
            for name, (good, bad) in table.items()}


# ----------------------------------------------------------------------------- tables
CELLS = ["1", "-2", "3.5", "1e3", "-0.0", "1,5x", "abc", "A", "b", "", " ", "NA", "nan",
         "NaN", "inf", "-inf", "Infinity", "1e400", "-1e-400", "0x10", "1_000", "TRUE",
         "False", '"quoted, comma"', '"a ""b"""', "é", "日本", "\t", "None", "null", "?",
         "1.5.2", "+7", "  4  ", "9" * 40]


def _cell(rng, kind):
    if kind == "number":
        return repr(float(rng.normal() * 10.0 ** int(rng.integers(-5, 6))))
    if kind == "int":
        return str(int(rng.integers(-3, 4)))
    if kind == "text":
        return _pick(rng, ["red", "green", "blue", "x y", "é"])
    return _pick(rng, CELLS)


def _table_text(rng, sep):
    n_cols = int(rng.integers(0, 7))
    n_rows = int(rng.integers(0, 25))
    header = [_pick(rng, [f"c{j}", f"c{j}", f"c{j}", "", "c0", "id", "grp", "x y", "é"])
              for j in range(n_cols)]
    kinds = [_pick(rng, ["number", "number", "int", "text", "wild"]) for _ in header]
    lines = [sep.join(header)] if rng.random() < 0.95 else []
    for _ in range(n_rows):
        cells = [_cell(rng, kind if rng.random() < 0.9 else "wild") for kind in kinds]
        if rng.random() < 0.05:  # a ragged row
            cells = cells[:-1] if cells and rng.random() < 0.5 else cells + ["1"]
        lines.append(sep.join(cells))
    text = "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
    if rng.random() < 0.05:
        text = "\ufeff" + text  # a byte-order mark
    if rng.random() < 0.03:
        text = text.replace("\n", "\r\n")
    return text, header


def _check_error(exc, case):
    assert isinstance(exc, ValueError), (case, repr(exc))
    assert str(exc).strip(), (case, repr(exc))


def test_table_reader_fuzz(tmp_path):
    rng = np.random.default_rng(2021)
    outcomes = {"result": 0, "error": 0}
    for case in range(CSV_CASES):
        ext, sep = _pick(rng, [(".csv", ","), (".csv", ";"), (".tsv", "\t"), (".csv", "\t")])
        text, header = _table_text(rng, sep)
        path = tmp_path / f"t{case}{ext}"
        path.write_bytes(text.encode("utf-8") if rng.random() < 0.97
                         else text.encode("latin-1", "replace"))
        names = [h for h in header if h] or ["c0"]
        id_column = _pick(rng, names) if rng.random() < 0.2 else None
        labels = [_pick(rng, names)] if rng.random() < 0.3 else []
        columns = [_pick(rng, names + ["c*", "nope"])] if rng.random() < 0.15 else None
        described = (case, text[:300], id_column, labels, columns)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = read_table(path, id_column=id_column,
                                   sep=sep if rng.random() < 0.3 else None)
                feats = prepare_features(
                    table, columns, exclude=labels,
                    categorical=_pick(rng, ["onehot", "onehot", "error"]),
                    standardize=bool(rng.random() < 0.3),
                    drop_missing=bool(rng.random() < 0.3), label_columns=labels)
        except Exception as exc:  # noqa: BLE001 - the type is what is checked
            _check_error(exc, described)
            outcomes["error"] += 1
            continue
        X = feats.X
        assert X.ndim == 2 and X.dtype == np.float64, described
        assert np.all(np.isfinite(X)), described  # missing values raise or drop rows
        assert len(feats.names) == X.shape[1] and len(feats.rows) == X.shape[0], described
        assert feats.rows.max(initial=-1) < table.n_rows, described
        outcomes["result"] += 1
    # the generator reaches both ends (not every case an error, not every one clean)
    assert min(outcomes.values()) > CSV_CASES // 10, outcomes


# ----------------------------------------------------------------------------- fit
def _matrix(rng, n, p):
    kind = _pick(rng, ["float64"] * 30 + ["float32", "float16", "int64", "int8", "uint8",
                                         "bool", "object", "strings", "text", "complex",
                                         "list", "1d", "3d", "scaled"])
    X = rng.normal(size=(n, p))
    if kind == "1d":
        return X[:, 0] if p else np.zeros(n)
    if kind == "3d":
        return X[..., None]
    if kind == "scaled":
        return X * 10.0 ** float(rng.choice([-300, -150, 150, 300]))
    if kind == "object":
        return X.astype(object)
    if kind == "strings":
        return X.astype(str)
    if kind == "text":
        out = X.astype(object)
        if out.size:
            out[int(rng.integers(n)), int(rng.integers(p))] = "abc"
        return out
    if kind == "complex":
        return X.astype(complex)
    if kind == "list":
        return X.tolist()
    if kind in ("int64", "int8", "uint8"):
        return (X * 3).astype(kind)
    if kind == "bool":
        return X > 0
    X = X.astype(kind)
    if X.size and rng.random() < 0.3:  # NaN/inf at random places, a row or a column
        bad = _pick(rng, [np.nan, np.inf, -np.inf])
        where = _pick(rng, ["cell", "row", "column", "all"])
        i, j = int(rng.integers(n)), int(rng.integers(p))
        if where == "cell":
            X[i, j] = bad
        elif where == "row":
            X[i] = bad
        elif where == "column":
            X[:, j] = bad
        else:
            X[:] = bad
    if X.size and rng.random() < 0.1:
        X[:, : max(1, p // 2)] = 1.0  # constant columns
    if n > 2 and rng.random() < 0.1:
        X[1:] = X[0]  # all points identical (or a few distinct)
    return X


def _labels(rng, n):
    kind = _pick(rng, [None] * 6 + ["int"] * 4 + ["str"] * 4
                 + ["float_nan", "none_mixed", "bool", "mixed", "one_class", "all_missing",
                    "short", "2d", "list_of_two", "float", "scalar", "nested"])
    k = int(rng.integers(1, 4))
    codes = rng.integers(0, k, size=n)
    if kind is None:
        return None
    if kind == "int":
        return codes
    if kind == "str":
        return np.array([f"g{c}" for c in codes])
    if kind == "float":
        return codes.astype(float) + 0.5
    if kind == "float_nan":
        out = codes.astype(float)
        out[rng.random(n) < 0.2] = np.nan
        return out
    if kind == "none_mixed":
        return [None if rng.random() < 0.2 else f"g{c}" for c in codes]
    if kind == "bool":
        return codes > 0
    if kind == "mixed":
        return np.array([c if c % 2 else f"g{c}" for c in codes], dtype=object)
    if kind == "one_class":
        return np.zeros(n, dtype=int)
    if kind == "all_missing":
        return [None] * n
    if kind == "short":
        return codes[: max(0, n - 1)]
    if kind == "2d":
        return np.stack([codes, rng.integers(0, 2, size=n)], axis=1)
    if kind == "list_of_two":
        return [codes, [f"h{c}" for c in rng.integers(0, 2, size=n)]]
    if kind == "nested":
        return [[c] for c in codes]
    return 3  # a scalar


BAD_NUMBERS = [-1, 0, math.nan, math.inf, "5", None, 1e9, True]


def _tsne(rng, n):
    params = _params(rng, {
        "n_components": ([2, 2, 1, 3], [0, 4, 2.5, -1, "2"]),
        "perplexity": ([2.0, 3.0, 5.0], BAD_NUMBERS + [n, 0.5]),
        "beta": ([None, None, 0.01, 0.5, 1.0], [0, -0.1, math.nan, 2, "x"]),
        "alpha": ([None] * 4 + [2.0], [0.0, -1, math.inf]),
        "combine": (["joint", "product"], ["sum", None]),
        "method": (["auto", "exact", "bh", "fft"], ["nope", None]),
        "n_iter": ([0, 5, 20], [-1, 2.5, None]),
        "early_exaggeration_iter": ([0, 5, 10], [-3, math.nan]),
        "exaggeration": ([1.0, 4.0], [0, -2, math.inf]),
        "learning_rate": (["auto", 10.0], [0.0, -1.0, "fast"]),
        "init": (["pca", "random"], ["spectral", np.zeros((n, 5))]),
        "affinities": (["auto", "standard", "balanced", "revised"], ["x"]),
        "within_weight": ([None, None, 0.5, 0.9], [0.0, 1.5, -1]),
        "missing": (["class", "error"], ["ignore"]),
        "random_state": ([0, 1, None, 7], [-1, "seed"]),
    })
    return ConditionalTSNE(**params, n_jobs=1), params


def _umap(rng, n):
    params = _params(rng, {
        "n_neighbors": ([2, 3, 5, 15], [0, 1, -2, 2.5, "5"]),
        "n_components": ([2, 2, 1, 3], [0, -1]),
        "min_dist": ([0.0, 0.1, 0.5], [-0.1, math.nan, 5.0]),
        "beta": ([None, None, 0.01, 1.0], [-1.0, 3]),
        "n_epochs": ([5, 10, 20], [0, -1, 1.5]),
        "init": (["spectral", "pca", "random"], ["x", np.zeros((n, 9))]),
        "affinities": (["auto", "standard", "balanced"], ["revised?"]),
        "missing": (["class", "error"], ["ignore"]),
        "random_state": ([0, 1, None], [-1]),
    })
    return ConditionalUMAP(**params, n_jobs=1), params


@pytest.mark.parametrize("algorithm", list(FIT_CASES))
def test_fit_fuzz(algorithm):
    rng = np.random.default_rng({"tsne": 1, "umap": 2}[algorithm])
    outcomes = {"result": 0, "error": 0}
    for case in range(FIT_CASES[algorithm]):
        n = int(_pick(rng, [0, 1, 2, 3, 4, 6, 10, 15, 25] + [40] * 10))
        p = int(_pick(rng, [0, 1, 2, 3] + [5] * 5))
        X = _matrix(rng, n, p)
        prior = _labels(rng, n)
        model, params = (_tsne if algorithm == "tsne" else _umap)(rng, n)
        described = (algorithm, case, n, p, type(X).__name__, getattr(X, "dtype", None),
                     None if prior is None else type(prior).__name__, params)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Y = model.fit_transform(X, prior)
        except Exception as exc:  # noqa: BLE001 - the type is what is checked
            _check_error(exc, described)
            outcomes["error"] += 1
            continue
        assert isinstance(Y, np.ndarray) and Y.ndim == 2, described
        assert Y.shape[0] == np.asarray(X).shape[0] and np.all(np.isfinite(Y)), described
        outcomes["result"] += 1
    assert min(outcomes.values()) > FIT_CASES[algorithm] // 10, outcomes


# ----------------------------------------------------------------------------- found by it
def test_a_table_that_is_not_utf8_is_named(tmp_path):
    # raw "'utf-8' codec can't decode byte 0xe9 in position 6" before, from the separator
    # detection, without the file or the fix
    path = tmp_path / "latin.csv"
    path.write_bytes("a,b\n1,\xe9t\xe9\n".encode("latin-1"))
    for sep in (None, ","):
        with pytest.raises(ValueError, match=r"latin\.csv: not UTF-8 text .*save the table as "
                           "UTF-8"):
            read_table(path, sep=sep)


"""Reading tables, data hygiene and atomic writing (ctsne.interfaces.files)."""

import os
import sys

import numpy as np
import pytest

from ctsne.interfaces.files import features, formats, tables, writing

CSV = """a,b,kind,label
1.5,2,x,u
 2.5 ,NA,y,v
3.5,4,x,
4.5,5,y,u
"""


@pytest.fixture
def csv_path(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(CSV)
    return p


def test_file_format():
    assert formats.file_format("a/b.CSV") == "csv"
    assert formats.file_format("x.tsv.gz") == "tsv"
    assert formats.file_format("x.pq") == "parquet"
    with pytest.raises(formats.DataError, match="unknown file type"):
        formats.file_format("x.xlsx")


@pytest.mark.parametrize("hide_pandas", [False, True])
def test_read_csv_types_and_missing(csv_path, monkeypatch, hide_pandas):
    if hide_pandas:  # the csv-module reader must give the same table as pandas' parser
        monkeypatch.setitem(sys.modules, "pandas", None)
    t = tables.read_table(csv_path)
    assert list(t.columns) == ["a", "b", "kind", "label"]
    np.testing.assert_array_equal(t.columns["a"], [1.5, 2.5, 3.5, 4.5])
    assert t.columns["b"].dtype == np.float64 and np.isnan(t.columns["b"][1])
    assert t.columns["kind"].tolist() == ["x", "y", "x", "y"]
    assert t.columns["label"].tolist() == ["u", "v", None, "u"]
    np.testing.assert_array_equal(t.ids, np.arange(4))


def test_unnamed_first_column_is_ids(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(",a,b\nr1,1,2\nr2,3,4\nr3,5,6\n")
    t = tables.read_table(p)
    assert t.ids.tolist() == ["r1", "r2", "r3"] and list(t.columns) == ["a", "b"]
    p.write_text("name,a\nr1,1\nr1,2\n")
    with pytest.raises(formats.DataError, match="repeated ids"):
        tables.read_table(p, id_column="name")


def test_ragged_csv_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    p = tmp_path / "t.csv"
    p.write_text("a,b\n1,2\n3\n")
    with pytest.raises(formats.DataError, match="line 3 has 1 fields"):
        tables.read_table(p)


def test_onehot_and_error(csv_path):
    t = tables.read_table(csv_path)
    f = features.prepare_features(t, exclude=["label", "b"])
    assert f.names == ["a", "kind=x", "kind=y"]
    np.testing.assert_array_equal(f.X[:, 1], [1, 0, 1, 0])
    assert any("one-hot" in n for n in f.notes)
    with pytest.raises(formats.DataError, match="'kind' is not numeric.*--exclude kind"):
        features.prepare_features(t, exclude=["label", "b"], categorical="error")


def test_too_many_levels_looks_like_an_id(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("name,a\n" + "".join(f"n{i},{i}\n" for i in range(150)))
    with pytest.raises(formats.DataError, match="150 distinct text values.*--id name"):
        features.prepare_features(tables.read_table(p))
    assert features.prepare_features(tables.read_table(p, id_column="name")).X.shape == (150, 1)


def test_missing_values_error_names_rows_and_columns(csv_path):
    t = tables.read_table(csv_path)
    with pytest.raises(formats.DataError, match=r"row 1 .*column\(s\) 'b'.*--drop-missing"):
        features.prepare_features(t, exclude=["label"])


def test_drop_missing_includes_label_columns(csv_path):
    t = tables.read_table(csv_path)
    f = features.prepare_features(t, exclude=["label"], drop_missing=True, label_columns=["label"])
    np.testing.assert_array_equal(f.rows, [0, 3])
    assert f.X.shape == (2, 4) and "dropped 2 of 4 rows" in f.notes[-1]


def test_standardize_drops_constant_columns(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,c,b\n1,7,2\n2,7,4\n3,7,9\n")
    f = features.prepare_features(tables.read_table(p), standardize=True)
    assert f.names == ["a", "b"] and "constant column(s) 'c'" in f.notes[0]
    np.testing.assert_allclose(f.X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(f.X.std(axis=0), 1)


def test_column_patterns_and_explicit_prior(csv_path):
    t = tables.read_table(csv_path)
    assert features.prepare_features(t, columns=["a*"], exclude=["label"]).names == ["a"]
    # a column named explicitly is used even when excluded by default
    f = features.prepare_features(t, columns=["kind"], exclude=["kind"])
    assert f.names == ["kind=x", "kind=y"]
    with pytest.raises(formats.DataError, match="no feature column 'zz'"):
        features.prepare_features(t, columns=["zz"])


def test_npz_reading(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    p = tmp_path / "d.npz"
    np.savez(p, X=X, lab=np.array(["a", "b", "a", "b"]), ids=np.array(["p", "q", "r", "s"]))
    t = tables.read_table(p)
    np.testing.assert_array_equal(t.matrix, X)
    assert t.matrix_names == ["x0", "x1", "x2"] and t.ids.tolist() == ["p", "q", "r", "s"]
    assert t.columns["lab"].tolist() == ["a", "b", "a", "b"]
    assert features.prepare_features(t, columns=["x1", "x2"]).X.shape == (4, 2)
    np.savez(p, X=X, lab=np.zeros(3))
    with pytest.raises(formats.DataError, match="'lab' has 3 entries but 'X' has 4 rows"):
        tables.read_table(p)
    np.savez(p, a=np.zeros(3))
    with pytest.raises(formats.DataError, match="expected a 2-D feature array"):
        tables.read_table(p)


def test_unreadable_files(tmp_path):
    with pytest.raises(formats.DataError, match="no such file"):
        tables.read_table(tmp_path / "none.csv")
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not numpy at all")
    with pytest.raises(formats.DataError, match="cannot read as npy"):
        tables.read_table(bad)
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(formats.DataError, match="is a folder"):
        tables.read_table(tmp_path / "d.csv")


@pytest.mark.parametrize("name", ["e.csv", "e.tsv.gz", "e.npz", "e.parquet", "e.h5ad"])
def test_embedding_roundtrip(tmp_path, name):
    if name.endswith("parquet"):
        pytest.importorskip("pyarrow")
    if name.endswith("h5ad"):
        pytest.importorskip("anndata")
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(5, 2))
    ids = np.array(["a", "b", "c", "d", "e"], dtype=object)
    labels = {"g": np.array(["u", None, "v", "u", "v"], dtype=object),
              "h": np.array([1.0, 2.0, np.nan, 1.0, 2.0])}
    writing.write_embedding(tmp_path / name, Y, ids, labels)
    t = tables.read_embedding(tmp_path / name)
    np.testing.assert_allclose(t.matrix, Y)
    assert t.ids.astype(str).tolist() == ids.tolist()
    assert [v if v else None for v in t.columns["g"].tolist()] == labels["g"].tolist()
    np.testing.assert_array_equal(t.columns["h"], labels["h"])


def test_npy_output_is_the_embedding(tmp_path):
    Y = np.ones((4, 3))
    writing.write_embedding(tmp_path / "e.npy", Y, np.arange(4))
    np.testing.assert_array_equal(np.load(tmp_path / "e.npy"), Y)


def test_read_embedding_needs_coordinates(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("id,u,v\n0,1,2\n1,3,4\n")
    with pytest.raises(formats.DataError, match="--coords"):
        tables.read_embedding(p)
    np.testing.assert_array_equal(tables.read_embedding(p, coords=["v", "u"]).matrix,
                                  [[2, 1], [4, 3]])


def test_no_overwrite_without_force(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("keep me")
    with pytest.raises(formats.DataError, match="exists; pass --force"):
        writing.write_embedding(p, np.zeros((2, 2)), np.arange(2))
    assert p.read_text() == "keep me"
    writing.write_embedding(p, np.zeros((2, 2)), np.arange(2), force=True)
    assert p.read_text().startswith("id,ctsne1,ctsne2")


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError), writing.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer died")
    assert os.listdir(tmp_path) == []
    with writing.atomic_path(target) as tmp:
        tmp.write_text("whole")
    assert target.read_text() == "whole" and os.listdir(tmp_path) == ["out.csv"]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_check_output(tmp_path):
    with pytest.raises(formats.DataError, match="does not exist"):
        writing.check_output(tmp_path / "nodir" / "e.csv")
    with pytest.raises(formats.DataError, match="use .png"):
        writing.check_output(tmp_path / "fig.gif", kinds=("png", "svg"))


@pytest.mark.parametrize("module, name, message", [
    ("pyarrow.parquet", "d.parquet",
     "reading .parquet needs pyarrow: pip install 'ctsne[parquet]'"),
    ("anndata", "d.h5ad", "reading .h5ad needs anndata: pip install 'ctsne[anndata]'"),
])
def test_missing_optional_dependency(tmp_path, monkeypatch, module, name, message):
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    (tmp_path / name).write_bytes(b"x")
    with pytest.raises(formats.DataError) as err:
        tables.read_table(tmp_path / name)
    assert str(err.value) == message


def test_read_ids(tmp_path):
    p = tmp_path / "ids.txt"
    p.write_text("a\n\n# comment\nb  # trailing\n 3\n")
    assert tables.read_ids(p).tolist() == ["a", "b", "3"]


def test_h5ad_features_and_obs(tmp_path):
    ad = pytest.importorskip("anndata")
    pd = pytest.importorskip("pandas")
    X = np.arange(20.0).reshape(5, 4)
    a = ad.AnnData(X=X, obs=pd.DataFrame({"c": pd.Categorical(list("aabba")),
                                          "n": [1, 2, 3, 4, 5]},
                                         index=[f"cell{i}" for i in range(5)]))
    a.obsm["X_pca"] = X[:, :2]
    a.write_h5ad(tmp_path / "a.h5ad")
    t = tables.read_table(tmp_path / "a.h5ad")
    np.testing.assert_array_equal(t.matrix, X)
    assert t.columns["c"].tolist() == list("aabba") and t.ids[0] == "cell0"
    assert tables.read_table(tmp_path / "a.h5ad", obsm="X_pca").matrix.shape == (5, 2)
    with pytest.raises(formats.DataError, match=r"no obsm\['nope'\] \(have: X_pca\)"):
        tables.read_table(tmp_path / "a.h5ad", obsm="nope")


def test_new_anndata_from_a_table(tmp_path):
    ad = pytest.importorskip("anndata")
    X = np.arange(12.0).reshape(4, 3)
    feats = features.Features(X, ["a", "b", "c"], np.arange(4))
    writing.write_embedding(tmp_path / "e.h5ad", np.ones((4, 2)), np.array([5, 6, 7, 8]),
                       {"g": np.array(["u", "v", "u", None], dtype=object)}, features=feats)
    a = ad.read_h5ad(tmp_path / "e.h5ad")
    np.testing.assert_array_equal(a.X, X)
    assert list(a.var_names) == ["a", "b", "c"] and list(a.obs_names) == ["5", "6", "7", "8"]
    assert a.obsm["X_ctsne"].shape == (4, 2) and a.obs["g"].tolist()[:3] == ["u", "v", "u"]

"""``ctsne embed NEWDATA --reference model.pkl``: new rows into a saved map, in process."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from ctsne.interfaces.cli.main import main
from ctsne.interfaces.files import tables, writing

FAST = ["--n-iter", "100", "--exaggeration-iter", "50", "--perplexity", "10", "--seed", "0",
        "--threads", "1", "-q"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    X, cluster = make_blobs(330, n_features=5, centers=3, cluster_std=1.0, random_state=0)
    batch = np.array(["a", "b"])[np.random.default_rng(0).integers(0, 2, 330)]
    for name, rows in (("train.csv", slice(0, 300)), ("new.csv", slice(300, 330))):
        cols = {"name": np.array([f"r{i}" for i in range(330)])[rows],
                **{f"x{j}": X[rows, j] for j in range(5)}, "batch": batch[rows],
                "cluster": cluster[rows]}
        writing.write_columns(d / name, cols)
    assert main(["embed", str(d / "train.csv"), "--id", "name", "--prior", "batch",
                 "--exclude", "cluster", "--save-model", str(d / "m.pkl"),
                 "-o", str(d / "emb.csv"), *FAST]) == 0
    return d, X, batch, cluster


def test_places_new_rows_like_the_python_api(saved):
    d, X, batch, cluster = saved
    assert main(["embed", str(d / "new.csv"), "--id", "name", "--prior", "batch",
                 "--exclude", "cluster", "--keep", "cluster", "--reference", str(d / "m.pkl"),
                 "-o", str(d / "new_emb.csv"), "-q"]) == 0
    out = tables.read_embedding(d / "new_emb.csv")
    with open(d / "m.pkl", "rb") as fh:
        model = pickle.load(fh)
    np.testing.assert_allclose(out.matrix, model.transform(X[300:], batch[300:]), rtol=1e-9,
                               atol=1e-9)
    assert list(out.ids) == [f"r{i}" for i in range(300, 330)]
    assert out.columns["cluster"].astype(int).tolist() == cluster[300:].tolist()

    assert main(["embed", str(d / "new.csv"), "--id", "name", "--prior", "batch",
                 "--exclude", "cluster", "--reference", str(d / "m.pkl"), "--with-reference",
                 "-o", str(d / "all.csv"), "-q"]) == 0
    both = tables.read_embedding(d / "all.csv")
    ref = tables.read_embedding(d / "emb.csv")
    assert len(both.ids) == 330 and list(both.columns["set"][[0, -1]]) == ["reference", "new"]
    np.testing.assert_allclose(both.matrix[:300], ref.matrix, rtol=1e-12)  # map unmoved
    np.testing.assert_allclose(both.matrix[300:], out.matrix, rtol=1e-12)
    assert list(both.columns["batch"][:300]) == list(batch[:300])


@pytest.mark.parametrize("extra, phrase", [
    (["--exclude", "cluster", "x0"], "lacks the model's feature"),
    (["--exclude", "batch"], "not fitted on"),
    (["--exclude", "cluster", "--standardize"], "--standardize cannot be used"),
])
def test_reference_errors(saved, capsys, extra, phrase):
    d = saved[0]
    assert main(["embed", str(d / "new.csv"), "--id", "name", "--reference", str(d / "m.pkl"),
                 "-o", str(d / "bad.csv"), "-q", *extra]) == 2
    assert phrase in capsys.readouterr().err
    assert not (d / "bad.csv").exists()


def test_with_reference_needs_reference(saved, capsys):
    d = saved[0]
    assert main(["embed", str(d / "new.csv"), "--with-reference", "-o", str(d / "x.csv"),
                 "-q"]) == 2
    assert "--with-reference needs --reference" in capsys.readouterr().err

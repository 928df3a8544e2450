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
    # (the model's own columns are taken by default: batch, a text label, is none)
    (["--features", "x*", "cluster"], "not fitted on"),
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


def _new_rows(d, name, rows, ids=None, batch=None):
    """Rows ``rows`` of the fixture's table (new.csv's columns) as ``name``, with other
    ids or batch labels."""
    t = tables.read_table(d / "train.csv" if rows.start < 300 else d / "new.csv")
    off = 0 if rows.start < 300 else 300
    sel = slice(rows.start - off, rows.stop - off)
    cols = {"name": np.asarray(ids if ids is not None else t.columns["name"][sel]),
            **{f"x{j}": t.columns[f"x{j}"][sel] for j in range(5)},
            "batch": np.asarray(batch if batch is not None else t.columns["batch"][sel]),
            "cluster": t.columns["cluster"][sel]}
    writing.write_columns(d / name, cols, force=True)
    return d / name


def test_with_reference_keeps_the_maps_ids(saved, capsys):
    # issue 21 item 11: the map's points were written as reference:0, reference:1, …
    d = saved[0]
    args = ["--id", "name", "--prior", "batch", "--exclude", "cluster", "--reference",
            str(d / "m.pkl"), "--with-reference"]
    assert main(["embed", str(d / "new.csv"), *args, "-o", str(d / "ids.csv"), "-q"]) == 0
    both = tables.read_embedding(d / "ids.csv")
    assert list(both.ids[:3]) == ["r0", "r1", "r2"] and both.ids[299] == "r299"
    assert list(both.ids[300:303]) == ["r300", "r301", "r302"]
    # ids that are also new rows' ids: the map's get a prefix, so that ids stay unique
    clash = _new_rows(d, "clash.csv", slice(300, 330), ids=[f"r{i}" for i in range(30)])
    assert main(["embed", str(clash), *args, "-o", str(d / "clash_emb.csv"), "-f"]) == 0
    assert "written as reference:ID" in capsys.readouterr().err
    both = tables.read_embedding(d / "clash_emb.csv")
    assert list(both.ids[:2]) == ["reference:r0", "reference:r1"] and both.ids[300] == "r0"


def test_reference_plot_keeps_the_maps_colours(saved, monkeypatch):
    # issue 21 item 11: the new points' plot coloured their labels in their own order, so
    # new rows of batch 'b' only were drawn in the map's colour of 'a'
    from ctsne.plotting import figures

    d = saved[0]
    only_b = _new_rows(d, "only_b.csv", slice(300, 330), batch=["b"] * 30)
    drawn = []
    real = figures.plot_embedding
    monkeypatch.setattr(figures, "plot_embedding",
                        lambda *a, **k: drawn.append(real(*a, **k)) or drawn[-1])
    assert main(["embed", str(only_b), "--id", "name", "--prior", "batch", "--exclude",
                 "cluster", "--reference", str(d / "m.pkl"), "--plot", str(d / "b.png"),
                 "-o", str(d / "b.csv"), "-q"]) == 0
    # collections[0]: the map the points were placed into, faded (issue 51, item 8);
    # collections[1]: the new points
    colours = np.unique(drawn[0].collections[1].get_facecolors(), axis=0)
    # the map's plot colours its labels a, b in this order (sorted), b second
    np.testing.assert_allclose(colours, [figures.label_colors(["a", "b"])["b"]])
    from matplotlib.legend import Legend

    legends = [[t.get_text() for t in leg.get_texts()]
               for leg in drawn[0].get_children() if isinstance(leg, Legend)]
    assert legends == [["b"], ["map (faded)"]]


def test_unseen_prior_labels_name_the_column(saved, capsys):
    # issue 21 item 11: "prior_new column 0" instead of the column's name
    d = saved[0]
    new = _new_rows(d, "unseen.csv", slice(300, 330), batch=["a", "zz"] * 15)
    assert main(["embed", str(new), "--id", "name", "--prior", "batch", "--exclude",
                 "cluster", "--reference", str(d / "m.pkl"), "-o", str(d / "u.csv"),
                 "-q"]) == 0
    err = capsys.readouterr().err
    assert "prior_new column 'batch': 1 label(s) not seen in training ('zz')" in err, err
    assert "column 0" not in err

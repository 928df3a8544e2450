"""``ctsne embed NEW --reference MODEL --plot --color COL`` with a label column the model
did not keep (issue 59, item 1): it drew nothing and ended in ``KeyError: None``."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from ctsne.interfaces.cli.main import main
from ctsne.interfaces.files import tables, writing

FAST = ["--n-iter", "100", "--exaggeration-iter", "50", "--perplexity", "10", "--seed", "0",
        "--threads", "1", "-q"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """ref.csv fitted with --prior stim only (marker_label neither kept nor coloured, so
    the model holds no marker_label labels), and new.csv with the same columns."""
    d = tmp_path_factory.mktemp("refplot")
    X, cluster = make_blobs(140, n_features=4, centers=3, random_state=0)
    stim = np.array(["ctrl", "stim"])[np.random.default_rng(0).integers(0, 2, 140)]
    marker = np.array(["CD4", "CD8", "B"])[cluster]
    ids = np.array([f"c{i}" for i in range(140)])
    for name, rows in (("ref.csv", slice(0, 120)), ("new.csv", slice(120, 140))):
        writing.write_columns(d / name, {"cell": ids[rows],
                                         **{f"g{j}": X[rows, j] for j in range(4)},
                                         "stim": stim[rows], "marker_label": marker[rows]})
    assert main(["embed", str(d / "ref.csv"), "--id", "cell", "--prior", "stim",
                 "-o", str(d / "ref_emb.csv"), "--save-model", str(d / "ref.pkl"),
                 *FAST]) == 0
    return d, marker[120:]


@pytest.mark.parametrize("extra", [[], ["--with-reference"]])
def test_color_by_a_label_the_model_did_not_keep(fitted, tmp_path, extra):
    import matplotlib.image

    d, marker = fitted
    out, png = tmp_path / "n.csv", tmp_path / "r.png"
    assert main(["embed", str(d / "new.csv"), "--id", "cell", "--prior", "stim",
                 "--reference", str(d / "ref.pkl"), "-o", str(out), "--plot", str(png),
                 "--color", "marker_label", "-q", *extra]) == 0
    assert png.stat().st_size > 0
    img = matplotlib.image.imread(png)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    got = tables.read_embedding(out)
    assert list(got.columns["marker_label"][-20:]) == list(marker)
    assert list(got.ids[-20:]) == [f"c{i}" for i in range(120, 140)]


def test_unknown_color_column_fails_before_any_work(fitted, tmp_path, capsys):
    d = fitted[0]
    out, png = tmp_path / "n.csv", tmp_path / "r.png"
    assert main(["embed", str(d / "new.csv"), "--id", "cell", "--prior", "stim",
                 "--reference", str(d / "ref.pkl"), "-o", str(out), "--plot", str(png),
                 "--color", "marker_lable", "-q"]) == 2
    err = capsys.readouterr().err
    assert "no column 'marker_lable'" in err
    assert "'marker_label'" in err and "'stim'" in err and "'g0'" in err
    assert "Traceback" not in err
    assert not out.exists() and not png.exists()


def test_background_without_labels_takes_a_categorical_colour():
    """The figure-level cause: a map (background) without labels for a categorical
    --color column."""
    from ctsne.plotting.figures import plot_embedding

    rng = np.random.default_rng(0)
    ax = plot_embedding(rng.normal(size=(6, 2)), np.array(["a", "b", "a", "c", "b", "a"]),
                        color_name="marker_label", background=rng.normal(size=(30, 2)))
    assert len(ax.collections) == 2  # the faded map, then the points
    ax.figure.clf()


def test_an_h5ad_is_read_by_scanpys_rule_and_the_cli_says_which_matrix(tmp_path, capsys):
    # the same object gave .X (765 genes) to ctsne embed and obsm["X_pca"] to tl.ctsne
    anndata = pytest.importorskip("anndata")
    import pandas as pd

    from ctsne.interfaces.cli.main import main

    rng = np.random.default_rng(0)
    obs = pd.DataFrame({"phase": rng.choice(["G1", "S"], 80)},
                       index=[f"c{i}" for i in range(80)])
    adata = anndata.AnnData(rng.normal(size=(80, 60)), obs=obs,
                            obsm={"X_pca": rng.normal(size=(80, 5))})
    adata.write_h5ad(tmp_path / "a.h5ad")
    out = tmp_path / "e.csv"
    assert main(["embed", str(tmp_path / "a.h5ad"), "--prior", "phase", "--perplexity", "5",
                 "--n-iter", "10", "-o", str(out), "--save-model", str(tmp_path / "m.pkl")]) == 0
    assert "embedding obsm['X_pca'] of" in capsys.readouterr().err
    import pickle

    with open(tmp_path / "m.pkl", "rb") as fh:
        model = pickle.load(fh)
    assert model.n_features_in_ == 5  # the PCs, not the 60 variables


def test_every_output_keeps_the_label_columns_and_score_reads_them(fitted, tmp_path, capsys):
    """Issue 59, item 4: a plain run wrote only the id and the coordinates, so ``ctsne
    score --labels stim`` on it failed with "no column 'stim'"."""
    d, _ = fitted
    plain, placed = tmp_path / "plain.csv", tmp_path / "placed.csv"
    assert main(["embed", str(d / "ref.csv"), "--id", "cell", "-o", str(plain), *FAST]) == 0
    got = tables.read_embedding(plain)
    assert {"stim", "marker_label"} <= set(got.columns)
    assert main(["embed", str(d / "new.csv"), "--id", "cell", "--prior", "stim",
                 "--reference", str(d / "ref.pkl"), "-o", str(placed), "-q"]) == 0
    assert "marker_label" in tables.read_embedding(placed).columns
    capsys.readouterr()
    assert main(["score", str(plain), str(d / "ref_emb.csv"), "--labels", "stim"]) == 0
    assert "stim" in capsys.readouterr().out

"""Every method's saved model on the command line (issue 51, items 4, 6 and 8): saved by
``embed --save-model``, it places new rows (``--reference``), resumes where the method
allows (a t-SNE; UMAP and LargeVis say why not), opens in the explorer (``--model``), and
is saved quiet; an ``.h5ad`` output holds each method's map under its own key with a
record that describes it, replacing a stale one."""

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from ctsne.interfaces.cli.main import main
from ctsne.interfaces.files import tables, writing

N = 160
ALGORITHMS = ["tsne", "umap", "largevis"]
# a short run of each method
FAST = {"tsne": ["--n-iter", "30", "--exaggeration-iter", "20", "--perplexity", "10"],
        "umap": ["--n-epochs", "20", "--n-neighbors", "10"],
        "largevis": ["--n-epochs", "20", "--perplexity", "10"]}
KEYS = {"tsne": "X_ctsne", "umap": "X_cumap", "largevis": "X_clargevis"}
CLASSES = {"tsne": "ConditionalTSNE", "umap": "ConditionalUMAP",
           "largevis": "ConditionalLargeVis"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A table of three groups with a text prior ``batch``; the first 130 rows to fit, the
    last 30 to place."""
    d = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(0)
    group = np.arange(N) % 3
    X = rng.normal(size=(N, 4)) + 4 * group[:, None]
    batch = np.array(["a", "b"])[rng.integers(0, 2, N)]
    cols = {"name": np.array([f"r{i}" for i in range(N)]),
            **{f"x{j}": X[:, j] for j in range(4)}, "batch": batch}
    for name, rows in (("train.csv", slice(0, 130)), ("new.csv", slice(130, N))):
        writing.write_columns(d / name, {k: v[rows] for k, v in cols.items()})
    return d


def _fit(d, algorithm, *extra):
    model = d / f"{algorithm}.pkl"
    if not model.exists():
        assert main(["embed", str(d / "train.csv"), "--id", "name", "--prior", "batch",
                     "--algorithm", algorithm, "-o", str(d / f"{algorithm}.csv"),
                     "--save-model", str(model), "--seed", "0", "--threads", "1", "-q",
                     *FAST[algorithm], *extra]) == 0
    return model


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_saved_model_places_new_rows(data, algorithm, capsys):
    """Was: "not a fitted ConditionalTSNE model" (exit 2) for UMAP and LargeVis."""
    model_path = _fit(data, algorithm)
    out = data / f"placed_{algorithm}.csv"
    assert main(["embed", str(data / "new.csv"), "--id", "name", "--prior", "batch",
                 "--reference", str(model_path), "-o", str(out), "--threads", "1",
                 "-q"]) == 0, capsys.readouterr().err
    placed = tables.read_embedding(out)
    with open(model_path, "rb") as fh:
        model = pickle.load(fh)
    assert type(model).__name__ == CLASSES[algorithm]
    new = tables.read_table(data / "new.csv", id_column="name")
    X = np.column_stack([new.columns[f"x{j}"] for j in range(4)])
    np.testing.assert_allclose(placed.matrix, model.transform(X, new.columns["batch"]),
                               rtol=1e-9, atol=1e-9)
    assert list(placed.ids) == [f"r{i}" for i in range(130, N)]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_saved_model_resumes_where_the_method_allows(data, algorithm, capsys):
    """t-SNE goes on; UMAP and LargeVis (was: "--resume is an option of t-SNE", or "not
    a fitted ConditionalTSNE model") say why their run cannot go on and what to do."""
    model_path = _fit(data, algorithm)
    out = data / f"resumed_{algorithm}.csv"
    argv = ["embed", str(data / "train.csv"), "--id", "name", "--resume", str(model_path),
            "-o", str(out), "--threads", "1", "-q"]
    if algorithm == "tsne":
        assert main([*argv, "--n-iter", "10", "--save-model",
                     str(data / "resumed.pkl")]) == 0, capsys.readouterr().err
        with open(data / "resumed.pkl", "rb") as fh:
            assert pickle.load(fh).n_iter_ == 50 + 10
        return
    for extra in ([], ["--algorithm", algorithm]):
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err
        assert "cannot be resumed" in err and "--n-epochs" in err
        assert f"--reference {model_path}" in err and not out.exists()
    # a t-SNE model resumed as another method: said so
    as_other = [str(_fit(data, "tsne")) if a == str(model_path) else a for a in argv]
    assert main([*as_other, "--algorithm", algorithm]) == 2
    assert "holds a ct-SNE map" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_saved_model_is_quiet(data, algorithm, capsys):
    """A model saved by the CLI kept ``verbose=True``: ``transform`` in a script printed
    progress bars."""
    with open(_fit(data, algorithm), "rb") as fh:
        model = pickle.load(fh)
    assert model.verbose is False
    capsys.readouterr()
    model.transform(model.training_data_[:5], np.array(["a"] * 5))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_saved_model_opens_in_the_explorer(data, algorithm, capsys):
    pytest.importorskip("bokeh")
    from ctsne.interfaces.cli.main import build_parser
    from ctsne.interfaces.explorer.command import start

    model_path = _fit(data, algorithm)
    with open(model_path, "rb") as fh:
        model = pickle.load(fh)
    handle = start(build_parser().parse_args(
        ["explore", str(data / "train.csv"), "--id", "name", "--model", str(model_path),
         "--no-browser", "--out", str(data / f"explore_{algorithm}")]))
    try:
        s, ex = handle.explorer.session, handle.explorer
        assert len(s.steps) == 1
        step = s.steps[0]
        np.testing.assert_allclose(step.embedding, model.embedding_[:, :2])
        assert step.prior == ["batch"] and step.method == algorithm
        assert step.beta == pytest.approx(model.beta_)
        assert ex.method == algorithm  # the page proposes the model's method next
        assert s.feature_names == [f"x{j}" for j in range(4)]
    finally:
        handle.stop()
    # the model's prior is the first map's: --prior as well is refused
    with pytest.raises(ValueError, match="the first map is the --model's"):
        start(build_parser().parse_args(
            ["explore", str(data / "train.csv"), "--id", "name", "--model", str(model_path),
             "--prior", "batch", "--no-browser"]))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_h5ad_output_key_and_record_per_method(data, algorithm, tmp_path):
    """Each method's map under the key ctsne.tl writes (was: X_ctsne for all), with a
    record in uns that describes it; an input's stale record under that key is replaced
    (was: the new obsm['X_ctsne'] beside the old map's uns['X_ctsne'])."""
    ad = pytest.importorskip("anndata")
    import pandas as pd

    table = tables.read_table(data / "train.csv", id_column="name")
    X = np.column_stack([table.columns[f"x{j}"] for j in range(4)])
    adata = ad.AnnData(X=X, obs=pd.DataFrame({"batch": table.columns["batch"]},
                                             index=[str(i) for i in table.ids]))
    key = KEYS[algorithm]
    adata.obsm[key] = np.zeros((len(X), 2))
    adata.uns[key] = {"params": {"prior": "another", "beta": 0.5}, "alpha": 9.0}
    adata.write_h5ad(tmp_path / "in.h5ad")
    assert main(["embed", str(tmp_path / "in.h5ad"), "--prior", "batch", "--algorithm",
                 algorithm, "-o", str(tmp_path / "out.h5ad"), "--seed", "0", "--threads",
                 "1", "-q", *FAST[algorithm]]) == 0
    out = ad.read_h5ad(tmp_path / "out.h5ad")
    assert set(out.obsm) == {key}
    rec = json.loads(json.dumps(out.uns[key], default=lambda v: np.asarray(v).tolist()))
    assert rec["method"] == CLASSES[algorithm]
    assert list(rec["params"]["prior"]) == ["batch"] and rec["beta"] == pytest.approx(0.01)
    assert rec["alpha"] != 9.0 and rec["params"]["representation"] == "X"
    assert np.abs(out.obsm[key]).max() > 0
    # the other commands find the map by its key
    emb = tables.read_embedding(tmp_path / "out.h5ad")
    np.testing.assert_allclose(emb.matrix, out.obsm[key])


def test_reference_into_h5ad_records_the_model(data, tmp_path):
    ad = pytest.importorskip("anndata")
    model_path = _fit(data, "umap")
    assert main(["embed", str(data / "new.csv"), "--id", "name", "--prior", "batch",
                 "--reference", str(model_path), "-o", str(tmp_path / "p.h5ad"), "-q"]) == 0
    out = ad.read_h5ad(tmp_path / "p.h5ad")
    rec = out.uns["X_cumap"]
    assert rec["placed_into"] == str(model_path) and rec["n_reference"] == 130
    assert rec["model"]["method"] == "ConditionalUMAP"


def test_score_prints_a_random_level_for_every_measure(data, capsys):
    """``score --prior --complement`` printed ``nan`` in the "random" column of the
    cross-class coverage; it now holds the coverage of random neighbours."""
    _fit(data, "tsne")
    writing.write_columns(data / "with_group.csv", {
        **{k: v for k, v in tables.read_table(data / "tsne.csv").columns.items()},
        "group": (np.arange(130) % 3).astype(float)})
    assert main(["score", str(data / "with_group.csv"), "--coords", "ctsne1", "ctsne2",
                 "--prior", "batch", "--complement", "group"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out
    line = next(ln for ln in out.splitlines() if "cross-class neighbour" in ln)
    random_level = float(line.split()[-1])
    # 130 points in two classes: almost every point has one of its 10 random neighbours
    # in the other class
    assert 0.99 < random_level <= 1.0


def test_coverage_chance_against_counting():
    from ctsne.interfaces.cli.score import _coverage_chance

    labels = np.array(["a"] * 6 + ["b"] * 3 + ["c"])
    rng = np.random.default_rng(0)
    n, k, hits, trials = len(labels), 3, 0, 20000
    for _ in range(trials):
        i = rng.integers(n)
        others = rng.choice(np.delete(np.arange(n), i), size=k, replace=False)
        hits += bool(np.any(labels[others] != labels[i]))
    assert _coverage_chance(labels, k) == pytest.approx(hits / trials, abs=0.01)


def test_gitignore_holds_the_demo_output():
    ignored = (Path(__file__).resolve().parents[1] / ".gitignore").read_text().split()
    assert "demo-output/" in ignored and "ctsne-demo/" in ignored

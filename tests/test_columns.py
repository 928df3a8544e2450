"""Which columns are features and which are labels (issue 51, item 5): one rule for every
command (:mod:`ctsne.interfaces.files.columns`) that never drops a feature unsaid.

Before: ``embed`` and ``rank`` one-hot encoded text columns into the features and kept an
integer class code (``digit``) among them, while ``explore`` moved every whole-number
column with at most 12 values to the labels, so 0/1 pixels, counts and Likert scores
left the map without a word."""

import pickle

import numpy as np
import pytest

from ctsne.interfaces.cli.main import main
from ctsne.interfaces.files import tables, writing
from ctsne.interfaces.files.columns import assign_columns
from ctsne.interfaces.files.formats import DataError

N = 90


@pytest.fixture
def kinds(tmp_path):
    """Binary, count, Likert and float features, an integer class code, a text label, a
    boolean label, and a numeric column with one typo."""
    rng = np.random.default_rng(0)
    cols = {
        "pixel": rng.integers(0, 2, N),               # binary
        "visits": rng.poisson(0.3, N),                # counts, mostly 0
        "rating": rng.integers(1, 6, N),              # Likert 1..5
        "height": rng.normal(170, 10, N).round(1),    # continuous
        "digit": np.arange(N) % 10,                   # a class code: numeric, a feature
        "thickness": np.array(["thin", "thick", "medium"])[np.arange(N) % 3],
        "smoker": np.array(["True", "False"])[np.arange(N) % 2],
    }
    path = tmp_path / "kinds.csv"
    writing.write_columns(path, cols)
    return path


def test_numbers_are_features_text_is_labels(kinds):
    roles = assign_columns(tables.read_table(kinds))
    assert roles.features == ["pixel", "visits", "rating", "height", "digit"]
    assert roles.labels == ["thickness", "smoker"]
    # one line, saying what was decided and how to change it
    assert "\n" not in roles.note
    assert "5 features (numeric: pixel, visits, rating, height, digit)" in roles.note
    assert "thickness, smoker (text)" in roles.note
    assert "--labels COL" in roles.note and "--features COL" in roles.note


def test_labels_and_features_change_the_rule(kinds):
    t = tables.read_table(kinds)
    roles = assign_columns(t, labels=["digit"])
    assert "digit" not in roles.features and "digit" in roles.labels
    assert "digit (--labels)" in roles.note
    # --features names them exactly (a text one is then one-hot encoded by the features)
    roles = assign_columns(t, features=["pi*", "thickness"])
    assert roles.features == ["pixel", "thickness"]
    assert set(roles.labels) == {"visits", "rating", "height", "digit", "smoker"}
    assert "named by --features" in roles.note and "(not named)" in roles.note
    # a pattern does not reach into the labels, the priors or --exclude
    roles = assign_columns(t, features=["*"], labels=["digit"], exclude=["visits"],
                           prior=["rating"])
    assert roles.features == ["pixel", "height", "thickness", "smoker"]
    # a prior is a label unless --include-prior
    assert "rating" not in assign_columns(t, prior=["rating"]).features
    assert assign_columns(t, prior=["thickness"], include_prior=True).features[-1] == \
        "thickness"


def test_bad_names_and_nothing_left(kinds, tmp_path):
    t = tables.read_table(kinds)
    with pytest.raises(DataError, match=r"--labels: .*no column 'digt'; did you mean 'digit'"):
        assign_columns(t, labels=["digt"])
    with pytest.raises(DataError, match="both --features and --labels"):
        assign_columns(t, features=["digit"], labels=["digit"])
    text = tmp_path / "text.csv"
    writing.write_columns(text, {"a": np.array(["x", "y"] * 5, dtype=object)})
    with pytest.raises(DataError, match="no numeric feature column: a hold text.*--features"):
        assign_columns(tables.read_table(text))


def test_a_number_column_with_a_typo_stays_a_feature(tmp_path):
    # made a label, its typo would go unreported and the column would leave the map
    path = tmp_path / "typo.csv"
    values = [str(v) for v in range(20)]
    values[7] = "1O"
    path.write_text("x,y\n" + "".join(f"{v},{i}\n" for i, v in enumerate(values)))
    assert main(["embed", str(path), "-o", str(tmp_path / "e.csv")]) == 2


def test_matrix_inputs_take_the_matrix(tmp_path):
    X = np.random.default_rng(0).normal(size=(20, 3))
    np.savez(tmp_path / "d.npz", X=X, g=np.array(["a", "b"] * 10))
    t = tables.read_table(tmp_path / "d.npz")
    roles = assign_columns(t)
    assert roles.features is None and roles.labels == ["g"] and roles.note == ""
    with pytest.raises(DataError, match="--labels x0: a matrix input's labels"):
        assign_columns(t, labels=["x0"])


def test_embed_rank_and_explore_agree(kinds, tmp_path, capsys, monkeypatch):
    """The commands decide alike: embed's model, rank's ranking and explore's session
    hold the same features; each says so in one note."""
    monkeypatch.chdir(tmp_path)
    fast = ["--n-iter", "20", "--exaggeration-iter", "10", "--perplexity", "5", "--seed",
            "0", "--threads", "1"]
    assert main(["embed", str(kinds), "-o", "e.csv", "--save-model", "m.pkl", *fast]) == 0
    err = capsys.readouterr().err
    assert sum(line.startswith("ctsne: note: columns: 5 features") for line in
               err.splitlines()) == 1, err
    with open("m.pkl", "rb") as fh:
        model = pickle.load(fh)
    want = ["pixel", "visits", "rating", "height", "digit"]
    assert list(model.feature_names_in_) == want
    assert main(["rank", str(kinds), "--embedding", "e.csv", "--cluster", "kmeans:2",
                 "--cluster-id", "0", "-o", "r.csv"]) == 0
    assert "ctsne: note: columns: 5 features" in capsys.readouterr().err
    ranked = tables.read_table("r.csv").columns["feature"]
    assert sorted(ranked) == sorted(want)
    # --labels digit takes it out of every command's features
    assert main(["embed", str(kinds), "-o", "e2.csv", "--labels", "digit", "--save-model",
                 "m2.pkl", *fast]) == 0
    with open("m2.pkl", "rb") as fh:
        assert "digit" not in pickle.load(fh).feature_names_in_

    pytest.importorskip("bokeh")
    from ctsne.interfaces.cli.main import build_parser
    from ctsne.interfaces.explorer.command import start

    emb = tmp_path / "emb.csv"
    emb.write_text("id,ctsne1,ctsne2\n" + "".join(f"{i},{i},{-i}\n" for i in range(N)))
    handle = start(build_parser().parse_args(
        ["explore", str(kinds), "--embedding", str(emb), "--no-browser", "--out",
         str(tmp_path / "out")]))
    try:
        s = handle.explorer.session
        assert s.feature_names == want
        assert {"thickness", "smoker"} <= set(s.labels)
    finally:
        handle.stop()
    assert "ctsne: note: columns: 5 features" in capsys.readouterr().err


def test_rows_for_a_saved_model_take_its_columns(kinds, tmp_path, monkeypatch, capsys):
    """A model fitted on a one-hot text column (by --features here; by default before
    this rule) keeps it for --reference and --resume, which would otherwise drop the
    column by the rule (and place rows with its one-hot features at 0)."""
    monkeypatch.chdir(tmp_path)
    fast = ["--n-iter", "20", "--exaggeration-iter", "10", "--perplexity", "5", "--seed",
            "0", "--threads", "1", "-q"]
    assert main(["embed", str(kinds), "-o", "e.csv", "--features", "height", "thickness",
                 "--save-model", "m.pkl", *fast]) == 0
    with open("m.pkl", "rb") as fh:
        model = pickle.load(fh)
    assert list(model.feature_names_in_) == ["height", "thickness=medium",
                                             "thickness=thick", "thickness=thin"]
    assert main(["embed", str(kinds), "-o", "r.csv", "--reference", "m.pkl"]) == 0
    t = tables.read_table(kinds)
    levels = np.array(["medium", "thick", "thin"], dtype=object)
    X = np.column_stack([t.columns["height"],
                         (t.columns["thickness"][:, None] == levels).astype(float)])
    np.testing.assert_allclose(tables.read_embedding("r.csv").matrix, model.transform(X),
                               rtol=1e-9, atol=1e-9)
    assert main(["embed", str(kinds), "-o", "c.csv", "--resume", "m.pkl", "--n-iter", "5",
                 "--threads", "1"]) == 0
    assert "those m.pkl was fitted on: height, thickness" in capsys.readouterr().err

"""Errors that used to come late or unclear (issue 21, item 10): each now comes before the
work, exit 2, saying what to change."""

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ctsne.interfaces.cli.main import build_parser, main

ADULT = Path(__file__).resolve().parents[1] / "src" / "ctsne" / "data" / "adult_sample.csv"


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = ADULT.read_text().splitlines()[:61]
    Path("data.csv").write_text("\n".join(lines) + "\n")
    return "data.csv"


def _error(capsys, *argv):
    assert main(list(argv)) == 2
    return capsys.readouterr().err


def test_output_where_no_file_can_be_created(data, capsys):
    # /proc passes the permission bits but takes no new file
    err = _error(capsys, "embed", data, "-o", "/proc/emb.csv")
    assert "cannot create files in /proc" in err
    assert not Path("emb.csv").exists()


def test_zero_threads(data, capsys):
    assert "give 1 or more" in _error(capsys, "embed", data, "-o", "emb.csv", "--threads", "0")


def test_resume_from_a_table(data, capsys):
    err = _error(capsys, "embed", data, "-o", "emb.csv", "--resume", data)
    assert "is not a model file" in err and "--save-model" in err


def test_three_dims_with_fft_names_barnes_hut(data, capsys):
    err = _error(capsys, "embed", data, "-o", "emb.csv", "--dims", "3", "--method", "fft")
    # named as the options that set them (issue 51, item 7), not as Python parameters
    assert "use --method bh or exact" in err and "method=" not in err


def _fail(*args, **kwargs):
    raise AssertionError("reached: the error should have come before")


@pytest.mark.parametrize("args, phrase", [
    (["--perplexity", "-1"], "--perplexity must be a positive number, got -1.0"),
    (["--dims", "0"], "--dims must be an integer ≥ 1, got 0"),
    (["--dims", "4", "--method", "bh"], "--method bh supports up to 3 output dimensions"),
    (["--n-iter", "-2"], "--n-iter must be an integer ≥ 0, got -2"),
    (["--affinities", "balanced", "--within-weight", "1"], "--within-weight 1 gives the other"),
    (["--algorithm", "umap", "--min-dist", "-1"], "--min-dist must be a finite number ≥ 0"),
    (["--algorithm", "largevis", "--perplexity", "0"], "--perplexity must be a positive"),
])
def test_option_values_are_checked_before_reading(data, capsys, monkeypatch, args, phrase):
    # issue 21 item 10: these came after ~5 s of start-up (numba, the table, the fit)
    from ctsne.interfaces.files import tables

    monkeypatch.setattr(tables, "read_table", _fail)
    assert phrase in _error(capsys, "embed", data, "-o", "emb.csv", *args)
    assert not Path("emb.csv").exists()


def test_option_errors_load_no_numba(data):
    # the check reads the parameter tables only: no numba, scipy or scikit-learn
    code = ("import sys; from ctsne.interfaces.cli.main import main; "
            "rc = main(['embed', 'data.csv', '-o', 'e.csv', '--perplexity', '0']); "
            "print(rc, [m for m in ('numba', 'scipy', 'sklearn') if m in sys.modules])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.stdout.split("\n")[0] == "2 []", res.stdout + res.stderr
    assert "--perplexity must be a positive number" in res.stderr


@pytest.mark.parametrize("args, estimator, phrase", [
    (["--perplexity", "60"], "ctsne.estimator.tsne:ConditionalTSNE",
     "--perplexity 60.0 is too large for 60 points"),
    (["--algorithm", "umap", "--n-neighbors", "60"], "ctsne.estimator.umap:ConditionalUMAP",
     "--n-neighbors 60 is too large for 60 points"),
])
def test_perplexity_against_the_rows_before_the_fit(data, capsys, monkeypatch, args,
                                                    estimator, phrase):
    # once the table is read, before the estimator (numba) and the neighbour search
    module, name = estimator.split(":")
    monkeypatch.setattr(getattr(importlib.import_module(module), name), "fit_transform",
                        _fail)
    assert phrase in _error(capsys, "embed", data, "-o", "emb.csv", *args)


def test_quiet_still_shows_warnings(tmp_path):
    # issue 21 item 11: -q hid the one-class prior warning and the dropped rows
    rng = np.random.default_rng(0)
    with open(tmp_path / "d.csv", "w") as fh:
        fh.write("g,x0,x1,x2\n")
        for i, row in enumerate(rng.normal(size=(60, 3))):
            cells = [str(v) for v in row]
            if i == 3:
                cells[1] = ""
            fh.write("a," + ",".join(cells) + "\n")
    res = subprocess.run([sys.executable, "-m", "ctsne", "embed", "d.csv", "--prior", "g",
                          "--drop-missing", "-o", "e.csv", "-q", "--perplexity", "5",
                          "--n-iter", "20", "--exaggeration-iter", "10", "--threads", "1"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    assert lines == ["ctsne: warning: dropped 1 of 60 rows with missing values (row 3)",
                     lines[1]] and lines[1].startswith("ctsne: warning: the prior puts one "
                                                       "class"), res.stderr


def test_every_option_has_help():
    # issue 21 item 11: demo --beta/--n-iter/--seed, explore --perplexity/--n-iter and
    # score's EMB had none
    parser = build_parser()
    commands = next(a for a in parser._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    bare = [f"{name} {'/'.join(a.option_strings) or a.metavar or a.dest}"
            for name, sub in commands.items() for a in sub._actions if not a.help]
    assert bare == []
    for name in commands:
        assert main([name, "--help"]) == 0  # every help text formats


# ----------------------------------------------------------------- issue 51, item 7
@pytest.mark.parametrize("name", ["ConditionalUMAP", "ConditionalLargeVis"])
def test_one_class_prior_warning_names_no_other_method(name):
    """UMAP and LargeVis users read "ct-SNE equals plain t-SNE" (src/ctsne/prior.py)."""
    import warnings

    import ctsne

    X = np.random.default_rng(0).normal(size=(40, 3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        getattr(ctsne, name)(n_epochs=5, random_state=0, n_jobs=1).fit(X, ["a"] * 40)
    said = [str(w.message) for w in seen if "carries no information" in str(w.message)]
    assert said and not any("t-SNE" in m for m in said), said


@pytest.mark.parametrize("algorithm, method", [("umap", "UMAP"), ("largevis", "LargeVis"),
                                               ("tsne", "t-SNE")])
def test_an_empty_table_names_the_method(tmp_path, capsys, algorithm, method):
    (tmp_path / "e.csv").write_text("a,b\n")
    err = _error(capsys, "embed", str(tmp_path / "e.csv"), "-o", str(tmp_path / "o.csv"),
                 "--algorithm", algorithm)
    assert f"0 usable rows: {method} needs at least 3 points" in err
    assert ("t-SNE" in err) == (algorithm == "tsne")


@pytest.mark.parametrize("args, says, never", [
    (["--affinities", "balanced", "--within-weight", "2"],
     ["--within-weight must be a number", "leave out --within-weight for the default"],
     ["None", "within_weight"]),
    (["--algorithm", "umap", "--n-epochs", "0"], ["--n-epochs must be an integer ≥ 1"],
     ["None", "n_epochs"]),
    (["--seed", "-1"], ["--seed must be an integer"], ["None", "random_state", "Generator"]),
    (["--perplexity", "-1"], ["error: --perplexity must be a positive"], ["---"]),
])
def test_messages_name_the_options(data, capsys, args, says, never):
    """The library's messages named Python parameters and None ("must be None or …",
    "leave it None") to users who set options."""
    err = _error(capsys, "embed", data, "-o", "emb.csv", *args)
    assert all(s in err for s in says), err
    assert not any(w in err for w in never), err


def test_cli_wording_leaves_python_alone():
    from ctsne.interfaces.cli.shared import cli_wording

    assert cli_wording("e.g. Balanced(within_weight=0.7), got 'x'") == \
        "e.g. Balanced(within_weight=0.7), got 'x'"
    assert cli_wording("beta < 1 removes the prior") == "beta < 1 removes the prior"
    assert cli_wording("use affinities='balanced' or 'revised'") == \
        "use --affinities balanced or revised"


def test_within_weight_help_names_no_missing_option():
    """It pointed to a --verbose that embed does not have."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    embed = sub.choices["embed"]
    flags = {s for a in embed._actions for s in a.option_strings}
    text = embed.format_help()
    assert "--verbose" not in text and "--verbose" not in flags


def test_a_misspelt_column_gets_a_suggestion(tmp_path, capsys):
    """``--prior bacth`` listed 20 columns and not the one meant."""
    cols = ",".join([f"c{k}" for k in range(20)] + ["batch"])
    (tmp_path / "d.csv").write_text(cols + "\n" + ",".join(["1"] * 21) + "\n")
    err = _error(capsys, "embed", str(tmp_path / "d.csv"), "--prior", "bacth", "-o",
                 str(tmp_path / "e.csv"))
    assert "no column 'bacth'; did you mean 'batch'?" in err

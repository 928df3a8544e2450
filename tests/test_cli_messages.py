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
    assert "use method='bh' or 'exact'" in err


def _fail(*args, **kwargs):
    raise AssertionError("reached: the error should have come before")


@pytest.mark.parametrize("args, phrase", [
    (["--perplexity", "-1"], "--perplexity must be a positive number, got -1.0"),
    (["--dims", "0"], "--dims must be an integer ≥ 1, got 0"),
    (["--dims", "4", "--method", "bh"], "method='bh' supports up to 3 output dimensions"),
    (["--n-iter", "-2"], "--n-iter must be an integer ≥ 0, got -2"),
    (["--affinities", "balanced", "--within-weight", "1"], "within_weight=1 gives the other"),
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
     "perplexity=60.0 is too large for 60 points"),
    (["--algorithm", "umap", "--n-neighbors", "60"], "ctsne.estimator.umap:ConditionalUMAP",
     "n_neighbors=60 is too large for 60 points"),
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

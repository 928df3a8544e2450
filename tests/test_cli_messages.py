"""Errors that used to come late or unclear (issue 21, item 10): each now comes before the
work, exit 2, saying what to change."""

from pathlib import Path

import pytest

from ctsne.interfaces.cli.main import main

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

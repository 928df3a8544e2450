"""``ctsne embed`` on a busy or careless day: resume checks, Ctrl-C, late failures, logs."""

import csv
import os
import pickle
import select
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from test_cli import FAST, N, assert_usage_error, ctsne

from ctsne.datasets import make_synthetic
from ctsne.interfaces.cli.main import main


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """test_cli's synthetic table (N points) and a model saved from it, prior f14."""
    d = tmp_path_factory.mktemp("robust")
    data = make_synthetic(N, random_state=3)
    grp = np.where(np.arange(N) % 3 == 0, "left", "right")
    with open(d / "data.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", *data.feature_names, "f14", "f56", "grp"])
        for i in range(N):
            w.writerow([f"p{i}", *data.X[i], data.f14[i], data.f56[i], grp[i]])
    res = ctsne("embed", "data.csv", "--id", "name", "--prior", "f14", "-o", "emb.csv",
                "--save-model", "model.pkl", *FAST, "-q", cwd=d)
    assert res.returncode == 0, res.stderr
    return d, data


def test_resume_checks_input_and_applies_the_prior(work, tmp_path, monkeypatch, capsys):
    d, data = work
    monkeypatch.chdir(tmp_path)
    base = ["embed", str(d / "data.csv"), "--id", "name", "--resume", str(d / "model.pkl"),
            "--n-iter", "5", "-q"]
    # same shape, other values: refused
    with open(d / "data.csv") as fh, open("other.csv", "w") as out:
        rows = list(csv.reader(fh))
        rows[5][1] = str(float(rows[5][1]) + 1.0)
        csv.writer(out).writerows(rows)
    other = ["embed", "other.csv", *base[2:]]
    assert main([*other, "--prior", "f14", "-o", "a.csv"]) == 2
    assert "other values than the data the model was fitted on" in capsys.readouterr().err
    # another perplexity needs other affinities: refused
    assert main([*base, "--prior", "f14", "--perplexity", "20", "-o", "b.csv"]) == 2
    assert "--perplexity 20 differs from the model's 10" in capsys.readouterr().err
    assert not any(os.path.exists(f) for f in ("a.csv", "b.csv"))
    # no --prior: the model's own prior column is used again, and said so (issue 21: the
    # column was encoded into the features, which then did not match the model's)
    assert main([*base[:-1], "-o", "c.csv"]) == 0
    assert "resuming with the model's prior f14" in capsys.readouterr().err
    # another prior and β' are applied (P stays), and said so
    # (grp, a text column, stays a label as it was; f14 is no longer the prior nor a
    # feature)
    assert main([*base[:-1], "--prior", "grp", "--beta", "0.1",
                 "--exclude", "f14", "-o", "e.csv", "--save-model", "m.pkl"]) == 0
    err = capsys.readouterr().err
    with open("m.pkl", "rb") as fh:
        model = pickle.load(fh)
    grp = np.where(np.arange(N) % 3 == 0, "left", "right")
    assert np.array_equal(model.prior_.codes[0], (grp == "right").astype(int))
    rho = ((grp == "left").sum() * ((grp == "left").sum() - 1)
           + (grp == "right").sum() * ((grp == "right").sum() - 1)) / (N * (N - 1))
    assert model.beta_ == pytest.approx(0.1)
    assert model.alpha_ == pytest.approx((1 - 0.1 * (1 - rho)) / rho)  # paper Eq. 4
    assert "resuming with the prior grp (the affinities P are kept)" in err


def _press_twice(data_csv, out):
    """``ctsne embed`` in ``out``, Ctrl-C twice once it optimises: (exit code, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctsne", "embed", str(data_csv), "--id", "name",
         "--prior", "f14", "-o", "part.csv", "--save-model", "part.pkl", "--plot",
         "part.png", "--n-iter", "1000000", "--perplexity", "10", "--threads", "1"],
        cwd=out, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen, t0 = b"", time.time()
    for wait_for, limit in ((b"KL=", 120), (b"stopping after", 5)):
        # the second press once the first is seen (two at once may arrive as one signal)
        t0 = time.time()
        while wait_for not in seen and time.time() - t0 < limit and proc.poll() is None:
            if select.select([proc.stderr], [], [], 1.0)[0]:
                seen += os.read(proc.stderr.fileno(), 65536)
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, (seen + err).decode()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_double_ctrl_c_always_exits_130_without_writing(work, tmp_path):
    d, _ = work
    outs = [tmp_path / f"run{run}" for run in range(10)]
    for out in outs:
        out.mkdir()
    # five at a time: the runs mostly wait (start-up, then the presses)
    with ThreadPoolExecutor(max_workers=5) as pool:
        results = list(pool.map(lambda out: _press_twice(d / "data.csv", out), outs))
    for run, ((code, err), out) in enumerate(zip(results, outs, strict=True)):
        assert code == 130, (run, err[-2000:])
        assert "Traceback" not in err and "Error" not in err, (run, err[-2000:])
        assert "interrupted; no partial files were left" in err, (run, err[-2000:])
        assert os.listdir(out) == [], (run, os.listdir(out))


def test_unwritable_output_folder_fails_before_the_work(work, tmp_path):
    d, _ = work
    if os.geteuid() == 0:  # root may write into any folder, not into a read-only one
        locked = "/proc/sys"
        assert not os.access(locked, os.W_OK)
    else:
        locked = str(tmp_path / "locked")
        os.mkdir(locked, 0o555)
    try:
        for flag in ("-o", "--plot", "--save-model"):
            outs = {"-o": "e.csv", "--plot": "e.png", "--save-model": "m.pkl"}
            outs[flag] = os.path.join(locked, outs[flag])
            res = ctsne("embed", d / "data.csv", "--id", "name", "--prior", "f14", *FAST,
                        *(a for kv in outs.items() for a in kv), cwd=tmp_path)
            assert_usage_error(res, f"the folder {locked} is not writable")
            # failed before the work: no progress was reported, nothing was written
            assert "neighbours" not in res.stderr and "KL" not in res.stderr
            assert not os.path.exists(outs[flag]) and not (tmp_path / "e.csv").exists()
    finally:
        os.chmod(locked, 0o755) if locked != "/proc/sys" else None


@pytest.mark.parametrize("rows", [0, 1])
def test_too_few_rows_with_a_prior(tmp_path, monkeypatch, capsys, rows):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.csv").write_text("a,b,g\n" + "1.0,2.0,x\n" * rows)
    assert main(["embed", "d.csv", "--prior", "g", "-o", "e.csv"]) == 2
    err = capsys.readouterr().err
    assert f"d.csv has {rows} usable rows: t-SNE needs at least 3 points" in err
    assert "nan" not in err and not (tmp_path / "e.csv").exists()


def test_log_output_is_plain_lines(work, tmp_path):
    d, _ = work
    one = np.loadtxt(d / "data.csv", delimiter=",", skiprows=1, usecols=range(1, 12))
    with open(tmp_path / "d.csv", "w") as fh:  # a prior with one class: a warning
        fh.write("g," + ",".join(f"x{j}" for j in range(11)) + "\n")
        fh.writelines("a," + ",".join(map(str, r)) + "\n" for r in one)
    args = ["embed", "d.csv", "--prior", "g", *FAST]
    res = ctsne(*args, "-o", "e.csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert "\r" not in res.stderr and len(res.stderr) < 3000, res.stderr
    lines = res.stderr.splitlines()
    assert all(line.startswith("ctsne: ") for line in lines), lines
    assert any(line.startswith("ctsne: affinities (") and "150 points" in line for line in lines)
    progress = [line for line in lines if line.startswith("ctsne: optimisation: ")]
    assert progress[-1].startswith("ctsne: optimisation: 60/60 it (100 %)")
    assert len(progress) == 10 and "KL=" in progress[-1]
    assert sum("carries no information" in line for line in lines) == 1
    # -q hides the progress and the notes, not the warning (issue 21 item 11)
    res = ctsne(*args, "-o", "q.csv", "-q", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout == "", res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctsne: warning: the prior puts one "
                                                   "class"), res.stderr


def test_help_describes_every_embed_option(capsys):
    assert main(["embed", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for phrase in ("INPUT the data", "--perplexity PERPLEXITY effective number",
                   "--method {auto,exact,bh,fft} repulsion engine",
                   "--exaggeration-iter N iterations of early exaggeration",
                   "--sep CHAR field separator"):
        assert phrase in out, phrase


def test_semicolon_csv_is_detected(work, tmp_path, monkeypatch):
    d, _ = work
    with open(d / "data.csv") as fh:
        rows = list(csv.reader(fh))
    with open(tmp_path / "semi.csv", "w") as fh:
        csv.writer(fh, delimiter=";").writerows(rows)
    monkeypatch.chdir(tmp_path)
    args = ["--id", "name", "--prior", "f14", *FAST, "-q"]
    assert main(["embed", str(d / "data.csv"), "-o", "comma.csv", *args]) == 0
    assert main(["embed", "semi.csv", "-o", "semi_out.csv", *args]) == 0
    assert (tmp_path / "comma.csv").read_text() == (tmp_path / "semi_out.csv").read_text()


def test_a_negative_number_in_scientific_notation_is_a_value_not_an_option():
    """Issue 59, item 15: ``--select-box -1e9 …`` was read as an unknown option."""
    from ctsne.interfaces.cli.main import build_parser

    args = build_parser().parse_args(["rank", "d.csv", "--embedding", "e.csv",
                                      "--select-box", "-1e9", "-2.5E+3", "-.5", "1e9"])
    assert args.select_box == [-1e9, -2500.0, -0.5, 1e9]


@pytest.mark.parametrize("pandas_reader", [True, False])
def test_a_repeated_column_name_is_refused_by_either_reader(tmp_path, monkeypatch,
                                                            pandas_reader):
    """Issue 59, item 15: pandas renamed a repeated "a" to "a.1" silently (a note that
    -q hid); the csv reader refused it. Both refuse it now, naming the column."""
    import builtins

    from ctsne.interfaces.files import tables
    from ctsne.interfaces.files.formats import DataError

    path = tmp_path / "dup.csv"
    path.write_text("a,b,a,lab\n1,2,3,x\n4,5,6,y\n")
    if not pandas_reader:
        real = builtins.__import__

        def no_pandas(name, *args, **kwargs):
            if name == "pandas":
                raise ImportError("pandas hidden by the test")
            return real(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(DataError, match="'a' more than once"):
        tables.read_table(path)

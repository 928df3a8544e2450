"""The ``ctsne`` command end to end: subprocesses on small files of every format."""

import csv
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ctsne.datasets import make_synthetic
from ctsne.interfaces.cli.main import main
from ctsne.interfaces.files import tables
from ctsne.metrics import laplacian_score

N = 150
# One thread: numba's parallel kernels slow down badly when the cores are shared with other
# work, and these runs are tiny.
FAST = ["--n-iter", "60", "--exaggeration-iter", "30", "--perplexity", "10", "--seed", "0",
        "--threads", "1"]


def ctsne(*args, cwd, timeout=180):
    """Run ``python -m ctsne.interfaces.cli.main ARGS`` and return the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "ctsne", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def assert_usage_error(res, *phrases):
    """Exit code 2 and one line on stderr (no traceback) containing the phrases."""
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for p in phrases:
        assert p in lines[0], lines[0]


def read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with the paper's synthetic data (N points) in several formats."""
    d = tmp_path_factory.mktemp("cli")
    data = make_synthetic(N, random_state=3)
    grp = np.where(np.arange(N) % 3 == 0, "left", "right")
    with open(d / "data.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", *data.feature_names, "f14", "f56", "grp"])
        for i in range(N):
            w.writerow([f"p{i}", *data.X[i], data.f14[i], data.f56[i], grp[i]])
    np.save(d / "X.npy", data.X)
    np.savez(d / "data.npz", X=data.X, f14=data.f14, f56=data.f56)
    with open(d / "meta.csv", "w") as fh:
        fh.write("f14,f56\n" + "".join(f"{a},{b}\n" for a, b in zip(data.f14, data.f56,
                                                                      strict=True)))
    res = ctsne("embed", "data.csv", "--id", "name", "--prior", "f14", "-o", "emb.csv",
                "--plot", "emb.png", "--marker", "f56", "--save-model", "model.pkl", *FAST,
                "-q", cwd=d)
    assert res.returncode == 0, res.stderr
    return d, data


def test_embed_csv(work):
    d, data = work
    header, rows = read_csv(d / "emb.csv")
    # the prior, the marker and every other label column (grp)
    assert header == ["id", "ctsne1", "ctsne2", "f14", "f56", "grp"]
    assert [r[0] for r in rows] == [f"p{i}" for i in range(N)]
    Y = np.array([[float(r[1]), float(r[2])] for r in rows])
    assert Y.shape == (N, 2) and np.all(np.isfinite(Y)) and Y.std() > 0.1
    assert [int(r[3]) for r in rows] == data.f14.tolist()
    assert (d / "emb.png").read_bytes()[:4] == b"\x89PNG"
    with open(d / "model.pkl", "rb") as fh:
        model = pickle.load(fh)
    np.testing.assert_allclose(model.embedding_, Y)
    assert model.n_iter_ == 90 and model.callbacks is None
    # x1..x10 and f56 (numeric); grp is text, a label (issue 51); the prior and the id
    # are not features
    assert model.n_features_in_ == 10 + 1
    assert list(model.feature_names_in_) == [f"x{k}" for k in range(1, 11)] + ["f56"]


def test_embed_hides_the_prior(work):
    d, data = work
    _, rows = read_csv(d / "emb.csv")
    Y = np.array([[float(r[1]), float(r[2])] for r in rows])
    # f14 is nearly perfectly visible in t-SNE (score ~0); ct-SNE must spread it out
    assert laplacian_score(Y, data.f14, k=10) > 0.4


@pytest.mark.parametrize("inp, extra, out, ids", [
    ("data.csv", ["--exclude", "name", "--columns", "x*", "--standardize"], "out.tsv", "rows"),
    ("data.npz", [], "out.npz", "rows"),
    ("X.npy", ["--meta", "meta.csv"], "out.npy", None),
    ("data.csv", ["--exclude", "grp", "--id", "name"], "out.parquet", "names"),
    ("data.h5ad", [], "out.h5ad", "cells"),
])
def test_embed_formats(work, inp, extra, out, ids):
    d, data = work
    if "parquet" in out:
        pytest.importorskip("pyarrow")
    if "h5ad" in inp:
        ad = pytest.importorskip("anndata")
        pd = pytest.importorskip("pandas")
        adata = ad.AnnData(X=data.X, obs=pd.DataFrame(
            {"f14": pd.Categorical(data.f14.astype(str))}, index=[f"c{i}" for i in range(N)]))
        adata.write_h5ad(d / inp)
    res = ctsne("embed", inp, "--prior", "f14", "-o", out, *extra, *FAST, "-q", cwd=d)
    assert res.returncode == 0, res.stderr
    emb = tables.read_embedding(d / out)
    assert emb.matrix.shape == (N, 2) and np.all(np.isfinite(emb.matrix))
    if ids is None:  # .npy: the embedding only, rows in input order
        return
    expected = {"rows": [str(i) for i in range(N)], "names": [f"p{i}" for i in range(N)],
                "cells": [f"c{i}" for i in range(N)]}[ids]
    assert emb.ids.astype(str).tolist() == expected
    np.testing.assert_array_equal([float(v) for v in emb.columns["f14"]], data.f14)
    if out.endswith(".h5ad"):
        back = ad.read_h5ad(d / out)
        assert back.obsm["X_ctsne"].shape == (N, 2) and "f14" in back.obs


def test_drop_missing(work, tmp_path, monkeypatch, capsys):
    d, _ = work
    text = (d / "data.csv").read_text().splitlines()
    fields = text[5].split(",")
    fields[3] = ""  # row 4 (0-based after the header), column x3
    text[5] = ",".join(fields)
    (tmp_path / "nan.csv").write_text("\n".join(text) + "\n")
    args = ["embed", "nan.csv", "--id", "name", "--prior", "f14", "-o", "e.csv", *FAST]
    res = ctsne(*args, "-q", cwd=tmp_path)
    assert_usage_error(res, "row 4 ", "'x3'", "--drop-missing")
    assert not (tmp_path / "e.csv").exists()
    monkeypatch.chdir(tmp_path)  # the successful run in-process, to save a start-up
    assert main([*args, "--drop-missing"]) == 0
    assert "dropped 1 of 150 rows" in capsys.readouterr().err
    _, rows = read_csv(tmp_path / "e.csv")
    ids = [r[0] for r in rows]
    assert len(ids) == N - 1 and "p4" not in ids and ids[4] == "p5"


@pytest.mark.parametrize("case", ["missing column", "prior wrong length", "unreadable",
                                  "no such file", "existing output", "bad beta"])
def test_bad_inputs(work, tmp_path, case):
    d, data = work
    for f in ("data.csv", "X.npy"):
        shutil.copy(d / f, tmp_path / f)
    args = ["embed", "data.csv", "--prior", "f14", "-o", "e.csv", "--id", "name", *FAST, "-q"]
    if case == "missing column":
        args[3], phrase = "gender", "no column 'gender'"
    elif case == "prior wrong length":
        np.savez(tmp_path / "bad.npz", X=data.X, f14=data.f14[:-10])
        args[1], phrase = "bad.npz", "'f14' has 140 entries but 'X' has 150 rows"
    elif case == "unreadable":
        (tmp_path / "bad.npy").write_bytes(b"\x00garbage")
        args[1], phrase = "bad.npy", "cannot read as npy"
    elif case == "no such file":
        args[1], phrase = "nope.parquet", "no such file"
    elif case == "existing output":
        (tmp_path / "e.csv").write_text("precious")
        phrase = "e.csv exists; pass --force"
    else:
        args += ["--beta", "7"]
        phrase = "--beta 7.0 is out of range"  # the option, not the parameter (issue 51)
    res = ctsne(*args, cwd=tmp_path)
    assert_usage_error(res, phrase)
    if case == "existing output":
        assert (tmp_path / "e.csv").read_text() == "precious"
    else:
        assert not (tmp_path / "e.csv").exists()
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temporary files


@pytest.mark.parametrize("argv, phrase", [
    (["embed", "data.csv", "-o", "e.csv", "--beta", "0.1", "--alpha", "2"], "not allowed with"),
    (["embed", "data.csv", "-o", "e.xlsx"], "cannot write this type; use .csv"),
    (["embed", "data.csv", "-o", "e.csv", "--plot", "e.gif"], "use .png, .svg, .pdf"),
    (["embed", "data.csv", "--id", "name", "-o", "e.csv", "--features", "x*", "grp",
      "--categorical", "error"], "'grp' is not numeric"),
    (["embed", "data.csv", "-o", "data.csv", "--force"], "must all be different"),
    (["score", "emb.csv", "--labels", "f14", "--k", "ten"], "--k 'ten'"),
    (["score", "emb.csv", "--labels", "f14", "--k", "500"], "too large"),
    (["score", "emb.csv", "--labels", "gender"], "no column 'gender'"),
    (["rank", "data.csv", "--id", "name", "--embedding", "emb.csv", "--cluster", "spectral"],
     "kmeans[:K]"),
    (["rank", "data.csv", "--id", "name", "--embedding", "emb.csv", "--cluster", "kmeans:3",
      "--cluster-id", "7"], "no cluster 7"),
    (["rank", "data.csv", "--id", "name", "--embedding", "emb.csv", "--select-box", "1e6",
      "1e6", "2e6", "2e6"], "no point lies in the box"),
    (["rank", "data.csv", "--embedding", "emb.csv", "--select-ids", "x.txt"],
     "pass the --id used with ctsne embed"),
    (["rank", "data.csv", "--id", "name", "--embedding", "emb.csv", "--select-ids", "x.txt"],
     "cannot read ids from x.txt"),
])
def test_usage_errors_in_process(work, capsys, monkeypatch, argv, phrase):
    d, _ = work
    monkeypatch.chdir(d)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and phrase in err[0], err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "embed" in capsys.readouterr().err


def test_help(capsys):
    assert main(["embed", "--help"]) == 0
    assert "--prior COL" in capsys.readouterr().out


def test_console_script():
    exe = Path(sys.executable).with_name("ctsne")
    if not exe.exists():
        pytest.skip("the console script is not installed")
    res = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("ctsne ")


def test_resume_continues_the_saved_model(work, tmp_path, monkeypatch, capsys):
    d, _ = work
    res = ctsne("embed", d / "data.csv", "--id", "name", "--prior", "f14", "--resume",
                d / "model.pkl", "--n-iter", "20", "-o", "e.npz", "--save-model", "m2.pkl",
                "--threads", "1", "-q", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    with open(tmp_path / "m2.pkl", "rb") as fh:
        model = pickle.load(fh)
    assert model.n_iter_ == 90 + 20
    np.testing.assert_allclose(np.load(tmp_path / "e.npz")["embedding"], model.embedding_)
    monkeypatch.chdir(tmp_path)
    assert main(["embed", str(d / "data.csv"), "--id", "name", "--exclude", "x1", "--prior",
                 "f14", "--resume", str(d / "model.pkl"), "-o", "e2.csv", "-q"]) == 2
    err = capsys.readouterr().err
    assert "the model was fitted on 150 × 11 features, the input gives 150 × 10" in err
    assert not (tmp_path / "e2.csv").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_writes_a_partial_embedding(work, tmp_path):
    d, _ = work
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctsne", "embed", str(d / "data.csv"), "--id", "name",
         "--prior", "f14",
         "-o", "part.csv", "--n-iter", "1000000", "--perplexity", "10", "--save-model",
         "part.pkl", "--threads", "1"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen, t0 = b"", time.time()
    # wait until the optimisation reports progress (the KL is shown every 10 iterations)
    while b"KL=" not in seen and time.time() - t0 < 120 and proc.poll() is None:
        if select.select([proc.stderr], [], [], 1.0)[0]:
            seen += os.read(proc.stderr.fileno(), 65536)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    err = (seen + err).decode()
    assert proc.returncode == 130, err[-2000:]
    assert "PARTIAL embedding" in err and "--resume part.pkl" in err
    header, rows = read_csv(tmp_path / "part.csv")
    Y = np.array([[float(r[1]), float(r[2])] for r in rows])
    assert Y.shape == (N, 2) and np.all(np.isfinite(Y))
    with open(tmp_path / "part.pkl", "rb") as fh:
        assert 0 < pickle.load(fh).n_iter_ < 1_000_000


def test_rank(work, tmp_path):
    d, _ = work
    res = ctsne("rank", d / "data.csv", "--id", "name", "--embedding", d / "emb.csv",
                "--cluster", "kmeans:3", "--cluster-id", "0", "--top", "3", "-o", "rank.csv",
                "--plot", "sel.svg", "--compare", d / "emb.csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "3 clusters" in res.stdout and "cluster 0:" in res.stdout
    header, rows = read_csv(tmp_path / "rank.csv")
    assert header == ["selection", "rank", "feature", "weight", "mean_difference", "auc",
                      "n_selected"]
    # every feature ranked once; the embedding's columns (prior f14, marker f56), the text
    # column grp and the id are labels, not features
    assert sorted(r[2] for r in rows) == sorted(f"x{k}" for k in range(1, 11))
    assert b"<svg" in (tmp_path / "sel.svg").read_bytes()


def test_rank_box_and_ids_in_process(work, capsys, monkeypatch):
    d, data = work
    monkeypatch.chdir(d)
    Y = tables.read_embedding("emb.csv").matrix
    x0, y0 = np.median(Y, axis=0)
    assert main(["rank", "data.csv", "--id", "name", "--embedding", "emb.csv",
                 "--select-box", str(x0), str(y0), "1e9", "1e9"]) == 0
    n_box = int(np.sum((Y[:, 0] >= x0) & (Y[:, 1] >= y0)))
    assert f"{n_box} of {N} points selected" in capsys.readouterr().out
    (d / "ids.txt").write_text("p1\np2\n# comment\np3\np999\n")
    assert main(["rank", "data.csv", "--id", "name", "--embedding", "emb.csv",
                 "--select-ids", "ids.txt"]) == 0
    out = capsys.readouterr()
    assert f"3 of {N} points selected" in out.out and "1 listed ids" in out.err


def test_score(work, tmp_path):
    d, data = work
    res = ctsne("score", d / "emb.csv", d / "emb.csv", "--names", "a", "b", "--labels", "f14",
                "--labels", "grp", "--data", d / "data.csv", "--id", "name", "--k", "10:30:10",
                "-o", "s.csv", "--plot", "s.pdf", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Laplacian score of 'f14'" in res.stdout and "'grp'" in res.stdout
    header, rows = read_csv(tmp_path / "s.csv")
    assert header == ["label", "embedding", "k", "score"] and len(rows) == 2 * 2 * 3
    Y = tables.read_embedding(d / "emb.csv").matrix
    expected = laplacian_score(Y, data.f14, k=[10, 20, 30])
    got = [float(r[3]) for r in rows if r[0] == "f14" and r[1] == "a"]
    np.testing.assert_allclose(got, expected)
    assert (tmp_path / "s.pdf").read_bytes()[:4] == b"%PDF"


def test_demo(tmp_path, monkeypatch, capsys):
    res = ctsne("demo", "-o", "out", "--n", "200", "--n-iter", "100", "--exaggeration-iter",
                "50", "--threads", "1", "-q", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    files = sorted(os.listdir(tmp_path / "out"))
    assert files == ["ctsne.csv", "data.csv", "demo.png", "scores.png", "tsne.csv"]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("10-NN homogeneity of f14"))
    tsne, ct, rand = map(float, line.split()[-3:])
    # f14, the prior, is clearly visible in t-SNE and close to random in ct-SNE
    assert ct < 0.5 < tsne and ct < tsne - 0.3 and rand == pytest.approx(0.2, abs=0.05)
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "-o", "out", "--n", "200", "-q"]) == 2
    assert "out/data.csv exists; pass --force" in capsys.readouterr().err


def test_two_priors_as_factors(work, tmp_path, monkeypatch):
    d, _ = work
    monkeypatch.chdir(tmp_path)
    assert main(["embed", str(d / "data.csv"), "--id", "name", "--prior", "f14", "--prior",
                 "f56", "--combine", "product", "--alpha", "2", "-o", "e.csv", "--plot",
                 "e.svg", "--color", "grp", "--marker", "f56", "--save-model", "m.pkl",
                 *FAST, "-q"]) == 0
    with open("m.pkl", "rb") as fh:
        model = pickle.load(fh)
    np.testing.assert_allclose(model.alpha_, [2.0, 2.0])
    assert model.n_features_in_ == 10  # both priors (and the text grp) are no features
    header, _ = read_csv("e.csv")
    assert header == ["id", "ctsne1", "ctsne2", "f14", "f56", "grp"]
    assert b"<svg" in Path("e.svg").read_bytes()


def test_score_integration_measures(work, tmp_path, monkeypatch, capsys):
    # Prior f14 from the embedding file, complement grp from --data; the numbers are
    # checked against harmonypy's LISI and a direct count of the 10 nearest neighbours.
    import harmonypy

    d, data = work
    monkeypatch.chdir(tmp_path)
    assert main(["score", str(d / "emb.csv"), "--prior", "f14", "--complement", "grp",
                 "--data", str(d / "data.csv"), "--id", "name", "--knn", "10",
                 "--lisi-perplexity", "10", "-o", "m.csv"]) == 0
    out = capsys.readouterr().out
    assert "iLISI, median" in out and "cross-class agreement" in out
    header, rows = read_csv("m.csv")
    assert header == ["label", "embedding", "k", "score", "metric", "random"]
    got = {r[4]: (r[0], int(r[2]), float(r[3])) for r in rows}
    Y = tables.read_embedding(d / "emb.csv").matrix
    grp = np.where(np.arange(N) % 3 == 0, "left", "right")
    ref = harmonypy.compute_lisi(Y, {"f14": data.f14, "grp": grp}, ["f14", "grp"], 10)
    assert got["ilisi"][:2] == ("f14", 30)
    assert got["ilisi"][2] == pytest.approx(np.median(ref[:, 0]), abs=1e-4)
    assert got["clisi"][2] == pytest.approx(np.median(ref[:, 1]), abs=1e-4)
    d2 = ((Y[:, None] - Y[None]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    nn = np.argsort(d2, axis=1)[:, :10]
    cross = data.f14[nn] != data.f14[:, None]
    agree = cross & (grp[nn] == grp[:, None])
    has = cross.any(axis=1)
    assert got["cross_class_coverage"][2] == pytest.approx(has.mean())
    assert got["cross_class_agreement"][2] == pytest.approx(
        np.mean(agree[has].sum(1) / cross[has].sum(1)))
    homog = [float(r[3]) for r in rows if r[4] == "homogeneity"]
    assert homog == pytest.approx([np.mean(data.f14[nn] == data.f14[:, None]),
                                   np.mean(grp[nn] == grp[:, None])])


def test_score_needs_something_to_score(work, capsys, monkeypatch):
    d, _ = work
    monkeypatch.chdir(d)
    for argv, phrase in ((["score", "emb.csv"], "give --labels, --prior or --complement"),
                         (["score", "emb.csv", "--prior", "f14", "--plot", "p.png"],
                          "give --labels too"),
                         (["score", "emb.csv", "--prior", "f14", "--knn", "0"], "--knn")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and phrase in err[0], err


def test_embed_compare_draws_tsne_from_the_same_p_and_start(work, tmp_path, monkeypatch):
    from ctsne import ConditionalTSNE
    from ctsne.plotting import figures as plotting  # noqa: F401  (embed: loaded)

    d, data = work
    monkeypatch.chdir(tmp_path)
    seen = {}
    real_compare, real_save = plotting.plot_comparison, plotting.save_figure

    def spy_compare(tsne, ctsne_, priors, *a, **k):
        seen["tsne"], seen["ctsne"] = tsne.copy(), ctsne_.copy()
        return real_compare(tsne, ctsne_, priors, *a, **k)

    def spy_save(fig, path, force=False):
        seen["fig"] = fig
        return real_save(fig, path, force)

    monkeypatch.setattr(plotting, "plot_comparison", spy_compare)
    monkeypatch.setattr(plotting, "save_figure", spy_save)
    assert main(["embed", str(d / "data.csv"), "--id", "name", "--columns", "x*", "--prior",
                 "f14", "-o", "c.csv", "--plot", "c.png", "--compare", "--marker", "f56",
                 "--save-model", "m.pkl", *FAST, "-q"]) == 0
    assert Path("c.png").read_bytes()[:4] == b"\x89PNG"
    header, rows = read_csv("c.csv")
    Y = np.array([[float(r[1]), float(r[2])] for r in rows])
    np.testing.assert_array_equal(Y, seen["ctsne"])

    # the t-SNE panel: a plain fit of the same features from the ct-SNE's start
    with open("m.pkl", "rb") as fh:
        model = pickle.load(fh)
    params = {k: v for k, v in model.get_params().items() if k not in ("callbacks", "verbose")}
    plain = ConditionalTSNE(**{**params, "init": model.initial_embedding_})
    np.testing.assert_array_equal(plain.fit_transform(data.X, None), seen["tsne"])

    titles = [ax.get_title() for ax in seen["fig"].axes[:2]]
    assert [t.splitlines()[0] for t in titles] == ["t-SNE", "ct-SNE (prior f14)"]
    s_tsne = laplacian_score(plain.embedding_, data.f14, k=30)
    s_ctsne = laplacian_score(Y, data.f14, k=30)
    assert titles[0].splitlines()[1] == f"Laplacian score 30-NN: f14 {s_tsne:.3f}"
    assert titles[1].splitlines()[1] == f"Laplacian score 30-NN: f14 {s_ctsne:.3f}"
    # the prior was factored out: measured 0.817 against 0.737 (a short run, one thread);
    # the margin keeps the comparison off a tie that rounding could decide
    assert s_ctsne > s_tsne + 0.04


@pytest.mark.parametrize("extra, phrase", [
    (["--marker", "many"], "--marker column 'many' has 12 values; markers are told apart for "
                           "at most 10"),
    (["--compare"], "--compare draws t-SNE beside ct-SNE: it needs --plot and --prior"),
])
def test_plot_options_fail_before_the_work(work, tmp_path, monkeypatch, capsys, extra, phrase):
    from ctsne.interfaces.cli import embed as commands

    d, data = work
    with open(d / "data.csv") as src, open(tmp_path / "m.csv", "w") as dst:
        for i, line in enumerate(src):
            dst.write(line.rstrip("\n") + ("," + ("many" if i == 0 else str(i % 12))) + "\n")
    monkeypatch.chdir(tmp_path)

    def no_fit(*a, **k):
        raise AssertionError("the embedding started")

    monkeypatch.setattr(commands, "_fit", no_fit)
    t0 = time.perf_counter()
    plot = ["--plot", "m.png"] if "--compare" not in extra else []
    assert main(["embed", "m.csv", "--id", "name", "--exclude", "many", "-o", "m.npz",
                 "--save-model", "m.pkl", *plot, *extra, "-q"]) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and phrase in err[0], err
    assert sorted(os.listdir(tmp_path)) == ["m.csv"]  # nothing written, no temporary files

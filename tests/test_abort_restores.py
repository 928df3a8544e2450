"""An abort (a second Ctrl-C) undoes a command's files and puts back what ``-f`` replaced.

Regression for: Ctrl-C while ``ctsne embed -f`` wrote its outputs removed the new CSV
after it had already replaced the old one, so the user had neither embedding.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ctsne import _output


def _names(folder):
    return sorted(os.listdir(folder))


def test_abort_restores_a_replaced_file_and_removes_a_new_one(tmp_path):
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    old.write_text("the user's embedding\n")
    with _output.track_outputs():
        with _output.atomic_path(old, force=True) as tmp:
            tmp.write_text("this run's embedding\n")
        with _output.atomic_path(new) as tmp:
            tmp.write_text("this run's model\n")
        assert old.read_text() == "this run's embedding\n"
        _output.remove_unfinished()  # what the abort handler runs
        assert old.read_text() == "the user's embedding\n"
        assert _names(tmp_path) == ["old.csv"]  # no new file, no hidden copy


def test_abort_during_a_write_keeps_the_old_file(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("the user's embedding\n")
    with _output.track_outputs():
        # the real abort ends the process inside the block; here the block then fails to
        # move the removed temporary file, which must change nothing more
        with pytest.raises(FileNotFoundError), _output.atomic_path(old, force=True) as tmp:
            tmp.write_text("half of this run's embed")
            _output.remove_unfinished()
            assert old.read_text() == "the user's embedding\n"
            assert _names(tmp_path) == ["old.csv"]
    assert old.read_text() == "the user's embedding\n"
    assert _names(tmp_path) == ["old.csv"]


def test_finished_files_are_kept_and_their_copies_removed(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("the user's embedding\n")
    with _output.track_outputs():
        with _output.atomic_path(old, force=True) as tmp:
            tmp.write_text("this run's embedding\n")
        assert len(_names(tmp_path)) == 2  # the file and the hidden copy of the old one
        _output.forget_finished()  # the command's commit point
        _output.remove_unfinished()  # an abort after it keeps the files
    assert old.read_text() == "this run's embedding\n"
    assert _names(tmp_path) == ["old.csv"]


def test_no_copies_outside_a_command(tmp_path):
    # a script or notebook that saves over a file keeps no hidden copies
    target = tmp_path / "fig.png"
    target.write_bytes(b"old")
    for _ in range(3):
        with _output.atomic_path(target, force=True) as tmp:
            tmp.write_bytes(b"new")
    assert _names(tmp_path) == ["fig.png"] and target.read_bytes() == b"new"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_while_embed_writes_with_force_keeps_the_old_outputs(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    rows = ["a,b,c,d,grp"] + [",".join(f"{v:.5f}" for v in x) + f",{i % 2}"
                              for i, x in enumerate(X)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    before = {"emb.csv": "old embedding\n", "model.pkl": "old model\n"}
    for name, text in before.items():
        (tmp_path / name).write_text(text)
    # Ctrl-C arrives while the figure is written, after the CSV and the model replaced the
    # old files: the handler aborts (the optimisation is over) and must restore them
    script = textwrap.dedent("""
        import os, signal, sys, time
        import ctsne.plotting.figures as figures

        def interrupted(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)  # the handler ends the process first

        figures.save_figure = interrupted
        from ctsne.interfaces.cli.main import main
        sys.exit(main(sys.argv[1:]))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script, "embed", "data.csv", "--prior", "grp", "-o", "emb.csv",
         "--save-model", "model.pkl", "--plot", "fig.png", "-f", "--n-iter", "10",
         "--exaggeration-iter", "10", "--perplexity", "5", "--threads", "1", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "no partial files were left" in proc.stderr
    for name, text in before.items():
        assert (tmp_path / name).read_text() == text
    assert _names(tmp_path) == ["data.csv", "emb.csv", "model.pkl"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_before_the_optimisation_aborts(tmp_path):
    # regression: during the neighbour search the first Ctrl-C said "stopping after the
    # current iterations", went on computing, then wrote a partial embedding
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    rows = ["a,b,c"] + [",".join(f"{v:.5f}" for v in x) for x in X]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    script = textwrap.dedent("""
        import os, signal, sys
        import ctsne.affinities.modes as modes

        build = modes.Auto.build

        def pressed(self, *args, **kwargs):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while P is being built
            return build(self, *args, **kwargs)

        modes.Auto.build = pressed
        from ctsne.interfaces.cli.main import main
        sys.exit(main(sys.argv[1:]))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script, "embed", "data.csv", "-o", "emb.csv", "--n-iter",
         "50", "--perplexity", "5", "--threads", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "stopping after" not in proc.stderr
    assert "no partial files were left" in proc.stderr
    assert _names(tmp_path) == ["data.csv"]

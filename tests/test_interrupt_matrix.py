"""Ctrl-C at every stage of ``ctsne embed``, once and twice, with and without ``-f``.

What the README promises: a first Ctrl-C while t-SNE's optimiser runs stops it and writes
the partial embedding (and the model, the figure), exit 130, said so; a Ctrl-C at any
other time (reading, neighbours, affinities, before the first iteration, a UMAP's epochs,
while an output is written) or a second one aborts: exit 130, no traceback, and every
file the user had is as it was (files replaced with ``-f`` put back, new ones removed, no
temporary file left). Once all outputs are written an abort keeps them, complete.

Deterministic, not a race: the process presses Ctrl-C itself at named points
(:func:`ctsne._output.interruption_point`, driven by ``CTSNE_TEST_SIGINT``), and the
handler runs before the point returns. Between two points the handler's decision and
the files on disk do not change (what changes them are the points' neighbours: the
optimiser's callbacks and the steps of an output's write, each of which has a point), so
one run per case is equivalent to a press at any moment of that stage; the moments
inside a write, between any two byte codes, are covered exhaustively by
``test_interrupt_writes.py``. A few genuinely timed presses (a real signal from outside
at a random moment) check the delivery itself, with an assertion that holds whatever
the moment.

Cost: one worker process imports ctsne and warms it once, then forks a child per case
(each runs ``main()`` as ``python -m ctsne`` would): 152 cases, ~25 s of CPU.
"""

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and fork")

N = 60
FIT = ["embed", "{data}", "--prior", "grp", "-o", "emb.csv", "--save-model", "model.pkl",
       "--plot", "fig.png", "--n-iter", "20", "--exaggeration-iter", "20", "--perplexity",
       "5", "--threads", "1", "--seed", "0"]
OUTPUTS = ("emb.csv", "model.pkl", "fig.png")
# --resume continues the warm-up's model (40 iterations) by 20; --reference places the
# rows into it; a UMAP has no stop-and-keep
RESUME = ["embed", "{data}", "--resume", "{root}/base.pkl", "-o", "emb.csv", "--save-model",
          "model.pkl", "--plot", "fig.png", "--n-iter", "20", "--threads", "1"]
REFERENCE = ["embed", "{data}", "--reference", "{root}/base.pkl", "--prior", "grp", "-o",
             "new.csv", "--plot", "new.png", "--threads", "1"]
# the other commands that write files abort the same way
SCORE = ["score", "{root}/base.csv", "--labels", "grp", "--k", "5:10:5", "-o", "s.csv",
         "--plot", "s.png"]
UMAP = ["embed", "{data}", "--algorithm", "umap", "--prior", "grp", "-o", "emb.csv",
        "--plot", "fig.png", "--n-epochs", "20", "--n-neighbors", "5", "--threads", "1",
        "--seed", "0"]

# Where a first press aborts (nothing of the optimisation to keep) ...
ABORT_POINTS = ["reading", "neighbours", f"neighbours {N}",  # the search done: affinities
                "early exaggeration"]  # its report starts before the first iteration


def _write_points(names):
    return [f"{name} {step}" for name in names for step in ("writing", "replacing", "written")]


WRITE_POINTS = _write_points(OUTPUTS)
# ... and where it stops the optimiser, with the iterations the map then has (callbacks
# every 10 iterations hand the request over; the early phase has 20, the main 20). A press
# during the last iteration comes too late to stop anything: the map is complete.
STOP_POINTS = {"early exaggeration 3": 10, "early exaggeration 15": 20,
               "optimisation": 30, "optimisation 5": 30, "optimisation 20": 40}


def _cases():
    """(scenario, points, -f): ``points`` as CTSNE_TEST_SIGINT lists them."""
    cases = []
    for force in (False, True):
        for point in ABORT_POINTS + WRITE_POINTS + list(STOP_POINTS) + ["committed"]:
            cases.append(("fit", point, force))
            cases.append(("fit", f"{point},{point}", force))  # twice, at once
        for first in ("early exaggeration 3", "optimisation 5"):
            seconds = WRITE_POINTS + ["committed"] if first == "optimisation 5" else \
                ["emb.csv written", "model.pkl writing", "fig.png replacing", "committed"]
            cases += [("fit", f"{first},{second}", force) for second in seconds]
        cases += [("resume", p, force) for p in
                  ("reading", "optimisation 5", "optimisation 5,model.pkl replacing",
                   "emb.csv written")]
        cases += [("reference", p, force) for p in
                  ("reading", "new.csv written", "new.png writing", "new.png replacing")]
        cases += [("umap", p, force) for p in ("epochs", "epochs 5", "fig.png writing")]
        cases += [("score", p, force) for p in ("reading", "s.csv written", "s.png replacing")]
        # real signals from outside at seeded random moments of the run after its first
        # progress line (the search, the optimisation, the writes), once or twice (the
        # second 0-20 ms later)
        rng = np.random.default_rng(21 + force)
        for k in range(TIMED):
            delays = [float(rng.uniform(0.0, 0.4))]
            if k % 2:
                delays.append(delays[0] + float(rng.uniform(0.0, 0.02)))
            cases.append(("timed", " ".join(f"{d:.4f}" for d in delays), force))
    return cases


TIMED = 10
CASES = _cases()
ARGV = {"fit": FIT, "resume": RESUME, "reference": REFERENCE, "umap": UMAP, "score": SCORE,
        "timed": FIT}
SCENARIO_OUTPUTS = {"fit": OUTPUTS, "resume": OUTPUTS, "reference": ("new.csv", "new.png"),
                    "umap": ("emb.csv", "fig.png"), "score": ("s.csv", "s.png"),
                    "timed": OUTPUTS}

WORKER = textwrap.dedent("""
    import json, os, signal, sys, time
    from ctsne.interfaces.cli.main import main

    root, cases = sys.argv[1], json.loads(sys.stdin.read())
    data = os.path.join(root, "data.csv")

    def argv(args):
        return [a.replace("{data}", data).replace("{root}", root) for a in args]

    # warm (imports, numba kernels, matplotlib, as a first real run would load them),
    # and the model that --resume and --reference start from
    os.chdir(root)
    fit = argv(json.loads(os.environ["WARM_FIT"]))
    assert main(fit[:fit.index("-o")] + fit[fit.index("--n-iter"):]
                + ["-o", "base.csv", "--save-model", "base.pkl", "-q"]) == 0
    for case in cases:
        if "--algorithm" in case["argv"]:
            assert main(argv(case["argv"]) + ["-o", "umap.csv", "-q", "-f"]) == 0
            os.unlink("umap.csv"), os.unlink("fig.png")
            break
    results = []
    for case in cases:
        sys.stdout.flush(), sys.stderr.flush()
        open(case["log"], "w").close()
        pid = os.fork()
        if pid == 0:  # the child: one ctsne command, pressing Ctrl-C where told
            try:
                os.chdir(case["dir"])
                fd = os.open(case["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, 1), os.dup2(fd, 2)
                if not case["delays"]:
                    os.environ["CTSNE_TEST_SIGINT"] = case["points"]
                # what the command restores when it returns: a process would exit then,
                # this child must not take a late press for an error of the command
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                code = main(argv(case["argv"]))
                sys.stdout.flush(), sys.stderr.flush()
            except BaseException as exc:
                os.write(2, f"worker child: {exc!r}".encode())
                code = 99
            os._exit(code)
        done = (0, 0)
        if case["delays"]:
            # the clock starts at the first progress line (the handler is installed by
            # then, whatever the machine's load did to the child's start)
            limit = time.perf_counter() + 60
            while os.path.getsize(case["log"]) == 0 and time.perf_counter() < limit:
                time.sleep(0.001)
        start = time.perf_counter()
        for delay in case["delays"]:  # Ctrl-C from outside, at that moment of the run
            time.sleep(max(0.0, start + delay - time.perf_counter()))
            done = os.waitpid(pid, os.WNOHANG)
            if done != (0, 0):  # it ended before
                break
            os.kill(pid, signal.SIGINT)
        _, status = done if done != (0, 0) else os.waitpid(pid, 0)
        results.append(os.waitstatus_to_exitcode(status))
    print(json.dumps(results))
""")


def _run_worker(root, cases):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               WARM_FIT=json.dumps(FIT))
    env.pop("CTSNE_TEST_SIGINT", None)
    proc = subprocess.run([sys.executable, "-c", WORKER, str(root)], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """Every case run: (scenario, points, -f) -> (exit code, its folder, its stderr)."""
    root = tmp_path_factory.mktemp("interrupt")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    rows = ["a,b,c,grp"] + [",".join(f"{v:.6f}" for v in x) + f",g{i % 2}"
                            for i, x in enumerate(X)]
    (root / "data.csv").write_text("\n".join(rows) + "\n")
    cases, folders = [], []
    for k, (scenario, points, force) in enumerate(CASES):
        folder = root / f"case{k}"
        folder.mkdir()
        if force:
            for name in SCENARIO_OUTPUTS[scenario]:
                (folder / name).write_text(_old(name))
        cases.append({"dir": str(folder), "log": str(root / f"case{k}.log"),
                      "points": points, "argv": ARGV[scenario] + (["-f"] if force else []),
                      "delays": [float(d) for d in points.split()] if scenario == "timed"
                      else []})
        folders.append(folder)
    codes = _run_worker(root, cases)
    return {case: (code, folder, Path(c["log"]).read_text())
            for case, c, code, folder in zip(CASES, cases, codes, folders, strict=True)}


def _old(name):
    return f"the user's old {name}\n"


def _files(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def _assert_untouched(folder, names, force, err):
    want = {name: _old(name).encode() for name in names} if force else {}
    assert _files(folder) == want, err[-1500:]
    assert "interrupted; no partial files were left" in err, err[-1500:]
    assert "PARTIAL" not in err and "wrote " not in err, err[-1500:]


def _assert_complete(folder, iterations, err):
    assert sorted(os.listdir(folder)) == sorted(OUTPUTS), err[-1500:]  # no temporary files
    emb = np.loadtxt(folder / "emb.csv", delimiter=",", skiprows=1, usecols=(1, 2))
    assert emb.shape == (N, 2) and np.all(np.isfinite(emb)), err[-1500:]
    with open(folder / "model.pkl", "rb") as fh:
        model = pickle.load(fh)
    assert iterations is None or model.n_iter_ == iterations, err[-1500:]
    np.testing.assert_allclose(model.embedding_, emb, rtol=1e-12, atol=1e-12)
    assert (folder / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _expected(scenario, points):
    """What the README promises for presses at ``points``: ("abort" | "stop" | "kept"),
    the iterations of the map written, the exit code."""
    first, *second = points.split(",")
    stops = {"optimisation 5": 50} if scenario == "resume" else \
        STOP_POINTS if scenario == "fit" else {}
    if first == "committed":
        return "kept", 40, 130
    if first not in stops:
        return "abort", None, 130
    if not second:
        return "stop", stops[first], 0 if stops[first] == 40 else 130
    return ("kept" if second[0] == "committed" else "abort"), stops[first], 130


def _timed(code, folder, force, err):
    """A press at an unknown moment: whatever it met, one of the promised outcomes."""
    assert code in (0, 130), err[-1500:]
    assert "Traceback" not in err and "Error" not in err, err[-1500:]
    if "no partial files were left" in err:
        _assert_untouched(folder, OUTPUTS, force, err)
        return "abort"
    _assert_complete(folder, None, err)
    if code == 0:
        return "done"
    assert "PARTIAL" in err or "they are complete" in err, err[-1500:]
    return "stop"


@pytest.mark.parametrize("case", CASES, ids=[f"{s}: {p}{' -f' if f else ''}"
                                             for s, p, f in CASES])
def test_ctrl_c(matrix, case):
    scenario, points, force = case
    code, folder, err = matrix[case]
    if scenario == "timed":
        _timed(code, folder, force, err)
        return
    outcome, iterations, exit_code = _expected(scenario, points)
    assert code == exit_code, err[-1500:]
    assert "Traceback" not in err and "Error" not in err, err[-1500:]
    if outcome == "abort":
        _assert_untouched(folder, SCENARIO_OUTPUTS[scenario], force, err)
        return
    _assert_complete(folder, iterations, err)
    if outcome == "kept":  # the outputs were complete when the (last) press came
        assert "interrupted after the outputs were written; they are complete" in err
        return
    assert "stopping after the current iterations" in err, err[-1500:]
    if exit_code == 0:
        assert "had run all its iterations before it could stop: emb.csv holds the " \
               "complete embedding" in err, err[-1500:]
    else:
        assert f"interrupted after {iterations} iterations: emb.csv holds a PARTIAL " \
               "embedding; continue with --resume model.pkl" in err, err[-1500:]

"""What several benchmarks share: the results file, the data sets and their priors.

Not a benchmark itself. ``record`` and ``run_meta`` write the rows of
``benchmarks/results.jsonl``; ``separated_data`` is the paper-style 10-D set whose classes
the data separates (``bench_balanced.py``, ``bench_pooled.py``, ``bench_tree_ties.py``);
``adult_priors`` and ``diamonds`` load UCI Adult and plotnine's diamonds (not bundled) with
their priors (``bench_auto_real.py``, ``bench_tree_ties.py``).
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def separated_data(n: int, classes: int, dims: int, rng: np.random.Generator):
    """20 Gaussian clusters in ``dims`` dimensions, repeated in every class with a
    class-specific shift (a batch effect that separates the classes): ``(X, codes)``."""
    centres = rng.normal(scale=4.0, size=(20, dims))
    shifts = rng.normal(scale=6.0, size=(classes, dims))
    codes = rng.integers(0, classes, n)
    X = centres[rng.integers(0, 20, n)] + shifts[codes] + rng.normal(size=(n, dims))
    return X, codes


def run_meta(load_before: float) -> dict:
    """The fields every recorded row starts with: date, machine, Python, load before."""
    return {"date": datetime.date.today().isoformat(), "machine": platform.node(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "load_1min_before": load_before}


def torch_meta(benchmark: str, device: str) -> dict:
    """The fields a torch benchmark's rows start with: date, machine, device, torch, GPU."""
    import torch

    return {"benchmark": benchmark,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores", "device": device,
            "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name() if device.startswith("cuda") else None}


def record(row: dict, save: bool, path: Path | str | None = None) -> None:
    """Print ``row`` as a JSON line and, with ``save``, append it to ``path`` (default
    results.jsonl)."""
    print(json.dumps(row), flush=True)
    if save:
        with open(HERE / "results.jsonl" if path is None else path, "a") as fh:
            fh.write(json.dumps(row) + "\n")


def run_child(script: str, args: list[str]) -> dict:
    """Run ``script`` with ``args`` in a fresh Python process and return the JSON object
    on its last stdout line (its peak memory is then its own), or ``{"error": ...}``."""
    proc = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def adult_priors(path: Path) -> tuple[np.ndarray, dict]:
    """UCI Adult's features (``experiments/representatives_check.py``: 8 standardised
    columns) and its priors as class codes: gender, relationship, occupation, education,
    education × gender."""
    experiments = str(HERE.parent / "experiments")
    if experiments not in sys.path:
        sys.path.insert(0, experiments)
    from representatives_check import load

    X, _ = load(path)
    lines = [ln for ln in path.read_text().splitlines()[1:] if ln.strip()]
    cols = list(zip(*(ln.split(", ") for ln in lines), strict=True))

    def codes(*columns):
        joint = np.array([" / ".join(v) for v in zip(*(cols[j] for j in columns),
                                                     strict=True)])
        return np.unique(joint, return_inverse=True)[1]
    return X, {"gender": codes(9), "relationship": codes(7), "occupation": codes(6),
               "education": codes(3), "education-x-gender": codes(3, 9)}


# diamonds' ordinal grades, worst first, and their columns in diamonds()' features
GRADES = {"cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
          "color": list("DEFGHIJ"),
          "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]}
GRADE_COLUMN = {"cut": 1, "color": 2, "clarity": 3}


def diamonds(path: Path) -> tuple[np.ndarray, dict]:
    """plotnine's diamonds: 7 numeric columns and the 3 ordinal grades as integers,
    standardised, and each grade's codes (0 = worst)."""
    rows = list(csv.DictReader(path.open()))
    codes = {g: np.array([levels.index(r[g]) for r in rows]) for g, levels in GRADES.items()}
    X = np.array([[float(r["carat"]), codes["cut"][a], codes["color"][a], codes["clarity"][a],
                   float(r["depth"]), float(r["table"]), np.log(float(r["price"])),
                   float(r["x"]), float(r["y"]), float(r["z"])] for a, r in enumerate(rows)])
    return (X - X.mean(axis=0)) / X.std(axis=0), codes


def query_rows(n: int, size: int, seed: int = 1) -> np.ndarray:
    """A fixed random subsample of ``size`` of ``n`` rows (all when ``n <= size``), sorted:
    the query side of the recall and preservation measures."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def exact_neighbours(X: np.ndarray, rows: np.ndarray, k: int, n_jobs: int = 2,
                     chunk: int = 2_000, algorithm: str = "brute") -> np.ndarray:
    """Exact ``k`` nearest other points (int64, nearest first) of the points ``rows`` among
    all of ``X``: brute force in BLAS (scikit-learn; ``algorithm="kd_tree"`` for a map),
    queried in chunks; each point left out of its own list (its farthest entry where it
    does not appear, as for duplicates)."""
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(algorithm=algorithm, n_jobs=n_jobs).fit(X)
    out = np.empty((len(rows), k), dtype=np.int64)
    for s in range(0, len(rows), chunk):
        r = rows[s:s + chunk]
        idx = nn.kneighbors(X[r], k + 1, return_distance=False)
        is_self = idx == r[:, None]
        is_self[~is_self.any(axis=1), -1] = True
        out[s:s + chunk] = idx[~is_self].reshape(len(r), k)
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def limit_threads(threads: int) -> None:
    """Cap BLAS, OpenMP and numba at ``threads`` in the child processes started after this
    (they read these variables when they load)."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        os.environ[var] = str(threads)


@contextlib.contextmanager
def c_stdout_captured():
    """Send what native code prints on file descriptor 1 to a file, read into the list.

    The parent reads the child's last stdout line as its result; C's buffered output
    would otherwise be flushed after it, at exit.
    """
    import ctypes
    import tempfile

    libc = ctypes.CDLL(None)
    log: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as tmp:
        sys.stdout.flush()
        libc.fflush(None)
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            yield log
        finally:
            sys.stdout.flush()
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            log.append(tmp.read())

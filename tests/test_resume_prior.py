"""``ctsne embed --resume`` without ``--prior`` resumes with the prior the model was
saved with (regression: the README's example failed for every model fitted with a prior,
the prior column being encoded into the features)."""

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np

ADULT = Path(__file__).resolve().parents[1] / "src" / "ctsne" / "data" / "adult_sample.csv"


def _ctsne(cwd, *args):
    return subprocess.run([sys.executable, "-m", "ctsne", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_resume_without_prior_uses_the_saved_prior(tmp_path):
    lines = ADULT.read_text().splitlines()[:201]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    first = _ctsne(tmp_path, "embed", "data.csv", "--prior", "gender", "-o", "a.csv",
                   "--save-model", "m.pkl", "--n-iter", "5", "--exaggeration-iter", "5",
                   "--threads", "1", "-q")
    assert first.returncode == 0, first.stderr
    again = _ctsne(tmp_path, "embed", "data.csv", "--resume", "m.pkl", "-o", "b.csv",
                   "--n-iter", "5", "--threads", "1", "--save-model", "m2.pkl")
    assert again.returncode == 0, again.stderr
    assert "resuming with the model's prior gender" in again.stderr
    with open(tmp_path / "m.pkl", "rb") as fh:
        before = pickle.load(fh)
    with open(tmp_path / "m2.pkl", "rb") as fh:
        after = pickle.load(fh)
    # the same prior and affinities, ten iterations in all
    assert after.n_iter_ == before.n_iter_ + 5
    assert np.array_equal(after.prior_.codes[0], before.prior_.codes[0])
    assert (after.P_ != before.P_).nnz == 0

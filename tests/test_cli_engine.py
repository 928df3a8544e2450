"""``ctsne embed --backend torch --device cpu`` chooses the engine of every algorithm."""

import numpy as np
import pytest

from ctsne import ConditionalLargeVis, ConditionalTSNE, ConditionalUMAP
from ctsne.interfaces.cli.main import main
from ctsne.interfaces.files import tables, writing

pytest.importorskip("torch")

FAST = ["--n-iter", "30", "--exaggeration-iter", "20", "--perplexity", "10"]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("engine")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3)) + 3 * (np.arange(120) % 3)[:, None]
    batch = np.array(["a", "b"])[np.arange(120) % 2]
    writing.write_columns(d / "in.csv", {**{f"x{j}": X[:, j] for j in range(3)},
                                         "batch": batch})
    return d, X, batch


def test_the_torch_engine_from_the_command_line_is_the_library_s(table):
    d, X, batch = table
    out = d / "torch.csv"
    assert main(["embed", str(d / "in.csv"), "--prior", "batch", "--backend", "torch",
                 "--device", "cpu", "--seed", "0", "-o", str(out), "-q", *FAST]) == 0
    cols = tables.read_table(out).columns
    Y_cli = np.column_stack([cols["ctsne1"], cols["ctsne2"]])
    # independent route: the estimator with the same settings
    Y = ConditionalTSNE(backend="torch", device="cpu", random_state=0, n_iter=30,
                        early_exaggeration_iter=20, perplexity=10).fit_transform(X, batch)
    np.testing.assert_allclose(Y_cli, Y, rtol=1e-6, atol=1e-6)


def test_device_without_the_torch_engine_is_refused(table, capsys):
    d, _, _ = table
    assert main(["embed", str(d / "in.csv"), "--device", "cuda", "-o",
                 str(d / "x.csv"), "-q"]) == 2
    assert "--backend torch" in capsys.readouterr().err
    assert not (d / "x.csv").exists()


@pytest.mark.parametrize("algorithm,cls", [("umap", ConditionalUMAP),
                                           ("largevis", ConditionalLargeVis)])
def test_every_algorithm_runs_on_the_torch_engine(table, algorithm, cls):
    d, X, batch = table
    out = d / f"{algorithm}.csv"
    assert main(["embed", str(d / "in.csv"), "--prior", "batch", "--algorithm", algorithm,
                 "--backend", "torch", "--device", "cpu", "--seed", "3", "--n-epochs", "40",
                 "-o", str(out), "-q"]) == 0
    cols = tables.read_table(out).columns
    Y_cli = np.column_stack([cols["ctsne1"], cols["ctsne2"]])
    Y = cls(backend="torch", device="cpu", random_state=3, n_epochs=40).fit_transform(X, batch)
    np.testing.assert_allclose(Y_cli, Y, rtol=1e-6, atol=1e-6)


def test_a_bad_device_is_named_as_the_option(table, capsys):
    d, _, _ = table
    assert main(["embed", str(d / "in.csv"), "--backend", "torch", "--device", "gpu",
                 "-o", str(d / "g.csv"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "--device must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'" in err and "None" not in err

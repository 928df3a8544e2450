"""ConditionalUMAP and ConditionalLargeVis where users are: ctsne.tl.cumap, the CLI's
--algorithm, and the tl record (issue 19, item 4)."""

import json
from pathlib import Path

import numpy as np
import pytest

import ctsne
from ctsne.interfaces.cli.main import main
from ctsne.metrics import knn_label_homogeneity

ADULT = Path(__file__).resolve().parents[1] / "src" / "ctsne" / "data" / "adult_sample.csv"


def test_tl_cumap_writes_the_map_and_a_json_record():
    sc = pytest.importorskip("scanpy")
    a = sc.datasets.pbmc68k_reduced()  # bundled with scanpy
    ctsne.tl.cumap(a, prior="phase", random_state=0, n_jobs=1, n_epochs=100)
    Y = a.obsm["X_cumap"]
    assert Y.shape == (a.n_obs, 2) and np.all(np.isfinite(Y))
    rec = json.loads(json.dumps(a.uns["X_cumap"]))  # JSON-serialisable
    # 765 variables: scanpy's rule takes obsm['X_pca']
    assert rec["params"]["prior"] == "phase"
    assert rec["params"]["representation"] == "obsm['X_pca']"
    assert rec["n_epochs"] == 100 and rec["affinities"] in ("standard", "balanced")
    # the record's weights are the model's: Eq. 4 for the phase classes
    counts = a.obs["phase"].value_counts().to_numpy().astype(float)
    n = counts.sum()
    rho = np.sum(counts * (counts - 1)) / (n * (n - 1))
    assert rec["beta"] == pytest.approx(ctsne.prior.DEFAULT_BETA)
    assert rec["alpha"] == pytest.approx((1 - rec["beta"] * (1 - rho)) / rho)
    # the cell types stay apart in the map
    assert knn_label_homogeneity(Y, a.obs["bulk_labels"].to_numpy(), k=10) > 0.5


@pytest.fixture
def table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = ADULT.read_text().splitlines()[:301]
    Path("data.csv").write_text("\n".join(lines) + "\n")
    return "data.csv"


@pytest.mark.parametrize("algorithm", ["umap", "largevis"])
def test_cli_algorithm_writes_a_map_and_a_model(table, capsys, algorithm):
    assert main(["embed", table, "--prior", "gender", "--algorithm", algorithm, "-o", "m.csv",
                 "--save-model", "m.pkl", "--seed", "0", "--threads", "1", "--n-epochs",
                 "60", "-q"]) == 0
    rows = Path("m.csv").read_text().splitlines()
    # the prior first, then every other label column of the input
    assert rows[0] == "id,ctsne1,ctsne2,gender,ethnicity,income" and len(rows) == 301
    import pickle

    with open("m.pkl", "rb") as fh:
        model = pickle.load(fh)
    expected = {"umap": ctsne.ConditionalUMAP, "largevis": ctsne.ConditionalLargeVis}
    assert isinstance(model, expected[algorithm])
    assert model.n_epochs_ == 60 and model.random_state == 0
    # the CLI's record of the input, through the estimator's public method
    assert "cli_fingerprint" in model.input_provenance_
    assert "gender=Male" not in list(model.feature_names_in_)  # the prior is no feature


@pytest.mark.parametrize("argv, message", [
    (["--algorithm", "umap", "--n-iter", "5"], "--n-iter is an option of t-SNE"),
    (["--algorithm", "umap", "--perplexity", "5"], "--perplexity is an option of"),
    (["--n-neighbors", "5"], "--n-neighbors is an option of --algorithm umap"),
    (["--algorithm", "largevis", "--min-dist", "0.3"], "--min-dist is an option of"),
    (["--algorithm", "umap", "--prior", "gender", "--plot", "p.png", "--compare"],
     "--compare draws t-SNE"),
])
def test_cli_refuses_options_of_another_algorithm_before_work(table, capsys, argv, message):
    assert main(["embed", table, "-o", "m.csv", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not Path("m.csv").exists()

"""Smoke runs of every experiment script at --small size, in-process."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def _load(name):
    sys.path.insert(0, str(EXPERIMENTS))
    try:
        spec = importlib.util.spec_from_file_location(f"exp_{name}", EXPERIMENTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(EXPERIMENTS))
    return module


def _run(name, tmp_path):
    res = _load(name).main(["--small", "--out", str(tmp_path)])
    return res, {p.name for p in tmp_path.iterdir()}


def test_synthetic_qualitative(tmp_path):
    res, files = _run("synthetic_qualitative", tmp_path)
    assert {"synthetic_embeddings.png", "synthetic_qualitative.json"} <= files
    emb = res["embeddings"]
    assert set(emb) == {"t-SNE", "ct-SNE, prior f1-4", "ct-SNE, prior f1-6"}
    # Even a short run shows f1-4 in t-SNE far more than ct-SNE with that prior does.
    tsne, ct = emb["t-SNE"], emb["ct-SNE, prior f1-4"]
    assert tsne["homogeneity_f14_k5"] > ct["homogeneity_f14_k5"] + 0.3
    saved = json.loads((tmp_path / "synthetic_qualitative.json").read_text())
    assert saved["n"] == 200


def test_synthetic_quantitative(tmp_path):
    res, files = _run("synthetic_quantitative", tmp_path)
    assert {"synthetic_laplacian.png", "synthetic_quantitative.json"} <= files
    s = res["scores"]
    assert len(s["f1-4"]["t-SNE"]) == len(res["k"])
    # at every k; smallest gaps measured 0.21 (f1-4) and 0.14 (f1-6)
    assert np.all(np.asarray(s["f1-4"]["ct-SNE f1-4"]) > np.asarray(s["f1-4"]["t-SNE"]) + 0.05)
    assert np.all(np.asarray(s["f1-6"]["ct-SNE f1-6"]) > np.asarray(s["f1-6"]["t-SNE"]) + 0.05)


def test_adult(tmp_path):
    res, files = _run("adult", tmp_path)
    assert {"adult_embeddings.png", "adult_laplacian.png", "adult.json"} <= files
    g = res["scores"]["gender"]
    assert np.mean(g["ct-SNE gender"]) > np.mean(g["t-SNE"]) + 0.15  # measured 0.43, 0.11


def test_parameter_sensitivity(tmp_path):
    res, files = _run("parameter_sensitivity", tmp_path)
    assert {"parameter_sensitivity.png", "parameter_sensitivity.json"} <= files
    rows = res["rows"]
    assert [r["beta"] for r in rows] == [0.01, 0.5, 1.0]
    for r in rows:
        assert r["kl"] == pytest.approx(r["kl_tsne"] + r["prior_term"])
        assert r["kl"] == pytest.approx(r["kl_estimator"], rel=1e-6)
    assert rows[-1]["prior_term"] == pytest.approx(0.0, abs=1e-9)   # β' = 1 is t-SNE
    assert rows[0]["prior_term"] < 0


def test_baselines(tmp_path):
    res, files = _run("baselines", tmp_path)
    assert {"baselines_cca.png", "baselines.json"} <= files
    cca = {r["method"]: r["scores"] for r in res["cca"]["runs"]}
    # measured 0.98 against 0.17 at most
    assert cca["ct-SNE"]["cluster"] > max(cca["CCA (null) + t-SNE"]["cluster"],
                                          cca["CCA (least) + t-SNE"]["cluster"]) + 0.3
    for r in res["cca"]["runs"]:
        assert 0.0 <= r["split_within_clusters"] <= 1.0
    if "skipped" not in res["aae"]:
        assert "baselines_aae.png" in files


def test_runtime(tmp_path):
    res, files = _run("runtime", tmp_path)
    assert {"runtime.json", "runtime.png"} <= files
    for row in res["rows"]:
        assert row["approx"] >= 0 and row["exact"] >= 0 and not row["exact_estimated"]


def test_iterative(tmp_path):
    res, files = _run("iterative", tmp_path)
    assert {"iterative.png", "iterative.json"} <= files
    for study in ("synthetic", "adult"):
        assert [e["round"] for e in res[study]] == [0, 1]
        assert res[study][1]["factored_out"] == [res[study][0]["next_prior"]]


def test_separated_priors(tmp_path):
    res, files = _run("separated_priors", tmp_path)
    assert {"separated_priors_embeddings.png", "separated_priors_metrics.png",
            "separated_priors.json", "separated_priors.md"} <= files
    assert set(res["datasets"]) == {"synthetic", "digits-scanner", "digits-shifted"}
    for ds in res["datasets"].values():
        runs = ds["runs"]
        assert {"input", "t-SNE", "ct-SNE"} <= set(runs)
        # the batches separate the input space: little of P's mass crosses them
        cm = ds["p_cross_mass"]
        assert cm["overall"] < 0.3 * cm["random"]
        assert len(cm["per_class"]) == ds["n_batches"]
        # even a short ct-SNE run mixes the batches more than t-SNE does
        t, ct = runs["t-SNE"]["measures"], runs["ct-SNE"]["measures"]
        # (smallest gaps measured: homogeneity 0.26, iLISI 0.38)
        assert ct["prior_homogeneity"] < t["prior_homogeneity"] - 0.1
        assert ct["ilisi"] > t["ilisi"] + 0.15
        assert 1.0 <= t["ilisi"] <= ds["n_batches"] and 0.0 <= ct["cross_coverage"] <= 1.0
    text = (tmp_path / "separated_priors.md").read_text()
    assert "| ct-SNE |" in text and "## digits-scanner" in text


def test_representatives_check(tmp_path):
    # the bundled Adult sample, every far search through representatives, against exact
    res, files = _run("representatives_check", tmp_path)
    assert "representatives_check.json" in files
    assert 0.0 < res["P_total_variation"] < 0.05
    reps, exact = res["representatives"], res["exact"]
    assert abs(reps["P_cross_share"] - exact["P_cross_share"]) < 1e-9  # both balanced
    assert abs(reps["gender_homogeneity"] - exact["gender_homogeneity"]) < 0.05


def test_integration(tmp_path, monkeypatch):
    """Issue 20's benchmark on one set, a missing peer skipped with the reason."""
    module = _load("integration")
    need = module._need

    def missing(name):  # a peer that is not installed is skipped with the reason
        if name == "scanorama":
            raise module.Skipped("scanorama not installed (pip install ctsne[bench])")
        return need(name)

    monkeypatch.setattr(module, "_need", missing)
    peers = ["Harmony → t-SNE"] if importlib.util.find_spec("harmonypy") else []
    res = module.main(["--small", "--out", str(tmp_path), "--sets", "digits-shifted",
                       "--methods", "ctsne defaults", "t-SNE", "Scanorama → t-SNE", *peers])
    files = {p.name for p in tmp_path.iterdir()}
    assert {"integration_small.md", "integration_small.json", "integration_embeddings.png",
            "integration_axes.png"} <= files
    out = res["sets"]["digits-shifted"]
    assert "scanorama not installed" in out["skipped"]["Scanorama → t-SNE"]
    s = out["scores"]
    # half the digits shifted a pixel: t-SNE keeps the halves apart, ctsne's default mixes
    assert s["t-SNE"]["batch_homogeneity"] > 0.8
    assert s["ctsne defaults"]["batch"] > s["t-SNE"]["batch"] + 0.2
    assert "balanced P" in out["affinities"]


def test_tail_mass(tmp_path):
    """The trim's experiment: fewer entries with a tail, the module's value restored."""
    from ctsne.affinities import balanced

    before = balanced.TAIL_MASS
    res = _load("tail_mass").main(["--small", "--out", str(tmp_path), "--sets",
                                   "digits-scanner", "--seeds", "0", "--tails", "0", "0.05"])
    assert {"tail_mass.md", "tail_mass.json"} <= {p.name for p in tmp_path.iterdir()}
    whole, trimmed = res["rows"]
    assert whole["affinities"] == trimmed["affinities"] == "balanced"
    assert trimmed["nnz"] < 0.8 * whole["nnz"]
    assert 0.0 <= trimmed["overall"] <= 1.0
    assert balanced.TAIL_MASS == before


def test_state_finders(tmp_path):
    """Harmony's clusters, the default states, never put two synthetic types in one state,
    and the pair shares are those counted pair by pair."""
    module = _load("state_finders")
    rows = module.main(["--small", "--sets", "synthetic", "--seeds", "0", "--out",
                        str(tmp_path)])
    assert rows["synthetic | Harmony's clusters (default)"]["cross"] == 0.0
    assert (tmp_path / "state_finders.md").exists()
    rng = np.random.default_rng(0)
    s, b, t = rng.integers(0, 3, 40), rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    other = b[:, None] != b[None, :]
    same_s, same_t = s[:, None] == s[None, :], t[:, None] == t[None, :]
    want = ((same_s & same_t & other).sum() / (same_t & other).sum(),
            (same_s & ~same_t & other).sum() / (~same_t & other).sum())
    np.testing.assert_allclose(module.pair_shares(s, b, t), want, rtol=1e-12)

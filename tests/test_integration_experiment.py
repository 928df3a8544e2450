"""Smoke run of experiments/integration.py at --small size, in-process (issue 20)."""

import importlib.util
import sys
from pathlib import Path

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


def test_integration(tmp_path, monkeypatch):
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

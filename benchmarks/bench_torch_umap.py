"""ConditionalUMAP on the torch engine against the numba engine and GPU peers, in one run.

    python benchmarks/bench_torch_umap.py                                # CPU: 20k
    python benchmarks/bench_torch_umap.py --sizes 1M --device cuda       # a GPU machine
    python benchmarks/bench_torch_umap.py --sizes 1M --runners torch torch-plain torchdr-umap \\
        torchdr-tsne cuml-umap

Data: ``bench_vs_opentsne.make_data`` (10 features, a 5-class prior that the clusters
follow). Runners, each in a fresh process:

- ``torch``: ``ConditionalUMAP(backend="torch")`` with the 5-class prior (``--affinities
  balanced:0.85`` or ``standard`` fixes the graph instead of "auto"'s rule);
- ``torch-plain``: the same without a prior (graph and SGD on the device);
- ``numba``: the CPU engine with the prior; ``umap-learn``: umap-learn's UMAP (plain);
- ``torchdr-umap``, ``torchdr-tsne``: TorchDR's UMAP and TSNE (plain; ``pip install
  torchdr``, pure Python: carry its wheel to a machine without a registry), with FAISS
  or KeOps for the neighbours where one imports, else its dense torch backend (only for
  small n: n² distances);
- ``cuml-umap``: RAPIDS cuML's UMAP, where it imports.

Each row has the time (the estimators' own stage times where they report them), the peak
device memory on CUDA and the 10-NN preservation of a 20,000-point sample (the sample's
neighbours in the data found again in the map, :func:`ctsne.metrics.neighborhood_preservation`)
and its prior homogeneity. Rows go to stdout and, with device, load and date, to
``benchmarks/results.jsonl``; compare times only within one run on one machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import record, run_child, torch_meta  # noqa: E402

SIZES = {"5k": 5_000, "20k": 20_000, "100k": 100_000, "1M": 1_000_000, "10M": 10_000_000}
FEATURES = 10
SAMPLE = 20_000
# the module each runner needs beyond ctsne
NEEDS = {"umap-learn": "umap", "torchdr-umap": "torchdr", "torchdr-tsne": "torchdr",
         "cuml-umap": "cuml"}


def _load() -> float:
    return os.getloadavg()[0]


def _torchdr_backend() -> str | None:
    """FAISS or KeOps for TorchDR's neighbours where one imports, else its dense backend."""
    for module, name in (("faiss", "faiss"), ("pykeops", "keops")):
        if importlib.util.find_spec(module) is not None:
            return name
    return None


def run_one(size: str, runner: str, device: str, n_epochs: int | None,
            affinities: str) -> dict:
    """Body of a child process: one runner on one size."""
    import resource

    import numpy as np

    sys.path.insert(0, str(HERE))
    from bench_vs_opentsne import make_data

    n = SIZES[size]
    X, five, _ = make_data(n, FEATURES)
    X = X.astype(np.float32) if runner.startswith(("torchdr", "cuml")) else X
    out = {"size": size, "n": n, "d": FEATURES, "runner": runner, "load_before": _load()}
    cuda = device.startswith("cuda")
    if cuda:
        import torch

        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    if runner in ("torch", "torch-plain", "numba"):
        from ctsne import ConditionalUMAP

        extra = {} if runner == "numba" else {"backend": "torch", "device": device}
        mode, _, weight = affinities.partition(":")
        model = ConditionalUMAP(random_state=0, n_epochs=n_epochs, affinities=mode,
                                within_weight=float(weight) if weight else None, **extra)
        Y = model.fit_transform(X, None if runner == "torch-plain" else five)
        out.update({f"{k}_s": v for k, v in model.timings_.items()})
        out["affinities_mode"] = model.affinities_
    elif runner == "umap-learn":
        import umap

        Y = umap.UMAP(random_state=0, n_epochs=n_epochs).fit_transform(X)
    elif runner.startswith("torchdr"):
        import torchdr

        backend = _torchdr_backend()
        out["torchdr_backend"] = backend
        if runner == "torchdr-umap":
            est = torchdr.UMAP(n_neighbors=15, max_iter=n_epochs or 200, device=device,
                               backend=backend, random_state=0)
        else:
            est = torchdr.TSNE(perplexity=30, max_iter=750, device=device, backend=backend,
                               random_state=0)
        Y = est.fit_transform(X)
        Y = Y.detach().cpu().numpy() if hasattr(Y, "detach") else np.asarray(Y)
    elif runner == "cuml-umap":
        from cuml.manifold import UMAP

        Y = UMAP(n_neighbors=15, n_epochs=n_epochs, random_state=0).fit_transform(X)
        Y = np.asarray(Y.get() if hasattr(Y, "get") else Y)
    else:
        raise ValueError(f"unknown runner {runner!r}")
    if cuda:
        import torch

        torch.cuda.synchronize()
        out["device_peak_gb"] = torch.cuda.max_memory_allocated() / 2**30
        out["device_name"] = torch.cuda.get_device_name()
    out["total_s"] = time.perf_counter() - t0
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    from ctsne.metrics import knn_label_homogeneity, neighborhood_preservation

    Y = np.asarray(Y, dtype=np.float64)
    sample = np.random.default_rng(0).choice(n, min(n, SAMPLE), replace=False)
    out["nn10_preservation"] = neighborhood_preservation(X[sample].astype(np.float64),
                                                         Y[sample], 10)
    out["homogeneity_prior"] = knn_label_homogeneity(Y[sample], five[sample])
    out["load_after"] = _load()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", default=["20k"], choices=list(SIZES))
    ap.add_argument("--runners", nargs="*",
                    default=["torch", "torch-plain", "numba", "umap-learn", "torchdr-umap",
                             "torchdr-tsne", "cuml-umap"])
    ap.add_argument("--device", default=None, help="torch device (default: cuda if seen)")
    ap.add_argument("--affinities", default="auto",
                    help="'auto' (the rule's graph) or e.g. 'balanced:0.85' / 'standard'")
    ap.add_argument("--n-epochs", type=int, default=None,
                    help="epochs of every UMAP (default: umap-learn's rule, 200 above 10k)")
    ap.add_argument("--child", nargs=2, metavar=("SIZE", "RUNNER"), help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results.jsonl"))
    a = ap.parse_args(argv)
    import torch

    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    epochs = [] if a.n_epochs is None else ["--n-epochs", str(a.n_epochs)]
    if a.child:
        print(json.dumps(run_one(a.child[0], a.child[1], device, a.n_epochs, a.affinities)))
        return
    meta = {**torch_meta("bench_torch_umap", device), "affinities": a.affinities,
            "n_epochs": a.n_epochs}
    for size in a.sizes:
        for runner in a.runners:
            module = NEEDS.get(runner)
            if module and importlib.util.find_spec(module) is None:
                print(f"# {runner}: {module} not installed, skipped", flush=True)
                continue
            if runner.startswith("torchdr") and _torchdr_backend() is None \
                    and SIZES[size] > 50_000:
                print(f"# {runner} at {size}: neither faiss nor pykeops imports, and "
                      "TorchDR's dense backend holds n² distances; skipped", flush=True)
                continue
            row = {**meta, **run_child(__file__, ["--child", size, runner, "--device", device,
                                    "--affinities", a.affinities, *epochs])}
            record({"size": size, "runner": runner, **row}, True, a.out)


if __name__ == "__main__":
    main()

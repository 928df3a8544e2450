"""The torch engine (``backend="torch"``) against the numba engine and GPU t-SNE libraries.

    python benchmarks/bench_torch.py                              # CPU: 20k, 100k
    python benchmarks/bench_torch.py --sizes 1M 10M --device cuda # a GPU machine
    python benchmarks/bench_torch.py --sizes 1M --affinities balanced:0.85  # P on the device
    python benchmarks/bench_torch.py --sizes 1M --runners torch numba cuml tsnecuda
    python benchmarks/bench_torch.py --gradient --sizes 20k 100k  # one gradient, both engines

Data: ``bench_vs_opentsne.make_data`` (the 1M case of BENCHMARKS.md: 10 features, a
5-class prior that the data's clusters follow), 250 early-exaggeration + 500 iterations.
Runners, each in a fresh process (peak memory per run):

- ``torch``: ``ConditionalTSNE(backend="torch", device=...)`` with the 5-class prior
  (P and the optimisation on the device; ``--affinities balanced:0.85`` or ``standard``
  fixes P instead of "auto"'s rule);
- ``torch64``: the same in float64 (the CPU's default; on a GPU, float32 is);
- ``numba``: the CPU engine with the same prior (n_jobs = all cores);
- ``cuml``: RAPIDS cuML's ``TSNE`` (plain t-SNE, FFT), where it imports;
- ``tsnecuda``: tsnecuda's ``TSNE`` (plain t-SNE), where it imports.

A size is skipped when the device's memory cannot hold it (``BYTES_PER_POINT``: the
device peak per point of the 1M fit with P built on the device, measured on an H100).
Results go to stdout and, as JSON lines with device, load and date, to
``benchmarks/results.jsonl``; compare times only within one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import record, run_child, torch_meta  # noqa: E402

SIZES = {"20k": 20_000, "100k": 100_000, "1M": 1_000_000, "10M": 10_000_000}
FEATURES = 10
# Device bytes per point the torch engine needs: 33.2 GB at 10⁶ points with the
# 5-class label-balanced P built on the device (H100, 2026-11-27), reached while P is
# built (profile_torch.py read the same peak before the first gradient); the likely part is
# the symmetrisation's coalesce of 2·182 COO entries per point (int64 index pairs, float64
# values, sorted with copies). The earlier estimate, 6 kB, counted P's CSR only; 10⁷
# points need a leaner symmetrisation before they fit on one card.
BYTES_PER_POINT = 34_000


def _load() -> float:
    return os.getloadavg()[0]


def _device_memory(device: str) -> int | None:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.device(device)).total_memory
    return None


def run_one(size: str, runner: str, device: str, ee_iter: int, n_iter: int,
            affinities: str = "auto") -> dict:
    """Body of a child process: one runner on one size."""
    import resource

    import numpy as np

    sys.path.insert(0, str(HERE))
    from bench_vs_opentsne import make_data

    n = SIZES[size]
    X, five, _ = make_data(n, FEATURES)
    out = {"size": size, "n": n, "d": FEATURES, "runner": runner, "load_before": _load()}
    t0 = time.perf_counter()
    if runner in ("torch", "torch64", "numba"):
        from ctsne.estimator.tsne import ConditionalTSNE

        extra = {} if runner == "numba" else {"backend": "torch", "device": device}
        if runner == "torch64":
            extra["precision"] = "float64"
        mode, _, weight = affinities.partition(":")
        model = ConditionalTSNE(random_state=0, early_exaggeration_iter=ee_iter,
                                n_iter=n_iter, affinities=mode,
                                within_weight=float(weight) if weight else None, **extra)
        if runner != "numba" and device.startswith("cuda"):
            import torch

            torch.cuda.reset_peak_memory_stats()
        Y = model.fit_transform(X, five)
        out.update({f"{k}_s": v for k, v in model.timings_.items()})
        out["kl"] = model.kl_divergence_
        out["affinities_mode"] = model.affinities_
        if runner != "numba" and device.startswith("cuda"):
            import torch

            out["device_peak_gb"] = torch.cuda.max_memory_allocated() / 2**30
            out["device_name"] = torch.cuda.get_device_name()
    elif runner == "cuml":
        from cuml.manifold import TSNE

        Y = TSNE(n_components=2, perplexity=30, method="fft", random_state=0,
                 n_iter=ee_iter + n_iter).fit_transform(X)
        Y = np.asarray(Y.get() if hasattr(Y, "get") else Y)
    elif runner == "tsnecuda":
        from tsnecuda import TSNE

        Y = TSNE(n_components=2, perplexity=30, num_steps=ee_iter + n_iter,
                 random_seed=0).fit_transform(X)
    else:
        raise ValueError(f"unknown runner {runner!r}")
    out["total_s"] = time.perf_counter() - t0
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    # the prior's and the complement's homogeneity on a sample (10-NN of the map)
    from ctsne.metrics.neighborhoods import knn_label_homogeneity

    sample = np.random.default_rng(0).choice(n, min(n, 20_000), replace=False)
    out["homogeneity_prior"] = knn_label_homogeneity(Y[sample], five[sample])
    out["load_after"] = _load()
    return out


def gradient_calls(size: str, device: str, repeats: int) -> list[dict]:
    """CPU (or device) seconds per gradient evaluation, both engines, one thread each, on
    the same P and a t-SNE-like layout of the data (the clusters spread over a span of
    ~0.3·√n, as converged maps have): what a busy shared machine disturbs least."""
    import numba
    import numpy as np
    import torch

    sys.path.insert(0, str(HERE))
    from bench_vs_opentsne import make_data

    from ctsne.affinities.modes import input_affinities
    from ctsne.forces.gradient import ConditionalGradient
    from ctsne.prior import make_prior
    from ctsne.torch_engine.gradient import TorchGradient

    numba.set_num_threads(1)
    torch.set_num_threads(1)
    n = SIZES[size]
    X, five, _ = make_data(n, FEATURES)
    P = input_affinities(X, 30.0, None, "standard").P
    prior = make_prior(five, n, beta=0.01)
    rng = np.random.default_rng(0)
    span = 0.3 * np.sqrt(n)
    Y = rng.normal(size=(n, 2)) * 0.02 * span + rng.uniform(-span / 2, span / 2, (20, 2))[
        rng.integers(0, 20, n)]
    out = []
    engines = [("numba auto", lambda: ConditionalGradient(P, prior, 2, "auto")),
               ("numba fft", lambda: ConditionalGradient(P, prior, 2, "fft")),
               ("torch fft float64", lambda: TorchGradient(P, prior, 2, "fft",
                                                           torch.device(device),
                                                           torch.float64)),
               ("torch fft float32", lambda: TorchGradient(P, prior, 2, "fft",
                                                           torch.device(device),
                                                           torch.float32))]
    for name, make in engines:
        grad = make()
        is_torch = name.startswith("torch")
        Yin = torch.as_tensor(Y, device=device).to(grad.dtype) if is_torch else Y
        grad(Yin)
        best = np.inf
        for _ in range(repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            grad(Yin)
            if is_torch and device.startswith("cuda"):
                torch.cuda.synchronize()
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            best = min(best, wall if device.startswith("cuda") and is_torch else cpu)
        out.append({"size": size, "n": n, "engine": name, "seconds_per_call": best,
                    "clock": "wall (GPU)" if device.startswith("cuda") and is_torch
                    else "CPU, one thread", "load": _load()})
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", default=["20k", "100k"], choices=list(SIZES))
    ap.add_argument("--runners", nargs="*", default=["torch", "numba", "cuml", "tsnecuda"])
    ap.add_argument("--device", default=None, help="torch device (default: cuda if seen)")
    ap.add_argument("--affinities", default="auto",
                    help="'auto' (the rule's P) or e.g. 'balanced:0.85' / 'standard'")
    ap.add_argument("--ee-iter", type=int, default=250)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--child", nargs=2, metavar=("SIZE", "RUNNER"), help=argparse.SUPPRESS)
    ap.add_argument("--gradient", action="store_true",
                    help="time single gradient evaluations instead of whole fits")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(HERE / "results.jsonl"))
    a = ap.parse_args(argv)
    import importlib.util

    import torch

    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if a.child:
        print(json.dumps(run_one(a.child[0], a.child[1], device, a.ee_iter, a.iters,
                                 a.affinities)))
        return
    meta = {**torch_meta("bench_torch", device), "ee_iter": a.ee_iter, "iters": a.iters}
    memory = _device_memory(device)
    if a.gradient:
        for size in a.sizes:
            for row in gradient_calls(size, device, a.repeats):
                row = {**meta, "kind": "gradient", **row}
                print(json.dumps(row), flush=True)
                with open(a.out, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
        return
    for size in a.sizes:
        n = SIZES[size]
        for runner in a.runners:
            module = {"cuml": "cuml", "tsnecuda": "tsnecuda"}.get(runner)
            if module and importlib.util.find_spec(module) is None:
                print(f"# {runner}: not installed, skipped", flush=True)
                continue
            if runner.startswith("torch") and memory is not None \
                    and n * BYTES_PER_POINT > 0.9 * memory:
                print(f"# {runner} at {size}: ~{n * BYTES_PER_POINT / 2**30:.0f} GB needed, "
                      f"{memory / 2**30:.0f} GB on the device, skipped", flush=True)
                continue
            row = {**meta, **run_child(__file__, ["--child", size, runner, "--device", device,
                                    "--affinities", a.affinities,
                                    "--ee-iter", str(a.ee_iter), "--iters", str(a.iters)])}
            record({"size": size, "runner": runner, **row}, True, a.out)


if __name__ == "__main__":
    main()

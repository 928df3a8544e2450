"""Where the torch engine's time goes on a GPU: the label-balanced P's stages and one
gradient, at one size (a device-machine profile; see BENCHMARKS.md, "The torch engine").

    python benchmarks/profile_torch.py 1000000 --out profile.txt

Stages of the balanced P (own-class search, other-class search, calibration,
symmetrisation, the copy to a scipy CSR) are timed with the device synchronised; the
gradient (attraction, FFT repulsion) on a t-SNE-like layout is timed per call and
profiled by ``torch.profiler`` (the kernels with the most device time, and the launch
count).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    import torch

    sys.path.insert(0, str(HERE))
    from bench_vs_opentsne import make_data

    from ctsne.affinities.balanced import other_block_width
    from ctsne.affinities.options import n_neighbors_for
    from ctsne.prior import make_prior
    from ctsne.torch_engine import affinities as aff
    from ctsne.torch_engine import neighbors as nb
    from ctsne.torch_engine.gradient import TorchGradient

    dev = torch.device(a.device)
    cuda = dev.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def timed(label, f):
        sync()
        t = time.perf_counter()
        r = f()
        sync()
        print(f"{label:<40s} {time.perf_counter() - t:8.3f} s", flush=True)
        return r

    n = a.n
    X, five, _ = make_data(n, 10)
    Xd = torch.as_tensor(X, device=dev)
    codes = torch.as_tensor(five.astype(np.int64), device=dev)
    k = n_neighbors_for(30.0, n)
    ko = other_block_width(k, 5)
    f32 = torch.float32
    timed("warm-up search (1000 rows)", lambda: nb.own_class_knn(Xd[:1000], codes[:1000], k, f32))
    for entries in (1 << 24, nb.BLOCK_ENTRIES[dev.type]):
        nb.BLOCK_ENTRIES[dev.type] = entries
        own = timed(f"own-class search, blocks of {entries:.1e}",
                    lambda: nb.own_class_knn(Xd, codes, k, f32))
        other = timed(f"other-class search, blocks of {entries:.1e}",
                      lambda: nb.other_class_knn(Xd, codes, ko, f32))
    sizes = torch.bincount(codes).to(torch.float64)
    w = torch.full((n, 1), 0.85, dtype=torch.float64, device=dev)
    ar = torch.arange(4, device=dev)[None, :]
    block_class = ar + (ar >= codes[:, None]).to(ar.dtype)
    share = sizes[block_class] / (n - sizes[codes])[:, None]
    weights = torch.cat([w, (1.0 - w) * share], 1)
    cond = timed("calibration (_blocks)", lambda: aff._blocks(
        torch.cat([own[1], other[1]], 1), [k] + [ko] * 4, 30.0, k, weights))
    Pt = timed("symmetrize_device", lambda: aff.symmetrize_device(
        torch.cat([own[0], other[0]], 1), cond))
    P = timed("to_scipy", lambda: aff.to_scipy(Pt))
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
    print(f"P: {P.nnz / n:.1f} entries per row; device peak {peak:.1f} GB", flush=True)
    Pt = own = other = cond = None  # free the device memory before the gradient

    prior = make_prior(five, n, beta=0.01)
    rng = np.random.default_rng(0)
    span = 0.3 * np.sqrt(n)
    Y = rng.normal(size=(n, 2)) * 0.02 * span + rng.uniform(-span / 2, span / 2, (20, 2))[
        rng.integers(0, 20, n)]
    grad = timed("TorchGradient set-up", lambda: TorchGradient(P, prior, 2, "fft", dev, f32))
    Yd = torch.as_tensor(Y, device=dev, dtype=f32)
    for _ in range(3):
        grad(Yd)
    grad.timings = {"attraction": 0.0, "repulsion": 0.0}
    timed(f"{a.calls} gradients", lambda: [grad(Yd) for _ in range(a.calls)])
    print({k_: f"{v / a.calls * 1e3:.2f} ms per call" for k_, v in grad.timings.items()})
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        for _ in range(3):
            grad(Yd)
        sync()
    table = prof.key_averages().table(sort_by="self_cuda_time_total" if cuda
                                      else "self_cpu_time_total", row_limit=22,
                                      max_name_column_width=60)
    print(table)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=15,
                                    max_name_column_width=60))


if __name__ == "__main__":
    main()

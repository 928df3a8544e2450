"""The torch engine's gradient in one process against the same work split over a gloo
process group, on this machine's CPU cores (``ctsne.torch_engine.distributed``).

    python benchmarks/bench_distributed.py --n 200000 --world 2

P (a 5-class prior on ``common.separated_data``) is built once, here; each run then times
``--calls`` FFT gradients at a fixed spread-out map: one process with all cores as torch
threads, and ``--world`` processes with ``cores / world`` threads each (the same cores).
The row is appended to ``benchmarks/results.jsonl`` with the machine, date and load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import record, run_meta, separated_data  # noqa: E402


def _time(rank, world, store, paths, calls, threads, out):
    import torch

    from ctsne.prior import make_prior
    from ctsne.torch_engine.distributed import Shard
    from ctsne.torch_engine.gradient import TorchGradient

    torch.set_num_threads(threads)
    shard = None
    if world > 1:
        torch.distributed.init_process_group("gloo", init_method=f"file://{store}",
                                             rank=rank, world_size=world)
        shard = Shard.current()
    P = sp.load_npz(paths["P"])
    codes = np.load(paths["codes"])
    Y = torch.as_tensor(np.load(paths["Y"]))
    grad = TorchGradient(P, make_prior(codes, len(codes)), 2, "fft", torch.device("cpu"),
                         torch.float64, shard=shard)
    grad(Y)  # warm: kernel spectra, allocator
    t0 = time.perf_counter()
    for _ in range(calls):
        grad(Y)
    seconds = (time.perf_counter() - t0) / calls
    if rank == 0:
        np.save(out, np.array([seconds]))
    if world > 1:
        torch.distributed.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    import torch

    from ctsne.affinities.modes import input_affinities

    load = os.getloadavg()[0]
    rng = np.random.default_rng(0)
    X, codes = separated_data(args.n, 5, 10, rng)
    P = input_affinities(X, 30.0, codes, affinities="standard").P
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"P": f"{tmp}/P.npz", "codes": f"{tmp}/codes.npy", "Y": f"{tmp}/Y.npy"}
        sp.save_npz(paths["P"], P)
        np.save(paths["codes"], codes)
        # a t-SNE map of n points spans about 0.3·√n units (docs/distributed.rst)
        np.save(paths["Y"], rng.normal(scale=0.05 * np.sqrt(args.n), size=(args.n, 2)))
        mp = torch.multiprocessing.get_context("spawn")
        seconds = {}
        for world in (1, args.world):
            out = f"{tmp}/t{world}.npy"
            procs = [mp.Process(target=_time, args=(r, world, f"{tmp}/store{world}", paths,
                                                    args.calls, max(1, cores // world), out))
                     for r in range(world)]
            for p in procs:
                p.start()
            for p in procs:
                p.join()
            if any(p.exitcode for p in procs):
                raise SystemExit(f"a process of the {world}-process run failed")
            seconds[world] = float(np.load(out)[0])
    record({**run_meta(load), "benchmark": "bench_distributed", "n": args.n, "classes": 5,
            "nnz": int(P.nnz), "cores": cores, "one_process_s_per_call": seconds[1],
            f"{args.world}_processes_s_per_call": seconds[args.world],
            "ratio": seconds[args.world] / seconds[1]}, not args.no_record)


if __name__ == "__main__":
    main()

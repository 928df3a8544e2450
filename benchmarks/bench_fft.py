"""FFT interpolation repulsion: timings against the exact kernel and openTSNE, stage split.

Run ``python benchmarks/bench_fft.py`` (``--quick`` stops at 10⁵ points; ``--only NAME``
runs one table). Prints:

1. ``repulsion_fft`` vs ``repulsion_exact`` for m = 100 … 10⁴ (d = 2): the crossover
   below which the exact kernel is faster, i.e. ``EXACT_BELOW["fft"]`` in conditional.py.
   Two layouts: a group with its own t-SNE span (~0.3·√m), and a scattered group (a
   class spread over an 80-unit embedding), whose grid is much larger. Timed with one
   thread (the work) and with all (what a busy, shared machine makes of it).
2. ``repulsion_fft`` for n = 10⁴, 10⁵, 10⁶ in d = 2 and d = 1, next to openTSNE's FFT
   negative gradient on the same points (``openTSNE._tsne.estimate_negative_gradient_fft_*``,
   its defaults: p = 3, ≥ 50 boxes, 1 box per unit, one thread) and to ours at FIt-SNE's
   resolution, with each one's relative force error on 1000 rows against the exact sum.
3. Stage split at 10⁶ points (d = 2): wall and CPU seconds per stage, and how the CPU
   time spreads over the process's threads (from /proc), to show that every stage uses
   both cores. The kernel spectra are cached between calls with the same grid; their
   cost on a miss is shown apart.

Layouts imitate converged t-SNE embeddings: Gaussian blobs of varied width plus 5 %
uniform background; 2-D spans grow like 0.3·√n (300 at 10⁶, as openTSNE gives), 1-D spans
like n/100. Times are the best of several calls after a warm-up: the machine may be
shared, so compare ratios from the same run, and read the CPU columns too.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

import ctsne.forces.repulsion.fft as fft
from ctsne.forces.repulsion.exact import repulsion_exact
from ctsne.forces.repulsion.fft import repulsion_fft


def tsne_like(n: int, d: int, span: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = 30
    centres = rng.uniform(-span / 2, span / 2, (k, d))
    widths = rng.uniform(0.02, 0.06, k) * span
    blob = rng.integers(0, k, n)
    Y = centres[blob] + rng.normal(size=(n, d)) * widths[blob, None]
    bg = rng.random(n) < 0.05
    Y[bg] = rng.uniform(-span / 2, span / 2, (bg.sum(), d))
    return Y


def span_for(n: int, d: int) -> float:
    return max(3.0, 0.3 * np.sqrt(n)) if d == 2 else max(3.0, n / 100)


def best(fn, *args, repeats: int = 5, **kwargs) -> tuple[float, float]:
    """Best wall and CPU seconds of ``repeats`` calls, after one warm-up call."""
    fn(*args, **kwargs)
    walls, cpus = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn(*args, **kwargs)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


@numba.njit(parallel=True, cache=True)
def exact_rows(Y, rows):
    """Exact forces on the given rows only (the reference at sizes where O(n²) is too slow)."""
    F = np.zeros((len(rows), Y.shape[1]))
    for a in numba.prange(len(rows)):
        i = rows[a]
        for j in range(Y.shape[0]):
            if j == i:
                continue
            d2 = 0.0
            for k in range(Y.shape[1]):
                d2 += (Y[i, k] - Y[j, k]) ** 2
            t = 1.0 / (1.0 + d2)
            for k in range(Y.shape[1]):
                F[a, k] += t * t * (Y[i, k] - Y[j, k])
    return F


def opentsne_negative_gradient(Y: np.ndarray):
    """openTSNE's FFT negative gradient at its defaults; returns ``(F, Z)`` in our terms."""
    from openTSNE import _tsne

    grad = np.zeros_like(Y)
    if Y.shape[1] == 1:
        y, g = np.ascontiguousarray(Y[:, 0]), np.zeros(len(Y))
        z = _tsne.estimate_negative_gradient_fft_1d(y, g, 3, 50, 1.0, 1.0)
        grad[:, 0] = g
    else:
        z = _tsne.estimate_negative_gradient_fft_2d(np.ascontiguousarray(Y), grad, 3, 50, 1.0,
                                                    1.0)
    return -grad * z, z  # openTSNE returns -F/Z


# FIt-SNE's resolution in our engine, for a like-for-like speed comparison
FITSNE_LIKE = dict(n_interp=3, min_boxes=50, boxes_per_unit=1.0)


def crossover() -> None:
    print("\n1. repulsion_fft vs repulsion_exact, d = 2: best wall ms with 1 thread, and with"
          " 2 threads (on a busy machine every parallel region can cost a time slice)")
    threads = numba.get_num_threads()
    for label, span_of in [("own span 0.3·√m", lambda m: span_for(m, 2)),
                           ("scattered class, span 80", lambda m: 80.0)]:
        print(f"   layout: {label}")
        print(f"{'m':>7} {'span':>6} {'nodes':>6} {'fft 1t':>8} {'exact 1t':>9}"
              f" {'fft/exact':>9} {'fft 2t':>8} {'exact 2t':>9}")
        for m in (100, 200, 500, 1000, 2000, 5000, 10_000):
            Y = tsne_like(m, 2, span_of(m), seed=m)
            nodes = fft.grid_shape(Y.max(0) - Y.min(0))[1][0]
            row = []
            for nt in (1, threads):
                numba.set_num_threads(nt)
                row.append(best(repulsion_fft, Y, repeats=7, workers=nt)[0])
                row.append(best(repulsion_exact, Y, repeats=7)[0])
            numba.set_num_threads(threads)
            print(f"{m:>7} {span_of(m):>6.0f} {nodes:>6} {1e3 * row[0]:>8.2f}"
                  f" {1e3 * row[1]:>9.2f} {row[0] / row[1]:>9.2f} {1e3 * row[2]:>8.2f}"
                  f" {1e3 * row[3]:>9.2f}")


def large(quick: bool) -> None:
    sizes = (10_000, 100_000) if quick else (10_000, 100_000, 1_000_000)
    try:
        import openTSNE  # noqa: F401

        have_otsne = True
    except ImportError:
        have_otsne = False
    threads = numba.get_num_threads()

    def ours_1t(Y):
        numba.set_num_threads(1)
        try:
            return repulsion_fft(Y, workers=1)
        finally:
            numba.set_num_threads(threads)

    calls = [("ours", repulsion_fft), ("ours 1 thread", ours_1t),
             ("ours @FIt-SNE res.", lambda Y: repulsion_fft(Y, **FITSNE_LIKE))]
    if have_otsne:
        calls.append(("openTSNE (1 thread)", opentsne_negative_gradient))
    print("\n2. Large n: best wall s per call, and relative force error on 1000 rows vs the"
          " exact sum. 'FIt-SNE res.' = p 3, 1 box per unit, >= 50 boxes (openTSNE's"
          " defaults) in our engine")
    print(f"{'d':>2} {'n':>8} {'span':>6} " + " ".join(f"{name:>19}" for name, _ in calls)
          + f" {'ours/oTSNE':>10}")
    for d in (2, 1):
        for n in sizes:
            Y = tsne_like(n, d, span_for(n, d), seed=1)
            rows = np.random.default_rng(2).choice(n, 1000, replace=False)
            Fe = exact_rows(Y, rows)
            reps = 3 if n >= 1_000_000 else 5
            out = []
            for _, fn in calls:
                t = best(fn, Y, repeats=reps)[0]
                F = fn(Y)[0]
                out.append((t, np.linalg.norm(F[rows] - Fe) / np.linalg.norm(Fe)))
            cells = " ".join(f"{t:>9.4f} ({e:>7.1e})" for t, e in out)
            ratio = f"{out[0][0] / out[-1][0]:>10.2f}" if have_otsne else f"{'n/a':>10}"
            print(f"{d:>2} {n:>8} {span_for(n, d):>6.0f} {cells} {ratio}")
    if not have_otsne:
        print("   openTSNE is not installed: its column is left out")


def thread_cpu() -> dict[int, float]:
    """CPU seconds per thread of this process (Linux /proc; empty elsewhere)."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    except OSError:
        pass
    return out


def stage_split() -> None:
    n = 1_000_000
    Y = tsne_like(n, 2, span_for(n, 2), seed=3)
    repeats = 8
    print(f"\n3. Stage split at n = {n}, d = 2, span {span_for(n, 2):.0f}, "
          f"{numba.get_num_threads()} numba threads (seconds per call, best of {repeats};"
          " CPU share of the two busiest threads, from /proc)")
    d = 2
    lo = np.array([Y[:, k].min() for k in range(d)])
    span = np.array([Y[:, k].max() for k in range(d)]) - lo
    args = (fft.N_INTERP, fft.MIN_BOXES, fft.BOXES_PER_UNIT[2], None, -1)
    g = fft._plan(Y, lo, span, *args)
    charges, Ys, order = fft._spread(Y, g)
    pot, _ = fft._convolve(charges, g)
    fft._gather(Ys, order, pot, g)
    print(f"   grid {g.n_nodes[0]}×{g.n_nodes[1]} nodes, FFT length {2 * g.half[0]}")
    def spectra_uncached():
        fft.clear_kernel_cache()
        return fft._kernel_spectra(g)

    stages = [
        ("sort + spread", lambda: fft._spread(Y, g)),
        ("kernel spectra*", spectra_uncached),
        ("FFTs", lambda: fft._convolve(charges, g)),
        ("interpolate back", lambda: fft._gather(Ys, order, pot, g)),
        ("whole call", lambda: repulsion_fft(Y)),
    ]
    print(f"{'stage':>17} {'wall s':>8} {'CPU s':>8} {'CPU/wall':>8} {'thread shares':>16}")
    for name, fn in stages:
        walls, cpus = [], []
        before = thread_cpu()
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            fn()
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        after = thread_cpu()
        used = sorted((after[k] - before.get(k, 0.0) for k in after), reverse=True)
        total = sum(used) or 1.0
        shares = "/".join(f"{100 * u / total:.0f}%" for u in used[:2])
        i = int(np.argmin(walls))
        print(f"{name:>17} {walls[i]:>8.3f} {cpus[i]:>8.3f} {cpus[i] / walls[i]:>8.2f}"
              f" {shares:>16}")
    print("   * only when the spacing or the FFT size changes; cached otherwise (as in the"
          " other rows and in table 2, where the same points are timed repeatedly)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="stop at 10^5 points")
    ap.add_argument("--only", choices=["crossover", "large", "stages"])
    args = ap.parse_args()
    repulsion_fft(tsne_like(100_000, 2, 90.0))  # compile, and start the thread pool
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; numba threads"
          f" {numba.get_num_threads()} ({numba.threading_layer()}); timings are best-of")
    if args.only in (None, "crossover"):
        crossover()
    if args.only in (None, "large"):
        large(args.quick)
    if args.only in (None, "stages") and not args.quick:
        stage_split()


if __name__ == "__main__":
    main()

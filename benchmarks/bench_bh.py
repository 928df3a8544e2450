"""Barnes-Hut repulsion: timings against the exact kernel, openTSNE and the FFT engine.

Run ``python benchmarks/bench_bh.py`` (``--full`` adds openTSNE at 10⁶ points, which takes
a minute, and the FFT engine at 3·10⁶; ``--only NAME`` runs one table). Prints five tables:

1. ``repulsion_bh`` vs ``repulsion_exact`` for small m (d = 2): the crossover size below
   which the exact kernel is faster, i.e. ``EXACT_BELOW["bh"]`` in ``conditional.py``.
2. ``repulsion_bh`` for n = 10⁴, 10⁵, 10⁶ (d = 2) and 10⁵ (d = 3).
3. One BH negative-gradient evaluation against openTSNE's (tree build included for both),
   on the same points in the same run, with each one's error against the exact kernel
   on a 5000-point layout.
4. Accuracy and time over θ.
5. Barnes-Hut against the FFT engine (if present), for ``BH_BELOW`` in ``conditional.py``.

Layouts imitate converged t-SNE embeddings: Gaussian blobs of varied width plus 10 %
uniform background, over a span growing like √n (constant density, as t-SNE gives).
Times are medians over repeats after a warm-up call; the machine may be shared, so
compare ratios taken in the same run.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from ctsne.forces.repulsion.barnes_hut import repulsion_bh
from ctsne.forces.repulsion.exact import repulsion_exact


def tsne_like(n: int, d: int, rng: np.random.Generator, span: float | None = None) -> np.ndarray:
    """Blobs plus background over a span ~ 2√n (or ``span``)."""
    span = 2.0 * np.sqrt(n) if span is None else span
    k = 12
    centres = rng.uniform(-span / 2, span / 2, size=(k, d))
    widths = rng.uniform(0.02, 0.08, size=k) * span
    lab = rng.integers(0, k, n)
    Y = centres[lab] + rng.normal(size=(n, d)) * widths[lab, None]
    bg = rng.random(n) < 0.1
    Y[bg] = rng.uniform(-span / 2, span / 2, size=(int(bg.sum()), d))
    return Y


def timeit(fn, *args, repeats: int = 5, **kwargs) -> float:
    """Median wall time of ``fn(*args)`` after one warm-up call."""
    fn(*args, **kwargs)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def rel_err(F, Z, Fe, Ze) -> tuple[float, float]:
    return float(np.linalg.norm(F - Fe) / np.linalg.norm(Fe)), abs(Z - Ze) / Ze


def crossover(rng, theta: float) -> None:
    threads = numba.get_num_threads()
    print("\n1. small m, d = 2: repulsion_bh vs repulsion_exact (ms per call); with one")
    print("   thread too, which is free of thread wake-up latency on a busy machine")
    heads = ("exact", "bh", "exact/bh", "exact 1t", "bh 1t", "ratio 1t")
    print(f"{'m':>6} " + " ".join(f"{h:>9}" for h in heads))
    cross = {threads: None, 1: None}
    for m in (100, 200, 300, 500, 700, 1000, 2000, 5000):
        Y = tsne_like(m, 2, rng)
        reps = 50 if m <= 1000 else 10
        row = []
        for nt in (threads, 1):
            numba.set_num_threads(nt)
            te = timeit(repulsion_exact, Y, repeats=reps)
            tb = timeit(repulsion_bh, Y, theta, repeats=reps)
            if cross[nt] is None and te > tb:
                cross[nt] = m
            row += [te * 1e3, tb * 1e3, te / tb]
        numba.set_num_threads(threads)
        print(f"{m:>6} " + " ".join(f"{v:>9.3f}" for v in row))
    print(f"first m where exact loses: {cross[threads]} ({threads} threads), {cross[1]} (1 thread)")


def large(rng, theta: float) -> None:
    threads = numba.get_num_threads()
    print(f"\n2. large n: repulsion_bh (ms per call) on {threads} threads and on one")
    print(f"{'n':>8} {'d':>2} {'bh ms':>9} {'ns/point':>9} {'1t ms':>9} {'speed-up':>9}")
    for n, d in ((10_000, 2), (100_000, 2), (1_000_000, 2), (100_000, 3)):
        Y = tsne_like(n, d, rng)
        reps = 5 if n < 1_000_000 else 3
        tb = timeit(repulsion_bh, Y, theta, repeats=reps)
        numba.set_num_threads(1)
        t1 = timeit(repulsion_bh, Y, theta, repeats=reps)
        numba.set_num_threads(threads)
        print(f"{n:>8} {d:>2} {tb * 1e3:>9.1f} {tb / n * 1e9:>9.0f} {t1 * 1e3:>9.1f}"
              f" {t1 / tb:>9.2f}")


def versus_opentsne(rng, theta: float, full: bool) -> None:
    try:
        from openTSNE import _tsne
        from openTSNE.quad_tree import QuadTree
    except ImportError:
        print("\n3. openTSNE not installed: comparison skipped")
        return
    threads = numba.get_num_threads()

    def otsne(Y):
        # Builds its quad tree and returns (−F/Z, Z), as openTSNE's BH gradient step does.
        grad = np.zeros_like(Y)
        z = _tsne.estimate_negative_gradient_bh(
            QuadTree(Y), Y, grad, theta=theta, dof=1, num_threads=threads,
            pairwise_normalization=True)
        return -grad * z, z

    print(f"\n3. one BH repulsion vs openTSNE's (theta = {theta}, {threads} threads, d = 2)")
    Y = tsne_like(5000, 2, rng)
    Fe, Ze = repulsion_exact(Y)
    eo = rel_err(*otsne(Y), Fe, Ze)
    eb = rel_err(*repulsion_bh(Y, theta), Fe, Ze)
    print(f"error vs exact at n = 5000: force / Z  ctsne {eb[0]:.1e} / {eb[1]:.1e}"
          f"   openTSNE {eo[0]:.1e} / {eo[1]:.1e}")
    print(f"{'n':>8} {'openTSNE ms':>12} {'ctsne ms':>9} {'speed-up':>9}")
    sizes = (10_000, 100_000, 1_000_000) if full else (10_000, 100_000)
    for n in sizes:
        Y = tsne_like(n, 2, rng)
        reps = 3 if n < 1_000_000 else 1
        to = timeit(otsne, Y, repeats=reps)
        tb = timeit(repulsion_bh, Y, theta, repeats=reps)
        print(f"{n:>8} {to * 1e3:>12.1f} {tb * 1e3:>9.1f} {to / tb:>9.1f}")


def theta_sweep(rng) -> None:
    print("\n4. accuracy vs time over theta (d = 2; errors at n = 5000, time at n = 10⁵)")
    print(f"{'theta':>6} {'force err':>10} {'Z err':>9} {'ms 1e5':>8}")
    Ys = tsne_like(5000, 2, rng)
    Fe, Ze = repulsion_exact(Ys)
    Y = tsne_like(100_000, 2, rng)
    for theta in (0.3, 0.5, 0.8, 1.0, 1.5):
        ef, ez = rel_err(*repulsion_bh(Ys, theta), Fe, Ze)
        tb = timeit(repulsion_bh, Y, theta, repeats=5)
        print(f"{theta:>6} {ef:>10.1e} {ez:>9.1e} {tb * 1e3:>8.1f}")


def versus_fft(rng, theta: float, full: bool) -> None:
    try:
        from ctsne.forces.repulsion.fft import repulsion_fft
    except ImportError:
        print("\n5. ctsne.forces.repulsion.fft not available: comparison skipped")
        return
    print(f"\n5. Barnes-Hut (theta = {theta}) vs the FFT engine at its defaults, d = 2")
    print("   (where BH stops winning sets BH_BELOW in conditional.py)")
    Y = tsne_like(5000, 2, rng)
    Fe, Ze = repulsion_exact(Y)
    eb = rel_err(*repulsion_bh(Y, theta), Fe, Ze)
    ef = rel_err(*repulsion_fft(Y), Fe, Ze)
    print(f"error vs exact at n = 5000: force / Z  bh {eb[0]:.1e} / {eb[1]:.1e}"
          f"   fft {ef[0]:.1e} / {ef[1]:.1e}")
    print(f"{'n':>8} {'fft ms':>9} {'bh ms':>9} {'fft/bh':>7}")
    sizes = (10_000, 30_000, 100_000, 300_000, 1_000_000) + ((3_000_000,) if full else ())
    for n in sizes:
        Y = tsne_like(n, 2, rng)
        reps = 3 if n <= 1_000_000 else 1
        tf = timeit(repulsion_fft, Y, repeats=reps)
        tb = timeit(repulsion_bh, Y, theta, repeats=reps)
        print(f"{n:>8} {tf * 1e3:>9.1f} {tb * 1e3:>9.1f} {tf / tb:>7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--theta", type=float, default=0.5)
    ap.add_argument("--full", action="store_true", help="openTSNE at 10⁶ points too")
    ap.add_argument("--only", choices=["crossover", "large", "opentsne", "theta", "fft"])
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"numba threads: {numba.get_num_threads()}")
    if args.only in (None, "crossover"):
        crossover(rng, args.theta)
    if args.only in (None, "large"):
        large(rng, args.theta)
    if args.only in (None, "opentsne"):
        versus_opentsne(rng, args.theta, args.full)
    if args.only in (None, "theta"):
        theta_sweep(rng)
    if args.only in (None, "fft"):
        versus_fft(rng, args.theta, args.full)


if __name__ == "__main__":
    main()

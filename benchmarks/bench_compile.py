"""Where a first fit's compile time goes: numba's compile events, per dispatcher.

    python benchmarks/bench_compile.py                 # the paper's 1,000 points, prior f14
    python benchmarks/bench_compile.py --n 3000 --no-prior --top 15
    python benchmarks/bench_compile.py --n 5000 --estimator ConditionalUMAP

Runs the fit in a fresh process with an empty ``NUMBA_CACHE_DIR`` (so every kernel it
needs compiles) and listens to numba's ``numba:compile`` events there. Each dispatcher is
charged the CPU seconds of its own compiles, without those of the dispatchers it pulled
in (a kernel calling an ``njit`` helper, or numba's ``np.empty``, compiles those as
dispatchers of their own). Prints the imports, the fit, the compile total and the top
dispatchers; appends a JSON line to ``benchmarks/results.jsonl``. CPU seconds, because on a
shared machine they follow the load much less than wall seconds do.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from numba.core import event

stack, own, calls = [], {}, {}


class Compiles(event.Listener):
    def on_start(self, ev):
        stack.append([ev.data["dispatcher"].py_func.__qualname__, time.process_time(), 0.0])

    def on_end(self, ev):
        name, start, nested = stack.pop()
        spent = time.process_time() - start
        own[name] = own.get(name, 0.0) + spent - nested
        calls[name] = calls.get(name, 0) + 1
        if stack:
            stack[-1][2] += spent


event.register("numba:compile", Compiles())
import numpy as np
import ctsne
from ctsne.datasets import make_synthetic

n, with_prior = int(sys.argv[1]), sys.argv[2] == "1"
t1 = time.perf_counter()
d = make_synthetic(n=n, random_state=0)
getattr(ctsne, sys.argv[3])(random_state=0).fit_transform(d.X, d.f14 if with_prior else None)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "fit_s": t2 - t1, "cpu_s": time.process_time() - c0,
                  "own_compile_cpu_s": own, "compiles": calls}))
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--no-prior", action="store_true")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--estimator", default="ConditionalTSNE",
                    choices=["ConditionalTSNE", "ConditionalUMAP", "ConditionalLargeVis"])
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(a.n), "0" if a.no_prior else "1",
                               a.estimator],
                              capture_output=True, text=True,
                              env={**os.environ, "NUMBA_CACHE_DIR": cache})
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    own = r["own_compile_cpu_s"]
    total = sum(own.values())
    print(f"{a.estimator}, n = {a.n}, prior: {not a.no_prior}; imports {r['import_s']:.2f} s, fit "
          f"{r['fit_s']:.2f} s (wall); compiling {total:.2f} CPU-s over {len(own)} dispatchers")
    for name, sec in sorted(own.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"  {sec:6.2f}  {name}" + (f"  ({r['compiles'][name]} signatures)"
                                        if r["compiles"][name] > 1 else ""))
    if not a.no_save:
        row = {"date": datetime.date.today().isoformat(), "machine": platform.node(),
               "cpu_count": os.cpu_count(), "python": platform.python_version(),
               "case": f"compile-{a.n}{'' if a.no_prior else '-f14'}"
                       + ("" if a.estimator == "ConditionalTSNE" else f"-{a.estimator}"),
               "compile_cpu_s": total, **{k: r[k] for k in ("import_s", "fit_s", "cpu_s")},
               "top": dict(sorted(own.items(), key=lambda kv: -kv[1])[:a.top])}
        with open(HERE / "results.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

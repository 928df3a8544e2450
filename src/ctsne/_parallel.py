"""Thread-pool policy and numba kernels compiled both parallel and serial.

Why. numba's OpenMP layer (GNU libgomp) spin-waits after every parallel region by
default. On a machine whose cores are busy with other work, the spinning threads and the
barrier at the end of each region (which waits for a descheduled thread's next time slice)
made a fit 7–9× slower than on one thread. Two measures:

* ``OMP_WAIT_POLICY=PASSIVE`` is set when this module is imported, before any ctsne kernel
  starts numba's thread pool (libgomp reads it once, when it loads), unless the user set
  ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``. It applies only if numba's pool was not
  started earlier in the process.
* Every ``prange`` kernel is compiled twice from one body (:func:`kernel`): a parallel
  variant with only the explicit ``prange`` loops parallel (numba would otherwise make a
  region of each ``np.zeros`` or ``.sum()``), and a serial one, used on one thread and
  below a kernel's measured work threshold, where waking the pool costs more than it saves.

Determinism. A kernel freshly compiled and the same kernel loaded from numba's cache can
run differently optimised code (numba issue #10617): with parallel reductions or
fastmath sums, different rounding. Here no kernel reduces in parallel (sums run serially
in a fixed order, mostly in numpy), and fastmath helpers are inlined into the one kernel
that calls them, so one-thread runs agree bit for bit, cold cache or warm. The parallel
twins' loop bodies are compiled apart by numba, and their fastmath sums may still round
differently on the first, compiling run: the exact repulsion therefore sums in fixed
lanes without fastmath (a fit evaluated exactly, up to 1,200 points under "auto", now
gives the same embedding cold or warm on two threads too, bit for bit; one thread and two
still differ in the last bits); Barnes-Hut's walks keep fastmath.

Small calls in numpy. A pass that runs once per fit (a neighbour scan, the calibration,
the symmetrisation, the prior-mixing sums) takes milliseconds below its parallel threshold,
while its serial twin costs 0.3–1 s to compile in a new environment: together most of a
first 1,000-point fit's compile (``benchmarks/bench_compile.py``). Such a kernel may be
given a numpy twin (:meth:`Kernel.small`) of the same arguments, which then serves every
call below the kernel's threshold (or a higher one of its own), so a small fit compiles
only what runs per iteration.
The twin follows the kernel's operations in their order (sums in the same sequence, the
same ties), so the two agree to the last bit wherever numpy's ``exp`` and ``log`` are the
C library's (they are not on CPUs with AVX-512, where numpy has its own) and within a few
units in the last place elsewhere. A fit takes one path or the other by its size alone, so
a cold and a warm cache still give the same result.
"""

from __future__ import annotations

import os
import types

import numba
import numpy as np

__all__ = ["Kernel", "kernel", "PRANGE_ONLY", "renamed", "sum_in_order"]


def _passive_wait() -> None:
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


_passive_wait()

# Only explicit prange loops run in parallel. (numba consumes the dict it is given: each
# kernel gets a copy.)
PRANGE_ONLY = dict(comprehension=False, reduction=False, inplace_binop=False, setitem=False,
                   numpy=False, stencil=False, fusion=False, prange=True)


def sum_in_order(x: np.ndarray) -> np.ndarray:
    """Column sums of ``x`` (m, n), each column's entries added one after another from 0,
    as a kernel's loop over a row adds them: numpy's own reductions may sum pairwise, so
    the numpy twins sum with this."""
    total = np.zeros(x.shape[1])
    for row in x:
        total += row
    return total


def renamed(py_func, suffix: str, **names):
    """A copy of ``py_func`` under another qualified name: numba names a kernel's cache
    files after it, and its cache index does not tell parallel from serial builds.

    ``names`` replace module-level names in the copy (a snapshot of the module's names,
    so make it after everything the body uses): one body can then call a different
    helper in each compiled copy, where a branch at run time would compile both helpers
    into every copy (numba compiles all branches of a function)."""
    scope = {**py_func.__globals__, **names} if names else py_func.__globals__
    f = types.FunctionType(py_func.__code__, scope, py_func.__name__ + suffix,
                           py_func.__defaults__, py_func.__closure__)
    f.__qualname__ = py_func.__qualname__ + suffix
    f.__module__ = py_func.__module__
    f.__doc__ = py_func.__doc__
    return f


class Kernel:
    """One kernel body, compiled lazily (and cached) as a parallel and a serial variant.

    Parameters
    ----------
    py_func : function
        The body, with ``numba.prange`` loops.
    min_work : float
        Work (in the kernel's own unit, e.g. non-zeros visited) from which the parallel
        variant is used when more than one thread is allowed. Calls of less work run the
        numpy twin where one is given (:meth:`small`), else the serial variant.
    **options
        Further ``numba.njit`` options (``fastmath``, ``error_model``).
    """

    def __init__(self, py_func, min_work: float, **options):
        self.min_work = min_work
        self.parallel = numba.njit(parallel=dict(PRANGE_ONLY), cache=True, **options)(py_func)
        self.serial = numba.njit(cache=True, **options)(renamed(py_func, "_serial"))
        self.numpy = None
        self.numpy_below = min_work
        self.__doc__ = py_func.__doc__
        self.__name__ = py_func.__name__

    def small(self, func=None, *, below: float | None = None):
        """Decorator: ``func`` (numpy, the kernel's arguments and effects) serves the calls
        of less work than ``below`` (default ``min_work``), so that the serial twin
        compiles only for one-thread runs of large calls. ``@kernel.small`` or
        ``@kernel.small(below=...)``."""
        if func is None:
            return lambda f: self.small(f, below=below)
        self.numpy = func
        self.numpy_below = self.min_work if below is None else below
        return func

    def pick(self, work: float):
        """The variant for a call of the given work under the current thread limit."""
        if self.numpy is not None and work < self.numpy_below:
            return self.numpy
        if work < self.min_work or numba.get_num_threads() == 1:
            return self.serial
        return self.parallel

    def __call__(self, *args, work: float = float("inf")):
        """Run the variant for ``work`` (not given: as a large call)."""
        return self.pick(work)(*args)


def kernel(min_work: float, **options):
    """Decorator form of :class:`Kernel`."""
    def wrap(py_func) -> Kernel:
        return Kernel(py_func, min_work, **options)
    return wrap

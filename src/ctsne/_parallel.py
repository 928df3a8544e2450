"""Thread-pool policy, numba kernels compiled parallel and serial, and kernels run in parts
on ctsne's own threads.

Why. numba's OpenMP layer (GNU libgomp) spin-waits after every parallel region by
default, which makes a fit far slower on a machine whose cores are busy. Two measures:

* ``OMP_WAIT_POLICY=PASSIVE`` is set when this module is imported, before any ctsne kernel
  starts numba's thread pool (libgomp reads it once, when it loads), unless the user set
  ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``. It applies only if numba's pool was not
  started earlier in the process.
* Every ``prange`` kernel is compiled twice from one body (:func:`kernel`): a parallel
  variant with only the explicit ``prange`` loops parallel, and a serial one, used on one
  thread and below a kernel's work threshold, where waking the pool costs more than it saves.

Most kernels are instead one serial body over a range of items, compiled once and released
from the GIL, whose parts run side by side on the calling thread and ctsne's own workers
(:class:`Threaded`): numba's parallel pipeline costs much more to compile. The attraction,
memory-bound, keeps a ``prange`` twin for large P.

Thread count. A map must not depend on how many threads computed it (a laptop's map is a
server's), so no sum may depend on how work is split between threads. A body's items are
either independent (rows, tree groups: any split gives the same numbers) or chunks whose
partial sums are combined in chunk order; then the number of chunks is a function of the
problem's size alone (:func:`chunk_count`), and the threads take runs of whole chunks
(:func:`chunk_runs`), each chunk reduced serially, whichever thread runs it.

Determinism. A kernel freshly compiled and the same kernel loaded from numba's cache can
round parallel reductions or fastmath sums differently. Here no kernel reduces in parallel
and fastmath helpers are inlined into their one caller, so one-thread runs agree bit for
bit, cold cache or warm; the exact repulsion avoids fastmath, so it agrees on any threads.

Small calls in numpy. A pass that runs once per fit takes milliseconds below its parallel
threshold, while its serial twin costs a noticeable compile in a new environment. Such a
kernel may be given a numpy twin (:meth:`Kernel.small`) of the same arguments, which then
serves every call below the kernel's threshold (or a higher one of its own), so a small
fit compiles only what runs per iteration. The twin follows the kernel's operations in
their order (sums in the same sequence, the same ties), so the two agree to rounding, and
``tests/test_numpy_twins.py`` holds each to its kernel within a tolerance. A fit takes one
path or the other by its size alone, so a cold and a warm cache still give the same
result.
"""

from __future__ import annotations

import os
import threading
import types

import numba
import numpy as np

__all__ = ["Kernel", "PRANGE_ONLY", "Threaded", "chunk_count", "chunk_runs", "equal_parts",
           "even_parts", "kernel", "renamed", "sum_in_order", "threaded"]


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
    if x.shape[0] > x.shape[1]:
        # tall: a cumulative sum adds in the same order, and faster than the rows' loop
        # (+ 0.0: a loop from 0 never ends at −0); wide tables loop over their few rows
        return np.cumsum(x, axis=0)[-1] + 0.0
    total = np.zeros(x.shape[1])
    for row in x:
        total += row
    return total


def equal_parts(items: int, parts: int) -> list[int]:
    """Bounds (parts + 1) that split items ``0 … items − 1`` into runs of equal length
    (within one)."""
    return [items * c // parts for c in range(parts + 1)]


# Chunk counts that common thread counts split evenly (2, 4 and 8 threads, most of them
# also 3 and 6): a pass's slowest thread sets its time.
EVEN_COUNTS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


def chunk_count(work: float, chunk_work: float, most: int) -> int:
    """Chunks of a pass whose partial sums are combined in chunk order: about one per
    ``chunk_work`` of ``work``, at least one and at most ``most``, rounded down to one of
    ``EVEN_COUNTS``.

    The arguments describe the problem, never the machine: the chunks, and so every
    rounding of the sums, are the same on any number of threads. ``most`` bounds the
    chunks' own cost (buffers to clear and combine) and is the most threads such a pass
    keeps busy.
    """
    wanted = max(1, min(most, work // chunk_work))
    return max(c for c in EVEN_COUNTS if c <= wanted)


def chunk_runs(chunks: int, threads: int) -> list[int]:
    """Bounds that hand chunks ``0 … chunks − 1`` to at most ``threads`` threads, in runs of
    whole chunks of equal length (within one): how a pass over fixed chunks is scheduled.
    The runs decide only which thread reduces a chunk, not how."""
    return equal_parts(chunks, max(1, min(chunks, threads)))


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


class _Worker:
    """A thread that runs one part at a time, handed over and collected through two locks
    (a cheaper round trip than a ThreadPoolExecutor's)."""

    def __init__(self):
        self._go, self._done = threading.Lock(), threading.Lock()
        self._go.acquire()
        self._done.acquire()
        self._job = self._error = None
        threading.Thread(target=self._loop, daemon=True, name="ctsne-worker").start()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            func, args = self._job
            self._job = None
            try:
                func(*args)
            except BaseException as exc:  # handed to the caller by join
                self._error = exc
            self._done.release()

    def start(self, func, args) -> None:
        self._job = (func, args)
        self._go.release()

    def join(self) -> None:
        self._done.acquire()
        error, self._error = self._error, None
        if error is not None:
            raise error


_workers: list[_Worker] = []
# held by the one call that uses the workers; a call from another thread meanwhile runs
# its parts itself, one after another (the same parts: the same result)
_busy = threading.Lock()


def _forget_workers() -> None:
    # a forked child inherits the worker objects but not their threads
    global _busy
    _workers.clear()
    _busy = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


class Threaded:
    """One kernel body over a range of items, compiled once, serial and releasing the GIL,
    and run by up to ``numba.get_num_threads()`` threads, each over its own part.

    Why. numba's parallel pipeline costs far more to compile than a serial build. A body
    that takes its range (``start``, ``stop``) compiles once; the calling thread and a pool
    of Python threads run its parts side by side. Parts should make no array or row view
    per item: threads doing so contend on the shared reference counts. A body's result must
    not depend on how its items are grouped into parts: items are independent, or chunks
    fixed by the problem's size (:func:`chunk_count`), so any number of threads gives the
    same numbers.

    Parameters
    ----------
    py_func : function
        ``py_func(*args, start, stop)``: does the work of items ``start … stop − 1``;
        parts write to disjoint places of the arrays they are given.
    min_work : float
        Work (the kernel's own unit) from which a call is split over threads.
    prange_from : float, optional
        Work from which a split call runs a ``prange`` twin instead (the body's loop
        over its range written ``numba.prange(start, stop)``, a plain range in the
        serial build). numba's pool runs a memory-bound pass faster than these threads;
        worth its compile where the pass is long.
    **options
        Further ``numba.njit`` options.
    """

    def __init__(self, py_func, min_work: float, prange_from: float | None = None,
                 **options):
        self.min_work = min_work
        self.prange_from = prange_from
        self.compiled = numba.njit(cache=True, nogil=True, **options)(py_func)
        self.parallel = None if prange_from is None else numba.njit(
            parallel=dict(PRANGE_ONLY), cache=True, **options)(renamed(py_func, "_parallel"))
        self.numpy = None
        self.numpy_below = min_work
        self.__doc__ = py_func.__doc__
        self.__name__ = py_func.__name__

    # a numpy twin takes the arguments without the range, and all the items
    small = Kernel.small

    def threads(self, work: float) -> int:
        """How many threads a call of this work uses under the current thread limit."""
        return 1 if work < self.min_work else numba.get_num_threads()

    def run(self, *args, items: int, work: float) -> None:
        """Items ``0 … items − 1``: in the numpy twin below its threshold, else in parts
        of equal numbers of items, one a thread, no more parts than items (see
        ``__call__``)."""
        if self.numpy is not None and work < self.numpy_below:
            self.numpy(*args)
            return
        self(*args, bounds=chunk_runs(items, self.threads(work)), work=work)

    def __call__(self, *args, bounds, work: float = 0.0) -> None:
        """Run part c, items ``bounds[c] … bounds[c + 1] − 1``, for every c: the first in
        the calling thread, the others on the workers (or all in the ``prange`` twin, for
        ``work`` from ``prange_from``). Returns when all are done, also when a part fails
        (its error is raised here) or the wait is interrupted."""
        bounds = [int(b) for b in bounds]
        parts = list(zip(bounds[:-1], bounds[1:], strict=True))
        if len(parts) > 1 and self.parallel is not None and work >= self.prange_from:
            self.parallel(*args, bounds[0], bounds[-1])
            return
        if len(parts) <= 1 or not _busy.acquire(blocking=False):
            for a, b in parts:
                self.compiled(*args, a, b)
            return
        try:
            while len(_workers) < len(parts) - 1:
                _workers.append(_Worker())
            started = []
            try:
                for w, (a, b) in zip(_workers, parts[1:], strict=False):
                    w.start(self.compiled, args + (a, b))
                    started.append(w)
                self.compiled(*args, *parts[0])
            finally:
                errors = []
                for w in started:
                    try:
                        w.join()
                    except BaseException as exc:
                        errors.append(exc)
                        if isinstance(exc, KeyboardInterrupt):
                            # interrupted while waiting: this worker may still be
                            # running; it is replaced and finishes on its own
                            _workers.remove(w)
                if errors:
                    raise errors[0]
        finally:
            _busy.release()


def threaded(min_work: float, **options):
    """Decorator form of :class:`Threaded`."""
    def wrap(py_func) -> Threaded:
        return Threaded(py_func, min_work, **options)
    return wrap


def even_parts(cost: np.ndarray, parts: int) -> np.ndarray:
    """Bounds (parts + 1) that split items of the given costs into contiguous parts of
    about equal total cost."""
    total = np.cumsum(cost, dtype=np.float64)
    if parts <= 1 or len(cost) == 0 or total[-1] <= 0:
        return np.array([0, len(cost)], dtype=np.int64)
    bounds = np.searchsorted(total, np.linspace(0.0, total[-1], parts + 1)[1:-1], side="right")
    return np.concatenate(([0], bounds, [len(cost)])).astype(np.int64)

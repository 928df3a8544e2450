"""pynndescent's index, with numba's on-disk cache switched on for the functions that allow it.

pynndescent compiles its functions on first use in every process (none is declared with
numba's ``cache=True``): about 28 s of a 200,000-point search at 50 features, paid again
by each new Python process, so by every command-line run. Most of those functions can be
cached as they are; switching numba's cache on for them before the first search stores
their machine code beside pynndescent's sources (or in numba's user-wide cache where that
folder is read-only), keyed by pynndescent's own files, so an upgrade recompiles. What stays
uncached is the descent itself, which takes its distance as a function argument (numba
cannot cache that); in a new process it still compiles, about half the cost before.

The lists, and every number pynndescent computes, are unchanged: only where the compiled
code comes from changes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import warnings

__all__ = ["cache_descent", "descent_index", "quiet_cache_notes"]

_LOCK = threading.Lock()
_DONE = False


def cache_descent() -> int:
    """Switch numba's cache on for pynndescent's compiled functions that lack it (once per
    process); returns how many were switched on by this call."""
    global _DONE
    with _LOCK:
        if _DONE:
            return 0
        import pynndescent  # noqa: F401  (imports the modules whose functions are cached)
        from numba.core.caching import NullCache
        from numba.core.registry import CPUDispatcher

        count = 0
        for name, module in list(sys.modules.items()):
            if not name.startswith("pynndescent") or module is None:
                continue
            for value in list(vars(module).values()):
                if (isinstance(value, CPUDispatcher) and isinstance(value._cache, NullCache)
                        and hasattr(value, "enable_caching")):
                    value.enable_caching()
                    count += 1
        _DONE = True
        return count


@contextlib.contextmanager
def quiet_cache_notes():
    """Keep numba's notes on the functions it cannot cache out of the user's output."""
    from numba.core.errors import NumbaWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Cannot cache compiled function",
                                category=NumbaWarning)
        yield


def descent_index(data, **kwargs):
    """pynndescent's ``NNDescent(data, **kwargs)`` (its neighbour graph built), with
    :func:`cache_descent` run first. Queries of the index go through
    :func:`quiet_cache_notes`."""
    from pynndescent import NNDescent

    cache_descent()
    with quiet_cache_notes():
        return NNDescent(data, **kwargs)

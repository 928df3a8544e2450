"""Progress reports: a tqdm bar on a terminal, plain periodic lines in a log.

A bar redraws itself with carriage returns, which a log file or a pipe keeps as one
frame per update (tens of KB for a small run); there a line every tenth of the work
(at most every 50 steps) reads better.

The plain lines also mark the test suite's interruption points
(:func:`ctsne._output.interruption_point`): a stage's name when its report starts
("neighbours", "early exaggeration", "optimisation", "epochs") and ``"NAME STEP"`` after
each step (for the neighbour search, ``"neighbours N"`` is its end: the affinities are
computed next).
"""

from __future__ import annotations

import sys
import time

from ._output import interruption_point

__all__ = ["LineProgress", "progress_bar"]


class LineProgress:
    """The subset of tqdm's interface the estimator uses, printing plain lines."""

    def __init__(self, total: int, desc: str, unit: str, file=None):
        self.total, self.desc, self.unit = int(total), desc, unit
        self.file = file
        self.n = 0
        self.postfix = ""
        self._every = max(1, min(50, self.total // 10))
        self._next = self._every
        self._t0 = time.perf_counter()
        interruption_point(desc)  # test-only (does nothing unless a test asks)

    def update(self, k: int = 1) -> None:
        self.n += k
        if self.n >= self._next or self.n == self.total:
            self._next = (self.n // self._every + 1) * self._every
            self._line()
        interruption_point(f"{self.desc} {self.n}")

    def set_postfix_str(self, s: str) -> None:
        self.postfix = s

    def _line(self) -> None:
        pct = 100.0 * self.n / self.total if self.total else 100.0
        extra = f", {self.postfix}" if self.postfix else ""
        print(f"ctsne: {self.desc}: {self.n}/{self.total} {self.unit} ({pct:.0f} %), "
              f"{time.perf_counter() - self._t0:.1f} s{extra}",
              file=self.file or sys.stderr, flush=True)

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, unit: str, leave: bool = True):
    """A tqdm bar when stderr is a terminal, else a :class:`LineProgress`."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return LineProgress(total, desc, unit)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=leave)

"""The Ctrl-C handler works when the press arrives during a write to stderr.

A command prints progress lines all the time. A SIGINT that arrives while one is being
written interrupts the write system call, and Python runs the handler before retrying
it, inside the buffered stream's write: a handler that printed to ``sys.stderr`` (or
flushed it) then failed with "RuntimeError: reentrant call inside <_io.BufferedWriter>"
and the command ended with a traceback instead of stopping or aborting (found by the
timed presses of test_interrupt_matrix.py, about one run in ten). Here the handler is
called from inside the stream's raw write, as that retry does.
"""

import io
import os
import signal
import sys

import pytest

from ctsne.interfaces.cli.interrupt import CtrlC


class _Raw(io.RawIOBase):
    """A file whose first write runs ``hook`` first (the signal's handler)."""

    def __init__(self):
        self.hook, self.data = None, b""

    def writable(self):
        return True

    def write(self, b):
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        self.data += bytes(b)
        return len(b)


class _Exit(Exception):
    pass


def _stderr(monkeypatch):
    """sys.stderr over a _Raw file (set in the test: pytest swaps sys.stderr between the
    fixtures and the test)."""
    raw = _Raw()
    stream = io.TextIOWrapper(io.BufferedWriter(raw), line_buffering=True)
    monkeypatch.setattr(sys, "stderr", stream)
    return raw


def test_a_first_press_during_a_progress_line_stops(capfd, monkeypatch):
    stderr = _stderr(monkeypatch)
    ctrl_c = CtrlC()
    ctrl_c.optimising = True  # the optimiser has called back
    stderr.hook = lambda: ctrl_c.handler(signal.SIGINT, None)
    print("ctsne: optimisation: 30/500 it", file=sys.stderr)
    assert ctrl_c.stop
    assert b"30/500" in stderr.data  # the interrupted line was written all the same
    assert "stopping after the current iterations" in capfd.readouterr().err


def test_a_press_that_aborts_during_a_progress_line(capfd, monkeypatch):
    stderr = _stderr(monkeypatch)

    def exit_(code):
        raise _Exit(code)

    monkeypatch.setattr(os, "_exit", exit_)
    ctrl_c = CtrlC()  # not optimising: the press aborts
    stderr.hook = lambda: ctrl_c.handler(signal.SIGINT, None)
    old = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(_Exit) as ended:
            print("ctsne: neighbours: 60/60 pt", file=sys.stderr)
    finally:
        signal.signal(signal.SIGINT, old)  # the abort ignores further presses
    assert ended.value.args == (130,)
    assert "interrupted; no partial files were left" in capfd.readouterr().err

"""Ctrl-C in a ``ctsne`` command: stop the optimisation and write, or abort without writing."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import warnings

__all__ = ["CtrlC"]


def _say(message: bytes) -> None:
    """Write to stderr's file descriptor, not through ``sys.stderr``: the handler may run
    while the program is inside a write to ``sys.stderr`` (a progress line; the signal
    interrupts the system call and Python runs the handler before retrying it), and a
    second write into the same buffered stream then fails with "reentrant call"."""
    with contextlib.suppress(OSError):
        os.write(2, message)


class CtrlC:
    """Ctrl-C in a command: the first during ``embed``'s optimisation stops it, else abort.

    The handler never raises: an exception raised while a numba kernel runs surfaces as a
    SystemError with a traceback. While t-SNE's optimiser runs (from its first iteration
    on), the first Ctrl-C sets a flag, which a callback (every 10 iterations) hands to the
    optimiser as "stop"; the partial embedding is then written. A Ctrl-C at any other
    time (reading, neighbours, affinities, a UMAP's epochs, writing), or a second one,
    aborts: the files this command is writing or has written are removed (a file it
    replaced is put back) and the process ends with 130 at once. After :meth:`commit`
    (all outputs written) an abort keeps them.
    """

    every = 10

    def __init__(self):
        self.optimising = False  # the optimiser has called back
        self.stop = False  # a first Ctrl-C asked the optimiser to stop
        self.committed = False
        self._optimiser = None  # the optimiser loop's code, while watching a model
        # inside commit(): a press waits for its end, so that the message says what the
        # abort did (a press between the commit and the flag below would misreport it)
        self._committing = False
        self._pending = False

    def callback(self, iteration, kl, Y) -> bool:
        self.optimising = True
        return self.stop

    def _in_optimiser(self, frame) -> bool:
        """Whether the optimiser's loop is on the interrupted stack: its first iterations
        come before the first callback, and stopping there keeps a map (and the affinities
        in a saved model) all the same."""
        while self._optimiser is not None and frame is not None:
            if frame.f_code is self._optimiser:
                return True
            frame = frame.f_back
        return False

    def handler(self, signum, frame) -> None:
        if self._committing:
            self._pending = True
            return
        if not self.stop and (self.optimising or self._in_optimiser(frame)):
            self.stop = True
            _say(b"\nctsne: stopping after the current iterations (Ctrl-C again to abort "
                 b"without writing)\n")
            return
        self.abort()

    def commit(self) -> None:
        """All outputs are written: an abort from here on keeps them.

        One step for a press: one that arrives inside aborts at its end (keeping the files,
        and saying so).
        """
        from ..files.writing import forget_finished

        self._committing = True
        try:
            forget_finished()
            self.committed = True
        finally:
            self._committing = False
        if self._pending:
            self._pending = False
            self.abort()

    def abort(self) -> None:
        from ..files.writing import remove_unfinished

        # a further Ctrl-C must not start the undoing again halfway through this one
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        remove_unfinished()  # the files being written and those this command wrote
        for stream in (sys.stdout, sys.stderr):
            # a press during a write to the stream finds it locked: flushing then fails
            # ("reentrant call"), and what it held is a progress line at most
            with contextlib.suppress(Exception):
                stream.flush()
        _say(b"\nctsne: interrupted after the outputs were written; they are complete\n"
             if self.committed else
             b"\nctsne: interrupted; no partial files were left (files replaced with -f "
             b"are as they were)\n")
        os._exit(130)

    @contextlib.contextmanager
    def installed(self):
        """Handle SIGINT for the duration of the command (main thread only)."""
        try:
            old = signal.signal(signal.SIGINT, self.handler)
        except ValueError:  # not the main thread: keep the default behaviour
            old = None
        try:
            yield self
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)

    @contextlib.contextmanager
    def watching(self, model):
        """Let a first Ctrl-C stop ``model``'s optimisation (fit or optimize) inside."""
        from ...optimization.optimizer import gradient_descent

        old_cb, old_every = model.callbacks, model.callbacks_every_iters
        model.set_params(callbacks=[self.callback], callbacks_every_iters=self.every)
        self._optimiser = gradient_descent.__code__
        try:
            with warnings.catch_warnings():
                # the CLI reports an interruption itself, naming the output file
                warnings.filterwarnings("ignore", message="optimisation interrupted")
                yield
        finally:
            self.optimising = False
            self._optimiser = None
            # a saved model should not call back into the CLI
            model.set_params(callbacks=old_cb, callbacks_every_iters=old_every)

"""Ctrl-C in ``ctsne embed``: stop the optimisation and write, or abort without writing."""

from __future__ import annotations

import contextlib
import signal
import sys
import warnings

__all__ = ["CtrlC"]


class CtrlC:
    """Ctrl-C in ``ctsne embed``: the first during the optimisation stops it, else abort.

    The handler never raises: an exception raised while a numba kernel runs surfaces as a
    SystemError with a traceback. Once the optimiser has called back (after its first
    ``every`` iterations), the first Ctrl-C sets a flag,
    which a callback (every 10 iterations) hands to the optimiser as "stop"; the partial
    embedding is then written. A Ctrl-C at any other time, or a second one, aborts: the
    files this command is writing or has written are removed (a file it replaced is put
    back) and the process ends with 130 at once.
    """

    every = 10

    def __init__(self):
        self.optimising = False
        self.stop = False

    def callback(self, iteration, kl, Y) -> bool:
        # the optimiser calls back only once it iterates: from here a first Ctrl-C can
        # stop it and keep a map; before (reading, neighbours, affinities) it aborts
        self.optimising = True
        return self.stop

    def handler(self, signum, frame) -> None:
        if self.optimising and not self.stop:
            self.stop = True
            print("\nctsne: stopping after the current iterations (Ctrl-C again to abort "
                  "without writing)", file=sys.stderr, flush=True)
            return
        self.abort()

    def abort(self) -> None:
        import os

        from ..files.writing import remove_unfinished

        remove_unfinished()  # the files being written and those this command wrote
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.write(2, b"\nctsne: interrupted; no partial files were left (files replaced with "
                 b"-f are as they were)\n")
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
        old_cb, old_every = model.callbacks, model.callbacks_every_iters
        model.set_params(callbacks=[self.callback], callbacks_every_iters=self.every)
        try:
            with warnings.catch_warnings():
                # the CLI reports an interruption itself, naming the output file
                warnings.filterwarnings("ignore", message="optimisation interrupted")
                yield
        finally:
            self.optimising = False
            # a saved model should not call back into the CLI
            model.set_params(callbacks=old_cb, callbacks_every_iters=old_every)

"""An abort between any two byte codes of a command's writes leaves the user's files whole.

A command's Ctrl-C handler runs between two byte codes of the main thread, and an abort
(:meth:`ctsne.interfaces.cli.interrupt.CtrlC.abort`) undoes the command's files
(:func:`ctsne._output.remove_unfinished`) and ends the process. Here the abort is
simulated at every byte code executed while a command replaces one file (``-f``), writes
a new one and commits, one run per byte code (``sys.settrace`` with opcode events): the
files must then be exactly the user's old ones (before the commit) or exactly the new
ones (after it), never a mix, a partial file or a leftover temporary file. This is the
race that repeated timed Ctrl-Cs would sample; here every moment is tried once.
"""

import os
import sys

import pytest

from ctsne import _output

OLD = {"emb.csv": b"the user's embedding\n"}
NEW = {"emb.csv": b"this run's embedding\n", "model.pkl": b"this run's model\n"}


TRACED = {_output.__file__, __file__}


class _Aborted(Exception):
    pass


def _command(folder):
    """What ``ctsne embed -f`` does with its files: replace one, write another, commit."""
    with _output.track_outputs():
        for name, data in NEW.items():
            with _output.atomic_path(folder / name, force=True) as tmp:
                with open(tmp, "wb") as fh:
                    fh.write(data[:5])  # a partial file first, as a slow writer leaves it
                    fh.flush()
                    fh.write(data[5:])
        _output.forget_finished()


def _files(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def _trace_acting_at(k, act, files=TRACED):
    """A trace function that calls ``act(frame)`` at the ``k``-th byte code executed in
    ``files`` (a library call they make counts as one: an abort inside it finds the state
    of its start or end), and the count of byte codes so far."""
    count = [0]

    def local(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            count[0] += 1
            if count[0] == k:
                act(frame)
        return local

    def trace(frame, event, arg):
        if frame.f_code.co_filename not in files:
            return None
        frame.f_trace_opcodes = True
        return local

    return trace, count


def _reset_outputs():
    """The real abort ends the process; reset what a simulated one left registered."""
    _output._TRANSIENT.clear(), _output._WRITING.clear(), _output._FINISHED.clear()
    _output._DROPPING.clear()
    _output._TRACKING[0] = 0


def _run(folder, abort_at):
    """Run the command, aborting at the ``abort_at``-th byte code (None: never).

    Returns the files after the abort (None if it never came) and the byte codes run.
    """
    for name, data in OLD.items():
        (folder / name).write_bytes(data)
    seen = {}

    def abort(frame):
        _output.remove_unfinished()  # what the handler does before os._exit
        seen["files"] = _files(folder)
        raise _Aborted

    trace, count = _trace_acting_at(abort_at, abort)
    sys.settrace(trace)
    try:
        _command(folder)
    except _Aborted:
        pass
    finally:
        sys.settrace(None)
        _reset_outputs()
    return seen.get("files"), count[0]


@pytest.mark.parametrize("links", [True, False], ids=["hard links", "copies"])
def test_abort_at_every_byte_code_leaves_old_or_new_files(tmp_path, monkeypatch, links):
    if not links:  # a file system without hard links: the old file is copied aside
        def no_link(src, dst, **kwargs):
            raise OSError("no hard links here")

        monkeypatch.setattr(os, "link", no_link)
    outcomes = []
    for k in range(1, 100_000):
        folder = tmp_path / f"abort{k}"
        folder.mkdir()
        files, _ = _run(folder, k)
        if files is None:  # the command ended before its k-th byte code: all tried
            assert _files(folder) == NEW
            break
        assert files in (OLD, NEW), (k, files)
        outcomes.append(files == NEW)
    # old files up to the commit, new ones after it: it happens once, in one step
    assert outcomes == sorted(outcomes) and 0 < sum(outcomes) < len(outcomes), outcomes
    assert len(outcomes) > 200  # the trace saw the writes' byte codes


def test_a_press_at_any_byte_code_of_the_commit_says_what_the_abort_did(tmp_path,
                                                                        monkeypatch):
    # the CLI's handler itself (CtrlC), pressed once at every byte code of a command that
    # replaces one file, writes another and commits: the abort's message must match the
    # files it leaves (a press just after the commit once restored nothing and said the
    # user's files were as they were)
    import signal

    from ctsne.interfaces.cli import interrupt

    said = []
    monkeypatch.setattr(interrupt, "_say", said.append)
    monkeypatch.setattr(interrupt.signal, "signal", lambda *args: None)

    def exit_(code):
        raise _Aborted(code)

    monkeypatch.setattr(interrupt.os, "_exit", exit_)
    traced = TRACED | {interrupt.__file__}
    outcomes = []
    for k in range(1, 100_000):
        folder = tmp_path / f"press{k}"
        folder.mkdir()
        for name, data in OLD.items():
            (folder / name).write_bytes(data)
        ctrl_c, said[:] = interrupt.CtrlC(), []
        # Python runs the handler between two byte codes
        trace, count = _trace_acting_at(
            k, lambda frame, ctrl_c=ctrl_c: ctrl_c.handler(signal.SIGINT, frame), traced)
        sys.settrace(trace)
        try:
            with _output.track_outputs():
                for name, data in NEW.items():
                    with _output.atomic_path(folder / name, force=True) as tmp:
                        tmp.write_bytes(data)
                ctrl_c.commit()
        except _Aborted:
            pass
        finally:
            sys.settrace(None)
            _reset_outputs()
        if count[0] < k:  # the command ended before its k-th byte code: all tried
            assert _files(folder) == NEW and not said
            break
        assert len(said) == 1, (k, said)
        kept = b"they are complete" in said[0]
        assert kept or b"no partial files were left" in said[0], (k, said)
        assert _files(folder) == (NEW if kept else OLD), (k, said, _files(folder))
        outcomes.append(kept)
    assert outcomes == sorted(outcomes) and 0 < sum(outcomes) < len(outcomes), outcomes
    assert len(outcomes) > 200

"""Writing output files atomically, and the error for problems the user can fix.

Every output goes to a temporary file in the target's folder, then ``os.replace``: a
file is either complete or untouched, and an existing file is only replaced with
``force=True``. Inside :func:`track_outputs` (a command) the files being written and
those finished since the last :func:`forget_finished` are tracked, with the files they
replaced, so that an abort that cannot unwind (a second Ctrl-C) can undo them
(:func:`remove_unfinished`): new files are removed, replaced ones restored.

It sits below every stage because figures (:func:`ctsne.plotting.save_figure`) are
written this way as well as the command line's tables and models
(:mod:`ctsne.interfaces.files.writing`, which re-exports it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["DataError", "atomic_path", "check_writable", "forget_finished", "listing",
           "remove_unfinished", "track_outputs"]


class DataError(ValueError):
    """A problem with the user's files or data: the CLI prints it as one line."""


def listing(kinds: Sequence[str]) -> str:
    """Extensions for a message: ``(".png", ".svg", ".pdf")`` -> ".png, .svg or .pdf"."""
    names = [f".{k}" for k in kinds]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def check_writable(path: str | os.PathLike, force: bool = False) -> Path:
    """Check before any work that ``path`` can be written (any format).

    Raises
    ------
    DataError
        When it exists (and not ``force``), or its folder is missing or not writable.
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path} is a folder; give a file name")
    if path.exists() and not force:
        raise DataError(f"{path} exists; pass --force to overwrite it")
    if not path.parent.is_dir():
        raise DataError(f"{path}: the folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise DataError(f"{path}: the folder {path.parent} is not writable; choose another "
                        "output folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise DataError(f"{path} is not writable; choose another output file")
    # the permission bits do not tell everything (/proc, /sys, read-only mounts, quotas):
    # create and remove a file where the output will go, before any work
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise DataError(f"{path}: cannot create files in {path.parent} ({exc.strerror}); "
                        "choose another output folder") from None
    return path


# (temporary, final, backup) of the files being written now: an abort (double Ctrl-C,
# which ends the process without unwinding) removes them, see remove_unfinished
_WRITING: set[tuple[str, str, str | None]] = set()
# (final, backup) of the files atomic_path has completed since the last forget_finished(),
# while a command tracks its outputs (track_outputs); kept here, not by the caller, so that
# no moment exists where a finished file is in neither list
_FINISHED: list[tuple[str, str | None]] = []
# depth of track_outputs(): outside it (a script, a notebook) nothing is recorded and no
# backup is kept, as nothing can abort the way a command's second Ctrl-C does
_TRACKING = [0]


@contextlib.contextmanager
def track_outputs() -> Iterator[None]:
    """Record the files written inside, so that :func:`remove_unfinished` can undo them.

    A file that replaces an existing one (``force=True``) keeps the old content as a
    hidden hard link beside it until :func:`forget_finished` (or the end of the block):
    an abort then puts the old file back instead of leaving the user with neither.
    """
    _TRACKING[0] += 1
    try:
        yield
    finally:
        _TRACKING[0] -= 1
        if not _TRACKING[0]:
            forget_finished()


def forget_finished() -> None:
    """Keep the files written so far: a later :func:`remove_unfinished` leaves them (and
    the copies of the files they replaced are removed)."""
    while _FINISHED:
        _, backup = _FINISHED.pop()
        if backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(backup)


def _undo(final: str, backup: str | None) -> None:
    with contextlib.suppress(OSError):
        if backup is not None:
            os.replace(backup, final)  # the user's previous file, as it was
        else:
            os.unlink(final)


def remove_unfinished() -> None:
    """Undo the files :func:`atomic_path` is writing now and those completed since the last
    :func:`forget_finished` (for an abort that cannot unwind).

    A temporary file is removed. A file already moved onto its final path is removed, or,
    where it replaced an existing file, that file is put back: the user's files end as
    they were before the command.
    """
    for tmp, final, backup in list(_WRITING):
        if os.path.exists(tmp):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(backup)  # the final path still holds the old file
        else:
            _undo(final, backup)
    for final, backup in reversed(_FINISHED):
        _undo(final, backup)


def _keep_old(path: Path) -> str | None:
    """A hidden hard link to the file at ``path`` (None when there is none to keep)."""
    if not _TRACKING[0] or not path.exists():
        return None
    fd, backup = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent)
    os.close(fd)
    os.unlink(backup)
    try:
        os.link(path, backup)
    except OSError:  # no hard links here (some network or FAT file systems): copy
        shutil.copy2(path, backup)
    return backup


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, force: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``.

    On any error (or Ctrl-C) the temporary file is removed, so ``path`` is either the
    complete new file or untouched.

    Parameters
    ----------
    path : path
        The file to write (checked by :func:`check_writable`).
    force : bool
        An existing file may be replaced.

    Yields
    ------
    Path
        The temporary file to write; it keeps ``path``'s extensions.
    """
    path = Path(path)
    check_writable(path, force)
    # Keep the suffix: some writers decide the format from the name.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp" + "".join(path.suffixes),
                               dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual mode
    entry = (tmp, str(path), None)
    _WRITING.add(entry)
    try:
        yield Path(tmp)
        if path.exists() and not force:  # appeared while we were working
            raise DataError(f"{path} exists; pass --force to overwrite it")
        # the old file is kept (and the entry says so) before it is replaced
        old = (tmp, str(path), _keep_old(path))
        _WRITING.add(old)
        _WRITING.discard(entry)
        entry = old
        os.replace(tmp, path)
        if _TRACKING[0]:
            _FINISHED.append((str(path), entry[2]))
        elif entry[2] is not None:
            os.unlink(entry[2])
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if entry[2] is not None:
            with contextlib.suppress(OSError):
                os.unlink(entry[2])
        raise
    finally:
        _WRITING.discard(entry)

"""Writing output files atomically, and the error for problems the user can fix.

Every output goes to a temporary file in the target's folder, then ``os.replace``: a
file is either complete or untouched, and an existing file is only replaced with
``force=True``. The files being written (and those finished since the last
:func:`forget_finished`) are tracked so that an abort that cannot unwind (a second
Ctrl-C) can remove them (:func:`remove_unfinished`).

It sits below every stage because figures (:func:`ctsne.plotting.save_figure`) are
written this way as well as the command line's tables and models
(:mod:`ctsne.interfaces.files.writing`, which re-exports it).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["DataError", "atomic_path", "check_writable", "forget_finished", "listing",
           "remove_unfinished"]


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
    return path


# (temporary, final) paths of the files being written now: an abort (double Ctrl-C, which
# ends the process without unwinding) removes them, see remove_unfinished
_WRITING: set[tuple[str, str]] = set()
# final paths atomic_path has completed since the last forget_finished(); kept here, not by
# the caller, so that no moment exists where a finished file is in neither list
_FINISHED: list[str] = []


def forget_finished() -> None:
    """Keep the files written so far: a later :func:`remove_unfinished` leaves them."""
    _FINISHED.clear()


def remove_unfinished() -> None:
    """Remove the files :func:`atomic_path` is writing now (for an abort that cannot unwind).

    A temporary file is removed; if it has already been moved onto its final path, that
    file is removed instead (it was written by this process, which is being aborted), and
    so is every file completed since the last :func:`forget_finished`.
    """
    for tmp, final in list(_WRITING):
        with contextlib.suppress(OSError):
            if os.path.exists(tmp):
                os.unlink(tmp)
            else:
                os.unlink(final)
    for final in list(_FINISHED):
        with contextlib.suppress(OSError):
            os.unlink(final)


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
    entry = (tmp, str(path))
    _WRITING.add(entry)
    try:
        yield Path(tmp)
        if path.exists() and not force:  # appeared while we were working
            raise DataError(f"{path} exists; pass --force to overwrite it")
        os.replace(tmp, path)
        _FINISHED.append(str(path))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        _WRITING.discard(entry)

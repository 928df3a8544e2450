"""Writing output files atomically, and the error for problems the user can fix.

Every output goes to a temporary file in the target's folder, then ``os.replace``: a
file is either complete or untouched, and an existing file is only replaced with
``force=True``. Inside :func:`track_outputs` (a command) the files being written and
those finished since the last :func:`forget_finished` are tracked, with the files they
replaced, so that an abort that cannot unwind (a second Ctrl-C) can undo them
(:func:`remove_unfinished`): new files are removed, replaced ones restored.

A process killed outright (SIGKILL, a power cut) cannot remove its temporary files: the
next write to the same target removes those of that target that have not changed for
:data:`STALE_AFTER_S` (:func:`remove_stale`).

Figures are written this way as well as tables and models, hence a top-level module
(:mod:`ctsne.interfaces.files.writing` re-exports it).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

__all__ = ["DataError", "STALE_AFTER_S", "TEST_SIGINT_VARIABLE", "atomic_path", "check_writable",
           "forget_finished", "interruption_point", "listing", "remove_stale",
           "remove_unfinished", "track_outputs"]

# A temporary file of a target (being written, a kept replaced file, a writability probe)
# whose inode has not changed for this long belongs to a process that was killed. Its
# inode's change time counts, not its modification time: a kept file is a hard link,
# which has the old file's modification time.
STALE_AFTER_S = 3600.0
# The random part of the temporary names: 8 characters of this set (tempfile's).
_RANDOM = "[a-z0-9_]{8}"


# Test-only: the environment variable naming the points at which a process interrupts
# itself (interruption_point); the test suite's SIGINT matrix sets it, nothing else does.
TEST_SIGINT_VARIABLE = "CTSNE_TEST_SIGINT"
# The variable's value last read, and the points of it not reached yet.
_SIGINT_PLAN: list = [None, []]


def interruption_point(name: str) -> None:
    """Test-only: a named point of a command where the test suite may press Ctrl-C.

    :data:`TEST_SIGINT_VARIABLE` holds a comma-separated list of point names. Each time
    the process reaches the first name left in the list, it sends itself one SIGINT
    (handled before this function returns) and drops that name; a name listed twice in
    a row sends two, one after the other. Unset (as everywhere outside the tests), the
    call costs one environment look-up. The points are named where they are called: a
    stage ("reading"), a progress report ("neighbours", "optimisation 15": after its
    15th step) or an output file ("emb.csv writing", "emb.csv replacing",
    "emb.csv written").
    """
    raw = os.environ.get(TEST_SIGINT_VARIABLE)
    if not raw:
        return
    if raw != _SIGINT_PLAN[0]:
        _SIGINT_PLAN[:] = [raw, [p.strip() for p in raw.split(",") if p.strip()]]
    left = _SIGINT_PLAN[1]
    while left and left[0] == name:
        left.pop(0)
        # raise_signal runs the Python handler before it returns: two in a row are two
        # presses, never merged into one
        signal.raise_signal(signal.SIGINT)


class DataError(ValueError):
    """A problem with the user's files or data: the CLI prints it as one line."""


def listing(kinds: Sequence[str]) -> str:
    """Extensions for a message: ``(".png", ".svg", ".pdf")`` -> ".png, .svg or .pdf"."""
    names = [f".{k}" for k in kinds]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


# Temporary files being created or about to be given a role (a probe, a file to write, a
# link to a file about to be replaced): named here before they exist, so that an abort at
# any moment (a second Ctrl-C between two system calls) removes them (remove_unfinished).
# None of them holds data that exists nowhere else.
_TRANSIENT: set[str] = set()


@contextlib.contextmanager
def _transient_file(folder: Path, prefix: str, suffix: str,
                    create: Callable[[str], None] | None = None) -> Iterator[str]:
    """A new file ``folder/prefix + 8 random characters + suffix``, made by ``create(name)``
    (default: an empty file; it must fail with FileExistsError on a taken name), known to
    :func:`remove_unfinished` from before it exists until the block ends."""
    while True:
        name = str(folder / f"{prefix}{secrets.token_hex(4)}{suffix}")
        _TRANSIENT.add(name)
        try:
            if create is None:
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            else:
                create(name)
            break
        except FileExistsError:
            _TRANSIENT.discard(name)
        except BaseException:
            _TRANSIENT.discard(name)
            raise
    try:
        yield name
    finally:
        _TRANSIENT.discard(name)


def _temporary_names(path: Path) -> re.Pattern:
    """The names of the temporary files made for ``path``: by :func:`atomic_path`
    (``.STEM.XXXXXXXX.tmp.EXT``), :func:`_keep_old` (``.NAME.XXXXXXXX.old``) and
    :func:`check_writable` (``.NAME.XXXXXXXX.probe``)."""
    tmp = re.escape(f".{path.stem}.") + _RANDOM + re.escape(".tmp" + "".join(path.suffixes))
    other = re.escape(f".{path.name}.") + _RANDOM + r"\.(old|probe)"
    return re.compile(f"(?:{tmp})|(?:{other})")


def remove_stale(path: str | os.PathLike, older_than: float | None = None) -> list[Path]:
    """Remove the temporary files of target ``path`` left by a killed process.

    Only files named as this module names ``path``'s temporary files, in its folder,
    whose inode has not changed for ``older_than`` seconds (default
    :data:`STALE_AFTER_S`): a write in progress, even another process's, changes its
    file, and a replaced file is kept only while its command writes its other outputs.

    Returns
    -------
    list of Path
        The files removed.
    """
    path = Path(path)
    limit = STALE_AFTER_S if older_than is None else older_than
    names = _temporary_names(path)
    now = time.time()
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        if not names.fullmatch(entry.name):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) and \
                    now - entry.stat(follow_symlinks=False).st_ctime > limit:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


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
        with _transient_file(path.parent, f".{path.name}.", ".probe") as probe:
            os.unlink(probe)
    except OSError as exc:
        raise DataError(f"{path}: cannot create files in {path.parent} ({exc.strerror}); "
                        "choose another output folder") from None
    return path


# (temporary, final, backup, inode) of the files being written now, which an abort removes
# (remove_unfinished). The inode is the temporary file's, noted just before the move: the
# final path holding it is what says the move happened (an abort may remove the temporary)
_WRITING: set[tuple[str, str, str | None, int | None]] = set()
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


# Copies of replaced files that are no longer needed (their command committed), until
# they are removed: an abort in the meantime removes them too.
_DROPPING: list[str] = []


def forget_finished() -> None:
    """Keep the files written so far: a later :func:`remove_unfinished` leaves them (and
    the copies of the files they replaced are removed)."""
    _DROPPING.extend(backup for _, backup in _FINISHED if backup is not None)
    # the commit, in one step: an abort before it undoes every file, one after it none
    # (never some of them)
    _FINISHED.clear()
    for backup in list(_DROPPING):
        with contextlib.suppress(OSError):
            os.unlink(backup)
        _DROPPING.remove(backup)


def _undo(final: str, backup: str | None) -> None:
    with contextlib.suppress(OSError):
        if backup is None:
            os.unlink(final)
        elif os.path.exists(final) and os.path.samefile(backup, final):
            # the new file never arrived (the link still names the user's file), and a
            # rename between two links of one file does nothing: drop the link
            os.unlink(backup)
        else:
            os.replace(backup, final)  # the user's previous file, as it was


def _moved(final: str, inode: int | None) -> bool:
    """Whether the temporary file noted with ``inode`` is now at ``final``."""
    try:
        return inode is not None and os.stat(final).st_ino == inode
    except OSError:
        return False


def remove_unfinished() -> None:
    """Undo the files :func:`atomic_path` is writing now and those completed since the last
    :func:`forget_finished` (for an abort that cannot unwind): the user's files end as
    they were before the command (module note).
    """
    for tmp, final, backup, inode in list(_WRITING):
        if _moved(final, inode):
            _undo(final, backup)
        else:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(backup)  # the final path still holds the old file
    for name in list(_TRANSIENT):
        with contextlib.suppress(OSError):
            os.unlink(name)
    for final, backup in reversed(_FINISHED):
        _undo(final, backup)
    for backup in _DROPPING:  # after the undoing: a copy listed in both was put back
        with contextlib.suppress(OSError):
            os.unlink(backup)


def _keep_old(path: Path) -> contextlib.AbstractContextManager[str | None]:
    """A hidden hard link to the file at ``path`` (None when there is none to keep), as a
    block inside which the caller registers it."""
    if not _TRACKING[0] or not path.exists():
        return contextlib.nullcontext(None)

    def link(name: str) -> None:
        try:
            os.link(path, name)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some network or FAT file systems): copy
            with open(path, "rb") as src, open(name, "xb") as dst:
                shutil.copyfileobj(src, dst)
            shutil.copystat(path, name)

    return _transient_file(path.parent, f".{path.name}.", ".old", link)


def _swap(old: tuple, new: tuple) -> tuple:
    """Replace a :data:`_WRITING` entry, registering the new one first (an abort between
    the two steps finds both, and either describes the file correctly)."""
    if new != old:
        _WRITING.add(new)
        _WRITING.discard(old)
    return new


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
    remove_stale(path)  # what a killed process left of this target

    def create(name: str) -> None:  # mode 0666 less the umask: the usual mode of a new file
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))

    # Keep the suffix: some writers decide the format from the name. Each temporary
    # file is registered before it exists, so that no abort can leave it behind.
    with _transient_file(path.parent, f".{path.stem}.", ".tmp" + "".join(path.suffixes),
                         create) as tmp:
        entry = (tmp, str(path), None, None)
        _WRITING.add(entry)
    try:
        interruption_point(f"{path.name} writing")
        yield Path(tmp)
        if path.exists() and not force:  # appeared while we were working
            raise DataError(f"{path} exists; pass --force to overwrite it")
        # the old file is kept (and the entry says so) before it is replaced
        with _keep_old(path) as backup:
            entry = _swap(entry, (tmp, str(path), backup, None))
        interruption_point(f"{path.name} replacing")
        entry = _swap(entry, (tmp, str(path), entry[2], os.stat(tmp).st_ino))
        os.replace(tmp, path)
        if _TRACKING[0]:
            _FINISHED.append((str(path), entry[2]))
        elif entry[2] is not None:
            os.unlink(entry[2])
        interruption_point(f"{path.name} written")
    except BaseException:
        if not _moved(str(path), entry[3]):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if entry[2] is not None:
                with contextlib.suppress(OSError):
                    os.unlink(entry[2])
        elif (str(path), entry[2]) in _FINISHED:
            pass  # complete, and the command's abort undoes it with its other files
        elif entry[2] is not None:
            # an exception (KeyboardInterrupt) just after the replace: the write failed,
            # so the old file is put back rather than lost
            _undo(str(path), entry[2])
        raise
    finally:
        _WRITING.discard(entry)

"""Atomic, explicit file writes: the target is always the old file or the complete new one.

``write(path)`` hands out a temporary file in the target's own folder; when the ``with`` block ends
without an error the file is flushed, fsynced, given mode 0644 and renamed over the target in one
step (the folder is fsynced too). On any error, Ctrl-C or ``SystemExit`` the temporary file is
removed and the target is left as it was. Nothing is written through a symbolic link unless
``follow_symlinks=True`` (then the file the link points to is replaced and the link stays).

Two builds of the same path at once: the second one stops with a clear error naming the other
build's lock (``.<name>.xlcalc-lock``, an advisory lock the system drops when its process ends,
however it ends), so both never print "wrote" for one file. A process killed outright (SIGKILL, a
power cut) can leave its temporary file, ``.<name>.<16 hex digits>.xlcalc-tmp``, and its lock file
behind, never a broken target; the next write of the same path, holding the lock, removes them.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import InputError

__all__ = ["write", "write_text", "check_target", "TEMP_SUFFIX", "LOCK_SUFFIX"]

TEMP_SUFFIX = ".xlcalc-tmp"
LOCK_SUFFIX = ".xlcalc-lock"
MODE = 0o644


def check_target(path: str | Path, *, overwrite: bool, follow_symlinks: bool = False, name: str = "output") -> Path:
    """The file a write of ``path`` replaces; a clear :class:`InputError` (naming input ``name``) for a path it must
    not write."""
    p = Path(path)
    if p.is_symlink():
        if not follow_symlinks:
            raise InputError(name, str(p), "a file that is not a symbolic link (or given with --follow-symlinks "
                             "to replace the file the link points to)", f"it links to {os.readlink(p)}")
        p = Path(os.path.realpath(p))
    if p.exists() or p.is_symlink():
        if not p.is_file():
            raise InputError(name, str(p), "a regular file or a new file name",
                             "it is a directory or a special file" if p.exists() else "it is a broken link")
        if not overwrite:
            raise InputError(name, str(p), "a new file name, or given with --force to replace the file",
                             "it exists already and is left as it is")
    return p


@contextlib.contextmanager
def write(path: str | Path, *, overwrite: bool = True, follow_symlinks: bool = False,
          name: str = "output") -> Iterator[BinaryIO]:
    """A binary file to write; on a clean exit it atomically becomes ``path`` (see the module's notes).

    A path whose folder is missing or cannot be written is an :class:`InputError` naming input ``name`` (the
    command's flag for the file), never a traceback.
    """
    target = check_target(path, overwrite=overwrite, follow_symlinks=follow_symlinks, name=name)
    # Ctrl-C and SIGTERM wait while the lock and the temporary file are made and removed, so that a
    # handled signal (KeyboardInterrupt, SystemExit) always goes through the cleanup below
    held: object | None = _hold_signals()
    lock: tuple[int, Path] | None = None
    tmp: Path | None = None
    try:
        try:
            lock = _acquire(target)
        except OSError as exc:  # no such folder, no permission, a read-only file system: the user's path
            raise InputError(name, str(path), "a path that can be written", exc.strerror or str(exc)) from None
        target = check_target(path, overwrite=overwrite, follow_symlinks=follow_symlinks, name=name)  # under the lock
        remove_stale(target)
        tmp = target.parent / f".{target.name}.{secrets.token_hex(8)}{TEMP_SUFFIX}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        except OSError as exc:
            tmp = None
            raise InputError(name, str(path), "a path that can be written", exc.strerror or str(exc)) from None
        f = os.fdopen(fd, "w+b")
        with f:
            _release_signals(held)  # a signal that came meanwhile is raised here, inside the cleanup
            held = None
            yield f
            f.flush()
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), MODE)
            os.fsync(f.fileno())
            held = _hold_signals()
        if not hasattr(os, "fchmod"):
            os.chmod(tmp, MODE)
        _commit(tmp, target, overwrite)
        tmp = None
        _fsync_folder(target.parent)
    except BaseException:
        if held is None:
            held = _hold_signals()
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    finally:
        if held is None:
            held = _hold_signals()
        if lock is not None:
            _unlock(*lock)
        _release_signals(held)


def write_text(path: str | Path, text: str, name: str = "output") -> None:
    """Replace ``path`` with ``text`` (UTF-8, newlines as given) through :func:`write`: the old file or the new one.
    ``name``: the input that gave the path, named by an error."""
    with write(path, name=name) as f:
        f.write(text.encode("utf-8"))


_SIGNALS = {getattr(signal, n) for n in ("SIGINT", "SIGTERM") if hasattr(signal, n)}


def _hold_signals() -> object:
    """Block Ctrl-C and SIGTERM (where the platform can); the previous mask, to give to _release_signals."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS) if hasattr(signal, "pthread_sigmask") else True


def _release_signals(held: object) -> None:
    if hasattr(signal, "pthread_sigmask") and isinstance(held, set):
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _commit(tmp: Path, target: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(tmp, target)
        return
    taken = InputError("output", str(target), "a new file name, or given with --force to replace the file",
                       "it was created while the workbook was built and is left as it is")
    try:  # no-clobber: a hard link fails if anything took the name meanwhile
        os.link(tmp, target)
    except FileExistsError:
        raise taken from None
    except OSError:  # a file system without hard links
        if target.exists():
            raise taken from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


def remove_stale(target: Path) -> None:
    """Remove temporary files that a killed write of ``target`` left (call it holding the lock)."""
    pattern = re.compile(r"\." + re.escape(target.name) + r"\.[0-9a-f]{16}" + re.escape(TEMP_SUFFIX))
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        if pattern.fullmatch(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target.parent / name)


def _busy(target: Path, lock: Path) -> InputError:
    return InputError("output", str(target), "a file no other build is writing at the same time",
                      f"another xlcalc build is writing it now (it holds {lock.name}); wait for it to finish, "
                      "or write another file")


def _acquire(target: Path) -> tuple[int, Path]:
    """Hold ``.<name>.xlcalc-lock`` beside ``target``; another holder is a clear error, never a wait."""
    lock = target.parent / f".{target.name}{LOCK_SUFFIX}"
    for _ in range(100):  # a lock file removed by its holder between our open and lock: open it again
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(fd):
                raise _busy(target, lock)
            try:
                same = os.stat(lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd, lock
        os.close(fd)
    raise _busy(target, lock)


def _unlock(fd: int, lock: Path) -> None:
    if sys.platform != "win32":  # unlinked while locked, so a later writer locks a new file
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
    os.close(fd)


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _fsync_folder(folder: Path) -> None:
    if sys.platform == "win32":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

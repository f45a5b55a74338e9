"""Files a user hands xlcalc (a ``config.json``, a scenario TOML) are untrusted input.

``read_limited`` reads a regular file only (a FIFO, a device such as ``/dev/zero`` or a folder is
refused before anything is read, so nothing hangs), at most ``max_bytes`` of it. ``check_value``
refuses what a parser accepts but no setting means: NaN and infinities, integers too large for a
float, text with control characters, nesting deeper than a few levels, each named by its key.
"""

from __future__ import annotations

import math
import os
import stat
import unicodedata
from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["read_limited", "check_value", "check_text", "MAX_DEPTH"]

MAX_DEPTH = 4
"""Nesting a settings file may have (a list inside a table inside the file is depth 2)."""


def read_limited(path: str | Path, name: str, max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (at most ``max_bytes``); a clear :class:`InputError` otherwise."""
    shown = str(path)
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(name, shown, f"a readable {what}", detail) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(name, shown, f"a regular file ({what})", f"it is {_kind(st.st_mode)}")
    if st.st_size > max_bytes:
        raise InputError(name, shown, f"a {what} of at most {max_bytes:,} bytes", f"it has {st.st_size:,}")
    try:  # O_NONBLOCK: a FIFO put in its place after the check cannot block the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise InputError(name, shown, f"a readable {what}", exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(name, shown, f"a regular file ({what})", f"it is {_kind(mode)}")
        try:
            raw = f.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(name, shown, f"a readable {what}", exc.strerror or str(exc)) from None
    if len(raw) > max_bytes:
        raise InputError(name, shown, f"a {what} of at most {max_bytes:,} bytes", "it grew while it was read")
    return raw


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def check_text(key: str, text: str, allow: str = "\t") -> str:
    """``text`` without control or non-character code points (those in ``allow`` excepted), else an error
    naming ``key``."""
    for ch in text:
        cat = unicodedata.category(ch)
        if ch not in allow and (cat in ("Cc", "Cs", "Co") or cat == "Cn" and _noncharacter(ch)):
            raise InputError(key, text, "text without control characters", f"it holds U+{ord(ch):04X}")
    return text


def _noncharacter(ch: str) -> bool:
    cp = ord(ch)
    return 0xFDD0 <= cp <= 0xFDEF or cp & 0xFFFE == 0xFFFE


def check_value(key: str, value: Any, depth: int = 0) -> None:
    """Refuse NaN, infinities, integers beyond floats, control characters and deep nesting, naming ``key``."""
    if depth > MAX_DEPTH:
        raise InputError(key, "(nested)", f"a value nested at most {MAX_DEPTH} levels deep")
    if isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(key, value, "a finite number (NaN and infinities are not settings)")
    if isinstance(value, int) and abs(value) >= 10 ** 18:
        raise InputError(key, value, "a number below 1e18")
    if isinstance(value, str):
        check_text(key, value)
    elif isinstance(value, dict):
        for k, v in value.items():
            sub = f"{key}.{k}" if key else str(k)
            check_text(sub, str(k))
            check_value(sub, v, depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_value(f"{key}[{i}]", v, depth + 1)

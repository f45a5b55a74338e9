"""The one error type a user mistake raises, and its one message format.

Every message reads ``<input> = <value> is not allowed: <input> must be <what is allowed> (<detail>)``
-- in a worksheet cell, on the command line and in Python. Several mistakes at once (e.g. every
missing input of a call) are one :class:`InputError` whose message lists each of them in that format.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

K = TypeVar("K")


class InputError(ValueError):
    """A user input that is not allowed: says which input, what value, and what is allowed.

    ``problems`` holds every mistake the error reports (itself alone, or each of several).
    """

    def __init__(self, name: str, value: Any, allowed: str, detail: str = ""):
        self.name, self.value, self.allowed, self.detail = name, value, allowed, detail
        self.problems: tuple[InputError, ...] = (self,)
        super().__init__(f"{name} = {_show(value)} is not allowed: {name} must be {allowed}"
                         + (f" ({detail})" if detail else ""))

    @classmethod
    def each(cls, check: Callable[[K], Any], keys: Iterable[K]) -> dict[K, Any]:
        """``{key: check(key)}`` for every key; one error reporting every key whose check raised one."""
        out, errors = {}, []
        for key in keys:
            try:
                out[key] = check(key)
            except InputError as exc:
                errors.append(exc)
        if errors:
            raise cls.all(errors)
        return out

    @classmethod
    def all(cls, errors: Iterable[InputError]) -> InputError:
        """One error reporting every mistake of ``errors`` (each one's own error when there is one)."""
        flat: list[InputError] = []
        for e in errors:
            flat.extend(e.problems)
        if not flat:
            raise ValueError("InputError.all() needs at least one error")
        if len(flat) == 1:
            return flat[0]
        err = cls.__new__(cls)
        err.name = ", ".join(dict.fromkeys(e.name for e in flat))
        err.value = tuple(e.value for e in flat)
        err.allowed = "; ".join(f"{e.name}: {e.allowed}" for e in flat)
        err.detail = ""
        err.problems = tuple(flat)
        ValueError.__init__(err, f"{len(flat)} inputs are not allowed: " + "; ".join(str(e) for e in flat))
        return err

    @property
    def names(self) -> list[str]:
        """The inputs this error names, one per mistake."""
        return [e.name for e in self.problems]


class CatalogError(ValueError):
    """An unknown catalog name or a malformed catalog file."""


class UnknownNameError(InputError, KeyError):
    """A name (of a formula, a worksheet function, an argument) that does not exist; says the close ones.

    An :class:`InputError` (so the faces show its message) and a ``KeyError`` (a failed look-up)."""

    def __init__(self, kind: str, name: Any, known: Sequence[str]):
        close = (difflib.get_close_matches(str(name), list(known), n=3, cutoff=0.6)
                 or difflib.get_close_matches(str(name).lower(), [k.lower() for k in known], n=3, cutoff=0.6))
        detail = ("did you mean " + " or ".join(close) + "?") if close else f"{len(known)} are known"
        InputError.__init__(self, kind, name, f"the name of a known {kind}", detail)

    def __str__(self) -> str:  # not KeyError's repr-quoted text
        return str(self.args[0]) if self.args else ""


def missing(names: Iterable[str], allowed: Any = None, where: str = "") -> InputError:
    """Every missing input of a call at once. ``allowed(name)`` says what each may be."""
    required = "the input is required" + (f" by {where}" if where else "")
    return InputError.all([InputError(n, None, allowed(n) if callable(allowed) else (allowed or "given"), required)
                           for n in names])


def _show(value: Any) -> str:
    if value is None:
        return "(empty)"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
    if isinstance(value, int) and abs(value) >= 10 ** 16:
        if abs(value) < 10 ** 308:
            return f"{float(value):.3g}"
        return f"a{' negative' if value < 0 else 'n'} integer of {len(str(abs(value)))} digits"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:g}" if (abs(value) >= 1e16 or 0 < abs(value) < 1e-4) else repr(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

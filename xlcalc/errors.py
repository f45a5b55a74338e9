"""The one error type a user mistake raises."""

from __future__ import annotations

from typing import Any


class InputError(ValueError):
    """A user input that is not allowed: says which input, what value, and what is allowed."""

    def __init__(self, name: str, value: Any, allowed: str, detail: str = ""):
        self.name, self.value, self.allowed, self.detail = name, value, allowed, detail
        shown = _show(value)
        message = f"{name} = {shown} is not allowed: {name} must be {allowed}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class CatalogError(ValueError):
    """An unknown catalog name or a malformed catalog file."""


def _show(value: Any) -> str:
    if value is None:
        return "(empty)"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
    return repr(value)

"""Excel's functions and operators as Python computes them, and numbers as Excel writes them.

:data:`EXCEL_FUNCTIONS` and :data:`PY_BINOPS` are what an expression tree evaluates with (``Expr.evaluate``),
what the generated Python of :mod:`xlcalc.engine.compiled` and :mod:`xlcalc.engine.rows` calls, and what the worksheet
functions' runtime computes with; :func:`render_number` and :func:`as_text` write numbers as a spreadsheet does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["render_number", "as_text", "PY_BINOPS", "EXCEL_FUNCTIONS"]


def render_number(value: float | int) -> str:
    """Render a number the way Excel writes it: ``1E+9``, ``0.4``, ``86400``."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"cannot write the non-finite number {value!r} into a formula")
    if v.is_integer() and abs(v) < 1e6:
        return str(int(v))
    text = repr(v)
    if "e" not in text and not (v.is_integer() and abs(v) >= 1e6):
        return text
    # the shortest mantissa that round-trips (17 significant digits always do)
    mantissa, exponent = next(c for d in range(17) if float(c := f"{v:.{d}e}") == v).split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    exp = int(exponent)
    return f"{mantissa}E{'+' if exp >= 0 else '-'}{abs(exp)}"


def _py_eq(a: Any, b: Any) -> bool:
    # Excel compares text case-insensitively.
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    same: bool = a == b  # (not cast(): a call on every comparison a workbook's evaluation makes)
    return same


PY_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "^": lambda a, b: a ** b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "=": _py_eq,
    "<>": lambda a, b: not _py_eq(a, b),
    "&": lambda a, b: as_text(a) + as_text(b),
}


def as_text(value: Any) -> str:
    """A value as Excel's ``&`` writes it: whole numbers without a decimal point, 15 significant digits."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        v = float(value)
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else format(v, ".15g")
    return str(value)


def _snap(q: float) -> float:
    """q, or the whole number it is within float noise of (905*2*1.1 = 1991.0000000000002 is 1991)."""
    r = round(q)
    return r if abs(q - r) <= 1e-12 * max(1.0, abs(q)) else q


def _ceiling(x: float, significance: float) -> float:
    return 0.0 if significance == 0 else math.ceil(_snap(x / significance)) * significance


def _roundup(x: float, digits: float) -> float:
    f = 10.0 ** int(digits)
    return math.copysign(math.ceil(_snap(abs(x) * f)) / f, x)


def _round(x: float, digits: float = 0) -> float:
    """Excel's ROUND: half away from zero."""
    f = 10.0 ** int(digits)
    return math.copysign(math.floor(abs(x) * f + 0.5) / f, x)


def _floor_int(x: float) -> float:
    return float(math.floor(_snap(x)))


def _find(find: str, text: str, start: int) -> int:
    at = text.find(find, start - 1) if start >= 1 else -1
    if at < 0:
        raise ValueError(f"FIND: {find!r} is not in the text")
    return at + 1


# name -> python implementation (IF is special-cased: it is lazy)
EXCEL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "MIN": lambda *a: min(a),
    "MAX": lambda *a: max(a),
    "SQRT": math.sqrt,
    "CEILING": _ceiling,
    "ROUNDUP": _roundup,
    "INT": _floor_int,
    "ROUND": _round,
    "AND": lambda *a: all(a),
    "OR": lambda *a: any(a),
    "NOT": lambda a: not a,
    "LOG": lambda x, base=10: math.log(x, base),
    "ABS": abs,
    "FIXED": lambda x, decimals=2: f"{_round(x, decimals):,.{max(int(decimals), 0)}f}",  # text with thousands commas
    "LEN": lambda text: len(as_text(text)),
    "LEFT": lambda text, n=1: as_text(text)[:max(int(n), 0)],
    "FIND": lambda find, text, start=1: _find(as_text(find), as_text(text), int(start)),  # 1-based; #VALUE! if absent
}

"""The functions a formula body calls: :func:`if_`, :func:`min_`, :func:`ceiling`, :func:`eq`, ...

Each dispatches on its arguments: with plain numbers it computes directly (fast enough for the planner's inner
loops); with any :class:`~xlcalc.expr.nodes.Expr` argument it builds a node.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from .excel import EXCEL_FUNCTIONS, _ceiling, _py_eq, _round, as_text
from .nodes import BinOp, Func, is_expr, wrap

__all__ = [
    "if_", "min_", "max_", "sqrt", "ceiling", "roundup", "floor_int", "round_", "abs_",
    "and_", "or_", "not_", "concat", "eq", "NOISE_DIGITS",
]


# > 0 while a registered formula computes numbers (the registry's validated call or ``.raw``): every argument
# is then a plain value, so the helpers below skip their is-this-an-expression checks (fast dispatch).
_numeric = 0


# -- helpers usable in formula bodies ------------------------------------------

def if_(cond: Any, then: Any, otherwise: Any) -> Any:
    """``IF(cond, then, otherwise)``. With plain values both branches are already computed."""
    if not _numeric and is_expr(cond, then, otherwise):
        return Func("IF", (wrap(cond), wrap(then), wrap(otherwise)))
    return then if cond else otherwise


def _fn(name: str, *args: Any) -> Any:
    if not _numeric and is_expr(*args):
        return Func(name, tuple(wrap(a) for a in args))
    return EXCEL_FUNCTIONS[name](*args)


# MIN, MAX, AND and OR of any number of arguments, SQRT, ABS and NOT of one, as they are: each builds its node, or
# computes with plain values
min_ = partial(_fn, "MIN")
max_ = partial(_fn, "MAX")
and_ = partial(_fn, "AND")
or_ = partial(_fn, "OR")
sqrt = partial(_fn, "SQRT")
abs_ = partial(_fn, "ABS")
not_ = partial(_fn, "NOT")


# Counts are rounded to 9 decimals before CEILING/INT so that float noise such as
# 864*1.05/8 = 113.40000000000001 or 905*2*1.1 = 1991.0000000000002 cannot push a whole
# count up or down; Excel and LibreOffice tolerate such noise themselves, and with the
# explicit ROUND every engine (and Python) agrees.
NOISE_DIGITS = 9
_NOISE_SCALE = 10.0 ** NOISE_DIGITS  # as _round computes it


def ceiling(x: Any, significance: Any = 1) -> Any:
    """``CEILING(ROUND(x, 9), significance)``: round up to a multiple of ``significance`` (x >= 0)."""
    if _numeric:
        if significance == 1:  # _ceiling(_round(x, 9), 1) with the two calls inlined (the step-time model's hot path)
            q = math.copysign(math.floor(abs(x) * _NOISE_SCALE + 0.5) / _NOISE_SCALE, x)
            r = round(q)
            if abs(q - r) <= 1e-12 * max(1.0, abs(q)):
                q = r
            return math.ceil(q) * significance
        return _ceiling(_round(x, NOISE_DIGITS), significance)
    return _fn("CEILING", _fn("ROUND", x, NOISE_DIGITS), significance)


def roundup(x: Any, digits: Any = 0) -> Any:
    return _fn("ROUNDUP", x, digits)


def floor_int(x: Any) -> Any:
    """``INT(ROUND(x, 9))``: round down to a whole number (see NOISE_DIGITS)."""
    return _fn("INT", _fn("ROUND", x, NOISE_DIGITS))


def round_(x: Any, digits: Any = 0) -> Any:
    """``ROUND(x, digits)`` (half away from zero, as Excel)."""
    return _fn("ROUND", x, digits)


def concat(*parts: Any) -> Any:
    """Text joined with Excel's ``&`` (numbers written as :func:`as_text` does)."""
    if is_expr(*parts):
        out = wrap(parts[0])
        for p in parts[1:]:
            out = BinOp("&", out, wrap(p))
        return out
    return "".join(as_text(p) for p in parts)


def eq(a: Any, b: Any) -> Any:
    """``a = b`` (text compared case-insensitively, as spreadsheets do)."""
    if not _numeric and is_expr(a, b):
        return BinOp("=", wrap(a), wrap(b))
    return _py_eq(a, b)

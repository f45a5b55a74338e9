"""A formula over columns of values: the worksheet functions' path for ranges.

:func:`evaluate_columns` evaluates a formula's expression tree once over whole columns (``env`` holds each input's
validated value, a list for a column) and says which rows must be computed again on their own. Two passes give the
same floats as a single cell: with numpy (:class:`_NumpyPass`, arithmetic on arrays, IEEE doubles) when it is
installed and asked for, otherwise plain Python lists through :func:`xlcalc.engine.rows.rows_function` (xlwings Lite
may have no numpy). A row that divides by zero or leaves the finite numbers along the way is flagged for the
single-cell path, so it gets the single cell's number or message.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import Any

from ..expr.excel import EXCEL_FUNCTIONS, PY_BINOPS
from ..expr.nodes import BinOp, Bool, Call, Func, Neg, Num, Text, Var
from ..registry import Formula
from .rows import NoRowForm, rows_function

_np: Any
try:  # numpy is optional: the classic add-in has it (xlwings needs it), xlwings Lite may not
    import numpy as _np
except ImportError:  # pragma: no cover - exercised in Pyodide
    _np = None

__all__ = ["HAVE_NUMPY", "evaluate_columns"]

HAVE_NUMPY = _np is not None
"""numpy is installed: :func:`evaluate_columns` can take the array pass."""


class _Fallback(Exception):
    """The column pass cannot give the single-cell answer for every row: compute row by row."""


def evaluate_columns(formula: Formula, env: dict[str, Any], n: int, use_numpy: bool = True) -> tuple[list[Any], set[int] | range]:
    """The formula over columns of validated values: (results, rows to compute on their own)."""
    try:
        if use_numpy and _np is not None:
            return _NumpyPass(n).run(formula, env)
        return _list_pass(formula, env, n)
    except _Fallback:
        return [None] * n, range(n)


def _list_pass(formula: Formula, env: dict[str, Any], n: int) -> tuple[list[Any], set[int]]:
    """Columns as Python lists: the same operations in the same order as a single cell, so the
    same floats. The formula's expression tree is compiled once per formula and set of columns
    (``xlcalc.engine.rows``) into one Python function: the parts without a column computed once,
    then one loop over the rows. A division by zero or a math error anywhere: every row on its own."""
    columns = tuple(k for k, v in env.items() if isinstance(v, list))
    key = (formula.name, columns)
    fn = _ROW_CODE.get(key)
    if fn is None:
        try:
            fn = _ROW_CODE[key] = rows_function(formula, columns)
        except NoRowForm as exc:
            raise _Fallback(str(exc)) from exc
    try:
        out = fn(env)
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise _Fallback from exc
    if not isinstance(out, list):  # no column reaches the result
        out = [out] * n
    return out, _not_finite(out)


_ROW_CODE: dict[tuple[str, tuple[str, ...]], Callable[[dict[str, Any]], Any]] = {}


def _not_finite(out: list[Any]) -> set[int]:
    """Rows whose result is a float that is not finite (inf or NaN): they go the single-cell way."""
    try:  # a finite sum: every row a finite number (inf and NaN stay in a sum; an overflow looks row by row)
        if math.isfinite(sum(out)):
            return set()
    except (TypeError, OverflowError, ValueError):  # text among the results, or a huge int
        pass
    return {k for k, x in enumerate(out) if isinstance(x, float) and not math.isfinite(x)}


_NUMPY_OPS = {"+": "add", "-": "subtract", "*": "multiply", "/": "true_divide", "^": "power",
              "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}


class _NumpyPass:
    """Columns as numpy arrays where the operation is arithmetic on numbers (IEEE doubles: the
    single cell's floats up to the last bit or so); text and Excel functions other than IF, MIN,
    MAX go element by element through the engine's own Python implementations. Rows that divide
    by zero or leave the finite numbers at any step are computed again on their own."""

    def __init__(self, n: int):
        self.n = n
        self.suspect = _np.zeros(n, dtype=bool)

    def run(self, formula: Formula, env: dict[str, Any]) -> tuple[list[Any], set[int]]:
        columns = {k: self.array(v) if isinstance(v, list) else v for k, v in env.items()}
        with _np.errstate(all="ignore"):
            try:
                out = self.eval(formula.expr, columns)
            except (ArithmeticError, ValueError, TypeError) as exc:
                raise _Fallback from exc
        if isinstance(out, _np.ndarray):
            result = self.flag(out).tolist()
        elif isinstance(out, list):
            result = out
            self.suspect |= _np.array([isinstance(x, float) and not math.isfinite(x) for x in out])
        else:
            result = [out] * self.n
        return result, set(_np.flatnonzero(self.suspect).tolist())

    @staticmethod
    def array(column: list[Any]) -> Any:
        kinds = set(map(type, column))
        if kinds <= {int, float}:
            return _np.array(column, dtype=float)
        if kinds == {bool}:
            return _np.array(column, dtype=bool)
        return column  # text: element by element

    def flag(self, out: Any) -> Any:
        if isinstance(out, _np.ndarray) and out.dtype.kind == "f":
            self.suspect |= ~_np.isfinite(out)
        return out

    def eval(self, node: Any, env: dict[str, Any]) -> Any:
        if isinstance(node, Var):
            return env[node.name]
        if isinstance(node, (Num, Bool, Text)):
            return node.value
        if isinstance(node, BinOp):
            a, b = self.eval(node.left, env), self.eval(node.right, env)
            if node.op in _NUMPY_OPS and _numeric(a) and _numeric(b) \
                    and (isinstance(a, _np.ndarray) or isinstance(b, _np.ndarray)):
                if node.op in ("+", "-", "*", "/", "^"):
                    a, b = _as_float(a), _as_float(b)
                    if node.op == "/" and _np.any(zero := b == 0):
                        self.suspect |= _np.broadcast_to(zero, (self.n,))
                return self.flag(getattr(_np, _NUMPY_OPS[node.op])(a, b))
            return self.elementwise(PY_BINOPS[node.op], (a, b))
        if isinstance(node, Neg):
            x = self.eval(node.operand, env)
            if isinstance(x, _np.ndarray):
                return -_as_float(x)
            return [-v for v in x] if isinstance(x, list) else -x
        if isinstance(node, Func):
            args = tuple(self.eval(a, env) for a in node.args)  # both IF branches, as a single cell does
            if node.name == "IF":
                c, a, b = args
                if isinstance(c, _np.ndarray) and c.dtype == bool and _numeric(a) and _numeric(b):
                    return _np.where(c, a, b)
                return self.elementwise(lambda c, a, b: a if c else b, args)
            if node.name in ("MIN", "MAX") and all(_numeric(a) for a in args) \
                    and any(isinstance(a, _np.ndarray) for a in args):
                op = _np.minimum if node.name == "MIN" else _np.maximum
                return self.flag(functools.reduce(op, map(_as_float, args)))  # op(op(a, b), c), left to right
            return self.elementwise(EXCEL_FUNCTIONS[node.name], args)
        if isinstance(node, Call):
            return self.eval(node.formula.expr, {k: self.eval(v, env) for k, v in node.args.items()})
        raise _Fallback(f"no column form for {type(node).__name__}")

    def elementwise(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if not any(isinstance(a, (list, _np.ndarray)) for a in args):
            return fn(*args)
        seqs = [a.tolist() if isinstance(a, _np.ndarray) else a if isinstance(a, list)
                else itertools.repeat(a, self.n) for a in args]
        out = list(map(fn, *seqs))
        return self.flag(self.array(out))


def _numeric(x: Any) -> bool:
    if _np is not None and isinstance(x, _np.ndarray):
        return x.dtype.kind in "fib"
    return isinstance(x, (int, float))


def _as_float(x: Any) -> Any:
    if isinstance(x, _np.ndarray) and x.dtype.kind != "f":
        return x.astype(float)
    if isinstance(x, bool):
        return float(x)
    return x

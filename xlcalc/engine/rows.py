"""A formula over columns as one plain Python function: the worksheet functions' path for ranges without numpy.

:func:`rows_function` compiles a formula's expression tree, for a given set of inputs that are columns, into
``run(env)``: ``env`` holds each input's validated value (a list for a column), and ``run`` returns the list of
results row by row (or one value when no column reaches the result). The parts without a column are computed
once, then every row in one comprehension - the same operations in the same order as the tree (and a single
cell), so the same floats. xlwings Lite may have no numpy; this is how its ranges stay fast. Like
:mod:`xlcalc.engine.compiled`, it writes Python source from expressions; unlike it, both branches of IF are computed
(as a formula body called with numbers does), so an error in either gives the single cell's error.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple, cast

from ..expr.excel import EXCEL_FUNCTIONS, PY_BINOPS
from ..expr.nodes import BinOp, Bool, Call, Func, Neg, Num, Text, Var
from ..inputs import spec
from ..registry import Formula

__all__ = ["NoRowForm", "rows_function"]


class NoRowForm(Exception):
    """The expression has a node with no row form: compute row by row instead."""


def rows_function(formula: Formula, columns: tuple[str, ...]) -> Callable[[dict[str, Any]], Any]:
    """``run(env)`` for ``formula`` with the inputs ``columns`` as lists (see the module's doc)."""
    return _RowCode(columns).compile(formula)


class _RowCode:
    """Python source of one formula over columns: ``def run(env)`` that reads the inputs from ``env``,
    computes every part that depends on no column once (as the column pass of the tree would), and
    then each row in one comprehension (or loop, when a nested formula's argument is computed per
    row into a temporary). Every operation is the one the expression tree evaluates with
    (``+ - * / **`` and comparisons as Python's operators, the operator module's own functions;
    ``=``, ``<>``, ``&`` and spreadsheet functions the engine's Python implementations), on the same
    values in the same order, so each row gets the float a single cell gets. Both branches of IF
    are computed, as in a single cell, and every argument of a nested formula.

    Validated inputs have fixed types (a number input gives a float, a count an int), so the type of
    each part is known where it is a float: an int met by a float in ``+ - * /`` is given as the float
    Python converts it to there (``6 * x`` as ``6.0 * x``: the same float, on the interpreter's faster
    float-float path) - a constant written so, a part without a column converted before the loop."""

    def __init__(self, columns: tuple[str, ...]):
        self.columns = columns
        self.scope: dict[str, Any] = {}  # names the generated code reads: functions, odd constants
        self.before: list[str] = []  # statements before the loop (no column)
        self.per_row: list[str] = []  # statements in the loop (temporaries of nested formulas' arguments)
        self.count = itertools.count()  # numbers the generated code's names

    def compile(self, formula: Formula) -> Callable[[dict[str, Any]], Any]:
        env = {p: _Part(f"c{k}", True, _KIND_TYPES.get(spec(p).kind)) if p in self.columns
               else _Part(self._name("x", f"env[{p!r}]"), False, _KIND_TYPES.get(spec(p).kind))
               for k, p in enumerate(formula.params)}
        part = self.source(formula.expr, env)
        cols = [env[p].text for p in self.columns]
        lines = ["def run(env):"] + [f"    {c}_ = env[{p!r}]" for c, p in zip(cols, self.columns)]
        lines += [f"    {line}" for line in self.before]
        over = f"{cols[0]} in {cols[0]}_" if len(cols) == 1 else \
            f"{', '.join(cols)} in zip({', '.join(c + '_' for c in cols)})"
        if not part.column:  # no column reaches the result: one value
            lines.append(f"    return {part.text}")
        elif self.per_row:
            lines += ["    out = []", "    append = out.append", f"    for {over}:"]
            lines += [f"        {line}" for line in self.per_row] + [f"        append({part.text})", "    return out"]
        else:
            lines.append(f"    return [{part.text} for {over}]")
        code = compile("\n".join(lines) + "\n", f"<xlcalc {formula.name} over columns>", "exec")
        exec(code, self.scope)
        return cast(Callable[[dict[str, Any]], Any], self.scope["run"])

    def _name(self, prefix: str, source: str, per_row: bool = False) -> str:
        name = f"{prefix}{next(self.count)}"
        (self.per_row if per_row else self.before).append(f"{name} = {source}")
        return name

    def _bind(self, value: Any) -> str:
        """A name in the generated code's scope for a function or a constant."""
        name = f"k{next(self.count)}"
        self.scope[name] = value
        return name

    def _part(self, text: str, column: bool, typ: type | None) -> _Part:
        """A part without a column is computed once, before the loop."""
        return _Part(text, True, typ) if column else _Part(self._name("s", text), False, typ)

    def _as_float(self, x: _Part) -> _Part:
        """An int that meets a float in ``+ - * /``, as the float Python converts it to there (the same
        conversion as ``float()``): a constant written as that float, a part without a column converted
        once before the loop."""
        if x.type is not int or x.column:
            return x
        if x.value is not None and abs(x.value) < 2 ** 53:
            return _Part(f"({float(x.value)!r})", False, float, float(x.value))
        return _Part(self._name("s", f"float({x.text})"), False, float)

    def source(self, node: Any, env: dict[str, _Part]) -> _Part:
        if isinstance(node, Var):
            return env[node.name]
        if isinstance(node, (Num, Bool, Text)):
            v = node.value
            if type(v) in (bool, int, str) or (type(v) is float and math.isfinite(v)):
                return _Part(f"({v!r})", False, type(v), v)
            return _Part(self._bind(v), False, type(v))
        if isinstance(node, BinOp):
            a, b = self.source(node.left, env), self.source(node.right, env)
            op = _INFIX.get(node.op)
            typ: type | None = None
            if node.op in _FLOAT_OPS and {a.type, b.type} <= {float, int}:
                if float in (a.type, b.type):
                    typ = float
                    a, b = self._as_float(a), self._as_float(b)
                else:  # int with int: an int, or for "/" a float
                    typ = float if node.op == "/" else int
            text = f"({a.text} {op} {b.text})" if op else f"{self._bind(PY_BINOPS[node.op])}({a.text}, {b.text})"
            return self._part(text, a.column or b.column, typ)
        if isinstance(node, Neg):
            x = self.source(node.operand, env)
            return self._part(f"(-{x.text})", x.column, float if x.type is float else None)
        if isinstance(node, Func):
            parts = [self.source(a, env) for a in node.args]  # both IF branches, as a single cell does
            args = [x.text for x in parts]
            typ = None
            if node.name == "IF":
                text = f"(({args[1]}), ({args[2]}))[not {args[0]}]"
                typ = parts[1].type if parts[1].type is parts[2].type else None
            elif node.name in _BUILTIN_FUNCTIONS:  # the same call as EXCEL_FUNCTIONS' lambda *a: min(a)
                text = f"{_BUILTIN_FUNCTIONS[node.name]}(({', '.join(args)},))"
            else:
                text = f"{self._bind(EXCEL_FUNCTIONS[node.name])}({', '.join(args)})"
            return self._part(text, any(x.column for x in parts), typ)
        if isinstance(node, Call):
            inner = {}
            for k, arg in node.args.items():  # every argument computed, as a single cell does
                x = self.source(arg, env)
                if x.column and not x.text.isidentifier():
                    x = _Part(self._name("t", x.text, per_row=True), True, x.type)
                inner[k] = x
            return self.source(node.formula.expr, inner)
        raise NoRowForm(f"no row form for {type(node).__name__}")


class _Part(NamedTuple):
    """A part of the generated code: its text, whether it varies by row, its type where known (float, int,
    bool, str) and, for a constant, its value."""

    text: str
    column: bool
    type: type | None
    value: Any = None


_KIND_TYPES: dict[str, type] = {"float": float, "int": int, "bool": bool, "choice": str}
_FLOAT_OPS = {"+", "-", "*", "/"}  # float with float or int: a float, the int converted exactly (below 2**53)
# The same operations as expr.PY_BINOPS (a + b, a / b, a ** b, a < b, ...), written as Python's operators.
_INFIX = {"+": "+", "-": "-", "*": "*", "/": "/", "^": "**", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_BUILTIN_FUNCTIONS = {"MIN": "min", "MAX": "max", "AND": "all", "OR": "any"}

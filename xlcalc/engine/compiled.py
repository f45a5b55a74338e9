"""Expressions as Python source: the text of a plain function that computes what the formulas compute.

:func:`python_steps` turns a list of named expressions (e.g. the stage memory model's steps) into the body of
one Python function: every registered formula called inside an expression is inlined (its body's expression
with the call's arguments put in), sub-expressions used more than once in a step are computed once, and every
spreadsheet function is the Python function the expressions evaluate with (``xlcalc.expr.EXCEL_FUNCTIONS``).
``scripts/make_memory_code.py`` writes the result to a module that is committed, so the code the planner runs
is plain text that grep finds, and a test keeps it equal to what the formulas give.

The numbers are the same as evaluating the expressions: the same operations in the same order on the same
values. One difference: ``IF`` evaluates only the branch it takes (as spreadsheets do), where a formula body
called with numbers computes both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..expr.nodes import BinOp, Bool, Call, Expr, Func, Neg, Num, Text, Var, wrap

__all__ = ["inline", "python_expr", "python_steps", "PY_FUNCTIONS"]

# spreadsheet function -> the name the generated module imports it under (xlcalc.expr.excel.EXCEL_FUNCTIONS[name])
PY_FUNCTIONS = {"MIN": "min", "MAX": "max", "SQRT": "_F['SQRT']", "CEILING": "_ceiling", "ROUNDUP": "_roundup",
                "INT": "_floor_int", "ROUND": "_round", "ABS": "abs", "LOG": "_F['LOG']", "FIXED": "_F['FIXED']"}
_INFIX = {"+", "-", "*", "/", "<", "<=", ">", ">="}  # the operators Python writes as spreadsheets do


def inline(e: Expr) -> Expr:
    """The expression with every registered-formula call replaced by the callee's expression, and every part
    whose operands are all constants computed (e.g. ``"rmsnorm" = "layernorm"`` is FALSE; ``IF`` with a constant
    condition is the branch it takes)."""
    if isinstance(e, Call):
        return inline(e.inline())
    if isinstance(e, BinOp):
        return _fold(BinOp(e.op, inline(e.left), inline(e.right)))
    if isinstance(e, Neg):
        return _fold(Neg(inline(e.operand)))
    if isinstance(e, Func):
        args = tuple(inline(a) for a in e.args)
        if e.name == "IF" and isinstance(args[0], _CONST):
            return args[1] if args[0].value else args[2]
        return _fold(Func(e.name, args))
    return e


_CONST = (Num, Text, Bool)


def _fold(e: Expr) -> Expr:
    """A node whose children are constants, as the constant it computes (the same operation on the same values)."""
    if e.children() and all(isinstance(c, _CONST) for c in e.children()):
        try:
            return wrap(e.evaluate({}))
        except (ArithmeticError, ValueError, TypeError):  # left to fail where it is computed
            return e
    return e


def python_expr(e: Expr, name_of: Callable[[str], str], temps: dict[Any, str] | None = None,
                lowered: bool = False) -> str:
    """Python source of an expression without calls (see :func:`inline`), fully parenthesised; ``name_of`` gives
    a variable's Python name, ``temps`` names sub-expressions computed before (by :meth:`Expr.key`); ``lowered``:
    a variable compared with a text is read from its lower case, computed before (see :func:`python_steps`)."""
    if temps and (name := temps.get(e.key())) is not None:
        return name

    def r(x: Expr) -> str:
        return python_expr(x, name_of, temps, lowered)

    if isinstance(e, Var):
        return name_of(e.name)
    if isinstance(e, (Num, Text, Bool)):
        return repr(e.value)
    if isinstance(e, Neg):
        return f"(-{r(e.operand)})"
    if isinstance(e, BinOp):
        a, b = r(e.left), r(e.right)
        if e.op in _INFIX:
            return f"({a} {e.op} {b})"
        if e.op == "^":
            return f"({a} ** {b})"
        text_cmp = _text_comparison(e) if lowered else None
        if text_cmp is not None:  # an input against a text: its lower case, computed once (see python_steps)
            var, text = text_cmp
            return f"({_lower_name(name_of(var))} {'==' if e.op == '=' else '!='} {text.lower()!r})"
        if isinstance(e.left, (Num, Bool)) or isinstance(e.right, (Num, Bool)):  # no text on one side: Python's ==
            return f"({a} {'==' if e.op == '=' else '!='} {b})"
        if e.op == "=":
            return f"_eq({a}, {b})"
        if e.op == "<>":
            return f"(not _eq({a}, {b}))"
        if e.op == "&":
            return f"(_text({a}) + _text({b}))"
        raise ValueError(f"operator {e.op} has no Python form")
    if isinstance(e, Func):
        args = [r(a) for a in e.args]
        if e.name == "IF":
            return f"({args[1]} if {args[0]} else {args[2]})"
        if e.name in ("AND", "OR"):
            return "(" + f" {e.name.lower()} ".join(f"bool({a})" for a in args) + ")"
        if e.name == "NOT":
            return f"(not {args[0]})"
        if e.name in ("MIN", "MAX"):
            return f"{PY_FUNCTIONS[e.name]}(({', '.join(args)},))"
        return f"{PY_FUNCTIONS[e.name]}({', '.join(args)})"
    raise TypeError(f"{type(e).__name__} has no Python form (inline the calls first)")


def _text_comparison(e: BinOp) -> tuple[str, str] | None:
    """(variable, text) when ``e`` compares a variable with a text constant by ``=`` or ``<>``."""
    if e.op not in ("=", "<>"):
        return None
    for x, y in ((e.left, e.right), (e.right, e.left)):
        if isinstance(x, Var) and isinstance(y, Text):
            return x.name, y.value
    return None


def _lower_name(py_name: str) -> str:
    return f"_lower_{py_name}"


def _subtrees(e: Expr) -> Iterable[Expr]:
    yield e
    for c in e.children():
        yield from _subtrees(c)


def python_steps(steps: Iterable[tuple[str, Expr]], name_of: Callable[[str], str], indent: str = "    ") -> list[str]:
    """Lines of Python assigning each (name, expression) in order to ``name_of(name)``; calls inlined, and the
    sub-expressions used more than once (in one step or across steps) computed once, into temporaries before the
    first step that needs them. A sub-expression inside a branch of ``IF`` is not hoisted: branches stay lazy."""
    exprs = [(name_of(name), inline(expr)) for name, expr in steps]
    counts: Counter[Any] = Counter()
    for _, e in exprs:
        counts.update(s.key() for s in _subtrees(e) if not isinstance(s, (Var, Num, Text, Bool)))
    temps: dict[Any, str] = {}
    lines: list[str] = []
    # a variable compared with texts: compared as spreadsheets do (text case-insensitively, xlcalc.expr.excel._py_eq),
    # by its lower case computed once
    compared = sorted({cmp[0] for _, e in exprs for s in _subtrees(e) if isinstance(s, BinOp)
                       and (cmp := _text_comparison(s)) is not None})
    for var in compared:
        v = name_of(var)
        lines.append(f"{indent}{_lower_name(v)} = {v}.lower() if isinstance({v}, str) else {v}")

    def visit(s: Expr, top: Expr) -> None:  # children first, so that a temporary only uses earlier ones
        k = s.key()
        if k in temps:
            return
        lazy_if = isinstance(s, Func) and s.name == "IF"
        for c in s.children()[:1] if lazy_if else s.children():
            visit(c, top)
        if counts[k] > 1 and s is not top and not lazy_if and not isinstance(s, (Var, Num, Text, Bool)):
            name = f"_t{len(temps) + 1}"
            lines.append(f"{indent}{name} = {python_expr(s, name_of, temps, lowered=True)}")
            temps[k] = name

    for target, e in exprs:
        visit(e, e)
        lines.append(f"{indent}{target} = {python_expr(e, name_of, temps, lowered=True)}")
    return lines

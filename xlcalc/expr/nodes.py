"""The expression tree: its node types, how each evaluates, renders as Excel text and substitutes inputs.

A formula body called with :class:`Var` symbols builds these nodes (the operators of :class:`Expr`, the
functions of :mod:`xlcalc.expr.functions`). ``substitute`` folds what its substitution leaves constant (see
*constant folding* below); :func:`unfolded` turns that off.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from .excel import EXCEL_FUNCTIONS, PY_BINOPS, as_text, render_number

__all__ = [
    "Names", "Expr", "Num", "Text", "Bool", "Var", "BinOp", "Neg", "Func", "Call", "IfError",
    "identity", "wrap", "is_expr", "unfolded",
]


# Operator precedence for rendering (higher binds tighter).
_PREC = {"=": 1, "<>": 1, "<": 1, "<=": 1, ">": 1, ">=": 1, "&": 1.5, "+": 2, "-": 2, "*": 3, "/": 3, "^": 4}
_ATOM = 9


Names = Mapping[str, str] | Callable[[str], str]


class Expr:
    """Base class of expression nodes.

    A node never changes once built. :class:`BinOp` and :class:`Func` keep the text they render for
    :func:`identity` without ``subs`` (a workbook cell's case): that text depends on the node alone, so a subtree
    that many cells share (an input's guard, a check) is rendered once.
    """

    __slots__ = ()
    prec = _ATOM

    # -- arithmetic -------------------------------------------------------
    def __add__(self, other: Any) -> "Expr": return BinOp("+", self, wrap(other))
    def __radd__(self, other: Any) -> "Expr": return BinOp("+", wrap(other), self)
    def __sub__(self, other: Any) -> "Expr": return BinOp("-", self, wrap(other))
    def __rsub__(self, other: Any) -> "Expr": return BinOp("-", wrap(other), self)
    def __mul__(self, other: Any) -> "Expr": return BinOp("*", self, wrap(other))
    def __rmul__(self, other: Any) -> "Expr": return BinOp("*", wrap(other), self)
    def __truediv__(self, other: Any) -> "Expr": return BinOp("/", self, wrap(other))
    def __rtruediv__(self, other: Any) -> "Expr": return BinOp("/", wrap(other), self)
    def __pow__(self, other: Any) -> "Expr": return BinOp("^", self, wrap(other))
    def __rpow__(self, other: Any) -> "Expr": return BinOp("^", wrap(other), self)
    def __neg__(self) -> "Expr": return Neg(self)
    def __pos__(self) -> "Expr": return self
    def __lt__(self, other: Any) -> "Expr": return BinOp("<", self, wrap(other))
    def __le__(self, other: Any) -> "Expr": return BinOp("<=", self, wrap(other))
    def __gt__(self, other: Any) -> "Expr": return BinOp(">", self, wrap(other))
    def __ge__(self, other: Any) -> "Expr": return BinOp(">=", self, wrap(other))

    def __bool__(self) -> bool:
        raise TypeError("an xlcalc expression has no truth value; use if_(), and_(), or_() in formula bodies")

    # -- interface ----------------------------------------------------------
    def evaluate(self, env: Mapping[str, Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:  # pragma: no cover
        raise NotImplementedError

    def substitute(self, mapping: Mapping[str, "Expr"]) -> "Expr":  # pragma: no cover
        raise NotImplementedError

    def variables(self) -> set[str]:
        out: set[str] = set()
        self._collect(out)
        return out

    def _collect(self, out: set[str]) -> None:
        for child in self.children():
            child._collect(out)

    def children(self) -> tuple["Expr", ...]:
        return ()

    def functions(self) -> set[str]:
        """Every spreadsheet function name this expression renders to."""
        out: set[str] = set()
        stack: list[Expr] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, Func):
                out.add(node.name)
            if isinstance(node, Call):
                stack.append(node.inline())
            stack.extend(node.children())
        return out

    def to_excel(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        """Excel formula text, starting with ``=``."""
        return "=" + self.render(names, subs)

    def key(self) -> Any:
        """A hashable structural key (used to substitute shared sub-results by a cell name)."""
        raise NotImplementedError  # pragma: no cover


def _name_of(names: Names, var: str) -> str:
    if callable(names):
        return names(var)
    try:
        return names[var]
    except KeyError:
        raise KeyError(f"no cell or defined name given for input {var!r}") from None


# A number's formula text by (type, value): a workbook writes the same few constants thousands of times. The type is
# part of the key (True == 1 == 1.0 hash alike but render as TRUE, 1, 1); -0.0 == 0.0 render alike ("0").
_NUM_TEXT: dict[tuple[type, Any], str] = {}


class _Constant(Expr):
    """A literal: evaluates to its value, and no substitution changes it."""

    __slots__ = ("value",)
    value: Any

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return self.value

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self


class Num(_Constant):
    __slots__ = ()

    def __init__(self, value: float | int):
        self.value = value

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        key = (type(self.value), self.value)
        text = _NUM_TEXT.get(key)
        if text is None:
            text = render_number(self.value)
            text = _NUM_TEXT[key] = f"({text})" if text.startswith("-") else text
        return text

    def key(self) -> Any:
        return ("num", float(self.value))


class Text(_Constant):
    __slots__ = ()
    value: str

    def __init__(self, value: str):
        self.value = value

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        return '"' + self.value.replace('"', '""') + '"'

    def key(self) -> Any:
        return ("text", self.value)


class Bool(_Constant):
    __slots__ = ()

    def __init__(self, value: bool):
        self.value = bool(value)

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        return "TRUE" if self.value else "FALSE"

    def key(self) -> Any:
        return ("bool", self.value)


class Var(Expr):
    """A named input."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return env[self.name]

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        if names is identity:  # a cell reference or defined name already (the workbook's case)
            return self.name
        return _name_of(names, self.name)

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return mapping.get(self.name, self)

    def _collect(self, out: set[str]) -> None:
        out.add(self.name)

    def key(self) -> Any:
        return ("var", self.name)

    def __repr__(self) -> str:
        return f"Var({self.name!r})"


class _TextKept(Expr):
    """A node that keeps the text it renders for :func:`identity` without ``subs`` (see :class:`Expr`); a subclass
    writes ``_render`` and sets ``_text`` to None when it is built."""

    __slots__ = ("_text",)
    _text: str | None

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        if names is identity and not subs:
            if self._text is None:
                self._text = self._render(names, subs)
            return self._text
        return self._render(names, subs)

    def _render(self, names: Names, subs: Mapping[Any, str] | None) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


class BinOp(_TextKept):
    __slots__ = ("op", "left", "right", "_var_eq_text")

    def __init__(self, op: str, left: Expr, right: Expr):
        self.op, self.left, self.right = op, left, right
        self._text = None  # the text for identity without subs (see _TextKept)
        # ``<variable> = "<text>"`` (a check's guard, IF(Checks!C9="OK", ...), thousands in a workbook): (the variable,
        # the text, the text in lower case) for evaluate's shortcut; None for any other comparison or operator
        self._var_eq_text: tuple[str, str, str] | None = None
        if op == "=" and type(left) is Var and type(right) is Text:
            self._var_eq_text = (left.name, right.value, right.value.lower())

    @property
    def prec(self) -> float:  # type: ignore[override]
        return _PREC[self.op]

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        shortcut = self._var_eq_text
        if shortcut is not None:  # excel._py_eq(env[variable], text) without its calls: text is case-insensitive
            value = env[shortcut[0]]
            return value.lower() == shortcut[2] if isinstance(value, str) else value == shortcut[1]
        return PY_BINOPS[self.op](self.left.evaluate(env), self.right.evaluate(env))

    def _render(self, names: Names, subs: Mapping[Any, str] | None) -> str:
        p = _PREC[self.op]
        left = self.left.render(names, subs)
        right = self.right.render(names, subs)
        if subs:
            left_prec, right_prec = _child_prec(self.left, subs), _child_prec(self.right, subs)
        else:  # (what _child_prec gives without subs)
            left_prec, right_prec = self.left.prec, self.right.prec
        if left_prec < p:
            left = f"({left})"
        if right_prec <= p:
            right = f"({right})"
        return f"{left}{self.op}{right}"

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return _fold_binop(self.op, self.left.substitute(mapping), self.right.substitute(mapping))

    def key(self) -> Any:
        return ("bin", self.op, self.left.key(), self.right.key())


class Neg(Expr):
    __slots__ = ("operand",)

    def __init__(self, operand: Expr):
        self.operand = operand

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return -self.operand.evaluate(env)

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        # Excel's unary minus binds tighter than ^, so always parenthesise.
        return f"(-({self.operand.render(names, subs)}))"

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        operand = self.operand.substitute(mapping)
        if _FOLD[-1] and isinstance(operand, Num) and _exact(operand.value):
            return Num(-operand.value)
        return Neg(operand)

    def key(self) -> Any:
        return ("neg", self.operand.key())


class Func(_TextKept):
    """A spreadsheet function call, e.g. ``MAX(a, b)`` or ``IF(c, a, b)``."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: tuple[Expr, ...]):
        if name != "IF" and name not in EXCEL_FUNCTIONS:
            raise ValueError(f"function {name} is not in xlcalc's portable function set")
        self.name, self.args = name, args
        self._text = None  # the text for identity without subs (see _TextKept)

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        if self.name == "IF":  # lazy: only the branch taken is evaluated
            cond, a, b = self.args
            return a.evaluate(env) if cond.evaluate(env) else b.evaluate(env)
        return EXCEL_FUNCTIONS[self.name](*[arg.evaluate(env) for arg in self.args])

    def _render(self, names: Names, subs: Mapping[Any, str] | None) -> str:
        return f"{self.name}(" + ",".join([a.render(names, subs) for a in self.args]) + ")"

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return _fold_func(self.name, tuple(a.substitute(mapping) for a in self.args))

    def key(self) -> Any:
        return ("fn", self.name, tuple(a.key() for a in self.args))


# -- constant folding ----------------------------------------------------------
# ``substitute`` folds what its substitution leaves constant (a formula inlined with literal arguments, e.g.
# ``IF("last"="first", a, b)`` or ``AND(0>0, ...)``), so that a cell's text holds only what can vary. A fold is
# made only where every spreadsheet gives the folded value exactly: arithmetic on whole numbers with a whole
# result (no rounding in any engine), comparisons of two numbers, two booleans or (= and <>, case-insensitive)
# two texts, ``&`` of texts and whole numbers, MIN/MAX/INT/ROUND/ABS/NOT of such literals, IF with a constant
# condition (IF evaluates only the branch taken), AND/OR with a constant arm. The one difference: AND with a
# FALSE arm (OR with a TRUE arm) is that constant even where another arm would be an error value.

def _exact(value: Any) -> bool:
    """A whole number every engine holds exactly (not a boolean)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and float(value).is_integer() and abs(value) < 2.0 ** 53)


def _number(value: float) -> Num:
    return Num(int(value) if abs(value) < 1e15 else value)


_ARITH = {"+", "-", "*", "/", "^"}
_COMPARE = {"=", "<>", "<", "<=", ">", ">="}


_FOLD = [True]  # off inside ``unfolded()``


@contextmanager
def unfolded() -> Iterator[None]:
    """Inside this block ``substitute`` folds nothing: the tree as written, every name it mentions kept (a name
    that only a constant condition's branch not taken mentions is still one the formula is written over)."""
    _FOLD.append(False)
    try:
        yield
    finally:
        _FOLD.pop()


def _fold_binop(op: str, left: Expr, right: Expr) -> Expr:
    if not _FOLD[-1]:
        return BinOp(op, left, right)
    if op in _ARITH and isinstance(left, Num) and isinstance(right, Num) and _exact(left.value) and _exact(right.value):
        a, b = float(left.value), float(right.value)
        if op == "/" and b == 0 or op == "^" and (b < 0 or b > 64 or a == 0 and b == 0):
            return BinOp(op, left, right)
        value = PY_BINOPS[op](a, b)
        if _exact(value):
            return _number(value)
    elif op in _COMPARE and type(left) is type(right) and isinstance(left, (Num, Bool, Text)):
        if isinstance(left, Text) and (op not in ("=", "<>") or not (left.value + cast(Text, right).value).isascii()):
            return BinOp(op, left, right)  # text order is each engine's collation, its case folding beyond ASCII
        if isinstance(left, Num) and not (_exact(left.value) and _exact(cast(Num, right).value)):
            return BinOp(op, left, right)
        return Bool(PY_BINOPS[op](left.value, cast(Num, right).value))
    elif op == "&":
        a_text, b_text = _literal_text(left), _literal_text(right)
        if a_text is not None and b_text is not None:
            return Text(a_text + b_text)
        # (x & "a") & "b" -> x & "ab": & is associative
        if b_text is not None and isinstance(left, BinOp) and left.op == "&":
            inner = _literal_text(left.right)
            if inner is not None:
                return BinOp("&", left.left, Text(inner + b_text))
    return BinOp(op, left, right)


def _literal_text(node: Expr) -> str | None:
    """The text ``&`` makes of a literal (a text, or a whole number written the same by every engine)."""
    if isinstance(node, Text):
        return node.value
    if isinstance(node, Num) and _exact(node.value) and abs(node.value) < 1e15:
        return as_text(node.value)
    return None


_FOLDED_FUNCS = {"MIN", "MAX", "INT", "ROUND", "ABS"}


def _fold_func(name: str, args: tuple[Expr, ...]) -> Expr:
    if not _FOLD[-1]:
        return Func(name, args)
    if name == "IF":
        if isinstance(args[0], Bool) or isinstance(args[0], Num) and _exact(args[0].value):  # a constant condition:
            return args[1] if args[0].value else args[2]  # keep the branch taken
    elif name in ("AND", "OR"):
        decisive = name == "OR"  # OR(..., TRUE, ...) is TRUE; AND(..., FALSE, ...) is FALSE
        if any(isinstance(a, Bool) and a.value is decisive for a in args):
            return Bool(decisive)
        rest = tuple(a for a in args if not isinstance(a, Bool))
        return Func(name, rest) if rest else Bool(not decisive)
    elif name == "NOT" and isinstance(args[0], Bool):
        return Bool(not args[0].value)
    elif name in _FOLDED_FUNCS and all(isinstance(a, Num) and _exact(a.value) for a in args):
        values = [float(cast(Num, a).value) for a in args]
        if name in ("MIN", "MAX", "ABS"):
            return _number(EXCEL_FUNCTIONS[name](*values))
        if name == "INT" or len(values) == 1 or values[1] >= 0:  # INT, ROUND(x, d >= 0) of a whole number: itself
            return _number(values[0])
    return Func(name, args)


class Call(Expr):
    """A call of one registered formula from inside another.

    Renders as the callee's expression with its inputs replaced by the call's
    arguments — or, when the renderer was told that this exact call already
    sits in a named cell (``subs``), as that name.
    """

    __slots__ = ("formula", "args", "_key", "_inline")

    def __init__(self, formula: Any, args: dict[str, Expr]):
        self.formula, self.args = formula, args
        self._key: Any = None
        self._inline: Expr | None = None

    def children(self) -> tuple[Expr, ...]:
        return tuple(self.args.values())

    def inline(self) -> Expr:
        # a node never changes once built: the inlined body and the key are computed once
        if self._inline is None:
            self._inline = cast(Expr, self.formula.expr.substitute(self.args))
        return self._inline

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return self.formula.raw(**{k: v.evaluate(env) for k, v in self.args.items()})

    @property
    def prec(self) -> int:  # type: ignore[override]
        return self.inline().prec

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        if subs:
            name = subs.get(self.key())
            if name is not None:
                return name
        return self.inline().render(names, subs)

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return Call(self.formula, {k: v.substitute(mapping) for k, v in self.args.items()})

    def key(self) -> Any:
        if self._key is None:
            self._key = ("call", self.formula.name, tuple(sorted((k, v.key()) for k, v in self.args.items())))
        return self._key


def _child_prec(child: Expr, subs: Mapping[Any, str] | None) -> int:
    return _ATOM if isinstance(child, Call) and subs and child.key() in subs else child.prec


def identity(var: str) -> str:
    """Names for rendering where a variable already *is* its Excel text (a cell reference or a defined name)."""
    return var


def wrap(value: Any) -> Expr:
    """Turn a Python constant into an expression node."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Bool(value)
    if isinstance(value, (int, float)):
        return Num(value)
    if isinstance(value, str):
        return Text(value)
    raise TypeError(f"cannot use {value!r} ({type(value).__name__}) in an xlcalc formula")


def is_expr(*values: Any) -> bool:
    for v in values:  # (a loop, not any() over a generator: called for every node a formula body builds)
        if isinstance(v, Expr):
            return True
    return False


class IfError(Expr):
    """``IFERROR(value, fallback)``: a readable message in place of an error value."""

    __slots__ = ("value", "fallback")

    def __init__(self, value: Any, fallback: Any):
        self.value, self.fallback = wrap(value), wrap(fallback)

    def children(self) -> tuple[Expr, ...]:
        return (self.value, self.fallback)

    def render(self, names: Any, subs: Any = None) -> str:
        return f"IFERROR({self.value.render(names, subs)},{self.fallback.render(names, subs)})"

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        try:
            v = self.value.evaluate(env)
        except (ArithmeticError, TypeError, ValueError, LookupError):  # an error value in a spreadsheet
            return self.fallback.evaluate(env)
        if isinstance(v, float) and not math.isfinite(v):
            return self.fallback.evaluate(env)
        return v

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return IfError(self.value.substitute(mapping), self.fallback.substitute(mapping))

    def key(self) -> Any:
        return ("iferror", self.value.key(), self.fallback.key())

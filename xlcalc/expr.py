"""A tiny expression layer: one formula body computes numbers *and* renders Excel text.

A formula in xlcalc is an ordinary Python function written with ``+ - * / **``
and the helpers below (:func:`if_`, :func:`min_`, :func:`max_`, :func:`eq`, ...).
Called with numbers it returns a number. Called with :class:`Var` symbols it
returns an :class:`Expr` tree, which can

* be evaluated against a mapping of input values (``Expr.evaluate``), and
* be rendered as Excel formula text over cell references or defined names
  (``Expr.to_excel``), using only classic functions that Excel 2016+,
  LibreOffice, Google Sheets and Numbers all share.

The helpers dispatch on their arguments: with plain numbers they compute
directly (fast enough for the planner's inner loops); with any ``Expr``
argument they build a node.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

__all__ = [
    "Expr", "Num", "Text", "Bool", "Var", "BinOp", "Neg", "Func", "Call",
    "wrap", "is_expr", "if_", "min_", "max_", "sqrt", "ceiling", "roundup",
    "floor_int", "eq", "concat", "as_text", "round_", "and_", "or_", "not_", "log2", "abs_", "render_number",
    "EXCEL_FUNCTIONS", "PY_BINOPS", "Template", "Bound", "identity", "IfError", "unfolded",
]


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
    mantissa, exponent = f"{v:.16e}".split("e")
    # shortest mantissa that round-trips
    for digits in range(1, 18):
        candidate = f"{v:.{digits - 1}e}"
        if float(candidate) == v:
            mantissa, exponent = candidate.split("e")
            break
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    exp = int(exponent)
    return f"{mantissa}E{'+' if exp >= 0 else '-'}{abs(exp)}"


# Operator precedence for rendering (higher binds tighter).
_PREC = {"=": 1, "<>": 1, "<": 1, "<=": 1, ">": 1, ">=": 1, "&": 1.5, "+": 2, "-": 2, "*": 3, "/": 3, "^": 4}
_ATOM = 9

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
    "=": lambda a, b: _py_eq(a, b),
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


def _py_eq(a: Any, b: Any) -> bool:
    # Excel compares text case-insensitively.
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    return cast(bool, a == b)


Names = Mapping[str, str] | Callable[[str], str]


class Expr:
    """Base class of expression nodes."""

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
        raise TypeError(
            "an xlcalc expression has no truth value; use if_(), and_(), or_() in formula bodies"
        )

    __hash__ = object.__hash__

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


class Num(Expr):
    __slots__ = ("value",)

    def __init__(self, value: float | int):
        self.value = value

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return self.value

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        text = render_number(self.value)
        return f"({text})" if text.startswith("-") else text

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self

    def key(self) -> Any:
        return ("num", float(self.value))


class Text(Expr):
    __slots__ = ("value",)

    def __init__(self, value: str):
        self.value = value

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return self.value

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        return '"' + self.value.replace('"', '""') + '"'

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self

    def key(self) -> Any:
        return ("text", self.value)


class Bool(Expr):
    __slots__ = ("value",)

    def __init__(self, value: bool):
        self.value = bool(value)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return self.value

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        return "TRUE" if self.value else "FALSE"

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self

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


class BinOp(Expr):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr):
        self.op, self.left, self.right = op, left, right

    @property
    def prec(self) -> float:  # type: ignore[override]
        return _PREC[self.op]

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return PY_BINOPS[self.op](self.left.evaluate(env), self.right.evaluate(env))

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        p = self.prec
        left = self.left.render(names, subs)
        right = self.right.render(names, subs)
        if _child_prec(self.left, subs) < p:
            left = f"({left})"
        if _child_prec(self.right, subs) <= p:
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


def _ceiling(x: float, significance: float) -> float:
    if significance == 0:
        return 0.0
    q = x / significance
    # Tolerate float noise such as 864*1.05/8 = 113.40000000000001.
    r = round(q)
    if abs(q - r) <= 1e-12 * max(1.0, abs(q)):
        q = r
    return math.ceil(q) * significance


def _roundup(x: float, digits: float) -> float:
    f = 10.0 ** int(digits)
    q = abs(x) * f
    r = round(q)
    if abs(q - r) <= 1e-12 * max(1.0, q):
        q = r
    return math.copysign(math.ceil(q) / f, x)


def _round(x: float, digits: float = 0) -> float:
    """Excel's ROUND: half away from zero."""
    f = 10.0 ** int(digits)
    return math.copysign(math.floor(abs(x) * f + 0.5) / f, x)


def _floor_int(x: float) -> float:
    r = round(x)
    if abs(x - r) <= 1e-12 * max(1.0, abs(x)):
        return float(r)
    return float(math.floor(x))


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


class Func(Expr):
    """A spreadsheet function call, e.g. ``MAX(a, b)`` or ``IF(c, a, b)``."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: tuple[Expr, ...]):
        if name != "IF" and name not in EXCEL_FUNCTIONS:
            raise ValueError(f"function {name} is not in xlcalc's portable function set")
        self.name, self.args = name, args

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        if self.name == "IF":  # lazy: only the branch taken is evaluated
            cond, a, b = self.args
            return a.evaluate(env) if cond.evaluate(env) else b.evaluate(env)
        return EXCEL_FUNCTIONS[self.name](*(arg.evaluate(env) for arg in self.args))

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
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

_EXACT = 2.0 ** 53


def _exact(value: Any) -> bool:
    """A whole number every engine holds exactly (not a boolean)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and float(value).is_integer() and abs(value) < _EXACT)


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
    if op in _ARITH and isinstance(left, Num) and isinstance(right, Num) \
            and _exact(left.value) and _exact(right.value):
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
        if isinstance(args[0], Bool):  # a constant condition: keep the branch taken
            return args[1] if args[0].value else args[2]
        if isinstance(args[0], Num) and _exact(args[0].value):
            return args[1] if args[0].value else args[2]
    elif name in ("AND", "OR"):
        decisive = name == "OR"  # OR(..., TRUE, ...) is TRUE; AND(..., FALSE, ...) is FALSE
        if any(isinstance(a, Bool) and a.value is decisive for a in args):
            return Bool(decisive)
        rest = tuple(a for a in args if not isinstance(a, Bool))
        if not rest:
            return Bool(not decisive)
        return Func(name, rest)
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
        values = {k: v.evaluate(env) for k, v in self.args.items()}
        return self.formula.raw(**values)

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
    if isinstance(child, Call) and subs and child.key() in subs:
        return _ATOM
    return child.prec


def identity(var: str) -> str:
    """Names for rendering where a variable already *is* its Excel text (a cell reference or a defined name)."""
    return var


# A template's placeholders: a variable renders as ``\x00slot\x00``, a shared sub-result as ``\x01slot\x01``
# (neither character can occur in a name, a cell reference or a formula's text).
_SLOT = re.compile("([\x00\x01])([^\x00\x01]*)\\1")


class Template:
    """One expression shared by many cells: written over placeholder variables, rendered once.

    A formula placed over other cells row after row (a Parallelism row, a Sensitivity grid point, a Scenarios
    column) has the same tree and text each time but for the cell references. The template holds that tree over
    the variables :meth:`slot` names and the ``subs`` rendering shared sub-results (their cell text given as
    :meth:`sub_slot`); :meth:`bind` fills the slots with references. A bound template renders and evaluates
    exactly as the tree with the references substituted, rendered with the subs built over those references,
    provided the references are distinct and never occur in the template as names of their own.
    """

    __slots__ = ("expr", "subs", "slots", "_text", "_vars", "_form", "_slot_names")

    def __init__(self, expr: Expr, subs: Mapping[Any, str] | None, slots: Any):
        self.expr, self.subs = expr, subs
        self.slots = frozenset(slots)
        self._text: str | None = None
        self._vars: set[str] | None = None
        self._form: tuple[str, tuple[str, ...]] | None = None
        self._slot_names: dict[str, str] | None = None

    @staticmethod
    def slot(name: str) -> str:
        """The placeholder variable standing for the reference bound to ``name``."""
        return "\x00" + name + "\x00"

    @staticmethod
    def sub_slot(name: str) -> str:
        """The text a shared sub-result renders as when it sits in the cell bound to ``name``."""
        return "\x01" + name + "\x01"

    def text(self, names: Names) -> str:
        """The rendered text with the placeholders left in (computed once for :func:`identity`)."""
        if names is identity:  # (a placeholder is its own text there, as every other variable)
            if self._text is None:
                self._text = self.expr.render(identity, self.subs)
            return self._text
        held = {self.slot(k) for k in self.slots}
        return self.expr.render(lambda v: v if v in held else _name_of(names, v), self.subs)

    def form(self) -> tuple[str, tuple[str, ...]]:
        """The text for :func:`identity` as a ``str.format`` pattern: each placeholder a positional field
        (``{0}``, ``{1}``, ...) for the reference of the slot named at that position of the tuple, braces
        doubled. ``pattern.format(*(refs[k] for k in slots))`` is the text with the references written in."""
        if self._form is None:
            parts = _SLOT.split(self.text(identity))  # text, marker, slot name, marker, slot name, ..., text
            order: dict[str, int] = {}
            out = []
            for i, part in enumerate(parts):
                if i % 3 == 0:
                    out.append(part.replace("{", "{{").replace("}", "}}"))
                elif i % 3 == 2:
                    out.append("{" + str(order.setdefault(part, len(order))) + "}")
            self._form = "".join(out), tuple(order)
        return self._form

    def variables(self) -> set[str]:
        if self._vars is None:
            self._vars = self.expr.variables()
        return self._vars

    def slot_names(self) -> dict[str, str]:
        """The slot each placeholder variable stands for (``{slot(k): k}``)."""
        if self._slot_names is None:
            self._slot_names = {self.slot(k): k for k in self.slots}
        return self._slot_names

    def bind(self, refs: Mapping[str, str]) -> "Bound":
        """The template with slot ``k`` standing for the reference ``refs[k]`` (every slot bound)."""
        return Bound(self, refs)


class Bound(Expr):
    """A :class:`Template` with its slots bound to references: renders the template's text with the references
    written in, evaluates the template with each slot read through its reference.

    It carries the template's ``subs``: the subs a caller passes to :meth:`render` do not reach inside it.
    """

    __slots__ = ("template", "refs", "_expanded")

    def __init__(self, template: Template, refs: Mapping[str, str]):
        if not refs.keys() >= template.slots:  # (every slot bound: checked without a set of the keys made)
            raise KeyError(f"no reference given for the template's slots {sorted(template.slots - set(refs))}")
        self.template, self.refs = template, refs
        self._expanded: Expr | None = None

    @property
    def prec(self) -> float:  # type: ignore[override]
        return self.template.expr.prec

    def expand(self) -> Expr:
        """The same expression as a plain tree over the references (what a template saves building per cell)."""
        if self._expanded is None:
            self._expanded = self.template.expr.substitute({Template.slot(k): Var(v) for k, v in self.refs.items()})
        return self._expanded

    def children(self) -> tuple[Expr, ...]:
        return (self.expand(),)

    def _collect(self, out: set[str]) -> None:
        for v in self.template.variables():
            if v.startswith("\x00") and v.endswith("\x00"):
                out.add(self.refs[v[1:-1]])
            else:
                out.add(v)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return self.template.expr.evaluate(_Rebound(env, self.refs, self.template.slot_names()))

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        refs = self.refs
        if names is identity:
            pattern, slots = self.template.form()
            return pattern.format(*[refs[k] for k in slots])
        text = self.template.text(names)
        return _SLOT.sub(lambda m: _name_of(names, refs[m[2]]) if m[1] == "\x00" else refs[m[2]], text)

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self.expand().substitute(mapping)

    def key(self) -> Any:
        return self.expand().key()


class _Rebound(Mapping[str, Any]):
    """An environment in which a template's placeholder variables read their bound references."""

    __slots__ = ("env", "refs", "slot_names")

    def __init__(self, env: Mapping[str, Any], refs: Mapping[str, str], slot_names: Mapping[str, str] | None = None):
        self.env, self.refs = env, refs
        self.slot_names = slot_names if slot_names is not None else {Template.slot(k): k for k in refs}

    def __getitem__(self, var: str) -> Any:
        slot = self.slot_names.get(var)
        if slot is not None:
            return self.env[self.refs[slot]]
        return self.env[var]

    def __getattr__(self, name: str) -> Any:  # what else the environment offers (a workbook's cells)
        return getattr(self.env, name)

    def __iter__(self) -> Any:
        return iter(self.env)

    def __len__(self) -> int:
        return len(self.env)


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
    return any(isinstance(v, Expr) for v in values)


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


def min_(*args: Any) -> Any:
    return _fn("MIN", *args)


def max_(*args: Any) -> Any:
    return _fn("MAX", *args)


def sqrt(x: Any) -> Any:
    return _fn("SQRT", x)


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


def log2(x: Any) -> Any:
    return _fn("LOG", x, 2)


def abs_(x: Any) -> Any:
    return _fn("ABS", x)


def and_(*args: Any) -> Any:
    return _fn("AND", *args)


def or_(*args: Any) -> Any:
    return _fn("OR", *args)


def not_(x: Any) -> Any:
    return _fn("NOT", x)


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


_ERRORS = (ArithmeticError, TypeError, ValueError, LookupError)


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
        except _ERRORS:
            return self.fallback.evaluate(env)
        if isinstance(v, float) and not math.isfinite(v):
            return self.fallback.evaluate(env)
        return v

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return IfError(self.value.substitute(mapping), self.fallback.substitute(mapping))

    def key(self) -> Any:
        return ("iferror", self.value.key(), self.fallback.key())

"""The workbook as data before it is written: cells, defined names and their values.

Every formula cell holds an :class:`~xlcalc.expr.Expr` whose variables are cell references (``Inputs!$B$5``) or defined
names (``Params_B``). The same tree is rendered as the cell's Excel text *and* evaluated here in Python, so the cached
value written next to each formula is the engine's own number.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from openpyxl.utils.cell import column_index_from_string, coordinate_from_string, get_column_letter

from ..expr.excel import as_text
from ..expr.nodes import BinOp, Expr, Func, IfError, Text, Var, identity, wrap
from ..expr.template import Template

__all__ = ["NA", "Book", "Cell", "Concat", "ErrorValue", "FirstFailing", "IfError", "IsNumber", "Lookup", "NotAvailable",
           "column_range", "coord", "excel_text", "identity", "placed", "ref_text"]

FORMULA_LEAD = ("=", "+", "-", "@")  # what makes a typed text a formula (a text starting so is written as text)
_REF = re.compile(r"^(?P<sheet>[A-Za-z][A-Za-z0-9_]*)!\$?(?P<col>[A-Z]{1,3})\$?(?P<row>\d+)$")


@dataclass
class Cell:
    value: Any                 # number, text, bool, None, or an Expr (a formula)
    kind: str = "label"        # label | header | title | group | input | text_input | formula | output | text | note
    number_format: str | None = None
    subs: Any = None           # shared sub-results rendered by their cell (see rendering.output_formula)


@functools.cache  # a layout writes the same few thousand references again and again
def ref_text(sheet: str, coord: str, absolute: bool = True) -> str:
    m = _PLAIN_COORD.match(coord)  # (a plain "B12" split without openpyxl's parse; anything else parsed by it)
    col, row = (m[1], m[2]) if m else coordinate_from_string(coord)
    return f"{sheet}!${col}${row}" if absolute else f"{sheet}!{col}{row}"


_PLAIN_COORD = re.compile(r"([A-Z]{1,3})([1-9][0-9]*)\Z")


def column_range(sheet: str, col: str, first: int, last: int) -> str:
    """Absolute reference text of rows ``first``..``last`` of a column (a dropdown's list): ``GPUs!$A$4:$A$20``."""
    return f"{sheet}!${col}${first}:${col}${last}"


def coord(col: int, row: int) -> str:
    return f"{get_column_letter(col)}{row}"


class Book:
    """Sheets of cells plus defined names; evaluates every formula cell lazily."""

    def __init__(self) -> None:
        self.sheets: dict[str, dict[str, Cell]] = {}
        self.names: dict[str, tuple[str, str]] = {}
        self._memo = _Env(self)  # (sheet, cell) -> value computed; name or reference -> value read (see _Env)
        self._where: dict[str, tuple[str, str]] = {}  # name or reference -> (sheet, cell): a cell never moves
        self.widths: dict[str, dict[str, float]] = {}
        self.freeze: dict[str, str] = {}
        self.validations: list[dict[str, Any]] = []   # see writer.add_validation
        self.rules: list[tuple[str, str, str]] = []   # (sheet, range, "good_if_true" | "bad_if_negative")
        self.charts: list[Any] = []                   # callables(workbook) -> None
        self.wrap: set[tuple[str, str]] = set()       # (sheet, cell) whose text wraps
        self.messages: set[tuple[str, str]] = set()   # (sheet, cell) of a formula that can show a message: wraps,
        #                                               left and top, the row's cells before it at the top
        self.print_areas: dict[str, str] = {}         # sheet -> print area ("A1:D20"); default: used range
        self.merges: list[tuple[str, str]] = []       # (sheet, "C2:D2")
        self.heights: dict[tuple[str, int], float] = {}  # (sheet, row) -> points, for rows of wrapped formulas
        self.hidden_columns: list[tuple[str, str, str]] = []  # (sheet, first, last): a group of working columns

    # -- building -------------------------------------------------------------------
    def put(self, sheet: str, at: str, value: Any, kind: str = "label", number_format: str | None = None,
            subs: Any = None, name: str | None = None) -> str:
        """Place a value or formula (under the defined name ``name``, if given); return the cell's absolute reference
        text."""
        self.sheets.setdefault(sheet, {})[at] = Cell(value, kind, number_format, subs)
        if name is not None:
            self.name(name, sheet, at)
        return ref_text(sheet, at)

    def row(self, sheet: str, row: int, values: Iterable[Any], kind: str = "label", col: str = "A") -> None:
        """Place ``values`` in row ``row``, from column ``col`` rightwards, each of ``kind``."""
        for j, value in enumerate(values, start=column_index_from_string(col)):
            self.put(sheet, coord(j, row), value, kind)

    def note(self, sheet: str, at: str, text: str) -> str:
        """A note that wraps in its cell."""
        self.wrap.add((sheet, at))
        return self.put(sheet, at, text, "note")

    def titled(self, sheet: str, title: str, note: str) -> None:
        """A sheet's title (A1) and the note under it (A2)."""
        self.put(sheet, "A1", title, "title")
        self.put(sheet, "A2", note, "note")

    def name(self, name: str, sheet: str, at: str) -> None:
        if name in self.names:
            raise ValueError(f"defined name {name} placed twice")
        self.names[name] = (sheet, at)

    def cell(self, sheet: str, at: str) -> Cell:
        return self.sheets[sheet][at]

    def formula_cells(self) -> Iterator[tuple[str, str, Cell]]:
        for title, cells in self.sheets.items():
            for at, c in cells.items():
                if isinstance(c.value, Expr):
                    yield title, at, c

    # -- evaluation --------------------------------------------------------------------
    def value(self, sheet: str, at: str) -> Any:
        key = (sheet, at)
        if key in self._memo:
            return self._memo[key]
        c = self.sheets.get(sheet, {}).get(at)
        if c is None:
            result: Any = None
        elif isinstance(c.value, Expr):
            self._memo[key] = _CYCLE
            result = c.value.evaluate(self._memo)
        else:
            result = c.value
        if result is _CYCLE:
            raise ValueError(f"circular reference at {sheet}!{at}")
        self._memo[key] = result
        return result

    def where(self, var: str) -> tuple[str, str]:
        """The (sheet, cell) of a defined name or reference text, found once (a cell never moves)."""
        if (found := self._where.get(var) or self.names.get(var)) is None:
            if not (m := _REF.match(var)):
                raise KeyError(f"workbook formula refers to {var!r}, which is neither a defined name nor a cell")
            found = m["sheet"], f"{m['col']}{m['row']}"
        return self._where.setdefault(var, found)

    def value_of(self, var: str) -> Any:
        return self.value(*self.where(var))

    def cached_values(self) -> dict[tuple[str, str], Any]:
        """The engine's value of every formula cell, by (sheet, coordinate)."""
        self._memo.clear()
        return {(s, at): self.value(s, at) for s, at, _ in self.formula_cells()}


_CYCLE = object()  # the memo's value of a cell being computed


class _Env(dict[Any, Any]):
    """A book's memo, which is also the environment its formulas are evaluated in.

    Keyed by ``(sheet, cell)``: the value computed for that cell (``_CYCLE`` while it is being computed). Keyed by a
    defined name or reference text (what a formula's variables are): the value read through it, a blank cell as 0.
    A variable read again is a dictionary look-up; ``__missing__`` finds its cell and computes it through
    :meth:`Book.value` (a cell being computed: a cycle). ``outer_guards``: for each template a bound cell evaluated
    (xlcalc.expr.template.Bound.evaluate), the outcome of the guards around its formula that read none of its slots.
    Clearing the memo forgets all three.
    """

    __slots__ = ("book", "outer_guards")

    def __init__(self, book: Book):
        super().__init__()
        self.book = book
        self.outer_guards: dict[Any, Any] = {}  # template -> its outer guards' outcome (expr.template.Bound.evaluate)

    def clear(self) -> None:
        super().clear()
        self.outer_guards.clear()

    def __missing__(self, var: Any) -> Any:
        if not isinstance(var, str):  # a (sheet, cell) not computed yet
            raise KeyError(var)
        book = self.book  # Book.value_of, with a value already computed read straight from the memo
        where = book.where(var)
        v = self[where] if where in self else book.value(*where)
        if v is _CYCLE:
            raise ValueError(f"circular reference through {var}")
        v = self[var] = 0 if v is None else v  # a blank cell reads as 0, as in a spreadsheet
        return v


class Lookup(Expr):
    """``INDEX(value column, MATCH(key, key column, 0))`` over a catalog sheet.

    Workbook plumbing (a table look-up, not a model formula): renders the classic INDEX/MATCH pair and evaluates the
    same look-up over the book's cells. With ``what`` and ``type_in`` the look-up never shows an error value: an empty
    catalog cell reads "<id>: no published <what> on the <sheet> sheet - type it in <type_in>", and an id the sheet does
    not hold reads "<id>: not on the <sheet> sheet".
    """

    __slots__ = ("key_expr", "sheet", "key_col", "value_col", "first_row", "last_row", "what", "type_in")

    def __init__(self, key_expr: Expr, sheet: str, key_col: str, value_col: str, first_row: int, last_row: int,
                 what: str | None = None, type_in: str | None = None):
        self.key_expr, self.sheet, self.key_col, self.value_col = key_expr, sheet, key_col, value_col
        self.first_row, self.last_row, self.what, self.type_in = first_row, last_row, what, type_in

    def children(self) -> tuple[Expr, ...]:
        return (self.key_expr,)

    def _range(self, col: str) -> str:
        return f"{self.sheet}!${col}${self.first_row}:${col}${self.last_row}"

    def unknown_text(self) -> str:
        return f": not on the {self.sheet} sheet \u2014 pick an id from the list"

    def render(self, names: Any, subs: Any = None) -> str:
        key = self.key_expr.render(names, subs)
        index = f"INDEX({self._range(self.value_col)},MATCH({key},{self._range(self.key_col)},0))"
        if not self.what:
            return index
        missing = Text(missing_text(self.what, self.sheet, self.type_in)).render(names)
        unknown = Text(self.unknown_text()).render(names)
        return f'IFERROR(IF({index}="",{key}&{missing},{index}),{key}&{unknown})'

    def row_of(self, env: Mapping[str, Any], key: Any) -> int | None:
        """The catalog row whose key cell is ``key`` (MATCH's exact match: case ignored), None where none is."""
        for row in range(self.first_row, self.last_row + 1):
            cand = env[f"{self.sheet}!{self.key_col}{row}"]
            if isinstance(cand, str) and isinstance(key, str) and cand.lower() == key.lower():
                return row
        return None

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        key = self.key_expr.evaluate(env)
        row = self.row_of(env, key)
        if row is not None:
            value = env[f"{self.sheet}!{self.value_col}{row}"]
            if self.what and value in (None, "", 0) and self.book_blank(env, row):
                return f"{key}{missing_text(self.what, self.sheet, self.type_in)}"
            return value
        if self.what:
            return f"{excel_text(key)}{self.unknown_text()}"
        raise LookupError(f"{key!r} is not in {self._range(self.key_col)}")

    def book_blank(self, env: Mapping[str, Any], row: int) -> bool:
        """Whether the catalog cell is empty (a blank reads as 0 through the environment)."""
        if (book := getattr(env, "book", None)) is None:
            return True
        cell = book.sheets.get(self.sheet, {}).get(f"{self.value_col}{row}")
        return cell is None or cell.value in (None, "")

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return Lookup(self.key_expr.substitute(mapping), self.sheet, self.key_col, self.value_col,
                      self.first_row, self.last_row, self.what, self.type_in)

    def key(self) -> Any:
        return ("lookup", self.sheet, self.key_col, self.value_col, self.key_expr.key(), self.what)


def missing_text(what: Any, sheet: str, type_in: Any) -> str:
    """What follows the id in a preset look-up's message where its catalog row has no figure: ": no published <what>
    on the <sheet> sheet - type it in <type_in>"."""
    return f": no published {what} on the {sheet} sheet \u2014 type it in {type_in}"


class LookupOr(Lookup):
    """``IF(INDEX(...)="", blank, INDEX(...))``: a catalog look-up whose empty cell (a value no source gives) reads
    ``blank`` (the model's neutral default); an id the sheet does not hold is an error (``IFERROR`` around it says
    what to do)."""

    __slots__ = ("blank",)

    def __init__(self, key_expr: Expr, sheet: str, key_col: str, value_col: str, first_row: int, last_row: int,
                 blank: Any):
        super().__init__(key_expr, sheet, key_col, value_col, first_row, last_row)
        self.blank = wrap(blank)

    def children(self) -> tuple[Expr, ...]:
        return (self.key_expr, self.blank)

    def render(self, names: Any, subs: Any = None) -> str:
        index = super().render(names, subs)
        return f'IF({index}="",{self.blank.render(names, subs)},{index})'

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        key = self.key_expr.evaluate(env)
        row = self.row_of(env, key)
        if row is None:
            raise LookupError(f"{key!r} is not in {self._range(self.key_col)}")
        if self.book_blank(env, row):
            return self.blank.evaluate(env)
        return env[f"{self.sheet}!{self.value_col}{row}"]

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return LookupOr(self.key_expr.substitute(mapping), self.sheet, self.key_col, self.value_col,
                        self.first_row, self.last_row, self.blank.substitute(mapping))

    def key(self) -> Any:
        return ("lookup_or", self.sheet, self.key_col, self.value_col, self.key_expr.key(), self.blank.key())


def excel_text(value: Any) -> str:
    """A value as a spreadsheet shows it when joined with ``&`` (general number format; a blank as no text)."""
    return "" if value is None else as_text(value)


class Concat(Expr):
    """``a & b & ...``: text joined from cells and constants (titles built from the inputs)."""

    __slots__ = ("parts",)

    def __init__(self, *parts: Any):
        self.parts = tuple(wrap(p) for p in parts)

    def children(self) -> tuple[Expr, ...]:
        return self.parts

    def render(self, names: Any, subs: Any = None) -> str:
        return "&".join(p.render(names, subs) if p.prec > 2 else f"({p.render(names, subs)})" for p in self.parts)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return "".join(excel_text(p.evaluate(env)) for p in self.parts)

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return Concat(*(p.substitute(mapping) for p in self.parts))

    def key(self) -> Any:
        return ("concat", tuple(p.key() for p in self.parts))


_ERRORS = (ArithmeticError, TypeError, ValueError, LookupError)


class IsNumber(Expr):
    """``ISNUMBER(x)``: TRUE for a number, FALSE for text, a blank, TRUE/FALSE or an error."""

    __slots__ = ("arg",)

    def __init__(self, arg: Any):
        self.arg = wrap(arg)

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def render(self, names: Any, subs: Any = None) -> str:
        return f"ISNUMBER({self.arg.render(names, subs)})"

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        try:
            v = self.arg.evaluate(env)
        except _ERRORS:
            return False
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return IsNumber(self.arg.substitute(mapping))

    def key(self) -> Any:
        return ("isnumber", self.arg.key())


class FirstFailing(Expr):
    """``IF(r1="OK", IF(r2="OK", ..., "OK"), r2), r1)``: the value of the first cell of ``refs`` that is not the text
    ``ok`` (compared as ``=`` compares texts: case ignored), else ``ok`` -- a gathering cell of the Checks sheet.

    The nested IFs as one node: a workbook has hundreds of these cells, each up to 40 checks deep; its text is
    written in one pass and its value found by a loop. :meth:`chain` is the same formula as IF nodes (what it
    renders and evaluates as; its children, substitution and key are the chain's)."""

    __slots__ = ("refs", "ok")

    def __init__(self, refs: Any, ok: str):
        self.refs, self.ok = tuple(refs), ok

    def chain(self) -> Expr:
        expr: Expr = Text(self.ok)
        for r in reversed(self.refs):
            expr = Func("IF", (BinOp("=", Var(r), Text(self.ok)), expr, Var(r)))
        return expr

    def children(self) -> tuple[Expr, ...]:
        return (self.chain(),)

    def render(self, names: Any, subs: Any = None) -> str:
        ok = Text(self.ok).render(names)
        refs = [Var(r).render(names, subs) for r in self.refs]
        return "".join([f"IF({r}={ok}," for r in refs]) + ok + "".join([f",{r})" for r in reversed(refs)])

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        ok, lower = self.ok, self.ok.lower()
        for r in self.refs:
            value = env[r]
            if not (value.lower() == lower if isinstance(value, str) else value == ok):  # (excel._py_eq)
                return value
        return ok

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self.chain().substitute(mapping)

    def key(self) -> Any:
        return self.chain().key()


class ErrorValue(str):
    """A spreadsheet error value as the engine gives it (``#N/A``): cached as an error, read back as its text."""

    __slots__ = ()


NA = ErrorValue("#N/A")


class NotAvailable(Expr):
    """``NA()``: the value a chart draws no point for. Only chart-data cells hold it (a labelled block whose
    visible table shows the message): a chart plots a text cell as 0 and ``#N/A`` as a gap."""

    __slots__ = ()

    def children(self) -> tuple[Expr, ...]:
        return ()

    def render(self, names: Any, subs: Any = None) -> str:
        return "NA()"

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return NA

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self

    def key(self) -> Any:
        return ("na",)


# How formula text is made: from templates made once per shape (``templates``), or each cell's tree built anew
# inside :func:`reference_rendering` (the reference the templates must match; tests compare the two)
RENDERING = SimpleNamespace(templates=True)


@contextmanager
def reference_rendering() -> Iterator[None]:
    """Inside this block every formula builds its own tree (the reference the templates match)."""
    before, RENDERING.templates = RENDERING.templates, False
    try:
        yield
    finally:
        RENDERING.templates = before


_PLACED: dict[Any, Template] = {}


def placed(key: Any, make: Callable[[Callable[[str], Expr]], Expr], refs: Mapping[str, str]) -> Expr:
    """``make(var)``, a formula written over ``var(k)`` for the cell ``refs[k]`` of each of its keys ``k``, placed
    row after row over other cells (a Parallelism row's stage ends): made once per ``key`` (which names all else the
    formula depends on) as a :class:`~xlcalc.expr.Template` and bound to each call's ``refs`` -- the text and values
    of the tree ``make(lambda k: Var(refs[k]))``, which :func:`reference_rendering` builds instead."""
    if not RENDERING.templates:
        return make(lambda k: Var(refs[k]))
    template = _PLACED.get(key)
    if template is None:
        template = _PLACED[key] = Template(make(lambda k: Var(Template.slot(k))), None, refs)
    return template.bind(refs)

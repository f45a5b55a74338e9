"""The Checks sheet: every input cell against what its one declaration allows, rolled up to one master check.

Following the FAST / ICAEW convention (checks roll up), each input cell of the workbook has a check cell on the
Checks sheet: OK while the cell holds what its spec in :mod:`xlcalc.inputs` allows (type, bounds, choices; a
catalog id for the preset dropdowns), else a message naming the cell and the reason, in the words of
:class:`xlcalc.errors.InputError`::

    Inputs!B21: MFU = 40 is not allowed: MFU must be a number > 0 and <= 1

A looked-up input that holds its look-up's message (a figure the catalog lacks) shows that message unchanged. The
checks of the inputs a result depends on are gathered in one cell per set of inputs (the first failing one's
message, else OK); :func:`xlcalc.workbook.rendering.guarded` writes each result as ``IF(<that cell>="OK", <result>,
<that cell>)``, so a result shows the message of a failing input it depends on instead of a number -- pasted values,
which a cell's data validation does not stop, included. The Start sheet's input check shows the first failing input
(every input's checks gathered), then the layout check with the cell of the input it blames.

The rows of the input checks are fixed before the sheets are laid out (one per checked input, in a fixed order); the
formulas are written once every input has its cell (:func:`finish`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..expr import Var, and_, eq, floor_int, if_, or_
from ..inputs import spec
from ..layout import CONSTRAINTS, layout_blamed
from ..scenario import INPUT_BY_NAME, INPUTS, OUTPUT_BY_NAME
from .model import Book, Concat, IfError, IsNumber, Lookup, ref_text

SHEET = "Checks"
# The preset dropdowns (text cells whose value must be an id of a catalog sheet's list, or empty)
CHOICES = ("Model_Preset", "GPU_Type", "Recipe_Id", "Price_Tier")
# Looked-up inputs whose message (a figure the catalog lacks, no price at the tier) is a failing check; a missing
# purchase price is not: the owning results say what to type, the rest of the plan stands
LOOKED_UP_FAILING = ("Peak_TFLOPS", "GPU_Memory_GB", "GPUs_per_Node", "Params_B", "Seq_Len", "Hidden", "Layers",
                     "Heads", "Bytes_Weights", "Bytes_Grads", "Bytes_Optimizer", "USD_per_GPU_Hour")
LOOKED_UP_TEXT_OK = ("Capex_USD_per_GPU",)
CHECKED = CHOICES + tuple(c.name for c in INPUTS)  # the row order of the input checks
FIRST_ROW = 8           # the first input check
LAYOUT_ROW = 4          # the layout check with the cell it blames
MAX_NESTED = 40         # checks gathered in one cell (a spreadsheet nests at most 64 IFs)
OK = "OK"               # a check that passes


def check_ref(name: str) -> str:
    """The cell of input ``name``'s check on the Checks sheet."""
    return ref_text(SHEET, f"C{FIRST_ROW + CHECKED.index(name)}")


GROUP_FIRST_ROW = FIRST_ROW + len(CHECKED) + 3


@dataclass
class Registry:
    """The sets of inputs whose checks some cell needs gathered, each with its row on the Checks sheet."""

    groups: dict[frozenset[str], int] = field(default_factory=dict)
    memo: dict[Any, Any] = field(default_factory=dict)  # what a layout's cells share (rendering's guard templates)

    def ref(self, names: frozenset[str]) -> str:
        row = self.groups.get(names)
        if row is None:
            row = self.groups[names] = GROUP_FIRST_ROW + len(self.groups)
        return ref_text(SHEET, f"C{row}")


_ACTIVE: ContextVar[Registry | None] = ContextVar("checks", default=None)


@contextmanager
def collecting() -> Iterator[Registry]:
    """While a workbook is laid out: :func:`gathered` places the cells that gather the checks of sets of inputs."""
    reg = Registry()
    token = _ACTIVE.set(reg)
    try:
        yield reg
    finally:
        _ACTIVE.reset(token)


def layout_memo() -> dict[Any, Any] | None:
    """A dictionary that lives as long as the layout being made (None outside a layout): things made once per
    layout over the cells of its Checks sheet."""
    reg = _ACTIVE.get()
    return None if reg is None else reg.memo


def gathered(names: Any) -> str | None:
    """The cell holding the first failing check of the inputs ``names`` (OK when all pass); None outside a layout
    or for no checked input."""
    reg = _ACTIVE.get()
    group = frozenset(n for n in names if n in CHECKED)
    if reg is None or not group:
        return None
    return reg.ref(group)


def guard(expr: Any, names: Any) -> Any:
    """``IF(<checks of names>="OK", expr, <checks of names>)``: a failing input's message instead of ``expr``."""
    at = gathered(names)
    if at is None:
        return expr
    return if_(eq(Var(at), OK), expr, Var(at))


# --- the check of one input ----------------------------------------------------------------------------------

def _bounds(s: Any, x: Var) -> list[Any]:
    tests = [x > s.gt if s.gt is not None else None, x >= s.ge if s.ge is not None else None,
             x < s.lt if s.lt is not None else None, x <= s.le if s.le is not None else None]
    if s.kind == "int":
        tests.append(eq(floor_int(x), x))
    return [t for t in tests if t is not None]


def _all(tests: list[Any]) -> Any:
    return and_(*tests) if len(tests) > 1 else tests[0]


def _message(where: str, name: str, allowed: str) -> Concat:
    return Concat(f"{where}: {name} = ", Var(name), f" is not allowed: {name} must be {allowed}")


def input_check(book: Book, name: str, lists: dict[str, tuple[str, str, int, int]]) -> Any:
    """The check of one input cell: OK when its value is allowed, else "<cell>: <Name> = <value> is not allowed:
    <Name> must be <what its spec allows>" (a looked-up input's own message as it stands)."""
    sheet, at = book.names[name]
    where = f"{sheet}!{at}"
    x = Var(name)
    if name in CHOICES:
        sheet_of, col, first, last = lists[name]
        found = IfError(Lookup(x, sheet_of, col, col, first, last), "")
        allowed = f"an id from the list on the {sheet_of} sheet, or empty"
        return if_(eq(x, ""), OK, if_(eq(found, ""), _message(where, name, allowed), OK))
    s = spec(INPUT_BY_NAME[name].spec_name)
    bad = _message(where, name, s.allowed)
    if s.kind == "bool":  # TRUE/FALSE, or 1/0 as LibreOffice stores a boolean
        return if_(or_(eq(x, True), eq(x, False), eq(x, 1), eq(x, 0)), OK, bad)
    if s.kind == "choice":
        return if_(or_(*(eq(x, c) for c in s.choices)), OK, bad)
    tests = _bounds(s, x)
    inside = if_(_all(tests), OK, bad) if tests else OK
    if name in LOOKED_UP_FAILING:
        not_number: Any = if_(eq(x, ""), bad, x)  # the look-up's own message (an empty cell: not allowed)
    elif name in LOOKED_UP_TEXT_OK:
        not_number = if_(eq(x, ""), bad, OK)
    else:
        not_number = bad
    return if_(IsNumber(x), inside, not_number)


def _first_failing(book: Book, refs: list[str], reg: Registry) -> Any:
    """The first of ``refs`` (check cells) that is not OK, else OK: nested IFs, in cells of their own by chunks."""
    if len(refs) > MAX_NESTED:
        chunks = [refs[i:i + MAX_NESTED] for i in range(0, len(refs), MAX_NESTED)]
        refs = []
        for chunk in chunks:  # a chunk's own gathering cell (a set of its own: the inputs of those checks)
            names = frozenset(CHECKED[_row_of(r) - FIRST_ROW] for r in chunk)
            refs.append(reg.ref(names))
    expr: Any = OK
    for r in reversed(refs):
        expr = if_(eq(Var(r), OK), expr, Var(r))
    return expr


def _row_of(ref: str) -> int:
    return int(ref.rsplit("$", 1)[1])


def layout_where(book: Book) -> Any:
    """The cell of the input the layout check blames: the first violated constraint of
    xlcalc.layout over the same inputs as Layout_Check."""
    by_spec = {c.spec_name: c.name for c in INPUTS}
    sheet, at = book.names["Layout_Check"]
    where = {}
    for c in CONSTRAINTS:  # an input the workbook does not have (the global batch): the layout check's own cell
        name = by_spec.get(c.name, "Layout_Check")
        name = name if name in book.names else "Layout_Check"
        sheet, at = book.names[name]
        where[c.name] = f"{sheet}!{at} ({name})"
    args = OUTPUT_BY_NAME["Layout_Check"].args
    return layout_blamed(dict(args), where)


def finish(book: Book, reg: Registry, lists: dict[str, tuple[str, str, int, int]]) -> None:
    """Write the Checks sheet: the layout check, every input's check, and every set of checks some cell gathers."""
    s = SHEET
    book.put(s, "A1", "Checks \u2014 every input against what is allowed; they roll up to the input check on Start",
             "title")
    book.put(s, "A2", "A check passes with OK. A result that depends on an input whose check fails shows the "
             "check's message instead of a number; pasted values are checked too (a cell's list or range only stops "
             "typing).", "note")
    layout = OUTPUT_BY_NAME["Layout_Check"].name
    book.put(s, f"A{LAYOUT_ROW}", "Layout (every piece whole)")
    book.put(s, f"B{LAYOUT_ROW}", "the input it blames, then why")
    book.put(s, f"C{LAYOUT_ROW}", if_(eq(Var(layout), "OK"), OK,
                                      Concat(IfError(layout_where(book), "Layout_Check"), ": ", Var(layout))), "formula")
    book.rules.append((s, f"C{LAYOUT_ROW}", "bad_unless_ok"))
    for col, head in zip("ABC", ("input", "cell", "check (OK: allowed)")):
        book.put(s, f"{col}{FIRST_ROW - 1}", head, "header")
    for k, name in enumerate(CHECKED):
        row = FIRST_ROW + k
        sheet, at = book.names[name]
        book.put(s, f"A{row}", name)
        book.put(s, f"B{row}", f"{sheet}!{at}")
        book.put(s, f"C{row}", input_check(book, name, lists), "formula")
    book.rules.append((s, f"C{FIRST_ROW}:C{FIRST_ROW + len(CHECKED) - 1}", "bad_unless_ok"))
    book.put(s, f"A{GROUP_FIRST_ROW - 1}", "Checks of the inputs each result uses (the first failing one)", "group")
    done: set[frozenset[str]] = set()
    while len(done) < len(reg.groups):  # gathering a long set places cells for its chunks: more groups
        for names, row in list(reg.groups.items()):
            if names in done:
                continue
            done.add(names)
            members = [n for n in CHECKED if n in names]
            book.put(s, f"A{row}", f"{len(members)} inputs")
            book.put(s, f"B{row}", ", ".join(members))
            book.put(s, f"C{row}", _first_failing(book, [check_ref(n) for n in members], reg), "formula")
    last = GROUP_FIRST_ROW + len(reg.groups) - 1
    book.rules.append((s, f"C{GROUP_FIRST_ROW}:C{last}", "bad_unless_ok"))
    book.widths[s] = {"A": 24, "B": 40, "C": 100}
    book.freeze[s] = f"A{FIRST_ROW}"  # the column headings stay in sight (and head every printed page)
    # printed: the layout and the input checks (the gathering cells below them are working cells)
    book.print_areas[s] = f"A1:C{FIRST_ROW + len(CHECKED) - 1}"


def is_checked(name: str) -> bool:
    return name in CHECKED


def master(expr_ok: Any) -> Any:
    """Start's input check: the first failing input check, then the layout check (with the cell it blames), then
    ``expr_ok`` (the checks of results)."""
    every = gathered(CHECKED)
    layout = Var(ref_text(SHEET, f"C{LAYOUT_ROW}"))
    out = if_(eq(layout, OK), expr_ok, layout)
    if every is not None:
        out = if_(eq(Var(every), OK), out, Var(every))
    return out


__all__ = ["CHECKED", "SHEET", "collecting", "finish", "gathered", "guard", "master", "check_ref", "is_checked"]

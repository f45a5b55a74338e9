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

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..expr import BinOp, Expr, Func, Num, Text, Var, and_, eq, floor_int, if_, not_, or_, wrap
from ..frameworks import FRAMEWORKS, PRECISIONS, PROFILE_FIELDS
from ..inputs import spec
from ..layout import CONSTRAINTS, LAYOUT_STEPS, layout_blamed
from ..outputs import OUTPUT_BY_NAME
from ..scenario import INPUT_BY_FIELD, INPUT_BY_NAME, INPUTS
from .messages import VALUE_CHARS, longest_layout_message, message_cell
from .model import Book, Concat, FirstFailing, IfError, IsNumber, Lookup, placed, ref_text

SHEET = "Checks"
WHERE_CHARS = 40  # "<Sheet>!<cell> (<input name>): " before a layout message: "Parallelism!B6 (PP_Size): " is 26
# The preset dropdowns (text cells whose value must be an id of a catalog sheet's list, or empty)
CHOICES = ("Model_Preset", "GPU_Type", "Recipe_Id", "Framework", "Precision", "Price_Tier")
# what a choice's check names as allowed, where it is not "an id from the list on the <sheet> sheet, or empty"
CHOICE_ALLOWED = {"Framework": f"one of {', '.join(FRAMEWORKS)} (Frameworks sheet), or empty",
                  "Precision": f"one of {', '.join(PRECISIONS)} (Frameworks sheet), or empty"}
OFFERED = "a precision the Frameworks sheet gives for framework "  # then the framework in effect: its precisions
# the inputs the Frameworks sheet gives (their look-up's message: a framework and precision it does not list)
FRAMEWORK_INPUTS = tuple(INPUT_BY_FIELD[f].name for f in PROFILE_FIELDS[1:])
# Inputs a catalog look-up fills (a preset's figure, the price of a GPU at a tier): a cell may hold the look-up's
# message instead of a number
CATALOG_LOOKED_UP = ("Peak_TFLOPS", "GPU_Memory_GB", "GPUs_per_Node", "Params_B", "Seq_Len", "Hidden", "Layers",
                     "Heads", "Bytes_Weights", "Bytes_Grads", "Bytes_Optimizer", "USD_per_GPU_Hour")
# Looked-up inputs whose message (a figure the catalog lacks, no price at the tier) is a failing check; a missing
# purchase price is not: the owning results say what to type, the rest of the plan stands
LOOKED_UP_FAILING = (*CATALOG_LOOKED_UP, *FRAMEWORK_INPUTS)
LOOKED_UP_TEXT_OK = ("Capex_USD_per_GPU",)
# Inputs an empty cell leaves not given (the scenario's None), which fails nothing: no global batch (the scenario gave
# none and its model has no published one, plan's rule), whose StepTime sheet asks for one. A formula reads an empty
# cell as 0, so 0 means the same (and reads back as not given)
EMPTY_OK = ("Global_Batch_Tokens",)
CHECKED = CHOICES + tuple(c.name for c in INPUTS)  # the row order of the input checks
FIRST_ROW = 8           # the first input check
LAYOUT_ROW = 4          # the layout check with the cell it blames
MAX_NESTED = 40         # checks gathered in one cell (a spreadsheet nests at most 64 IFs)
OK = "OK"               # a check that passes
CHECK_WIDTH = 125  # the width of the columns of the checks' messages (C, G)
# the characters of a message that print in one line of them (129 seen in LibreOffice's PDF at a width of 100)
CHECK_LINE_CHARS = CHECK_WIDTH * 5 // 4
CELL_COLS = ("E", "F", "G")  # the other sheets' input cells: the cell, the input, its check
# a Parallelism row's layout check whole (not printed: column G prints it without the arithmetic in brackets, in one
# line; Start's input check shows the first failing row's whole)
LAYOUT_WHOLE_COL = "H"
LAYOUT_WHERE_COL = "I"  # (not printed either) the cell of the input a row's layout check blames, OK for none
SHORT_CHARS = 90  # the most characters of column G's one printed line


def check_ref(name: str) -> str:
    """The cell of input ``name``'s check on the Checks sheet."""
    return ref_text(SHEET, f"C{_CHECK_ROW[name]}")


_CHECK_ROW = {name: FIRST_ROW + k for k, name in enumerate(CHECKED)}  # input -> the row of its check
assert len(_CHECK_ROW) == len(CHECKED), "an input checked twice"


GROUP_FIRST_ROW = FIRST_ROW + len(CHECKED) + 3


@dataclass(frozen=True)
class CellCheck:
    """An input cell of another sheet than Inputs, Budget and FineTuning (a Scenarios column's, a Sensitivity axis',
    a Parallelism row's): what it holds is the input ``name`` (its declaration ``spec_name``, or a catalog list)."""

    ref: str                   # the cell's absolute reference text (its key)
    name: str                  # the input it stands for (a defined name of xlcalc.scenario, or a preset dropdown)
    looked_up: bool = False    # a look-up's cell: a message (no catalog figure) is the column's own, not a failure
    # a Parallelism row's layout check (``ref`` its Layout_Check cell, ``name`` "Layout_Check"): the row's own input
    # cells the layout reads (defined name, cell), then the cells that stand for other names there (its stage ends,
    # and its layout steps: xlcalc.layout.LAYOUT_STEPS)
    layout: tuple[tuple[str, str], ...] = ()
    over: tuple[tuple[str, str], ...] = ()
    message: str = ""  # a row's layout check: the cell with its whole message (``ref`` shows it short), if not ``ref``


LAYOUT_KEY = "layout of "  # a row's layout check is kept under this prefix and its Layout_Check cell: never a
# cell a guard checks (a row's results already show its layout's message), only the master check


EVERY = frozenset({"*every*"})  # the gathering of every input check (the master check): resolved when the sheet is
# written; LAYOUTS: of every Parallelism row's layout check (after the Inputs sheet's layout in the master check)
LAYOUTS = frozenset({"*layouts*"})


@dataclass
class Registry:
    """The sets of inputs whose checks some cell needs gathered, each with its row on the Checks sheet; the input
    cells of the other sheets, each with its check's row (columns E:G)."""

    groups: dict[frozenset[str], int] = field(default_factory=dict)
    cells: dict[str, tuple[int, CellCheck]] = field(default_factory=dict)
    memo: dict[Any, Any] = field(default_factory=dict)  # what a layout's cells share (rendering's guard templates)
    frameworks: Any = None  # the Frameworks sheet (catalogs.FrameworkTable), once finish() writes the checks

    def ref(self, names: frozenset[str]) -> str:
        return ref_text(SHEET, f"C{self.groups.setdefault(names, GROUP_FIRST_ROW + len(self.groups))}")

    def add_cell(self, check: CellCheck, key: str | None = None) -> None:
        """A check of another sheet's cell, kept under ``key`` (default: its cell), in the next row of E:G."""
        self.cells.setdefault(check.ref if key is None else key, (FIRST_ROW + len(self.cells), check))

    def members(self, names: frozenset[str]) -> list[str]:
        """The checks of a set, in the order of the Checks sheet: the inputs', then the other sheets' cells'."""
        if names == EVERY:
            return list(CHECKED) + [r for r in self.cells if not r.startswith(LAYOUT_KEY)]
        if names == LAYOUTS:
            return [r for r in self.cells if r.startswith(LAYOUT_KEY)]
        # (the set's own members sorted by their rows, not every input and cell walked for each of hundreds of sets;
        # a cell's row is its place in the order cells were added)
        cells = self.cells
        return sorted((n for n in names if n in _CHECK_ROW), key=_CHECK_ROW.__getitem__) + \
            sorted((r for r in names if r in cells), key=lambda r: cells[r][0])

    def check_ref(self, key: str) -> str:
        if key in self.cells:
            col = LAYOUT_WHOLE_COL if key.startswith(LAYOUT_KEY) else CELL_COLS[2]
            return ref_text(SHEET, f"{col}{self.cells[key][0]}")
        return check_ref(key)


_ACTIVE: ContextVar[Registry] = ContextVar("checks")  # the layout being made (collecting); none outside one


@contextmanager
def collecting() -> Iterator[Registry]:
    """While a workbook is laid out: :func:`gathered` places the cells that gather the checks of sets of inputs."""
    reg = Registry()
    token = _ACTIVE.set(reg)
    try:
        yield reg
    finally:
        _ACTIVE.reset(token)


def layout_memo() -> dict[Any, Any]:
    """A dictionary that lives as long as the layout being made: things made once per layout over the cells of its
    Checks sheet."""
    return _ACTIVE.get().memo


def gathered(names: Any) -> str | None:
    """The cell holding the first failing check of the inputs ``names`` (defined names, or the reference text of a
    registered cell of another sheet) (OK when all pass); None for no checked input."""
    reg = _ACTIVE.get()
    group = frozenset(n for n in names if n in _CHECK_ROW or n in reg.cells)  # (_CHECK_ROW: CHECKED's names)
    return reg.ref(group) if group else None


def register(ref: str, name: str, looked_up: bool = False, over: Mapping[str, str] | None = None) -> str:
    """The cell ``ref`` (another sheet's input cell) holds input ``name``: its check on the Checks sheet feeds the
    master check, and :func:`gathered` over ``ref`` includes it. ``over``: the cells that stand for the other names
    its check reads (a Scenarios column's Precision: the column's Framework). Returns ``ref``."""
    _ACTIVE.get().add_cell(CellCheck(ref, name, looked_up, over=tuple((over or {}).items())))
    return ref


def register_layout(ref: str, cells: dict[str, str], over: dict[str, str], message: str = "") -> None:
    """The cell ``ref`` holds a Parallelism row's layout check over its own input cells ``cells`` (defined name ->
    cell; ``over``: other names the row's cells stand for): a layout that does not split into whole pieces feeds the
    master check, naming the row's input the layout check blames (its cell) and why, in the words of xlcalc.layout.
    ``message``: the cell that holds the check's whole message, where ``ref`` shows it short."""
    _ACTIVE.get().add_cell(CellCheck(ref, "Layout_Check", layout=tuple(cells.items()), over=tuple(over.items()),
                                     message=message), LAYOUT_KEY + ref)


def registered_cells() -> Mapping[str, Any]:
    """The input cells of other sheets with a check of their own, by reference text."""
    return _ACTIVE.get().cells


def cell_checks(refs: Any) -> tuple[tuple[str, str], ...]:
    """(name, the cell of its check) for each name of ``refs`` (name -> reference text) whose cell has a check of its
    own, in the order of the Checks sheet (the order :func:`guard` writes them in)."""
    reg = _ACTIVE.get()
    # the cells of a row or column are asked about once per result placed over them: the answer for the last
    # ``refs`` is kept, with the number of registered cells it was made with (a cell once registered keeps its row),
    # and given again as the same object (what rendering._row_facts tells a row's next result by)
    last = reg.memo.get(_CELL_CHECKS)
    if last is not None and last[1] == len(reg.cells) and last[0] == refs:
        return last[2]  # type: ignore[no-any-return]
    cells = reg.cells
    made = tuple((k, reg.check_ref(ref))
                 for _, k, ref in sorted((cells[r][0], k, r) for k, r in refs.items() if r in cells))
    reg.memo[_CELL_CHECKS] = (dict(refs), len(cells), made)
    return made


_CELL_CHECKS = ("cell checks",)  # Registry.memo's key of the last cell_checks answer


INLINE_CELLS = 6  # the other sheets' cells a guard checks one by one (more: gathered in a cell of their own)


def guard(expr: Any, names: Any) -> Any:
    """``IF(<checks of names>="OK", expr, <checks of names>)``: a failing input's message instead of ``expr``.

    The inputs' checks (defined names) come first, gathered in one cell; then the checks of the other sheets' cells
    among ``names``: one by one for a few (a Parallelism row's), else gathered in a cell of their own (a Scenarios
    column's), so that the sets of the Inputs sheet's names stay shared by the rows and columns."""
    reg = _ACTIVE.get()
    names = set(names)
    # (the registered cells among ``names`` in the order of their rows, the order they were registered in)
    cells = sorted(names & reg.cells.keys(), key=lambda r: reg.cells[r][0])
    checked = [reg.ref(frozenset(cells))] if len(cells) > INLINE_CELLS else [reg.check_ref(r) for r in cells]
    for at in reversed(checked):
        expr = _passes(at, wrap(expr))
    inputs = gathered(names - set(reg.cells))
    return expr if inputs is None else _passes(inputs, wrap(expr))


# --- the check of one input ----------------------------------------------------------------------------------

def _bounds(s: Any, x: Var) -> list[Any]:
    tests = [x > s.gt if s.gt is not None else None, x >= s.ge if s.ge is not None else None,
             x < s.lt if s.lt is not None else None, x <= s.le if s.le is not None else None]
    return [t for t in tests if t is not None] + ([eq(floor_int(x), x)] if s.kind == "int" else [])


def shown_value(x: Any) -> Any:
    """A value as a check's message shows it: a text longer than VALUE_CHARS cut to its start and "..."."""
    return if_(Func("LEN", (x,)) > VALUE_CHARS, Concat(Func("LEFT", (x, Num(VALUE_CHARS - 3))), "..."), x)


def _message(where: str, name: str, allowed: str, x: Var) -> Concat:
    return Concat(f"{where}: {name} = ", shown_value(x), f" is not allowed: {name} must be {allowed}")


def input_check(book: Book, name: str, lists: dict[str, tuple[str, str, int, int]]) -> Any:
    """The check of one input cell: OK when its value is allowed, else "<cell>: <Name> = <value> is not allowed:
    <Name> must be <what its spec allows>" (a looked-up input's own message as it stands)."""
    sheet, at = book.names[name]
    return value_check(Var(name), f"{sheet}!{at}", name, lists,
                       "failing" if name in LOOKED_UP_FAILING else "text_ok" if name in LOOKED_UP_TEXT_OK else None)


def cell_check(check: CellCheck, lists: dict[str, tuple[str, str, int, int]]) -> Any:
    """The check of another sheet's input cell: as its input's on Inputs, naming its own cell; a look-up's message
    there (the column's GPU has no such figure) is the column's to show, not a failing input."""
    where = check.ref.replace("$", "")
    made = value_check(Var(check.ref), where, check.name, lists, "text_ok" if check.looked_up else None)
    return made.substitute({k: Var(v) for k, v in check.over}) if check.over else made


def value_check(x: Var, where: str, name: str, lists: dict[str, tuple[str, str, int, int]],
                looked_up: str | None) -> Any:
    """OK when cell ``x`` holds what input ``name`` allows, else "<where>: <name> = <value> is not allowed: <name>
    must be <what is allowed>"; ``looked_up``: "failing" (a text is the look-up's message: shown as it stands),
    "text_ok" (a text is a look-up's message that fails nothing), None (a number is required)."""
    if name in CHOICES:
        sheet_of, col, first, last = lists[name]
        found = IfError(Lookup(x, sheet_of, col, col, first, last), "")
        allowed = _allowed(name, lists)
        listed: Any = OK
        if name == "Precision":  # and one the framework in effect offers
            fw = _ACTIVE.get().frameworks
            offered = Concat(f"{where}: {name} = ", shown_value(x), f" is not allowed: {name} must be {OFFERED}",
                             fw.framework(), ": ", IfError(fw.offered(), ""), ", or empty")
            listed = if_(eq(IfError(fw.pair(x), ""), ""), offered, OK)
        return if_(eq(x, ""), OK, if_(eq(found, ""), _message(where, name, allowed, x), listed))
    s = spec(INPUT_BY_NAME[name].spec_name)
    bad = _message(where, name, s.allowed, x)
    if s.kind == "bool":  # TRUE/FALSE, or 1/0 as LibreOffice stores a boolean
        ok = or_(eq(x, True), eq(x, False), eq(x, 1), eq(x, 0))
        if looked_up == "failing":  # a text while a framework is picked: the Frameworks sheet's look-up message
            return if_(ok, OK, if_(IsNumber(x), bad, if_(eq(Concat(Var("Framework"), Var("Precision")), ""), bad, x)))
        return if_(ok, OK, bad)
    if s.kind == "choice":
        return if_(or_(*(eq(x, c) for c in s.choices)), OK, bad)
    tests = _bounds(s, x)
    inside = if_(and_(*tests) if len(tests) > 1 else tests[0], OK, bad) if tests else OK
    # a text: the look-up's own message ("failing"), or one that fails nothing ("text_ok"); an empty cell: not allowed
    not_number = if_(eq(x, ""), bad, x if looked_up == "failing" else OK) if looked_up else bad
    if name in EMPTY_OK:  # empty (a spreadsheet's ISNUMBER is FALSE, ="" TRUE) or 0 (as a formula reads it): OK
        return if_(eq(x, ""), OK, if_(IsNumber(x), if_(eq(x, 0), OK, inside), not_number))
    return if_(IsNumber(x), inside, not_number)


def _first_failing(refs: list[str], reg: Registry) -> Any:
    """The first of ``refs`` (check cells) that is not OK, else OK: nested IFs, in cells of their own by chunks."""
    if len(refs) > MAX_NESTED:  # each chunk's own gathering cell (a set of its own: the inputs of those checks)
        cells = [reg.ref(frozenset(refs[i:i + MAX_NESTED])) for i in range(0, len(refs), MAX_NESTED)]
        assert len(cells) <= MAX_NESTED, len(refs)  # at most 1,600 checks in one set
        refs = cells
    else:
        refs = [reg.check_ref(k) for k in refs]
    return FirstFailing(refs, OK)  # IF(<ref>="OK", ..., <ref>) for each of refs, "OK" innermost


def _passes(ref: str, expr: Expr) -> Expr:
    """``IF(<ref>="OK", expr, <ref>)``: ``if_(eq(Var(ref), OK), expr, Var(ref))`` built straight (the gathering cells
    and guards build thousands)."""
    return Func("IF", (BinOp("=", Var(ref), _OK), expr, Var(ref)))


_OK = Text(OK)


def layout_where(book: Book, row: CellCheck | None = None, var: Any = None, none: Any = "") -> Any:
    """The cell of the input the layout check blames: the first violated constraint of
    xlcalc.layout over the same inputs as Layout_Check.

    ``row``: a Parallelism row's layout check, over ``var(<Name>)`` for each name its cells stand for; an input of the
    row's own (``row.layout``) is named by the text ``var("at <Name>")``, any other by ``var("at Layout")`` (the row's
    layout check cell). ``none``: where it blames no input."""
    by_spec = {c.spec_name: c.name for c in INPUTS}
    own = {n for n, _ in row.layout} if row is not None else set()
    where: dict[str, Any] = {}
    for c in CONSTRAINTS:  # an input the workbook does not have (the global batch): the layout check's own cell
        name = by_spec.get(c.name, "Layout_Check")
        if row is not None:
            name = name if name in own else "Layout_Check"
            where[c.name] = Concat(var("at " + name if name in own else "at Layout"), f" ({name})")
        else:
            name = name if name in book.names else "Layout_Check"
            where[c.name] = f"{ref_text(*book.names[name], absolute=False)} ({name})"
    args = dict(OUTPUT_BY_NAME["Layout_Check"].args)
    if row is not None:
        cells = {n: var(n) for n, _ in row.layout + row.over}
        args = {k: v.substitute(cells) if isinstance(v, Expr) else v for k, v in args.items()}
        args.update({n: var(n) for n, _ in row.over if n in LAYOUT_STEPS})  # the row's layout steps: their cells
    return layout_blamed(args, where, none)


def layout_row_where(book: Book, row: CellCheck, reg: Registry) -> Any:
    """The cell of the input a Parallelism row's layout check blames, "<cell in column E> (<Name>)"; OK where it blames
    none, or where its constraints give an error value (the row's layout cell then shows another check's message).

    Made once per shape as a template over the row's cells (its input cells and the cells naming them in column E of
    this sheet, its layout check's) and bound to each row's (model.placed)."""
    names = tuple(n for n, _ in row.layout + row.over)
    refs = {"at Layout": ref_text(SHEET, f"{CELL_COLS[0]}{reg.cells[LAYOUT_KEY + row.ref][0]}"),
            **dict(row.layout + row.over),
            **{"at " + n: ref_text(SHEET, f"{CELL_COLS[0]}{reg.cells[ref][0]}") for n, ref in row.layout}}
    return placed(("layout row where", tuple(n for n, _ in row.layout), names),
                  lambda var: IfError(layout_where(book, row, var, OK), OK), refs)


def layout_row_check(row: CellCheck, reg: Registry, where: str) -> Any:
    """A Parallelism row's layout check: OK, or "<cell it blames> (<Name>): <the row's layout message>", the cell it
    blames read from ``where`` (:func:`layout_row_where`'s cell).

    OK as well where the layout cell shows another check's message (a row's cell, or an input of the Inputs sheet,
    that its own check names): its constraints then blame no input, or the row's cell fails its own check. (One
    template per shape, bound to each row's cells: model.placed.)"""
    refs = {"Layout": row.message or row.ref, "where": where,
            **{"check " + n: reg.check_ref(ref) for n, ref in row.layout}}

    def make(var: Any) -> Any:
        layout, at = var("Layout"), var("where")
        another = [eq(layout, OK), eq(at, OK)] + [not_(eq(var("check " + n), OK)) for n, _ in row.layout]
        return if_(or_(*another), OK, Concat(at, ": ", layout))

    return placed(("layout row", tuple(n for n, _ in row.layout)), make, refs)


def layout_line(whole: str) -> Any:
    """A Parallelism row's layout check in cell ``whole`` ("<cell> (<Name>): <message> (<the arithmetic>)") in one
    printed line: without the arithmetic in brackets, or, where that is longer than SHORT_CHARS, up to "is not
    allowed". (One template, bound to each row's cell: model.placed.)"""
    def make(var: Any) -> Any:
        text = var("whole")

        def find(what: str, *start: Any) -> Any:
            return Func("FIND", (Text(what), text, *start))

        bracket = find(" (", find("): "))
        head = Func("LEFT", (text, bracket - 1))
        refused = Func("LEFT", (text, find(" is not allowed") + len(" is not allowed") - 1))
        return if_(eq(text, OK), OK, IfError(if_(bracket <= SHORT_CHARS + 1, head, refused), text))

    return placed("layout_line", make, {"whole": whole})


def finish(book: Book, reg: Registry, lists: dict[str, tuple[str, str, int, int]], frameworks: Any) -> None:
    """Write the Checks sheet: the layout check, every input's check, and every set of checks some cell gathers.
    ``frameworks`` (catalogs.FrameworkTable): Precision's check also asks for a precision the framework offers."""
    reg.frameworks = frameworks
    s = SHEET
    book.titled(s, "Checks \u2014 every input against what is allowed; they roll up to the input check on Start",
                "A check passes with OK. A result that depends on an input whose check fails shows the check's "
                "message instead of a number; pasted values are checked too (a cell's list or range only stops "
                "typing).")
    book.row(s, LAYOUT_ROW, ("Layout (every piece whole)", "the input it blames, then why"))
    book.put(s, f"C{LAYOUT_ROW}", if_(eq(Var("Layout_Check"), "OK"), OK, Concat(
        IfError(layout_where(book), "Layout_Check"), ": ", Var("Layout_Check"))), "formula")
    book.rules.append((s, f"C{LAYOUT_ROW}", "bad_unless_ok"))
    book.row(s, FIRST_ROW - 1, ("input", "cell", "check (OK: allowed)"), "header")
    c_at, c_name, c_check = CELL_COLS
    book.widths[s] = {"A": 24, "B": 40, "C": CHECK_WIDTH, "D": 2, c_at: 18, c_name: 18, c_check: CHECK_WIDTH}
    for row, name in enumerate(CHECKED, start=FIRST_ROW):
        where = ref_text(*book.names[name], absolute=False)
        book.row(s, row, (name, where))
        book.put(s, f"C{row}", input_check(book, name, lists), "formula")
        _wrap_if_long(book, row, "C", where, name, lists)
    book.rules.append((s, f"C{FIRST_ROW}:C{FIRST_ROW + len(CHECKED) - 1}", "bad_unless_ok"))
    book.put(s, f"{c_at}{FIRST_ROW - 2}", "Input cells of the Scenarios, Sensitivity and Parallelism sheets; each "
             "Parallelism row's layout", "group")
    book.row(s, FIRST_ROW - 1, ("cell", "input", "check (OK: allowed)"), "header", CELL_COLS[0])
    for row, check in reg.cells.values():
        book.row(s, row, (check.ref.replace("$", ""), check.name), col=c_at)
        if check.layout:  # whole in H (what the master check reads), in G without the arithmetic: one printed line;
            # the cell it blames in I (H reads it twice)
            where = book.put(s, f"{LAYOUT_WHERE_COL}{row}", layout_row_where(book, check, reg), "formula")
            whole = book.put(s, f"{LAYOUT_WHOLE_COL}{row}", layout_row_check(check, reg, where), "formula")
            book.put(s, f"{c_check}{row}", layout_line(whole), "formula")
        else:
            book.put(s, f"{c_check}{row}", cell_check(check, lists), "formula")
            _wrap_if_long(book, row, c_check, check.ref.replace("$", ""), check.name, lists)
    last_cell = FIRST_ROW + max(len(reg.cells), 1) - 1
    if reg.cells:
        book.rules.append((s, f"{c_check}{FIRST_ROW}:{c_check}{last_cell}", "bad_unless_ok"))
    book.put(s, f"A{GROUP_FIRST_ROW - 1}", "Checks of the inputs each result uses (the first failing one)", "group")
    written = 0
    while written < len(reg.groups):  # gathering a long set places cells for its chunks: more groups
        for names, row in list(reg.groups.items())[written:]:
            written += 1
            members = reg.members(names)
            book.row(s, row, (f"{len(members)} inputs", ", ".join(m.replace("$", "") for m in members)))
            book.put(s, f"C{row}", _first_failing(members, reg), "formula")
    last = GROUP_FIRST_ROW + len(reg.groups) - 1
    book.rules.append((s, f"C{GROUP_FIRST_ROW}:C{last}", "bad_unless_ok"))
    # the message whole, wrapped: the cell it blames (at most WHERE_CHARS), then the layout check's message
    message_cell(book, s, LAYOUT_ROW, "C", "C", WHERE_CHARS + longest_layout_message())
    book.freeze[s] = f"A{FIRST_ROW}"  # the column headings stay in sight (and head every printed page)
    # printed: the layout check and the input checks (A:C), then the other sheets' input cells and layouts (E:G), each
    # range from its heading; the gathering cells below the input checks are working cells, not printed
    book.print_areas[s] = f"A1:C{FIRST_ROW + len(CHECKED) - 1},{c_at}{FIRST_ROW - 2}:{c_check}{last_cell}"


def _allowed(name: str, lists: dict[str, tuple[str, str, int, int]]) -> str:
    """What input ``name``'s check names as allowed (a preset dropdown's: the ids of its list)."""
    if name in CHOICES:
        return CHOICE_ALLOWED.get(name, f"an id from the list on the {lists[name][0]} sheet, or empty")
    return spec(INPUT_BY_NAME[name].spec_name).allowed


def _wrap_if_long(book: Book, row: int, col: str, where: str, name: str,
                  lists: dict[str, tuple[str, str, int, int]]) -> None:
    """A check whose longest message takes more than the printed line of its column wraps there, its row tall
    enough: the longest message the check of input ``name`` in cell ``where`` can show (:func:`value_check`), the
    value at most VALUE_CHARS long; a looked-up input's own message is sized where it is looked up."""
    allowed = f"{OFFERED}, or empty" if name == "Precision" else _allowed(name, lists)
    chars = len(f"{where}: {name} =  is not allowed: {name} must be {allowed}") + VALUE_CHARS
    if name == "Precision":  # then a framework and the precisions it offers
        chars += max(len(fw) + 2 + len(", ".join(precisions)) for fw, precisions in FRAMEWORKS.items())
    if chars > CHECK_LINE_CHARS:
        message_cell(book, SHEET, row, col, col, chars)


def is_checked(name: str) -> bool:
    return name in _CHECK_ROW  # (the names of CHECKED)


def master(expr_ok: Any) -> Any:
    """Start's input check: the first failing input check, then the layout check (with the cell it blames), then the
    Parallelism rows' layout checks, then ``expr_ok`` (the checks of results)."""
    reg = _ACTIVE.get()
    every = Var(reg.ref(EVERY))  # the inputs', then the other sheets' cells' checks
    layout, rows = Var(ref_text(SHEET, f"C{LAYOUT_ROW}")), Var(reg.ref(LAYOUTS))
    return if_(eq(every, OK), if_(eq(layout, OK), if_(eq(rows, OK), expr_ok, rows), layout), every)


__all__ = ["CHECKED", "SHEET", "collecting", "finish", "gathered", "guard", "master", "check_ref", "is_checked",
           "register"]

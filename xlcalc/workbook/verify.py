"""Compare a received planning workbook, cell by cell, with the workbook the builder writes.

The expected workbook is laid out again by the builder's own code (:func:`xlcalc.workbook.layout`) for the
scenario read from the file, with the file's own count of Scenarios columns, Sensitivity axes and Parallelism
rows (editable cells whose count was fixed when it was built). Every cell is then checked:

* a formula cell holds the builder's formula (normalised text, see :func:`normalized`);
* an input cell holds a value, or the builder's own look-up formula there (whose fallback number, the typed
  value used while no preset is picked, may differ), never another formula;
* no formula stands where the builder writes a value or nothing;
* text that starts like a formula (``=``, ``+``, ``-``, ``@``) keeps its text protection (quotePrefix);
* the defined names point where the builder's do, and there are no others.

Harmless differences a re-save introduces are normalised away: number literals compare by value (LibreOffice
writes ``1E+12`` as ``1000000000000``), ``TRUE()``/``FALSE()`` equal ``TRUE``/``FALSE`` (and stand for a
boolean typed into an input), letter case outside strings, spaces outside strings and quotes around sheet names.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..scenario import Scenario
from .compare import LINKED_NOTE, Shape, shaped_as
from .model import FORMULA_LEAD, ref_text

MAX_AXIS = 5          # the builder's Sensitivity axes have at most five points (factors 0.25 ... 4)
MAX_CONFIGS = 100     # and the Parallelism sheet at most 81 candidate layouts
MAX_FINDINGS = 200    # listed; a file changed in more cells than this is reported as such
SCENARIO_HEAD_ROW, SCENARIO_NAME_ROW, SCENARIO_PRESET_ROWS = 4, 6, (7, 8, 9)

_TOKEN = re.compile(r"""(?P<str>"(?:[^"]|"")*")|(?P<sheet>'(?:[^']|'')+'!)"""
                    r"""|(?<![\w.$])(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:E[+-]?\d+)?)(?![\w.(])""", re.I)
_PLAIN_SHEET = re.compile(r"'([A-Za-z_][A-Za-z0-9_.]*)'!")
_SPACE = re.compile(r"\s+")
# IF(preset="", number, ...) or IF(Recipe_Id="", IF(Framework&Precision="", number, ...), ...): a look-up input
_LOOK_UP = re.compile("=IF\\([^,\0\1]*=\0,(?:IF\\([^,\0\1]*=\0,)?\1,")
_LOOK_UP_BOOL = re.compile("^(=IF\\([^,\0\1]*=\0,(?:IF\\([^,\0\1]*=\0,)?)(?:TRUE|FALSE),")  # TRUE/FALSE typed


@dataclass
class Finding:
    where: str
    cause: str

    def __str__(self) -> str:
        return f"{self.where}: {self.cause}"


@dataclass(frozen=True)
class Normal:
    """A formula for comparison: its text with strings and numbers taken out (upper-cased, without spaces or
    quotes around plain sheet names, TRUE() as TRUE), the strings as written and the numbers as floats."""

    skeleton: str
    strings: tuple[str, ...]
    numbers: tuple[float, ...]

    def same(self, other: Normal, look_up: bool = False) -> bool:
        mine, theirs = self.skeleton, other.skeleton
        if look_up and self.strings[:1] == ('""',):  # the TRUE/FALSE typed for "no preset" is an input value
            mine, theirs = _LOOK_UP_BOOL.sub(r"\1BOOL,", mine), _LOOK_UP_BOOL.sub(r"\1BOOL,", theirs)
        if mine != theirs or self.strings != other.strings:
            return False
        a, b = self.numbers, other.numbers
        if look_up and a and _LOOK_UP.match(self.skeleton) and self.strings[:1] == ('""',):
            a, b = a[1:], b[1:]  # the number typed for "no preset" is an input value
        return len(a) == len(b) and all(x == y or math.isclose(x, y, rel_tol=1e-12) for x, y in zip(a, b))


def normalized(formula: str) -> Normal:
    strings: list[str] = []
    numbers: list[float] = []

    def take(m: re.Match[str]) -> str:
        if m["str"] is not None:
            strings.append(m["str"])
            return "\0"
        if m["sheet"] is not None:
            return _PLAIN_SHEET.sub(r"\1!", m["sheet"])
        numbers.append(float(m["num"]))
        return "\1"

    skeleton = _SPACE.sub("", _TOKEN.sub(take, formula)).upper().replace("TRUE()", "TRUE").replace("FALSE()", "FALSE")
    return Normal(skeleton, tuple(strings), tuple(numbers))


def same_formula(a: str, b: str, look_up: bool = False) -> bool:
    """Whether two formula texts are the same formula, allowing for what a re-save changes (see the module)."""
    return a == b or normalized(a).same(normalized(b), look_up)


def _number(v: Any, default: float) -> Any:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def file_shape(wb: Any) -> Shape:
    """The file's own Sensitivity axes and Parallelism rows (values as found; only their count matters)."""
    gpus: list[Any] = []
    mfus: list[Any] = []
    configs: list[tuple[Any, ...]] = []
    if "Sensitivity" in wb.sheetnames:
        ws = wb["Sensitivity"]
        while len(mfus) < MAX_AXIS and ws.cell(5, 2 + len(mfus)).value is not None:
            mfus.append(_number(ws.cell(5, 2 + len(mfus)).value, 0.5))
        while len(gpus) < MAX_AXIS and ws.cell(6 + len(gpus), 1).value is not None:
            gpus.append(_number(ws.cell(6 + len(gpus), 1).value, 1))
    if "Parallelism" in wb.sheetnames:
        ws = wb["Parallelism"]
        while len(configs) < MAX_CONFIGS:
            row = tuple(ws.cell(5 + len(configs), j).value for j in range(1, 6))
            if all(v is None for v in row):
                break
            configs.append(row)
    return Shape(gpus, mfus, configs)


def layout_scenarios(wb: Any, main: Scenario) -> list[Scenario]:
    """What to lay the workbook out with: the main plan, or (columns of their own on the Scenarios sheet) one
    scenario per column with that column's model, GPU and recipe presets."""
    if "Scenarios" not in wb.sheetnames:
        return [main]
    ws = wb["Scenarios"]
    cols: list[int] = []
    while len(cols) < 20 and str(ws.cell(SCENARIO_HEAD_ROW, 3 + len(cols)).value or "").startswith("Scenario "):
        cols.append(3 + len(cols))
    if not cols or all(ws.cell(SCENARIO_NAME_ROW, c).value == LINKED_NOTE for c in cols):
        return [main]
    out = [main]
    for c in cols[1:]:
        model, gpu, recipe = (str(ws.cell(r, c).value or "").strip() or None for r in SCENARIO_PRESET_ROWS)
        try:
            out.append(Scenario.build(model=model, gpu=gpu, recipe=recipe))
        except Exception:  # an id the catalogs lack: its cells are compared with the plain plan's
            out.append(Scenario())
    return out


@dataclass
class Expected:
    value: Any          # formula text ("=...") or the value the builder writes
    formula: bool
    editable: bool


ExpectedBook = tuple[dict[str, dict[str, Expected]], dict[str, tuple[str, str]]]
_CACHE: dict[str, ExpectedBook] = {}  # the last few expected workbooks (a layout takes seconds)


def expected_cells(scenario: Scenario, wb: Any) -> ExpectedBook:
    """The builder's cells, as its writer renders them, for this file's shape; and its defined names."""
    shape = file_shape(wb)
    scenarios = layout_scenarios(wb, scenario)
    key = repr(shape) + "".join(sc.model_dump_json() for sc in scenarios)
    if key not in _CACHE:
        if len(_CACHE) >= 4:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = _expected_cells(scenarios, shape)
    return _CACHE[key]


def _expected_cells(scenarios: list[Scenario], shape: Shape) -> ExpectedBook:
    from openpyxl import Workbook

    from . import layout
    from .writer import write_cell

    with shaped_as(shape):
        lay = layout(scenarios)
    scratch = Workbook().active
    sheets: dict[str, dict[str, Expected]] = {}
    for title, cells in lay.book.sheets.items():
        out = sheets[title] = {}
        for at, c in cells.items():
            write_cell(scratch, at, c.value, c.kind, c.number_format, c.subs)
            cell = scratch[at]
            out[at] = Expected(cell.value, cell.data_type == "f", not cell.protection.locked)
            cell.value = None
    return sheets, dict(lay.book.names)


def _short(text: Any, n: int = 100) -> str:
    s = str(text)
    return repr(s if len(s) <= n else s[:n] + "...")


def _first_difference(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, i - 30)
    return f"at character {i + 1}: file {_short(a[lo:i + 50], 80)}, xlcalc writes {_short(b[lo:i + 50], 80)}"


def verify(wb: Any, scenario: Scenario) -> list[Finding]:
    """Every difference between the file's cells (openpyxl, formulas kept) and what the builder writes."""
    sheets, names = expected_cells(scenario, wb)
    by_cell = {f"{s}!{at}": n for n, (s, at) in names.items()}
    findings: list[Finding] = []

    def flag(sheet: str, at: str, cause: str) -> None:
        where = f"{sheet}!{at}"
        findings.append(Finding(where + (f" ({by_cell[where]})" if where in by_cell else ""), cause))
        if len(findings) >= MAX_FINDINGS:
            raise _TooMany

    alternative: dict[str, dict[str, Expected]] = {}

    def look_up(title: str, at: str) -> Expected | None:
        """The builder's cell for the same plan with every preset-filled input following its preset: an input
        cell of the file may still hold the look-up it was built with after its plan's numbers were typed."""
        if not alternative:
            alternative.update(expected_cells(preset_following(scenario), wb)[0])
        return alternative.get(title, {}).get(at)

    try:
        _compare(wb, sheets, flag, findings, look_up)
    except _TooMany:
        findings.append(Finding("the workbook", f"more than {MAX_FINDINGS} cells differ from what xlcalc writes; "
                                                "the first are listed"))
        return findings
    _check_names(wb, names, findings)
    return findings


class _TooMany(Exception):
    pass


def preset_following(sc: Scenario) -> Scenario:
    from .catalogs import FRAMEWORK_DERIVED, GPU_DERIVED, MODEL_DERIVED, RECIPE_DERIVED
    from .sheets import STAGE_ENDS

    drop = {*GPU_DERIVED, *MODEL_DERIVED, *RECIPE_DERIVED, *STAGE_ENDS, "capex_usd_per_gpu",
            *(FRAMEWORK_DERIVED if sc.framework else ())}
    try:
        return Scenario.build(**{k: v for k, v in sc.model_dump().items() if k not in drop})
    except Exception:  # the plan without its numbers is not valid: compare with the plan itself
        return sc


def _compare(wb: Any, sheets: dict[str, dict[str, Expected]], flag: Any, findings: list[Finding],
             look_up: Any) -> None:
    from openpyxl.worksheet.formula import ArrayFormula, DataTableFormula

    findings += [Finding(t, "a sheet the planning workbook does not have") for t in wb.sheetnames if t not in sheets]
    for title, expected in sheets.items():
        if title not in wb.sheetnames:
            findings.append(Finding(title, "the sheet is missing"))
            continue
        ws = wb[title]
        seen = set()
        for cell in list(ws._cells.values()):
            if (v := cell.value) is None:
                continue
            at = cell.coordinate
            seen.add(at)
            e = expected.get(at)
            if isinstance(v, (ArrayFormula, DataTableFormula)):
                flag(title, at, "an array or data-table formula; xlcalc writes none")
                continue
            if cell.data_type == "f":
                text = str(v)
                if e is not None and e.formula and same_formula(text, e.value, look_up=e.editable):
                    continue
                if e is not None and e.editable:
                    if normalized(text).skeleton in ("=TRUE", "=FALSE"):
                        continue  # a boolean typed into an input, as LibreOffice saves it
                    alt = look_up(title, at)
                    if alt is not None and alt.formula and same_formula(text, alt.value, look_up=True):
                        continue
                if e is not None and e.formula:
                    flag(title, at, f"the formula differs from the one xlcalc writes, {_first_difference(text, e.value)}")
                elif e is not None and e.editable:
                    flag(title, at, f"an input cell holds the formula {_short(text)}; inputs hold values")
                else:
                    flag(title, at, f"holds the formula {_short(text)} where xlcalc writes "
                                    f"{'a value' if e is not None else 'nothing'}")
                continue
            if e is not None and e.formula and not e.editable:
                flag(title, at, f"the formula {_short(e.value, 60)} was replaced by the constant {_short(v, 40)}")
            if isinstance(v, str) and v.startswith(FORMULA_LEAD) and not cell.quotePrefix:
                flag(title, at, f"the text {_short(v, 60)} looks like a formula and has lost its text protection "
                                "(quotePrefix; a re-save dropped it): Excel makes it a live formula on F2+Enter")
        for at, e in expected.items():
            if e.formula and not e.editable and at not in seen:
                flag(title, at, f"the formula {_short(e.value, 60)} was deleted")


def _check_names(wb: Any, names: dict[str, tuple[str, str]], findings: list[Finding]) -> None:
    for name, (sheet, at) in names.items():
        if (dn := wb.defined_names.get(name)) is None:
            findings.append(Finding(f"defined name {name}", "missing"))
        elif dn.attr_text.replace("$", "").replace("'", "") != f"{sheet}!{at}":
            findings.append(Finding(f"defined name {name}", f"points to {_short(dn.attr_text)}; xlcalc's points to "
                                                            f"{ref_text(sheet, at)}"))
    extra = [n for n in wb.defined_names if n not in names and not n.startswith("_xlnm.")]
    for ws in wb.worksheets:
        extra += [f"{ws.title}!{n}" for n in getattr(ws, "defined_names", {}) if not n.startswith("_xlnm.")]
    findings += [Finding(f"defined name {n}", "not one xlcalc writes") for n in extra]

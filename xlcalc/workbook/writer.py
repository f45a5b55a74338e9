"""Write a :class:`~xlcalc.workbook.model.Book` as an .xlsx with openpyxl.

Formula text is rendered from each cell's expression; text is always written as text (a value starting with ``=``,
``+``, ``-`` or ``@`` never becomes a formula); input cells are unlocked on protected sheets; validations name the input
and what is allowed.
"""

from __future__ import annotations

import datetime
import io
import re
import zipfile
from collections.abc import Callable, Mapping
from copy import copy
from itertools import chain
from typing import IO, Any

from openpyxl import Workbook
from openpyxl.cell.cell import ERROR_CODES, Cell, MergedCell
from openpyxl.compat import safe_string
from openpyxl.drawing.spreadsheet_drawing import SpreadsheetDrawing
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Alignment, Border, Protection
from openpyxl.styles.cell_style import StyleArray
from openpyxl.utils import get_column_letter
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string
from openpyxl.utils.exceptions import IllegalCharacterError
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet._writer import WorksheetWriter
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.merge import MergedCellRange
from openpyxl.worksheet.pagebreak import Break
from openpyxl.writer.excel import ExcelWriter

from ..expr.nodes import Expr
from ..inputs import InputSpec
from .cache import _value_xml, by_sheet
from .layout import BAD_FILL, CHARS_PER_WIDTH, DEFAULT_WIDTH, EDITABLE, GOOD_FILL, STYLES, column_widths
from .model import _PLAIN_COORD, FORMULA_LEAD, Book, identity, ref_text
from .rendering import BOOL_FORMAT

SHEET_ORDER = ("Start", "Inputs", "Memory", "Time", "StepTime", "Budget", "FineTuning", "Scenarios", "Sensitivity",
               "Parallelism", "GPUs", "Models", "Recipes", "Frameworks", "Stacks", "Prices", "References")


MONEY_WHOLE = '"$"#,##0;-"$"#,##0'
# the conditional formats of a kind of rule (Book.rules): (operator, formula, fill), in order
RULES = {"good_if_true": (("equal", "TRUE", GOOD_FILL), ("equal", "FALSE", BAD_FILL)),
         "bad_unless_ok": (("notEqual", '"OK"', BAD_FILL),),  # a check: OK passes, a message fails
         "bad_if_negative": (("lessThan", "0", BAD_FILL), ("greaterThanOrEqual", "0", GOOD_FILL))}


def write_cell(ws, at: str, value: Any, kind: str, number_format: str | None, subs: Any,
               styled: dict[tuple[str, str | None], Any] | None = None) -> None:
    """Write one cell: its value (formula text, text as text) and the style of its kind and number format.

    ``styled`` remembers the style of each (kind, number format) once set: a later cell of the same pair gets a copy
    of it (the same style ids openpyxl would give it, without setting each attribute again).
    """
    row, col = _row_col(at)
    cell = ws._cells.get((row, col))
    if cell is None:  # ws.cell(row, col) without its checks of a coordinate that is always valid here
        cell = Cell(ws, row=row, column=col)
        ws._add_cell(cell)
    if isinstance(value, Expr):
        _bind_text(cell, value.to_excel(identity, subs))
    elif isinstance(value, str):
        if type(value) is str:
            _bind_text(cell, value)
        else:  # (a subclass: openpyxl's binding decides what it is)
            cell.value = value
        cell.data_type = "s"  # never a formula, whatever it starts with
        if value.startswith(FORMULA_LEAD):
            cell.quotePrefix = True
    else:
        cell.value = value
    style_key = (kind, number_format)
    if styled is not None and style_key in styled and not cell.has_style:
        cell._style = styled[style_key].__copy__()  # a StyleArray of its own
        return
    for attr, style in STYLES.get(kind, {}).items():
        setattr(cell, attr, style)
    if kind not in EDITABLE:
        cell.protection = Protection(locked=True)
    if number_format:
        # Whole dollars with an explicit negative section: LibreOffice's .xlsx -> .ods -> PDF route prints cells of
        # the one-section "$"#,##0 as bare numbers (3852266.68326226) in this workbook; this form survives the route
        cell.number_format = MONEY_WHOLE if number_format == '"$"#,##0' else number_format
    if styled is not None and not cell.quotePrefix:
        styled[style_key] = copy(cell._style)


def _bind_text(cell: Cell, text: str) -> None:
    """``cell.value = text`` for a ``str`` as openpyxl binds it (``Cell._bind_value``: cut to 32,767 characters, a
    control character refused, a formula or an error code by its text), without its checks of the value's type."""
    value = text[:32767]
    if _may_hold_control(value) and _ILLEGAL.search(value) is not None:
        raise IllegalCharacterError(f"{value} cannot be used in worksheets.")
    cell._value = value
    cell.data_type = "f" if len(value) > 1 and value.startswith("=") else "e" if value in ERROR_CODES else "s"


# openpyxl's ILLEGAL_CHARACTERS_RE (r"[\000-\010]|[\013-\014]|[\016-\037]") as one character class: the same
# characters, searched without trying three alternatives at each position of a formula's text
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_CONTROL = bytes(range(32))


def _may_hold_control(text: str) -> bool:
    """Whether ``text`` holds a character under U+0020 (those _ILLEGAL looks for among them): in UTF-8 such a character
    is one byte under 32 and no other character has one. (Megabytes of formula text: deleting bytes from the encoded
    text takes a third of the time of ``str.isprintable`` or the search itself.)"""
    raw = text.encode("utf-8", "surrogatepass")
    return len(raw.translate(None, _CONTROL)) != len(raw)


_COORDS: dict[str, tuple[int, int]] = {}


def _row_col(at: str) -> tuple[int, int]:
    """(row, column) of a coordinate such as ``B12`` (each coordinate parsed once)."""
    rc = _COORDS.get(at)
    if rc is None:
        m = _PLAIN_COORD.match(at)  # (a plain "B12" split without openpyxl's parse; anything else parsed by it)
        col, row = (m[1], int(m[2])) if m else coordinate_from_string(at)
        rc = _COORDS[at] = (row, column_index_from_string(col))
    return rc


def _aligner(wb: Workbook) -> Callable[..., None]:
    """``align(cell, horizontal, wrap_text, vertical)``: ``cell.alignment = Alignment(...)`` for many cells, each
    distinct alignment made and added to the workbook's list once (openpyxl hashes and compares it with the list's on
    every assignment), then set by its id -- the same ids, the first of each added in the same order."""
    ids: dict[tuple[Any, ...], int] = {}

    def align(cell: Any, horizontal: str | None = None, wrap_text: bool | None = None,
              vertical: str | None = None) -> None:
        key = (horizontal, wrap_text, vertical)
        if (idx := ids.get(key)) is None:
            idx = ids[key] = wb._alignments.add(Alignment(horizontal, vertical, wrap_text=wrap_text))
        cell._style.alignmentId = idx

    return align


class Merger:
    """``ws.merge_cells(range)`` for the ranges of one workbook: openpyxl's steps (a MergedCellRange, MergedCells for
    the range's other cells, then MergedCellRange.format), format's borders worked out once each.

    format() gives each edge cell of the range its border plus the start cell's side on that edge (``cell.border +=
    Border(<side>=...)``), then every cell of the range the start cell's protection; openpyxl hashes and compares
    the new border or protection with the workbook's list on every assignment. A border's sum depends only on the two
    borders and the side: it is kept by (side, the start cell's border id, the edge cell's border id); a protection
    by the start cell's protection id -- the same ids, the first of each added to the list in the same order."""

    def __init__(self) -> None:
        self.sums: dict[tuple[str, int, int], int] = {}
        self.protections: dict[int, int] = {}

    def merge(self, ws: Any, rng: str) -> None:
        mcr = MergedCellRange(ws, rng)  # (its start cell takes the bottom and right sides of its end cell)
        ws.merged_cells.add(mcr)
        cells = mcr.cells
        next(cells)  # the start cell stays
        for row, col in cells:
            ws._cells[row, col] = MergedCell(ws, row, col)
        start, borders = mcr.start_cell, ws.parent._borders
        for name in ("top", "left", "right", "bottom"):  # MergedCellRange.format
            if not start._style:
                start._style = StyleArray()  # (as reading cell.border makes it)
            start_id = start._style.borderId
            side = getattr(borders[start_id], name)
            if side and side.style is None:
                continue
            for coord in getattr(mcr, name):
                cell = _styled_cell(ws, coord)
                key = (name, start_id, cell._style.borderId)
                made = self.sums.get(key)
                if made is None:
                    cell.border += Border(**{name: side})
                    self.sums[key] = cell._style.borderId
                else:
                    cell._style.borderId = made
        start_id = start._style.protectionId
        protection = self.protections.get(start_id)
        for coord in mcr.cells:
            cell = _styled_cell(ws, coord)
            if protection is None:
                cell.protection = copy(start.protection)
                protection = self.protections[start_id] = cell._style.protectionId
            else:
                cell._style.protectionId = protection


def _styled_cell(ws: Any, coord: tuple[int, int]) -> Any:
    """The cell at (row, column) of a merged range, a MergedCell where none is, with a style array of its own."""
    cell = ws._cells.get(coord)
    if cell is None:
        cell = ws._cells[coord] = MergedCell(ws, row=coord[0], column=coord[1])
    if not cell._style:
        cell._style = StyleArray()
    return cell


def _number(x: float) -> str:
    """A bound as formula text: 10000000, 1e+13, 0.5 (never 10,000,000: a comma separates a function's arguments)."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _numeric_rule(at: str, s: InputSpec) -> str:
    bounds = [f"{at}{op}{_number(bound)}" for attr, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
              if (bound := getattr(s, attr)) is not None]
    whole = [f"INT({at})={at}"] if s.kind == "int" else []
    return "AND(" + ",".join([f"ISNUMBER({at})", *bounds, *whole]) + ")"


def add_validation(ws, v: dict[str, Any], sqref: str | None = None) -> None:
    """One data validation: the input's rule, error and prompt, over ``sqref`` (default: the cell ``v["at"]``).

    A numeric rule refers to its cell relatively (``ISNUMBER(A5)``): written for the top-left cell of a range,
    it applies to each cell of the range as to that one.
    """
    at, label = v["at"], v["label"]
    s: Any = v.get("spec")  # (none for a list of a sheet's cells)
    if "list" in v:
        kind, rule, allowed = "list", v["list"].lstrip("="), v["allowed"]
    elif s.kind in ("choice", "bool"):
        choices = s.choices if s.kind == "choice" else ("TRUE", "FALSE")
        kind, rule, allowed = "list", '"' + ",".join(choices) + '"', s.allowed
    else:
        kind, rule, allowed = "custom", _numeric_rule(at, s), s.allowed
    dv = DataValidation(type=kind, formula1=rule, allowBlank="list" in v, error=f"{label} must be {allowed}."[:255],
                        errorTitle="Not allowed", prompt=f"{label}: {allowed}"[:255], promptTitle=label[:32],
                        showErrorMessage=True, showInputMessage=True, errorStyle="stop")
    dv.add(sqref or at)
    ws.add_data_validation(dv)


def _validation_key(v: dict[str, Any]) -> tuple[Any, ...]:
    """Validations with equal keys differ only in their cell: one rule over a range serves them all."""
    if "list" in v:
        return v["sheet"], v["label"], ("list", v["list"], v["allowed"])
    s: InputSpec = v["spec"]
    return v["sheet"], v["label"], (s.name, s.kind, s.choices, s.gt, s.ge, s.lt, s.le, s.allowed)


def merged_validations(validations: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """The book's validations as (validation of the top-left cell, range): cells with the same rule in a rectangle
    of adjacent cells (a column's run of rows, then runs of the same rows in adjacent columns) share one validation.

    A workbook application keeps a list of validations; one per cell of the Parallelism and Scenarios grids made
    LibreOffice's load and save of the planner slower by hundreds of entries.
    """
    groups: dict[tuple[Any, ...], dict[tuple[int, int], dict[str, Any]]] = {}
    for v in validations:
        row, col = _row_col(v["at"])
        groups.setdefault(_validation_key(v), {})[(col, row)] = v
    out = []
    for cells in groups.values():
        runs: list[list[int]] = []  # [first col, last col, first row, last row]
        for col, row in sorted(cells):
            if runs and runs[-1][0] == col and runs[-1][3] == row - 1:
                runs[-1][3] = row
            else:
                runs.append([col, col, row, row])
        rects: list[list[int]] = []
        for run in runs:
            if same := [r for r in rects if r[1] == run[0] - 1 and r[2:] == run[2:]]:
                same[0][1] = run[0]
            else:
                rects.append(run)
        for c1, c2, r1, r2 in rects:
            top_left, bottom_right = f"{get_column_letter(c1)}{r1}", f"{get_column_letter(c2)}{r2}"
            out.append((cells[(c1, r1)], top_left if top_left == bottom_right else f"{top_left}:{bottom_right}"))
    return out


# sheets printed landscape (wide tables): all but the Checks sheet, which prints portrait
LANDSCAPE = frozenset(SHEET_ORDER)
# sheets printed on one page tall as well as wide (one chain read top to bottom: a few rows over a page are shrunk
# onto it rather than printed on a page of their own)
ONE_PAGE = frozenset({"StepTime"})
ROW_CM, CHAR_CM = 0.53, 0.2  # default row height; width of one character of column width (Calibri 11)


def _chart_extent(ws) -> tuple[int, int]:
    """Last row and column any chart of the sheet covers (approximately, from its anchor and size)."""
    last_row = last_col = 0
    for chart in ws._charts:
        if not isinstance(chart.anchor, str):
            continue
        row, c = _row_col(chart.anchor)
        last_row = max(last_row, row + int(chart.height / ROW_CM) + 1)
        width = 0.0
        while width < chart.width:
            width += (ws.column_dimensions[get_column_letter(c)].width or DEFAULT_WIDTH) * CHAR_CM
            c += 1
        last_col = max(last_col, c - 1)
    return last_row, last_col


def fit_row_heights(ws) -> None:
    """Give rows with wrapped text the height of their lines (not every application does it on load)."""
    spans = {(rng.min_row, rng.min_col): range(rng.min_col, rng.max_col + 1) for rng in ws.merged_cells.ranges}
    lines: dict[int, int] = {}
    alignments = ws.parent._alignments
    widths: dict[range, float] = {}  # the characters a span of columns holds (each span's columns read once)
    for (r, col), c in ws._cells.items():  # the cells written (walking the whole grid would create empty ones)
        if not isinstance(c._value, str) or c._value.startswith("="):
            continue
        # alignment 0 is the workbook's default alignment (no wrap): only a cell with an alignment of its own wraps
        if c._style is None or not c._style.alignmentId or not alignments[c._style.alignmentId].wrap_text:
            continue
        cols = spans.get((r, col), range(col, col + 1))
        chars = widths.get(cols)
        if chars is None:
            dims = ws.column_dimensions
            chars = widths[cols] = sum((dims[get_column_letter(k)].width or DEFAULT_WIDTH) for k in cols) * CHARS_PER_WIDTH
        lines[r] = max(lines.get(r, 1), sum(-(-max(len(p), 1) // int(chars)) for p in c.value.split("\n")))
    for r in sorted(lines):
        if lines[r] > 1:
            ws.row_dimensions[r].height = 13 * lines[r] + 2


def print_title_row(book: Book, title: str) -> int:
    """The row a sheet's printed pages repeat at the top: its table's column headings (the row above the frozen
    panes, where that row holds headings), else its title (row 1), never a section heading inside the sheet."""
    if at := book.freeze.get(title):
        row = _row_col(at)[0] - 1
        cells = book.sheets[title]
        if row >= 1 and any(c.kind == "header" for col in "ABCDE" if (c := cells.get(f"{col}{row}")) is not None):
            return row
    return 1


def page_setup(ws, area: str | None = None, title_row: int = 1) -> None:
    """Print set-up: the used range (and charts) as print area, fit to one page wide (ONE_PAGE: and one tall), A4,
    centred, the title row repeated on every page."""
    rows, cols = ws.max_row, ws.max_column
    chart_rows, chart_cols = _chart_extent(ws)
    ws.print_area = area or f"A1:{get_column_letter(max(cols, chart_cols))}{max(rows, chart_rows)}"
    for chart in ws._charts:  # a chart below its table starts a page of its own rather than being cut
        anchor = chart.anchor if isinstance(chart.anchor, str) else ""
        row = int("".join(ch for ch in anchor if ch.isdigit()) or 0)
        if anchor.startswith("A") and row > rows - 1:
            ws.row_breaks.append(Break(id=row - 1))
    ws.page_setup.orientation = "landscape" if ws.title in LANDSCAPE else "portrait"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 1 if ws.title in ONE_PAGE else 0  # 0: as many pages tall as it takes
    ws.print_options.horizontalCentered = True
    ws.page_margins.left = ws.page_margins.right = 0.5
    ws.page_margins.top = ws.page_margins.bottom = 0.6
    ws.oddFooter.center.text = "&A \u2014 page &P of &N"
    ws.print_title_rows = f"{title_row}:{title_row}"


def to_workbook(book: Book) -> Workbook:
    wb = Workbook()
    wb.remove(wb.active)
    styled: dict[tuple[str, str | None], Any] = {}
    titles = [t for t in SHEET_ORDER if t in book.sheets] + [t for t in book.sheets if t not in SHEET_ORDER]
    sheets = {}  # title -> worksheet (the workbook's own look-up makes a list of its sheets and walks it every time)
    for title in titles:
        ws = sheets[title] = wb.create_sheet(title)
        for at, c in book.sheets[title].items():
            write_cell(ws, at, c.value, c.kind, c.number_format, c.subs, styled)
        for col, width in column_widths(title, book.widths.get(title, {})).items():
            ws.column_dimensions[col].width = width
        if title in book.freeze:
            ws.freeze_panes = book.freeze[title]
        ws.protection.sheet = True  # no password: Review > Unprotect Sheet
        ws.protection.formatColumns = ws.protection.formatRows = False
        ws.sheet_view.zoomScale = 100
    for v, sqref in merged_validations(book.validations):
        add_validation(sheets[v["sheet"]], v, sqref)
    for sheet, rng, rule in book.rules:
        ws = sheets[sheet]
        if rule == "good_if_true":
            # TRUE/FALSE as words; LibreOffice 7.4 also fails to export a PDF of a boolean cell in
            # General format that carries this rule ("Unspecified Application Error")
            for cell in chain.from_iterable(ws[rng] if ":" in rng else ((ws[rng],),)):
                if cell.number_format in (None, "General"):
                    cell.number_format = BOOL_FORMAT
        ok = rule.removeprefix("bad_unless:")  # a master check: its all-clear text, else the message in red
        formats = RULES[rule] if ok == rule else (("equal", ok, GOOD_FILL), ("notEqual", ok, BAD_FILL))
        for operator, formula, fill in formats:
            ws.conditional_formatting.add(rng, CellIsRule(operator=operator, formula=[formula], fill=fill))
    for name, (sheet, at) in book.names.items():
        wb.defined_names[name] = DefinedName(name, attr_text=ref_text(sheet, at))
    align = _aligner(wb)
    for sheet, at in book.wrap:
        align(sheets[sheet][at], wrap_text=True, vertical="top")
    for sheet, at in book.messages:
        ws = sheets[sheet]
        msg_row, msg_col = _row_col(at)
        align(ws[at], wrap_text=True, vertical="top", horizontal="left")
        for k in range(1, msg_col):  # the row reads across at the top: label, then message
            if (cell := ws._cells.get((msg_row, k))) is not None and cell.value is not None:
                a = wb._alignments[cell._style.alignmentId]  # (cell.alignment without openpyxl's proxy)
                align(cell, horizontal=a.horizontal, wrap_text=a.wrap_text, vertical="top")
    merger = Merger()
    for sheet, rng in book.merges:
        merger.merge(sheets[sheet], rng)
    for ws in wb.worksheets:
        fit_row_heights(ws)
    for (sheet, row), points in book.heights.items():  # a message's row: never lower than its wrapped text needs
        dim = sheets[sheet].row_dimensions[row]
        dim.height = max(points, dim.height or 0)
    for sheet, first, last in book.hidden_columns:  # collapsed under the outline's + button; not printed
        sheets[sheet].column_dimensions.group(first, last, hidden=True, outline_level=1)
    for add_chart in book.charts:
        add_chart(wb)
    for ws in wb.worksheets:
        page_setup(ws, book.print_areas.get(ws.title), print_title_row(book, ws.title))
    wb.active = 0
    return wb


_PRINT_TITLES = re.compile(rb'<definedName name="_xlnm\.Print_Titles" localSheetId="\d+">[^<]*</definedName>')


class _Archive(zipfile.ZipFile):
    """The package's zip file, workbook.xml's print titles written after every sheet's print area (openpyxl writes
    each sheet's print titles, then its print area, sheet by sheet). Setting print titles makes LibreOffice lay out
    printed pages, at a far higher cost while some sheets have no print area yet: the same names in this order
    save most of what the print titles cost it on opening the planner (bench/bench_workbook.py --sheets)."""

    def writestr(self, zinfo_or_arcname: Any, data: Any, *args: Any, **kwargs: Any) -> None:
        if zinfo_or_arcname == "xl/workbook.xml":
            raw = data.encode("utf-8") if isinstance(data, str) else data
            titles = _PRINT_TITLES.findall(raw)
            data = _PRINT_TITLES.sub(b"", raw).replace(b"</definedNames>", b"".join(titles) + b"</definedNames>", 1)
        super().writestr(zinfo_or_arcname, data, *args, **kwargs)


def stored_package(wb: Workbook) -> bytes:
    """The workbook's package saved in memory without compression (as ``Workbook.save`` writes it otherwise):
    :func:`xlcalc.workbook.cache.inject` adds the cached values and compresses each part once."""
    buf = io.BytesIO()
    wb.properties.modified = datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None)
    ExcelWriter(wb, _Archive(buf, "w", zipfile.ZIP_STORED, allowZip64=True)).save()
    return buf.getvalue()


def _text(v: str) -> str:
    if "&" in v:  # (each replaced only where it occurs: a search costs a fraction of a replace that finds none)
        v = v.replace("&", "&amp;")
    if "<" in v:
        v = v.replace("<", "&lt;")
    if ">" in v:
        v = v.replace(">", "&gt;")
    return v


def _attr(v: str) -> str:
    return _text(v).replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#09;")


def sheet_data(ws, values: Mapping[str, Any]) -> str:
    """The ``<sheetData>`` element of a sheet as openpyxl writes it, with ``values[coordinate]`` as the cached
    value of each formula cell (as :func:`xlcalc.workbook.cache.inject` writes it): the same bytes, written in
    one pass over the cells rather than element by element and then rewritten."""
    rows: dict[int, list[Any]] = {}
    cells = ws._cells
    for rc in sorted(cells):
        rows.setdefault(rc[0], []).append(cells[rc])
    dims = ws.row_dimensions
    for r in dims.keys() - rows.keys():  # a row with a height and no cells
        rows[r] = []
    out = ["<sheetData>"]
    style_ids: dict[bytes, int] = {}
    letters: dict[int, str] = {}  # column -> letter (cell.coordinate, each column's letter made once)
    for r in sorted(rows):
        out.append(f'<row r="{r}"' + "".join(f' {k}="{_attr(v)}"' for k, v in dims.get(r, {})) + ">")
        for cell in rows[r]:
            value, style = cell._value, cell._style
            key = style.tobytes() if style is not None else _NO_STYLE
            styled = key != _NO_STYLE  # cell.has_style: a style array not all 0
            if value is None and not styled:
                continue
            if cell.hyperlink or cell.comment or cell.data_type not in "fsnb":
                raise ValueError(f"{ws.title}!{cell.coordinate}: a cell the workbook's writer does not write")
            col = cell.column
            letter = letters.get(col)
            if letter is None:
                letter = letters[col] = get_column_letter(col)
            at = f"{letter}{r}"
            head = f'<c r="{at}"'
            if styled:  # cell.style_id, looked up once per distinct style (the workbook's list of styles is the same)
                style_id = style_ids.get(key)
                if style_id is None:
                    style_id = style_ids[key] = cell.style_id
                head += f' s="{style_id}"'
            kind = cell.data_type
            if kind == "f":
                cached = _value_xml(values[at]) if at in values else None
                tail = f"<v>{cached[1]}</v>" if cached else "<v />"
                out.append(f"{head}{cached[0] if cached else ''}><f>{_text(value[1:])}</f>{tail}</c>")
            elif value is None or value == "":
                out.append(f'{head} t="{"inlineStr" if kind == "s" else kind}" />')
            elif kind == "s":
                space = ' xml:space="preserve"' if value.strip() and value != value.strip() else ""
                out.append(f'{head} t="inlineStr"><is><t{space}>{_text(value)}</t></is></c>')
            else:
                out.append(f'{head} t="{kind}"><v>{safe_string(value)}</v></c>')
        out.append("</row>")
    out.append("</sheetData>")
    return "".join(out)


_NO_STYLE = StyleArray().tobytes()  # a cell's style array with every id 0 (no style of its own)
_EMPTY_SHEET_DATA = b"<sheetData></sheetData>"


class _SheetWriter(WorksheetWriter):
    """openpyxl's sheet writer with the cells left out: :func:`sheet_data` writes them, cached values included."""

    def __init__(self, ws, values: Mapping[str, Any]):
        self.values = values
        self.cells = ""
        super().__init__(ws, out=io.BytesIO())  # in memory, not a temporary file written, read back and removed

    def write_rows(self) -> None:
        self.cells = sheet_data(self.ws, self.values)
        xf = self.xf.send(True)
        with xf.element("sheetData"):
            pass
        self.xf.send(None)


class _PackageWriter(ExcelWriter):
    def __init__(self, wb: Workbook, archive: zipfile.ZipFile, values: Mapping[str, Mapping[str, Any]]):
        super().__init__(wb, archive)
        self.values = values

    def write_worksheet(self, ws) -> None:  # ExcelWriter.write_worksheet (not write-only) with the cells spliced in
        ws._drawing = SpreadsheetDrawing()
        ws._drawing.charts = ws._charts
        ws._drawing.images = ws._images
        writer = _SheetWriter(ws, self.values.get(ws.title, {}))
        writer.write()
        ws._rels = writer._rels
        xml = writer.read()
        if xml.count(_EMPTY_SHEET_DATA) != 1:
            raise RuntimeError(f"sheet {ws.title}: openpyxl wrote no empty <sheetData> to fill")
        self._archive.writestr(ws.path[1:], xml.replace(_EMPTY_SHEET_DATA, writer.cells.encode("utf-8")))
        self.manifest.append(ws)


def save_package(wb: Workbook, values: Mapping[tuple[str, str], Any], out: IO[bytes]) -> None:
    """Save the workbook's package to ``out`` (compressed) with ``values[(sheet, cell)]`` as the cached values of
    formula cells: the package :func:`stored_package` and :func:`xlcalc.workbook.cache.inject` write, in one pass."""
    wb.properties.modified = datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None)
    _PackageWriter(wb, _Archive(out, "w", zipfile.ZIP_DEFLATED, allowZip64=True), by_sheet(values)).save()

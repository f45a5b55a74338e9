"""Write a :class:`~xlcalc.workbook.model.Book` as an .xlsx with openpyxl.

Formula text is rendered from each cell's expression; text is always written as
text (a value starting with ``=``, ``+``, ``-`` or ``@`` never becomes a formula);
input cells are unlocked on protected sheets; validations name the input and
what is allowed.
"""

from __future__ import annotations

import datetime
import io
import zipfile
from copy import copy
from typing import Any

from openpyxl import Workbook
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Alignment, Protection
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break
from openpyxl.writer.excel import ExcelWriter

from ..expr import Expr
from ..inputs import InputSpec, _fmt
from .layout import BAD_FILL, DEFAULT_WIDTH, EDITABLE, GOOD_FILL, STYLES, WIDTHS
from .model import Book, identity
from .rendering import BOOL_FORMAT

SHEET_ORDER = ("Start", "Inputs", "Memory", "Time", "Budget", "FineTuning", "Scenarios", "Sensitivity", "Parallelism",
               "GPUs", "Models", "Recipes", "Prices", "References")
FORMULA_LEAD = ("=", "+", "-", "@")


MONEY_WHOLE = '"$"#,##0;-"$"#,##0'


def write_cell(ws, at: str, value: Any, kind: str, number_format: str | None, subs: Any,
               styled: dict[tuple[str, str | None], Any] | None = None) -> None:
    """Write one cell: its value (formula text, text as text) and the style of its kind and number format.

    ``styled`` remembers the style of each (kind, number format) once set: a later cell of the same pair gets a copy
    of it (the same style ids openpyxl would give it, without setting each attribute again).
    """
    cell = ws[at]
    if isinstance(value, Expr):
        cell.value = value.to_excel(identity, subs)
    elif isinstance(value, str):
        cell.value = value
        cell.data_type = "s"  # never a formula, whatever it starts with
        if value.startswith(FORMULA_LEAD):
            cell.quotePrefix = True
    else:
        cell.value = value
    style_key = (kind, number_format)
    if styled is not None and style_key in styled and not cell.has_style:
        cell._style = copy(styled[style_key])
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


def _numeric_rule(at: str, s: InputSpec) -> str:
    parts = [f"ISNUMBER({at})"]
    for attr, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        bound = getattr(s, attr)
        if bound is not None:
            parts.append(f"{at}{op}{_fmt(bound)}")
    if s.kind == "int":
        parts.append(f"INT({at})={at}")
    return "AND(" + ",".join(parts) + ")"


def add_validation(ws, v: dict[str, Any]) -> None:
    at, label = v["at"], v["label"]
    if "list" in v:
        dv = DataValidation(type="list", formula1=v["list"].lstrip("="), allow_blank=True)
        allowed = v["allowed"]
    else:
        s: InputSpec = v["spec"]
        allowed = s.allowed
        if s.kind == "choice":
            dv = DataValidation(type="list", formula1='"' + ",".join(s.choices) + '"')
        elif s.kind == "bool":
            dv = DataValidation(type="list", formula1='"TRUE,FALSE"')
        else:
            dv = DataValidation(type="custom", formula1=_numeric_rule(at, s))
    dv.error = f"{label} must be {allowed}."[:255]
    dv.errorTitle = "Not allowed"
    dv.prompt = f"{label}: {allowed}"[:255]
    dv.promptTitle = label[:32]
    dv.showErrorMessage = True
    dv.showInputMessage = True
    dv.errorStyle = "stop"
    dv.add(at)
    ws.add_data_validation(dv)


# sheets printed landscape (wide tables); the rest portrait
LANDSCAPE = {"Start", "Inputs", "Memory", "Time", "Budget", "FineTuning", "Scenarios", "Sensitivity", "Parallelism",
             "GPUs", "Models", "Recipes", "Prices", "References"}
ROW_CM, CHAR_CM = 0.53, 0.2  # default row height; width of one character of column width (Calibri 11)


def _chart_extent(ws) -> tuple[int, int]:
    """Last row and column any chart of the sheet covers (approximately, from its anchor and size)."""
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    last_row = last_col = 0
    for chart in ws._charts:
        anchor = chart.anchor if isinstance(chart.anchor, str) else None
        if anchor is None:
            continue
        col, row = coordinate_from_string(anchor)
        c = column_index_from_string(col)
        last_row = max(last_row, row + int(chart.height / ROW_CM) + 1)
        width = 0.0
        while width < chart.width:
            width += (ws.column_dimensions[get_column_letter(c)].width or DEFAULT_WIDTH) * CHAR_CM
            c += 1
        last_col = max(last_col, c - 1)
    return last_row, last_col


def fit_row_heights(ws) -> None:
    """Give rows with wrapped text the height of their lines (not every application does it on load)."""
    from openpyxl.utils.cell import range_boundaries

    spans = {}
    for rng in ws.merged_cells.ranges:
        c1, r1, c2, _ = range_boundaries(str(rng))
        spans[(r1, c1)] = range(c1, c2 + 1)
    lines: dict[int, int] = {}
    for (r, col), c in ws._cells.items():  # the cells written (walking the whole grid would create empty ones)
        if not (isinstance(c.value, str) and c.alignment is not None and c.alignment.wrap_text) \
                or c.value.startswith("="):
            continue
        cols = spans.get((r, col), range(col, col + 1))
        chars = sum((ws.column_dimensions[get_column_letter(k)].width or DEFAULT_WIDTH) for k in cols) * 1.3
        lines[r] = max(lines.get(r, 1), sum(-(-max(len(p), 1) // int(chars)) for p in c.value.split("\n")))
    for r in sorted(lines):
        if lines[r] > 1:
            ws.row_dimensions[r].height = 13 * lines[r] + 2


def page_setup(ws, area: str | None = None) -> None:
    """Print set-up: the used range (and charts) as print area, fit to one page wide, A4, centred."""
    rows, cols = ws.max_row, ws.max_column
    chart_rows, chart_cols = _chart_extent(ws)
    if area is None:
        area = f"A1:{get_column_letter(max(cols, chart_cols))}{max(rows, chart_rows)}"
    ws.print_area = area
    for chart in ws._charts:  # a chart below its table starts a page of its own rather than being cut
        anchor = chart.anchor if isinstance(chart.anchor, str) else ""
        row = int("".join(ch for ch in anchor if ch.isdigit()) or 0)
        if anchor.startswith("A") and row > rows - 1:
            ws.row_breaks.append(Break(id=row - 1))
    ws.page_setup.orientation = "landscape" if ws.title in LANDSCAPE else "portrait"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0  # as many pages tall as it takes
    ws.print_options.horizontalCentered = True
    ws.page_margins.left = ws.page_margins.right = 0.5
    ws.page_margins.top = ws.page_margins.bottom = 0.6
    ws.oddFooter.center.text = "&A \u2014 page &P of &N"
    if ws.freeze_panes and ws.title not in ("Start",):
        header = int("".join(ch for ch in ws.freeze_panes if ch.isdigit()) or 1) - 1
        if header >= 3:
            ws.print_title_rows = f"{header}:{header}"


def to_workbook(book: Book) -> Workbook:
    wb = Workbook()
    wb.remove(wb.active)
    styled: dict[tuple[str, str | None], Any] = {}
    titles = [t for t in SHEET_ORDER if t in book.sheets] + [t for t in book.sheets if t not in SHEET_ORDER]
    for title in titles:
        ws = wb.create_sheet(title)
        for at, c in book.sheets[title].items():
            write_cell(ws, at, c.value, c.kind, c.number_format, c.subs, styled)
        widths: dict[str, float] = {c: DEFAULT_WIDTH for c in "ABCDEFGHIJKL"}
        widths.update(WIDTHS.get(title, {}))
        widths.update(book.widths.get(title, {}))
        for col, width in widths.items():
            ws.column_dimensions[col].width = width
        if title in book.freeze:
            ws.freeze_panes = book.freeze[title]
        ws.protection.sheet = True  # no password: Review > Unprotect Sheet
        ws.protection.formatColumns = False
        ws.protection.formatRows = False
        ws.sheet_view.zoomScale = 100
    for v in book.validations:
        add_validation(wb[v["sheet"]], v)
    for sheet, rng, rule in book.rules:
        ws = wb[sheet]
        if rule == "good_if_true":
            # TRUE/FALSE as words; LibreOffice 7.4 also fails to export a PDF of a boolean cell in
            # General format that carries this rule ("Unspecified Application Error")
            cells = ws[rng] if ":" in rng else ((ws[rng],),)
            for row in cells:
                for cell in row:
                    if cell.number_format in (None, "General"):
                        cell.number_format = BOOL_FORMAT
            ws.conditional_formatting.add(rng, CellIsRule(operator="equal", formula=["TRUE"], fill=GOOD_FILL))
            ws.conditional_formatting.add(rng, CellIsRule(operator="equal", formula=["FALSE"], fill=BAD_FILL))
        elif rule == "bad_unless_ok":  # a check: OK passes, a message fails
            ws.conditional_formatting.add(rng, CellIsRule(operator="notEqual", formula=['"OK"'], fill=BAD_FILL))
        elif rule.startswith("bad_unless:"):  # a master check: its all-clear text, else the message in red
            ok = rule.split(":", 1)[1]
            ws.conditional_formatting.add(rng, CellIsRule(operator="equal", formula=[ok], fill=GOOD_FILL))
            ws.conditional_formatting.add(rng, CellIsRule(operator="notEqual", formula=[ok], fill=BAD_FILL))
        elif rule == "bad_if_negative":
            ws.conditional_formatting.add(rng, CellIsRule(operator="lessThan", formula=["0"], fill=BAD_FILL))
            ws.conditional_formatting.add(rng, CellIsRule(operator="greaterThanOrEqual", formula=["0"], fill=GOOD_FILL))
    for name, (sheet, at) in book.names.items():
        col = "".join(ch for ch in at if ch.isalpha())
        row = at[len(col):]
        wb.defined_names[name] = DefinedName(name, attr_text=f"{sheet}!${col}${row}")
    for sheet, at in book.wrap:
        cell = wb[sheet][at]
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    for sheet, rng in book.merges:
        wb[sheet].merge_cells(rng)
    for ws in wb.worksheets:
        fit_row_heights(ws)
    for (sheet, row), points in book.heights.items():
        wb[sheet].row_dimensions[row].height = points
    for sheet, first, last in book.hidden_columns:  # collapsed under the outline's + button; not printed
        wb[sheet].column_dimensions.group(first, last, hidden=True, outline_level=1)
    for add_chart in book.charts:
        add_chart(wb)
    for ws in wb.worksheets:
        page_setup(ws, book.print_areas.get(ws.title))
    wb.active = 0
    return wb


def stored_package(wb: Workbook) -> bytes:
    """The workbook's package saved in memory without compression (as ``Workbook.save`` writes it otherwise):
    :func:`xlcalc.workbook.cache.inject` adds the cached values and compresses each part once."""
    buf = io.BytesIO()
    wb.properties.modified = datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None)
    ExcelWriter(wb, zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED, allowZip64=True)).save()
    return buf.getvalue()

"""Look of the workbook: colours of inputs vs formulas, fonts, column widths."""

from __future__ import annotations

from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side

INPUT_FILL = PatternFill("solid", start_color="FFF2CC")     # pale yellow: type here
FORMULA_FILL = PatternFill("solid", start_color="E2EFDA")   # pale green: computed, do not type
OUTPUT_FILL = PatternFill("solid", start_color="C6EFCE")    # green: a named result
HEADER_FILL = PatternFill("solid", start_color="1F4E78")
GOOD_FILL = PatternFill("solid", start_color="C6EFCE")
BAD_FILL = PatternFill("solid", start_color="FFC7CE")

THIN = Side(style="thin", color="BFBFBF")
BOX = Border(left=THIN, right=THIN, top=THIN, bottom=THIN)

STYLES = {
    "title": {"font": Font(bold=True, size=14, color="1F4E78")},
    "header": {"font": Font(bold=True, color="FFFFFF"), "fill": HEADER_FILL},
    "group": {"font": Font(bold=True, color="1F4E78"), "alignment": Alignment(vertical="top")},
    "label": {},
    "note": {"font": Font(italic=True, color="595959"), "alignment": Alignment(wrap_text=False)},
    "text": {"alignment": Alignment(wrap_text=True, vertical="top")},
    "input": {"fill": INPUT_FILL, "border": BOX, "protection": Protection(locked=False)},
    "text_input": {"fill": INPUT_FILL, "border": BOX, "protection": Protection(locked=False)},
    "formula": {"fill": FORMULA_FILL, "border": BOX},
    "output": {"fill": OUTPUT_FILL, "border": BOX, "font": Font(bold=True)},
}

# kinds whose cells a user may change (unlocked on protected sheets)
EDITABLE = {"input", "text_input"}

WIDTHS = {  # a sheet's own column widths (others DEFAULT_WIDTH; a catalog sheet sets its own: Book.widths)
    "Start": {"A": 2, "B": 36, "C": 30, "D": 112},  # C:D: a message of 263 characters on two lines
    "Inputs": {"A": 44, "B": 30, "C": 22, "D": 110},  # B: a looked-up input's cell, where a catalog message wraps
    "Memory": {"A": 48, "B": 16, "C": 14, "D": 110},
    "Time": {"A": 48, "B": 18, "C": 14, "D": 60},
    "StepTime": {"A": 56, "B": 18, "C": 16, "D": 110},
    "Budget": {"A": 48, "B": 30, "C": 30, "D": 100},  # B, C: the rent and own columns, where a catalog message wraps
    "FineTuning": {"A": 52, "B": 18, "C": 18, "D": 90},
    "Scenarios": {"A": 40, "B": 16},
    "Sensitivity": {"A": 26},
    "References": {"A": 26, "B": 22, "C": 80, "D": 16, "E": 100, "F": 100},
}
DEFAULT_WIDTH = 14
# characters of running text per unit of column width (a unit is one digit's width; text averages narrower), with
# room to spare: a wrapped cell's lines, for its row's height
CHARS_PER_WIDTH = 1.1


def column_widths(sheet: str, own: dict[str, float]) -> dict[str, float]:
    """A sheet's column widths: DEFAULT_WIDTH, the sheet's WIDTHS, then ``own`` (those its layout set: Book.widths)."""
    return {**{c: DEFAULT_WIDTH for c in "ABCDEFGHIJKL"}, **WIDTHS.get(sheet, {}), **own}

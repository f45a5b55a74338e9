"""Cells that show a message: wrapped, merged across the columns beside them, their rows written tall enough for
the longest message they can show (LibreOffice does not grow a row for a wrapped formula on load), and the longest
layout check message, which the Memory sheet shows whole once (the narrow memory cells point to it).

Its own room: the sheets (xlcalc/workbook/sheets.py and the sheet modules) and the Checks sheet (checks.py) both size
message cells with it.
"""

from __future__ import annotations

import functools

from ..expr.nodes import Var
from ..layout import CONSTRAINTS, LAYOUT_INPUTS
from .layout import column_widths
from .model import Book

# the height of one line of a wrapped message (points)
LINE_POINTS = 15


def message_cell(b: Book, s: str, row: int, first: str, last: str, chars: int) -> None:
    """Cell ``first``+``row`` (merged through ``last``) shows a message of up to ``chars`` characters: wrapped, at
    the top, its row tall enough (never lower than another message's row there); nothing for no message (0)."""
    if chars <= 0:
        return
    widths = column_widths(s, b.widths.get(s, {}))
    width = sum(widths[chr(c)] for c in range(ord(first), ord(last) + 1))
    b.messages.add((s, f"{first}{row}"))
    if last != first:
        b.merges.append((s, f"{first}{row}:{last}{row}"))
    # the lines of the message, at one character per unit of width (a unit is a digit's width: running text averages
    # narrower, so this over-counts; a wrapped note's rows are counted at CHARS_PER_WIDTH)
    b.heights[(s, row)] = max(LINE_POINTS * -(-chars // int(width)), b.heights.get((s, row), 0))


# The layout check's message (Layout_Check) shows whole once, in the Memory sheet's layout check row: wrapped across
# B:D, the row as tall as the longest message needs. The memory cells of the Memory and FineTuning sheets (14 to 18
# characters wide) show LAYOUT_POINTER for a broken layout instead: the message would be clipped in print.
LAYOUT_ROW = 4
LAYOUT_POINTER = f"see Memory!B{LAYOUT_ROW}"
# The failing checks of the inputs a result reads (a value an input's check refuses; a catalog look-up's message: an
# id typed wrong, a figure the catalog leaves unpublished) show whole in Start's input check (the master check: the
# first failing input's check, wrapped across C:D in a row as tall as the longest message needs). The narrow result
# cells show CHECK_POINTER instead, and so does a looked-up input's cell on Inputs holding such a message (its number
# format's text section: rendering.pointer_format).
INPUT_CHECK_CELL = "Start!C3"
CHECK_POINTER = f"see {INPUT_CHECK_CELL}"
# A Scenarios column's results (44 characters wide) name the cell a failing input check blames instead, "Scenarios!C27
# refused: see Checks" (the Checks sheet prints that cell's line whole), and CHECK_POINTER for a framework look-up's
# message (the column's framework inputs follow the Inputs sheet's choice, which Start's input check names).
CHECK_CELL_POINTER = "see the cell's check"
CHECK_REFUSED = "refused: see Checks"
# A value shown in a check's message: at most this many characters (a longer text, such as a look-up's message in a
# cell that follows the Inputs sheet, ends in "..."), so that a check's line prints whole on the Checks sheet
VALUE_CHARS = 24
NUMBER_CHARS = 12  # a number in the message: an input up to 10,000,000, or a ratio rounded to 2 decimals


@functools.cache
def longest_layout_message() -> int:
    """An upper bound on the characters of the layout check's message (xlcalc.layout.layout_message): the words of
    the longest constraint's message, each number in it counted at NUMBER_CHARS."""
    from ..expr.nodes import is_expr

    v = {k: Var(k) for k in LAYOUT_INPUTS}
    return max((sum(NUMBER_CHARS if is_expr(p) else len(str(p))
                    for p in (c.name, " = ", Var(c.name), " is not allowed: ", c.name, " must be ", *c.allowed(v), " (",
                              *c.detail(v), ")"))
                for c in CONSTRAINTS), default=0)

"""Budget's chart-data columns: the one place a cell of the workbook may hold #N/A.

A chart plots a text cell as 0 and #N/A as no point, so the own vs rent chart reads a copy of its table in which a
message is #N/A (the table shows the message; the copy sits in hidden columns beside it, never printed). Tests that
scan the workbook for error values leave these cells out, and check them on their own
(test_workbook_libreoffice.py).
"""

from __future__ import annotations

from xlcalc.workbook.budget_sheet import CHART_DATA_COLS, CHART_DATA_HEADING, OVER_TIME_MONTHS


def chart_data_rows(wb) -> range:
    """The block's data rows (the own vs rent table's rows), found by its heading on the Budget sheet."""
    ws = wb["Budget"]
    col = CHART_DATA_COLS[0]
    head = next(r for r in range(1, ws.max_row + 1) if ws[f"{col}{r}"].value == CHART_DATA_HEADING)
    return range(head + 2, head + 2 + len(OVER_TIME_MONTHS))


def chart_data_cells(wb) -> set[str]:
    """``Budget!L50``-style names of the block's cells."""
    return {f"Budget!{col}{r}" for r in chart_data_rows(wb) for col in CHART_DATA_COLS}

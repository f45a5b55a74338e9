"""Edits as a user's script makes them: values written with openpyxl into the cells a workbook's defined names
point to, each set of edits saved as a file of its own.

The workbook is parsed once per :class:`Edits` (openpyxl's load is about half the cost of an edit: over a second
per planning workbook on a 2-core machine); each set of edits is written, saved, and put back (value and type
of every cell it touched), so every saved file holds its own edits on the workbook as built, as if loaded afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import openpyxl


def named_cell(wb: Any, name: str) -> Any:
    """The cell a defined name points to, or the cell at a place given as ``Sheet!A1``."""
    if "!" in name:
        sheet, at = name.split("!")
        return wb[sheet][at.replace("$", "")]
    (sheet, at), = wb.defined_names[name].destinations
    return wb[sheet][at.replace("$", "")]


def validation_of(wb: Any, name: str) -> Any:
    """The data validation (dropdown) on the cell a defined name points to."""
    (sheet, at), = wb.defined_names[name].destinations
    for dv in wb[sheet].data_validations.dataValidation:
        if any(rng.coord == at.replace("$", "") for rng in dv.sqref.ranges):
            return dv
    raise AssertionError(f"no validation on {name}")


def list_cells(wb: Any, formula1: str) -> list[Any]:
    """The values of the one-column range a list validation's ``Sheet!$A$1:$A$9`` names."""
    sheet, rng = formula1.split("!")
    return [row[0].value for row in wb[sheet][rng.replace("$", "")]]


class Edits:
    """The workbook at ``src``, loaded once by openpyxl, to save edited copies of."""

    def __init__(self, src: Path) -> None:
        self.wb = openpyxl.load_workbook(src)

    def save(self, dst: Path, values: Mapping[str, Any], *, text: bool = False) -> Path:
        """Write ``values`` (defined name or ``Sheet!A1`` -> value) into their cells, save the workbook as ``dst``, put the cells
        back: the file is the one a fresh load, these edits and a save give. ``text``: a string is stored as text
        (type ``s``), even one that starts with ``=``."""
        cells = [(named_cell(self.wb, name), value) for name, value in values.items()]
        before = [(cell, cell._value, cell.data_type, cell.number_format) for cell, _ in cells]
        try:
            for cell, value in cells:
                cell.value = value
                if text and isinstance(value, str):
                    cell.data_type = "s"
            self.wb.save(dst)
        finally:
            for cell, value, data_type, number_format in reversed(before):
                cell._value, cell.data_type = value, data_type
                if cell.number_format != number_format:
                    cell.number_format = number_format
            for ws in self.wb.worksheets:  # what a save leaves behind: the sheets' column outline level, which
                ws.column_dimensions.max_outline = None  # the next save would write (a fresh load has none)
        return dst

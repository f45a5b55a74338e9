"""Cached values for formula cells, so a workbook shows numbers before any recalculation.

openpyxl writes a formula cell as ``<c r="B5"><f>...</f><v /></c>`` with no value. After saving, each sheet's XML is
rewritten so that every formula cell carries the value the engine computed for it (``<v>76.08...</v>``, ``t="b"`` for
TRUE/FALSE, ``t="str"`` for text). Spreadsheet applications recalculate on open anyway; email previews, pandas and
``openpyxl(data_only=True)`` read these values.
"""

from __future__ import annotations

import math
import posixpath
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any
from xml.sax.saxutils import escape

from defusedxml import ElementTree as SafeET

from .model import ErrorValue

_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
       "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
       "rel": "http://schemas.openxmlformats.org/package/2006/relationships"}
_CELL = re.compile(r'<c r="(?P<r>[A-Z]+[0-9]+)"(?P<attrs>[^>]*)><f>(?P<f>[^<]*)</f>(?:<v\s*/>|<v>[^<]*</v>)?</c>')
_TYPE = re.compile(r'\s+t="[^"]*"')


def sheet_paths(zf: zipfile.ZipFile) -> dict[str, str]:
    """Sheet title -> part name inside the package."""
    wb = SafeET.fromstring(zf.read("xl/workbook.xml"))
    rels = SafeET.fromstring(zf.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target") for r in rels.findall("rel:Relationship", _NS)}
    out = {}
    for sh in wb.findall("m:sheets/m:sheet", _NS):
        target = targets[sh.get(f"{{{_NS['r']}}}id")]
        part = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
        out[sh.get("name")] = part
    return out


def _value_xml(value: Any) -> tuple[str, str] | None:
    """(type attribute, value text) for a cached value; None when no value can be cached."""
    if isinstance(value, bool):
        return ' t="b"', "1" if value else "0"
    if isinstance(value, (int, float)):
        return ("", str(int(value)) if isinstance(value, int) else repr(float(value))) if math.isfinite(value) else None
    if isinstance(value, str):  # an error value (#N/A) as an error, any other text as a formula's string
        return ' t="e"' if isinstance(value, ErrorValue) else ' t="str"', escape(value)
    return None


def by_sheet(values: Mapping[tuple[str, str], Any]) -> dict[str, dict[str, Any]]:
    """``values[(sheet, cell)]`` as ``{sheet: {cell: value}}``."""
    out: dict[str, dict[str, Any]] = {}
    for (sheet, at), v in values.items():
        out.setdefault(sheet, {})[at] = v
    return out


def inject(path: str | Path | IO[bytes], values: Mapping[tuple[str, str], Any], out: IO[bytes] | None = None) -> int:
    """Write ``values[(sheet, cell)]`` as the cached value of those formula cells; return how many.

    ``path`` is the saved workbook (a file name or a binary file); the result goes to ``out``, a binary
    file, or, without one, replaces the file ``path`` atomically (:func:`xlcalc.atomic.write`).
    """
    if out is None:
        from ..atomic import write

        if not isinstance(path, (str, Path)):
            raise TypeError("inject() needs out= when path is a file object")
        with write(path) as f:
            return inject(path, values, f)
    count = 0
    with zipfile.ZipFile(path) as zin:
        parts = sheet_paths(zin)
        wanted = {parts[s]: cells for s, cells in by_sheet(values).items() if s in parts}
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                if cells := wanted.get(info.filename):
                    def fill(m: re.Match, cells: dict = cells) -> str:  # called right away, in this iteration
                        nonlocal count
                        r = m["r"]
                        xml = _value_xml(cells[r]) if r in cells else None
                        if xml is None:  # no value (or none that can be cached): the cell as it was
                            return m.group(0)
                        count += 1
                        return f'<c r="{r}"{_TYPE.sub("", m["attrs"])}{xml[0]}><f>{m["f"]}</f><v>{xml[1]}</v></c>'

                    data = _CELL.sub(fill, data.decode("utf-8")).encode("utf-8")
                info.compress_type = zipfile.ZIP_DEFLATED
                zout.writestr(info, data)
    return count

"""Plain-text tables and number formatting for the command line."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..price_text import money, price_line

__all__ = ["money", "price_line", "number", "table", "cli_value", "dump_json"]


def number(value: Any, unit: str = "") -> str:
    """A value for a table: money as money, fractions as per cent, counts with separators, no float noise."""
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v):
            return "-" if math.isnan(v) else str(value)
        if unit.startswith("USD"):
            return money(v)
        if unit == "fraction":
            return f"{v:.1%}" if abs(v) < 10 else f"{v:,.0%}"
        if v != 0 and (abs(v) >= 1e9 or abs(v) < 1e-3):
            return f"{v:.3e}"
        if float(round(v, 9)).is_integer() or abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:,.2f}" if abs(v) >= 1 else f"{v:.4g}"
    return str(value)


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str], align: str = "") -> str:
    """A header row and its rule over the rows: left-aligned first column (and those ``align`` marks "l"), the
    others right-aligned."""
    cells = [[str(c) for c in r] for r in (headers, *rows)]
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(max(len(r) for r in cells))]
    lines = ["  ".join(c.ljust(widths[i]) if i == 0 or align[i:i + 1] == "l" else c.rjust(widths[i])
                       for i, c in enumerate(r)).rstrip() for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str)


def print_rows(as_json: bool, data: dict[str, Any], heading: Sequence[str], rows: Sequence[Any]) -> int:
    """Print money rows (label, value, unit, worksheet function): ``{**data, "rows": [...]}`` as JSON, else the
    heading's lines, a blank line and the rows' table. The command's exit status: 0."""
    if as_json:
        print(dump_json({**data, "rows": [r.as_dict() for r in rows]}))
        return 0
    print("\n".join([*heading, ""]))
    print(table([(r.label, number(r.value, r.unit), r.unit, r.udf) for r in rows],
                headers=("", "value", "unit", "worksheet function"), align="lrll"))
    return 0


def cli_value(text: str | None):
    """A command-line string as the number it spells, else the text itself (validation happens later)."""
    if text is None or not isinstance(text, str):
        return text  # None, or a default that is already a value
    try:
        f = float(text)
    except ValueError:
        return text
    return int(f) if f.is_integer() and "." not in text and "e" not in text.lower() else f

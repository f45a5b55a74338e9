"""Plain-text tables and number formatting for the command line."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import InputError


def money(value: float, cents: bool | None = None) -> str:
    """Dollars as a person writes them: $48,966,413, -$48,966,413, $4.92 (cents below $100)."""
    v = float(value)
    if not math.isfinite(v):
        return str(value)
    a = abs(v)
    if cents is None:
        cents = a < 100 and a != 0
    text = f"{a:,.2f}" if cents else f"{a:,.0f}"
    if cents and round(a, 3) != round(a, 2):  # a rate such as $4.916/GPU-hour keeps its third decimal
        text = f"{a:,.3f}"
    if cents and a < 0.01 and a != 0:
        text = f"{a:.4g}"
    sign = "-" if v < 0 and any(c in "123456789" for c in text) else ""
    return f"{sign}${text}"


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


def price_line(gpu: str | None, typed: float | None, tier: str | None = None) -> str:
    """"Price: ..." — the rental price a result used, with its tier, catalog row and date."""
    from .. import catalog

    if typed is not None:
        return f"Price: {money(typed, cents=True)}/GPU-hour, typed (no tier)"
    if gpu is None:
        return "Price: none (no GPU and no --usd-per-gpu-hour)"
    try:
        row = catalog.rental_price(gpu, tier)
    except InputError as exc:  # no rate in the catalog: say so instead of a number
        if exc.name == "usd_per_gpu_hour":
            gid = catalog.get_gpu(gpu).id
            tiers = [p.tier for p in catalog.prices() if p.gpu == gid and p.tier]
            if tiers:
                return f"Price: none — the price catalog has no default rental rate for {gid}; " \
                       f"give --price-tier ({', '.join(tiers)}) or --usd-per-gpu-hour for costs"
            return f"Price: none — the price catalog has no rental rate for {gid}; " \
                   "give --usd-per-gpu-hour for costs"
        return f"Price: none ({exc})"
    assert row.usd_per_gpu_hour is not None  # rental_price returns a row with a rate
    return (f"Price: {money(row.usd_per_gpu_hour, cents=True)}/GPU-hour, {row.tier} tier, "
            f"price catalog {row.id} ({row.date or 'undated'})")


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str] | None = None, align: str = "") -> str:
    """Left-aligned first column, right-aligned numbers."""
    rows = [[str(c) for c in r] for r in rows]
    if headers:
        rows.insert(0, [str(h) for h in headers])
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(len(r) for r in rows))]
    out = []
    for n, r in enumerate(rows):
        cells = []
        for i, c in enumerate(r):
            left = i == 0 or (align and i < len(align) and align[i] == "l")
            cells.append(c.ljust(widths[i]) if left else c.rjust(widths[i]))
        out.append("  ".join(cells).rstrip())
        if headers and n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str)


def cli_value(text: str | None):
    """A command-line string as the number it spells, else the text itself (validation happens later)."""
    if text is None or not isinstance(text, str):
        return text  # None, or a default that is already a value
    try:
        f = float(text)
    except ValueError:
        return text
    return int(f) if f.is_integer() and "." not in text and "e" not in text.lower() else f

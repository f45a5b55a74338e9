"""Money and rental prices as a person reads them: the same words on every face (CLI, worksheet functions)."""

from __future__ import annotations

import math

from .errors import InputError

__all__ = ["money", "price_line"]


def money(value: float, cents: bool | None = None) -> str:
    """Dollars as a person writes them: $48,966,413, -$48,966,413, $4.92 (cents below $100)."""
    v = float(value)
    if not math.isfinite(v):
        return str(value)
    a = abs(v)
    cents = (a < 100 and a != 0) if cents is None else cents
    text = f"{a:,.2f}" if cents else f"{a:,.0f}"
    if cents and round(a, 3) != round(a, 2):  # a rate such as $4.916/GPU-hour keeps its third decimal
        text = f"{a:,.3f}"
    if cents and a < 0.01 and a != 0:
        text = f"{a:.4g}"
    sign = "-" if v < 0 and any(c in "123456789" for c in text) else ""
    return f"{sign}${text}"


def price_line(gpu: str | None, typed: float | None, tier: str | None = None) -> str:
    """"Price: ..." — the rental price a result used, with its tier, catalog row and date."""
    from . import catalog

    if typed is not None:
        return f"Price: {money(typed, cents=True)}/GPU-hour, typed (no tier)"
    if gpu is None:
        return "Price: none (no GPU and no --usd-per-gpu-hour)"
    try:
        row = catalog.rental_price(gpu, tier)
    except InputError as exc:  # no rate in the catalog: say so instead of a number
        if exc.name == "usd_per_gpu_hour":
            gid = catalog.get_gpu(gpu).id
            if tiers := [p.tier for p in catalog.prices() if p.gpu == gid and p.tier]:
                return f"Price: none — the price catalog has no default rental rate for {gid}; " \
                       f"give --price-tier ({', '.join(tiers)}) or --usd-per-gpu-hour for costs"
            return f"Price: none — the price catalog has no rental rate for {gid}; " \
                   "give --usd-per-gpu-hour for costs"
        return f"Price: none ({exc})"
    assert row.usd_per_gpu_hour is not None  # rental_price returns a row with a rate
    return (f"Price: {money(row.usd_per_gpu_hour, cents=True)}/GPU-hour, {row.tier} tier, "
            f"price catalog {row.id} ({row.date or 'undated'})")

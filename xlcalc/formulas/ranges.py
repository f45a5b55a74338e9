"""Low/base/high ranges: an input moved by a multiplier, and the change in cost it causes (a tornado)."""

from __future__ import annotations

from ..expr.functions import min_
from ..registry import REGISTRY, formula


@formula(udf="RANGE_VALUE", unit="unit of the input", category="ranges",
         equation="base value * multiplier", source="issue 12 (low/base/high ranges)")
def range_value(base_value, range_factor):
    """An input at the low or high end of its range."""
    return base_value * range_factor


@formula(udf="RANGE_FRACTION", unit="fraction", category="ranges",
         equation="MIN(base value * multiplier, 1)", source="issue 12 (low/base/high ranges; a share stays <= 1)")
def range_fraction(base_value, range_factor):
    """A share (such as MFU) at the low or high end of its range, at most 1."""
    return min_(base_value * range_factor, 1)


@formula(udf="COST_CHANGE_USD", unit="USD", category="ranges",
         equation="cost - base cost", source="issue 12 (tornado: the swing of each input)")
def cost_change_usd(total_usd, base_usd):
    """How much a case costs more (or, negative, less) than the base case."""
    return total_usd - base_usd


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

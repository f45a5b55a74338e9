"""The range of a plan's MFU, days, GPU-hours and cost, from the validation's held-out errors.

The percentiles are data: ``xlcalc/data/mfu_interval.json``, written by ``scripts/make_validation.py`` from the
leave-one-source-out errors of ``xlcalc.validation`` (docs/validation.md, "Range of a prediction"), never typed
here. Measured MFU lies in predicted x exp(-q90) ... predicted x exp(-q10); days, GPU-hours and cost scale as
1 / MFU (same tokens, same GPUs), so each bound is the point value x MFU / the MFU bound.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional, cast

from pydantic import BaseModel, ConfigDict, Field

from .stacks import DEFAULT_STACK, PLANNER

INTERVAL_JSON = Path(__file__).resolve().parent.parent / "data" / "mfu_interval.json"


class PredictionRange(BaseModel):
    """The range around one plan's prediction (PlanResult.interval)."""

    model_config = ConfigDict(frozen=True)

    level: float = Field(description="share of held-out runs the range is built to cover, e.g. 0.8")
    mfu_low: float
    mfu_high: float
    days_low: float
    days_high: float
    gpu_hours_low: float
    gpu_hours_high: float
    cost_low_usd: Optional[float] = None
    cost_high_usd: Optional[float] = None
    out_of_sample_coverage: float = Field(description="share of held-out runs inside the range, each source's runs "
                                                      "against percentiles of the other sources' errors")
    basis: str = Field(description="where the range comes from")


@lru_cache(maxsize=1)
def interval_data() -> dict[str, Any]:
    """The shipped percentiles (scripts/make_validation.py writes them)."""
    return cast(dict[str, Any], json.loads(INTERVAL_JSON.read_text(encoding="utf-8")))


def mfu_range_factors(d: dict[str, Any] | None = None) -> tuple[float, float]:
    """(low, high) multipliers of a predicted MFU at the ends of its range: exp(-q90) and exp(-q10) of the held-out
    log errors ``d`` (default: the stack profiles', the range of a plan with its stack named)."""
    d = d if d is not None else interval_data()
    return math.exp(-d["q90_log_error"]), math.exp(-d["q10_log_error"])


def prediction_range(mfu: float, days: float, gpu_hours: float, cost_usd: Optional[float],
                     stack: Optional[str] = "named", named: bool = True) -> PredictionRange:
    """The range of one prediction: MFU bounds from the percentiles, the rest scaled as 1 / MFU. ``named`` False (no
    stack named, the default stack assumed): the range of the errors such plans make on published runs of every
    stack (``without_stack``); ``stack`` 'planner' (or None): that of plans at the planner's own settings
    (``planner``); otherwise the leave-one-source-out range of the stack profiles."""
    top = interval_data()
    key = "planner" if stack in (None, PLANNER) else None if named else "without_stack"
    d = top if key is None or not top.get(key) else {**top, **top[key]}
    mfu_low, mfu_high = (mfu * x for x in mfu_range_factors(d))
    what = ("plans without a stack named (the default stack, " + DEFAULT_STACK + ")" if key == "without_stack"
            else "plans at the planner's own settings")
    return PredictionRange(
        level=d["level"], mfu_low=mfu_low, mfu_high=mfu_high,
        days_low=days * mfu / mfu_high, days_high=days * mfu / mfu_low,
        gpu_hours_low=gpu_hours * mfu / mfu_high, gpu_hours_high=gpu_hours * mfu / mfu_low,
        cost_low_usd=None if cost_usd is None else cost_usd * mfu / mfu_high,
        cost_high_usd=None if cost_usd is None else cost_usd * mfu / mfu_low,
        out_of_sample_coverage=d["out_of_sample_coverage"],
        basis=(f"the validation's held-out errors ({d['runs']} published runs, {d['sources']} sources; "
               "docs/validation.md)" if d is top else
               f"the errors of {what} on {d['runs']} published runs ({d['sources']} sources; "
               f"median {math.exp(d['median_log_error']) - 1:+.0%}, predicted faster than measured where positive; "
               "docs/validation.md)"))


def range_note(matmul_efficiency_given: bool, stack: Optional[str], named: bool = True) -> str:
    """Whether the validation's range applies to a plan with these settings, in a sentence."""
    if matmul_efficiency_given:
        return ("no range: the matmul efficiency was given (--matmul-efficiency or a calibration --profile); the "
                "validation measured the error of the efficiencies fitted to other sources' runs, not of this one")
    if stack in (None, PLANNER):
        return ("stack planner: the range is that of plans at the planner's own settings (no profile's facts, the "
                "catalog's efficiency) on published runs")
    if named:
        return f"range measured leave-one-source-out with the stack profiles' fitted efficiencies (stack {stack})"
    return (f"no stack named: the default stack {stack} was assumed, and the range is that of such plans on published "
            "runs of every stack; --stack ID plans with the profile of yours and its narrower range")

"""BUDGET_PLAN: what a budget buys, spilled as [label, value, unit] rows (issue 12, item 7)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "udfs"))

import xlcalc_udfs as u  # noqa: E402
from xlcalc.errors import InputError  # noqa: E402


def test_budget_plan_spills_gpus_hours_model_and_tokens():
    rows = u.BUDGET_PLAN([[1e6]], [[2]], [[312]], [[0.4]], [[90]])
    values = {unit: value for _, value, unit in rows}
    # independent arithmetic: $1M / $2 = 500,000 GPU-hours; over 90 days = 231.5 GPUs (whole GPUs: 231);
    # C = hours x 3600 x 312e12 x 0.4; compute-optimal N = sqrt(C / 120) at D = 20N (C = 6ND)
    c = 500_000 * 3600 * 312e12 * 0.4
    assert values["GPU-hours"] == pytest.approx(500_000)
    assert values["GPUs"] == math.floor(500_000 / (90 * 24))
    assert values["billion parameters"] == pytest.approx(math.sqrt(c / 120) / 1e9)
    assert values["trillion tokens"] == pytest.approx(20 * math.sqrt(c / 120) / 1e12)


def test_budget_plan_names_every_missing_input_and_bad_values():
    with pytest.raises(InputError) as info:
        u.BUDGET_PLAN([[None]], [[2]], [[312]], [[""]], [[90]])
    assert "budget_usd" in str(info.value) and "mfu" in str(info.value)
    with pytest.raises(InputError) as info:
        u.BUDGET_PLAN([[-5]], [[2]], [[312]], [[0.4]], [[90]])
    assert info.value.name == "budget_usd"
    with pytest.raises(InputError):
        u.BUDGET_PLAN([[1e6, 2e6]], [[2]], [[312]], [[0.4]], [[90]])  # a range where one cell is needed

"""plan with a pinned layout also searches without the pins and says, term by term, why its own plan is faster
(xlcalc.planner.compare)."""

from __future__ import annotations

import json

import pytest

from xlcalc.cli import main
from xlcalc.planner import plan
from xlcalc.planner.compare import STEP_TERMS, compare_plans

RUN = dict(gpu="h100-sxm", n_gpus=256, global_batch_tokens=4 * 2**20, tokens_t=2, top=1)


@pytest.fixture(scope="module")
def pinned():
    return plan("llama2-70b", tp=8, pp=4, recompute="full", compare_unpinned=True, **RUN)


@pytest.fixture(scope="module")
def free():
    return plan("llama2-70b", **RUN)


def test_the_step_is_the_sum_of_its_terms(pinned, free):
    for p in (pinned.plans[0], free.plans[0]):
        assert sum(getattr(p, f) for _, f in STEP_TERMS) == pytest.approx(p.step_s, rel=1e-9)


def test_the_unpinned_plan_is_the_plan_without_pins(pinned, free):
    u = pinned.unpinned
    assert u is not None
    assert u.layout == free.plans[0].label() and u.step_s == free.plans[0].step_s and u.days == free.plans[0].days
    assert u.pinned_step_s == pinned.plans[0].step_s
    assert u.step_saving == pytest.approx(1 - free.plans[0].step_s / pinned.plans[0].step_s)
    assert u.step_saving > 0.15  # TP 8 with full recompute against the planner's choice: far slower


def test_the_terms_explain_the_difference_largest_first(pinned):
    u = pinned.unpinned
    deltas = [abs(c.unpinned_s - c.pinned_s) for c in u.terms]
    assert deltas == sorted(deltas, reverse=True)
    assert all(d >= 0.01 * u.pinned_step_s for d in deltas)
    # every term left out is under 1% of the step, so the listed ones account for the step difference up to that
    listed = sum(c.pinned_s - c.unpinned_s for c in u.terms)
    assert listed == pytest.approx(u.pinned_step_s - u.step_s, abs=0.01 * u.pinned_step_s * len(STEP_TERMS))
    names = {c.term for c in u.terms}
    assert "recompute" in names  # full recompute pinned, none chosen
    assert "TP communication" in names  # TP 8 pinned, less chosen


def test_no_pins_no_comparison(free):
    assert plan("llama2-70b", compare_unpinned=True, **RUN).unpinned is None
    assert free.unpinned is None


def test_compare_plans_of_a_plan_with_itself_says_no_gain(free):
    c = compare_plans(free.plans[0], free.plans[0])
    assert c.step_saving == 0 and c.terms == []


def test_cli_says_why_and_json_carries_it(capsys):
    args = ["plan", "--model", "llama2-70b", "--gpu", "H100", "--n-gpus", "256", "--global-batch-tokens", "4194304",
            "--tokens-t", "2", "--top", "1", "--tp", "8", "--pp", "4", "--recompute", "full"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Without the layout flags given, the best plan is" in out and "Where the step differs: " in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["unpinned"]["step_saving"] > 0.15 and data["unpinned"]["terms"]

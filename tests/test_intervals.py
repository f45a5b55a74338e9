"""The range the planner gives with each prediction (xlcalc/data/mfu_interval.json, docs/validation.md).

The errors behind it are the validation's (tests/test_validation_runs.py checks the shipped file against a fresh
validation, as scripts/make_validation.py --check does); here the percentiles and the out-of-sample coverage are
recomputed from those errors independently of xlcalc.validation.intervals, and the plan's range from the
percentiles.
"""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest

from conftest import ROOT
from xlcalc.cli import main
from xlcalc.planner import Settings, plan

DATA = json.loads((ROOT / "xlcalc" / "data" / "mfu_interval.json").read_text(encoding="utf-8"))
DOC = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
ERRORS = DATA["log_errors"]


def deciles(xs: list[float]) -> tuple[float, float]:
    d = statistics.quantiles(xs, n=10, method="inclusive")
    return d[0], d[8]


def test_the_file_holds_every_scored_run_once():
    assert DATA["level"] == 0.8
    assert len(ERRORS) == DATA["runs"] == len({r["id"] for r in ERRORS})
    assert DATA["sources"] == len({r["source_id"] for r in ERRORS})
    assert f"Leave-one-source-out over {DATA['runs']} published measured runs from {DATA['sources']} sources" in DOC


def test_shipped_percentiles_are_those_of_the_errors():
    q10, q90 = deciles([r["log_error"] for r in ERRORS])
    assert DATA["q10_log_error"] == pytest.approx(q10, abs=1e-12)
    assert DATA["q90_log_error"] == pytest.approx(q90, abs=1e-12)
    assert q10 < 0 < q90


def _nested() -> tuple[int, dict[str, list[int]]]:
    """Each source's runs against the 10th-90th percentile of the other sources' errors."""
    covered, by_source = 0, {}
    for src in dict.fromkeys(r["source_id"] for r in ERRORS):
        lo, hi = deciles([r["log_error"] for r in ERRORS if r["source_id"] != src])
        mine = [r["log_error"] for r in ERRORS if r["source_id"] == src]
        inside = sum(lo <= e <= hi for e in mine)
        by_source[src] = [inside, len(mine)]
        covered += inside
    return covered, by_source


def test_out_of_sample_coverage_in_the_doc_is_the_nested_procedures():
    covered, by_source = _nested()
    n = len(ERRORS)
    assert DATA["out_of_sample_coverage"] == pytest.approx(covered / n, abs=1e-12)
    assert f"Overall: {covered} of {n} ({covered / n:.0%}) of held-out runs inside the 80% range" in DOC
    section = DOC[DOC.index("## Range of a prediction"):DOC.index("## Per source")]
    for src, (inside, runs) in by_source.items():
        assert re.search(rf"^\| {re.escape(src)} \| {inside} of {runs} \(", section, re.M), src


def test_the_pooled_range_covers_the_pooled_runs_it_was_built_from():
    # in sample, by construction of the deciles: about 80% (ties aside)
    inside = sum(DATA["q10_log_error"] <= r["log_error"] <= DATA["q90_log_error"] for r in ERRORS)
    assert 0.78 <= inside / len(ERRORS) <= 0.82


@pytest.fixture(scope="module", params=[None, "megatron", "planner"],
                ids=["no stack", "stack megatron", "stack planner"])
def named(request):
    settings = Settings() if request.param is None else Settings(stack=request.param)
    return request.param, plan("llama2-70b", gpu="h100-sxm", n_gpus=256, seq_len=4096,
                               global_batch_tokens=4 * 2**20, top=1, settings=settings)


def test_plan_range_is_the_point_scaled_by_the_mfu_bounds(named):
    stack, result = named
    p, r = result.plans[0], result.interval
    assert r is not None and r.level == 0.8
    # a named profile: the leave-one-source-out percentiles; no stack (the default assumed): those of plans made
    # without one; the planner's own settings: those of plans at them
    d = {None: {**DATA, **DATA["without_stack"]}, "planner": {**DATA, **DATA["planner"]}}.get(stack, DATA)
    mfu_high = p.mfu / math.exp(d["q10_log_error"])   # measured = predicted / exp(log error)
    mfu_low = p.mfu / math.exp(d["q90_log_error"])
    assert r.out_of_sample_coverage == d["out_of_sample_coverage"]
    assert r.mfu_low == pytest.approx(mfu_low, rel=1e-12) and r.mfu_high == pytest.approx(mfu_high, rel=1e-12)
    assert r.days_low == pytest.approx(p.days * p.mfu / mfu_high, rel=1e-12)
    assert r.days_high == pytest.approx(p.days * p.mfu / mfu_low, rel=1e-12)
    assert r.gpu_hours_low == pytest.approx(p.gpu_hours * p.mfu / mfu_high, rel=1e-12)
    assert r.gpu_hours_high == pytest.approx(p.gpu_hours * p.mfu / mfu_low, rel=1e-12)
    assert p.cost_usd is not None
    assert r.cost_low_usd == pytest.approx(p.cost_usd * p.mfu / mfu_high, rel=1e-12)
    assert r.cost_high_usd == pytest.approx(p.cost_usd * p.mfu / mfu_low, rel=1e-12)
    for lo, point, hi in ((r.mfu_low, p.mfu, r.mfu_high), (r.days_low, p.days, r.days_high),
                          (r.gpu_hours_low, p.gpu_hours, r.gpu_hours_high), (r.cost_low_usd, p.cost_usd, r.cost_high_usd)):
        assert lo <= point <= hi


def test_a_given_matmul_efficiency_gets_no_range_and_says_why():
    res = plan("llama2-70b", gpu="h100-sxm", n_gpus=256, seq_len=4096, global_batch_tokens=4 * 2**20, top=1,
               settings=Settings(matmul_efficiency=0.7))
    assert res.plans and res.interval is None
    assert res.interval_note.startswith("no range: the matmul efficiency was given")


def test_a_named_stack_gets_the_range_measured_with_the_stack_profiles():
    res = plan("llama2-70b", gpu="h100-sxm", n_gpus=256, seq_len=4096, global_batch_tokens=4 * 2**20, top=1,
               settings=Settings(stack="megatron"))
    assert res.interval is not None and "stack megatron" in res.interval_note


ARGS = ["plan", "--model", "llama2-70b", "--gpu", "h100-sxm", "--n-gpus", "256", "--seq-len", "4096",
        "--global-batch-tokens", "4194304", "--top", "1"]


def test_json_carries_the_range(capsys):
    assert main([*ARGS, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    r, p = out["interval"], out["plans"][0]
    for k in ("level", "mfu_low", "mfu_high", "days_low", "days_high", "gpu_hours_low", "gpu_hours_high",
              "cost_low_usd", "cost_high_usd", "out_of_sample_coverage", "basis"):
        assert k in r, k
    assert r["days_low"] <= p["days"] <= r["days_high"]
    assert out["interval_note"]


def test_text_prints_the_best_plans_range(capsys):
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("best plan: days "))
    days, lo, hi = (float(x.replace(",", "")) for x in re.match(
        r"best plan: days ([\d.,]+) \(80% range ([\d.,]+)–([\d.,]+)\)", line).groups())
    assert lo <= days <= hi
    assert "held-out" in line


def test_a_plan_without_a_stack_says_its_range_is_that_of_such_plans():
    w = DATA["without_stack"]
    assert w["runs"] == DATA["runs"] and w["q10_log_error"] < w["median_log_error"] < w["q90_log_error"]
    assert 0.75 <= w["out_of_sample_coverage"] <= 0.85  # the coverage target, measured out of sample
    res = plan("llama2-70b", gpu="h100-sxm", n_gpus=256, seq_len=4096, global_batch_tokens=4 * 2**20, top=1)
    assert res.interval is not None and "plans without a stack" in res.interval.basis
    assert res.interval_note.startswith("no stack named")

"""Leave-one-source-out validation on the published throughput runs (xlcalc.validation, scripts/make_validation.py)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math

import pytest

from conftest import ROOT
from xlcalc import validation as V
from xlcalc.validation import intervals as I


def _script():
    spec = importlib.util.spec_from_file_location("make_validation", ROOT / "scripts" / "make_validation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def records():
    return V.load_runs()


@pytest.fixture(scope="module")
def full(records):
    """The whole validation, once (about 30 CPU seconds)."""
    return V.validate(records)


@pytest.fixture(scope="module")
def doc(full):
    """docs/validation.md as the script renders it from the whole validation, once (rendering takes seconds)."""
    return V.render(full)


@pytest.fixture(scope="module")
def small(records):
    """A small fixed subset: three runs from each of four sources (two profiles share 'megatron-2021')."""
    picks = {"narayanan2021": 3, "korthikanti2022": 3, "llm-foundry-benchmarks": 3, "megatron-lm-readme-h100": 3}
    ids = []
    for r in records:
        if r["predictable"] and picks.get(r["source_id"], 0) and r["precision"]["matmul"] != "fp8" \
                and r["gpu_catalog_id"] in ("a100-80gb", "h100-sxm"):
            ids.append(r["id"])
            picks[r["source_id"]] -= 1
    queries = [V.to_query(r) for r in records if r["id"] in set(ids)]
    curves = {q.id: V.predict(q) for q in queries}
    return queries, curves


# --- the documents are the script's output ------------------------------------------------------------------

def test_doc_is_the_scripts_output(doc):
    # regenerate with: python scripts/make_validation.py
    assert (ROOT / "docs" / "validation.md").read_text(encoding="utf-8") == doc


def test_readme_quotes_the_scripts_figures(full):
    script = _script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = script.readme_paragraph(full)
    assert paragraph in readme
    assert V.headline_sentence(full) in paragraph
    # and the figures in it are the headline's, not typed by hand
    h = V.headline(full)
    assert f"over {h['runs']} published measured runs" in paragraph
    assert f"median error of {h['model']['median']:.1%}" in paragraph


def test_check_flag_fails_on_a_stale_doc(full, doc, tmp_path, monkeypatch):
    script = _script()
    monkeypatch.setattr(script.V, "validate", lambda records: full)
    render = script.V.render  # the whole validation's document is rendered once, in the doc fixture
    monkeypatch.setattr(script.V, "render", lambda v: doc if v is full else render(v))
    stale = tmp_path / "validation.md"
    stale.write_text("old\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(script.with_paragraph((ROOT / "README.md").read_text(encoding="utf-8"),
                                            script.readme_paragraph(full)), encoding="utf-8")
    monkeypatch.setattr(script, "DOC", stale)
    monkeypatch.setattr(script, "README", readme)
    interval = tmp_path / "mfu_interval.json"
    interval.write_text(I.as_text(I.interval_data(full)), encoding="utf-8")
    monkeypatch.setattr(script, "INTERVAL_JSON", interval)
    monkeypatch.setattr(script, "ROOT", tmp_path)
    assert script.main(["--check"]) == 1
    stale.write_text(doc, encoding="utf-8")
    assert script.main(["--check"]) == 0
    interval.write_text("{}\n", encoding="utf-8")  # a stale range is refused too
    assert script.main(["--check"]) == 1


def test_shipped_range_is_the_validations(full):
    # regenerate with: python scripts/make_validation.py
    assert I.INTERVAL_JSON.read_text(encoding="utf-8") == I.as_text(I.interval_data(full))


# --- leave one source out -----------------------------------------------------------------------------------

def test_no_calibration_includes_a_run_of_the_source_it_predicts(full):
    source_of = {s.query.id: s.query.source_id for s in full["scored"]}
    assert len(full["calibration"]) >= 5
    for src, cal in full["calibration"].items():
        assert cal["efficiency_ids"] and cal["constant_ids"]
        assert all(source_of[i] != src for i in cal["efficiency_ids"] + cal["constant_ids"])
    for s in full["scored"]:
        assert s.efficiency == full["calibration"][s.query.source_id]["efficiency"]
        assert s.factor == full["calibration"][s.query.source_id]["factor"]


def test_a_sources_own_measurements_never_move_its_calibration(small):
    queries, curves = small
    base = V.loso(queries, curves)
    # scale every measurement of one source tenfold: its calibration must not change, the others' must
    target = "narayanan2021"
    moved = [dataclasses.replace(q, measured_tokens_s=q.measured_tokens_s * 10) if q.source_id == target else q
             for q in queries]
    after = V.loso(moved, curves)
    assert after["calibration"][target]["efficiency"] == base["calibration"][target]["efficiency"]
    assert after["calibration"][target]["factor"] == base["calibration"][target]["factor"]
    assert after["calibration"][target]["constant"] == base["calibration"][target]["constant"]
    others_changed = [s for s in base["calibration"] if s != target
                      and after["calibration"][s]["constant"] != base["calibration"][s]["constant"]]
    assert others_changed == [s for s in base["calibration"] if s != target]
    # korthikanti2022 shares the megatron-2021 profile with narayanan2021: its efficiency moves with it
    assert after["calibration"]["korthikanti2022"]["efficiency"] > base["calibration"]["korthikanti2022"]["efficiency"]


def test_a_profile_no_other_source_shares_falls_back_to_the_pool(small):
    queries, curves = small
    cal = V.loso(queries, curves)["calibration"]
    assert cal["llm-foundry-benchmarks"]["profile_used"] == "pooled"  # profile llm-foundry: this source only
    assert cal["narayanan2021"]["profile_used"] == "megatron-2021"
    ids = cal["narayanan2021"]["efficiency_ids"]
    assert ids and all(i.startswith(("megatron-a100-mfu-hfu", "korthikanti22")) for i in ids)


# --- the baselines are computed on exactly the runs scored ---------------------------------------------------

def test_baselines_are_on_exactly_the_scored_runs(full):
    scored = full["scored"]
    h = V.headline(full)
    assert h["model"]["n"] == h["constant"]["n"] == h["hindsight"]["n"] == len(scored)
    ids = {s.query.id for s in scored}
    for src, cal in full["calibration"].items():
        # the constant of a held-out source is fitted on all scored runs of the other sources, and only those
        assert set(cal["constant_ids"]) == {s.query.id for s in scored if s.query.source_id != src}
        assert set(cal["constant_ids"]) <= ids
    # no constant on a fine grid puts more scored runs within 15% than the hindsight constant
    mfus = [s.query.measured_mfu for s in scored]
    best = sum(abs(h["hindsight_mfu"] / m - 1) <= V.TOLERANCE for m in mfus)
    for k in range(100, 800):
        c = k / 1000
        assert sum(abs(c / m - 1) <= V.TOLERANCE for m in mfus) <= best


def test_every_record_is_scored_or_listed_with_a_reason(full, records):
    scored = {s.query.id for s in full["scored"]}
    apart = {s.query.id for s in full["apart"]}
    skipped = {k.id: k.reason for k in full["skipped"]}
    assert not scored & set(skipped) and not apart & (scored | set(skipped))
    assert scored | apart | set(skipped) == {r["id"] for r in records}
    assert all(reason.strip() for reason in skipped.values())


def test_runs_on_gpus_without_published_figures_stay_out_of_headline_and_calibration(full):
    # torchtitan's 96 GB / 500 W H100: its peak is not published, so its runs are scored apart
    assert full["apart"] and all(s.query.gpu_label in V.SCORED_APART for s in full["apart"])
    assert not any(s.query.gpu_label in V.SCORED_APART for s in full["scored"])
    apart = {s.query.id for s in full["apart"]}
    for cal in full["calibration"].values():
        assert not apart & set(cal["efficiency_ids"] + cal["constant_ids"])
    assert V.headline(full)["runs"] == len(full["scored"])


def test_megatron_bridge_reruns_of_a_recipe_are_scored_once(records):
    by_id = {r["id"]: r for r in records}
    queries = [q for q in map(V.to_query, records) if isinstance(q, V.Query)]
    kept, dropped = V.deduplicate(queries, by_id)
    bridge = [q for q in queries if q.source_id == "megatron-bridge-perf-summary"]
    kept_bridge = [q for q in kept if q.source_id == "megatron-bridge-perf-summary"]
    assert dropped and len(kept_bridge) + len(dropped) == len(bridge) and len(kept_bridge) < len(bridge)
    kept_ids = {q.id for q in kept}
    for d in dropped:
        newer = d.reason.rsplit(": ", 1)[1]
        assert newer in kept_ids and V.release(newer) > V.release(d.id)
    # other sources are untouched
    assert len(kept) - len(kept_bridge) == len(queries) - len(bridge)


def test_a_recipe_is_model_gpu_count_and_precision_not_the_layout(records):
    # Megatron-Bridge's performance summary: Qwen3-30B-A3B on 16 DGX-H100 at FP8 is measured with PP2 EP8 in 26.02
    # and 26.02.01 (5113 and 9058 tokens/s/GPU) and with PP1 EP16 in 26.04, 26.04.01 and 26.06 (8901, 8960, 8826):
    # one recipe, scored once, as the newest release (26.06) runs it; the earlier rule keeps one row per layout, and
    # 26.04.01 apart from 26.06 too: 26.06's table has no FSDP column (sharding not stated) where 26.04.01 says 0.
    by_id = {r["id"]: r for r in records}
    ids = [i for i in by_id if i.startswith("mbridge-") and "qwen3-30b-a3b-h100x16-fp8" in i and not i.endswith("-cs")]
    queries = [V.to_query(by_id[i]) for i in ids]
    assert len(queries) == 5
    kept, _ = V.deduplicate(queries, by_id)
    assert [q.id for q in kept] == ["mbridge-26.06-qwen3-30b-a3b-h100x16-fp8"]
    assert kept[0].pp == 1 and kept[0].ep == 16
    kept_wide, _ = V.deduplicate(queries, by_id, "recipe+layout")
    assert sorted(q.id for q in kept_wide) == ["mbridge-26.02.01-qwen3-30b-a3b-h100x16-fp8",
                                              "mbridge-26.04.01-qwen3-30b-a3b-h100x16-fp8",
                                              "mbridge-26.06-qwen3-30b-a3b-h100x16-fp8"]
    # FP8 current scaling (25.11's FP8-CS) is another precision recipe than 26.06's FP8: not replaced by it
    cs = V.to_query(by_id["mbridge-25.11-qwen3-30b-a3b-h100x16-fp8-cs"])
    kept_cs, _ = V.deduplicate(queries + [cs], by_id)
    assert cs in kept_cs


def test_megatron_bridge_recompute_is_what_its_performance_configs_set(records):
    # Megatron-Bridge scripts/performance/configs (commit c8327cf^): Llama 3 70B on GB300 FP8 names no
    # recompute_num_layers / recompute_modules (CPU offloading instead); Llama 3 8B on H100 FP8-CS has
    # recompute_num_layers=5; DeepSeek-V3 recomputes 'mla_up_proj' by module. Megatron-Core's default is none.
    by_id = {r["id"]: r for r in records}
    assert V.to_query(by_id["mbridge-26.04.01-llama3-70b-gb300x64-fp8"]).recompute == "none"
    assert V.to_query(by_id["mbridge-26.04.01-gptoss-120b-h100x64-bf16"]).recompute == "none"
    assert V.to_query(by_id["mbridge-25.11-llama3-8b-h100x8-fp8-cs"]).recompute is None
    assert V.to_query(by_id["mbridge-26.04.01-dsv3-b200x256-mxfp8"]).recompute is None
    # ... but DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V1/V2 (TP1 PP2 EP32) set recompute_modules=[]
    assert V.to_query(by_id["mbridge-26.08-dsv3-gb300x256-mxfp8"]).recompute == "none"
    # a source that states it keeps its own
    assert V.to_query(by_id["megatron-a100-mfu-hfu-22b"]).recompute == "selective"


def test_megatron_bridge_a2a_overlap_only_where_its_config_sets_it(records):
    # Megatron-Bridge qwen3_workload_base_configs.py (commit c8327cf^): QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1
    # (TP1 PP1 EP8) sets moe_a2a_overlap=True; the B200 FP8_MX config (same layout) does not.
    by_id = {r["id"]: r for r in records}
    assert dict(V.to_query(by_id["mbridge-26.08-qwen3-30b-a3b-gb300x8-mxfp8"]).settings).get("ep_overlap") == 1.0
    assert "ep_overlap" not in dict(V.to_query(by_id["mbridge-26.04.01-qwen3-30b-a3b-b200x8-mxfp8"]).settings)
    # the Megatron-Core MoE model zoo states it in its Notes cell ('+1f1b overlap'): step 17.6 s against 19.7 s
    zoo = "moezoo-qwen3-235b-h100x256-bf16-deepep-tp2pp8ep32"
    assert dict(V.to_query(by_id[zoo + "-1f1b-overlap"]).settings).get("ep_overlap") == 1.0
    assert "ep_overlap" not in dict(V.to_query(by_id[zoo]).settings)


# --- one basis ------------------------------------------------------------------------------------------------

def test_hardware_flops_runs_convert_with_the_papers_formula(records):
    # Narayanan et al. 2021 Eq. 3: F = 96 B s l h^2 (1 + s/6h + V/16lh) per batch of B sequences of s tokens
    r = next(r for r in records if r["id"] == "narayanan21-1.7b-32")
    q = V.to_query(r)
    l, h, s, v = 24, 2304, 2048, 51200
    per_token = 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
    assert q.measured_tokens_s == pytest.approx(137e12 / per_token, rel=0.02)


def test_measured_mfu_on_our_basis_agrees_with_stated_mfu(records):
    # Korthikanti et al. 2022 Table 5 22B (8 A100, batch 4 x 2048, 1.1 s per iteration): MFU 41.5% as stated;
    # Megatron-LM README H100 1.7B: 41%. Our basis (our FLOP count, 312 / 989.4 TFLOP/s) agrees within 3%.
    by_id = {r["id"]: r for r in records}
    assert V.to_query(by_id["megatron-a100-mfu-hfu-22b"]).measured_mfu == pytest.approx(0.415, rel=0.03)
    assert V.to_query(by_id["megatron-h100-weak-1.7b"]).measured_mfu == pytest.approx(0.41, rel=0.03)


# --- the adapter ----------------------------------------------------------------------------------------------

def test_the_adapter_pins_what_the_source_states(records):
    r = next(r for r in records if r["id"] == "llmfoundry-h100-bf16-mpt70b-s2048-g512-mb8-gbs4096-large")
    curve = V.predict(V.to_query(r))
    # llm-foundry table row: FSDP FULL_SHARD (ZeRO-3), activation checkpointing, micro-batch 8, 512 GPUs
    assert curve.config.startswith("TP=1, PP=1, DP=512, ZeRO-3")
    assert "recompute full" in curve.config and "micro-batch 8" in curve.config
    # throughput rises with the matmul efficiency (calibration bisects on it)
    assert all(b > a for a, b in zip(curve.tokens_s, curve.tokens_s[1:]))


def test_runs_needing_a_feature_the_model_lacks_are_skipped_with_it(records):
    queries = (V.to_query(r) for r in records if r["predictable"] and r["source_id"] == "nemo-perf-summary-24.07")
    fp8 = next(q for q in queries if isinstance(q, V.Query))
    assert fp8.precision == "fp8"
    assert "FP8" in V.unsupported(fp8, frozenset())
    assert V.unsupported(fp8, frozenset({"fp8"})) is None


# --- the fitting helpers, on toy data with known answers -------------------------------------------------------

def test_fit_efficiency_finds_the_zero_of_the_weighted_mean_log_error():
    curves = [[e - 0.7 for e in V.GRID], [e - 0.8 for e in V.GRID]]
    assert V.fit_efficiency(curves) == pytest.approx(0.75, abs=1e-3)
    assert V.fit_efficiency(curves, [3, 1]) == pytest.approx(0.725, abs=1e-3)


def test_constant_baselines_on_toy_data():
    assert V.fit_constant_mfu([0.2, 0.8]) == pytest.approx(0.4)  # geometric mean
    c = V.best_constant([0.40, 0.41, 0.42, 0.80])
    assert sum(abs(c / m - 1) <= 0.15 for m in [0.40, 0.41, 0.42, 0.80]) == 3
    assert math.isclose(c, 0.41, abs_tol=0.02)


def test_json_output_carries_the_same_runs(full, monkeypatch, capsys):
    import json
    script = _script()
    monkeypatch.setattr(script.V, "validate", lambda records: full)
    assert script.main(["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["headline"]["runs"] == len(data["runs"]) == len(full["scored"])
    assert len(data["not_scored"]) == len(full["skipped"])
    assert len(data["scored_apart"]) == len(full["apart"])
    assert set(data["calibration"]) == set(full["calibration"])


def test_stacks_carry_the_efficiency_fitted_to_their_runs(full):
    # the planner's --stack default is the efficiency the validation fits on all of that stack's runs
    from xlcalc.planner.stacks import NONMATMUL_FACTOR, STACKS
    assert full["fitted_factor"] == NONMATMUL_FACTOR
    assert all(stack.settings["elementwise_factor"] == NONMATMUL_FACTOR for stack in STACKS.values())
    assert set(full["fitted"]) <= set(STACKS)
    for profile, eff in full["fitted"].items():
        assert STACKS[profile].matmul_efficiency == pytest.approx(eff, abs=5e-4), profile
    # every source of the runs belongs to exactly one stack
    owners = [s for stack in STACKS.values() for s in stack.sources]
    assert len(owners) == len(set(owners))
    assert {s.query.source_id for s in full["scored"]} <= set(owners)


def test_fit_factor_picks_the_factor_whose_shape_matches_the_measurements():
    # toy runs of one profile: log(pred/measured) = (eff - 0.7) * slope + (factor - 2) * x_run, so at factor 2
    # every run has zero error at efficiency 0.7, and any other factor leaves errors of opposite signs
    from xlcalc.validation.scoring import fit_factor
    xs = {"a": 0.1, "b": -0.1, "c": 0.05, "d": -0.05}
    queries = [dataclasses.replace(_toy_query(), id=i, source_id=f"s{n % 2}") for n, i in enumerate(xs)]
    logcs = {f: {i: [(e - 0.7) + (f - 2.0) * x for e in V.GRID] for i, x in xs.items()} for f in V.FACTOR_GRID}
    assert fit_factor(queries, logcs, {q.id: q.source_id for q in queries}) == 2.0


def _toy_query():
    return dataclasses.replace(
        next(q for q in (V.to_query(r) for r in V.load_runs()) if isinstance(q, V.Query)), profile="toy")

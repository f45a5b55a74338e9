"""Discrete facts chosen inside the leave-one-source-out loop (xlcalc.validation.facts, factchoice)."""

from __future__ import annotations

import dataclasses

import pytest

from xlcalc import validation as V
from xlcalc.validation.factchoice import FactCurves, bootstrap_sources, loso_chosen
from xlcalc.validation.facts import FACTS, PROFILE_FACT_KEYS, SOURCE_FACT_KEYS


@pytest.fixture(scope="module")
def records():
    return {r["id"]: r for r in V.load_runs()}


def _first(records, source, **match):
    for r in records.values():
        q = V.to_query(r)
        if r["source_id"] == source and isinstance(q, V.Query) and all(getattr(q, k) == v for k, v in match.items()):
            return r
    raise AssertionError(f"no run of {source} with {match}")


def test_every_fact_names_where_it_is_stated_and_what_leaving_it_out_means():
    ids = [f.id for f in FACTS]
    assert len(ids) == len(set(ids))
    assert set(PROFILE_FACT_KEYS) | set(SOURCE_FACT_KEYS) | {"recipe-recompute"} == set(ids)
    for f in FACTS:
        assert f.what and f.where and f.neutral


def test_a_fact_left_out_removes_its_settings_and_keeps_the_measurement(records):
    rec = _first(records, "llm-foundry-benchmarks", precision="bf16")
    stated = V.to_query(rec)
    assert {"attention-kernels", "llm-foundry-loss", "llm-foundry-dropout"} <= set(stated.facts)
    assert dict(stated.settings)["loss_bytes"] == 6.0 and dict(stated.settings)["dropout"] is False
    off = V.to_query(rec, frozenset({"llm-foundry-loss", "attention-kernels"}))
    settings = dict(off.settings)
    assert "loss_bytes" not in settings and "attention_efficiency" not in settings
    assert "attention_kernel_speed" not in settings and settings["dropout"] is False  # dropout still as stated
    assert off.measured_tokens_s == stated.measured_tokens_s and off.facts == stated.facts


def test_megatron_bridge_recompute_left_out_is_the_planners_choice(records):
    rec = next(r for r in records.values() if r["source_id"] == "megatron-bridge-perf-summary"
               and not r.get("recompute") and isinstance(V.to_query(r), V.Query)
               and "recipe-recompute" in V.to_query(r).facts)
    assert V.to_query(rec).recompute == "none"
    assert V.to_query(rec, frozenset({"recipe-recompute"})).recompute is None


@pytest.fixture(scope="module")
def small(records):
    """Two runs from each of five sources: llm-foundry's facts apply to its runs only, the attention fact also to
    torchtitan's."""
    picks = {"llm-foundry-benchmarks": 2, "torchtitan-performance-a100": 2, "narayanan2021": 2,
             "megatron-lm-readme-h100": 2, "korthikanti2022": 2}
    queries = []
    for r in records.values():
        q = V.to_query(r)
        if isinstance(q, V.Query) and picks.get(q.source_id, 0) and q.precision == "bf16":
            queries.append(q)
            picks[q.source_id] -= 1
    curves = {q.id: V.predict(q) for q in queries}
    return queries, FactCurves(records, curves, V.capabilities())


def test_a_fact_no_other_source_speaks_for_is_left_out(small):
    queries, fc = small
    res = loso_chosen(queries, fc, [f.id for f in FACTS])
    foundry = res["calibration"]["llm-foundry-benchmarks"]
    assert foundry["choices"]["llm-foundry-loss"] == "no other source"
    assert {"llm-foundry-loss", "llm-foundry-dropout"} <= set(foundry["facts_off"])
    # torchtitan's runs share the attention fact, so it is chosen on them, not defaulted
    assert foundry["choices"]["attention-kernels"] in ("as stated", "left out")
    for s in res["scored"]:  # each held-out run is predicted in its source's chosen state
        want = frozenset(res["calibration"][s.query.source_id]["facts_off"]) & frozenset(s.query.facts)
        assert s.curve is fc.curve(s.query.id, want)


class _Scaled(FactCurves):
    """The same curves; one source's measurements ten times larger."""

    def __init__(self, base: FactCurves, source: str):
        self.__dict__.update(base.__dict__)
        self._source = source

    def query(self, rid, off):
        q = super().query(rid, off)
        return dataclasses.replace(q, measured_tokens_s=q.measured_tokens_s * 10) if q.source_id == self._source else q


def test_a_sources_own_measurements_never_move_its_fact_choices(small):
    queries, fc = small
    facts = [f.id for f in FACTS]
    base = loso_chosen(queries, fc, facts)
    target = "torchtitan-performance-a100"
    scaled = _Scaled(fc, target)
    moved = loso_chosen([scaled.query(q.id, frozenset()) for q in queries], scaled, facts)
    assert moved["calibration"][target]["choices"] == base["calibration"][target]["choices"]
    assert moved["calibration"][target]["efficiency"] == base["calibration"][target]["efficiency"]


def test_bootstrap_over_sources_on_toy_errors():
    same = bootstrap_sources({"a": [0.05, 0.05], "b": [0.05]}, draws=200)
    assert same["median"] == (0.05, 0.05) and same["within"] == (1.0, 1.0)
    mixed = bootstrap_sources({"a": [0.02] * 3, "b": [0.40] * 3}, draws=400)
    # drawing only a gives 2% and all within; only b gives 40% and none within; both are drawn sometimes
    assert mixed["median"] == (0.02, 0.40) and mixed["within"] == (0.0, 1.0)


@pytest.mark.parametrize("stack", ["default", "planner"])
def test_at_the_flags_a_user_gives_is_the_planners_default_prediction(records, stack):
    """at_defaults: the default stack's facts, non-matmul factor and fitted efficiency (``plan`` without --stack);
    with stack 'planner' no stack facts, the planner's default settings and the catalog's efficiency; checked against
    the planner's own evaluation at that efficiency (not the validation's grid interpolation)."""
    from xlcalc.planner import Settings, arch_from_model
    from xlcalc.planner import steptime as pst
    from xlcalc.planner.stacks import DEFAULT_STACK, PLANNER, STACKS
    from xlcalc.validation.pipeline import at_defaults

    rec = _first(records, "llm-foundry-benchmarks", precision="bf16")
    q = V.to_query(rec, frozenset(f.id for f in FACTS))
    assert "loss_bytes" not in dict(q.settings)
    caps = V.capabilities()
    sid = DEFAULT_STACK if stack == "default" else PLANNER
    err = at_defaults([q], caps, sid)["errors"][q.id]
    system = tuple((k, v) for k, v in q.settings if k == "scaleout_gb_s")
    plain = dataclasses.replace(q, settings=(("stack", sid),) + system)
    curve = V.predict(plain, caps)  # its configuration: what the source states, the rest the planner's choice
    cfg_fields = dict(tp=q.tp, pp=q.pp, dp=q.dp, **_config_of(curve.config))
    # as ``plan`` builds it: no stack named (the default's facts) or --stack planner
    st = Settings(**dict(system)) if stack == "default" else Settings(stack=PLANNER, **dict(system))
    hw = pst.resolve_hardware(q.gpu, st, n_gpus=q.n_gpus)
    if stack == "default":
        assert st.stack == DEFAULT_STACK and not st.stack_named
        assert hw.matmul_efficiency == STACKS[DEFAULT_STACK].matmul_efficiency
        assert st.bytes_weights == STACKS[DEFAULT_STACK].settings["bytes_weights"]
    else:
        assert hw.matmul_efficiency == V.catalog.get_gpu(q.gpu).training_matmul_efficiency
    direct = pst.evaluate(arch_from_model(q.model), hw, st, pst.Config(**cfg_fields),
                          q.seq_len, q.global_batch).tokens_per_s_per_gpu
    assert err == pytest.approx(direct / q.measured_tokens_s - 1, abs=0.01)


def _config_of(label: str) -> dict:
    """zero_stage, seq_parallel, recompute, micro_batch, virtual_stages from a configuration label."""
    import re
    out = dict(zero_stage=int(re.search(r"ZeRO-(\d)", label).group(1)), seq_parallel=", SP" in label,
               recompute=re.search(r"recompute (\w+)", label).group(1),
               micro_batch=int(re.search(r"micro-batch (\d+)", label).group(1)))
    v = re.search(r"v=(\d+)", label)
    out["virtual_stages"] = int(v.group(1)) if v else 1
    return out

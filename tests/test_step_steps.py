"""The step time as a chain of registered formulas (xlcalc.step_steps): one answer with the planner's search.

The planner's step time (xlcalc.planner.steptime.evaluate) and the chain are two compositions of the same registered
formulas; here they must agree for every layout the chain covers, across stacks, GPUs with and without a known SM
count, fused and unfused attention, and every layout choice. One layout is also worked by hand from the formulas'
documented equations, and every step must render as an Excel formula within Excel's length limit.
"""

from __future__ import annotations

import itertools

import pytest

from xlcalc import catalog, step_steps
from xlcalc.errors import InputError
from xlcalc.inputs import spec
from xlcalc.planner import Settings
from xlcalc.planner.step_chain import not_covered, step_chain_inputs
from xlcalc.planner.steptime import Config, arch_from_model, evaluate, resolve_hardware
from xlcalc.registry import Formula

SEQ = 4096
# the planner's result field -> the chain's step
COMPARED = {"step_s": "Step_Time_S", "mfu": "Step_MFU", "hfu": "Step_HFU",
            "tokens_per_s_per_gpu": "Step_Tokens_per_S_per_GPU", "dp_comm_s": "Step_DP_Comm_S",
            "optimizer_s": "Step_Optimizer_S", "bubble_s": "Step_Bubble_S"}
# (model, GPU, stack): fused and unfused attention (megatron-2021), the attention factor of an Ampere kernel on
# Hopper (fsdp-eager, llm-foundry), a GPU without a known SM count (h200: no wave quantization), no profile
RUNS = [("llama3.1-8b", "h100-sxm", "fsdp-eager"), ("llama2-70b", "a100-80gb", "megatron"),
        ("llama2-7b", "a800", "megatron-2021"), ("llama2-13b", "h200", "llm-foundry"), ("gpt3-175b", "h100-sxm", None)]


def _layouts(layers: int):
    for tp, pp, dp, cp, z, rc, mb, sp, v in itertools.product(
            (1, 8), (1, 4), (1, 16), (1, 2), (0, 1, 3), ("none", "selective", "full"), (1, 2), (False, True), (1, 2)):
        if (v > 1 and pp == 1) or layers % (pp * v):
            continue
        yield Config(tp, pp, dp, z, sp, rc, mb, v, cp)


@pytest.mark.parametrize("model,gpu,stack", RUNS)
def test_the_chain_gives_the_planners_step_time(model, gpu, stack):
    st = Settings(stack=stack) if stack else Settings(stack="planner")
    arch = arch_from_model(catalog.get_model(model))
    n = 0
    for cfg in _layouts(arch.layers):
        hw = resolve_hardware(gpu, st, cfg.n_gpus)
        batch = cfg.dp * cfg.micro_batch * 8
        assert not_covered(arch, st, cfg) is None
        pred = evaluate(arch, hw, st, cfg, SEQ, batch)
        env = step_steps.evaluate(step_chain_inputs(arch, hw, st, cfg, SEQ, batch))
        for field, step in COMPARED.items():
            assert env[step] == pytest.approx(getattr(pred, field), rel=1e-12, abs=1e-15), (cfg, field)
        n += 1
    assert n > 100


def test_the_overlaps_reach_the_chain():
    # settings no profile changes: PP and TP overlap, DP overlap, gathered weights in bf16
    st = Settings(stack="planner", pp_overlap=0.5, tp_overlap=0.3, dp_overlap=0.9, gather_bytes=2,
                  link_efficiency=0.7)
    arch = arch_from_model(catalog.get_model("llama2-70b"))
    cfg = Config(8, 4, 4, 3, True, "selective", 1, 2, 1)
    hw = resolve_hardware("h100-sxm", st, cfg.n_gpus)
    pred = evaluate(arch, hw, st, cfg, SEQ, 64)
    env = step_steps.evaluate(step_chain_inputs(arch, hw, st, cfg, SEQ, 64))
    assert env["Step_Time_S"] == pytest.approx(pred.step_s, rel=1e-12)
    assert env["Step_PP_P2P_S"] > 0 and env["Step_TP_Comm_S"] > 0


@pytest.mark.parametrize("stage_layers", [(7,) + (8,) * 14 + (7,), (9,) + (8,) * 14 + (5,), (6,) + (8,) * 14 + (8,)])
def test_end_stages_of_their_own_give_the_planners_step_time(stage_layers):
    # Llama 3's split (one layer fewer at each end: Dubey et al. 2024 §3.3.2), a last stage light enough that a middle
    # one sets the pace, and a first stage lighter than the rest
    st = Settings(stack="megatron")
    arch = arch_from_model(catalog.get_model("llama3.1-405b"))
    cfg = Config(8, 16, 4, 1, True, "selective", 1, 1, 1, stage_layers=stage_layers)
    hw = resolve_hardware("h100-sxm", st, cfg.n_gpus)
    pred = evaluate(arch, hw, st, cfg, 8192, 64)
    env = step_steps.evaluate(step_chain_inputs(arch, hw, st, cfg, 8192, 64))
    for field, step in COMPARED.items():
        assert env[step] == pytest.approx(getattr(pred, field), rel=1e-12), field


def test_one_gpu_worked_from_the_documented_equations():
    # one GPU, FlashAttention, no recompute, no wave quantization: every term from its docstring's equation
    h, a, kv, dh, F, V, L, s, b, m = 4096, 32, 8, 128, 14336, 128256, 32, 4096, 2, 4
    peak, eff, att_eff, hbm, factor = 989.0, 0.5, 0.35, 3.35, 4.0
    layer_params, emb = 218_112_000.0, h * V
    values = dict(layers=L, hidden=h, heads=a, kv_heads=kv, head_dim=dh, ffn_hidden=F, gated_ffn=True, vocab=V,
                  layer_params=layer_params, embedding_params=emb, tied_embeddings=False, seq_len=s, micro_batch=b,
                  microbatches=m, tp=1, pp=1, dp=1, cp=1, first_stage_layers=0, last_stage_layers=0, zero_stage=0, seq_parallel=False, recompute="none",
                  virtual_stages=1, peak_tflops=peak, matmul_efficiency=eff, sm_count=132, wave_quantization=False,
                  hbm_tb_s=hbm, scaleup_gb_s=450, scaleout_gb_s=50, nvlink_domain=8, attention_efficiency=att_eff,
                  attention_factor=1, attention_kernel_speed=1, flash_attention=True, elementwise_factor=factor,
                  loss_bytes=16, dropout=True, link_efficiency=0.8, tp_overlap=0, pp_overlap=0, cp_overlap=1,
                  dp_overlap=0.5, grad_bytes=4, bytes_weights=2, bytes_per_param_step=30)
    env = step_steps.evaluate(values)
    tokens = s * b
    rate = peak * 1e12
    layer_mm_flops = 2 * h * a * dh * 2 + 2 * 2 * h * kv * dh + 2 * h * F * 3   # Q, O + K, V + gated FFN
    layer_mm = 3 * layer_mm_flops * tokens / (rate * eff)                         # forward + backward
    logits_mm = 3 * 2 * h * V * tokens / (rate * eff)
    att_flops = 3 * 4 * s * a * dh * tokens
    att = max(0.5 * att_flops / (rate * min(att_eff, eff)), att_flops / (rate * eff))
    ew_layer = factor * 6 * (15 * h + 3 * F) * tokens / (hbm * 1e12)            # dropout on, no SP
    loss = 16 * V * factor * tokens / (hbm * 1e12)
    microbatch = L * (layer_mm + att + ew_layer) + logits_mm + loss
    optimizer = 30 * (L * layer_params + 2 * emb) / (hbm * 1e12)                # Adam over the whole model
    step = m * microbatch + optimizer                                            # no bubble, no DP
    assert env["Step_Microbatch_S"] == pytest.approx(microbatch, rel=1e-12)
    assert env["Step_Optimizer_S"] == pytest.approx(optimizer, rel=1e-12)
    assert env["Step_Time_S"] == pytest.approx(step, rel=1e-12)
    model_flops = 3 * (L * (layer_mm_flops + 4 * s * a * dh) + 2 * h * V)
    assert env["Step_MFU"] == pytest.approx(model_flops * m * b * s / (step * rate), rel=1e-12)
    assert env["Step_Tokens_per_S_per_GPU"] == pytest.approx(m * b * s / step, rel=1e-12)


@pytest.mark.parametrize("change,why", [
    (dict(fp8=True), "FP8"), (dict(offload=True), "offloaded"), (dict(stage_layers=(10, 10, 10, 10, 10, 10, 10, 10)), None),
    (dict(stage_layers=(9, 10, 10, 10, 10, 10, 10, 11)), None), (dict(stage_layers=(10, 9, 11, 10, 10, 10, 10, 10)), "uneven")])
def test_what_the_chain_leaves_out_is_named(change, why):
    arch = arch_from_model(catalog.get_model("llama2-70b"))
    cfg = Config(8, 8, 1, 1, True, "selective", 1)._replace(**change)
    reason = not_covered(arch, Settings(), cfg)
    assert (reason is None) if why is None else (why in reason)


def test_a_mixture_of_experts_and_mla_are_named():
    arch = arch_from_model(catalog.get_model("deepseek-v3"))
    assert "experts" in not_covered(arch, Settings(), Config(1, 1, 1, 1, False, "none", 1))


def test_every_input_missing_is_named_at_once():
    with pytest.raises(InputError) as e:
        step_steps.evaluate({"layers": 32, "hidden": 4096})
    named = str(e.value).split(" = ")[0].split(", ")
    assert "heads" in named and "bytes_per_param_step" in named and "layers" not in named and "hidden" not in named


def test_each_step_is_one_registered_formula_over_inputs_and_earlier_steps():
    steps = step_steps.step_time_steps()
    known = {spec(k).excel_name for k in step_steps.STEP_INPUTS}
    for st in steps:
        assert isinstance(st.formula, Formula)
        text = st.expr().to_excel(lambda name: name)
        assert len(text) <= 8192, st.name  # Excel's limit on a formula's length
        assert st.expr().variables() <= known, (st.name, st.expr().variables() - known)
        known.add(st.name)
    assert len({st.name for st in steps}) == len(steps)

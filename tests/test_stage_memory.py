"""The stage memory model's terms, each against a paper, a framework's documented behaviour or hand arithmetic."""

from __future__ import annotations

import pytest

from xlcalc import formulas as x
from xlcalc.errors import InputError
from xlcalc.layout import check_layout, layout_message
from xlcalc.recipes import DEFAULT_RECIPE, MEMORY_DEFAULTS, RECIPES
from xlcalc.stage_memory import evaluate, mem_per_gpu_gb, resolve, stage_memory

# Llama 3.1 8B (model card / config.json): 32 layers, h 4096, 32 heads, 8 KV heads, F 14336 (SwiGLU), V 128256
LLAMA8B = dict(params_b=8.03, layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, gated_ffn=True,
               vocab=128256)


def gb(**kw):
    return stage_memory(**{**LLAMA8B, "seq_len": 8192, **kw})


def test_uneven_stages_llama3_405b():
    # Llama 3 paper §3.3.2: 126 layers on 16 stages with one layer fewer on the first and the last stage:
    # 7 + 14 x 8 + 7 = 126
    assert x.stage_layers(126, 16, "first", 7, 7) == 7
    assert x.stage_layers(126, 16, "last", 7, 7) == 7
    check_layout(hidden=16384, heads=128, layers=126, seq_len=8192, kv_heads=8, tp=8, pp=16,
                 first_stage_layers=7, last_stage_layers=7)
    # only the first given: the other 15 stages share 126 - 6 = 120 layers, 8 each
    assert x.stage_layers(126, 16, "last", 6, 0) == 8
    # pp = 1 holds everything whatever the split says
    assert x.stage_layers(80, 1, "last", 0, 0) == 80


def test_inflight_microbatches_korthikanti():
    # Korthikanti et al. 2022 §4.2.3: 1F1B's first stage holds p micro-batches; interleaved x (1 + (p-1)/(p v));
    # fewer micro-batches than stages: m
    assert x.stage_inflight_microbatches(8, "first") == 8
    assert x.stage_inflight_microbatches(8, "first", 3) == pytest.approx(8 * (1 + 7 / 24))
    assert x.stage_inflight_microbatches(8, "first", 1, 4) == 4
    assert x.stage_inflight_microbatches(8, "last") == 1
    # the old closed form: L layers' worth of activations on the first stage = (L/p layers) x p micro-batches
    layer = x.act_layer_bytes(2048, 1, 12288, 96, 8, True, "selective")
    assert x.mem_stage_act_gb(96 / 8, layer, x.stage_inflight_microbatches(8, "first", 3)) == pytest.approx(
        x.mem_act_pipeline_gb(2048, 1, 12288, 96, 96, 8, True, "selective", 8, 3))


def test_stage_params_hold_the_tables_where_megatron_puts_them():
    vh = 128256 * 4096 / 1e9
    layer = x.layer_params_b(8.03, 32, 4096, 128256)
    assert layer == pytest.approx((8.03 - 2 * vh) / 32)
    # PP = 1: every layer and both tables (untied) = the whole model
    assert x.stage_params_b(32, layer, 4096, 128256, 1) == pytest.approx(8.03)
    # PP = 4: first stage 8 layers + input embedding; last stage 8 layers + output layer
    assert x.stage_params_b(8, layer, 4096, 128256, 4) == pytest.approx(8 * layer + vh)


def test_op_selective_saves_what_torchtitans_policy_saves():
    # torchtitan _save_list / _custom_policy: block input 2h, mm outputs 1, 3, 5, 7 of (Q, K, V, O, W1, W3, W2):
    # Q 2*a*dh, V 2*kv*dh, W1 2F, W2 2h; SDPA output 2*a*dh and fp32 log-sum-exp 4*a; per token, bytes
    per_token = 2 * 4096 + 2 * 32 * 128 + 2 * 8 * 128 + 2 * 14336 + 2 * 4096 + 2 * 32 * 128 + 4 * 32
    assert per_token == 63616
    got = x.act_layer_bytes_general(8192, 1, 4096, 32, 8, 128, 14336, True, recompute="op_selective")
    assert got == 8192 * 63616


def test_recompute_working_set_is_one_layer_rematerialised():
    # Korthikanti Table 2 with flash attention (no s^2 term): no recompute keeps sbh(34) for F = 4h, MHA;
    # full recompute keeps the layer input 2sbh; during one layer's backward its 34sbh are live again
    s, b, h = 2048, 1, 4096
    none = x.act_layer_bytes_general(s, b, h, 32, 32, 128, 4 * h, False, 1, False, "none", True)
    full = x.act_layer_bytes_general(s, b, h, 32, 32, 128, 4 * h, False, 1, False, "full", True)
    assert (none, full) == (34 * s * b * h, 2 * s * b * h)
    assert x.mem_recompute_working_gb(none, full) == pytest.approx(32 * s * b * h / 1e9)
    assert x.mem_recompute_working_gb(none, none) == 0


def test_logits_on_the_last_stage_only():
    # Megatron: fp32 logits (4 bytes), vocabulary split over t; s 8192, V 128256, t 2
    want = 4 * 8192 * 128256 / 2 / 1e9
    assert x.mem_logits_gb(8192, 1, 128256, 2, 1, 4, 4, "last") == pytest.approx(want)
    assert x.mem_logits_gb(8192, 1, 128256, 2, 1, 4, 4, "first") == 0
    assert x.mem_logits_gb(8192, 1, 128256, 2, 1, 4, 1, "first") == pytest.approx(want)  # one stage holds both
    assert x.mem_logits_gb(8192, 1, 128256, 2, 2, 4, 4, "last") == pytest.approx(want / 2)  # CP splits s


def test_sharding_by_name_and_group():
    # FSDP full shard = ZeRO-3 over DP; grad-op shard = ZeRO-2; HSDP = ZeRO-3 inside the shard group
    full = gb(dp=64, sharding="fsdp_full_shard")
    z3 = gb(dp=64, zero_stage=3)
    assert full.memory_gb == z3.memory_gb
    hsdp = gb(dp=64, sharding="hsdp", dp_shard=8)
    p = full.parts_gb["first"]
    h = hsdp.parts_gb["first"]
    # the states are sharded over 8 GPUs instead of 64: 8x larger
    for part in ("weights", "gradients", "optimizer"):
        assert h[part] == pytest.approx(8 * p[part])
    grad_op = gb(dp=64, sharding="fsdp_grad_op").parts_gb["first"]
    assert grad_op["weights"] == pytest.approx(64 * p["weights"]) and grad_op["gradients"] == pytest.approx(
        p["gradients"])
    with pytest.raises(InputError, match="dp_shard = 3 is not allowed: dp_shard must be a divisor of DP = 64"):
        gb(dp=64, sharding="hsdp", dp_shard=3)
    with pytest.raises(InputError, match="dp_shard"):
        gb(dp=64, sharding="hsdp")


def test_offload_fp8_prefetch_buckets_are_explicit_terms():
    base = gb(dp=8, zero_stage=3)
    b = base.parts_gb["first"]
    off = gb(dp=8, zero_stage=3, optimizer_offload=True).parts_gb["first"]
    assert off["optimizer"] == 0 and off["weights"] == b["weights"]
    fp8 = gb(dp=8, zero_stage=3, bytes_fp8=1).parts_gb["first"]
    assert fp8["fp8_copies"] == pytest.approx(b["weights"] / RECIPES[DEFAULT_RECIPE].weights)  # 1 byte vs 2
    pre = gb(dp=8, zero_stage=3, prefetch_layers=1).parts_gb["first"]
    assert pre["gathered_params"] == pytest.approx(2 * b["gathered_params"])
    # DeepSpeed: 4 bytes x the largest layer's parameters
    assert b["gathered_params"] == pytest.approx(4 * x.layer_params_b(8.03, 32, 4096, 128256))
    assert gb(dp=8, comm_buffer_gb=0.025).parts_gb["first"]["comm_buffers"] == 0.025


def test_context_parallel_splits_activations_and_logits():
    one = gb(cp=1, recompute="full", pp=1).parts_gb["first"]
    two = gb(cp=2, recompute="full", pp=1).parts_gb["first"]
    assert two["activations"] == pytest.approx(one["activations"] / 2)
    assert two["logits"] == pytest.approx(one["logits"] / 2)


def test_zero_shards_over_dp_times_cp():
    # Megatron-Core's distributed optimizer shards over the data-parallel group with context parallelism
    # (get_data_parallel_group(with_context_parallel=True)); torchtitan's FSDP2 over the dp_shard x cp mesh:
    # DP 2 x CP 4 shards the states as DP 8 does
    for z in (1, 2, 3):
        a = gb(dp=2, cp=4, zero_stage=z, pp=1).parts_gb["first"]
        b = gb(dp=8, cp=1, zero_stage=z, pp=1).parts_gb["first"]
        for part in ("weights", "gradients", "optimizer"):
            assert a[part] == pytest.approx(b[part])


def test_any_micro_batch_scales_activations():
    one = gb(micro_batch=1).parts_gb["first"]
    three = gb(micro_batch=3).parts_gb["first"]
    for part in ("activations", "recompute_working", "logits"):
        assert three[part] == pytest.approx(3 * one[part])
    assert three["weights"] == one["weights"]


def test_defaults_live_in_one_place():
    d = resolve({**LLAMA8B, "seq_len": 8192})
    r = RECIPES[DEFAULT_RECIPE]
    assert (d["bytes_weights"], d["bytes_grads"], d["bytes_optimizer"]) == (r.weights, r.grads, r.optimizer)
    assert d["overhead_gb"] == MEMORY_DEFAULTS["overhead_gb"]
    from xlcalc.planner import Settings
    from xlcalc.planner.stacks import DEFAULT_STACK, PLANNER, STACKS
    from xlcalc.scenario import Scenario
    st, sc = Settings(stack=PLANNER), Scenario()
    assert (st.bytes_weights, st.bytes_grads, st.bytes_optimizer, st.overhead_gb) == (
        r.weights, r.grads, r.optimizer, MEMORY_DEFAULTS["overhead_gb"])
    # a plan that names no stack holds the memory of the default stack's framework, declared once by that
    # framework's profile (xlcalc.frameworks), not a second default
    from xlcalc.frameworks import profile_values
    fw = STACKS[DEFAULT_STACK].framework
    assert fw is not None
    facts = profile_values(fw[0])
    d = Settings()
    assert all(getattr(d, k) == facts.get(k, getattr(st, k)) for k in ("bytes_weights", "bytes_grads",
                                                                        "bytes_optimizer", "overhead_gb"))
    assert (sc.bytes_weights, sc.bytes_grads, sc.bytes_optimizer, sc.overhead_gb) == (
        r.weights, r.grads, r.optimizer, MEMORY_DEFAULTS["overhead_gb"])


def test_first_and_last_stage_differ():
    m = gb(tp=2, pp=4, dp=8, zero_stage=1)
    f, l = m.parts_gb["first"], m.parts_gb["last"]
    assert f["activations"] == pytest.approx(4 * l["activations"])  # 4 micro-batches in flight vs 1
    assert f["logits"] == 0 and l["logits"] > 0
    assert m.memory_gb == max(m.totals_gb.values())
    assert sum(f.values()) == pytest.approx(m.totals_gb["first"])


def test_layout_message_and_check_say_the_same():
    bad = dict(hidden=8192, heads=64, layers=80, seq_len=4096, kv_heads=8, tp=4, pp=3)
    with pytest.raises(InputError) as exc:
        check_layout(**bad)
    assert layout_message(bad) == str(exc.value)
    assert layout_message({**bad, "pp": 4}) == "OK"
    for extra, words in ((dict(pp=4, cp=3), "cp = 3 is not allowed: cp must be a divisor of seq_len = 4096"),
                         (dict(pp=4, experts=64, ep=3), "ep = 3 is not allowed: ep must be a divisor of experts = 64"),
                         (dict(pp=4, cluster_gpus=1024, batch_sequences=100),
                          "global_batch = 100 is not allowed: global_batch must be a multiple of DP x micro-batch "
                          "= 64 x 1 = 64"),
                         (dict(pp=4, kv_heads=5), "kv_heads = 5 is not allowed: kv_heads must be a divisor of heads"),
                         (dict(pp=4, tp=16), "tp = 16 is not allowed: tp must be a divisor of kv_heads = 8")):
        with pytest.raises(InputError, match=words.replace("(", r"\(")):
            check_layout(**{**bad, **extra})


def test_evaluate_equals_the_worksheet_function():
    v = resolve({**LLAMA8B, "seq_len": 4096, "tp": 2, "pp": 2, "dp": 4, "zero_stage": 1, "recompute": "selective"})
    total = evaluate(v, validated=True)["Mem_Total_GB"]
    assert mem_per_gpu_gb(8.03, 32, 4096, 32, 8, 14336, 128256, 4096, 1, 2, 2, 1, 4, 1, False, "selective",
                            True) == total


# Llama 3.1 8B per token and layer, 16-bit activations, RMSNorm, FlashAttention, TP 1 (bytes), written out by hand
# from the tensors autograd saves (docs/activations.md): a = 32 heads, kv = 8, d = 128, h = 4096, F = 14336
_H, _A, _KV, _D, _F = 4096, 32, 8, 128, 14336
_ATTENTION = ((2 * _H + 4 + 2 * _H)             # norm input, 1/rms (fp32), norm output kept by wq/wk/wv
              + 2 * _A * _D + 4 * _KV * _D      # q and k after RoPE, v
              + 2 * _A * _D + 4 * _A)           # attention output, fp32 log-sum-exp
_FFN = (2 * _H + 4 + 2 * _H) + 8 * _F           # norm; w1 out, SiLU out, w3 out, product (4 x 2F)
HAND = {
    "none": _ATTENTION + _FFN,
    "selective": _ATTENTION + _FFN - 4 * _A,    # Megatron: the attention core (here its log-sum-exp) recomputed
    # torchtitan per-op SAC: block input, wq, wv, SDPA output + log-sum-exp, w1, w2 (every 2nd mm recomputed)
    "op_selective": 2 * _H + 2 * _A * _D + 2 * _KV * _D + 2 * _A * _D + 4 * _A + 2 * _F + 2 * _H,
    "full": 2 * _H,                             # the checkpointed block's input
}


@pytest.mark.parametrize("mode", sorted(HAND))
def test_stage_activations_are_the_tensor_count(mode):
    # the stage model's per-layer activation term is LAYER_ACTIVATION_BYTES (xlcalc.formulas.activations, checked
    # against PyTorch's saved tensors): whole sequence and CP given, the tokens split by CP
    assert HAND["none"] == 168072 and HAND["op_selective"] == 63616
    for cp in (1, 4):
        env = evaluate(resolve({**LLAMA8B, "seq_len": 8192, "cp": cp, "recompute": mode}), validated=True)
        tokens = 8192 // cp
        assert env["Layer_Act_Bytes"] == tokens * HAND[mode]
        assert env["Layer_Act_Bytes_No_Recompute"] == tokens * HAND["none"]
        # the recompute working set: one layer's tensors re-materialised in its backward, once per GPU
        assert env["Mem_Recompute_GB"] == pytest.approx(tokens * (HAND["none"] - HAND[mode]) / 1e9)
        assert env["Mem_First_Activations_GB"] == pytest.approx(32 * tokens * HAND[mode] / 1e9)


def test_stage_activations_with_tensor_and_sequence_parallelism():
    # TP 2 with SP: the norm/residual region split over 2; heads, KV heads and F split over 2; SP adds nothing
    # under none (the all-gathered norm output is the linear layers' input, kept once: l*h*r)
    t = 2
    attention = (2 * _H + 4 + 2 * _H) / t + 2 * (_A // t) * _D + 4 * (_KV // t) * _D + 2 * (_A // t) * _D + 4 * (_A // t)
    ffn = (2 * _H + 4 + 2 * _H) / t + 8 * _F / t
    env = evaluate(resolve({**LLAMA8B, "seq_len": 4096, "tp": t, "seq_parallel": True}), validated=True)
    assert env["Layer_Act_Bytes"] == pytest.approx(4096 * (attention + ffn))


def test_fsdp_under_pipelining_keeps_the_stage_gathered_with_unsharded_gradients():
    # DeepSpeed refuses ZeRO-2/3 with pipelines, so ZeRO-3 with PP > 1 is PyTorch FSDP2 under pipelining: no reshard
    # after forward (torchtitan), no reshard after backward and no gradient sync until the last micro-batch
    # (torch.distributed.pipelining), unsharded gradients accumulated in the reduce dtype (FSDP2): per GPU
    # (2 + bytes_grads) x stage params / TP. Llama 3.1 8B, PP 4 (8 layers + a table per stage), TP 2, fp32 gradients
    layer = x.layer_params_b(8.03, 32, 4096, 128256)
    stage = 8 * layer + 128256 * 4096 / 1e9
    assert x.mem_gathered_params_gb(layer, 2, 3, 0, 4, stage, 4) == pytest.approx(6 * stage / 2)
    assert x.mem_gathered_params_gb(layer, 2, 3, 0, 1, stage, 4) == pytest.approx(4 * layer / 2)  # DeepSpeed
    assert x.mem_gathered_params_gb(layer, 2, 1, 0, 4, stage, 4) == 0                         # not sharded
    m = gb(tp=2, pp=4, dp=8, zero_stage=3, bytes_grads=4)
    assert m.parts_gb["first"]["gathered_params"] == pytest.approx(6 * stage / 2)


def test_gradients_freed_between_steps_take_the_later_moment():
    # PyTorch's Optimizer.zero_grad() sets gradients to None (set_to_none=True, the default since 2.0): at the start
    # of the backward, with every activation held, no gradient exists yet; at the optimizer step every gradient and
    # no activation. Llama 3.1 8B under FSDP over 8 GPUs, fp32 gradients: 8.03e9 x 4 / 8 = 4.015 GB.
    kept = gb(dp=8, zero_stage=3, recompute="op_selective", bytes_grads=4)
    freed = gb(dp=8, zero_stage=3, recompute="op_selective", bytes_grads=4, grads_freed=True)
    p = kept.parts_gb["first"]
    assert p["gradients"] == pytest.approx(8.03 * 4 / 8)
    act = p["activations"] + p["recompute_working"] + p["logits"]
    assert act > p["gradients"]
    assert freed.memory_gb == pytest.approx(kept.memory_gb - p["gradients"])
    # a short sequence: the gradients outweigh the activations, and the optimizer step is the peak
    kept = gb(dp=8, zero_stage=3, recompute="full", bytes_grads=4, seq_len=128, logits_buffer_bytes=0)
    freed = gb(dp=8, zero_stage=3, recompute="full", bytes_grads=4, seq_len=128, logits_buffer_bytes=0,
               grads_freed=True)
    p = kept.parts_gb["first"]
    act = p["activations"] + p["recompute_working"] + p["logits"]
    assert act < p["gradients"]
    assert freed.memory_gb == pytest.approx(kept.memory_gb - act)
    # a pipeline stage accumulates gradients over micro-batches while others are in flight: the sum holds
    kw = dict(dp=4, pp=2, zero_stage=1, recompute="full", bytes_grads=4)
    assert gb(**kw, grads_freed=True).memory_gb == pytest.approx(gb(**kw).memory_gb)
    # the default is Megatron's persistent gradient buffer
    assert MEMORY_DEFAULTS["grads_freed"] is False


def test_optimizer_step_temporaries_join_the_gradients_at_the_step():
    # PyTorch's foreach AdamW (torch/optim/adam.py, _multi_tensor_adam): exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)
    # is one tensor of each parameter's size and dtype while the step runs, beside every gradient and after the
    # backward freed the activations. Llama 3.1 8B, fp32 parameters, ZeRO-1 over 8 GPUs: 8.03e9 x 4 / 8 = 4.015 GB
    assert x.mem_optimizer_step_gb(8.03, 1, 8, 1, 1, 4) == pytest.approx(8.03 * 4 / 8)
    assert x.mem_optimizer_step_gb(8.03, 0, 8, 2, 1, 2) == pytest.approx(8.03 * 2 / 2)   # not sharded, TP 2
    assert MEMORY_DEFAULTS["optimizer_step_bytes"] == 0                                   # a fused step
    kw = dict(dp=8, zero_stage=1, bytes_weights=4, bytes_grads=4, bytes_optimizer=8, seq_len=128,
              logits_buffer_bytes=0, recompute="full")
    fused, foreach = gb(**kw), gb(**kw, optimizer_step_bytes=4)
    p = fused.parts_gb["first"]
    act = p["activations"] + p["recompute_working"] + p["logits"]
    step = 8.03 * 4 / 8
    assert act < step  # short sequences: the step is heavier than the activations
    # gradients kept (Megatron's buffer): gradients + the larger of activations and the step's temporaries
    assert foreach.memory_gb == pytest.approx(fused.memory_gb - act + step)
    # gradients freed: the larger of gradients + temporaries (the step) and activations (the backward's start)
    freed, freed_foreach = gb(**kw, grads_freed=True), gb(**kw, grads_freed=True, optimizer_step_bytes=4)
    assert freed_foreach.memory_gb == pytest.approx(freed.memory_gb + step)
    # long sequences: the activations outweigh gradients + temporaries, and the step adds nothing
    kw.update(seq_len=8192, logits_buffer_bytes=12, recompute="none")
    assert gb(**kw, grads_freed=True, optimizer_step_bytes=4).memory_gb == pytest.approx(gb(**kw, grads_freed=True).memory_gb)


def test_autocast_weight_copies_are_kept_as_activations():
    # torch.autocast casts each fp32 weight to bf16 once per region and the matmul saves the copy for the backward:
    # 2 bytes per layer parameter per micro-batch in flight, plus the output layer's V*h on the last stage.
    # Llama 3.1 8B, TP 2, no recompute: one layer 2 x layer params / 2
    layer = x.layer_params_b(8.03, 32, 4096, 128256)
    assert x.act_autocast_copy_bytes(layer, 2, "none", 2) == pytest.approx(2 * layer * 1e9 / 2)
    assert x.act_autocast_copy_bytes(layer, 2, "full", 2) == 0           # recomputed with its layer
    assert MEMORY_DEFAULTS["autocast_copy_bytes"] == 0
    kw = dict(seq_len=2048, logits_buffer_bytes=12, bytes_weights=4, bytes_grads=4, bytes_optimizer=8)
    plain, cast = gb(**kw).parts_gb["first"], gb(**kw, autocast_copy_bytes=2).parts_gb["first"]
    assert cast["activations"] - plain["activations"] == pytest.approx(32 * 2 * layer)
    assert cast["logits"] - plain["logits"] == pytest.approx(2 * 128256 * 4096 / 1e9)   # the output layer's copy
    # full recompute: the copies of the one recomputed layer are in its working set
    plain, cast = (gb(**kw, recompute="full").parts_gb["first"],
                   gb(**kw, recompute="full", autocast_copy_bytes=2).parts_gb["first"])
    assert cast["activations"] == pytest.approx(plain["activations"])
    assert cast["recompute_working"] - plain["recompute_working"] == pytest.approx(2 * layer)


# --- the fit answer ------------------------------------------------------------------------------------------------

def test_fit_verdict_three_ways_by_hand():
    # 70 GB predicted: margin = 0.4 + 0.05 x 70 = 3.9 GB, so 73.9 GB is the upper bound
    assert x.fit_margin_gb(70, 0.4, 0.05) == pytest.approx(3.9)
    assert x.fit_verdict(70, 80, 3.9) == "fits"           # 73.9 <= 80
    assert x.fit_verdict(70, 73.9, 3.9) == "fits"         # at the bound: within the card
    assert x.fit_verdict(70, 72, 3.9) == "tight"          # 70 <= 72 < 73.9
    assert x.fit_verdict(70, 70, 3.9) == "tight"
    assert x.fit_verdict(70, 69, 3.9) == "does not fit"   # the prediction alone exceeds the card
    # the boolean is the verdict's "fits", and without a margin the old total <= memory
    for cap in (69, 70, 72, 73.9, 80):
        assert x.fits_in_gpu(70, cap, 3.9) == (x.fit_verdict(70, cap, 3.9) == "fits")
    assert x.fits_in_gpu(70, 70) is True
    # the largest total that fits solves total + 0.4 + 0.05 x total = card: (80 - 0.4) / 1.05
    assert x.fit_capacity_gb(80, 0.4, 0.05) == pytest.approx(75.8095, abs=1e-4)
    assert x.fit_verdict(75.8095, 80, x.fit_margin_gb(75.8095, 0.4, 0.05)) == "fits"
    assert x.fit_verdict(75.82, 80, x.fit_margin_gb(75.82, 0.4, 0.05)) == "tight"


def test_fit_defaults_are_their_sources_figures():
    # ~400 MB CUDA context (pytorch/pytorch#109888); 5% allocator reserve (vllm-project/compressed-tensors#587)
    assert (MEMORY_DEFAULTS["cuda_context_gb"], MEMORY_DEFAULTS["allocator_reserve_frac"]) == (0.4, 0.05)
    src = x.fit_margin_gb.source
    assert "pytorch/pytorch/issues/109888" in src and "compressed-tensors/pull/587" in src


def test_stage_model_fit_uses_the_margin_and_its_largest_micro_batch_fits():
    base = dict(seq_len=8192, tp=2, pp=2, dp=16, zero_stage=1, recompute="selective", memory_gb=60)
    a = gb(**base)
    t = a.memory_gb
    margin = 0.4 + 0.05 * t
    assert a.values["Fit_Margin_GB"] == pytest.approx(margin)
    for cap, want in ((t + margin + 0.5, "fits"), (t + margin / 2, "tight"), (t - 0.5, "does not fit")):
        for compiled in (False, True):
            env = evaluate({**LLAMA8B, **base, "memory_gb": cap}, compiled=compiled)
            assert env["Fit_Verdict"] == want and bool(env["Fits_GPU"]) == (want == "fits")
    answer = a.to_json()["fit"]
    assert answer["verdict"] == "fits" and answer["upper_gb"] == pytest.approx(t + margin)
    assert list(answer["largest_parts_gb"]) == ["activations", "gradients"]
    # the largest micro-batch the answer reports fits with its margin; one more does not
    mb = a.max_micro_batch
    assert mb >= 1
    assert gb(**{**base, "micro_batch": mb}).values["Fit_Verdict"] == "fits"
    assert gb(**{**base, "micro_batch": mb + 1}).values["Fit_Verdict"] != "fits"


@pytest.mark.parametrize("name, value", [("allocator_reserve_frac", 5), ("allocator_reserve_frac", -0.1),
                                         ("cuda_context_gb", -1)])
def test_fit_inputs_refused_with_their_name(name, value):
    with pytest.raises(InputError, match=name):
        gb(memory_gb=80, **{name: value})

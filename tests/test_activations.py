"""LAYER_ACTIVATION_BYTES without PyTorch: Korthikanti et al. 2022 Table 2, recompute modes, layouts.

Expected values come from the paper's equations (xlcalc/data/reference/published.json,
korthikanti22-activation-formulas) or from arithmetic on the tensor list in docs/activations.md;
tests/test_activations_torch.py checks the same formula against PyTorch.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import published_records
from xlcalc import InputError
from xlcalc.formulas.activations import act_recompute_working_bytes, layer_activation_bytes

# GPT-3 175B as Korthikanti et al. count it: MHA, FFN 4h (GELU), LayerNorm, dropout, no flash.
S, B, H, A = 2048, 1, 12288, 96
GPT = dict(seq_len=S, micro_batch=B, hidden=H, heads=A, kv_heads=A, head_dim=H // A, ffn_hidden=4 * H,
           gated_ffn=False, norm_type="layernorm", flash_attention=False, dropout=True)
# The paper leaves out the LayerNorms' fp32 mean and 1/std: 2 norms x 8 bytes per token.
NORM_STATS = 16 * S * B


def test_korthikanti_table2_no_parallelism_and_the_published_example():
    paper = S * B * H * (34 + 5 * A * S / H)
    record = published_records()["korthikanti22-activation-formulas"]["fields"]["example_gpt3_175b_s2048_b1"]
    assert paper == record["bytes_per_layer"]
    assert layer_activation_bytes(**GPT) == pytest.approx(paper + NORM_STATS, rel=1e-12)
    assert layer_activation_bytes(**GPT) == pytest.approx(paper, rel=1e-4)


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_korthikanti_table2_tensor_and_sequence_parallel(t):
    sbh = S * B * H
    assert layer_activation_bytes(**GPT, tp=t) == pytest.approx(
        sbh * (10 + 24 / t + 5 * A * S / (H * t)) + NORM_STATS, rel=1e-12)
    assert layer_activation_bytes(**GPT, tp=t, seq_parallel=True) == pytest.approx(
        sbh / t * (34 + 5 * A * S / H) + NORM_STATS / t, rel=1e-12)
    assert layer_activation_bytes(**GPT, tp=t, seq_parallel=True, recompute="selective") == pytest.approx(
        34 * sbh / t + NORM_STATS / t, rel=1e-12)
    assert layer_activation_bytes(**GPT, tp=t, recompute="selective") == pytest.approx(
        sbh * (10 + 24 / t) + NORM_STATS, rel=1e-12)
    assert layer_activation_bytes(**GPT, tp=t, recompute="full") == 2 * sbh
    assert layer_activation_bytes(**GPT, tp=t, seq_parallel=True, recompute="full") == pytest.approx(2 * sbh / t)


def test_korthikanti_selective_tp8_sp_derived_check():
    # derived_checks gpt3_per_layer_selective_tp8_GB = 0.107 (34sbh/t)
    got = layer_activation_bytes(**GPT, tp=8, seq_parallel=True, recompute="selective") / 1e9
    assert got == pytest.approx(0.107, abs=5e-4)


LLAMA_70B = dict(seq_len=8192, micro_batch=1, hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn_hidden=28672,
                 gated_ffn=True)  # SwiGLU


def test_llama_layer_by_hand():
    """Llama 3 70B, one layer, none: the tensor list of docs/activations.md summed by hand."""
    s, h, a, k, d, f = 8192, 8192, 64, 8, 128, 28672
    per_token = (2 * h + 4 + 2 * h) + 2 * a * d + 2 * k * d + 2 * k * d + 2 * a * d + 4 * a \
        + (2 * h + 4 + 2 * h) + 8 * f
    assert layer_activation_bytes(**LLAMA_70B) == s * per_token
    # op_selective: input, wq, wv, attention output + lse, w1, w2
    op = 2 * h + 2 * a * d + 2 * k * d + 2 * a * d + 4 * a + 2 * f + 2 * h
    assert layer_activation_bytes(**LLAMA_70B, recompute="op_selective") == s * op
    assert layer_activation_bytes(**LLAMA_70B, recompute="selective") == s * (per_token - 4 * a)


def test_fp8_linear_inputs_change_exactly_what_linear_layers_keep():
    s, h, a, d, f = 8192, 8192, 64, 128, 28672
    # norm outputs (2) and the SwiGLU product drop from 2 to 1 byte; wo keeps its own 1-byte copy
    saved = layer_activation_bytes(**LLAMA_70B) - layer_activation_bytes(**LLAMA_70B, linear_input_bytes=1)
    assert saved == s * (h + h + f - a * d)


def test_context_parallel_splits_every_token_with_flash():
    one = layer_activation_bytes(**LLAMA_70B)
    for cp in (2, 4, 8):
        assert layer_activation_bytes(**LLAMA_70B, cp=cp) == pytest.approx(one / cp, rel=1e-12)


def test_context_parallel_unfused_scores_are_local_queries_by_all_keys():
    args = dict(LLAMA_70B, flash_attention=False)
    scores = 2 * 64 * 8192 * 8192  # 2 bytes x heads x s x s
    assert layer_activation_bytes(**args) - layer_activation_bytes(**args, recompute="selective") == scores
    two = layer_activation_bytes(**args, cp=2) - layer_activation_bytes(**args, cp=2, recompute="selective")
    assert two == scores / 2


MODES = ("none", "selective", "op_selective", "full")


@given(st.sampled_from([1, 2, 4, 8]), st.booleans(), st.booleans(), st.integers(1, 8),
       st.sampled_from([0, 8, 64]), st.sampled_from([0, 512]))
def test_recompute_modes_keep_less(tp, sp, flash, b, experts, kv_lora):
    # Llama 3 8B's shape, SwiGLU FFN included (gated_ffn: the FFN-shaped functions' default is a plain FFN)
    args = dict(seq_len=4096, micro_batch=b, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn_hidden=14336,
                gated_ffn=True,
                tp=tp, seq_parallel=sp, flash_attention=flash, experts=experts, topk=2, expert_ffn_hidden=2048,
                kv_lora_rank=kv_lora, q_lora_rank=kv_lora, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
    none, sel, op, full = (layer_activation_bytes(**args, recompute=m) for m in MODES)
    assert full < op < none
    assert full < sel <= none
    for m, kept in zip(MODES, (none, sel, op, full)):
        assert act_recompute_working_bytes(**args, recompute=m) == pytest.approx(none - kept)


@given(st.integers(1, 64), st.sampled_from(MODES), st.sampled_from([0, 16]))
def test_linear_in_micro_batch(b, mode, experts):
    args = dict(LLAMA_70B, recompute=mode, experts=experts, topk=2, expert_ffn_hidden=4096)
    one = layer_activation_bytes(**dict(args, micro_batch=1))
    assert math.isclose(layer_activation_bytes(**dict(args, micro_batch=b)), b * one, rel_tol=1e-12)


def test_expert_parallel_keeps_the_same_rows_and_adds_all_to_all_outputs_when_op_selective():
    args = dict(LLAMA_70B, experts=16, topk=2, expert_ffn_hidden=4096)
    assert layer_activation_bytes(**args, ep=8) == layer_activation_bytes(**args)
    extra = layer_activation_bytes(**args, ep=8, recompute="op_selective") - \
        layer_activation_bytes(**args, recompute="op_selective")
    assert extra == 8192 * (2 * 2 * 8192 + 2 * 2 * 8192)  # dispatch 2Rh + combine 2kh, R = 1 x 2 rows per token


@pytest.mark.parametrize("bad, name, allowed", [
    (dict(heads=64, tp=3), "tp", "a divisor of heads = 64"),
    (dict(kv_heads=6, tp=4, heads=48), "kv_heads", "a multiple or a divisor of tp = 4"),
    (dict(experts=10, ep=4, topk=2, expert_ffn_hidden=1), "ep", "a divisor of experts = 10"),
    (dict(experts=4, topk=6, expert_ffn_hidden=1), "topk", "at most experts = 4"),
    (dict(kv_lora_rank=512, qk_rope_head_dim=64), "qk_nope_head_dim", "MLA"),
])
def test_impossible_layouts_are_errors_naming_the_constraint(bad, name, allowed):
    with pytest.raises(InputError) as err:
        layer_activation_bytes(**dict(LLAMA_70B, **bad))
    assert name in str(err.value) and allowed in str(err.value)

"""LAYER_ACTIVATION_BYTES against PyTorch's own count of what a layer keeps for its backward pass.

PyTorch is the judge: tiny Llama-style, MLA and MoE layers (tests/torch_blocks.py) run on the CPU in
bf16 under no checkpointing, per-op selective checkpointing with torchtitan's policy, and full
checkpointing; the bytes they keep (unique storages) must be within 5% of the formula for every
mode and shape. A tensor-parallel shape is the layer one TP rank holds (heads/tp, kv_heads/tp,
ffn/tp; experts' inner size / etp), asked of the formula with the whole model's sizes and tp.

Skips where torch is not installed (``pip install torch==2.13.0`` or the ``torch`` extra), except
under CI=true, where it fails.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip("torch is not installed: pip install torch==2.13.0 (the 'torch' extra) to run these tests",
                allow_module_level=True)

import torch_blocks as tb  # noqa: E402

torch.set_num_threads(1)  # tiny layers: one thread is fastest, and fair on a shared machine
from xlcalc.formulas.activations import layer_activation_bytes  # noqa: E402

TOLERANCE = 0.05

BASE = tb.Shape()  # h 256, 8 heads, 2 KV heads, head 32, SwiGLU 512, RMSNorm, flash
MOE = replace(BASE, experts=8, topk=2, experts_ffn=128)
MLA = replace(BASE, kv_lora_rank=64, q_lora_rank=96)

# name -> (the whole layer's shape, tp, etp): the harness builds what one rank holds
CASES = {
    "llama-gqa": (BASE, 1, 1),
    "llama-gqa-tp2": (BASE, 2, 1),
    "llama-gqa-tp4-kv-replicated": (BASE, 4, 1),  # 2 KV heads over 4 ranks: each keeps one
    "llama-mha": (replace(BASE, kv_heads=8), 1, 1),
    "llama-unfused-attention": (replace(BASE, flash=False), 1, 1),
    "gpt-layernorm-gelu-dropout-unfused": (replace(BASE, kv_heads=8, gated=False, norm="layer", flash=False,
                                                   dropout=0.1, ffn=1024), 1, 1),
    "gpt-tp2": (replace(BASE, kv_heads=8, gated=False, norm="layer", flash=False, dropout=0.1, ffn=1024), 2, 1),
    "moe-top2": (MOE, 1, 1),
    "moe-top1-capacity-1.25": (replace(MOE, topk=1, capacity_factor=1.25), 1, 1),
    "moe-tp2-etp2": (MOE, 2, 2),
    "mla-q-lora": (MLA, 1, 1),
    "mla-no-q-lora": (replace(MLA, q_lora_rank=0), 1, 1),
    "mla-q-lora-moe-tp2": (replace(MLA, experts=8, topk=2, experts_ffn=128), 2, 1),
}
SIZES = [(64, 1), (128, 2)]  # (sequence length, micro-batch)


def local_shape(shape: tb.Shape, tp: int, etp: int) -> tb.Shape:
    """What one tensor-parallel rank computes."""
    return replace(shape, heads=shape.heads // tp, kv_heads=max(shape.kv_heads // tp, 1), ffn=shape.ffn // tp,
                   experts_ffn=shape.experts_ffn // etp)


def formula_bytes(shape: tb.Shape, tp: int, etp: int, seq: int, batch: int, mode: str) -> float:
    return layer_activation_bytes(
        seq, batch, shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, shape.ffn,
        gated_ffn=shape.gated, norm_type="layernorm" if shape.norm == "layer" else "rmsnorm",
        flash_attention=shape.flash, dropout=shape.dropout > 0, tp=tp, recompute=mode,
        experts=shape.experts, topk=shape.topk, capacity_factor=shape.capacity_factor,
        expert_ffn_hidden=shape.experts_ffn, etp=etp, q_lora_rank=shape.q_lora_rank,
        kv_lora_rank=shape.kv_lora_rank, qk_rope_head_dim=shape.rope_dim, qk_nope_head_dim=shape.nope_dim,
        v_head_dim=shape.v_dim,
    )


_layers: dict = {}


def _layer(shape: tb.Shape):
    if shape not in _layers:
        _layers[shape] = tb.make_layer(shape, max_seq=max(s for s, _ in SIZES))
    return _layers[shape]


@pytest.mark.parametrize("mode", tb.MODES)
@pytest.mark.parametrize("seq, batch", SIZES, ids=[f"s{s}-b{b}" for s, b in SIZES])
@pytest.mark.parametrize("case", list(CASES))
def test_formula_within_5_percent_of_pytorch(case, seq, batch, mode):
    shape, tp, etp = CASES[case]
    measured = tb.kept_bytes(_layer(local_shape(shape, tp, etp)), batch, seq, mode)
    predicted = formula_bytes(shape, tp, etp, seq, batch, mode)
    assert measured > 0
    assert abs(predicted / measured - 1) <= TOLERANCE, (case, seq, batch, mode, predicted, measured)


@pytest.mark.parametrize("mode", ["none", "full"])
@pytest.mark.parametrize("case", ["llama-gqa", "gpt-layernorm-gelu-dropout-unfused", "moe-top2", "mla-q-lora"])
def test_the_two_instruments_agree(case, mode):
    """saved_tensors_hooks sees every saved tensor without checkpointing and the checkpoint's saved
    input with full checkpointing; the liveness count must find exactly those bytes."""
    shape, tp, etp = CASES[case]
    layer = _layer(local_shape(shape, tp, etp))
    assert tb.kept_bytes(layer, 2, 64, mode) == tb.saved_tensor_bytes(layer, 2, 64, mode)


@pytest.mark.parametrize("mode", tb.MODES)
def test_the_backward_runs_after_counting(mode):
    """The counted graph is a real one: the backward pass runs through it (and through the recompute)."""
    layer = tb.make_layer(MOE, max_seq=64)
    assert tb.kept_bytes(layer, 1, 32, mode, backward=True) > 0
    assert all(p.grad is not None for p in layer.parameters())


def test_checkpointing_keeps_less_and_full_keeps_the_input():
    layer = _layer(BASE)
    none, op_sel, full = (tb.kept_bytes(layer, 2, 64, m) for m in ("none", "op_selective", "full"))
    assert full < op_sel < none
    assert full == 2 * 64 * 2 * BASE.hidden  # bf16 layer input: 2 bytes x s x b x h


def test_selective_policy_saves_every_other_matmul():
    """The harness policy is torchtitan's: of a Llama block's 7 mms, the 1st, 3rd, 5th and 7th are saved."""
    layer = _layer(BASE)
    kept = tb.kept_bytes(layer, 1, 64, "op_selective", detail=True)
    mm = sorted(n for n, op in kept if op == "aten.mm.default")
    s, h, a, k, d, f = 64, BASE.hidden, BASE.heads, BASE.kv_heads, BASE.head_dim, BASE.ffn
    assert mm == sorted([2 * s * a * d, 2 * s * k * d, 2 * s * f, 2 * s * h])  # wq, wv, w1, w2

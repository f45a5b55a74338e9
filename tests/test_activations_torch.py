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

import pytest

from requires import require_module

torch = require_module("torch", "torch is not installed: pip install torch==2.13.0 (the 'torch' extra)")

import torch_blocks as tb  # noqa: E402

torch.set_num_threads(1)  # tiny layers: one thread is fastest, and fair on a shared machine

TOLERANCE = 0.05
BASE, MOE, CASES, SIZES = tb.BASE, tb.MOE_SHAPE, tb.CASES, tb.SIZES
local_shape, formula_bytes = tb.local_shape, tb.formula_bytes


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


def test_docs_table_is_what_a_new_run_measures():
    """docs/activations.md states only figures scripts/make_activation_docs.py regenerates: every row's
    formula bytes exactly, PyTorch's bytes within 1% (MoE routing, hence dropped tokens, may differ
    by a few tokens between CPUs)."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "activations.md").read_text(encoding="utf-8")
    table = [line for line in doc.splitlines() if line.startswith("| ") and line.count("|") == 12]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table[1:]]
    assert len(rows) == len(CASES) * len(SIZES) * len(tb.MODES)
    for case, tp, etp, seq, batch, mode, measured, predicted, *_ in rows:
        shape = CASES[case][0]
        tp, etp, seq, batch = int(tp), int(etp), int(seq), int(batch)
        assert float(predicted.replace(",", "")) == round(formula_bytes(shape, tp, etp, seq, batch, mode))
        fresh = tb.kept_bytes(_layer(local_shape(shape, tp, etp)), batch, seq, mode)
        assert abs(int(measured.replace(",", "")) / fresh - 1) <= 0.01, (case, seq, batch, mode)
    peaks = [[c.strip() for c in line.strip("|").split("|")] for line in doc.splitlines()
             if line.startswith("| ") and line.count("|") == 2 * len(tb.MODES) + 3][1:]
    assert peaks
    for case, seq, batch, *cells in peaks:
        shape, tp, etp = CASES[case]
        for mode, cell in zip(tb.MODES, cells):
            fresh = tb.backward_peak_bytes(_layer(local_shape(shape, tp, etp)), int(batch), int(seq), mode)
            assert abs(int(cell.replace(",", "")) / fresh - 1) <= 0.01, (case, mode)


@pytest.mark.parametrize("mode", ["op_selective", "full"])
@pytest.mark.parametrize("case", ["llama-gqa", "llama-unfused-attention", "moe-top2", "mla-q-lora", "mla-no-q-lora"])
def test_recompute_working_set_at_the_backward_peak(case, mode):
    """What the backward adds on top of the kept bytes, beyond what it adds without recomputation, is
    ACT_RECOMPUTE_WORKING_BYTES (within 5% of the backward's peak)."""
    from xlcalc.formulas.activations import act_recompute_working_bytes

    shape, tp, etp = CASES[case]
    layer = _layer(local_shape(shape, tp, etp))
    seq, batch = SIZES[-1]
    peak_none = tb.backward_peak_bytes(layer, batch, seq, "none")
    grads_etc = peak_none - tb.kept_bytes(layer, batch, seq, "none")  # gradients in flight, no recompute
    added = tb.backward_peak_bytes(layer, batch, seq, mode) - tb.kept_bytes(layer, batch, seq, mode)
    working = act_recompute_working_bytes(
        seq, batch, shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, shape.ffn, gated_ffn=shape.gated,
        flash_attention=shape.flash, tp=tp, recompute=mode, experts=shape.experts, topk=shape.topk,
        capacity_factor=shape.capacity_factor, expert_ffn_hidden=shape.experts_ffn, etp=etp,
        q_lora_rank=shape.q_lora_rank, kv_lora_rank=shape.kv_lora_rank, qk_rope_head_dim=shape.rope_dim,
        qk_nope_head_dim=shape.nope_dim, v_head_dim=shape.v_dim)
    assert abs(added - (working + grads_etc)) <= TOLERANCE * peak_none, (added, working, grads_etc)

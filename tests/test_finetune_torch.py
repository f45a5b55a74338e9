"""ACT_FROZEN_SAVING_BYTES against PyTorch: what a LoRA layer with a frozen base keeps for its backward pass.

The judge is PyTorch itself: the tiny Llama-style layer of tests/torch_blocks.py runs on the CPU in bf16 once with
every weight trainable (pre-training, full fine-tuning) and once frozen with LoRA adapters on some matrices; the
bytes each keeps for the backward (unique storages made in the forward, tests/torch_blocks.kept_bytes) differ by
what only the frozen matrices' weight gradients needed. That difference must match the formula.

Skips where torch is not installed (``pip install torch==2.13.0``), except under CI=true, where it fails.
"""

from __future__ import annotations

import pytest

from requires import require_module

torch = require_module("torch", "torch is not installed: pip install torch==2.13.0 (the 'torch' extra)")

from torch import nn  # noqa: E402

import torch_blocks as tb  # noqa: E402
from xlcalc.formulas.finetune import act_frozen_saving_bytes  # noqa: E402

torch.set_num_threads(1)

RANK = 4
# LoRA target sets (xlcalc's lora_targets) -> the modules of torch_blocks.Layer that get adapters
TARGETS = {
    "qv": ("attention.wq", "attention.wv"),
    "qkv": ("attention.wq", "attention.wk", "attention.wv"),
    "attention": ("attention.wq", "attention.wk", "attention.wv", "attention.wo"),
    "all_linear": ("attention.wq", "attention.wk", "attention.wv", "attention.wo", "ffn.w1", "ffn.w3", "ffn.w2"),
}


class LoRALinear(nn.Module):
    """W0 x + B A x (Hu et al. 2021): W0 frozen, A (r x k) and B (d x r) trained; no dropout."""

    def __init__(self, base: nn.Linear, rank: int):
        super().__init__()
        self.base = base
        self.lora_a = nn.Linear(base.in_features, rank, bias=False, dtype=tb.DTYPE)
        self.lora_b = nn.Linear(rank, base.out_features, bias=False, dtype=tb.DTYPE)
        nn.init.normal_(self.lora_a.weight, std=0.02)
        nn.init.normal_(self.lora_b.weight, std=0.02)  # not zero, so the backward runs through both

    def forward(self, x):
        return self.base(x) + self.lora_b(self.lora_a(x))


def lora_layer(shape: tb.Shape, targets: str) -> tb.Layer:
    layer = tb.make_layer(shape)
    for p in layer.parameters():
        p.requires_grad_(False)
    for path in TARGETS[targets]:
        parent_name, name = path.rsplit(".", 1)
        parent = layer.get_submodule(parent_name)
        setattr(parent, name, LoRALinear(getattr(parent, name), RANK))
    return layer


def _adapter_bytes(shape: tb.Shape, targets: str, seq: int, batch: int) -> int:
    """The rank-r intermediates A x the adapters keep (bf16), which the formula leaves out."""
    return 2 * RANK * seq * batch * len(TARGETS[targets])


@pytest.mark.parametrize("targets", list(TARGETS))
@pytest.mark.parametrize("seq, batch", tb.SIZES)
def test_frozen_base_keeps_less_by_the_formula(targets, seq, batch):
    shape = tb.BASE
    trained = tb.kept_bytes(tb.make_layer(shape), batch, seq, "none")
    frozen = tb.kept_bytes(lora_layer(shape, targets), batch, seq, "none", backward=True)
    saving = act_frozen_saving_bytes(seq, batch, shape.hidden, shape.ffn, job="lora", lora_targets=targets)
    if targets == "all_linear":
        assert saving == 0
    else:  # the FFN input (2h) and the down projection's input (2F) per token
        assert saving == seq * batch * (2 * shape.hidden + 2 * shape.ffn)
    measured = trained - frozen + _adapter_bytes(shape, targets, seq, batch)
    assert measured == saving, (targets, trained, frozen, saving)  # exact: the formula counts what autograd keeps


def test_full_recompute_keeps_the_layer_input_either_way():
    shape, (seq, batch) = tb.BASE, tb.SIZES[0]
    trained = tb.kept_bytes(tb.make_layer(shape), batch, seq, "full")
    frozen = tb.kept_bytes(lora_layer(shape, "qv"), batch, seq, "full")
    assert frozen == trained == 2 * seq * batch * shape.hidden
    assert act_frozen_saving_bytes(seq, batch, shape.hidden, shape.ffn, recompute="full", job="lora",
                                   lora_targets="qv") == 0

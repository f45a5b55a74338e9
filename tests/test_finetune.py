"""Fine-tuning formulas: LoRA adapter counts, QLoRA's 4-bit base, seed 002's LoRA formula as a special case.

Expected values come from the LoRA and QLoRA papers, the QLoRA training script, seed 002 and hand counts.
"""

from __future__ import annotations

import pytest

from xlcalc import catalog
from xlcalc.errors import InputError
from xlcalc.formulas.finetune import lora_params_b, mem_qlora_base_gb, mem_qlora_gb, nf4_bytes_per_param
from xlcalc.formulas.memory import mem_lora_gb, mem_static_gb

# LLaMA-65B (Touvron et al. 2023 Table 2: dim 8192, 64 heads, 80 layers; FFN 2/3 x 4d rounded up to a
# multiple of 256 as in Meta's reference code = 22016; vocabulary 32,000, untied).
LLAMA65 = dict(hidden=8192, layers=80, heads=64, kv_heads=64, head_dim=128, ffn_hidden=22016, gated_ffn=True)
LLAMA65_PARAMS_B = 65.2          # LLaMA paper Table 2 (published.json llama1-65b)
LLAMA65_EMBED_B = 2 * 32000 * 8192 / 1e9


def test_ffn_size_of_llama_65b_follows_the_reference_rounding():
    hidden = int(2 * 4 * 8192 / 3)
    assert 256 * ((hidden + 255) // 256) == LLAMA65["ffn_hidden"]


def test_lora_paper_table4_gpt3_counts():
    # Hu et al. 2021 Table 4: GPT-3 175B with LoRA on Wq and Wv: 4.7M trainable parameters (r = 1) and
    # 37.7M (r = 8); each adapted 12288 x 12288 matrix has r(12288 + 12288) parameters, 96 layers.
    g = catalog.get_model("gpt3-175b")
    arch = dict(hidden=g.hidden, layers=g.layers, heads=g.heads, kv_heads=g.kv, head_dim=g.dh,
                ffn_hidden=g.ffn_hidden, gated_ffn=False, lora_targets="qv")
    assert round(lora_params_b(lora_rank=1, **arch) * 1e3, 1) == 4.7
    assert round(lora_params_b(lora_rank=8, **arch) * 1e3, 1) == 37.7


def test_lora_all_linear_hand_count():
    # r x (q, k, v, o: 4 x (8192 + 8192) + gate, up, down: 3 x (8192 + 22016)) x 80 layers
    expected = 64 * (4 * (8192 + 8192) + 3 * (8192 + 22016)) * 80 / 1e9
    assert lora_params_b(lora_rank=64, **LLAMA65) == pytest.approx(expected, rel=1e-12)
    gqa = dict(LLAMA65, kv_heads=8)  # k and v shrink to 8 heads x 128
    assert lora_params_b(lora_rank=1, lora_targets="attention", **gqa) * 1e9 == \
        80 * (2 * (8192 + 8192) + 2 * (8192 + 1024))


def test_qlora_constants_cost_0127_bits_per_parameter():
    # Dettmers et al. 2023 §3: 32/64 = 0.5 bits of constants per parameter, 8/64 + 32/(64 x 256) = 0.127
    # with double quantisation.
    assert (nf4_bytes_per_param(64, False) * 8 - 4) == pytest.approx(0.5)
    assert round(nf4_bytes_per_param(64, True) * 8 - 4, 3) == 0.127


def test_seed002_lora_formula_is_the_special_case():
    # seed 002 §7.1.2: LoRA states = 2P + 14P'. With nothing quantised (all parameters kept in 16 bit)
    # the QLoRA states reduce to it.
    p, t = 70, 0.2
    assert mem_lora_gb(p, t) == 2 * p + 14 * t
    assert mem_qlora_gb(p, embed_params_b=p, trainable_params_b=t) == pytest.approx(mem_lora_gb(p, t))


def test_qlora_fits_65b_in_48gb_as_published():
    # QLoRA abstract: "finetune a 65B parameter model on a single 48GB GPU"; the repository's
    # scripts/finetune_guanaco_65b.sh (commit 0b46ca8): --bits 4 --double_quant --quant_type nf4 --bf16 --lora_r 64
    # --lora_modules all --gradient_checkpointing --per_device_train_batch_size 4; qlora.py casts the
    # adapters to bf16 and uses paged_adamw_32bit: 2 (weights) + 2 (gradients) + 8 (Adam m, v) bytes.
    adapters = lora_params_b(lora_rank=64, **LLAMA65)
    states = mem_qlora_gb(LLAMA65_PARAMS_B, LLAMA65_EMBED_B, adapters, bytes_trainable=12)
    # activations with gradient checkpointing: one layer input per layer, 4 sequences of 528 tokens (16 + 512), bf16
    checkpoints = 80 * 4 * 528 * 8192 * 2 / 1e9
    assert states + checkpoints < 48
    # ... while LoRA on a 16-bit base (seed 002: 2P + 14P') is far beyond one GPU, and so is full fine-tuning.
    assert mem_lora_gb(LLAMA65_PARAMS_B, adapters) > 2.5 * 48
    assert mem_static_gb(LLAMA65_PARAMS_B) > 20 * 48


def test_qlora_base_counts_embeddings_in_16_bit():
    base = mem_qlora_base_gb(10, 1)
    assert base == pytest.approx(9 * nf4_bytes_per_param() + 1 * 2)


@pytest.mark.parametrize("call, name", [
    (lambda: lora_params_b(8192, 80, 64, 64, 128, 22016, 0), "lora_rank"),
    (lambda: lora_params_b(8192, 80, 64, 64, 128, 22016, 8, "mlp"), "lora_targets"),
    (lambda: nf4_bytes_per_param(0), "quant_block"),
    (lambda: mem_qlora_base_gb(10, -1), "embed_params_b"),
    (lambda: mem_qlora_base_gb(10, 11), "embed_params_b"),
    (lambda: mem_qlora_gb(10, 11, 0.1), "embed_params_b"),
])
def test_bad_input_names_the_input(call, name):
    with pytest.raises(InputError) as info:
        call()
    assert info.value.name == name

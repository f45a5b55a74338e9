"""Fine-tuning: LoRA adapter sizes, QLoRA's 4-bit base weights, and the model states of LoRA/QLoRA.

Full fine-tuning keeps every model state of pre-training (``mem_static_gb`` with a precision recipe);
LoRA freezes the base and trains low-rank adapters (seed 002: 2P + 14P'); QLoRA also stores the frozen
base in 4-bit NormalFloat with (double-quantised) block constants (Dettmers et al. 2023).
"""

from __future__ import annotations

from ..errors import InputError
from ..expr import eq, if_
from ..registry import formula

__all__ = ["lora_params_b", "nf4_bytes_per_param", "mem_qlora_base_gb", "mem_qlora_gb"]


@formula(
    udf="LORA_PARAMS_B", unit="billion parameters", category="fine-tuning",
    equation=(
        "r x sum over adapted d_in x d_out matrices of (d_in + d_out) x L; qv: q (h, a*dh), v (h, kv*dh); "
        "attention: + k (h, kv*dh), o (a*dh, h); all_linear: + FFN up/gate (h, F) and down (F, h)"
    ),
    source="Hu et al. 2021 (LoRA) §4: W0 + BA with B (d x r), A (r x k), r(d + k) trainable per matrix; Table 4: "
           "GPT-3 175B on Wq, Wv 4.7M (r = 1) and 37.7M (r = 8); Dettmers et al. 2023 (QLoRA): adapters on all linear layers",
)
def lora_params_b(hidden, layers, heads, kv_heads, head_dim, ffn_hidden, lora_rank, lora_targets="all_linear",
                  gated_ffn=True):
    """Trainable parameters of LoRA adapters of rank r on the chosen matrices of every layer, billions."""
    q = hidden + heads * head_dim
    kv = hidden + kv_heads * head_dim
    attention = q + 2 * kv + q
    ffn = if_(gated_ffn, 3, 2) * (hidden + ffn_hidden)
    per_layer = if_(eq(lora_targets, "qv"), q + kv, if_(eq(lora_targets, "attention"), attention, attention + ffn))
    return lora_rank * per_layer * layers / 1e9


@formula(
    udf="NF4_BYTES_PER_PARAM", unit="bytes/param", category="fine-tuning",
    equation="(4 + 32/B) / 8; with double quantisation (4 + 8/B + 32/(256 B)) / 8 (B = 64: 0.5 -> 0.127 bits of constants)",
    source="Dettmers et al. 2023 (QLoRA) §3: 4-bit NormalFloat, block size 64, FP8 second-level constants in blocks of 256",
)
def nf4_bytes_per_param(quant_block=64, double_quant=True):
    """Bytes per base-model parameter stored as 4-bit NormalFloat with its quantisation constants."""
    return (4 + if_(double_quant, 8 / quant_block + 32 / (quant_block * 256), 32 / quant_block)) / 8


def _embed_within_params(*, params_b, embed_params_b, **_):
    if embed_params_b > params_b:
        raise InputError("embed_params_b", embed_params_b, f"at most params_b = {params_b}",
                         "the embeddings are part of the model's parameters")


@formula(
    udf="MEM_QLORA_BASE_GB", unit="GB per GPU", category="fine-tuning",
    equation="(P - E) x NF4 bytes + E x 16-bit bytes: the decoder's linear layers in 4 bit, embeddings, output layer and norms in 16 bit",
    source="Dettmers et al. 2023 (QLoRA) §3; bitsandbytes/transformers 4-bit loading quantises the linear layers and keeps the output layer (lm_head) unquantised",
    check=_embed_within_params,
)
def mem_qlora_base_gb(params_b, embed_params_b, quant_block=64, double_quant=True, bytes_weights=2):
    """Frozen base-model weights of QLoRA, GB (1e9 bytes)."""
    return (params_b - embed_params_b) * nf4_bytes_per_param(quant_block, double_quant) + embed_params_b * bytes_weights


@formula(
    udf="MEM_QLORA_GB", unit="GB per GPU", category="fine-tuning",
    equation="4-bit base (MEM_QLORA_BASE_GB) + k x P' (adapters' weights, gradients and optimizer states)",
    source="Dettmers et al. 2023 (QLoRA); seed 002 §7.1.2 (LoRA: 2P + 14P', the same with a 16-bit base)",
    check=_embed_within_params,
)
def mem_qlora_gb(params_b, embed_params_b, trainable_params_b, quant_block=64, double_quant=True, bytes_weights=2,
                 bytes_trainable=14):
    """Model-state memory of QLoRA fine-tuning on one GPU, GB."""
    return (mem_qlora_base_gb(params_b, embed_params_b, quant_block, double_quant, bytes_weights)
            + bytes_trainable * trainable_params_b)

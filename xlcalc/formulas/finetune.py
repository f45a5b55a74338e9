"""Fine-tuning: LoRA adapter sizes, QLoRA's 4-bit base weights, and the model states of LoRA/QLoRA.

Full fine-tuning keeps every model state of pre-training (``mem_static_gb`` with a precision recipe);
LoRA freezes the base and trains low-rank adapters (seed 002: 2P + 14P'); QLoRA also stores the frozen
base in 4-bit NormalFloat with (double-quantised) block constants (Dettmers et al. 2023).
"""

from __future__ import annotations

from ..errors import InputError
from ..expr.functions import and_, eq, if_, or_
from ..recipes import MEMORY_DEFAULTS as _D  # every input's default, declared once: the signatures read it
from ..recipes import default_bytes
from ..registry import REGISTRY, formula
from .compute import _DAYS, _GPU_HOURS, _GPUS

_B = default_bytes()  # the default recipe's bytes per parameter


@formula(
    udf="LORA_PARAMS_B", unit="billion parameters", category="fine-tuning",
    equation="r x sum over adapted d_in x d_out matrices of (d_in + d_out) x L; qv: q (h, a*dh), v (h, kv*dh); "
             "qkv: + k (h, kv*dh); attention: + o (a*dh, h); all_linear: + FFN up/gate (h, F) and down (F, h)",
    source="Hu et al. 2021 (LoRA) §4: W0 + BA with B (d x r), A (r x k), r(d + k) trainable per matrix; Table 4: "
           "GPT-3 175B on Wq, Wv 4.7M (r = 1) and 37.7M (r = 8); Dettmers et al. 2023 (QLoRA): adapters on all linear layers",
)
def lora_params_b(hidden, layers, heads, kv_heads, head_dim, ffn_hidden, lora_rank, lora_targets=_D["lora_targets"],
                  gated_ffn=_D["gated_ffn"]):
    """Trainable parameters of LoRA adapters of rank r on the chosen matrices of every layer, billions."""
    q = hidden + heads * head_dim
    kv = hidden + kv_heads * head_dim
    attention = q + 2 * kv + q
    ffn = if_(gated_ffn, 3, 2) * (hidden + ffn_hidden)
    per_layer = if_(eq(lora_targets, "qv"), q + kv, if_(eq(lora_targets, "qkv"), q + 2 * kv,
                                                       if_(eq(lora_targets, "attention"), attention, attention + ffn)))
    return lora_rank * per_layer * layers / 1e9


@formula(
    udf="NF4_BYTES_PER_PARAM", unit="bytes/param", category="fine-tuning",
    equation="(4 + 32/B) / 8; with double quantisation (4 + 8/B + 32/(256 B)) / 8 (B = 64: 0.5 -> 0.127 bits of constants)",
    source="Dettmers et al. 2023 (QLoRA) §3: 4-bit NormalFloat, block size 64, FP8 second-level constants in blocks of 256",
)
def nf4_bytes_per_param(quant_block=_D["quant_block"], double_quant=_D["double_quant"]):
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
def mem_qlora_base_gb(params_b, embed_params_b, quant_block=_D["quant_block"], double_quant=_D["double_quant"], bytes_weights=_B["bytes_weights"]):
    """Frozen base-model weights of QLoRA, GB (1e9 bytes)."""
    return (params_b - embed_params_b) * nf4_bytes_per_param(quant_block, double_quant) + embed_params_b * bytes_weights


@formula(
    udf="MEM_QLORA_GB", unit="GB per GPU", category="fine-tuning",
    equation="4-bit base (MEM_QLORA_BASE_GB) + k x P' (adapters' weights, gradients and optimizer states)",
    source="Dettmers et al. 2023 (QLoRA); seed 002 §7.1.2 (LoRA: 2P + 14P', the same with a 16-bit base)",
    check=_embed_within_params,
)
def mem_qlora_gb(params_b, embed_params_b, trainable_params_b, quant_block=_D["quant_block"], double_quant=_D["double_quant"], bytes_weights=_B["bytes_weights"],
                 bytes_trainable=14):
    """Model-state memory of QLoRA fine-tuning on one GPU, GB."""
    return (mem_qlora_base_gb(params_b, embed_params_b, quant_block, double_quant, bytes_weights)
            + bytes_trainable * trainable_params_b)


# --- fine-tuning in the stage memory model (xlcalc.stage_memory) and in time and cost -------------------------
#
# job = "full": every weight trained, exactly the pre-training model states (the recipe's bytes on every parameter);
# job = "lora": the base frozen in 16 bit (2 bytes/param, no gradients, no optimizer states), adapters trained with
#               the recipe's bytes (weights, gradients, optimizer states);
# job = "qlora": as lora, with the decoder's linear layers frozen in 4-bit NF4 plus their block constants.

_JOB_SOURCE = ("Hu et al. 2021 (LoRA) §4.2: W0 frozen, only A and B receive gradients and optimizer states; "
               "Dettmers et al. 2023 (QLoRA) §3: 4-bit NF4 base, 16-bit adapters")


@formula(
    udf="ADAPTER_PARAMS_B", unit="billion parameters", category="fine-tuning",
    equation="job = full: 0; lora or qlora: LORA_PARAMS_B over the given layers (e.g. the layers of one pipeline stage)",
    source="Hu et al. 2021 (LoRA) §4: r(d + k) trainable parameters per adapted d x k matrix",
)
def adapter_params_b(hidden, layers, heads, kv_heads, head_dim, ffn_hidden, lora_rank, lora_targets=_D["lora_targets"],
                     gated_ffn=_D["gated_ffn"], job="lora"):
    """LoRA adapter parameters of a job on some layers, billions (none for a full fine-tune)."""
    return if_(eq(job, "full"), 0, lora_params_b(hidden, layers, heads, kv_heads, head_dim, ffn_hidden, lora_rank,
                                                 lora_targets, gated_ffn))


@formula(
    udf="FT_TRAINABLE_PARAMS_B", unit="billion parameters", category="fine-tuning",
    equation="job = full: every parameter P; lora or qlora: the adapters' P'",
    source=_JOB_SOURCE,
)
def ft_trainable_params_b(params_b, trainable_params_b, job="lora"):
    """Parameters that get gradients and optimizer states, billions: all of them, or only the adapters."""
    return if_(eq(job, "full"), params_b, trainable_params_b)


@formula(
    udf="MEM_FT_WEIGHTS_GB", unit="GB per GPU", category="fine-tuning",
    equation=("full: w x P; lora: 2 x P (frozen 16-bit base) + w x P' (adapters); qlora: (P - E) x NF4 bytes + "
              "2 x E + w x P'; / tp, / dp under ZeRO-3 / FSDP full shard (frozen weights are sharded too)"),
    source=_JOB_SOURCE + "; PyTorch FSDP and DeepSpeed ZeRO-3 shard frozen parameters with the trainable ones",
    check=_embed_within_params,
)
def mem_ft_weights_gb(params_b, embed_params_b, trainable_params_b, job="lora", zero_stage=_D["zero_stage"], dp=_D["dp"], tp=_D["tp"],
                      bytes_weights=_B["bytes_weights"], quant_block=_D["quant_block"], double_quant=_D["double_quant"]):
    """Weights of a (fine-tuning) job per GPU, GB: base model (trained, 16-bit frozen or NF4) plus adapters.

    ``params_b`` are the base model's parameters on the GPU's stage, ``embed_params_b`` those of them that stay in
    16 bit under QLoRA (embeddings, output layer), ``trainable_params_b`` the adapters on the stage.
    """
    frozen = if_(eq(job, "full"), 0,
                 if_(eq(job, "qlora"), mem_qlora_base_gb(params_b, embed_params_b, quant_block, double_quant, 2),
                     2 * params_b))
    trained = bytes_weights * if_(eq(job, "full"), params_b, trainable_params_b)
    return (frozen + trained) / tp / if_(zero_stage >= 3, dp, 1)


@formula(
    udf="ACT_FROZEN_SAVING_BYTES", unit="bytes per layer", category="fine-tuning",
    equation=("lora or qlora, adapters not on the FFN (qv, qkv, attention), recompute none or selective: "
              "s*b*(2h [FFN input, / t with SP] + 2F/t [down-projection input]); else 0"),
    source=("PyTorch autograd keeps a matmul's input only for its weight gradient (derivatives.yaml, mm), so a frozen "
            "matrix without an adapter keeps none; checked against PyTorch in tests/test_finetune_torch.py"),
)
def act_frozen_saving_bytes(seq_len, micro_batch, hidden, ffn_hidden, tp=_D["tp"], seq_parallel=_D["seq_parallel"], recompute=_D["recompute"],
                            job="lora", lora_targets=_D["lora_targets"]):
    """Activation bytes per layer a frozen base does not keep (subtract from ACT_LAYER_BYTES_GENERAL).

    With a frozen base the FFN's up/gate input (the second norm's output) and the down projection's input (the
    SwiGLU/GeLU product) are only needed for weight gradients; when the FFN has no adapters they are not saved.
    The attention's inputs stay (every target set adapts q, whose adapter needs the same input) and so does the
    attention output (FlashAttention keeps it for its own backward). Full recompute keeps only the layer input,
    and op_selective keeps matmul outputs, so nothing changes there; their recompute working set is the
    no-recompute count, where the saving applies.
    """
    region = if_(seq_parallel, 1 / tp, 1)
    saves = and_(or_(eq(job, "lora"), eq(job, "qlora")), or_(eq(recompute, "none"), eq(recompute, "selective")),
                 or_(eq(lora_targets, "qv"), eq(lora_targets, "qkv"), eq(lora_targets, "attention")))
    return if_(saves, seq_len * micro_batch * (2 * hidden * region + 2 * ffn_hidden / tp), 0)


_FT_FLOPS = ("full: 6N; lora or qlora: 4N + 6N' (forward 2N, backward gradients of the activations 2N, no weight "
             "gradients of the frozen base; the adapters' own forward and backward 6N')")
_FT_FLOPS_SOURCE = ("Kaplan et al. 2020 §2.1 (6N: forward 2N, backward 4N, half of it the weight gradients); "
                    "Hu et al. 2021 (LoRA) §4.2: 'a 25% speedup during training on GPT-3 175B compared to full "
                    "fine-tuning as we do not need to calculate the gradient for the vast majority of the parameters'")


@formula(
    udf="FT_FLOPS_PER_TOKEN", unit="FLOPs/token", category="fine-tuning",
    equation=_FT_FLOPS, source=_FT_FLOPS_SOURCE,
)
def ft_flops_per_token(params_b, trainable_params_b, job="lora"):
    """Model FLOPs per trained token of a job (the MFU convention: no recompute counted)."""
    return if_(eq(job, "full"), 6 * params_b, 4 * params_b + 6 * trainable_params_b) * 1e9


@formula(
    udf="FT_TRAIN_FLOPS", unit="FLOPs", category="fine-tuning",
    equation="FT_FLOPS_PER_TOKEN x D (full: 6ND)", source=_FT_FLOPS_SOURCE,
)
def ft_train_flops(params_b, tokens_t, trainable_params_b, job="lora"):
    """Model FLOPs of a training or fine-tuning job over D tokens."""
    return ft_flops_per_token(params_b, trainable_params_b, job) * tokens_t * 1e12


@formula(
    udf="FT_TRAIN_DAYS", question=True, at_most=_DAYS, unit="days", category="fine-tuning",
    equation="FT_TRAIN_FLOPS / (peak x GPUs x MFU) / 86400 (full: TRAIN_DAYS)", source=_FT_FLOPS_SOURCE,
)
def ft_train_days(params_b, tokens_t, trainable_params_b, peak_tflops, n_gpus, mfu, job="lora"):
    """Days of a training or fine-tuning job at a model-FLOPs utilisation."""
    return ft_train_flops(params_b, tokens_t, trainable_params_b, job) / (peak_tflops * 1e12 * n_gpus * mfu) / 86400


@formula(
    udf="FT_GPU_HOURS", at_most=_GPU_HOURS, unit="GPU-hours", category="fine-tuning",
    equation="FT_TRAIN_FLOPS / (peak x MFU) / 3600 (full: GPU_HOURS)", source=_FT_FLOPS_SOURCE,
)
def ft_gpu_hours(params_b, tokens_t, trainable_params_b, peak_tflops, mfu, job="lora"):
    """GPU-hours of a training or fine-tuning job."""
    return ft_train_flops(params_b, tokens_t, trainable_params_b, job) / (peak_tflops * 1e12 * mfu) / 3600


@formula(
    udf="FT_GPUS_FOR_DAYS", at_most=_GPUS, unit="GPUs", category="fine-tuning",
    equation="FT_TRAIN_FLOPS / (peak x MFU x days x 86400) (full: GPUS_FOR_DAYS)", source=_FT_FLOPS_SOURCE,
)
def ft_gpus_for_days(params_b, tokens_t, trainable_params_b, peak_tflops, mfu, days, job="lora"):
    """GPUs a training or fine-tuning job needs to finish in some days (exact, not rounded)."""
    return ft_train_flops(params_b, tokens_t, trainable_params_b, job) / (peak_tflops * 1e12 * mfu * days * 86400)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

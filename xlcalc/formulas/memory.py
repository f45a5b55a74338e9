"""Memory per GPU: model states under ZeRO/TP/PP, LoRA, activations (Korthikanti), totals, fit."""

from __future__ import annotations

from ..errors import InputError
from ..expr import eq, floor_int, if_, max_
from ..registry import formula

__all__ = [
    "mem_weights_gb", "mem_grads_gb", "mem_optimizer_gb", "mem_static_gb", "mem_zero3_buffer_gb", "mem_lora_gb", "act_layer_bytes_general", "act_layer_bytes", "mem_act_gb",
    "act_inflight_factor", "mem_act_pipeline_gb", "mem_total_gb", "fits_in_gpu", "max_micro_batch",
]


_ZERO_SOURCE = "Rajbhandari et al. 2019 (ZeRO) §5: stage 1 shards optimizer states, 2 also gradients, 3 also weights"


@formula(
    udf="MEM_WEIGHTS_GB", unit="GB per GPU", category="memory",
    equation="w * N/(tp*pp), / dp under ZeRO-3",
    source=_ZERO_SOURCE,
)
def mem_weights_gb(params_b, zero_stage=0, dp=1, tp=1, pp=1, bytes_weights=2):
    """Weight memory per GPU, GB = 1e9 bytes."""
    return bytes_weights * params_b / (tp * pp) / if_(zero_stage >= 3, dp, 1)


@formula(
    udf="MEM_GRADS_GB", unit="GB per GPU", category="memory",
    equation="g * N/(tp*pp), / dp under ZeRO-2 and 3",
    source=_ZERO_SOURCE,
)
def mem_grads_gb(params_b, zero_stage=0, dp=1, tp=1, pp=1, bytes_grads=2):
    """Gradient memory per GPU, GB."""
    return bytes_grads * params_b / (tp * pp) / if_(zero_stage >= 2, dp, 1)


@formula(
    udf="MEM_OPTIMIZER_GB", unit="GB per GPU", category="memory",
    equation="o * N/(tp*pp), / dp under ZeRO-1, 2 and 3",
    source=_ZERO_SOURCE,
)
def mem_optimizer_gb(params_b, zero_stage=0, dp=1, tp=1, pp=1, bytes_optimizer=12):
    """Optimizer-state memory per GPU (fp32 master copy, Adam m and v), GB."""
    return bytes_optimizer * params_b / (tp * pp) / if_(zero_stage >= 1, dp, 1)


@formula(
    udf="MEM_STATIC_GB", unit="GB per GPU", category="memory",
    equation=(
        "Psi = N/(tp*pp); ZeRO 0: (w+g+o)Psi; 1: (w+g)Psi + o*Psi/dp; "
        "2: w*Psi + (g+o)Psi/dp; 3: (w+g+o)Psi/dp"
    ),
    source="Rajbhandari et al. 2019 (ZeRO) §5; seed 002 §7.1.2 (14P, 2P+12P/N, 14P/N)",
)
def mem_static_gb(params_b, zero_stage=0, dp=1, tp=1, pp=1, bytes_weights=2, bytes_grads=2, bytes_optimizer=12):
    """Model-state memory per GPU (weights, gradients, optimizer states), GB = 1e9 bytes."""
    return (mem_weights_gb(params_b, zero_stage, dp, tp, pp, bytes_weights)
            + mem_grads_gb(params_b, zero_stage, dp, tp, pp, bytes_grads)
            + mem_optimizer_gb(params_b, zero_stage, dp, tp, pp, bytes_optimizer))


@formula(
    udf="MEM_ZERO3_BUFFER_GB", unit="GB per GPU", category="memory",
    equation="4 bytes * largest layer's parameters",
    source="DeepSpeed memory docs (estimate_zero3_model_states_mem_needs): largest_layer_memory = 4*largest_layer_params",
)
def mem_zero3_buffer_gb(largest_layer_params_b):
    """Working memory ZeRO-3 needs to gather the largest layer whole."""
    return 4 * largest_layer_params_b


@formula(
    udf="MEM_LORA_GB", unit="GB per GPU", category="memory",
    equation="w*P (frozen) + k*P' (trainable: weights, grads, optimizer)",
    source="seed 002 §7.1.2 (LoRA: 2P + 14P')",
)
def mem_lora_gb(params_b, trainable_params_b, bytes_weights=2, bytes_trainable=14):
    """Model-state memory of LoRA fine-tuning: frozen weights plus full states of the adapters."""
    return bytes_weights * params_b + bytes_trainable * trainable_params_b


def _heads_divisible(*, heads, tp, **_):
    if heads % tp:
        raise InputError("tp", tp, f"a divisor of heads = {heads}", "tensor parallelism splits whole attention heads")


@formula(
    udf="ACT_LAYER_BYTES_GENERAL", unit="bytes per layer", category="memory",
    equation=(
        "s*b*[10h/(t if SP) + (4*a*dh + 4*kv*dh + (6 if gated else 4)*F)/t] + 5*a*s^2*b/t "
        "(s^2 term only without flash attention and recompute); full recompute: 2*s*b*h (/t with SP)"
    ),
    source="Korthikanti et al. 2022 Table 2 (34 = 10 + 24: Q,K 4h, V 2h, proj 2h, FFN 16h), generalised to GQA, any F, SwiGLU",
)
def act_layer_bytes_general(seq_len, micro_batch, hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn=False,
                            tp=1, seq_parallel=False, recompute="none", flash_attention=True):
    """Activation bytes of one layer for GQA, any FFN size, gated FFN and FlashAttention."""
    sb = seq_len * micro_batch
    replicated = if_(seq_parallel, 10 * hidden / tp, 10 * hidden)
    split = (4 * heads * head_dim + 4 * kv_heads * head_dim + if_(gated_ffn, 6, 4) * ffn_hidden) / tp
    scores = if_(flash_attention, 0, 5 * heads * seq_len / tp)
    stored = sb * (replicated + split)
    full = if_(seq_parallel, 2 * sb * hidden / tp, 2 * sb * hidden)
    return if_(eq(recompute, "full"), full, if_(eq(recompute, "selective"), stored, stored + sb * scores))


@formula(
    udf="ACT_LAYER_BYTES", unit="bytes per layer", category="memory",
    equation=(
        "none: sbh(10 + 24/t + 5as/(ht)); +SP: sbh(34/t + 5as/(ht)); selective: sbh(10 + 24/t); "
        "selective+SP: 34sbh/t; full: 2sbh (/t with SP)"
    ),
    source="Korthikanti et al. 2022 (arXiv 2205.05198), Table 2: ACT_LAYER_BYTES_GENERAL with MHA, F = 4h, no flash",
    check=_heads_divisible,
)
def act_layer_bytes(seq_len, micro_batch, hidden, heads, tp=1, seq_parallel=False, recompute="none"):
    """Activation bytes of one transformer layer (16-bit activations, FFN = 4h, no FlashAttention)."""
    return act_layer_bytes_general(seq_len, micro_batch, hidden, heads, heads, hidden / heads, 4 * hidden, False,
                                   tp, seq_parallel, recompute, False)


@formula(
    udf="MEM_ACT_GB", unit="GB per GPU", category="memory",
    equation="L * per-layer bytes (Korthikanti Table 2) / 1e9; first pipeline stage of 1F1B holds L layers' worth",
    source="Korthikanti et al. 2022, Table 2 and §4.2.3",
    check=_heads_divisible,
)
def mem_act_gb(seq_len, micro_batch, hidden, layers, heads, tp=1, seq_parallel=False, recompute="none"):
    """Activation memory per GPU for all layers (the first stage of a 1F1B pipeline)."""
    return layers * act_layer_bytes(seq_len, micro_batch, hidden, heads, tp, seq_parallel, recompute) / 1e9


@formula(
    udf="ACT_INFLIGHT_FACTOR", unit="ratio", category="memory",
    equation="interleaved (v > 1): 1 + (p-1)/(p*v); with m < p: x m/p; plain 1F1B: 1",
    source="Korthikanti et al. 2022 §4.2.3",
)
def act_inflight_factor(pp, virtual_stages=1, microbatches=1000000):
    """Multiplier on L layers' activations for the first pipeline stage's in-flight micro-batches."""
    interleave = if_(virtual_stages > 1, 1 + (pp - 1) / (pp * virtual_stages), 1)
    return interleave * if_(microbatches < pp, microbatches / pp, 1)


@formula(
    udf="MEM_ACT_PIPELINE_GB", unit="GB per GPU", category="memory",
    equation="MEM_ACT_GB x ACT_INFLIGHT_FACTOR(p, v, m)",
    source="Korthikanti et al. 2022 §4.2.3 (Fig. 1 uses p = 8, v = 3)",
    check=_heads_divisible,
)
def mem_act_pipeline_gb(seq_len, micro_batch, hidden, layers, heads, tp=1, seq_parallel=False, recompute="none",
                        pp=1, virtual_stages=1, microbatches=1000000):
    """Activation memory of the first pipeline stage, with the schedule's in-flight factor."""
    return (mem_act_gb(seq_len, micro_batch, hidden, layers, heads, tp, seq_parallel, recompute)
            * act_inflight_factor(pp, virtual_stages, microbatches))


@formula(
    udf="MEM_TOTAL_GB", unit="GB per GPU", category="memory",
    equation="total = model states + activations + overhead",
    source="seed 002 §7.1.3",
)
def mem_total_gb(static_gb, activations_gb, overhead_gb=0):
    """Peak memory per GPU."""
    return static_gb + activations_gb + overhead_gb


@formula(
    udf="FITS_IN_GPU", unit="TRUE/FALSE", category="memory", returns="bool",
    equation="total GB <= GPU memory GB",
    source="seed 002 §7.3 step 1",
)
def fits_in_gpu(total_gb, memory_gb):
    """Whether a per-GPU memory need fits in one GPU."""
    return total_gb <= memory_gb


@formula(
    udf="MAX_MICRO_BATCH", unit="sequences", category="memory",
    equation="INT((GPU memory - states - overhead) / activations at micro-batch 1), at least 0",
    source="Korthikanti et al. 2022 (activations are linear in b)",
)
def max_micro_batch(memory_gb, static_gb, overhead_gb, act_gb_per_sample):
    """Largest micro-batch whose activations fit beside the model states (0 = not even 1)."""
    return max_(0, floor_int((memory_gb - static_gb - overhead_gb) / act_gb_per_sample))

"""One micro-batch on one GPU of a pipeline stage: the terms of the planner's step time, each one formula.

The step-time chain (:func:`xlcalc.step_steps.step_time_steps`) composes these with the terms of
:mod:`xlcalc.formulas.steptime` and :mod:`xlcalc.formulas.communication` into the step time and MFU of one
layout; the planner's search (:mod:`xlcalc.planner.steptime`) calls the same formulas, so both give one answer.
Conventions as :mod:`xlcalc.formulas.steptime`: bf16 activations, TFLOP/s = 1e12, TB/s = 1e12 bytes/s.
"""

from __future__ import annotations

from ..expr.functions import if_, max_
from ..registry import REGISTRY, formula
from .steptime import (
    attention_core_time_s,
    compute_time_s,
    stage_attention_flops,
    stage_linear_time_s,
    stage_matmul_flops,
    stage_unfused_attention_time_s,
)


@formula(
    udf="MICROBATCHES_PER_STEP", unit="micro-batches", category="steptime",
    equation="m = global batch (sequences) / DP / micro-batch",
    source="Narayanan et al. 2021 §2.2: a step's batch B splits over d data-parallel replicas, each running B/(d*b) "
           "micro-batches of b sequences",
)
def microbatches_per_step(global_batch, dp, micro_batch):
    """Micro-batches each data-parallel replica runs per optimizer step (a whole number for a batch that splits)."""
    return global_batch / dp / micro_batch


@formula(
    udf="STAGE_MATMUL_TIME_S", unit="seconds", category="steptime",
    equation="wave quantization on: STAGE_LINEAR_TIME_S (each matmul in whole waves of tiles over the GPU's SMs); "
             "off: STAGE_MATMUL_FLOPS / (peak*1e12 * efficiency)",
    source="NVIDIA Matrix Multiplication Background User's Guide §3 (tile and wave quantization) where the GPU's "
           "SM count is known; else every matmul at the matmul efficiency (seed 004, T_math)",
)
def stage_matmul_time_s(layers_per_stage, tokens, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, peak_tflops,
                        matmul_efficiency, sm_count=1, wave_quantization=True, gated_ffn=False, tp=1,
                        recompute="none"):
    """Matmul time of one pipeline stage for some tokens on one GPU, logit layer included (0 layers: the logit layer
    alone), wave-quantized when the GPU's SM count is known."""
    waves = stage_linear_time_s(layers_per_stage, tokens, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab,
                                peak_tflops, matmul_efficiency, max_(sm_count, 1), gated_ffn, tp, recompute)
    plain = compute_time_s(stage_matmul_flops(layers_per_stage, tokens, hidden, heads, kv_heads, head_dim, ffn_hidden,
                                              vocab, gated_ffn, tp, recompute), peak_tflops, matmul_efficiency)
    return if_(wave_quantization, waves, plain)


@formula(
    udf="LAYER_ATTENTION_TIME_S", unit="seconds", category="steptime",
    equation="fused: ATTENTION_CORE_TIME_S(flops, peak, attention eff * factor * kernel speed, matmul eff * factor); "
             "unfused: STAGE_UNFUSED_ATTENTION_TIME_S of one layer; flops = STAGE_ATTENTION_FLOPS of one layer",
    source="Dao 2023 (FlashAttention-2: 50% of A100 peak); Shah et al. 2024 (FlashAttention-3: FlashAttention-2 "
           "reaches 35% of H100 peak, the factor 0.70 of a kernel written for Ampere on Hopper); Dao 2023 §4.1 "
           "(FlashAttention in Triton: the kernel speed 0.55 of FlashAttention-2)",
)
def layer_attention_time_s(tokens, seq_len, heads, head_dim, peak_tflops, matmul_efficiency, attention_efficiency,
                           hbm_tb_s, flash_attention=True, tp=1, recompute="none", attention_factor=1,
                           attention_kernel_speed=1):
    """Time of one layer's attention core (scores and weighted sum) for some tokens on one GPU, recomputation
    included: the fused kernel at its share of peak, or the unfused matmuls and softmax at their roofline."""
    flops = stage_attention_flops(1, tokens, seq_len, heads, head_dim, tp, recompute)
    fused = attention_core_time_s(flops, peak_tflops, attention_efficiency * attention_factor * attention_kernel_speed,
                                  matmul_efficiency * attention_factor)
    unfused = stage_unfused_attention_time_s(flops, 1, tokens, seq_len, heads, peak_tflops, matmul_efficiency,
                                             hbm_tb_s, tp, recompute)
    return if_(flash_attention, fused, unfused)


@formula(
    udf="SLOWEST_STAGE_LAYERS", unit="layers", category="steptime",
    equation="the other stages' most layers if they take longer than the last stage's layers and the logit layer "
             "(x * layer time > last * layer time + logit layer time), else the last stage's",
    source="Narayanan et al. 2021 §2.2: the slowest pipeline stage sets the pace of every micro-batch; the last stage "
           "also runs the output layer and the loss (Llama 3's split gives it one layer fewer: Dubey et al. 2024 "
           "§3.3.2)",
)
def slowest_stage_layers(last_layers, other_layers, layer_s, logits_s, pp):
    """Layers of the pipeline stage that sets the pace (with one stage: all of them, the logit layer included)."""
    other_slower = other_layers * layer_s > last_layers * layer_s + logits_s
    return if_(pp > 1, if_(other_slower, other_layers, last_layers), last_layers)


@formula(
    udf="MICROBATCH_TIME_S", unit="seconds", category="steptime",
    equation="L/p * (layer matmul + layer attention + layer elementwise) + logit layer (matmul + loss) "
             "+ TP comm + CP comm + PP send/receive",
    source="Narayanan et al. 2021 §2-3: a stage's layers and the last stage's logit layer run one after another for "
           "each micro-batch; tensor-parallel collectives and pipeline sends sit on that path (the exposed part of each)",
)
def microbatch_time_s(layers_per_stage, layer_matmul_s, layer_attention_s, layer_elementwise_s, logits_s,
                      tp_comm_s=0, cp_comm_s=0, pp_comm_s=0):
    """Time of one micro-batch (forward and backward) on the slowest pipeline stage, its exposed communication
    included."""
    layer_s = layer_matmul_s + layer_attention_s + layer_elementwise_s
    return layers_per_stage * layer_s + logits_s + tp_comm_s + cp_comm_s + pp_comm_s


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

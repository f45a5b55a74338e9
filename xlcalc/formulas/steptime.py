"""Step-time model: FLOPs of a layer, compute and communication time, bubble, step time, MFU.

These are the equations the parallelism planner (:mod:`xlcalc.planner`) evaluates for every
candidate configuration; registered here they are also worksheet functions and Excel text.
Conventions: bf16 activations (2 bytes), GB = 1e9 bytes, GB/s = 1e9 bytes/s, TFLOP/s = 1e12.
"""

from __future__ import annotations

from ..expr import ceiling, eq, if_, max_
from ..registry import formula
from .parallel import allreduce_bytes, pipeline_bubble
from .roofline import time_lower_s

__all__ = [
    "layer_matmul_flops", "attention_core_flops", "model_flops_per_token", "hardware_flops_per_token",
    "compute_time_s", "elementwise_bytes_per_token", "tp_comm_bytes_per_layer",
    "exposed_comm_s", "bubble_time_s", "optimizer_step_s", "step_time_s", "mfu_from_step",
    "tokens_per_s_per_gpu", "train_days_at_throughput", "gpu_hours_at_throughput",
    "gemm_wave_efficiency", "linear_layer_time_s", "attention_softmax_bytes_per_token",
    "attention_gemm_bytes_per_token", "unfused_attention_time_s",
]


@formula(
    udf="LAYER_MATMUL_FLOPS", unit="FLOPs per token", category="steptime",
    equation="2*h*(a*dh) [Q] + 2*2*h*(kv*dh) [K,V] + 2*(a*dh)*h [O] + 2*h*F*(2, or 3 if gated)",
    source="Narayanan et al. 2021 §5.1 (24h^2 per token for GPT: Q,K,V,O 8h^2 + FFN 16h^2), generalised to GQA and SwiGLU",
)
def layer_matmul_flops(hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn=False):
    """Forward matmul FLOPs of one transformer layer per token (projections and FFN)."""
    attention = 2 * hidden * heads * head_dim * 2 + 2 * 2 * hidden * kv_heads * head_dim
    ffn = 2 * hidden * ffn_hidden * if_(gated_ffn, 3, 2)
    return attention + ffn


@formula(
    udf="ATTENTION_CORE_FLOPS", unit="FLOPs per token", category="steptime",
    equation="4*s*a*dh (QK^T and attention x V, whole s x s, as Megatron and PaLM count it)",
    source="Narayanan et al. 2021 §5.1 (the s/(6h) term); Chowdhery et al. 2022 App. B (12*L*H*Q*T per token for fwd+bwd)",
)
def attention_core_flops(seq_len, heads, head_dim):
    """Forward FLOPs of the attention scores and weighted sum per token and layer."""
    return 4 * seq_len * heads * head_dim


@formula(
    udf="MODEL_FLOPS_PER_TOKEN", unit="FLOPs per token", category="steptime",
    equation="3*(L*(matmul + attention core) + 2*h*V): forward + backward, logits included, no recompute",
    source="Narayanan et al. 2021 §5.1: equals 72*s*L*h^2*(1 + s/(6h) + V/(12*L*h))/s for GPT; PaLM App. B",
)
def model_flops_per_token(layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, seq_len, gated_ffn=False):
    """Model FLOPs per trained token (the MFU numerator): 6N of the matmuls plus attention."""
    per_layer = (layer_matmul_flops(hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn)
                 + attention_core_flops(seq_len, heads, head_dim))
    return 3 * (layers * per_layer + 2 * hidden * vocab)


@formula(
    udf="HARDWARE_FLOPS_PER_TOKEN", unit="FLOPs per token", category="steptime",
    equation="model FLOPs + recomputed forward: full + L*(matmul + attention core); selective + L*attention core",
    source="Korthikanti et al. 2022 §5 (selective recomputes QK^T, softmax, AV); Narayanan et al. 2021 (96 = 4/3 x 72)",
)
def hardware_flops_per_token(layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, seq_len,
                             gated_ffn=False, recompute="none"):
    """FLOPs the hardware does per token, recomputation included (the HFU numerator)."""
    mm = layer_matmul_flops(hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn)
    att = attention_core_flops(seq_len, heads, head_dim)
    extra = if_(eq(recompute, "full"), layers * (mm + att), if_(eq(recompute, "selective"), layers * att, 0))
    return model_flops_per_token(layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, seq_len, gated_ffn) + extra


@formula(
    udf="COMPUTE_TIME_S", unit="seconds", category="steptime",
    equation="FLOPs / (peak*1e12 * efficiency)",
    source="seed 004 (T_math); achievable efficiency from measured matmul throughput (ml-engineering MAMF table)",
)
def compute_time_s(flops, peak_tflops, matmul_efficiency):
    """Time of matmul work at an achievable share of peak."""
    return flops / (peak_tflops * 1e12 * matmul_efficiency)


@formula(
    udf="GEMM_WAVE_EFFICIENCY", unit="fraction", category="steptime",
    equation=(
        "MAX over tile (r,c) in {(256,128),(128,256)} of rows*cols / "
        "(CEILING(CEILING(rows/r)*CEILING(cols/c) / SMs) * SMs * r*c)"
    ),
    source=(
        "NVIDIA Matrix Multiplication Background User's Guide (DU-09799-001) §2.3 (256x128 and 128x256 are "
        "cuBLAS's most efficient tiles) and §3 (tile and wave quantization: A100 has 108 SMs, one 256x128 "
        "tile per SM, so a GEMM runs in whole waves of 108 tiles)"
    ),
)
def gemm_wave_efficiency(gemm_rows, gemm_cols, sm_count, tile_rows=256, tile_cols=128):
    """Share of a matmul's executed tile work that is useful: tile and wave quantization of its output."""
    tiles_a = ceiling(gemm_rows / tile_rows) * ceiling(gemm_cols / tile_cols)
    tiles_b = ceiling(gemm_rows / tile_cols) * ceiling(gemm_cols / tile_rows)
    useful = gemm_rows * gemm_cols
    eff_a = useful / (ceiling(tiles_a / sm_count) * sm_count * tile_rows * tile_cols)
    eff_b = useful / (ceiling(tiles_b / sm_count) * sm_count * tile_rows * tile_cols)
    return max_(eff_a, eff_b)


@formula(
    udf="LINEAR_LAYER_TIME_S", unit="seconds", category="steptime",
    equation=(
        "2*T*K*N/(peak*1e12*eff) * (passes/wave(T,N) [forward] + 1/wave(T,K) [input gradient] "
        "+ 1/wave(K,N) [weight gradient])"
    ),
    source=(
        "backward of Y = X W is dX = dY W^T (T x K) and dW = X^T dY (K x N), each as many FLOPs as the forward "
        "(Narayanan et al. 2021 §5.1: backward = 2 x forward); wave quantization per GEMM_WAVE_EFFICIENCY"
    ),
)
def linear_layer_time_s(tokens, in_features, out_features, peak_tflops, matmul_efficiency, sm_count,
                        forward_passes=1):
    """Matmul time of one linear layer on one GPU: forward (and recomputed forward), input and weight gradient."""
    flops = 2 * tokens * in_features * out_features
    rate = peak_tflops * 1e12 * matmul_efficiency
    return flops / rate * (forward_passes / gemm_wave_efficiency(tokens, out_features, sm_count)
                           + 1 / gemm_wave_efficiency(tokens, in_features, sm_count)
                           + 1 / gemm_wave_efficiency(in_features, out_features, sm_count))


@formula(
    udf="ATTENTION_SOFTMAX_BYTES_PER_TOKEN", unit="bytes per token per layer", category="steptime",
    equation=(
        "a/t * s * (9 [fwd: softmax read 2 + write 2, dropout read 2 + write 2 + mask 1] "
        "+ 11 [bwd: dropout read 2 + mask 1 + write 2, softmax read 2 + 2 + write 2] + 9 if recomputed)"
    ),
    source=(
        "unfused attention (Megatron-LM 2021-22: fused scale-mask-softmax kernel, then dropout) over the "
        "a*s*s fp16 scores per sequence; bytes per element as Korthikanti et al. 2022 §4.1 store them "
        "(softmax output 2, dropout mask 1, dropout output 2)"
    ),
)
def attention_softmax_bytes_per_token(seq_len, heads, tp=1, recompute="none"):
    """HBM bytes of softmax, mask and dropout over the s x s attention scores, per token and layer (no FlashAttention)."""
    per_element = 9 + 11 + if_(eq(recompute, "none"), 0, 9)
    return heads / tp * seq_len * per_element


@formula(
    udf="ATTENTION_GEMM_BYTES_PER_TOKEN", unit="bytes per token per layer", category="steptime",
    equation=(
        "a/t * s * (4 [fwd: QK^T writes scores 2, AV reads probabilities 2] + 8 [bwd: dP written 2, P read 2, "
        "dS read twice 4] + 4 if recomputed)"
    ),
    source="batched matmuls of unfused attention: each reads or writes the s x s fp16 scores once per use",
)
def attention_gemm_bytes_per_token(seq_len, heads, tp=1, recompute="none"):
    """HBM bytes of the s x s score matrices read and written by the attention matmuls, per token and layer."""
    per_element = 4 + 8 + if_(eq(recompute, "none"), 0, 4)
    return heads / tp * seq_len * per_element


@formula(
    udf="UNFUSED_ATTENTION_TIME_S", unit="seconds", category="steptime",
    equation=(
        "MAX(flops/(peak*eff), gemm bytes/HBM) [QK^T, AV: roofline] + softmax bytes/HBM [memory-bound]"
    ),
    source="seed 004 roofline (time = max of math and memory time per kernel); kernel traffic as counted above",
)
def unfused_attention_time_s(flops, gemm_bytes, softmax_bytes, peak_tflops, matmul_efficiency, hbm_tb_s):
    """Time of the attention core without FlashAttention: matmuls at their roofline, softmax/dropout at HBM speed."""
    gemm = time_lower_s(flops, gemm_bytes, peak_tflops * matmul_efficiency, hbm_tb_s * 1000)
    return gemm + softmax_bytes / (hbm_tb_s * 1e12)


@formula(
    udf="ELEMENTWISE_BYTES_PER_TOKEN", unit="bytes per token per layer", category="steptime",
    equation="factor * 6*[(2+2+3+3+2.5+2.5)*h/(t if SP) + (3 if gated else 2)*F/t] (fwd 2 bytes each, bwd twice fwd)",
    source="kernel count of a Megatron layer: 2 layer norms, 2 residual adds, 2 dropouts, activation; x3 for fwd+bwd",
)
def elementwise_bytes_per_token(hidden, ffn_hidden, gated_ffn=False, tp=1, seq_parallel=False, elementwise_factor=1):
    """HBM bytes moved by the non-matmul kernels of one layer per token (forward + backward)."""
    replicated = if_(seq_parallel, 15 * hidden / tp, 15 * hidden)
    split = if_(gated_ffn, 3, 2) * ffn_hidden / tp
    return elementwise_factor * 6 * (replicated + split)


@formula(
    udf="TP_COMM_BYTES_PER_LAYER", unit="bytes per GPU", category="steptime",
    equation="(4, or 6 with full recompute) ring all-reduces of 2*s*b*h bytes over t ranks; SP: RS+AG, same bytes",
    source="Shoeybi et al. 2019 (2 all-reduces forward, 2 backward); Korthikanti et al. 2022 §4.2.2 (SP); NCCL ring 2S(n-1)/n",
)
def tp_comm_bytes_per_layer(seq_len, micro_batch, hidden, tp, recompute="none"):
    """Bytes one GPU sends for tensor parallelism in one layer and one micro-batch."""
    count = if_(eq(recompute, "full"), 6, 4)
    return count * allreduce_bytes(2 * seq_len * micro_batch * hidden, tp)


@formula(
    udf="EXPOSED_COMM_S", unit="seconds", category="steptime",
    equation="MAX(0, comm - overlap * window)",
    source="xlcalc step-time model (communication hidden behind the compute it can overlap with)",
)
def exposed_comm_s(comm_s, window_s, overlap_frac):
    """Communication time left on the critical path after overlapping with compute."""
    return max_(0, comm_s - overlap_frac * window_s)


@formula(
    udf="BUBBLE_TIME_S", unit="seconds", category="steptime",
    equation="(p-1)/(v*m) * m * t_microbatch = (p-1)/v * t_microbatch",
    source="Narayanan et al. 2021 §2.2 (bubble / ideal = (p-1)/(v*m))",
)
def bubble_time_s(pp, microbatches, microbatch_s, virtual_stages=1):
    """Idle time of a pipeline per step."""
    return pipeline_bubble(pp, microbatches, virtual_stages) * microbatches * microbatch_s


@formula(
    udf="OPTIMIZER_STEP_S", unit="seconds", category="steptime",
    equation="bytes per param * params on the GPU / HBM bandwidth (ZeRO >= 1: params / dp)",
    source="Adam in fp32 reads param, grad, m, v and writes param, m, v, bf16 copy: 4*7 + 2 = 30 bytes; memory-bound",
)
def optimizer_step_s(params_per_gpu_b, hbm_tb_s, zero_stage=0, dp=1, bytes_per_param_step=30):
    """Time of the optimizer update, a memory-bound pass over the GPU's optimizer shard."""
    shard = if_(zero_stage >= 1, params_per_gpu_b / dp, params_per_gpu_b)
    return bytes_per_param_step * shard * 1e9 / (hbm_tb_s * 1e12)


@formula(
    udf="STEP_TIME_S", unit="seconds", category="steptime",
    equation="m*t_microbatch + bubble + exposed DP comm + optimizer (TP comm and p2p inside t_microbatch)",
    source="Narayanan et al. 2021 §2-3 (1F1B pipeline with data parallelism)",
)
def step_time_s(microbatches, microbatch_s, pp, virtual_stages, comm_s, compute_s):
    """Time of one training step; comm_s = exposed DP communication, compute_s = optimizer step."""
    return microbatches * microbatch_s + bubble_time_s(pp, microbatches, microbatch_s, virtual_stages) + comm_s + compute_s


@formula(
    udf="MFU_FROM_STEP", unit="fraction", category="steptime",
    equation="FLOPs per token * tokens per step / (step time * GPUs * peak*1e12)",
    source="Chowdhery et al. 2022 App. B (MFU); with hardware FLOPs per token it is HFU",
)
def mfu_from_step(flops_per_token, tokens, step_s, n_gpus, peak_tflops):
    """FLOPs utilisation of a step: model FLOPs give MFU, hardware FLOPs give HFU."""
    return flops_per_token * tokens / (step_s * n_gpus * peak_tflops * 1e12)


@formula(
    udf="TOKENS_PER_S_PER_GPU", unit="tokens/s per GPU", category="steptime",
    equation="tokens per step / (step time * GPUs)",
    source="definition",
)
def tokens_per_s_per_gpu(tokens, step_s, n_gpus):
    """Training throughput per GPU."""
    return tokens / (step_s * n_gpus)


@formula(
    udf="TRAIN_DAYS_AT_THROUGHPUT", unit="days", category="steptime",
    equation="tokens_t*1e12 / (tokens/s per GPU * GPUs) / 86400",
    source="definition (throughput -> wall-clock time)",
)
def train_days_at_throughput(tokens_t, tokens_per_s, n_gpus):
    """Days to train on tokens_t trillion tokens at a per-GPU throughput."""
    return tokens_t * 1e12 / (tokens_per_s * n_gpus) / 86400


@formula(
    udf="GPU_HOURS_AT_THROUGHPUT", unit="GPU-hours", category="steptime",
    equation="tokens_t*1e12 / (tokens/s per GPU) / 3600",
    source="definition (throughput -> GPU time)",
)
def gpu_hours_at_throughput(tokens_t, tokens_per_s):
    """GPU-hours to train on tokens_t trillion tokens at a per-GPU throughput."""
    return tokens_t * 1e12 / tokens_per_s / 3600

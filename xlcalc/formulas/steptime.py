"""Step-time model: FLOPs of a layer, compute time, bubble, step time, MFU (the communication terms:
:mod:`xlcalc.formulas.communication`).

These are the equations the parallelism planner (:mod:`xlcalc.planner`) evaluates for every
candidate configuration; registered here they are also worksheet functions and Excel text.
Conventions: bf16 activations (2 bytes), GB = 1e9 bytes, GB/s = 1e9 bytes/s, TFLOP/s = 1e12.
"""

from __future__ import annotations

from ..expr.functions import and_, ceiling, eq, if_, max_, min_, not_, or_
from ..registry import REGISTRY, formula
from .parallel import pipeline_bubble
from .roofline import time_lower_s


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
    equation=("model FLOPs + recomputed forward: full + L*(matmul + attention core); selective + L*attention core; "
              "op_selective + L*matmul/2"),
    source="Korthikanti et al. 2022 §5 (selective recomputes QK^T, softmax, AV); Narayanan et al. 2021 (96 = 4/3 x 72); "
           "torchtitan per-op selective checkpointing (saves every other mm and the attention kernel, recomputes "
           "the rest)",
)
def hardware_flops_per_token(layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, seq_len,
                             gated_ffn=False, recompute="none"):
    """FLOPs the hardware does per token, recomputation included (the HFU numerator)."""
    mm = layer_matmul_flops(hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn)
    att = attention_core_flops(seq_len, heads, head_dim)
    extra = if_(eq(recompute, "full"), layers * (mm + att),
                if_(eq(recompute, "selective"), layers * att, if_(eq(recompute, "op_selective"), layers * mm / 2, 0)))
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
    udf="GEMM_WAVE_EFFICIENCY", unit="fraction", category="steptime", memo=True,
    equation="MAX over tile (r,c) in {(256,128),(128,256)} of rows*cols / "
             "(CEILING(CEILING(rows/r)*CEILING(cols/c) / SMs) * SMs * r*c)",
    source="NVIDIA Matrix Multiplication Background User's Guide (DU-09799-001) §2.3 (256x128 and 128x256 are "
           "cuBLAS's most efficient tiles) and §3 (tile and wave quantization: A100 has 108 SMs, one 256x128 "
           "tile per SM, so a GEMM runs in whole waves of 108 tiles)",
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
    equation="2*T*K*N/(peak*1e12*eff) * (passes/wave(T,N) [forward] + 1/wave(T,K) [input gradient] "
             "+ 1/wave(K,N) [weight gradient])",
    source="backward of Y = X W is dX = dY W^T (T x K) and dW = X^T dY (K x N), each as many FLOPs as the forward "
           "(Narayanan et al. 2021 §5.1: backward = 2 x forward); wave quantization per GEMM_WAVE_EFFICIENCY",
)
def linear_layer_time_s(tokens, in_features, out_features, peak_tflops, matmul_efficiency, sm_count, forward_passes=1):
    """Matmul time of one linear layer on one GPU: forward (and recomputed forward), input and weight gradient."""
    flops = 2 * tokens * in_features * out_features
    rate = peak_tflops * 1e12 * matmul_efficiency
    return flops / rate * (forward_passes / gemm_wave_efficiency(tokens, out_features, sm_count)
                           + 1 / gemm_wave_efficiency(tokens, in_features, sm_count)
                           + 1 / gemm_wave_efficiency(in_features, out_features, sm_count))


@formula(
    udf="ATTENTION_SOFTMAX_BYTES_PER_TOKEN", unit="bytes per token per layer", category="steptime",
    equation="a/t * s * (9 [fwd: softmax read 2 + write 2, dropout read 2 + write 2 + mask 1] "
             "+ 11 [bwd: dropout read 2 + mask 1 + write 2, softmax read 2 + 2 + write 2] + 9 if recomputed)",
    source="unfused attention (Megatron-LM 2021-22: fused scale-mask-softmax kernel, then dropout) over the "
           "a*s*s fp16 scores per sequence; bytes per element as Korthikanti et al. 2022 §4.1 store them "
           "(softmax output 2, dropout mask 1, dropout output 2)",
)
def attention_softmax_bytes_per_token(seq_len, heads, tp=1, recompute="none"):
    """HBM bytes of softmax, mask and dropout over the s x s attention scores, per token and layer (no FlashAttention)."""
    per_element = 9 + 11 + if_(eq(recompute, "none"), 0, 9)
    return heads / tp * seq_len * per_element


@formula(
    udf="ATTENTION_GEMM_BYTES_PER_TOKEN", unit="bytes per token per layer", category="steptime",
    equation="a/t * s * (4 [fwd: QK^T writes scores 2, AV reads probabilities 2] + 8 [bwd: dP written 2, P read 2, "
             "dS read twice 4] + 4 if recomputed)",
    source="batched matmuls of unfused attention: each reads or writes the s x s fp16 scores once per use",
)
def attention_gemm_bytes_per_token(seq_len, heads, tp=1, recompute="none"):
    """HBM bytes of the s x s score matrices read and written by the attention matmuls, per token and layer."""
    per_element = 4 + 8 + if_(eq(recompute, "none"), 0, 4)
    return heads / tp * seq_len * per_element


@formula(
    udf="UNFUSED_ATTENTION_TIME_S", unit="seconds", category="steptime",
    equation="MAX(flops/(peak*eff), gemm bytes/HBM) [QK^T, AV: roofline] + softmax bytes/HBM [memory-bound]",
    source="seed 004 roofline (time = max of math and memory time per kernel); kernel traffic as counted above",
)
def unfused_attention_time_s(flops, gemm_bytes, softmax_bytes, peak_tflops, matmul_efficiency, hbm_tb_s):
    """Time of the attention core without FlashAttention: matmuls at their roofline, softmax/dropout at HBM speed."""
    gemm = time_lower_s(flops, gemm_bytes, peak_tflops * matmul_efficiency, hbm_tb_s * 1000)
    return gemm + softmax_bytes / (hbm_tb_s * 1e12)


@formula(
    udf="ELEMENTWISE_BYTES_PER_TOKEN", unit="bytes per token per layer", category="steptime",
    equation="factor * 6*[(2+2+3+3+2.5+2.5)*h/(t if SP) + (3 if gated else 2)*F/t] (fwd 2 bytes each, bwd twice fwd); "
             "without dropout (p = 0) the two 2.5*h terms drop: 10*h",
    source="kernel count of a Megatron layer: 2 layer norms, 2 residual adds, 2 dropouts, activation; x3 for fwd+bwd; "
           "PyTorch's dropout at p = 0 returns its input and launches no kernel (ATen Dropout.cpp)",
)
def elementwise_bytes_per_token(hidden, ffn_hidden, gated_ffn=False, tp=1, seq_parallel=False, elementwise_factor=1,
                                dropout=True):
    """HBM bytes moved by the non-matmul kernels of one layer per token (forward + backward)."""
    per_h = if_(dropout, 15, 10)
    replicated = if_(seq_parallel, per_h * hidden / tp, per_h * hidden)
    split = if_(gated_ffn, 3, 2) * ffn_hidden / tp
    return elementwise_factor * 6 * (replicated + split)


@formula(
    udf="FP8_CAST_BYTES_PER_TOKEN", unit="bytes per token per layer", category="steptime",
    equation="bytes per element * [forward operands (h [QKV in] + h [FC1 in])/(t if SP) + (a*dh [out-proj in] + F [FC2 "
             "in])/t (forward fused: a*dh/t only), x2 with full recompute, x1.5 with op_selective; "
             "+ backward output gradients (h [out-proj] + h [FC2])/(t if SP) + ((a+2kv)*dh [QKV] + F*(2 if gated else "
             "1) [FC1])/t]",
    source="Transformer Engine FP8 recipe (Micikevicius et al. 2022, FP8 Formats for Deep Learning): each FP8 GEMM "
           "operand is cast from bf16 — the activation inputs of the forward GEMMs and the output gradients of the "
           "backward ones; Hopper FP8 GEMMs take only the TN layout, so a cast writes the tensor and its transpose",
)
def fp8_cast_bytes_per_token(hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn=False, tp=1,
                             seq_parallel=False, recompute="none", fp8_cast_bytes=4, fp8_forward_fused=False):
    """HBM bytes of the casts to FP8 of one layer's GEMM operands per token (forward, its recomputation, backward).

    ``fp8_forward_fused``: the norms and the activation write their output in FP8 (Transformer Engine's
    LayerNormLinear and LayerNormMLP), so of the forward operands only the attention output is cast."""
    replicated = if_(seq_parallel, 2 * hidden / tp, 2 * hidden)
    forward = if_(fp8_forward_fused, heads * head_dim / tp, replicated + (heads * head_dim + ffn_hidden) / tp)
    passes = if_(eq(recompute, "full"), 2, if_(eq(recompute, "op_selective"), 1.5, 1))
    backward = replicated + ((heads + 2 * kv_heads) * head_dim + ffn_hidden * if_(gated_ffn, 2, 1)) / tp
    return fp8_cast_bytes * (forward * passes + backward)


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
    udf="OFFLOADED_OPTIMIZER_STEP_S", unit="seconds", category="steptime",
    equation="shard * 1e9 * (bytes per param / host memory bandwidth + weight bytes / PCIe bandwidth), shard = params "
             "on the GPU (ZeRO >= 1: params / dp)",
    source="Ren et al. 2021 (ZeRO-Offload) §4.1, Fig. 5: fp32 parameters and Adam states in CPU memory; the gradients "
           "move to the CPU during the backward pass, overlapped with it; the CPU's Adam is a memory-bound pass over "
           "the shard; the updated 16-bit parameters are copied back to the GPU over PCIe before the next step",
)
def offloaded_optimizer_step_s(params_per_gpu_b, host_memory_gb_s, pcie_gb_s, zero_stage=0, dp=1,
                               bytes_per_param_step=30, bytes_weights=2):
    """Time of an optimizer update offloaded to the CPU: Adam over the shard in host memory, then the updated
    weights back to the GPU over its PCIe link (the gradient transfer hides behind the backward pass)."""
    # two memory-bound passes over the same shard (OPTIMIZER_STEP_S): Adam's bytes through host memory, the
    # weights' bytes through PCIe (GB/s given as TB/s)
    return (optimizer_step_s(params_per_gpu_b, host_memory_gb_s / 1000, zero_stage, dp, bytes_per_param_step)
            + optimizer_step_s(params_per_gpu_b, pcie_gb_s / 1000, zero_stage, dp, bytes_weights))


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


# --- one pipeline stage: the planner's step-time model, term by term ----------------------------------


# head_dim_given when a model gives no head dimension of its own: the head is hidden / heads wide
HEAD_DIM_FROM_SHAPE = 0


@formula(
    udf="HEAD_DIM", unit="elements", category="steptime",
    equation="head_dim_given if > 0, else h / a",
    source="Vaswani et al. 2017 §3.2.2 (d_k = d_model / h); a model's config.json may give its own head_dim "
           "(Gemma 7B: 256 with h = 3072, a = 16)",
)
def head_dim_of(hidden, heads, head_dim_given=HEAD_DIM_FROM_SHAPE):
    """Dimension of one attention head: the model's own where it gives one, else hidden / heads."""
    return if_(head_dim_given > 0, head_dim_given, hidden / heads)


@formula(
    udf="DENSE_LAYER_PARAMS", unit="parameters", category="steptime",
    equation="h*a*dh [Q] + 2*h*kv*dh [K,V] + a*dh*h [O] + (3 if gated else 2)*h*F [FFN] + 2*h [two norms]; biases: "
             "+ (a + 2*kv)*dh + h [Q,K,V,O] + 2*h [the norms' shifts] + (F + h if not gated) [FFN]; relative positions: "
             "+ h*a*dh [position projection] + 2*a*dh [two bias vectors]",
    source="a pre-norm decoder layer (Llama: Touvron et al. 2023 §2.2, RMSNorm and SwiGLU); GQA's K and V are kv heads "
           "wide (Ainslie et al. 2023); biases in every linear layer and LayerNorm (GPT-2/3: Radford et al. 2019, "
           "Brown et al. 2020; OPT; BLOOM); Transformer-XL relative positions (Dai et al. 2019 §3.3: W_k,R and the "
           "per-head u, v; Gopher and Chinchilla, Rae et al. 2021)",
)
def dense_layer_params(hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn=False, biases=False,
                       relative_positions=False):
    """Parameters of one dense transformer layer from its shape, with the model's biases and relative-position terms
    (a count, not billions)."""
    attention = hidden * heads * head_dim * 2 + 2 * hidden * kv_heads * head_dim
    bias = (heads + 2 * kv_heads) * head_dim + 3 * hidden + if_(gated_ffn, 0, ffn_hidden + hidden)
    relative = hidden * heads * head_dim + 2 * heads * head_dim
    return (attention + if_(gated_ffn, 3, 2) * hidden * ffn_hidden + 2 * hidden + if_(biases, bias, 0)
            + if_(relative_positions, relative, 0))


@formula(
    udf="INPUT_EMBEDDING_PARAMS", unit="parameters", category="steptime",
    equation="(V + P)*h: the token table and a learned position table of P rows (0: rotary, relative or no positions)",
    source="Vaswani et al. 2017 §3.4-3.5 (token embeddings; learned positional embeddings); GPT-2/3 and OPT learn one "
           "row per position of their context (OPT: 2 rows more, its position offset)",
)
def input_embedding_params(vocab, hidden, position_rows=0):
    """Parameters of the input embedding: the token table and any learned position table (a count)."""
    return (vocab + position_rows) * hidden


@formula(
    udf="PIPELINE_STAGE_PARAMS", unit="parameters", category="steptime",
    equation="L/p * layer params + (2 if p = 1 and untied else 1) * embedding table",
    source="Narayanan et al. 2021 §3 (layers split evenly over stages; the input embedding sits on the first "
           "stage, the output layer on the last, both on one GPU when p = 1 unless tied)",
)
def pipeline_stage_params(layers, pp, layer_params, embedding_params, tied_embeddings=False):
    """Parameters of the heaviest pipeline stage: its layers plus the embedding and/or output table."""
    tables = if_(and_(eq(pp, 1), not_(tied_embeddings)), 2, 1)
    return layers / pp * layer_params + tables * embedding_params


@formula(
    udf="LOGITS_MEMORY_BYTES", unit="bytes per GPU", category="steptime",
    equation="4*s*b*V/t (fp32 logits, vocabulary split over t)",
    source="Megatron-LM: the output layer's logits are cast to fp32 (4 bytes) for the cross-entropy loss; "
           "vocab-parallel output layer splits V over t (Shoeybi et al. 2019 §3)",
)
def logits_memory_bytes(seq_len, micro_batch, vocab, tp=1):
    """Memory of the fp32 logits of one micro-batch on the last pipeline stage."""
    return 4 * seq_len * micro_batch * vocab / tp


@formula(
    udf="STAGE_ACTIVATIONS_GB", unit="GB per GPU", category="steptime",
    equation="MAX(L*layer bytes*in-flight factor [first stage] + (logits if p = 1), "
             "L/p*layer bytes + logits [last stage]) / 1e9",
    source="Korthikanti et al. 2022 §4.2.3 (1F1B: the first stage holds p micro-batches of L/p layers = L "
           "layers' worth); the logits live on the last stage",
)
def stage_activations_gb(layers, layer_act_bytes, inflight_factor, logits_bytes, pp=1):
    """Activation memory of the heavier of the first and the last pipeline stage."""
    first = layers * layer_act_bytes * inflight_factor
    last = layers / pp * layer_act_bytes + logits_bytes
    return max_(first + if_(eq(pp, 1), logits_bytes, 0), last) / 1e9


@formula(
    udf="LOGITS_MATMUL_FLOPS", unit="FLOPs per GPU", category="steptime",
    equation="3 * 2*h*V * tokens / t (forward + input and weight gradient)",
    source="Narayanan et al. 2021 §5.1 (the logit layer's 6*B*s*h*V, the V/(12*L*h) term; backward = 2 x forward)",
)
def logits_matmul_flops(hidden, vocab, tokens, tp=1):
    """Matmul FLOPs of the output (logit) layer for some tokens, forward and backward, on one GPU."""
    return 3 * 2 * hidden * vocab * tokens / tp


@formula(
    udf="STAGE_MATMUL_FLOPS", unit="FLOPs per GPU", category="steptime",
    equation="L/p * LAYER_MATMUL_FLOPS * tokens / t * (4 with full recompute, 3.5 with op_selective, else 3) + LOGITS_MATMUL_FLOPS",
    source="Narayanan et al. 2021 §5.1 (forward + backward = 3 x forward; full recomputation adds a forward: 4 x)",
)
def stage_matmul_flops(layers_per_stage, tokens, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab,
                       gated_ffn=False, tp=1, recompute="none"):
    """Matmul FLOPs of one pipeline stage for some tokens on one GPU, logit layer included."""
    per_layer = layer_matmul_flops(hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn)
    passes = if_(eq(recompute, "full"), 4, if_(eq(recompute, "op_selective"), 3.5, 3))
    return layers_per_stage * per_layer * tokens / tp * passes + logits_matmul_flops(hidden, vocab, tokens, tp)


@formula(
    udf="STAGE_LINEAR_TIME_S", unit="seconds", category="steptime",
    equation="L/p * [LINEAR_LAYER_TIME_S of Q,K,V (h x (a+2kv)*dh/t), attention output (a*dh/t x h), FFN up and gate "
             "(h x F*(2 if gated)/t), FFN down (F/t x h); forward twice with full recompute, 1.5 times with "
             "op_selective (every other matmul recomputed)] + logits (h x V/t)",
    source="Megatron-LM layer (Shoeybi et al. 2019: column-parallel QKV and FFN up, row-parallel output and "
           "FFN down, vocab-parallel logits); wave quantization per GEMM_WAVE_EFFICIENCY",
)
def stage_linear_time_s(layers_per_stage, tokens, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab,
                        peak_tflops, matmul_efficiency, sm_count, gated_ffn=False, tp=1, recompute="none"):
    """Matmul time of one pipeline stage for some tokens on one GPU, each matmul in whole waves of tiles."""
    fwd = if_(eq(recompute, "full"), 2, if_(eq(recompute, "op_selective"), 1.5, 1))

    def linear(k, n, passes):
        return linear_layer_time_s(tokens, k, n, peak_tflops, matmul_efficiency, sm_count, passes)

    layer = (linear(hidden, (heads + 2 * kv_heads) * head_dim / tp, fwd)               # Q, K, V
             + linear(heads * head_dim / tp, hidden, fwd)                              # attention output
             + linear(hidden, ffn_hidden * if_(gated_ffn, 2, 1) / tp, fwd)             # FFN up (and gate)
             + linear(ffn_hidden / tp, hidden, fwd))                                   # FFN down
    return layers_per_stage * layer + linear(hidden, vocab / tp, 1)                    # logits


@formula(
    udf="STAGE_ATTENTION_FLOPS", unit="FLOPs per GPU", category="steptime",
    equation="L/p * ATTENTION_CORE_FLOPS * tokens / t * (4 with selective or full recompute, else 3)",
    source="Korthikanti et al. 2022 §5 (selective recomputation reruns QK^T, softmax and AV); "
           "Narayanan et al. 2021 §5.1 (backward = 2 x forward)",
)
def stage_attention_flops(layers_per_stage, tokens, seq_len, heads, head_dim, tp=1, recompute="none"):
    """FLOPs of the attention core (scores and weighted sum) of one pipeline stage for some tokens on one GPU."""
    passes = if_(or_(eq(recompute, "full"), eq(recompute, "selective")), 4, 3)
    return layers_per_stage * attention_core_flops(seq_len, heads, head_dim) * tokens / tp * passes


@formula(
    udf="FLASH_ATTENTION_TIME_S", unit="seconds", category="steptime",
    equation="0.5 * attention FLOPs / (peak*1e12 * attention efficiency) (causal: half the s x s block computed)",
    source="Dao 2023 (FlashAttention-2 skips the masked blocks of causal attention); Shah et al. 2024 "
           "(FlashAttention-3: FlashAttention-2 reaches 35% of peak on H100)",
)
def flash_attention_time_s(flops, peak_tflops, attention_efficiency):
    """Time of the fused causal attention core: half of the full-matrix FLOPs at the attention kernel's efficiency."""
    return compute_time_s(flops * 0.5, peak_tflops, attention_efficiency)


@formula(
    udf="STAGE_UNFUSED_ATTENTION_TIME_S", unit="seconds", category="steptime",
    equation="UNFUSED_ATTENTION_TIME_S(flops, L/p*tokens*gemm bytes per token, L/p*tokens*softmax bytes per token)",
    source="ATTENTION_GEMM_BYTES_PER_TOKEN and ATTENTION_SOFTMAX_BYTES_PER_TOKEN over a stage's layers and tokens",
)
def stage_unfused_attention_time_s(flops, layers_per_stage, tokens, seq_len, heads, peak_tflops, matmul_efficiency,
                                   hbm_tb_s, tp=1, recompute="none"):
    """Time of the unfused attention core of one pipeline stage for some tokens on one GPU (no FlashAttention)."""
    gemm_bytes = layers_per_stage * tokens * attention_gemm_bytes_per_token(seq_len, heads, tp, recompute)
    softmax_bytes = layers_per_stage * tokens * attention_softmax_bytes_per_token(seq_len, heads, tp, recompute)
    return unfused_attention_time_s(flops, gemm_bytes, softmax_bytes, peak_tflops, matmul_efficiency, hbm_tb_s)


@formula(
    udf="ELEMENTWISE_TIME_S", unit="seconds", category="steptime",
    equation="(L/p * ELEMENTWISE_BYTES_PER_TOKEN * (4/3 with full recompute, else 1) + loss bytes*V/t * factor) "
             "* tokens / (HBM*1e12)",
    source="memory-bound kernels at HBM bandwidth (seed 004 roofline); full and per-op selective recomputation "
           "(torchtitan: every non-matmul op recomputed) rerun the forward third of the traffic; "
           "loss over fp32 logits: 16 bytes per logit (forward read 4 + write 4, backward read 4 + write 4); "
           "a fused cross-entropy kernel on bf16 logits (flash-attn's xentropy, "
           "llm-foundry's default loss): 6 (forward read 2, backward read 2 + write the gradient 2)",
)
def elementwise_time_s(layers_per_stage, tokens, hidden, ffn_hidden, vocab, hbm_tb_s, gated_ffn=False, tp=1,
                       seq_parallel=False, recompute="none", elementwise_factor=1, loss_bytes=16, dropout=True):
    """Time of the non-matmul kernels (norms, residuals, dropout, activation, loss) of one stage on one GPU."""
    per_layer = elementwise_bytes_per_token(hidden, ffn_hidden, gated_ffn, tp, seq_parallel, elementwise_factor,
                                            dropout)
    passes = if_(or_(eq(recompute, "full"), eq(recompute, "op_selective")), 4 / 3, 1)
    return ((layers_per_stage * per_layer * passes + loss_bytes * vocab / tp * elementwise_factor) * tokens
            / (hbm_tb_s * 1e12))


# --- hardware-aware terms: attention kernel (the collectives: xlcalc.formulas.communication) ---------


@formula(
    udf="ATTENTION_CORE_TIME_S", unit="seconds", category="steptime",
    equation="MAX(0.5*flops / (peak*1e12 * MIN(attention eff, matmul eff)), flops / (peak*1e12 * matmul eff)) "
             "(causal: half the s x s block computed; never cheaper per counted FLOP than a GEMM)",
    source="Dao 2023 (FlashAttention-2 computes the unmasked causal half); Shah et al. 2024 (FlashAttention-3: "
           "FlashAttention-2 reaches about 35% of H100 peak); the attention kernel is no more efficient than the "
           "GEMMs around it, per FLOP the MFU counts",
)
def attention_core_time_s(flops, peak_tflops, attention_efficiency, matmul_efficiency):
    """Time of the fused causal attention core: its own kernel efficiency, never cheaper per counted FLOP than a GEMM."""
    kernel = 0.5 * flops / (peak_tflops * 1e12 * min_(attention_efficiency, matmul_efficiency))
    return max_(kernel, flops / (peak_tflops * 1e12 * matmul_efficiency))


@formula(
    udf="MOE_PERMUTE_TIME_S", unit="seconds", category="steptime",
    equation="moe layers * 12*k*h bytes per token * (4/3 with full recompute) * factor * tokens / (HBM*1e12)",
    source="Megatron-Core MoE token permutation (moe_utils permute/unpermute): the forward gathers each token's k "
           "copies for its experts (read and write k*h bf16 values, 2*k*h bytes each way) and scatters them back "
           "weighted (the same again); the backward moves twice the forward's bytes, "
           "as ELEMENTWISE_TIME_S counts kernels; memory-bound at HBM bandwidth (seed 004 roofline)",
)
def moe_permute_time_s(layers_per_stage, tokens, hidden, topk, hbm_tb_s, recompute="none", elementwise_factor=1):
    """Time of the MoE layers' token permutation and unpermutation (memory-bound) of one stage on one GPU."""
    passes = if_(eq(recompute, "full"), 4 / 3, 1)
    return layers_per_stage * 12 * topk * hidden * passes * elementwise_factor * tokens / (hbm_tb_s * 1e12)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

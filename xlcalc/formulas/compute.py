"""Training compute and time: FLOPs, days, GPU-hours, GPUs for a deadline, Chinchilla."""

from __future__ import annotations

from .. import layout
from ..expr.functions import ceiling, eq, if_, sqrt
from ..inputs import result_bound
from ..recipes import MEMORY_DEFAULTS as _D  # every input's default, declared once: the signatures read it
from ..registry import REGISTRY, formula

SECONDS_PER_DAY = 86400
SECONDS_PER_HOUR = 3600

# Derived results past these bounds are refused, naming the inputs that produced them (Formula.at_most): a share of
# peak cannot exceed 1, and a count of days, GPU-hours or GPUs no larger than the same quantity typed as an input.
_DAYS = result_bound("days", "the days input's")
_GPUS = result_bound("n_gpus", "the n_gpus input's")
_GPU_HOURS = (_DAYS[0] * 24 * _GPUS[0],
              "the bound is the longest run (the days input's bound, 1e+8 days) on the largest cluster (the n_gpus "
              "input's, 1e+7 GPUs)")
_MFU_AT_MOST = (1, "MFU is a share of the GPUs' peak: no run does more model FLOPs per second than its GPUs' peak, "
                   "so an MFU above 1 means the inputs that produced it contradict each other")
_HFU_AT_MOST = (1, "HFU is a share of the GPUs' peak: the hardware cannot do more FLOPs per second than its peak, so "
                   "MFU x the recompute mode's hardware FLOPs factor must stay at most 1")


@formula(
    udf="TRAIN_FLOPS", question=True, unit="FLOPs", category="compute",
    equation="C = 6*N*D",
    source="Kaplan et al. 2020; seed 002 §7.2.1 (forward 2ND + backward 4ND)",
)
def train_flops(params_b, tokens_t):
    """Training FLOPs of a dense model: six FLOPs per parameter per token."""
    return 6 * (params_b * 1e9) * (tokens_t * 1e12)


@formula(
    udf="FLOPS_PER_TOKEN", unit="FLOPs/token", category="compute",
    equation="6*N + 12*L*H*Q*T (N non-embedding params, H heads, Q head dim, T seq len)",
    source="Chowdhery et al. 2022 (PaLM), Appendix B",
)
def flops_per_token_palm(nonembed_params_b, layers, heads, head_dim, seq_len):
    """Training FLOPs per token including self-attention (PaLM's MFU convention)."""
    return 6 * nonembed_params_b * 1e9 + 12 * layers * heads * head_dim * seq_len


@formula(
    udf="MEGATRON_ITER_FLOPS", unit="FLOPs/iteration", category="compute",
    equation="72*B*s*L*h^2*(1 + s/(6h) + V/(12*L*h)); full recompute 96*B*s*L*h^2*(1 + s/(6h) + V/(16*L*h))",
    source="Narayanan et al. 2021 (arXiv 2104.04473), §5.1",
)
def megatron_iteration_flops(global_batch, seq_len, layers, hidden, vocab, full_recompute=False):
    """FLOPs of one training iteration of a GPT model, as Megatron-LM counts them."""
    base = global_batch * seq_len * layers * hidden ** 2
    plain = 72 * base * (1 + seq_len / (6 * hidden) + vocab / (12 * layers * hidden))
    recomputed = 96 * base * (1 + seq_len / (6 * hidden) + vocab / (16 * layers * hidden))
    return if_(full_recompute, recomputed, plain)


@formula(
    udf="TRAIN_DAYS", question=True, at_most=_DAYS, unit="days", category="compute",
    equation="days = 6*N*D / (peak*1e12 * n_gpus * MFU) / 86400",
    source="seed 002 §7.2.3",
)
def train_days(params_b, tokens_t, peak_tflops, n_gpus, mfu):
    """Wall-clock days to train on n_gpus GPUs at a given MFU."""
    return train_flops(params_b, tokens_t) / (peak_tflops * 1e12 * n_gpus * mfu) / SECONDS_PER_DAY


@formula(
    udf="GPU_HOURS", question=True, at_most=_GPU_HOURS, unit="GPU-hours", category="compute",
    equation="GPU-hours = 6*N*D / (peak*1e12 * MFU) / 3600",
    source="seed 002 §7.2.3; seed 000",
)
def gpu_hours(params_b, tokens_t, peak_tflops, mfu):
    """GPU-hours of one training run (independent of the GPU count)."""
    return train_flops(params_b, tokens_t) / (peak_tflops * 1e12 * mfu) / SECONDS_PER_HOUR


@formula(
    udf="GPUS_FOR_DAYS", question=True, at_most=_GPUS, unit="GPUs", category="compute",
    equation="GPUs = 6*N*D / (peak*1e12 * MFU * days * 86400), not rounded",
    source="seed 002 §7.3 step 2",
)
def gpus_for_days(params_b, tokens_t, peak_tflops, mfu, days):
    """GPUs needed to finish within a deadline (a fractional count, before any rounding)."""
    return train_flops(params_b, tokens_t) / (peak_tflops * 1e12 * mfu * days * SECONDS_PER_DAY)


@formula(
    udf="IMPLIED_MFU", at_most=_MFU_AT_MOST, unit="fraction", category="compute",
    equation="MFU = 6*N*D / (GPU-hours * 3600 * peak*1e12)",
    source="seed 000 (GPU-hours check); published.json derived_checks",
)
def implied_mfu(params_b, tokens_t, peak_tflops, gpu_hours):
    """MFU implied by a reported number of GPU-hours."""
    return train_flops(params_b, tokens_t) / (gpu_hours * SECONDS_PER_HOUR * peak_tflops * 1e12)


@formula(
    udf="HW_FLOPS_FACTOR", unit="ratio", category="compute",
    equation='none 1; selective 1 + s/(18h + 3s); full 4/3 (8N instead of 6N per token)',
    source="Korthikanti et al. 2022 §5 (selective recomputes QK^T and AV: 4*b*s^2*h of 72*b*s*h^2*(1+s/(6h)) per layer)",
)
def hardware_flops_factor(recompute, seq_len, hidden):
    """Hardware FLOPs / model FLOPs for a recompute mode (HFU = MFU x this factor)."""
    return if_(eq(recompute, "full"), 4 / 3,
               if_(eq(recompute, "selective"), 1 + seq_len / (18 * hidden + 3 * seq_len), 1))


@formula(
    udf="HFU_FROM_MFU", at_most=_HFU_AT_MOST, unit="fraction", category="compute",
    equation="HFU = MFU * hardware FLOPs factor of the recompute mode",
    source="Korthikanti et al. 2022 §5; Chowdhery et al. 2022 Appendix B",
)
def hfu_from_mfu(mfu, recompute, seq_len, hidden):
    """Hardware FLOPs utilisation: MFU plus the FLOPs spent recomputing activations."""
    return mfu * hardware_flops_factor(recompute, seq_len, hidden)


@formula(
    udf="DAYS_FROM_THROUGHPUT", at_most=_DAYS, unit="days", category="compute",
    equation="days = 8*T*P / (n * X) / 86400 (full recompute; X achieved TFLOP/s per GPU)",
    source="Narayanan et al. 2021, Eq. 4",
)
def days_from_throughput(params_b, tokens_t, n_gpus, achieved_tflops, full_recompute=True):
    """Days at an achieved per-GPU throughput X (Narayanan's 8TP/(nX) with full recompute, else 6TP/(nX))."""
    per_param_token = if_(full_recompute, 8, 6)
    return per_param_token * params_b * 1e9 * tokens_t * 1e12 / (n_gpus * achieved_tflops * 1e12) / SECONDS_PER_DAY


@formula(
    udf="DP_SIZE", unit="GPUs", category="compute",
    equation="DP = GPUs / (TP * PP * CP), whole (GPUs a multiple of TP * PP * CP: xlcalc.layout)",
    source="Narayanan et al. 2021 §2 (n = p * t * d); context parallelism adds a factor (Megatron-Core CP)",
    check=layout.check_replicas,  # the one layout check: its message names the constraint
)
def data_parallel_size(n_gpus, tp=_D["tp"], pp=_D["pp"], cp=_D["cp"]):
    """Data-parallel size: how many model replicas the GPUs form."""
    return n_gpus / (tp * pp * cp)


@formula(
    udf="REPLICAS_NEEDED", unit="replicas", category="compute",
    equation="replicas = CEILING(GPUs needed / replica GPUs)",
    source="seed 002 §7.3 step 2 (861 / 16 -> 54 replicas)",
)
def replicas_needed(gpus_needed, replica_gpus):
    """Whole model replicas (TP x PP GPUs each) needed to supply a GPU count."""
    return ceiling(gpus_needed / replica_gpus, 1)


@formula(
    udf="GPUS_WITH_SPARE", unit="GPUs", category="compute",
    equation="GPUs = replicas * replica GPUs * (1 + spare)",
    source="seed 002 §7.3 step 2 (864 x 1.05 = 907)",
)
def gpus_with_spare(gpus_needed, replica_gpus, spare_frac):
    """GPUs in whole replicas plus a spare share for failures (fractional)."""
    return replicas_needed(gpus_needed, replica_gpus) * replica_gpus * (1 + spare_frac)


@formula(
    udf="GPUS_WHOLE_NODES", unit="GPUs", category="compute",
    equation="GPUs = CEILING(replicas * replica GPUs * (1 + spare), GPUs per node)",
    source="seed 002 §7.3 step 2 (replicas -> spare -> whole nodes)",
)
def gpus_whole_nodes(gpus_needed, replica_gpus, spare_frac, gpus_per_node):
    """GPUs to buy or rent: whole replicas, plus spare, rounded up to whole nodes."""
    return ceiling(gpus_with_spare(gpus_needed, replica_gpus, spare_frac), gpus_per_node)


# Compute-optimal training tokens per parameter, the one default of every function that takes tokens_per_param:
# 20, Hoffmann et al. 2022 (Chinchilla): about 20 across its Table 3's model sizes; Chinchilla, 70B, on 1.4T tokens
TOKENS_PER_PARAM = 20


@formula(
    udf="CHINCHILLA_TOKENS_T", unit="trillion tokens", category="compute",
    equation="D = 20*N (tokens per parameter)",
    source="Hoffmann et al. 2022 (Chinchilla); seed 000",
)
def chinchilla_tokens_t(params_b, tokens_per_param=TOKENS_PER_PARAM):
    """Compute-optimal training tokens for a model size."""
    return params_b * tokens_per_param / 1000


@formula(
    udf="CHINCHILLA_PARAMS_B", unit="billion parameters", category="compute",
    equation="N_opt = SQRT(C / (6*k)), k tokens per parameter (k = 20: SQRT(C/120))",
    source="Hoffmann et al. 2022 with C = 6ND and D = k*N",
)
def chinchilla_params_b(compute_flops, tokens_per_param=TOKENS_PER_PARAM):
    """Compute-optimal model size for a FLOPs budget."""
    return sqrt(compute_flops / (6 * tokens_per_param)) / 1e9


@formula(
    udf="CHINCHILLA_OPT_TOKENS_T", unit="trillion tokens", category="compute",
    equation="D_opt = k * N_opt = SQRT(k*C/6)",
    source="Hoffmann et al. 2022 with C = 6ND and D = k*N",
)
def chinchilla_opt_tokens_t(compute_flops, tokens_per_param=TOKENS_PER_PARAM):
    """Compute-optimal training tokens for a FLOPs budget."""
    return tokens_per_param * chinchilla_params_b(compute_flops, tokens_per_param) * 1e9 / 1e12


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

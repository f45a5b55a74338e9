"""Budget-first planning: what a budget buys — GPUs, GPU-hours, FLOPs, the compute-optimal model.

Money -> GPU-hours (budget / price) -> FLOPs (GPU-hours x 3600 x peak x MFU) -> the largest
compute-optimal model at k tokens per parameter (C = 6ND, D = kN: N = SQRT(C / 6k)).
These are the values of the spilled BUDGET_PLAN; :func:`xlcalc.money.budget_plan` returns them as rows.
"""

from __future__ import annotations

from ..expr.functions import floor_int
from ..registry import REGISTRY, formula
from .compute import TOKENS_PER_PARAM, chinchilla_opt_tokens_t, chinchilla_params_b


@formula(udf="BUDGET_GPUS", unit="GPUs", category="budget",
         equation="INT(budget / ($/GPU-hour * days * 24))",
         source="seed 001 §5.2 (budget tiers), done from first principles; issue 12")
def budget_gpus(budget_usd, usd_per_gpu_hour, days):
    """Whole GPUs a budget pays for over a number of days."""
    return floor_int(budget_usd / (usd_per_gpu_hour * days * 24))


@formula(udf="BUDGET_FLOPS", unit="FLOPs", category="budget",
         equation="budget / $/GPU-hour * 3600 * peak TFLOP/s * 1e12 * MFU",
         source="seed 002 §7.3 (time model 6PD / (peak x N x MFU)) inverted; issue 12")
def budget_compute_flops(budget_usd, usd_per_gpu_hour, peak_tflops, mfu):
    """Model FLOPs a budget buys at a price, a GPU's peak and an MFU."""
    return budget_usd / usd_per_gpu_hour * 3600 * peak_tflops * 1e12 * mfu


@formula(udf="BUDGET_PARAMS_B", unit="billion parameters", category="budget",
         equation="SQRT(budget FLOPs / (6 * k)), k tokens per parameter",
         source="Hoffmann et al. 2022 (Chinchilla) with C = 6ND; issue 12")
def budget_params_b(budget_usd, usd_per_gpu_hour, peak_tflops, mfu, tokens_per_param=TOKENS_PER_PARAM):
    """Largest compute-optimal model a budget trains."""
    return chinchilla_params_b(budget_compute_flops(budget_usd, usd_per_gpu_hour, peak_tflops, mfu), tokens_per_param)


@formula(udf="BUDGET_TOKENS_T", unit="trillion tokens", category="budget",
         equation="k * SQRT(budget FLOPs / (6 * k))",
         source="Hoffmann et al. 2022 (Chinchilla) with C = 6ND; issue 12")
def budget_tokens_t(budget_usd, usd_per_gpu_hour, peak_tflops, mfu, tokens_per_param=TOKENS_PER_PARAM):
    """Training tokens of the largest compute-optimal model a budget trains."""
    return chinchilla_opt_tokens_t(budget_compute_flops(budget_usd, usd_per_gpu_hour, peak_tflops, mfu),
                                   tokens_per_param)


@formula(udf="BUDGET_TOKENS_FOR_MODEL_T", unit="trillion tokens", category="budget",
         equation="budget FLOPs / (6 * N) / 1e12", source="C = 6ND solved for D; issue 12")
def budget_tokens_for_model_t(budget_usd, usd_per_gpu_hour, peak_tflops, mfu, params_b):
    """Training tokens a budget buys for a model of a given size."""
    return budget_compute_flops(budget_usd, usd_per_gpu_hour, peak_tflops, mfu) / (6 * params_b * 1e9) / 1e12


@formula(udf="BUDGET_LINE_USD", unit="USD", category="budget",
         equation="compute USD * share + amount",
         source="seed 003 (cost categories: data, people, power and facilities, experiments and failed runs)")
def budget_line_usd(compute_usd, share_frac, amount_usd):
    """One budget line given as a share of compute, an amount, or both."""
    return compute_usd * share_frac + amount_usd


@formula(udf="BUDGET_TOTAL_USD", unit="USD", category="budget",
         equation="compute + failures + experiments + data + people + other",
         source="seed 003 (hardware, data, people, power and facilities, experiments and failed runs)")
def budget_total_usd(compute_usd, failures_usd, experiments_usd, data_usd, people_usd, other_usd):
    """Total of a budget's lines by category (compute includes power when it is not in the rental price)."""
    return compute_usd + failures_usd + experiments_usd + data_usd + people_usd + other_usd


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

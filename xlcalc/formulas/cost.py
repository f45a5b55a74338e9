"""Cost: cloud rental, owned hardware, power, the training tax and budget lines."""

from __future__ import annotations

from ..registry import REGISTRY, formula
from .compute import _DAYS

# Compute lost to failures and restarts when a plan does not say: 15%, the middle of seed 000's 10-20% training tax
# (the scenario's failure_frac reads it: estimate, cost, the scenario files, the workbook)
FAILURE_FRAC = 0.15


@formula(udf="CLOUD_COST_USD", question=True, unit="USD", category="cost",
         equation="GPU-hours * $/GPU-hour",
         source="seed 000; DeepSeek-V3 report (2.788M H800-hours x $2 = $5.576M)")
def cloud_cost_usd(gpu_hours, usd_per_gpu_hour):
    """Compute cost of a run on rented GPUs."""
    return gpu_hours * usd_per_gpu_hour


@formula(udf="CAPEX_COST_USD", unit="USD", category="cost",
         equation="GPUs * price per GPU * days / (365 * depreciation years)",
         source="seed 001 §5.1 (3-year depreciation)")
def capex_cost_usd(n_gpus, capex_usd_per_gpu, depreciation_years, days):
    """Straight-line depreciation of owned GPUs over the days of the run."""
    return n_gpus * capex_usd_per_gpu * days / (365 * depreciation_years)


@formula(udf="ENERGY_MWH", unit="MWh", category="cost",
         equation="GPUs * kW per GPU * PUE * days * 24 / 1000",
         source="seed 001 §5.1; LLaMA paper Table 15 (GPU-hours x 400 W x PUE 1.1)")
def energy_mwh(n_gpus, kw_per_gpu, pue, days):
    """Facility energy of a run."""
    return n_gpus * kw_per_gpu * pue * days * 24 / 1000


@formula(udf="POWER_COST_USD", unit="USD", category="cost",
         equation="energy MWh * 1000 * $/kWh", source="seed 001 §5.1; seed 003 (power and facilities)")
def power_cost_usd(n_gpus, kw_per_gpu, pue, days, usd_per_kwh):
    """Electricity cost of a run on owned hardware."""
    return energy_mwh(n_gpus, kw_per_gpu, pue, days) * 1000 * usd_per_kwh


@formula(udf="OWN_COST_USD", unit="USD", category="cost",
         equation="GPUs * capex per GPU * days / (365 * depreciation years) + GPUs * kW * PUE * days * 24 * $/kWh",
         source="seed 001 §5.1 (3-year straight-line depreciation + electricity); issue 12")
def own_cost_usd(n_gpus, capex_usd_per_gpu, depreciation_years, days, kw_per_gpu, pue, usd_per_kwh):
    """Compute cost of a run on owned hardware: straight-line depreciation for the days used, plus energy."""
    return (capex_cost_usd(n_gpus, capex_usd_per_gpu, depreciation_years, days)
            + power_cost_usd(n_gpus, kw_per_gpu, pue, days, usd_per_kwh))


@formula(udf="TRAINING_TAX_USD", unit="USD", category="cost",
         equation="compute * (failures + experiments)",
         source="seed 000 (training tax: failures and restarts 10-20%); seed 003 (experiments and failed runs)")
def training_tax_usd(compute_usd, failure_frac=FAILURE_FRAC, experiments_frac=0):
    """The training tax: compute lost to failures and restarts, plus experiments and ablations."""
    return compute_usd * (failure_frac + experiments_frac)


@formula(udf="TOTAL_COST_USD", question=True, unit="USD", category="cost",
         equation="compute + training tax + data + people + other",
         source="seed 000 (training tax: failures 10-20%, people, power); seed 003 (data, experiments)")
def total_cost_usd(compute_usd, failure_frac=FAILURE_FRAC, experiments_frac=0, data_usd=0, people_usd=0, other_usd=0):
    """Total cost of a training project including the training tax."""
    return compute_usd + training_tax_usd(compute_usd, failure_frac, experiments_frac) + data_usd + people_usd + other_usd


@formula(udf="USD_PER_M_TOKENS", unit="USD per million tokens", category="cost",
         equation="total USD / (tokens_t * 1e6)", source="xlcalc (cost per token)")
def usd_per_million_tokens(total_usd, tokens_t):
    """Cost per million training tokens."""
    return total_usd / (tokens_t * 1e6)


@formula(udf="GPU_HOURS_FOR_BUDGET", unit="GPU-hours", category="cost",
         equation="budget / $/GPU-hour", source="seed 001 §5.2 (budget tiers)")
def gpu_hours_for_budget(budget_usd, usd_per_gpu_hour):
    """GPU-hours a budget buys."""
    return budget_usd / usd_per_gpu_hour


@formula(udf="DAYS_FOR_BUDGET", unit="days", category="cost", at_most=_DAYS,
         equation="budget / ($/GPU-hour * GPUs * 24)", source="seed 001 §5.2 (budget tiers)")
def days_for_budget(budget_usd, usd_per_gpu_hour, n_gpus):
    """Days of a cluster of n_gpus that a budget buys."""
    return gpu_hours_for_budget(budget_usd, usd_per_gpu_hour) / (n_gpus * 24)


@formula(udf="BUDGET_LEFT_USD", unit="USD", category="cost",
         equation="budget - total cost (negative = over budget)", source="seed 002 §7.3 step 3 (estimate vs budget)")
def budget_left_usd(budget_usd, total_usd):
    """What is left of a budget after the estimated total (negative when over)."""
    return budget_usd - total_usd


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

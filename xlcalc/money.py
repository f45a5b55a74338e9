"""Money questions as labelled rows: own vs rent, budget-first plans, goodput, low/base/high ranges.

Pure functions over the registered formulas (no equations of their own): each returns
:class:`Row` s — key, label, value, unit and the worksheet function that computes the value —
so the CLI, the docs and a spilled worksheet function can print or return the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Optional

from . import catalog
from .errors import InputError
from .formulas import budget, cost, goodput, ownership
from .outputs import RANGES
from .registry import Formula
from .scenario import Scenario, evaluate


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    value: Any
    unit: str
    udf: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(key: str, label: str, f: Formula, env: Mapping[str, Any]) -> Row:
    """The row of formula ``f``, its inputs taken by name from ``env`` (a question's values)."""
    return Row(key, label, f(**{p: env[p] for p in f.params}), f.unit, f.udf_name)


# --- budget-first planning ---------------------------------------------------------------------

#: The values BUDGET_PLAN(budget_usd, usd_per_gpu_hour, peak_tflops, mfu, days) spills, in order.
BUDGET_PLAN_VALUES = ("gpus", "gpu_hours", "params_b", "tokens_t")


# tokens per parameter of a compute-optimal model: the budget formulas' declared default (Chinchilla's 20)
TOKENS_PER_PARAM: float = budget.budget_params_b.defaults["tokens_per_param"]


def budget_plan(budget_usd: float, usd_per_gpu_hour: float, peak_tflops: float, mfu: float, days: float,
                tokens_per_param: float = TOKENS_PER_PARAM, params_b: Optional[float] = None) -> list[Row]:
    """What a budget buys: GPUs for `days`, GPU-hours, FLOPs, the largest compute-optimal model and its
    tokens (C = 6ND at `tokens_per_param`); with `params_b`, also the tokens the budget buys for that model.

    The first four rows (:data:`BUDGET_PLAN_VALUES`) are the spilled BUDGET_PLAN worksheet function.
    """
    env = dict(locals())  # the arguments by name
    rows = [
        _row("gpus", "GPUs the budget pays for over the days", budget.budget_gpus, env),
        _row("gpu_hours", "GPU-hours", cost.gpu_hours_for_budget, env),
        _row("params_b", f"Largest compute-optimal model ({tokens_per_param:g} tokens/parameter)",
             budget.budget_params_b, env),
        _row("tokens_t", "Its training tokens", budget.budget_tokens_t, env),
        _row("flops", "Model FLOPs the budget buys", budget.budget_compute_flops, env),
    ]
    if params_b is not None:
        rows.append(_row("tokens_for_model_t", f"Tokens the budget buys for a {params_b:g}B model",
                         budget.budget_tokens_for_model_t, env))
    return rows


#: Seed 001 §5.2: recommended configurations by budget ("based on practical project experience").
SEED001_TIERS: tuple[dict[str, Any], ...] = (
    {"budget_usd": 1e6, "gpu": "a100-80gb", "gpus": 64, "months": "6-9", "model": "70B"},
    {"budget_usd": 5e6, "gpu": "a100-80gb", "gpus": 256, "months": "2-3", "model": "100-200B"},
    {"budget_usd": 5e6, "gpu": "h100-sxm", "gpus": 128, "months": "2-3", "model": "100-200B"},
    {"budget_usd": 10e6, "gpu": "h100-sxm", "gpus": 512, "months": "1-2", "model": "200-500B"},
)


def seed001_tiers(mfu: float = 0.4) -> list[dict[str, Any]]:
    """Seed 001's budget tiers beside what the engine derives for them at the GPU's catalog rental rate.

    The A100-80GB has no dated rental rate in the catalog; the A100-40GB capacity-block rate stands in
    (same peak TFLOP/s). Derived: GPU-hours, the months the budget lasts on the seed's GPU count, and the
    largest compute-optimal model and its tokens at `mfu` and 20 tokens per parameter.
    """
    out = []
    for t in SEED001_TIERS:
        gpu = catalog.get_gpu(t["gpu"])
        default = catalog.price_for(gpu.id)
        rate = default if default is not None and default.usd_per_gpu_hour is not None else \
            catalog.rental_price("a100-40gb")
        assert rate.usd_per_gpu_hour is not None  # a default with a rate, or rental_price's row (always has one)
        by = {r.key: r.value for r in budget_plan(t["budget_usd"], rate.usd_per_gpu_hour, gpu.peak_tflops(), mfu,
                                                  days=30)}
        days = cost.days_for_budget(t["budget_usd"], rate.usd_per_gpu_hour, t["gpus"])
        out.append({**t, "price_id": rate.id, "usd_per_gpu_hour": rate.usd_per_gpu_hour,
                    "peak_tflops": gpu.peak_tflops(), "mfu": mfu, "gpu_hours": by["gpu_hours"],
                    "days_on_seed_gpus": days, "months_on_seed_gpus": days / ownership.DAYS_PER_MONTH,
                    "params_b": by["params_b"], "tokens_t": by["tokens_t"]})
    return out


def budget_plan_table(budget_usd: float, usd_per_gpu_hour: float, peak_tflops: float, mfu: float,
                      days: float) -> list[list[Any]]:
    """BUDGET_PLAN's spill: [label, value, unit] for GPUs, GPU-hours, parameters (B) and tokens (T)."""
    rows = {r.key: r for r in budget_plan(budget_usd, usd_per_gpu_hour, peak_tflops, mfu, days)}
    return [[rows[k].label, rows[k].value, rows[k].unit] for k in BUDGET_PLAN_VALUES]


# --- own vs rent -----------------------------------------------------------------------------------

_DEFAULT = {k: f.default for k, f in Scenario.model_fields.items()}  # each input's one default (the scenario's)


def own_vs_rent(n_gpus: int, days: float, usd_per_gpu_hour: float, capex_usd_per_gpu: float,
                depreciation_years: float, kw_per_gpu: float, pue: float, usd_per_kwh: float,
                utilisation: float = _DEFAULT["utilisation"], capex_usd_per_server: float = _DEFAULT["capex_usd_per_server"],
                kw_per_server: float = _DEFAULT["kw_per_server"], gpus_per_node: int = _DEFAULT["gpus_per_node"],
                kw_per_rack: float = _DEFAULT["kw_per_rack"],
                usd_per_rack_month: float = _DEFAULT["usd_per_rack_month"]) -> list[Row]:
    """Rent beside own for one run, with break-even utilisation and months.

    Break-even rows hold a readable message instead of a number when the rent does not even
    cover the electricity (owning never breaks even).
    """
    # the arguments by name, with the price and the power of a GPU owned all in (its share of the server)
    env = dict(locals(), capex_usd_per_gpu=ownership.capex_usd_per_gpu_all_in(capex_usd_per_gpu, capex_usd_per_server,
                                                                             gpus_per_node),
               kw_per_gpu=ownership.kw_per_gpu_all_in(kw_per_gpu, kw_per_server, gpus_per_node))
    rows = [
        _row("rent_usd", "Rent", ownership.rent_cost_usd, env),
        _row("own_usd", "Own: depreciation + hosting (/ utilisation) + electricity", ownership.own_total_cost_usd, env),
        _row("depreciation_usd", "  of which depreciation for the days used", cost.capex_cost_usd, env),
        _row("electricity_usd", "  of which electricity", cost.power_cost_usd, env),
        _row("hosting_usd", "  of which hosting", ownership.hosting_cost_usd, env),
        Row("rent_usd_per_gpu_hour", "Rent per GPU-hour", usd_per_gpu_hour, "USD/GPU-hour"),
        _row("own_usd_per_gpu_hour", "Own per busy GPU-hour", ownership.own_usd_per_gpu_hour, env),
    ]
    for key, label, f in (
        ("breakeven_utilisation", "Break-even utilisation (owning is cheaper above it)",
         ownership.breakeven_utilisation),
        ("breakeven_months", "Break-even: months of rent that pay for a GPU", ownership.breakeven_months),
    ):
        try:
            rows.append(_row(key, label, f, env))
        except InputError as exc:
            rows.append(Row(key, label, f"never ({exc.detail})", f.unit, f.udf_name))
    return rows + [
        _row("capex_usd", "Purchase price of the cluster", ownership.cluster_capex_usd, env),
        _row("facility_mw", "Facility power", ownership.facility_mw, env),
        _row("racks", f"Racks at {kw_per_rack:g} kW", ownership.racks_needed, env),
    ]


# --- goodput -----------------------------------------------------------------------------------------

def goodput_rows(n_gpus: int, gpu_mtbf_h: float, save_s: float, restart_s: float,
                 days: Optional[float] = None, compute_usd: Optional[float] = None) -> list[Row]:
    """Cluster MTBF, Young's checkpoint interval, goodput and what it costs in days and dollars."""
    env = dict(locals(), goodput=goodput.goodput_fraction(n_gpus, gpu_mtbf_h, save_s, restart_s))  # by name
    rows = [
        _row("cluster_mtbf_h", "Cluster MTBF", goodput.cluster_mtbf_h, env),
        _row("checkpoint_interval_h", "Checkpoint interval (Young)", goodput.checkpoint_interval_h, env),
        _row("goodput", "Goodput", goodput.goodput_fraction, env),
        _row("failure_frac", "Extra compute for failures and checkpoints", goodput.failure_frac_from_goodput, env),
    ]
    if days is not None:
        rows.append(_row("extra_days", f"Extra days on a {days:g}-day run", goodput.goodput_extra_days, env))
    if compute_usd is not None:
        rows.append(_row("extra_usd", "Extra dollars", goodput.goodput_extra_usd, env))
    return rows


# --- low / base / high ranges -------------------------------------------------------------------------

RANGE_LABELS = {"mfu": "MFU", "usd_per_gpu_hour": "Price per GPU-hour", "tokens_t": "Training tokens",
                "gpu_mtbf_h": "GPU MTBF (goodput)"}


@dataclass(frozen=True)
class RangeRow:
    factor: str
    label: str
    low: float
    base: float
    high: float
    days_low: float
    days_high: float
    cost_low: float
    cost_high: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _days_cost(sc: Scenario) -> tuple[float, float]:
    r = evaluate(sc)
    return r["Wall_Days"], r["Total_Cost_USD"]


def ranges(scenario: Scenario) -> list[RangeRow]:
    """Days (wall-clock, with failures) and total cost with one input at a time at its low and high value.

    The low and high values are the scenario's multipliers (``mfu_low_x`` ... ``mtbf_high_x``, see
    :data:`xlcalc.outputs.RANGES`) of its base values; rows are sorted by the swing in cost, largest
    first (a tornado). The last row, "all", moves every input at once to the end that costs less / more.
    """
    out: list[RangeRow] = []
    dear: dict[str, float] = {}
    cheap: dict[str, float] = {}
    for field, _name, low_x, high_x, f in RANGES:
        base = getattr(scenario, field)
        lo = f(base_value=base, range_factor=getattr(scenario, low_x))
        hi = f(base_value=base, range_factor=getattr(scenario, high_x))
        d_lo, c_lo = _days_cost(scenario.model_copy(update={field: lo}))
        d_hi, c_hi = _days_cost(scenario.model_copy(update={field: hi}))
        out.append(RangeRow(field, RANGE_LABELS.get(field, field), lo, base, hi, d_lo, d_hi, c_lo, c_hi))
        dear[field], cheap[field] = (lo, hi) if c_lo >= c_hi else (hi, lo)
    out.sort(key=lambda r: abs(r.cost_high - r.cost_low), reverse=True)
    d_dear, c_dear = _days_cost(scenario.model_copy(update=dear))
    d_cheap, c_cheap = _days_cost(scenario.model_copy(update=cheap))
    out.append(RangeRow("all", "All at once", float("nan"), float("nan"), float("nan"), d_cheap, d_dear,
                        c_cheap, c_dear))
    return out


__all__ = ["Row", "RangeRow", "BUDGET_PLAN_VALUES", "SEED001_TIERS", "seed001_tiers", "budget_plan",
           "budget_plan_table", "own_vs_rent", "goodput_rows", "ranges"]

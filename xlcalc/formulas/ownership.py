"""Own vs rent: rental bills, the all-in cost of owned GPUs, racks and megawatts, break-even.

Owning costs the same every hour whether the GPUs are busy or not (depreciation, hosting);
renting costs only the hours used. So owning is cheaper per *busy* hour once the hardware is
busy often enough: the break-even utilisation. The run-level cost of owned hardware here
charges the run for the idle hours of its hardware (depreciation and hosting / utilisation);
energy is paid only while the GPUs run.
"""

from __future__ import annotations

from ..errors import InputError
from ..expr.functions import ceiling, if_
from ..registry import REGISTRY, formula
from .cost import capex_cost_usd, power_cost_usd

HOURS_PER_YEAR = 8760
# What a spreadsheet cell shows when the rent does not cover the energy (Python raises InputError instead).
_NEVER = "never: the rent per GPU-hour does not cover the electricity (USD_per_GPU_Hour <= KW x PUE x USD/kWh)"
DAYS_PER_MONTH = 365 / 12


@formula(udf="RENT_COST_USD", unit="USD", category="cost",
         equation="GPUs * $/GPU-hour * days * 24",
         source="seed 001 §5.1 (cloud hours x hourly rate); issue 12")
def rent_cost_usd(n_gpus, usd_per_gpu_hour, days):
    """Rental bill for n GPUs over a number of days."""
    return n_gpus * usd_per_gpu_hour * days * 24


@formula(udf="CAPEX_PER_GPU_ALL_IN", unit="USD/GPU", category="cost",
         equation="capex per GPU + capex per server / GPUs per server",
         source="seed 001 §5.1 (card price; DGX A100 server $200,000 for 8 GPUs); seed 003 (H100 server $200-300k)")
def capex_usd_per_gpu_all_in(capex_usd_per_gpu, capex_usd_per_server, gpus_per_node):
    """Purchase price per GPU including its share of the server it sits in."""
    return capex_usd_per_gpu + capex_usd_per_server / gpus_per_node


@formula(udf="CLUSTER_CAPEX_USD", unit="USD", category="cost",
         equation="GPUs * capex per GPU", source="seed 001 §5.1 (hardware purchase cost)")
def cluster_capex_usd(n_gpus, capex_usd_per_gpu):
    """Purchase price of the whole cluster (what owning asks for up front)."""
    return n_gpus * capex_usd_per_gpu


@formula(udf="KW_PER_GPU_ALL_IN", unit="kW", category="cost",
         equation="kW per GPU + kW per server / GPUs per server",
         source="seed 003 (a GPU draws 300-700 W, plus the server around it)")
def kw_per_gpu_all_in(kw_per_gpu, kw_per_server, gpus_per_node):
    """IT power per GPU including its share of the server's own power."""
    return kw_per_gpu + kw_per_server / gpus_per_node


@formula(udf="FACILITY_MW", unit="MW", category="cost",
         equation="GPUs * kW per GPU * PUE / 1000",
         source="seed 003 (power and facilities); PUE = facility power / IT power")
def facility_mw(n_gpus, kw_per_gpu, pue):
    """Facility power the cluster draws from the grid, megawatts."""
    return n_gpus * kw_per_gpu * pue / 1000


@formula(udf="RACKS_NEEDED", unit="racks", category="cost",
         equation="CEILING(GPUs * kW per GPU / kW per rack)",
         source="seed 001 §7.2 (20-40 kW per rack)")
def racks_needed(n_gpus, kw_per_gpu, kw_per_rack):
    """Racks needed to power the cluster's IT load at a stated kW per rack."""
    return ceiling(n_gpus * kw_per_gpu / kw_per_rack)


@formula(udf="HOSTING_COST_USD", unit="USD", category="cost",
         equation="racks * $/rack-month * days / (365/12)",
         source="seed 003 (data centre: racks, cooling, UPS); issue 12 (hosting per rack)")
def hosting_cost_usd(n_gpus, kw_per_gpu, kw_per_rack, usd_per_rack_month, days):
    """Hosting (colocation, cooling, operations) of the racks over a number of days."""
    return racks_needed(n_gpus, kw_per_gpu, kw_per_rack) * usd_per_rack_month * days / DAYS_PER_MONTH


@formula(udf="OWN_COST_AT_UTILISATION_USD", unit="USD", category="cost",
         equation="depreciation over the run / utilisation + electricity",
         source="seed 001 §5.1; issue 12 (utilisation: idle hours are paid for too)")
def own_cost_at_utilisation_usd(n_gpus, capex_usd_per_gpu, depreciation_years, days, kw_per_gpu, pue,
                                usd_per_kwh, utilisation):
    """Cost of a run on owned GPUs that are busy only a share of their life (the run bears the idle hours)."""
    return (capex_cost_usd(n_gpus, capex_usd_per_gpu, depreciation_years, days) / utilisation
            + power_cost_usd(n_gpus, kw_per_gpu, pue, days, usd_per_kwh))


@formula(udf="OWN_TOTAL_COST_USD", question=True, unit="USD", category="cost",
         equation="(depreciation + hosting) over the run / utilisation + electricity",
         source="seed 001 §5.1, §7.2; seed 003 (hardware, power and facilities); issue 12")
def own_total_cost_usd(n_gpus, capex_usd_per_gpu, depreciation_years, days, kw_per_gpu, pue, usd_per_kwh,
                       utilisation, kw_per_rack, usd_per_rack_month):
    """All-in cost of a run on owned hardware: depreciation, hosting (both / utilisation) and energy."""
    return (own_cost_at_utilisation_usd(n_gpus, capex_usd_per_gpu, depreciation_years, days, kw_per_gpu, pue,
                                        usd_per_kwh, utilisation)
            + hosting_cost_usd(n_gpus, kw_per_gpu, kw_per_rack, usd_per_rack_month, days) / utilisation)


@formula(udf="ENERGY_USD_PER_GPU_HOUR", unit="USD/GPU-hour", category="cost",
         equation="kW per GPU * PUE * $/kWh", source="seed 001 §5.1 (electricity, priced per kWh)")
def energy_usd_per_gpu_hour(kw_per_gpu, pue, usd_per_kwh):
    """Electricity cost of one busy GPU-hour."""
    return kw_per_gpu * pue * usd_per_kwh


@formula(udf="OWN_USD_PER_GPU_HOUR", unit="USD/GPU-hour", category="cost",
         equation="capex / (years * 8760 * utilisation) + kW * PUE * $/kWh",
         source="seed 001 §5.1; issue 12")
def own_usd_per_gpu_hour(capex_usd_per_gpu, depreciation_years, kw_per_gpu, pue, usd_per_kwh, utilisation):
    """What one busy GPU-hour costs on owned hardware (the price to compare with a rental rate)."""
    return (capex_usd_per_gpu / (depreciation_years * HOURS_PER_YEAR * utilisation)
            + energy_usd_per_gpu_hour(kw_per_gpu, pue, usd_per_kwh))


def _rent_covers_energy(usd_per_gpu_hour, kw_per_gpu, pue, usd_per_kwh, **_):
    energy = kw_per_gpu * pue * usd_per_kwh
    if usd_per_gpu_hour <= energy:
        raise InputError(
            "usd_per_gpu_hour", usd_per_gpu_hour,
            f"more than the energy of one GPU-hour, kw_per_gpu x pue x usd_per_kwh = "
            f"{kw_per_gpu:g} x {pue:g} x {usd_per_kwh:g} = ${energy:.4g}",
            "the rent does not even cover the electricity, so owning never breaks even",
        )


@formula(udf="BREAKEVEN_UTILISATION", question=True, unit="fraction", category="cost",
         equation="capex / (years * 8760 * (rent $/GPU-hour - kW * PUE * $/kWh))",
         source="issue 12 (share of hours a GPU must be busy for owning to cost no more per busy hour than renting)",
         check=_rent_covers_energy)
def breakeven_utilisation(capex_usd_per_gpu, depreciation_years, kw_per_gpu, pue, usd_per_kwh, usd_per_gpu_hour):
    """Break-even utilisation: above it, a busy GPU-hour costs less owned than rented (> 1: never)."""
    margin = usd_per_gpu_hour - energy_usd_per_gpu_hour(kw_per_gpu, pue, usd_per_kwh)
    return if_(margin > 0, capex_usd_per_gpu / (depreciation_years * HOURS_PER_YEAR * margin), _NEVER)


@formula(udf="BREAKEVEN_MONTHS", unit="months", category="cost",
         equation="capex / ((rent $/GPU-hour - kW * PUE * $/kWh) * utilisation * 8760 / 12)",
         source="issue 12 (months of renting that cost as much as buying)",
         check=_rent_covers_energy)
def breakeven_months(capex_usd_per_gpu, kw_per_gpu, pue, usd_per_kwh, usd_per_gpu_hour, utilisation):
    """Months after which the rent saved by owning (net of electricity) has paid for the GPU."""
    margin = usd_per_gpu_hour - energy_usd_per_gpu_hour(kw_per_gpu, pue, usd_per_kwh)
    return if_(margin > 0, capex_usd_per_gpu / (margin * utilisation * HOURS_PER_YEAR / 12), _NEVER)


@formula(udf="RENT_OVER_MONTHS_USD", unit="USD", category="cost",
         equation="GPUs * $/GPU-hour * months * 8760/12 * utilisation",
         source="issue 12 (own vs rent over time: rent is paid for busy hours only)")
def rent_over_months_usd(n_gpus, usd_per_gpu_hour, months, utilisation):
    """Cumulative rent after some months for the busy hours of n GPUs."""
    return n_gpus * usd_per_gpu_hour * months * HOURS_PER_YEAR / 12 * utilisation


@formula(udf="OWN_OVER_MONTHS_USD", unit="USD", category="cost",
         equation="GPUs * capex + GPUs * kW * PUE * $/kWh * months * 8760/12 * utilisation "
                  "+ racks * $/rack-month * months",
         source="issue 12 (own vs rent over time: buy up front, then pay energy and hosting)")
def own_over_months_usd(n_gpus, capex_usd_per_gpu, kw_per_gpu, pue, usd_per_kwh, kw_per_rack, usd_per_rack_month,
                        months, utilisation):
    """Cumulative cash out after some months for owned GPUs: the purchase, then energy and hosting."""
    return (cluster_capex_usd(n_gpus, capex_usd_per_gpu)
            + n_gpus * energy_usd_per_gpu_hour(kw_per_gpu, pue, usd_per_kwh) * months * HOURS_PER_YEAR / 12 * utilisation
            + racks_needed(n_gpus, kw_per_gpu, kw_per_rack) * usd_per_rack_month * months)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

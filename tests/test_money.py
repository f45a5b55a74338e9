"""Money: own vs rent, goodput, budget-first plans, ranges and their bad-input messages.

Expected values come from the seeds (seed 001's CostCalculator example and budget tiers), the Llama 3
paper's interruption count, Young's formula written out by hand, and independent arithmetic. The same dollars in
the worksheet functions, the workbook and LibreOffice: tests/test_money_faces.py.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import xlcalc as x
from cli_run import run
from xlcalc import catalog, money
from xlcalc.cli.fmt import money as fmt_money
from xlcalc.cli.fmt import number
from xlcalc.errors import InputError
from xlcalc.scenario import Scenario, evaluate

ROOT = Path(__file__).resolve().parent.parent



# --- seed 001 §5.1: CostCalculator, 128 A100 for 30 days -------------------------------------------

def test_seed001_example_with_the_seeds_own_assumptions():
    # The seed's code: depreciation = 128 * 15000 / (3 * 365) per day, times 30 days; electricity =
    # 128 * 0.4 * 24 * 30 with no price (i.e. $1 per kWh); it prints the sum.
    depreciation = 128 * 15000 / (3 * 365) * 30          # 52,602.74
    kwh = 128 * 0.4 * 24 * 30                             # 36,864 kWh
    assert x.capex_cost_usd(128, 15000, 3, 30) == pytest.approx(depreciation)
    assert x.energy_mwh(128, 0.4, 1.0, 30) * 1000 == pytest.approx(kwh)
    seed_total = depreciation + kwh                       # the seed's printout: $89,467
    assert f"${x.own_cost_usd(128, 15000, 3, 30, 0.4, 1.0, 1.0):,.0f}" == "$89,467" == f"${seed_total:,.0f}"
    # Its cloud branch: $10 per A100-hour x 30 x 24 hours x 128 GPUs
    assert x.rent_cost_usd(128, 10, 30) == 10 * 30 * 24 * 128 == 921_600


def test_seed001_electricity_priced_per_kwh():
    # The same electricity at $0.08/kWh (PUE 1, as the seed) is 36,864 kWh x 0.08 = $2,949.12, not $36,864.
    assert x.power_cost_usd(128, 0.4, 1.0, 30, 0.08) == pytest.approx(36_864 * 0.08)
    rows = {r.key: r.value for r in money.own_vs_rent(128, 30, 10, 15000, 3, 0.4, 1.0, 0.08)}
    assert rows["own_usd"] == pytest.approx(128 * 15000 / (3 * 365) * 30 + 36_864 * 0.08)
    assert rows["rent_usd"] == 921_600


# the seed's rate and price typed (cost has no defaults of its own for them); the rest: cost's defaults
SEED001_FLAGS = ("--n-gpus", "128", "--kw-per-gpu", "0.4", "--pue", "1", "--usd-per-gpu-hour", "10",
                 "--capex-usd-per-gpu", "15000")


def test_cli_cost_reproduces_the_seed001_example(capsys):
    code, out, _ = run(capsys, "cost", *SEED001_FLAGS, "--json")
    assert code == 0
    data = json.loads(out)
    rows = {r["key"]: r["value"] for r in data["rows"]}
    assert rows["rent_usd"] == 921_600
    assert rows["depreciation_usd"] == pytest.approx(128 * 15000 / (3 * 365) * 30)
    assert rows["electricity_usd"] == pytest.approx(36_864 * 0.08)
    assert "typed" in data["price"] and "typed" in data["capex"]
    code, out, _ = run(capsys, "cost", *SEED001_FLAGS)
    assert code == 0 and "$921,600" in out and "BREAKEVEN_UTILISATION" in out


# --- own vs rent: break-even --------------------------------------------------------------------------

def test_breakeven_utilisation_and_months_by_hand():
    capex, years, kw, pue, kwh, price = 30000, 3, 1.0, 1.3, 0.08, 4.916
    energy = kw * pue * kwh                                 # $0.104 per GPU-hour
    u = capex / (years * 8760 * (price - energy))
    assert x.breakeven_utilisation(capex, years, kw, pue, kwh, price) == pytest.approx(u)
    # At that utilisation a busy owned GPU-hour costs exactly the rent
    assert x.own_usd_per_gpu_hour(capex, years, kw, pue, kwh, u) == pytest.approx(price)
    # Months of renting at 100% busy that add up to the purchase, net of electricity
    assert x.breakeven_months(capex, kw, pue, kwh, price, 1.0) == pytest.approx(capex / ((price - energy) * 730))


def test_breakeven_names_the_inputs_when_rent_does_not_cover_energy():
    with pytest.raises(InputError) as e:
        x.breakeven_utilisation(30000, 3, 1.0, 1.3, 0.08, 0.10)  # energy $0.104 > rent $0.10
    msg = str(e.value)
    assert e.value.name == "usd_per_gpu_hour"
    for name in ("kw_per_gpu", "pue", "usd_per_kwh"):
        assert name in msg
    # The worksheet face shows a readable message instead of a negative share
    assert "never" in x.breakeven_utilisation.excel()


def test_budget_lines_as_a_share_an_amount_or_both():
    # seed 003's categories: a line is compute x share + amount; the total is the sum of the lines
    sc = Scenario.build(gpu="h100", experiments_frac=0.2, experiments_usd=4e5, data_frac=0.05, data_usd=2e6,
                        people_usd=3e6, other_usd=1e5)
    r = evaluate(sc)
    c = r["Compute_Cost_USD"] + r["Power_Cost_USD"]
    assert r["Experiments_USD"] == pytest.approx(0.2 * c + 4e5)
    assert r["Data_Line_USD"] == pytest.approx(0.05 * c + 2e6)
    assert r["People_Line_USD"] == 3e6
    assert r["Total_Cost_USD"] == pytest.approx(c * (1 + r["Failure_Frac_Used"]) + 0.25 * c + 4e5 + 2e6 + 3e6 + 1e5)


def test_own_cost_at_utilisation_and_hosting():
    # Half-busy hardware charges the run twice the depreciation; hosting: CEILING(1024 x 1 kW / 40 kW) = 26 racks
    full = x.own_cost_at_utilisation_usd(1024, 30000, 3, 30, 1.0, 1.3, 0.08, 1.0)
    half = x.own_cost_at_utilisation_usd(1024, 30000, 3, 30, 1.0, 1.3, 0.08, 0.5)
    dep = 1024 * 30000 * 30 / (3 * 365)
    assert half - full == pytest.approx(dep)
    assert x.racks_needed(1024, 1.0, 40) == 26
    assert x.hosting_cost_usd(1024, 1.0, 40, 5000, 365) == pytest.approx(26 * 5000 * 12)
    assert x.facility_mw(1024, 1.0, 1.3) == pytest.approx(1.3312)
    assert x.capex_usd_per_gpu_all_in(15000, 200000, 8) == 40000  # seed 001: DGX A100 $200,000 for 8 GPUs


# --- goodput: Young/Daly ------------------------------------------------------------------------------

def test_checkpoint_interval_is_youngs_formula():
    # tau = SQRT(2 * delta * M), delta = 60 s, M = 50,000 h / 1,000 GPUs = 50 h -> SQRT(2 * (1/60) * 50) = 1.291 h
    assert x.checkpoint_interval_h(60, 1000, 50_000) == pytest.approx(math.sqrt(2 * (60 / 3600) * 50))
    assert x.cluster_mtbf_h(50_000, 1000) == 50


def test_goodput_equals_the_closed_form_and_youngs_interval_is_the_optimum():
    n, mtbf, save_s, restart_s = 2048, 40_000, 120, 900
    m, d, r = mtbf / n, save_s / 3600, restart_s / 3600
    closed = 1 - math.sqrt(2 * d / m) - r / m          # 1 - delta/tau - (tau/2 + R)/M at tau = SQRT(2 delta M)
    assert x.goodput_fraction(n, mtbf, save_s, restart_s) == pytest.approx(closed, rel=1e-12)
    # Scanning the interval: no tau does better than Young's (to first order the optimum)
    lost = lambda tau: d / tau + (tau / 2 + r) / m  # noqa: E731
    tau0 = math.sqrt(2 * d * m)
    assert all(lost(tau0) <= lost(tau0 * k) + 1e-15 for k in (0.5, 0.8, 0.95, 1.05, 1.25, 2))


def test_llama3_interruptions_as_a_goodput_estimate():
    # Llama 3 paper §3.3.4: 419 unexpected interruptions in 54 days on 16,384 GPUs ("one every three hours")
    mtbf = x.gpu_mtbf_observed_h(16384, 54, 419)
    assert mtbf == pytest.approx(16384 * 54 * 24 / 419)     # 50,677 GPU-hours per interruption
    assert x.cluster_mtbf_h(mtbf, 16384) == pytest.approx(54 * 24 / 419)  # 3.09 h
    # With 10 s saves and 5 min restarts the estimate agrees with the paper's ">90% effective training time"
    m = 54 * 24 / 419
    g = 1 - math.sqrt(2 * (10 / 3600) / m) - (300 / 3600) / m
    assert x.goodput_fraction(16384, mtbf, 10, 300) == pytest.approx(g) and g > 0.90
    # ... and 1-minute saves with 10-minute restarts would have cost 18.7% extra compute
    g2 = 1 - math.sqrt(2 * (60 / 3600) / m) - (600 / 3600) / m
    assert x.failure_frac_from_goodput(x.goodput_fraction(16384, mtbf, 60, 600)) == pytest.approx(1 / g2 - 1)
    assert x.goodput_extra_days(54, g2) == pytest.approx(54 * (1 / g2 - 1))


def test_goodput_at_or_below_zero_is_an_error_naming_the_input():
    with pytest.raises(InputError) as e:
        x.goodput_fraction(100_000, 50_000, 600, 3600)     # M = 0.5 h: a 10-minute save and a 1-hour restart
    assert e.value.name == "gpu_mtbf_h" and "cannot make progress" in str(e.value)
    # The minimum MTBF it states does give goodput >= 0
    need = float(str(e.value).split("more than ")[1].split(" hours")[0].replace(",", ""))
    assert x.goodput_fraction(100_000, need * 1.001, 600, 3600) > 0


def test_node_mtbf():
    assert x.gpu_mtbf_from_node_h(5000, 8) == 40_000


# --- budget-first planning ------------------------------------------------------------------------------

def test_budget_plan_values_by_hand():
    rows = {r.key: r.value for r in money.budget_plan(1e6, 2.0, 989, 0.4, 90, params_b=70)}
    hours = 1e6 / 2.0
    flops = hours * 3600 * 989e12 * 0.4
    n = math.sqrt(flops / (6 * 20))
    assert rows["gpus"] == math.floor(1e6 / (2.0 * 90 * 24)) == 231
    assert rows["gpu_hours"] == hours
    assert rows["params_b"] == pytest.approx(n / 1e9)
    assert rows["tokens_t"] == pytest.approx(20 * n / 1e12)
    assert rows["tokens_for_model_t"] == pytest.approx(flops / (6 * 70e9) / 1e12)
    assert tuple(money.BUDGET_PLAN_VALUES) == ("gpus", "gpu_hours", "params_b", "tokens_t")


def test_seed001_tiers_beside_the_derived_plans():
    # Seed 001 §5.2: $1M -> 64 A100, 6-9 months, 70B; $5M -> 256 A100 or 128 H100, 2-3 months, 100-200B;
    # $10M -> 512 H100, 1-2 months, 200-500B. Derived at the catalog rates, MFU 0.4, 20 tokens/parameter.
    tiers = money.seed001_tiers(0.4)
    assert [(t["budget_usd"], t["gpus"]) for t in tiers] == [(1e6, 64), (5e6, 256), (5e6, 128), (10e6, 512)]
    t1 = tiers[0]
    assert t1["usd_per_gpu_hour"] == pytest.approx(14.75 / 8, abs=5e-4)     # A100 capacity block
    months = 1e6 / (14.75 / 8) / 64 / 24 / (365 / 12)
    assert t1["days_on_seed_gpus"] / (365 / 12) == pytest.approx(months, rel=1e-3)  # 11.6 months, seed: 6-9
    assert t1["params_b"] == pytest.approx(math.sqrt(1e6 / 1.844 * 3600 * 312e12 * 0.4 / 120) / 1e9, rel=1e-9)
    t4 = tiers[3]
    assert t4["days_on_seed_gpus"] == pytest.approx(10e6 / 4.916 / 512 / 24)   # 5.4 months, seed: 1-2


def test_docs_money_table_is_up_to_date():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_money_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# --- ranges ---------------------------------------------------------------------------------------------

def test_ranges_move_cost_as_the_arithmetic_says():
    sc = Scenario.build(gpu="h100")
    base = evaluate(sc)["Total_Cost_USD"]
    rows = {r.factor: r for r in money.ranges(sc)}
    # Power is in the rental price (0 $/kWh), so cost is linear in price: x0.5 and x1.5
    assert rows["usd_per_gpu_hour"].cost_low == pytest.approx(base * 0.5)
    assert rows["usd_per_gpu_hour"].cost_high == pytest.approx(base * 1.5)
    # Days scale as 1/MFU and linearly with tokens
    base_days = evaluate(sc)["Wall_Days"]
    assert rows["mfu"].days_low == pytest.approx(base_days / 0.75)
    assert rows["tokens_t"].days_high == pytest.approx(base_days * 1.2)
    assert rows["all"].cost_low < min(r.cost_low for r in rows.values() if r.factor != "all")


# --- the price catalog and its tiers --------------------------------------------------------------------

def test_price_tiers_come_from_the_catalog_with_source_and_date():
    on_demand = catalog.rental_price("H100", "on-demand")
    assert on_demand.usd_per_gpu_hour == pytest.approx(98.32 / 8, abs=5e-3)   # price-aws-p5-ondemand-thirdparty
    assert on_demand.source and on_demand.date
    assert catalog.rental_price("H100").tier == "capacity-block"
    for p in catalog.prices():
        assert (p.usd_per_gpu_hour is None) == (p.tier is None)


# Per GPU-hour = the record's price / hours / GPUs of the machine (written out from published.json's fields)
GCP_TIERS = [
    ("h100-sxm", "reserved-1y", "price-gcp-a3-highgpu-8g-us-central1", "usd_per_month_1y", 730 * 8),
    ("h100-sxm", "reserved-3y", "price-gcp-a3-highgpu-8g-us-central1", "usd_per_month_3y", 730 * 8),
    ("h100-sxm", "spot", "price-gcp-a3-highgpu-8g-us-central1", "usd_per_instance_hour_spot", 8),
    ("a100-40gb", "on-demand", "price-gcp-a2-highgpu-1g-us-central1", "usd_per_instance_hour", 1),
    ("a100-40gb", "reserved-1y", "price-gcp-a2-highgpu-1g-us-central1", "usd_per_month_1y", 730),
    ("a100-40gb", "reserved-3y", "price-gcp-a2-highgpu-1g-us-central1", "usd_per_month_3y", 730),
    ("a100-40gb", "spot", "price-gcp-a2-highgpu-1g-us-central1", "usd_per_instance_hour_spot", 1),
    ("a100-80gb", "on-demand", "price-gcp-a2-ultragpu-1g-us-central1", "usd_per_instance_hour", 1),
    ("a100-80gb", "spot", "price-gcp-a2-ultragpu-1g-us-central1", "usd_per_instance_hour_spot", 1),
]


@pytest.mark.parametrize("gpu, tier, record, field, per", GCP_TIERS)
def test_tier_rates_are_the_published_prices_per_gpu_hour(gpu, tier, record, field, per):
    from conftest import published_records
    rec = published_records()[record]
    row = catalog.rental_price(gpu, tier)
    assert row.usd_per_gpu_hour == pytest.approx(rec["fields"][field] / per, abs=5e-4)
    assert record in row.source and row.date == "2025-03-06"
    assert rec["source"]["url"].startswith("https://") and str(rec["fields"][field]) in rec["source"]["quote"]


def test_a_gpu_with_tiers_but_no_default_rate_is_never_priced_silently(capsys):
    with pytest.raises(InputError) as e:
        catalog.rental_price("a100-80gb")
    assert e.value.name == "usd_per_gpu_hour" and '"on-demand", "spot"' in str(e.value)
    assert Scenario.build(gpu="a100-80gb", price_tier="spot").usd_per_gpu_hour == 2.027
    code, out, _ = run(capsys, "estimate", "--gpu", "a100-80gb", "--price-tier", "on-demand")
    assert code == 0 and "Price: $5.069/GPU-hour, on-demand tier, price catalog a100-80gb-gcp-on-demand" in out


def test_a_tier_without_a_price_names_the_gpu_and_the_tier(capsys):
    with pytest.raises(InputError) as e:
        catalog.rental_price("H200", "spot")
    assert "h200" in str(e.value) and "spot" in str(e.value)
    with pytest.raises(InputError):
        Scenario.build(gpu="h800", price_tier="reserved-3y")
    code, _, err = run(capsys, "estimate", "--gpu", "h200", "--price-tier", "spot")
    assert code == 2 and "spot" in err and "h200" in err and "Traceback" not in err


def test_estimate_states_its_price_and_gives_the_same_dollars_as_the_formulas(capsys):
    code, out, _ = run(capsys, "estimate", "--gpu", "h100", "--json")
    assert code == 0
    data = json.loads(out)
    assert "capacity-block" in data["price"] and "4.916" in data["price"]
    r, sc = data["results"], data["scenario"]
    assert r["Rent_Cost_USD"] == pytest.approx(x.rent_cost_usd(sc["n_gpus"], 4.916, r["Train_Days"]))
    assert r["Own_Cost_USD"] == pytest.approx(x.own_total_cost_usd(
        sc["n_gpus"], 30000, 3, r["Train_Days"], 1.0, 1.3, 0.08, 1.0, 40, 0))
    code, out, _ = run(capsys, "estimate", "--gpu", "h100")
    assert "Price: $4.916/GPU-hour, capacity-block tier" in out and "Rent beside own" in out


def test_plan_states_its_price(capsys):
    from xlcalc.price_text import price_line
    assert price_line("h100", None).startswith("Price: $4.916/GPU-hour, capacity-block tier")
    assert price_line("h100", 3.0) == "Price: $3.00/GPU-hour, typed (no tier)"
    assert "no rental rate for v100" in price_line("v100", None)
    # tiers but no default rate: the line names the tiers to pick from (never one picked silently)
    line = price_line("a100-80gb", None)
    assert "no default rental rate for a100-80gb" in line and "on-demand, spot" in line


# --- bad input: a message naming the input, in Python and the CLI ------------------------------------

@pytest.mark.parametrize("argv, name", [
    (("budget", "--budget-usd", "-1000000", "--gpu", "h100"), "budget_usd"),
    (("cost", "--utilisation", "1.2"), "utilisation"),
    (("cost", "--depreciation-years", "0"), "depreciation_years"),
    (("goodput", "--gpu-mtbf-h", "0"), "gpu_mtbf_h"),
    (("goodput", "--gpu-mtbf-h", "-5"), "gpu_mtbf_h"),
    (("cost", "--gpu", "h200", "--price-tier", "reserved-1y"), "price_tier"),
    (("estimate", "--utilisation", "1.5"), "utilisation"),
    (("estimate", "--gpu-mtbf-h", "0"), "gpu_mtbf_h"),
])
def test_cli_money_errors_name_the_input(capsys, argv, name):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"xlcalc {argv[0]}: error: ") and "Traceback" not in err
    assert f"error: {name} = " in err or f"  - {name} = " in err  # alone, or among every missing input at once


def test_cost_reports_a_missing_rental_rate_and_purchase_price_at_once(capsys):
    # prices.toml has neither a rental rate nor a purchase price for the B200: a tier asked for and owning both fail
    code, out, err = run(capsys, "cost", "--gpu", "b200", "--price-tier", "spot")
    assert code == 2 and out == ""
    assert "2 inputs are not allowed" in err
    assert "  - price_tier = 'spot'" in err and "  - capex_usd_per_gpu = (empty)" in err and "b200" in err


def test_a_typed_failure_share_is_used_or_refused_never_ignored(capsys):
    # estimate --failure-frac 0.1 printed goodput's 3.0% and priced failures with it, the typed 10% dropped
    code, out, err = run(capsys, "estimate", "--failure-frac", "0.1")
    assert code == 2 and out == "" and "error: failure_frac = 0.1 is not allowed" in err and "--use-typed-tax" in err
    code, out, err = run(capsys, "estimate", "--failure-frac", "0.1", "--use-typed-tax", "--json")
    assert code == 0, err
    results = json.loads(out)["results"]
    # the failures line is the typed share of the clean run's compute: 10% of it, by the definition of the share
    assert results["Failure_Frac_Used"] == pytest.approx(0.1)
    assert results["Failures_USD"] == pytest.approx(0.1 * results["Compute_Cost_USD"])
    with pytest.raises(InputError) as e:  # a scenario file's fields go the same way
        Scenario.build(failure_frac=0.2)
    assert e.value.name == "failure_frac"
    assert Scenario.build(failure_frac=0.2, use_typed_tax=False).failure_frac == 0.2  # said so: the workbook's way


@pytest.mark.parametrize("gpu", [None, "a800", "a100-80gb", "h100", "h800"])
def test_cost_and_estimate_price_a_gpu_hour_alike(capsys, gpu):
    # one rental rate per GPU for both: cost without --gpu took seed 001's $10 where estimate took the declared $2,
    # and cost --gpu a800 refused where estimate priced at $2. Expected: the catalog's default rate, else $2.
    expected = {None: 2.0, "a800": 2.0, "a100-80gb": 2.0, "h100": 4.916, "h800": 2.0}[gpu]
    flag = ("--gpu", gpu) if gpu else ()
    code, out, err = run(capsys, "cost", *flag, "--capex-usd-per-gpu", "20000", "--json")
    assert code == 0, err
    cost = json.loads(out)
    code, out, err = run(capsys, "estimate", *flag, "--capex-usd-per-gpu", "20000", "--json")
    assert code == 0, err
    estimate = json.loads(out)
    assert cost["inputs"]["usd_per_gpu_hour"] == estimate["scenario"]["usd_per_gpu_hour"] == expected
    assert cost["price"] == "Price: " + estimate["price"]
    # an example rate is stated as one, with what to give instead; h800's $2 is the DeepSeek-V3 report's, a tier
    assert ("example default" in cost["price"]) == (gpu not in ("h100", "h800"))


def test_a_typed_rate_equal_to_the_example_is_stated_as_typed(capsys):
    # estimate --usd-per-gpu-hour 2 said "example default (no GPU chosen; give --usd-per-gpu-hour)"
    for argv in (("estimate", "--usd-per-gpu-hour", "2"), ("estimate", "--gpu", "a800", "--usd-per-gpu-hour", "2.0"),
                 ("cost", "--usd-per-gpu-hour", "2", "--capex-usd-per-gpu", "15000")):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        assert "Price: $2.00/GPU-hour, typed (no tier)" in out and "example default" not in out, argv
    code, out, _ = run(capsys, "estimate")
    assert "Price: $2.00/GPU-hour, example default (no GPU chosen" in out


def test_budget_reports_every_missing_or_bad_input_at_once(capsys):
    # it stopped at the first: budget_usd, then (once given) usd_per_gpu_hour, then peak_tflops
    code, out, err = run(capsys, "budget")
    assert code == 2 and out == "" and "3 inputs are not allowed" in err
    for name in ("budget_usd", "usd_per_gpu_hour", "peak_tflops"):
        assert f"  - {name} = (empty)" in err
    code, _, err = run(capsys, "budget", "--budget-usd", "-5", "--gpu", "h100", "--mfu", "40", "--deadline-days", "0")
    assert code == 2 and "3 inputs are not allowed" in err
    # each named by the flag typed: --deadline-days is deadline_days (it was named "days", budget's hidden alias)
    for name in ("budget_usd = -5", "mfu = 40", "deadline_days = 0"):
        assert f"  - {name} is not allowed" in err


@pytest.mark.parametrize("extra", [("--price-tier", "spot"), ("--usd-per-gpu-hour", "3")])
def test_budget_own_refuses_a_rental_price_it_would_ignore(capsys, extra):
    # --own prices the GPU-hour as owned: a rental tier or rate given with it was silently dropped
    code, out, err = run(capsys, "budget", "--budget-usd", "5e6", "--gpu", "h100", "--own", *extra)
    name = extra[0][2:].replace("-", "_")
    assert code == 2 and out == "" and f"error: {name} = " in err and "left out with --own" in err


def test_budget_states_the_peak_it_assumed(capsys):
    # the model FLOPs are GPU-hours x 3,600 x peak x MFU; the GPU's peak was used and never printed
    code, out, _ = run(capsys, "budget", "--budget-usd", "1e6", "--gpu", "h100")
    assert code == 0 and out.splitlines()[0].endswith("h100-sxm at 989.4 TFLOP/s peak")  # the H100 SXM datasheet
    code, out, _ = run(capsys, "budget", "--budget-usd", "1e6", "--gpu", "h100", "--json")
    data = json.loads(out)
    assert data["inputs"]["peak_tflops"] == 989.4 and data["inputs"]["usd_per_gpu_hour"] == 4.916
    flops = next(r["value"] for r in data["rows"] if r["key"] == "flops")
    assert flops == pytest.approx(1e6 / 4.916 * 3600 * 989.4e12 * 0.4)


def test_budget_seed001_tiers_refuses_a_single_budgets_flag(capsys):
    code, out, err = run(capsys, "budget", "--seed001-tiers", "--budget-usd", "5e6", "--gpu", "h100")
    assert code == 2 and out == "" and "  - budget_usd = " in err and "  - gpu = " in err


def test_goodput_names_its_inputs_as_typed_and_all_at_once(capsys):
    # --ckpt-save-s was reported as "save_s" (the formula's parameter), and one error at a time
    code, out, err = run(capsys, "goodput", "--n-gpus", "0", "--ckpt-save-s", "0", "--restart-s", "-1")
    assert code == 2 and out == "" and "3 inputs are not allowed" in err
    for name in ("n_gpus = 0", "ckpt_save_s = 0", "restart_s = -1"):
        assert f"  - {name} is not allowed" in err


def test_goodput_at_or_below_zero_names_the_save_and_restart_in_every_faces_words(capsys):
    # it said "with save_s = 60 and restart_s = 600": the formula's parameters, no flag or cell of that name
    # (CLI --ckpt-save-s, cell Ckpt_Save_S). Smallest MTBF for 1,024 GPUs at 60 s and 600 s, by hand: solve
    # 1 - SQRT(2d/M) - R/M = 0 for the cluster MTBF M (d = 1/60 h, R = 1/6 h): SQRT(M) = (SQRT(2d) + SQRT(2d + 4R)) / 2
    d, r = 60 / 3600, 600 / 3600
    need = ((math.sqrt(2 * d) + math.sqrt(2 * d + 4 * r)) / 2) ** 2 * 1024
    for argv in (("goodput", "--gpu-mtbf-h", "100"), ("estimate", "--gpu-mtbf-h", "100")):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and "save_s =" not in err, err
        assert f"more than {need:,.0f} hours for 1,024 GPUs with 60 s checkpoint saves and 600 s restarts" in err


def test_goodput_gpus_per_node_without_a_node_mtbf_is_refused_not_ignored(capsys):
    code, out, err = run(capsys, "goodput", "--n-gpus", "1024", "--gpus-per-node", "4")
    assert code == 2 and out == "" and "error: gpus_per_node = " in err and "--node-mtbf-h" in err
    # with a node MTBF it converts: 5,000 h per node of 4 GPUs = 20,000 h per GPU, / 1,024 GPUs = 19.53 h
    code, out, err = run(capsys, "goodput", "--n-gpus", "1024", "--node-mtbf-h", "5000", "--gpus-per-node", "4",
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["gpu_mtbf_h"] == pytest.approx(20000)
    cluster = next(r["value"] for r in data["rows"] if r["key"] == "cluster_mtbf_h")
    assert cluster == pytest.approx(5000 * 4 / 1024)


@pytest.mark.parametrize("call, name", [
    (lambda: x.gpu_hours_for_budget(-1e6, 2), "budget_usd"),
    (lambda: x.own_cost_at_utilisation_usd(8, 30000, 3, 30, 1, 1.3, 0.08, 1.01), "utilisation"),
    (lambda: x.own_cost_usd(8, 30000, 0, 30, 1, 1.3, 0.08), "depreciation_years"),
    (lambda: x.cluster_mtbf_h(0, 8), "gpu_mtbf_h"),
    (lambda: x.checkpoint_interval_h(60, 8, -1), "gpu_mtbf_h"),
    (lambda: catalog.rental_price("h200", "on-demand"), "price_tier"),
])
def test_python_money_errors_name_the_input(call, name):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.name == name


# --- money as money -------------------------------------------------------------------------------------

def test_money_formatting():
    assert fmt_money(-48_966_413) == "-$48,966,413"
    assert fmt_money(48_966_413.4) == "$48,966,413"
    assert number(6.45032e6, "USD") == "$6,450,320"
    assert number(4.916, "USD/GPU-hour") == "$4.916"
    assert number(0.4, "USD/GPU-hour") == "$0.40"
    assert number(-0.0, "USD") == "$0"
    assert number(0.971, "fraction") == "97.1%"
    assert number(0.30000000000000004) == "0.3"
    assert number(1_869_658.12, "GPU-hours") == "1,869,658"


# --- owning priced from the chosen GPU: the catalog's purchase price, else an error (never a silent $15,000) --

def _catalog_capex() -> dict[str, float]:
    """Purchase prices straight from the price catalog file (not through the code under test)."""
    import tomllib
    rows = tomllib.loads((ROOT / "xlcalc" / "data" / "prices.toml").read_text())
    return {r["gpu"]: r["capex_usd_per_gpu"] for r in next(iter(rows.values())) if "capex_usd_per_gpu" in r}


def test_owning_is_priced_from_the_gpus_catalog_purchase_price(capsys):
    capex = _catalog_capex()
    assert capex["h100-sxm"] == 30000 and capex["a100-80gb"] == 15000
    for gpu in ("h100", "a100-80gb"):
        code, out, _ = run(capsys, "cost", "--gpu", gpu, "--usd-per-gpu-hour", "3", "--json")
        data = json.loads(out)
        gpu_id = catalog.get_gpu(gpu).id
        assert code == 0 and data["inputs"]["capex_usd_per_gpu"] == capex[gpu_id]
        assert "price catalog" in data["capex"] and f"${capex[gpu_id]:,.0f}" in data["capex"]
        assert Scenario.build(gpu=gpu).capex_usd_per_gpu == capex[gpu_id]
    # no GPU and no typed price: owning is not priced at a default (it was seed 001's $15,000), as estimate says
    code, out, err = run(capsys, "cost")
    assert code == 2 and out == "" and "capex_usd_per_gpu = (empty)" in err and "--capex-usd-per-gpu" in err


def test_a_gpu_without_a_purchase_price_is_never_priced_silently(capsys):
    assert "h800" not in _catalog_capex()
    sentence = str(catalog.missing_capex("h800"))
    for word in ("capex_usd_per_gpu", "--capex-usd-per-gpu", "Capex_USD_per_GPU", "h800"):
        assert word in sentence
    with pytest.raises(InputError) as e:
        catalog.capex_for("h800")
    assert e.value.name == "capex_usd_per_gpu"
    # the CLI faces that price owning say the same sentence
    for argv in (("cost", "--gpu", "h800"), ("budget", "--budget-usd", "1000000", "--gpu", "h800", "--own")):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and sentence in err and "Traceback" not in err
    # estimate: renting is priced, owning says what to type instead of a number
    sc = Scenario.build(gpu="h800")
    assert sc.capex_usd_per_gpu is None
    r = evaluate(sc)
    assert isinstance(r["Rent_Cost_USD"], float)
    assert r["Own_Cost_USD"] == r["Hardware_Capex_USD"] == sentence
    code, out, _ = run(capsys, "estimate", "--gpu", "h800")
    assert code == 0 and "Own: not priced - " + sentence in out and "$15,000" not in out
    # a typed price wins, stated as typed
    code, out, _ = run(capsys, "cost", "--gpu", "h800", "--capex-usd-per-gpu", "25000", "--json")
    assert code == 0 and json.loads(out)["inputs"]["capex_usd_per_gpu"] == 25000
    assert Scenario.build(gpu="h800", capex_usd_per_gpu=25000).capex_usd_per_gpu == 25000

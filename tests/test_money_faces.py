"""Money in every face: the worksheet functions, the workbook's Budget sheet and the CLI's JSON give the engine's
dollars, and the workbook recalculated by a real engine (LibreOffice) equals the engine and names bad money inputs
in sentences. The money formulas themselves: tests/test_money.py.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

import lo_batch
from cli_run import run
from named_edits import Edits
from xlcalc import catalog, money
from xlcalc.errors import InputError
from xlcalc.scenario import Scenario, evaluate

ROOT = Path(__file__).resolve().parent.parent



# --- the same dollars in every face ----------------------------------------------------------------------

def test_worksheet_functions_give_the_engines_dollars():
    pytest.importorskip("xlwings")
    import importlib
    if str(ROOT / "udfs") not in sys.path:
        sys.path.insert(0, str(ROOT / "udfs"))
    udfs = importlib.import_module("xlcalc_udfs")
    assert udfs.RENT_COST_USD(128, 10, 30) == 921_600
    assert udfs.OWN_COST_USD(128, 15000, 3, 30, 0.4, 1.0, 0.08) == pytest.approx(
        128 * 15000 / (3 * 365) * 30 + 36_864 * 0.08)
    assert udfs.CHECKPOINT_INTERVAL_H(60, 1000, 50_000) == pytest.approx(math.sqrt(2 * (60 / 3600) * 50))
    sc = Scenario.build(gpu="h100")
    r = evaluate(sc)
    assert udfs.RENT_COST_USD(sc.n_gpus, sc.usd_per_gpu_hour, r["Train_Days"]) == pytest.approx(r["Rent_Cost_USD"])


@pytest.mark.parametrize("gpu, tier", [("h100", None), ("h100", "spot"), ("a100-40gb", "reserved-3y"),
                                       ("a100-80gb", "on-demand")])
def test_worksheet_functions_price_a_tier_as_estimate_does_and_say_which(capsys, gpu, tier):
    """GPU_PRICE and GPU_PRICE_NOTE: the dollars and the words of `xlcalc estimate` at the same GPU and tier."""
    pytest.importorskip("xlwings")
    import importlib
    if str(ROOT / "udfs") not in sys.path:
        sys.path.insert(0, str(ROOT / "udfs"))
    udfs = importlib.import_module("xlcalc_udfs")
    code, out, _ = run(capsys, "estimate", "--gpu", gpu, *(("--price-tier", tier) if tier else ()), "--json")
    data = json.loads(out)
    price = udfs.GPU_PRICE(gpu, tier)
    assert price == data["scenario"]["usd_per_gpu_hour"] == catalog.rental_price(gpu, tier).usd_per_gpu_hour
    assert udfs.GPU_PRICE_NOTE(gpu, tier) == data["price"]
    r, n = data["results"], data["scenario"]["n_gpus"]
    assert udfs.RENT_COST_USD(n, price, r["Train_Days"]) == pytest.approx(r["Rent_Cost_USD"], rel=1e-12)
    assert udfs.CLOUD_COST_USD(r["GPU_Hours"], price) == pytest.approx(r["Compute_Cost_USD"], rel=1e-12)


def test_worksheet_price_of_a_tier_without_a_rate_names_gpu_and_tier():
    pytest.importorskip("xlwings")
    import importlib
    if str(ROOT / "udfs") not in sys.path:
        sys.path.insert(0, str(ROOT / "udfs"))
    udfs = importlib.import_module("xlcalc_udfs")
    with pytest.raises(InputError) as e:
        udfs.GPU_PRICE("h200", "spot")
    assert e.value.name == "price_tier" and "h200" in str(e.value) and "spot" in str(e.value)
    with pytest.raises(InputError) as e:
        udfs.GPU_PRICE("a100-80gb", None)
    assert e.value.name == "usd_per_gpu_hour" and "no default rental rate for a100-80gb" in str(e.value)


def test_workbook_budget_sheet_states_the_price_and_plots_every_line(tmp_path):
    from xlcalc.workbook import build
    lay = build(tmp_path / "plan.xlsx", [Scenario.build(gpu="h100")])
    assert lay.book.value("Budget", "D3").startswith(
        "$4.916/GPU-hour, capacity-block tier, price catalog h100-sxm-aws-capacity-block (")
    # The pie's rows (21-27, the seven lines under the "line" heading) are every line of the total
    assert lay.book.sheets["Budget"]["A20"].value == "line"
    lines = [lay.book.value("Budget", f"B{r}") for r in range(21, 28)]
    assert sum(lines) == pytest.approx(lay.book.value_of("Total_Cost_USD"), rel=1e-12)
    assert lay.book.value_of("Total_Cost_USD") == pytest.approx(evaluate(Scenario.build(gpu="h100"))["Total_Cost_USD"])


def test_cli_budget_and_goodput_json(capsys):
    code, out, _ = run(capsys, "budget", "--budget-usd", "1e6", "--usd-per-gpu-hour", "2", "--peak-tflops", "989",
                       "--days", "90", "--json")
    assert code == 0
    rows = {r["key"]: r["value"] for r in json.loads(out)["rows"]}
    assert rows["gpus"] == 231 and rows["gpu_hours"] == 500_000
    code, out, _ = run(capsys, "goodput", "--n-gpus", "16384", "--save-s", "10", "--restart-s", "300", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["gpu_mtbf_h"] == pytest.approx(16384 * 54 * 24 / 419)
    m = 54 * 24 / 419
    g = {r["key"]: r["value"] for r in data["rows"]}["goodput"]
    assert g == pytest.approx(1 - math.sqrt(2 * (10 / 3600) / m) - (300 / 3600) / m)
    code, out, _ = run(capsys, "budget", "--seed001-tiers", "--json")
    assert code == 0 and [t["gpus"] for t in json.loads(out)] == [64, 256, 128, 512]


# --- the workbook recalculated by a real engine (LibreOffice) --------------------------------------------

def _named(wb, name):
    (sheet, at), = wb.defined_names[name].destinations
    return wb[sheet][at.replace("$", "")]


# A money input out of its bounds (a value pasted past the cell's validation) and the sentence that names it
BAD_CELLS = [
    ("Budget_USD", -1e6, "Budget_USD = -1000000 is not allowed: Budget_USD must be a number > 0 and <= 1e+13"),
    ("Utilisation", 1.5, "Utilisation = 1.5 is not allowed: Utilisation must be a number >= 0.01 and <= 1"),
    ("Depreciation_Years", 0, "Depreciation_Years = 0 is not allowed: Depreciation_Years must be a number > 0 "
                              "and <= 100"),
    ("GPU_MTBF_H", 0, "GPU_MTBF_H = 0 is not allowed: GPU_MTBF_H must be a number > 0 and <= 1e+11"),
    ("GPU_MTBF_H", -5, "GPU_MTBF_H = -5 is not allowed: GPU_MTBF_H must be a number > 0 and <= 1e+11"),
]


@pytest.fixture(scope="module")
def h100_book():
    from xlcalc.workbook import layout
    return layout([Scenario.build(gpu="h100")]).book


@pytest.mark.parametrize("name, value, message", BAD_CELLS)
def test_workbook_names_a_money_input_out_of_bounds(h100_book, name, value, message):
    """The engine's evaluation of the cells (LibreOffice's below): the input check, the money check on Budget and
    each key result that depends on the input show the sentence; the rest stay numbers."""
    b = h100_book
    sheet, at = b.names[name]
    before = b.sheets[sheet][at].value
    b.sheets[sheet][at].value = value
    b._memo.clear()
    try:
        _check_bad_cell(b, name, message)
    finally:
        b.sheets[sheet][at].value = before
        b._memo.clear()


def _check_bad_cell(b, name, message):
    sheet, at = b.names[name]
    message = f"{sheet}!{at}: {message}"  # the master check and the money check name the cell
    assert b.value("Start", "C3") == b.value("Budget", "F1") == message
    start = {b.sheets["Start"][f"B{r}"].value: b.value("Start", f"C{r}") for r in range(4, 20) if f"B{r}" in b.sheets["Start"]}
    assert isinstance(start["Training days on those GPUs"], float)
    if name in ("Budget_USD",):
        assert start["Budget left (negative = over)"] == message
    if name == "GPU_MTBF_H":
        assert start["Total cost incl. training tax (USD)"] == message


def _money_typed() -> Scenario:
    """Own-vs-rent and goodput inputs a finance user might type."""
    return Scenario.build(gpu="h100", usd_per_gpu_hour=3.1, capex_usd_per_gpu=27_000, capex_usd_per_server=60_000,
                          depreciation_years=4, utilisation=0.65, kw_per_server=1.8, own_usd_per_kwh=0.11,
                          kw_per_rack=30, usd_per_rack_month=9_000, gpu_mtbf_h=30_000, ckpt_save_s=45,
                          restart_s=900, experiments_frac=0.2, experiments_usd=4e5, data_frac=0.05, data_usd=2e6,
                          people_frac=0.1, people_usd=3e6)


@lo_batch.register("money")
def _produce_money(work: Path) -> tuple[list[Path], list[str]]:
    """The typed plan, two that make results undefined and each bad cell, for the session's one LibreOffice run."""
    from xlcalc.scenario import INPUTS
    from xlcalc.workbook import build
    src = work / "in"
    src.mkdir()
    pristine = work / "plan.xlsx"
    build(pristine, [Scenario.build(gpu="h100")])
    typed = _money_typed()
    cases = {
        "typed": {c.name: getattr(typed, c.field) for c in INPUTS},  # every input typed through its name
        "no_progress": {"GPU_MTBF_H": 50},
        "rent_below_energy": {"USD_per_GPU_Hour": 0.05},
        **{f"bad{k}": {name: value} for k, (name, value, _) in enumerate(BAD_CELLS)},
        "no_tier_price": {"GPU_Type": "h200", "Price_Tier": "reserved-3y"},
    }
    book = Edits(pristine)
    paths = [book.save(src / f"{name}.xlsx", values) for name, values in cases.items()]
    return paths, list(cases)


def test_libreoffice_money_cells_equal_the_engine_and_bad_inputs_read_as_sentences():
    import openpyxl

    from xlcalc.outputs import OUTPUTS
    paths, names = lo_batch.results("money")
    out = dict(zip(names, paths))
    typed = _money_typed()

    wb = openpyxl.load_workbook(out["typed"], data_only=True)
    want = evaluate(typed)
    money_outputs = [o.name for o in OUTPUTS if o.formula.category in ("cost", "goodput", "budget", "ranges")]
    for name in money_outputs:
        assert _named(wb, name).value == pytest.approx(want[name], rel=1e-9), name
    # the Budget sheet's lines sum to its total, and every range row is a number
    budget = wb["Budget"]
    assert sum(budget[f"B{r}"].value for r in range(21, 28)) == pytest.approx(want["Total_Cost_USD"], rel=1e-9)
    rng = {r.factor: r for r in money.ranges(typed)}
    costs = [budget[f"D{r}"].value for r in range(1, budget.max_row + 1)
             if budget[f"A{r}"].value == "Price per GPU-hour (USD)" and isinstance(budget[f"D{r}"].value, float)]
    assert costs == [pytest.approx(rng["usd_per_gpu_hour"].cost_low, rel=1e-9)]

    # bad input written past the cells' validation: the input check (Start) and the money check (Budget) name it
    for k, (name, _value, message) in enumerate(BAD_CELLS):
        wb = openpyxl.load_workbook(out[f"bad{k}"], data_only=True)
        (sheet, at), = wb.defined_names[name].destinations
        message = f"{sheet}!{at.replace('$', '')}: {message}"  # the cell, then why
        assert wb["Start"]["C3"].value == message, (name, wb["Start"]["C3"].value)
        assert wb["Budget"]["F1"].value == message, name
    wb = openpyxl.load_workbook(out["no_tier_price"], data_only=True)
    message = "h200: no published reserved-3y price on the Prices sheet \u2014 type it in USD_per_GPU_Hour"
    assert _named(wb, "USD_per_GPU_Hour").value == wb["Start"]["C3"].value == message
    start = {wb["Start"][f"B{r}"].value: wb["Start"][f"C{r}"].value for r in range(4, 20)}
    assert start["Total cost incl. training tax (USD)"] == start["Compute: GPU-hours x price (USD)"] == message

    wb = openpyxl.load_workbook(out["no_progress"], data_only=True)
    assert str(_named(wb, "Goodput").value).startswith("no progress")
    wb = openpyxl.load_workbook(out["rent_below_energy"], data_only=True)
    assert str(_named(wb, "Breakeven_Utilisation").value).startswith("never")
    assert str(_named(wb, "Breakeven_Months").value).startswith("never")

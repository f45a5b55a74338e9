"""The Budget sheet's budget-first section (seed 001's question: what does $X and N days buy?) recalculated by
LibreOffice equals ``xlcalc budget``, rented and owned, for budgets, deadlines, GPUs, tiers and MFUs picked in the
cells as a user would (GPU_Type, Price_Tier: the look-ups fill Peak_TFLOPS, USD_per_GPU_Hour, Capex_USD_per_GPU).

The expected numbers are the CLI's own output (``xlcalc budget --json``, in this process), never the workbook's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lo_batch
from xlcalc.cli import main
from xlcalc.scenario import Scenario
from xlcalc.workbook import budget_sheet

# budget (USD), deadline (days), GPU id, price tier, MFU
VARIANTS = [
    (1e6, 30, "h100-sxm", "on-demand", 0.4),
    (5e6, 60, "h100-sxm", "capacity-block", 0.4),
    (1e7, 90, "h100-sxm", "reserved-3y", 0.35),
    (1.5e8, 365, "h100-sxm", "reserved-1y", 0.4),
    (1e6, 180, "a100-40gb", "capacity-block", 0.4),
    (5e6, 90, "a100-40gb", "reserved-1y", 0.5),
    (7.5e5, 7, "a100-40gb", "on-demand", 0.3),
    (3e5, 14, "a100-80gb", "spot", 0.4),
    (2e7, 120, "a100-80gb", "on-demand", 0.5),
    (8e6, 60, "h200", "capacity-block", 0.4),
]
# the CLI's row keys, in the order of the sheet's rows (budget_sheet.BUDGET_FIRST_ROWS)
KEYS = ("gpus", "gpu_hours", "flops", "params_b", "tokens_t")
HEADING = "Budget-first: what the approved budget buys by the deadline (xlcalc budget, BUDGET_PLAN)"


def _named(wb, name):
    (sheet, at), = wb.defined_names[name].destinations
    return wb[sheet][at.replace("$", "")]


def _section(ws) -> int:
    """The row of the budget-first heading on the Budget sheet."""
    rows = [r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == HEADING]
    assert len(rows) == 1
    return rows[0]


@lo_batch.register("budget_first")
def _produce(work: Path) -> tuple[list[Path], list[tuple]]:
    """One workbook per variant: the inputs typed into a fresh build through their defined names.

    The Parallelism, Scenarios and Sensitivity sheets hold their cached values instead of formulas here (the
    budget-first cells use none of their cells): LibreOffice then spends its time on the cells under test.
    """
    import openpyxl

    from xlcalc.workbook import build
    pristine = work / "plan.xlsx"
    build(pristine, [Scenario.build(gpu="h100")])
    cached = openpyxl.load_workbook(pristine, data_only=True)
    base = openpyxl.load_workbook(pristine)
    for title in ("Parallelism", "Scenarios", "Sensitivity"):
        for row in base[title].iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    cell.value = cached[title][cell.coordinate].value
    paths = []
    wb = base
    for k, (usd, days, gpu, tier, mfu) in enumerate(VARIANTS):  # one workbook in memory, saved once per variant
        for name, value in (("Budget_USD", usd), ("Deadline_Days", days), ("GPU_Type", gpu), ("Price_Tier", tier),
                            ("MFU", mfu)):
            _named(wb, name).value = value
        ws = wb["Budget"]
        top = _section(ws)
        assert all(str(ws[f"{c}{r}"].value).startswith("=") for c in "BC" for r in range(top + 3, top + 8))
        wb.save(work / f"v{k}.xlsx")
        paths.append(work / f"v{k}.xlsx")
    return paths, VARIANTS


def _cli(capsys, *argv) -> tuple[int, dict]:
    code = main(["budget", "--json", *argv])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else {"error": out.err})


def test_budget_first_rows_are_the_cli_rows():
    """The sheet's rows are the first rows of xlcalc budget (xlcalc.money.budget_plan), in its order."""
    from xlcalc import money
    plan = money.budget_plan(1e6, 2, 312, 0.4, 30)
    by = {r.key: r for r in plan}
    assert [by[k].udf for k in KEYS] == [f.udf_name for _, f, _ in budget_sheet.BUDGET_FIRST_ROWS]


def test_libreoffice_budget_first_cells_equal_xlcalc_budget(capsys):
    import openpyxl

    paths, variants = lo_batch.results("budget_first")
    assert len(paths) == len(variants) >= 10
    owned = 0  # variants whose GPU has a catalog purchase price
    for path, (usd, days, gpu, tier, mfu) in zip(paths, variants):
        wb = openpyxl.load_workbook(path, data_only=True)
        ws = wb["Budget"]
        top = _section(ws)
        common = ("--budget-usd", repr(usd), "--days", repr(days), "--gpu", gpu, "--mfu", repr(mfu))
        code, rent = _cli(capsys, *common, "--price-tier", tier)
        assert code == 0, rent
        want = {r["key"]: r["value"] for r in rent["rows"]}
        price = ws[f"B{top + 2}"].value
        assert price == pytest.approx(_named(wb, "USD_per_GPU_Hour").value) and tier in rent["price"]
        for key, r in zip(KEYS, range(top + 3, top + 8)):
            assert ws[f"B{r}"].value == pytest.approx(want[key], rel=1e-3), (gpu, tier, usd, days, key)
        # owned: the same budget at the owned GPU-hour (the catalog's purchase price, the sheet's owning inputs)
        own = ("--own", "--depreciation-years", str(_named(wb, "Depreciation_Years").value),
               "--utilisation", str(_named(wb, "Utilisation").value), "--kw-per-gpu", str(_named(wb, "KW_per_GPU").value),
               "--pue", str(_named(wb, "PUE").value), "--usd-per-kwh", str(_named(wb, "Own_USD_per_kWh").value))
        assert _named(wb, "Capex_USD_per_Server").value == 0 and _named(wb, "KW_per_Server").value == 0
        code, out = _cli(capsys, *common, *own)
        if code == 0:
            owned += 1
            want = {r["key"]: r["value"] for r in out["rows"]}
            for key, r in zip(KEYS, range(top + 3, top + 8)):
                assert ws[f"C{r}"].value == pytest.approx(want[key], rel=1e-3), (gpu, "own", usd, days, key)
        else:  # no purchase price in the catalog: the CLI refuses, the cells say what to type
            assert "no purchase price" in out["error"]
            for r in range(top + 2, top + 8):
                assert "no purchase price" in str(ws[f"C{r}"].value), (gpu, r)
    assert owned >= 5


@pytest.mark.parametrize("name, value, message, rows", [
    ("Budget_USD", -5, "Budget_USD = -5 is not allowed: Budget_USD must be a number > 0 and <= 1e+13", KEYS),
    ("MFU", 40, "MFU = 40 is not allowed: MFU must be a number > 0 and <= 1", ("flops", "params_b", "tokens_t")),
    ("Deadline_Days", -1, "Deadline_Days = -1 is not allowed", ("gpus",)),
])
def test_a_bad_input_points_the_budget_first_cells_that_use_it_to_its_message(name, value, message, rows):
    """The engine's evaluation of the workbook's own formulas (LibreOffice's above): the input checks guard the cells,
    which show the way to Start's input check (the message, whole); a cell that does not use the input stays a
    number."""
    from xlcalc.workbook import layout
    b = layout([Scenario.build(gpu="h100")]).book
    top = next(int(at[1:]) for at, c in b.sheets["Budget"].items() if at[0] == "A" and c.value == HEADING)
    assert all(isinstance(b.value("Budget", f"{c}{r}"), float) for c in "BC" for r in range(top + 2, top + 8))
    sheet, at = b.names[name]
    b.sheets[sheet][at].value = value
    b._memo.clear()
    assert b.value("Start", "C3").startswith(f"{sheet}!{at}: {message}")
    for c in "BC":
        for key, r in zip(KEYS, range(top + 3, top + 8)):
            shown = b.value("Budget", f"{c}{r}")
            if key in rows:  # the way to Start's input check, which shows the message whole
                assert shown == "see Start!C3", (c, key, shown)
            else:
                assert isinstance(shown, float), (c, key, shown)


def test_no_purchase_price_says_what_to_type_in_the_own_column():
    """The A800 has no catalog purchase price: rent is a number, own says what to type (as --own refuses)."""
    from xlcalc.workbook import layout
    b = layout([Scenario.build(gpu="a800")]).book
    top = next(int(at[1:]) for at, c in b.sheets["Budget"].items() if at[0] == "A" and c.value == HEADING)
    for r in range(top + 2, top + 8):
        assert isinstance(b.value("Budget", f"B{r}"), float)
        assert "no purchase price for a800" in b.value("Budget", f"C{r}")


def test_a_tier_without_a_price_points_the_rent_column_to_its_message():
    from xlcalc.workbook import layout
    b = layout([Scenario.build(gpu="h100")]).book
    top = next(int(at[1:]) for at, c in b.sheets["Budget"].items() if at[0] == "A" and c.value == HEADING)
    for name, value in (("GPU_Type", "h200"), ("Price_Tier", "reserved-3y")):
        sheet, at = b.names[name]
        b.sheets[sheet][at].value = value
    b._memo.clear()
    message = "h200: no published reserved-3y price on the Prices sheet \u2014 type it in USD_per_GPU_Hour"
    assert b.value("Start", "C3") == message  # the master check; the cells show the way to it
    assert all(b.value("Budget", f"B{r}") == "see Start!C3" for r in range(top + 2, top + 8))

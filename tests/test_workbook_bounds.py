"""Contradictions in the workbook: a result past its formula's bound (Formula.at_most) and an inverted range show a
message, never a number: a result past its bound holds a short one (the result and its bound) in its cell, every cell
computed from it the way to Start's input check, which names the inputs whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lo_batch
from xlcalc.outputs import BOUNDED_OUTPUTS, OUTPUT_BY_NAME, bound_message, bound_short, output_excel
from xlcalc.scenario import Scenario
from xlcalc.workbook import layout
from xlcalc.workbook.model import Book

TINY_MFU = 1e-300  # within the MFU cell's own range (> 0), but 6ND / (peak x GPUs x MFU) is ~1e302 days

# Independently: 6 * 70e9 * 2e12 / (312e12 * 1024 * 1e-300) / 86400 days and / 3600 GPU-hours (seed 002's plan on
# A800, the default workbook), far past 1e8 days and 1e8 days x 24 h x 1e7 GPUs.
DAYS_AT_TINY_MFU = 6 * 70e9 * 2e12 / (312e12 * 1024 * TINY_MFU) / 86400
HOURS_AT_TINY_MFU = 6 * 70e9 * 2e12 / (312e12 * TINY_MFU) / 3600

DAYS_MESSAGE = ("Train_Days would be over 100,000,000 days, its bound: the inputs contradict each other \u2014 "
                "check Active_Params_B, Params_B, Tokens_T, Trainable_Params_B, Peak_TFLOPS, N_GPUs, MFU, Job")
HOURS_MESSAGE = ("GPU_Hours would be over 2.4e+16 GPU-hours, its bound: the inputs contradict each other \u2014 "
                 "check Active_Params_B, Params_B, Tokens_T, Trainable_Params_B, Peak_TFLOPS, MFU, Job")
# what the result's own cell holds (narrow cells print it whole: at most 34 characters)
DAYS_SHORT = "Train_Days over 100,000,000"
HOURS_SHORT = "GPU_Hours over 2.4e+16"
POINTER = "see Start!C3"
INVERTED_MESSAGE = ("MFU_Low_X = 1.5 is not allowed: MFU_Low_X must be at most MFU_High_X = 1.1 (a range's low end "
                    "multiplier may not exceed its high end's: swap them)")


def test_the_independent_figures_are_past_the_bounds():
    assert DAYS_AT_TINY_MFU > 1e8 and HOURS_AT_TINY_MFU > 1e8 * 24 * 1e7


def test_bounded_results_are_the_formulas_with_an_upper_bound():
    assert set(BOUNDED_OUTPUTS) == {"Train_Days", "GPU_Hours", "GPUs_for_Deadline"}
    assert bound_message(OUTPUT_BY_NAME["Train_Days"]) == DAYS_MESSAGE
    assert bound_message(OUTPUT_BY_NAME["GPU_Hours"]) == HOURS_MESSAGE
    assert all(len(bound_message(OUTPUT_BY_NAME[n])) <= 255 for n in BOUNDED_OUTPUTS)  # an Excel string constant
    assert bound_short(OUTPUT_BY_NAME["Train_Days"]) == DAYS_SHORT
    assert bound_short(OUTPUT_BY_NAME["GPU_Hours"]) == HOURS_SHORT
    assert bound_short(OUTPUT_BY_NAME["GPUs_for_Deadline"]) == "GPUs_for_Deadline over 10,000,000"


def test_the_formula_text_of_a_bounded_result_holds_its_guard():
    # IFERROR: a result past the largest number a spreadsheet holds (#NUM!) is past the bound too
    days = output_excel(OUTPUT_BY_NAME["Train_Days"])
    body = "Train_FLOPs/(Peak_TFLOPS*1E+12*N_GPUs*MFU)/86400"
    assert days == f'=IF(IFERROR({body}>1E+8,TRUE),"{DAYS_SHORT}",{body})'
    assert f'/3600>2.4E+16,TRUE),"{HOURS_SHORT}",' in output_excel(OUTPUT_BY_NAME["GPU_Hours"])
    assert ">1E+7,TRUE)," in output_excel(OUTPUT_BY_NAME["GPUs_for_Deadline"])


@pytest.fixture(scope="module")
def book() -> Book:
    return layout([Scenario()]).book


def _cell(book: Book, name: str) -> str:
    sheet, at = book.names[name]
    return book.cell(sheet, at).value.to_excel(lambda v: v, book.cell(sheet, at).subs)


def test_every_cell_computed_from_a_bounded_result_checks_it(book):
    assert f'"{DAYS_SHORT}"' in _cell(book, "Train_Days")
    # inside the bound's guard, the input checks of the cell (Checks sheet): IF(<checks>="OK", <result>, the way to
    # Start's input check, which shows a failing check's message whole); past the bound, the way there too
    assert re.search(r'IF\(ISNUMBER\(GPU_Hours\),IF\(Checks!\$C\$\d+="OK",GPU_Hours\*USD_per_GPU_Hour,"see Start!C3"\),'
                     r'"see Start!C3"\)',
                     _cell(book, "Compute_Cost_USD"))
    assert "ISNUMBER(Train_Days)" in _cell(book, "Power_Cost_USD")
    total = _cell(book, "Total_Cost_USD")
    assert "ISNUMBER(Train_Days)" in total and "ISNUMBER(GPU_Hours)" in total
    assert "ISNUMBER(GPUs_for_Deadline)" in _cell(book, "GPUs_to_Provision")
    # results that do not depend on a bounded one are as they were
    assert "ISNUMBER(Train_Days)" not in _cell(book, "Train_FLOPs")
    assert "ISNUMBER(" not in _cell(book, "Goodput").replace("ISNUMBER(Peak_TFLOPS)", "")


def _typed(book: Book, values: dict[str, float]) -> Book:
    for name, value in values.items():
        sheet, at = book.names[name]
        book.cell(sheet, at).value = value
    book._memo.clear()
    return book


def test_the_engine_values_of_the_workbook_show_the_messages():
    b = _typed(layout([Scenario()]).book, {"MFU": TINY_MFU, "MFU_Low_X": 1.5, "MFU_High_X": 1.1})
    assert b.value_of("Train_Days") == DAYS_SHORT
    assert b.value_of("GPU_Hours") == HOURS_SHORT
    for name in ("Compute_Cost_USD", "Power_Cost_USD", "Wall_Days", "Rent_Cost_USD", "Total_Cost_USD",
                 "Budget_Left_USD", "USD_per_M_Tokens"):  # computed from them: the way to Start's input check
        assert b.value_of(name) == POINTER, name
    assert b.value("Start", "C3") == INVERTED_MESSAGE  # the input check names contradicting inputs first
    row = _range_row(b, "MFU")
    for col in "BCDEFGHI":
        assert b.value("Budget", f"{col}{row}") == INVERTED_MESSAGE, col


def test_a_result_past_its_bound_is_named_in_the_input_check():
    b = _typed(layout([Scenario()]).book, {"MFU": TINY_MFU})
    assert b.value("Start", "C3") == DAYS_MESSAGE
    # Start's key results that hold the short message or the way to the input check show the whole message there
    shown = {b.value("Start", f"B{r}"): b.value("Start", f"C{r}") for r in range(6, 18)}
    for label in ("Training days on those GPUs", "GPU-hours", "Total cost incl. training tax (USD)",
                  "Budget left (negative = over)"):
        assert shown[label] == DAYS_MESSAGE, label
    assert shown["GPUs in the plan"] == 1024
    assert isinstance(b.value("Budget", f"B{_range_row(b, 'MFU')}"), float)


def test_a_result_written_out_over_other_cells_past_its_bound_shows_its_short_message():
    # a Sensitivity grid point with MFU 1e-300 (the plan untouched): its days, its total cost (from those days) and its
    # spend show the days' short message; the other points stay numbers
    b = layout([Scenario()]).book
    grid = b.sheets["Sensitivity"]
    head = next(int(at[1:]) for at, c in grid.items() if at.startswith("A") and c.value == "GPUs \\ MFU")
    _typed(b, {})
    grid[f"B{head}"].value = TINY_MFU
    b._memo.clear()
    rows = [int(at[1:]) for at, c in grid.items() if at.startswith("A") and c.value == "GPUs \\ MFU"]
    assert len(rows) == 3  # days, cost, spend
    for top in rows:
        assert b.value("Sensitivity", f"B{top + 1}") == DAYS_SHORT, top
        assert isinstance(b.value("Sensitivity", f"C{top + 1}"), float), top
    # the plan at MFU 1e-300: the Ranges rows of MFU and tokens write the days out at each end (their own message);
    # the price row reads the plan's days (the way to Start's input check)
    b = _typed(layout([Scenario()]).book, {"MFU": TINY_MFU})
    for label in ("MFU", "Training tokens"):
        row = _range_row(b, label)
        for col in "DEHI":  # cost and days at both ends
            assert b.value("Budget", f"{col}{row}") == DAYS_SHORT, (label, col)
    assert b.value("Budget", f"D{_range_row(b, 'Price')}") == POINTER


def test_an_inverted_range_alone_is_named_in_the_input_check():
    b = _typed(layout([Scenario()]).book, {"MFU_Low_X": 1.5, "MFU_High_X": 1.1})
    assert b.value("Start", "C3") == INVERTED_MESSAGE
    assert isinstance(b.value_of("Train_Days"), float)
    price_row = _range_row(b, "Price")
    assert all(isinstance(b.value("Budget", f"{col}{price_row}"), float) for col in "BCDE")


def _range_row(book: Book, label_start: str) -> int:
    """The Ranges row of an input (the one row of the Budget sheet with a label and a "days at high" cell)."""
    cells = book.sheets["Budget"]
    found = [int(at[1:]) for at, c in cells.items() if at.startswith("A") and isinstance(c.value, str)
             and c.value.startswith(label_start) and f"I{at[1:]}" in cells]
    assert len(found) == 1, found
    return found[0]


def _named(wb, name):
    (sheet, at), = wb.defined_names[name].destinations
    return wb[sheet][at.replace("$", "")]


@lo_batch.register("workbook_bounds")
def _produce_bounds(work: Path) -> tuple[list[Path], list[str]]:
    """The default workbook with MFU 1e-300 and an inverted MFU range typed through the defined names."""
    import openpyxl

    from xlcalc.workbook import build
    pristine = work / "plan.xlsx"
    build(pristine, [Scenario()])
    wb = openpyxl.load_workbook(pristine)
    for name, value in {"MFU": TINY_MFU, "MFU_Low_X": 1.5, "MFU_High_X": 1.1}.items():
        _named(wb, name).value = value
    wb.save(work / "contradicting.xlsx")
    return [work / "contradicting.xlsx"], ["contradicting"]


def test_libreoffice_shows_the_messages_not_numbers():
    import openpyxl

    paths, _ = lo_batch.results("workbook_bounds")
    wb = openpyxl.load_workbook(paths[0], data_only=True)
    assert _named(wb, "Train_Days").value == DAYS_SHORT
    assert _named(wb, "GPU_Hours").value == HOURS_SHORT
    for name in ("Compute_Cost_USD", "Power_Cost_USD", "Wall_Days", "Total_Cost_USD", "Budget_Left_USD"):
        assert _named(wb, name).value == POINTER, name
    assert wb["Start"]["C3"].value == INVERTED_MESSAGE
    budget = wb["Budget"]
    rows = [r for r in range(1, budget.max_row + 1)
            if str(budget[f"A{r}"].value or "").startswith("MFU") and budget[f"I{r}"].value is not None]
    assert rows
    for col in "BCDEFGHI":
        assert budget[f"{col}{rows[-1]}"].value == INVERTED_MESSAGE, col

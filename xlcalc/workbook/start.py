"""The Start sheet: the master input check and the key results, page 1 of a print-out."""

from __future__ import annotations

from typing import Any

from ..expr import Var, and_, eq, if_
from ..inputs import spec
from ..outputs import BOUNDED_OUTPUTS, OUTPUT_BY_NAME, RANGES, bound_message, bound_short
from ..scenario import INPUT_BY_NAME
from . import checks
from .budget_sheet import range_inverted, range_message
from .messages import CHECK_POINTER, INPUT_CHECK_CELL, LAYOUT_POINTER, message_cell
from .model import IfError, IsNumber, ref_text
from .rendering import dependencies, display_format, guarded
from .sheets import Ctx, longest_message, longest_price_message, plan_title, price_used

ALL_CLEAR = "OK: every key result is computed"  # the master check when every check passes
KEY_CHECK = ("Train_Days", "GPUs_to_Provision", "Total_Cost_USD")


def input_check() -> Any:
    """The master check: the first input whose check fails (its cell and why, or a looked-up input's message), the
    layout check with the cell it blames, an inverted range, a result past its bound, else OK or a hint."""
    ok: Any = if_(and_(*(IsNumber(Var(n)) for n in KEY_CHECK)), ALL_CLEAR,
                  "A result cannot be computed: check the yellow cells on the Inputs sheet (a number is missing)")
    for name in reversed(BOUNDED_OUTPUTS):  # a result past its bound: its message, naming the inputs (its cell holds
        out = OUTPUT_BY_NAME[name]           # the short one); another text: that text
        ok = if_(IsNumber(Var(name)), ok, if_(_is_short(name), bound_message(out), IfError(Var(name), ok)))
    for _field, _name, low_x, high_x, _f in reversed(RANGES):  # an inverted range: the scenario's own message
        ok = if_(range_inverted(low_x, high_x), range_message(low_x, high_x), ok)
    return checks.master(ok)  # every input's check (Checks sheet), then the layout, then the above


def _is_short(name: str) -> Any:
    """The bounded result ``name``'s cell holds its message past its bound (outputs.bound_short)."""
    return IfError(eq(Var(name), bound_short(OUTPUT_BY_NAME[name])), False)


def key_result(name: str, check: str) -> Any:
    """A result as the summary shows it: the number, or the message of a looked-up input it needs.

    A result waits for each looked-up input it depends on to be a number (a catalog gap holds a message, and a
    comparison with text would give a silently wrong TRUE/FALSE), then shows its value, or the input check's message in
    place of an error value.
    """
    if name not in OUTPUT_BY_NAME:  # an input: its value, or its check's message
        return guarded(Var(name), {name})
    deps = dependencies(name)
    expr: Any = IfError(Var(name), Var(check))  # the named result shows a failing input's message itself
    # the message its cell points to, whole
    expr = if_(IfError(eq(Var(name), CHECK_POINTER), False), Var(check), expr)
    if name in BOUNDED_OUTPUTS:  # past its bound: the input check names the inputs
        expr = if_(_is_short(name), Var(check), expr)
    if OUTPUT_BY_NAME[name].guarded:  # a memory result
        expr = if_(IfError(eq(Var(name), LAYOUT_POINTER), False), Var("Layout_Check"), expr)
    for dep in reversed([n for n in checks.CATALOG_LOOKED_UP if n in deps]):
        expr = if_(IsNumber(Var(dep)), expr, Var(dep))
    return expr


# (defined name, label on the Start sheet); GPUs, days and cost first: page 1 of a print-out
KEY_RESULTS = (
    ("N_GPUs", "GPUs in the plan"),
    ("Train_Days", "Training days on those GPUs"),
    ("Total_Cost_USD", "Total cost incl. training tax (USD)"),
    ("Compute_Cost_USD", "Compute: GPU-hours x price (USD)"),
    ("USD_per_GPU_Hour", "Price assumed per GPU-hour (USD)"),
    ("GPU_Hours", "GPU-hours"),
    ("GPUs_to_Provision", "GPUs to provision for the deadline"),
    ("Deadline_Days", "Deadline (days)"),
    ("Mem_Total_GB", "Memory per GPU (GB)"),
    ("Fits_GPU", "Fits in one GPU?"),
    ("Budget_Left_USD", "Budget left (negative = over)"),
    ("Train_FLOPs", "Training FLOPs (6ND)"),
)


def _format_of(name: str) -> str | None:
    if name in OUTPUT_BY_NAME:
        return display_format(OUTPUT_BY_NAME[name])
    s = spec(INPUT_BY_NAME[name].spec_name)
    return s.number_format if s.number_format != "General" else ("#,##0" if s.kind == "int" else None)


# Excel recalculates a workbook on open; LibreOffice, by default, shows the values saved in the file (the menu path
# and option names of LibreOffice's help, Formula options: "Recalculation on File Load")
RECALC_HINT = ("Excel recalculates on open. LibreOffice shows the values saved in the file unless Tools > Options > "
               "LibreOffice Calc > Formula > Recalculation on File Load > Excel 2007 and newer is set to "
               "Always recalculate.")


def start_sheet(ctx: Ctx) -> int:
    """The one-page summary; returns its last row (the print area)."""
    s, b = "Start", ctx.book
    b.put(s, "B1", "LLM training plan \u2014 GPUs, days, cost", "title")
    b.put(s, "B2", "Plan")
    b.put(s, "C2", plan_title(ctx), "formula")
    b.put(s, "B3", "Input check")
    assert INPUT_CHECK_CELL == f"{s}!C3"  # the cell the memory cells point to for a failing input
    b.put(s, "C3", input_check(), "formula")
    b.rules.append((s, "C3", f'bad_unless:"{ALL_CLEAR}"'))  # red with the cell and the reason
    for r in (2, 3):  # the plan in words; the first failing input's message
        message_cell(b, s, r, "C", "D", longest_message())
    check = ref_text(s, "C3")
    b.put(s, "B5", "Key results", "group")
    for row, (name, label) in enumerate(KEY_RESULTS, start=6):
        b.put(s, f"B{row}", label)
        b.put(s, f"C{row}", key_result(name, check), "formula", _format_of(name))
        if name == "USD_per_GPU_Hour":  # the price and tier the costs above used, beside the price
            b.put(s, f"D{row}", price_used(ctx), "formula")
            message_cell(b, s, row, "C", "C", longest_price_message())
            message_cell(b, s, row, "D", "D", longest_message())
        else:  # a failing input's message wraps across C:D, never past the page's edge
            message_cell(b, s, row, "C", "D", longest_message())
    row += 2
    lines = (
        ("What this is", "A live planning workbook from xlcalc. Every number is a formula over named inputs, "
                         "written from the same formula definitions as the xlcalc Python library."),
        ("How to use it", "1. Pick a model preset, GPU type and precision recipe on Inputs, and change the yellow "
                          "cells (GPU count, MFU, parallelism, prices). 2. Read Memory, Time and Budget. "
                          "3. Compare GPUs on Scenarios, explore GPU count x MFU on Sensitivity and parallel "
                          "layouts on Parallelism. 4. Finance edits the Budget lines."),
        ("Presets", "A preset fills its cells by look-up (yellow cells holding a formula). A number typed over "
                    "such a cell wins over the preset; where a catalog has no figure the cell says so and asks "
                    "for a number."),
        ("Sources", "GPUs and Models sheets list the catalog with sources; References lists every formula, "
                    "its equation and source."),
        ("Protection", "Formula cells are protected (no password: Review > Unprotect Sheet to change a formula)."),
        ("Contents", "Sheets, in print order: " + ", ".join(b.sheets) + "."),
        ("Recalculation", RECALC_HINT),
    )
    for head, text in lines:
        b.put(s, f"B{row}", head, "group")
        b.put(s, f"C{row}", text, "text")
        b.merges.append((s, f"C{row}:D{row}"))
        row += 1
    row += 1
    b.put(s, f"B{row}", "Colour legend", "group")
    for k, (text, kind) in enumerate((("Input: type here", "input"), ("Formula: computed, do not type", "formula"),
                                      ("Named result (a defined name scripts can read)", "output"))):
        b.put(s, f"C{row + k}", text, kind)
        b.merges.append((s, f"C{row + k}:D{row + k}"))
    b.print_areas[s] = f"A1:D{row + 2}"
    return row + 2

"""The Budget sheet: the cost lines, own vs rent, the ranges (tornado) and budget-first."""

from __future__ import annotations

from typing import Any

from ..expr import Func, Var, if_
from ..formulas import budget, cost, ownership, ranges
from ..inputs import spec
from ..outputs import OUTPUT_BY_NAME, RANGES
from ..scenario import INPUT_BY_FIELD
from . import charts, checks
from .messages import message_cell
from .model import Book, Concat, IsNumber, NotAvailable, ref_text
from .rendering import checked, dependencies, guarded, guarded_output, needs, output_formula, pointed
from .sheets import (
    PURCHASE_PRICE_USED,
    Ctx,
    capex_used,
    formula_row,
    input_row,
    longest_message,
    longest_message_in,
    output_row,
    output_rows,
    price_used,
)

# The money inputs whose bounds the sheets check (a value pasted or written past the cell's validation): budget,
# prices, owning, failures and checkpoints. Each out of bounds gives "<Name> = <value> is not allowed: <Name> must
# be <what is allowed>", the words of xlcalc.errors.InputError.
MONEY_GROUPS = ("Prices and budget", "Owning the hardware", "Failures and checkpoints")
BOUNDED = tuple(c.name for c in INPUT_BY_FIELD.values() if c.group in MONEY_GROUPS
                and spec(c.spec_name).kind in ("float", "int"))

# Cost by category (seed 003): every line of the total, in the order the pie chart shows them.
BUDGET_LINES = ("Compute_Cost_USD", "Power_Cost_USD", "Failures_USD", "Experiments_USD",
                "Data_Line_USD", "People_Line_USD", "other_usd")
# Lines given as a share of compute, an amount, or both (seed 003): the inputs above the lines.
BUDGET_SHARES = ("experiments_frac", "experiments_usd", "data_frac", "data_usd", "people_frac", "people_usd")
OVER_TIME_MONTHS = (0, 3, 6, 9, 12, 18, 24, 30, 36, 48, 60)


CHART_DATA_HEADING = ("Chart data for the own vs rent chart: the table's numbers, #N/A where it shows a message "
                      "(a chart plots text as $0, #N/A as no point)")
CHART_DATA_COLS = ("K", "L", "M")  # months, rent, own: grouped and hidden beside the table, never printed


def chart_data_block(b: Book, s: str, first: int, last: int) -> None:
    """The own vs rent table (rows first..last: months, rent, own in A, B, C) as its chart reads it, in hidden columns
    beside it, the same rows: a number stays, a message becomes #N/A."""
    months_col, rent_col, own_col = CHART_DATA_COLS
    b.put(s, f"{months_col}{first - 2}", CHART_DATA_HEADING, "group")
    b.row(s, first - 1, ("months", "rent (USD)", "own (USD)"), "header", months_col)
    for row in range(first, last + 1):
        b.put(s, f"{months_col}{row}", Var(ref_text(s, f"A{row}")), "formula", "0")
        for src, col in (("B", rent_col), ("C", own_col)):
            x = Var(ref_text(s, f"{src}{row}"))
            b.put(s, f"{col}{row}", Func("IF", (IsNumber(x), x, NotAvailable())), "formula", '"$"#,##0')
    b.hidden_columns.append((s, months_col, own_col))


def budget_sheet(ctx: Ctx) -> None:
    """Goodput, cost by category, estimate vs budget, own vs rent and its table over time, and their charts."""
    s, b, sc = "Budget", ctx.book, ctx.scenario
    b.titled(s, "Budget — finance may edit the yellow lines", "Rent = GPU-hours x price; own = depreciation and "
             "hosting (over utilisation) + electricity. Failures come from goodput (GPU MTBF, checkpoint and restart "
             "times on Inputs) unless Use_Typed_Tax is TRUE. Categories follow seed 003.")
    formula_row(ctx, s, 3, "Price per GPU-hour used", guarded(Var("USD_per_GPU_Hour"), {"USD_per_GPU_Hour"}),
                "USD/GPU-hour", "", '"$"#,##0.000')
    b.put(s, "D3", Concat(price_used(ctx), ". Pick Price_Tier or type over USD_per_GPU_Hour on Inputs."), "formula")
    b.put(s, "E1", "Money inputs")
    b.put(s, "F1", checks.guard("OK: every money input is within its bounds", BOUNDED), "formula")
    # a looked-up money input's message that fails its check (the price: no rate at the tier) wraps across F:I
    message_cell(b, s, 1, "F", "I", longest_message_in({n for n in BOUNDED if n in checks.LOOKED_UP_FAILING}))
    b.put(s, "A4", "Failures and checkpoints", "group")
    output_rows(ctx, s, 5, ("Cluster_MTBF_H", "Ckpt_Interval_H", "Goodput"))
    input_row(ctx, s, 8, "failure_frac", sc.failure_frac)
    output_rows(ctx, s, 9, ("Failure_Frac_Used", "Wall_Days"))
    b.put(s, "A12", "Other lines: a share of compute and power, an amount, or both (seed 003)", "group")
    for row, field in enumerate(BUDGET_SHARES, start=13):
        input_row(ctx, s, row, field, getattr(sc, field))
    b.row(s, row + 2, ("line", "USD", "unit", "formula and source"), "header")
    first = row + 3
    for row, line in enumerate(BUDGET_LINES, start=first):
        if line in INPUT_BY_FIELD:
            input_row(ctx, s, row, line, getattr(sc, line))
        else:
            output_row(ctx, s, row, line)
    last = row
    row = output_rows(ctx, s, last + 1, ("Total_Cost_USD", "USD_per_M_Tokens")) + 1
    b.put(s, f"A{row}", "Estimate vs budget", "group")
    input_row(ctx, s, row + 1, "budget_usd", sc.budget_usd)
    output_row(ctx, s, row + 2, "Budget_Left_USD")
    b.rules.append((s, f"B{row + 2}", "bad_if_negative"))
    row += 4
    b.put(s, f"A{row}", "Own vs rent (the clean run; failures and the other lines come on top of either)", "group")
    b.put(s, f"D{row}", Concat(PURCHASE_PRICE_USED, capex_used(ctx)), "formula")
    message_cell(b, s, row, "D", "D", len(PURCHASE_PRICE_USED) + longest_message())
    # a message wraps in the result's column (its unit and note beside it)
    row = output_rows(ctx, s, row + 1, ("Rent_Cost_USD", "Own_Cost_USD", "Own_USD_per_GPU_Hour",
                                        "Breakeven_Utilisation", "Breakeven_Months", "Capex_per_GPU_All_In",
                                        "Hardware_Capex_USD", "KW_per_GPU_All_In", "Facility_MW", "Racks_Needed"))
    b.put(s, f"A{row + 1}", "Own vs rent over time (cumulative cash for the cluster at its utilisation)", "group")
    b.note(s, f"D{row + 1}", f"RENT_OVER_MONTHS_USD: {ownership.rent_over_months_usd.equation}; "
           f"OWN_OVER_MONTHS_USD: {ownership.own_over_months_usd.equation}")
    row += 2
    b.row(s, row, ("months", "rent (USD)", "own (USD)"), "header")
    b.merges.append((s, f"C{row}:D{row}"))  # the own column spans C:D, where a message wraps
    t_first = row + 1
    for months in OVER_TIME_MONTHS:
        row += 1
        b.put(s, f"A{row}", months, "formula", "0")
        rent = ownership.rent_over_months_usd(
            n_gpus=Var("N_GPUs"), usd_per_gpu_hour=Var("USD_per_GPU_Hour"), months=Var(ref_text(s, f"A{row}")),
            utilisation=Var("Utilisation"))
        b.put(s, f"B{row}", checked(rent), "formula", '"$"#,##0')
        message_cell(b, s, row, "B", "B", longest_message_in(needs(rent)))  # no rental rate: its sentence
        own = ownership.own_over_months_usd(
            n_gpus=Var("N_GPUs"), capex_usd_per_gpu=Var("Capex_per_GPU_All_In"), kw_per_gpu=Var("KW_per_GPU_All_In"),
            pue=Var("PUE"), usd_per_kwh=Var("Own_USD_per_kWh"), kw_per_rack=Var("KW_per_Rack"),
            usd_per_rack_month=Var("USD_per_Rack_Month"), months=Var(ref_text(s, f"A{row}")), utilisation=Var("Utilisation"))
        b.put(s, f"C{row}", checked(own), "formula", '"$"#,##0')
        message_cell(b, s, row, "C", "D", longest_message())  # a missing purchase price's sentence
    t_last = row
    chart_data_block(b, s, t_first, t_last)
    b.put(s, f"A{row + 2}", "Ranges: one input at a time at its low and high end (multipliers on Inputs)", "group")
    row += 3
    b.row(s, row, ("input", "low", "high", "cost at low", "cost at high", "change at low", "change at high",
                   "days at low", "days at high"), "header")
    r_first = row + 1
    for field, name, low_x, high_x, f in RANGES:
        row += 1
        out = OUTPUT_BY_NAME["Total_Cost_USD"]
        fmt = spec(INPUT_BY_FIELD[field].spec_name).number_format
        b.put(s, f"A{row}", INPUT_BY_FIELD[field].label)
        for col, mult in (("B", low_x), ("C", high_x)):
            end = f(base_value=Var(name), range_factor=Var(INPUT_BY_FIELD[mult].name))
            b.put(s, f"{col}{row}", range_checked(low_x, high_x, checked(end)), "formula",
                  fmt if fmt != "General" else "#,##0.00")
            message_cell(b, s, row, col, col, longest_message_in(needs(end)))
        for val_col, cost_col, change_col, days_col in (("B", "D", "F", "H"), ("C", "E", "G", "I")):
            # the range's end stands for the input; every other looked-up input is checked by name
            varmap = {name: ref_text(s, f"{val_col}{row}")}
            expr, subs = output_formula("Total_Cost_USD", varmap)
            b.put(s, f"{cost_col}{row}", range_checked(low_x, high_x, pointed(
                guarded_output("Total_Cost_USD", expr, varmap, {name}))), "formula", out.number_format, subs)
            change = ranges.cost_change_usd(total_usd=Var(ref_text(s, f"{cost_col}{row}")),
                                            base_usd=Var("Total_Cost_USD"))
            b.put(s, f"{change_col}{row}", range_checked(low_x, high_x, checked(
                change, needs(change) | dependencies("Total_Cost_USD"))), "formula", '"$"#,##0;-"$"#,##0')
            expr, subs = output_formula("Wall_Days", varmap)
            b.put(s, f"{days_col}{row}", range_checked(low_x, high_x, pointed(
                guarded_output("Wall_Days", expr, varmap, {name}))), "formula", "#,##0.0", subs)
        for cols, result in (("DEFG", "Total_Cost_USD"), ("HI", "Wall_Days")):  # a catalog's message wraps
            for col in cols:
                message_cell(b, s, row, col, col, longest_message_in(dependencies(result)))
    r_last = row
    budget_first(ctx, row + 2)
    b.freeze[s] = "A5"
    b.charts.append(lambda wb: charts.cost_chart(wb, first, last))
    b.charts.append(lambda wb: charts.own_vs_rent_chart(wb, t_first, t_last, CHART_DATA_COLS))
    b.charts.append(lambda wb: charts.tornado_chart(wb, r_first, r_last))


# Budget-first (seed 001's question, ``xlcalc budget`` and BUDGET_PLAN): what the approved budget buys in the
# deadline on the plan's GPU at its price tier, rented and owned. Each row: label, registered formula, number format
# (the same formulas and arguments as xlcalc.money.budget_plan).
TOKENS_PER_PARAM = budget.budget_params_b.defaults["tokens_per_param"]  # Chinchilla's 20, as xlcalc budget
BUDGET_FIRST_ROWS: tuple[tuple[str, Any, str], ...] = (
    ("GPUs the budget pays for over the deadline", budget.budget_gpus, "#,##0"),
    ("GPU-hours the budget buys", cost.gpu_hours_for_budget, "#,##0"),
    ("Model FLOPs the budget buys", budget.budget_compute_flops, "0.00E+00"),
    (f"Largest compute-optimal model ({TOKENS_PER_PARAM} tokens/parameter), billions", budget.budget_params_b,
     "#,##0.0"),
    ("Its training tokens, trillions", budget.budget_tokens_t, "#,##0.00"),
)
_BUDGET_FIRST_ARGS = {"budget_usd": Var("Budget_USD"), "days": Var("Deadline_Days"),
                      "peak_tflops": Var("Peak_TFLOPS"), "mfu": Var("MFU"), "tokens_per_param": TOKENS_PER_PARAM}


def budget_first_expr(f: Any, price: str) -> Any:
    """A budget-first formula over the plan's names, the price per GPU-hour being the defined name ``price``."""
    args = {**_BUDGET_FIRST_ARGS, "usd_per_gpu_hour": Var(price)}
    return f(**{k: v for k, v in args.items() if k in f.params})


def budget_first(ctx: Ctx, row: int) -> int:
    """Budget-first rows from ``row``: what Budget_USD buys in Deadline_Days at the plan's GPU, MFU and price, rented
    (USD_per_GPU_Hour) beside owned (Own_USD_per_GPU_Hour); returns the last row."""
    s, b = "Budget", ctx.book
    b.put(s, f"A{row}", "Budget-first: what the approved budget buys by the deadline (xlcalc budget, BUDGET_PLAN)",
          "group")
    b.note(s, f"D{row}", "Budget_USD (above), Deadline_Days, GPU_Type (Peak_TFLOPS), MFU and Price_Tier "
           "(USD_per_GPU_Hour) on Inputs; owned: Own_USD_per_GPU_Hour (own vs rent above).")
    b.row(s, row + 1, ("", "rent", "own", "formula and source"), "header")
    row += 2
    b.put(s, f"A{row}", "Price of a busy GPU-hour (USD)")
    for col, price in (("B", "USD_per_GPU_Hour"), ("C", "Own_USD_per_GPU_Hour")):
        b.put(s, f"{col}{row}", checked(Var(price)), "formula", '"$"#,##0.000')
        message_cell(b, s, row, col, col, longest_message_in(needs(Var(price))))
    b.note(s, f"D{row}", f"USD_per_GPU_Hour (Inputs); OWN_USD_PER_GPU_HOUR: {ownership.own_usd_per_gpu_hour.equation}")
    flops_at: dict[str, str] = {}
    for label, f, fmt in BUDGET_FIRST_ROWS:
        row += 1
        b.put(s, f"A{row}", label)
        b.wrap.add((s, f"A{row}"))  # a label longer than its column wraps in the row (as tall as its message)
        for col, price in (("B", "USD_per_GPU_Hour"), ("C", "Own_USD_per_GPU_Hour")):
            expr = budget_first_expr(f, price)
            subs = {budget_first_expr(budget.budget_compute_flops, price).key(): flops_at[price]} \
                if price in flops_at else None
            ref = b.put(s, f"{col}{row}", checked(expr), "formula", fmt, subs)
            message_cell(b, s, row, col, col, longest_message_in(needs(expr)))  # the price's message, wrapped
            if f is budget.budget_compute_flops:
                flops_at[price] = ref
        b.note(s, f"D{row}", f"{f.udf_name}: {f.equation}. Source: {f.source}")
    return row


def range_inverted(low_x: str, high_x: str) -> Any:
    """TRUE when a range's low end multiplier (scenario field ``low_x``) is above its high end's."""
    return Var(INPUT_BY_FIELD[low_x].name) > Var(INPUT_BY_FIELD[high_x].name)


def range_message(low_x: str, high_x: str) -> Concat:
    """The scenario's own refusal of an inverted range (Scenario._check_parallelism), over the two cells."""
    lo, hi = INPUT_BY_FIELD[low_x].name, INPUT_BY_FIELD[high_x].name
    return Concat(f"{lo} = ", Var(lo), f" is not allowed: {lo} must be at most {hi} = ", Var(hi),
                  " (a range's low end multiplier may not exceed its high end's: swap them)")


def range_checked(low_x: str, high_x: str, expr: Any) -> Any:
    """A cell of a range's row: the inverted range's message, else ``expr``."""
    return if_(range_inverted(low_x, high_x), range_message(low_x, high_x), expr)

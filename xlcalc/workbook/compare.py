"""Sheets that apply the named results over other cells: Scenarios, Sensitivity, Parallelism."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import product
from typing import Any

from .. import catalog
from ..expr.functions import eq, if_
from ..expr.nodes import Expr, Func, Num, Text, Var
from ..expr.template import Bound, Template
from ..inputs import spec
from ..layout import LAYOUT_OK, LAYOUT_STEPS, layout_message, preset_stage_ends
from ..outputs import OUTPUT_BY_NAME, OUTPUTS
from ..scenario import INPUT_BY_NAME, INPUTS, STEP_GROUP, Scenario
from . import checks
from .catalogs import GPU_DERIVED
from .messages import CHECK_CELL_POINTER, CHECK_POINTER, longest_layout_message, message_cell
from .model import Concat, IfError, IsNumber, column_range, coord, placed, ref_text
from .rendering import (
    BOOL_FORMAT,
    LOOKED_UP,
    dependencies,
    display_format,
    guarded,
    guarded_output,
    output_formula,
    pointed,
    pointer_format,
    pointing,
)
from .sheets import STAGE_ENDS, Ctx, capex_value, derived_value, id_range, longest_message_in, plan_title

COMPARE_GPUS = ("a800", "h100-sxm", "ascend-910b")
# A Scenarios column's cells that can show a catalog's message (no purchase price or rental rate for the column's
# GPU, a figure its catalog row leaves unpublished) wrap in their column, in rows as tall as the longest such message
# each can show (sheets.longest_message_in); the columns are wide enough that the longest takes six lines
SCENARIO_WIDTH = 44
LINKED_NOTE = "follows the Inputs sheet"  # the name cell of a column that follows the Inputs sheet
RESULT_RULES = {"Fits_GPU": "good_if_true", "Budget_Left_USD": "bad_if_negative"}  # a result's colours (Book.rules)


@dataclass(frozen=True)
class Shape:
    """The editable grid axes and candidate layouts of a workbook already written (their count was fixed then)."""

    gpus: list[int]
    mfus: list[float]
    configs: list[tuple[Any, Any, Any, Any, Any]]


_SHAPE: ContextVar[Shape | None] = ContextVar("shape", default=None)


@contextmanager
def shaped_as(shape: Shape) -> Iterator[None]:
    """Lay the Sensitivity and Parallelism sheets out with ``shape``'s rows and columns (the read-back compares a
    received workbook with what the builder writes; its axes and layouts are editable cells), not the scenario's."""
    token = _SHAPE.set(shape)
    try:
        yield
    finally:
        _SHAPE.reset(token)


def gpu_variant(base: Scenario, gpu: str) -> Scenario:
    """The same plan on another GPU: the GPU-derived inputs come from the catalog."""
    data = {k: v for k, v in base.model_dump().items() if k not in GPU_DERIVED}
    buy = catalog.purchase_price(base.gpu) if base.gpu else None
    if buy is not None and buy.capex_usd_per_gpu == base.capex_usd_per_gpu:
        data["capex_usd_per_gpu"] = None  # the catalog's purchase price of the base GPU: take the variant's
    data.update(gpu=gpu, name=f"the Inputs plan on {catalog.get_gpu(gpu).name}")
    return Scenario.build(**data)


# --- Scenarios ----------------------------------------------------------------------------------

def scenarios_sheet(ctx: Ctx, columns: list[tuple[Scenario, bool]]) -> list[dict[str, str]]:
    """One column per scenario; each column's results are the named results over that column's cells.

    Returns, per column, defined name -> cell reference (for tests and read-back).
    """
    s, b = "Scenarios", ctx.book
    b.titled(s, "Scenarios side by side", "Each column is a full plan. Linked columns follow the Inputs sheet except "
             "their GPU; type over any yellow cell to change one column.")
    b.row(s, 4, ("input / result", "unit"), "header")
    maps: list[dict[str, str]] = []
    for j, (sc, linked) in enumerate(columns):
        col = coord(3 + j, 1)[:-1]
        b.widths.setdefault(s, {})[col] = SCENARIO_WIDTH
        b.put(s, f"{col}4", f"Scenario {j + 1}", "header")
        varmap: dict[str, str] = {}
        follows: set[str] = set()  # inputs whose cell follows the Inputs sheet's: their checks apply
        title_row = 5  # the plan's title (built from this column's inputs once they are placed), then its name
        b.put(s, "A6", "Scenario name")
        b.put(s, f"{col}6", *((LINKED_NOTE, "note") if linked else (sc.name, "text_input")))
        # a linked column's architecture and bytes per parameter follow the Inputs sheet's preset, recipe and numbers
        model_ref = _pick(ctx, s, col, 7, "Model preset", sc.model, "Model_Preset", id_range(ctx.models),
                          "a model id from the Models sheet, or empty", linked)
        gpu_ref = _pick(ctx, s, col, 8, "GPU type", sc.gpu, "GPU_Type", id_range(ctx.gpus),
                        "a GPU id from the GPUs sheet, or empty", False)
        recipe_ref = _pick(ctx, s, col, 9, "Precision recipe", sc.recipe, "Recipe_Id", id_range(ctx.recipes),
                           "a recipe id from the Recipes sheet, or empty", linked)
        framework = framework_cells(ctx, s, col, 10, sc, linked)  # rows 10 and 11
        # every input but the step time's (its chain is the StepTime sheet's alone)
        for row, cell in enumerate((c for c in INPUTS if c.group != STEP_GROUP), start=12):
            b.row(s, row, (cell.label, spec(cell.spec_name).unit))
            if cell.field == "capex_usd_per_gpu":  # the column's GPU's purchase price
                value: Any = capex_value(ctx, sc, gpu_ref)
            elif linked and cell.field not in GPU_DERIVED:
                value = Var(cell.name)  # follows the Inputs sheet
                follows.add(cell.name)
            else:  # the column's framework and precision fill what they set, as on Inputs
                value = derived_value(ctx, sc, cell.field, gpu_ref, model_ref, recipe_ref, framework=not linked)
                if framework and isinstance(value, Expr):
                    value = value.substitute(framework)
                if cell.field in STAGE_ENDS and isinstance(value, Expr):  # this column's layers and PP
                    value = value.substitute({n: Var(varmap[n]) for n in ("Layers", "PP_Size")})
            fmt: str | None = spec(cell.spec_name).number_format
            fmt = BOOL_FORMAT if spec(cell.spec_name).kind == "bool" else (None if fmt == "General" else fmt)
            if cell.name in checks.FRAMEWORK_INPUTS:  # a look-up's message: the way to Start's input check
                fmt = pointer_format(fmt)
            varmap[cell.name] = checks.register(b.put(s, f"{col}{row}", value, "input", fmt), cell.name,
                                                looked_up=cell.name in LOOKED_UP)
            if isinstance(value, Expr) and (chars := longest_message_in({cell.name})):  # a look-up's message
                message_cell(b, s, row, col, col, chars)
            b.validations.append({"sheet": s, "at": f"{col}{row}", "spec": spec(cell.spec_name),
                                  "label": f"{cell.label} ({cell.name})"})
        row += 2
        b.put(s, f"A{title_row}", "Plan (built from the inputs below)")
        b.put(s, f"{col}{title_row}", plan_title(ctx, {**varmap, "GPU_Type": gpu_ref,
                                                        **({} if linked else {"Model_Preset": model_ref})}), "formula")
        b.wrap.add((s, f"{col}{title_row}"))
        b.heights[(s, title_row)] = 58  # four lines of the title
        varmap.update({out.name: ref_text(s, f"{col}{row + k}") for k, out in enumerate(OUTPUTS)})
        layout_row = row + [out.name for out in OUTPUTS].index("Layout_Check")
        for r, out in enumerate(OUTPUTS, start=row):
            expr, subs = output_formula(out.name, varmap)
            expr = guarded_output(out.name, expr, varmap, follows)
            # a memory result: the way to the column's layout check, whole in its own cell; every result but that
            # check: the cell a failing input check blames (the Checks sheet prints its line), or for a framework
            # look-up's message Start's input check
            if out.name != "Layout_Check":
                expr = pointing(expr, f"see {col}{layout_row}" if out.guarded else None, varmap["Layout_Check"],
                                CHECK_CELL_POINTER, frozenset(varmap[n] for n in checks.FRAMEWORK_INPUTS))
            b.row(s, r, (out.label, out.unit))
            b.put(s, f"{col}{r}", expr, "formula", display_format(out), subs)
            message_cell(b, s, r, col, col, longest_message_in(dependencies(out.name)))  # the result's only room
            if out.name == "Layout_Check":
                message_cell(b, s, r, col, col, longest_layout_message())
            if out.name in RESULT_RULES:
                b.rules.append((s, f"{col}{r}", RESULT_RULES[out.name]))
        maps.append(varmap)
    b.freeze[s] = "C5"
    return maps


def _pick(ctx: Ctx, s: str, col: str, row: int, label: str, value: str | None, name: str, list_ref: str,
          allowed: str, linked: bool, over: dict[str, str] | None = None) -> Any:
    """A column's pick in row ``row``: a dropdown of the list ``list_ref`` checked as ``name`` (``over``: the cells
    of the other names its check reads, see checks.register), or "as on Inputs" in a linked column. Returns its
    cell."""
    b = ctx.book
    b.put(s, f"A{row}", label)
    if linked:
        return b.put(s, f"{col}{row}", "as on Inputs", "note")
    ref = checks.register(b.put(s, f"{col}{row}", value or "", "text_input"), name, over=over)
    b.validations.append({"sheet": s, "at": f"{col}{row}", "label": label, "list": "=" + list_ref, "allowed": allowed})
    return ref


def framework_cells(ctx: Ctx, s: str, col: str, row: int, sc: Scenario, linked: bool) -> dict[str, Var]:
    """A column's Framework and Precision (rows ``row`` and ``row + 1``): dropdowns of its own (as on Inputs), whose
    picks fill the column's bytes per parameter and memory inputs; "as on Inputs" in a linked column, whose inputs
    follow the Inputs sheet's. Returns the names the column's look-ups read -> its cells (empty where linked)."""
    fw = ctx.frameworks
    lists = {"Framework": column_range(fw.sheet, "A", fw.first_row, fw.last_row),
             "Precision": column_range(fw.sheet, "A", fw.precision_first, fw.precision_last)}
    cells: dict[str, Var] = {}
    for k, name in enumerate(("Framework", "Precision")):
        # the column's Precision is checked against the column's Framework
        ref = _pick(ctx, s, col, row + k, name, getattr(sc, name.lower()), name, lists[name],
                    checks.CHOICE_ALLOWED[name], linked, over={n: v.name for n, v in cells.items()})
        if not linked:
            cells[name] = Var(ref)
    return cells


# --- Sensitivity -------------------------------------------------------------------------------------

def sensitivity_values(sc: Scenario) -> tuple[list[int], list[float]]:
    if (shape := _SHAPE.get()) is not None:
        return shape.gpus, shape.mfus
    step = sc.tp * sc.pp
    gpus = sorted({max(step, int(round(sc.n_gpus * f / step)) * step) for f in (0.25, 0.5, 1, 2, 4)})
    mfus = sorted({round(min(1.0, sc.mfu * f), 4) for f in (0.75, 0.875, 1, 1.125, 1.25)})
    return gpus, mfus


SENSITIVITY_WIDTH = 24
SENSITIVITY_TABLES = (
    ("days", "Train_Days", "Training days"),
    ("cost", "Total_Cost_USD", "Total cost (USD) \u2014 the same GPU-hours whatever the GPU count, so it moves "
                               "with MFU only"),
    ("spend", None, "Average spend per 30 days (USD) = total cost / training days x 30 \u2014 grows with the GPU count"),
)


def sensitivity_sheet(ctx: Ctx) -> dict[str, Any]:
    s, b, sc = "Sensitivity", ctx.book, ctx.scenario
    gpus, mfus = sensitivity_values(sc)
    b.titled(s, "Sensitivity: training days, total cost and monthly spend over GPU count x MFU",
             "Yellow GPU counts and MFUs may be edited; every other input comes from the Inputs sheet.")
    # wide enough that a catalog's message (no rental rate) takes a few lines
    b.widths[s] = {coord(2 + j, 1)[:-1]: SENSITIVITY_WIDTH for j in range(len(mfus))}
    tables: dict[str, Any] = {}
    top = 4
    for key, name, title in SENSITIVITY_TABLES:
        b.put(s, f"A{top}", title, "group")
        head = top + 1
        b.put(s, f"A{head}", "GPUs \\ MFU", "header")
        days = tables.get("days")  # the days table's axes are the input cells; the other tables' follow them
        col_refs = [_axis(b, s, coord(2 + j, head), m, "0.0%", "MFU", "MFU", days and days["mfu_refs"][j])
                    for j, m in enumerate(mfus)]
        row_refs: list[str] = []
        cells: list[list[str]] = [[] for _ in gpus]
        deps = dependencies("Total_Cost_USD") | dependencies("Train_Days") if name is None else dependencies(name)
        # a catalog's message wraps in the cell (a failing look-up's is pointed to: Start's input check)
        chars = longest_message_in({d for d in deps if d not in checks.LOOKED_UP_FAILING})
        for i, n in enumerate(gpus):
            row_refs.append(_axis(b, s, f"A{head + 1 + i}", n, "#,##0", "N_GPUs", "Number of GPUs",
                                  days and days["gpu_refs"][i]))
            for j in range(len(mfus)):
                at = coord(2 + j, head + 1 + i)
                # the grid point's own GPUs and MFU: the days table's input cells, whose checks apply
                axes = (row_refs[i], col_refs[j]) if days is None else (days["gpu_refs"][i], days["mfu_refs"][j])
                col = coord(2 + j, 1)[:-1]
                message_cell(b, s, head + 1 + i, col, col, chars)
                if name is None:  # spend rate: this grid point's total cost over its days
                    cost = Var(tables["cost"]["cells"][i][j])
                    expr = cost / Var(tables["days"]["cells"][i][j]) * 30
                    expr = pointed(guarded(expr, deps, exclude={"N_GPUs", "MFU"}, cells=axes))
                    expr = if_(IsNumber(cost), expr, cost)  # the cost cell's message (its days' included)
                    cells[i].append(b.put(s, at, expr, "formula", '"$"#,##0'))
                    continue
                varmap = {"N_GPUs": row_refs[i], "MFU": col_refs[j]}
                if key == "cost":  # the point's days: the days table's cell (written out, the formula would pass
                    varmap["Train_Days"] = tables["days"]["cells"][i][j]  # Excel's 8,192 characters)
                expr, subs = output_formula(name, varmap)
                # the point's days past their bound, or the way to a failing input's message (whole in Start's input
                # check): as the days cell
                expr = pointed(guarded_output(name, expr, varmap if key == "cost" else None, exclude={"N_GPUs", "MFU"},
                                              cells=axes))
                cells[i].append(b.put(s, at, expr, "formula", OUTPUT_BY_NAME[name].number_format, subs))
        tables[key] = {"head": head, "rows": len(gpus), "cols": len(mfus), "mfu_refs": col_refs,
                       "gpu_refs": row_refs, "cells": cells}
        top = head + len(gpus) + 3
    b.freeze[s] = "B4"
    return tables


def _axis(b: Any, s: str, at: str, value: Any, fmt: str, name: str, label: str, days_ref: str | None) -> str:
    """A Sensitivity axis cell: the days table's cell ``days_ref`` (a formula), or, in the days table, an input cell
    holding ``value``, checked and validated as input ``name``."""
    if days_ref is not None:
        return b.put(s, at, Var(days_ref), "formula", fmt)
    ref = checks.register(b.put(s, at, value, "input", fmt), name)
    b.validations.append({"sheet": s, "at": at, "spec": spec(INPUT_BY_NAME[name].spec_name), "label": label})
    return ref


# --- Parallelism ------------------------------------------------------------------------------------------

PAR_HEAD = ("TP", "PP", "ZeRO stage", "Recompute", "Seq. parallel", "DP", "Model states GB",
            "Activations GB", "Total GB", "Fits GPU", "Largest micro-batch", "First stage GB", "Last stage GB",
            "Layout check", "Layers, first stage", "Layers, last stage", "Params B, first stage",
            "Params B, last stage", "Layer activation bytes", "... without recompute", "In flight, first stage")
PAR_INPUTS = ("TP_Size", "PP_Size", "ZeRO_Stage", "Recompute", "Seq_Parallel")
# Layout_Check and the stage totals in cells of their own: the results that use them stay short
PAR_OUTPUTS = ("DP_Size", "Mem_Static_GB", "Mem_Activations_GB", "Mem_Total_GB", "Fits_GPU", "Max_Micro_Batch",
               "Mem_First_Total_GB", "Mem_Last_Total_GB", "Layout_Check", "Stage_Layers_First", "Stage_Layers_Last",
               "Stage_Params_B_First", "Stage_Params_B_Last", "Layer_Act_Bytes", "Layer_Act_Bytes_No_Recompute",
               "Inflight_First")


# Steps of the stage memory model that the results of a row use several times, each in a cell of its own (grouped,
# hidden columns right of the table) that the results read instead of writing the step out again: LibreOffice parses
# and computes them once per row. These six shorten a row's formulas most (34.5 to 24.9 thousand characters); a step
# used once is shorter written out than as a cell guarded by the layout check.
PAR_STEPS = ("Layer_Params_B", "Layer_Act_Frozen_Saving", "Mem_Recompute_GB", "Stage_Adapter_Params_B_First",
             "Stage_Adapter_Params_B_Last", "Mem_Last_Activations_GB")


# A row's first and last pipeline stage layers, in grouped hidden columns after PAR_STEPS: the plan's (Inputs) where
# the row's PP is the plan's PP_Size; else, with a model preset picked, the split xlcalc.layout gives that model on
# the row's PP (as Inputs gives it on PP_Size: even, or uneven where PP does not divide its layers); else 0 (even):
# a typed architecture's layers that the row's PP does not divide are refused by the row's layout check.
PAR_ENDS = ("First_Stage_Layers", "Last_Stage_Layers")

# A row whose layout does not split into whole pieces: its layout check cell (20 characters) shows the message short,
# "<input> = <value> refused" (e.g. "pp = 3 refused"; "refused: see Checks" where that is longer), the whole message
# in a hidden column after PAR_ENDS (the Checks sheet's line of the row, and Start's input check, read it); the row's
# results (13 characters) show PAR_POINTER, the way to the layout check cell, instead of the message.
PAR_POINTER = "see column {col}"
PAR_SHORT_HEAD = 10  # the most characters of "<input> = <value>" the short message shows (then " refused")
PAR_REFUSED = "refused: see Checks"


# The guards around a row's result that read none of the row's cells (the Inputs' look-ups and input checks the
# result depends on, each ``IF(test, <the rest>, value)``) are the same for every row: their tests sit once, in a
# grouped hidden column of their own after the layout check's whole message (row 5: 0 where every test passes, else
# the number of the first that fails, counted from the outermost), and each row's result reads that cell:
# ``IF(<cell>=0, <the rest>, <the failing guard's value>)`` (its value picked by ``IF(<cell>=k, ...)`` where the
# guards' values differ). The same value (an error of a test reaches the result through the cell, as through the
# test), less formula text for LibreOffice to parse and the tests computed once.
PAR_GUARDS_HEAD = "Input checks: {label}"


def _peel(expr: Expr, row: Any) -> tuple[list[tuple[Expr, Expr]], Expr]:
    """The guards ``IF(test, <the rest>, value)`` around ``expr`` from the outermost down while neither test nor value
    reads a cell of ``row`` (nor a placeholder, in a template), and the rest inside them."""
    guards: list[tuple[Expr, Expr]] = []
    while isinstance(expr, Func) and expr.name == "IF" and len(expr.args) == 3:
        test, then, value = expr.args
        names = test.variables() | value.variables()
        if not row.isdisjoint(names) or any(v.startswith("\x00") for v in names):
            break
        guards.append((test, value))
        expr = then
    return guards, expr


def shared_guards(expr: Any, row: Any, cell: Callable[[Expr], str]) -> Any:
    """A row's result ``expr`` reading the cell ``cell(tests)`` that holds the tests of its outer guards, those that
    read none of the references ``row`` (see PAR_GUARDS_HEAD); ``expr`` as it is where it has none. A bound template
    stays one: its guards are taken out once, with the same text and values as the cell's tree."""
    template = expr.template if isinstance(expr, Bound) else None
    if template is not None and (made := _SHARED.get(template)) is not None:
        return expr if made is template else made.bind(expr.refs)
    guards, rest = _peel(template.expr if template is not None else expr, row)
    if guards:
        failing: Expr = Num(0)
        for k in range(len(guards), 0, -1):
            failing = Func("IF", (guards[k - 1][0], failing, Num(k)))
        ref = Var(cell(failing))
        value = guards[-1][1]
        for k in range(len(guards) - 1, 0, -1):
            if guards[k - 1][1].key() != value.key():
                value = Func("IF", (eq(ref, k), guards[k - 1][1], value))
            # (else: the same value for either guard)
        rest = Func("IF", (eq(ref, 0), rest, value))
    if template is None:
        return rest if guards else expr
    made = _SHARED[template] = Template(rest, template.subs, template.slots) if guards else template
    return expr if made is template else made.bind(expr.refs)


_SHARED: dict[Template, Template] = {}  # (one sheet's: cleared for each Parallelism sheet laid out)


# The steps of a row's layout check that its constraints use several times (xlcalc.layout.LAYOUT_STEPS), each in a
# grouped hidden column of its own after the guards' columns: the row's layout check (its whole message) and its line
# on the Checks sheet read these cells instead of writing each step out again, LibreOffice parses and computes each once.
PAR_LAYOUT_STEPS = {"given_ends": "Layout: end stages with layers given", "middle_stages": "Layout: middle stages",
                    "rest_layers": "Layout: layers left to the middle stages",
                    "middle_stage_layers": "Layout: layers of a middle stage"}
assert tuple(PAR_LAYOUT_STEPS) == tuple(LAYOUT_STEPS), "a layout step without its column (or its order changed)"


def _layout_values(var: Callable[[str], Expr], names: Any) -> dict[str, Any]:
    """The layout check's inputs (xlcalc.layout's names) as the Layout_Check result passes them, each defined name of
    ``names`` read as ``var(<name>)``."""
    cells = {n: var(n) for n in names}
    return {k: v.substitute(cells) if isinstance(v, Expr) else v for k, v in OUTPUT_BY_NAME["Layout_Check"].args.items()}


def row_layout_step(step: str, refs: dict[str, str]) -> Any:
    """A Parallelism row's layout step ``step`` over the row's cells ``refs`` (defined name, or a step before it, ->
    cell): its one declaration in xlcalc.layout, the steps before it read from their cells."""
    def make(var: Callable[[str], Expr]) -> Any:
        values = {**_layout_values(var, [n for n in refs if n not in LAYOUT_STEPS]),
                  **{k: var(k) for k in refs if k in LAYOUT_STEPS}}
        return LAYOUT_STEPS[step](values)

    return placed(("par layout step", step, tuple(refs)), make, refs)


def row_layout_check(refs: dict[str, str]) -> Any:
    """A Parallelism row's layout check, its whole message, over the row's cells ``refs`` (defined name or layout
    step -> cell): the Layout_Check result's formula (xlcalc.layout.layout_message over its inputs as the result passes
    them, as output_formula writes it) with the layout steps read from their cells."""
    def make(var: Callable[[str], Expr]) -> Any:
        formula = OUTPUT_BY_NAME["Layout_Check"].formula
        symbols = {**{p: Var(p) for p in formula.params}, **{k: var(k) for k in LAYOUT_STEPS}}
        return layout_message(symbols).substitute(_layout_values(var, [n for n in refs if n not in LAYOUT_STEPS]))

    return placed(("par layout check", tuple(refs)), make, refs)


def par_layout_short(whole: str) -> Any:
    """A Parallelism row's layout check short, from the cell ``whole`` that holds its whole message."""
    def make(var: Callable[[str], Expr]) -> Any:
        text = var("whole")
        at = Func("FIND", (Text(" is not allowed"), text))
        short = if_(at <= PAR_SHORT_HEAD + 1, Concat(Func("LEFT", (text, at - 1)), " refused"), PAR_REFUSED)
        return if_(eq(text, LAYOUT_OK), LAYOUT_OK, IfError(short, PAR_REFUSED))

    return placed("par_layout_short", make, {"whole": whole})


def row_stage_end(name: str, pp_ref: str) -> Any:
    """First_Stage_Layers or Last_Stage_Layers of a Parallelism row whose PP is in cell ``pp_ref``."""
    def make(var: Callable[[str], Expr]) -> Any:
        pp = var("PP")
        split = preset_stage_ends(Var("Layers"), pp)[PAR_ENDS.index(name)]
        return if_(eq(pp, Var("PP_Size")), Var(name), if_(eq(Var("Model_Preset"), ""), 0, IfError(split, 0)))

    return placed(("row_stage_end", name), make, {"PP": pp_ref})


def candidate_configs(sc: Scenario) -> list[tuple[int, int, int, str, bool]]:
    if (shape := _SHAPE.get()) is not None:
        return list(shape.configs)
    out = [(sc.tp, sc.pp, sc.zero_stage, sc.recompute, sc.seq_parallel)]
    for tp, pp, zero, rec in product((1, 2, 4, 8), (1, 2, 4, 8, 16), (1, 3), ("selective", "full")):
        cfg = (tp, pp, zero, rec, tp > 1)  # TP divides the heads, TP x PP the GPUs; PP at most the layers
        if not (sc.heads % tp or sc.n_gpus % (tp * pp) or pp > sc.layers or cfg in out):
            out.append(cfg)
    return out


PAR_WIDTH, PAR_WIDE = 13, 20  # characters; PAR_WIDE: byte counts of a layer (e.g. 2,147,483,648.00) never print ###


def par_width(j: int) -> int:
    """The width of the Parallelism table's column j (1 = A): wide enough for its formatted values."""
    names = PAR_INPUTS + PAR_OUTPUTS + PAR_STEPS
    out = OUTPUT_BY_NAME.get(names[j - 1]) if j <= len(names) else None
    return PAR_WIDE if out is not None and (out.unit.startswith("bytes") or out.name == "Layout_Check") else PAR_WIDTH


def parallelism_sheet(ctx: Ctx) -> None:
    s, b, sc = "Parallelism", ctx.book, ctx.scenario
    b.titled(s, "Parallel layouts: memory per GPU of candidate TP x PP x ZeRO x recompute",
             "Live: model size, sequence, micro-batch, bytes and GPU count come from the Inputs sheet. "
             "Row 5 is the plan on the Inputs sheet as built; edit any yellow cell to try a layout.")
    for j, h in enumerate(PAR_HEAD, start=1):
        b.put(s, coord(j, 4), h, "header")
        b.wrap.add((s, coord(j, 4)))  # a heading wider than its column takes two lines, never cut
        b.widths.setdefault(s, {})[coord(j, 1)[:-1]] = par_width(j)
    configs = candidate_configs(sc)
    first = 5
    guards_first = len(PAR_HEAD) + len(PAR_STEPS) + len(PAR_ENDS) + 2  # after the layout check's whole message
    layout_first = guards_first + len(PAR_OUTPUTS) + len(PAR_STEPS)  # after the most guards' columns there can be
    guard_cols: dict[str, str] = {}  # result -> its guards' column
    _SHARED.clear()

    guard_refs: dict[tuple[str, Any], str] = {}  # (result, its guards' key) -> the cell that holds them

    def guard_cell(name: str, row: int, passed: Expr) -> str:
        key = (name, passed.key())
        if key not in guard_refs:
            col = guard_cols.get(name)
            if col is None:
                col = guard_cols[name] = coord(guards_first + len(guard_cols), 1)[:-1]
                b.put(s, f"{col}4", PAR_GUARDS_HEAD.format(label=OUTPUT_BY_NAME[name].label), "header")
                b.widths.setdefault(s, {})[col] = PAR_WIDTH
            guard_refs[key] = b.put(s, f"{col}{row}", passed, "formula")
        return guard_refs[key]
    check_col = coord(len(PAR_INPUTS) + 1 + PAR_OUTPUTS.index("Layout_Check"), 1)[:-1]
    for r, cfg in enumerate(configs, start=first):
        varmap: dict[str, str] = {}
        for j, (name, value) in enumerate(zip(PAR_INPUTS, cfg), start=1):
            varmap[name] = checks.register(
                b.put(s, coord(j, r), value, "input", BOOL_FORMAT if name == "Seq_Parallel" else None), name)
            b.validations.append({"sheet": s, "at": coord(j, r), "spec": spec(INPUT_BY_NAME[name].spec_name),
                                  "label": name})
        for j, name in enumerate(PAR_OUTPUTS + PAR_STEPS + PAR_ENDS, start=len(PAR_INPUTS) + 1):
            varmap[name] = ref_text(s, coord(j, r))
            if name in PAR_ENDS:  # the stage ends the row's layout and memory read
                b.put(s, coord(j, r), row_stage_end(name, varmap["PP_Size"]), "formula", "#,##0")
        whole_at = coord(len(PAR_HEAD) + len(PAR_STEPS) + len(PAR_ENDS) + 1, r)
        layout_refs = dict(varmap)  # the row's cells, then its layout steps' (each over the cells before it)
        for j, step in enumerate(LAYOUT_STEPS, start=layout_first):
            layout_refs[step] = b.put(s, coord(j, r), row_layout_step(step, dict(layout_refs)), "formula")
        row_refs = {*varmap.values(), *(ref for _, ref in checks.cell_checks(varmap))}  # the row's cells, checks
        for j, name in enumerate(PAR_OUTPUTS + PAR_STEPS, start=len(PAR_INPUTS) + 1):
            expr, subs = output_formula(name, varmap)
            expr = guarded_output(name, expr, varmap, follows=PAR_ENDS)  # the Inputs' ends' checks apply
            at = coord(j, r)
            share = functools.partial(shared_guards, row=row_refs, cell=functools.partial(guard_cell, name, r))
            if name == "Layout_Check":  # whole in its hidden cell, short in the row's layout check cell
                expr = guarded_output(name, row_layout_check(layout_refs), layout_refs, follows=PAR_ENDS)
                whole = b.put(s, whole_at, share(expr), "formula")
                b.put(s, at, par_layout_short(whole), "formula")
                continue
            expr = pointing(expr, PAR_POINTER.format(col=check_col), varmap["Layout_Check"], CHECK_POINTER)
            expr = share(expr)  # (the guards as pointing leaves them)
            b.put(s, at, expr, "formula", display_format(OUTPUT_BY_NAME[name]), subs)
        # a layout that does not split into whole pieces rolls up to Start's input check, naming the row's cell
        checks.register_layout(varmap["Layout_Check"], {n: varmap[n] for n in ("TP_Size", "PP_Size")},
                               {n: layout_refs[n] for n in PAR_ENDS + tuple(LAYOUT_STEPS)}, ref_text(s, whole_at))
    steps_first = len(PAR_HEAD) + 1
    for j, name in enumerate(PAR_STEPS + PAR_ENDS, start=steps_first):
        label = OUTPUT_BY_NAME[name].label if name in OUTPUT_BY_NAME else INPUT_BY_NAME[name].label
        b.put(s, coord(j, 4), label, "header")
        b.widths.setdefault(s, {})[coord(j, 1)[:-1]] = par_width(j)
    hidden_last = steps_first + len(PAR_STEPS) + len(PAR_ENDS)
    b.put(s, coord(hidden_last, 4), "Layout check, whole", "header")
    for j, step in enumerate(LAYOUT_STEPS, start=layout_first):
        b.put(s, coord(j, 4), PAR_LAYOUT_STEPS[step], "header")
        b.widths.setdefault(s, {})[coord(j, 1)[:-1]] = PAR_WIDTH
    b.hidden_columns.append((s, coord(steps_first, 1)[:-1], coord(layout_first + len(LAYOUT_STEPS) - 1, 1)[:-1]))
    last = first + len(configs) - 1
    b.rules.append((s, f"J{first}:J{last}", "good_if_true"))
    b.freeze[s] = "A5"

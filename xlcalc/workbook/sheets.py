"""The planning sheets: Start, Inputs, Memory, Time, Budget."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .. import catalog
from ..errors import InputError
from ..expr import Expr, Func, Var, and_, eq, if_, wrap
from ..formulas import budget, cost, ownership, ranges
from ..frameworks import FRAMEWORKS, PRECISIONS, get_profile
from ..inputs import spec
from ..layout import LAYOUT_OK, preset_stage_ends
from ..outputs import BOUNDED_OUTPUTS, MEMORY_SOURCES, OUTPUT_BY_NAME, RANGES
from ..recipes import DEFAULT_RECIPE, MEMORY_DEFAULTS, RECIPES, get_recipe
from ..scenario import INPUT_BY_FIELD, INPUT_BY_NAME, Scenario
from ..stage_memory import PARTS, memory_steps
from . import charts, checks
from .catalogs import FRAMEWORK_DERIVED, GPU_DERIVED, MODEL_DERIVED, RECIPE_DERIVED, FrameworkTable, PriceTable, Table
from .messages import CHECK_POINTER, INPUT_CHECK_CELL, LAYOUT_POINTER, LAYOUT_ROW, longest_layout_message, message_cell
from .model import Book, Concat, IfError, IsNumber, NotAvailable, ref_text
from .rendering import (
    BOOL_FORMAT,
    catalog_lookup,
    dependencies,
    display_format,
    guarded,
    guarded_output,
    needs,
    output_formula,
    pointer_format,
    pointing,
    preset_or,
)

BUDGET_FIELDS = ("failure_frac", "experiments_frac", "experiments_usd", "data_frac", "data_usd", "people_frac",
                 "people_usd", "other_usd", "budget_usd")
TEXT_NAMES = {"Scenario_Name": "name", "Scenario_Notes": "notes"}
CHOICE_NAMES = {"Model_Preset": "model", "GPU_Type": "gpu", "Recipe_Id": "recipe", "Framework": "framework",
                "Precision": "precision", "Price_Tier": "price_tier"}


@dataclass
class Ctx:
    book: Book
    scenario: Scenario
    gpus: Table
    models: Table
    recipes: Table
    prices: PriceTable | None = None
    frameworks: FrameworkTable | None = None


def id_range(table: Table) -> str:
    """Absolute reference text of a catalog's id column (for a dropdown list)."""
    col = table.col("id")
    return ref_text(table.sheet, f"{col}{table.first_row}") + f":${col}${table.last_row}"


# what a preset fills, in the message shown when its catalog has no figure
WHAT = {"peak_tflops": "dense 16-bit peak TFLOPS", "gpu_memory_gb": "memory (GB)", "gpus_per_node": "GPUs per node",
        "params_b": "parameter count", "active_params_b": "active parameter count", "layers": "layer count", "hidden": "hidden size", "heads": "head count",
        "seq_len": "sequence length", "bytes_weights": "bytes per weight", "bytes_grads": "bytes per gradient",
        "bytes_optimizer": "optimizer bytes per parameter", "kv_heads": "key/value head count",
        "ffn_hidden": "FFN size", "vocab": "vocabulary size"}


def derived_value(ctx: Ctx, scenario: Scenario, field: str, gpu_key: str, model_key: str,
                  recipe_key: str | None = None, framework: bool = False) -> Any:
    """An input's cell content: the preset's look-up, or a typed number that overrides it.

    A field a preset fills (GPU, model, recipe) holds ``IF(preset="", value, look-up)`` so that
    choosing a preset in its dropdown changes it, and clearing the preset gives back the
    scenario's value. Where the scenario gives its own number instead of the preset's, that
    number is written: a typed override wins over the preset. With ``framework`` (the Inputs sheet's Framework and
    Precision), the fields a framework fills hold ``IF(Framework&Precision="", value, <the Frameworks sheet's>)``;
    for the bytes per parameter that is the value of ``IF(Recipe_Id="", ...)``: a picked recipe wins, as on the CLI.
    """
    value = getattr(scenario, field)
    if field in STAGE_ENDS:
        return stage_ends_value(scenario, field, model_key)
    own = value
    fw = ctx.frameworks if framework else None
    if fw is not None and (field in FRAMEWORK_DERIVED or field in RECIPE_DERIVED):
        value = framework_value(fw, scenario, field, value, ctx.recipes)
        if field in FRAMEWORK_DERIVED:
            return value
    if field in RECIPE_DERIVED and recipe_key:
        t, key, preset, column = ctx.recipes, recipe_key, scenario.recipe, RECIPE_DERIVED[field]
        catalog_value = getattr(get_recipe(preset), column) if preset else None
    elif field in GPU_DERIVED:
        t, key, preset, column = ctx.gpus, gpu_key, scenario.gpu, GPU_DERIVED[field]
        catalog_value = getattr(catalog.get_gpu(preset), column) if preset else None
    elif field in MODEL_DERIVED:
        from .catalogs import _row_value
        t, key, preset, column = ctx.models, model_key, scenario.model, MODEL_DERIVED[field]
        catalog_value = _row_value(catalog.get_model(preset), column) if preset else None
    else:
        return value
    if preset and catalog_value != own:
        return own  # the scenario's own number wins over its preset
    lookup = catalog_lookup(key, t.sheet, t.col("id"), t.col(column), t.first_row, t.last_row, WHAT[field],
                            INPUT_BY_FIELD[field].name)
    return preset_or(key, value, lookup)


def framework_value(fw: FrameworkTable, scenario: Scenario, field: str, value: Any, recipes: Table) -> Any:
    """``IF(Framework&Precision="", value, <the picked framework's figure>)``; the scenario's own number where it
    differs from its framework's (a typed override wins)."""
    if scenario.framework is not None and not (field in RECIPE_DERIVED and scenario.recipe):  # (a recipe wins)
        if get_profile(scenario.framework, scenario.precision).values()[field] != value:
            return value
    figure = fw.recipe_bytes(field, recipes) if field in RECIPE_DERIVED else fw.fact(field)
    return if_(fw.neither(), value, figure)


# The layers of the first and the last pipeline stage: with a model preset picked, the split xlcalc.layout gives that
# model on PP_Size stages (even, or uneven where PP does not divide its layers, as the planner splits Llama 3 405B).
STAGE_ENDS = ("first_stage_layers", "last_stage_layers")


def stage_ends_value(scenario: Scenario, field: str, model_key: str) -> Any:
    """First_Stage_Layers / Last_Stage_Layers: ``IF(Model_Preset="", number, <the preset's split on PP_Size>)``.

    The split is :func:`xlcalc.layout.preset_stage_ends` over ``Layers`` and ``PP_Size`` (defined names; a Scenarios
    column substitutes its own cells); a scenario whose own numbers differ from its preset's split keeps them.
    """
    value = getattr(scenario, field)
    ends = preset_stage_ends(Var("Layers"), Var("PP_Size"))
    split = ends[STAGE_ENDS.index(field)]
    if scenario.model and preset_stage_ends(scenario.layers, scenario.pp)[STAGE_ENDS.index(field)] != value:
        return value  # the scenario's own split wins over its preset's
    return preset_or(model_key, value, IfError(split, 0))  # a PP or Layers not allowed: named by the checks


def input_row(ctx: Ctx, sheet: str, row: int, field: str, value: Any) -> None:
    """Label, value (named, validated, unlocked), unit and what is allowed."""
    cell = INPUT_BY_FIELD[field]
    s = spec(cell.spec_name)
    b = ctx.book
    b.put(sheet, f"A{row}", cell.label)
    fmt = s.number_format if s.number_format != "General" else None
    if s.kind == "int":
        fmt = fmt or "#,##0"
    if s.kind == "bool":
        fmt = BOOL_FORMAT
    if cell.name in checks.LOOKED_UP_FAILING:  # a look-up's message prints as the way to Start's input check
        fmt = pointer_format(fmt)
    b.put(sheet, f"B{row}", value, "input", fmt)
    b.name(cell.name, sheet, f"B{row}")
    b.put(sheet, f"C{row}", s.unit)
    looked_up = isinstance(value, Expr) and not isinstance(value, Var)
    preset = ("GPU_Type" if field in GPU_DERIVED else "Model_Preset" if field in MODEL_DERIVED or field in STAGE_ENDS
              else "Framework and Precision" if field in FRAMEWORK_DERIVED
              else "Recipe_Id, else by Framework and Precision" if ctx.frameworks is not None else "Recipe_Id")
    how = f" Looked up by {preset}; a number typed here wins." if looked_up else ""
    b.put(sheet, f"D{row}", f"{cell.name}: {s.allowed}. {s.doc}.{how}".replace("..", "."), "note")
    b.wrap.add((sheet, f"D{row}"))
    if isinstance(value, Expr) and (chars := longest_message_in({cell.name})):  # the look-up's message wraps in B
        message_cell(b, sheet, row, "B", "B", chars)
    b.validations.append({"sheet": sheet, "at": f"B{row}", "spec": s, "label": f"{cell.label} ({cell.name})"})


def output_row(ctx: Ctx, sheet: str, row: int, name: str, varmap: dict[str, str] | None = None,
               label: str | None = None, define: bool = True, pointer: str | None = None) -> str:
    """A named result (or the same result over other cells) with its equation and source; ``pointer``: the text a
    memory result shows for a broken layout instead of the layout check's message. Every result but the layout check
    shows CHECK_POINTER for a failing input check or look-up instead of its message, which Start's input check shows
    whole (:func:`rendering.pointing`): the result's column is too narrow to print it."""
    out = OUTPUT_BY_NAME[name]
    expr, subs = output_formula(name, varmap, inline=True)
    expr = guarded_output(name, expr, varmap)
    points = name != "Layout_Check"  # the layout check's row shows a failing input's message whole
    if pointer is not None or points:
        expr = pointing(expr, pointer, checks_pointer=CHECK_POINTER if points else None)
    b = ctx.book
    b.put(sheet, f"A{row}", label or out.label)
    ref = b.put(sheet, f"B{row}", expr, "output" if define else "formula", display_format(out), subs)
    if define:
        b.name(name, sheet, f"B{row}")
    b.put(sheet, f"C{row}", out.unit)
    b.put(sheet, f"D{row}", f"{name if define else out.formula.udf_name}: {out.formula.equation}. "
                           f"Source: {out.formula.source}", "note")
    b.wrap.add((sheet, f"D{row}"))
    deps = dependencies(name).union(*(dependencies(v) | {v} for v in (varmap or {}).values() if v in OUTPUT_BY_NAME))
    if points:  # a failing look-up's message is pointed to (CHECK_POINTER), not shown
        deps = {d for d in deps if d not in checks.LOOKED_UP_FAILING}
    if chars := longest_message_in(deps):  # a catalog's message (no purchase price, rate or figure) wraps in B
        message_cell(b, sheet, row, "B", "B", chars)
    return ref


def formula_row(ctx: Ctx, sheet: str, row: int, label: str, expr: Any, unit: str, note: str,
                fmt: str | None = None, subs: Any = None) -> str:
    b = ctx.book
    b.put(sheet, f"A{row}", label)
    # a failing input check or look-up: the way to Start's input check, which shows the message whole
    ref = b.put(sheet, f"B{row}", pointing(expr, None, checks_pointer=CHECK_POINTER), "formula", fmt, subs)
    b.put(sheet, f"C{row}", unit)
    b.put(sheet, f"D{row}", note, "note")
    b.wrap.add((sheet, f"D{row}"))
    if isinstance(expr, Expr):  # a catalog's message (no purchase price, rate or figure) wraps in B
        message_cell(b, sheet, row, "B", "B", longest_message_in(needs(expr)))
    return ref


def _subs_named(*names: str) -> dict[Any, str]:
    return {OUTPUT_BY_NAME[n].expr().key(): n for n in names}


# --- Inputs ---------------------------------------------------------------------------

def inputs_sheet(ctx: Ctx) -> None:
    s, b, sc = "Inputs", ctx.book, ctx.scenario
    b.put(s, "A1", "Inputs — type in the yellow cells; everything else follows", "title")
    b.put(s, "A2", "Scenario")
    b.put(s, "B2", sc.name, "text_input")
    b.name("Scenario_Name", s, "B2")
    b.put(s, "A3", "Notes")
    b.put(s, "B3", sc.notes, "text_input")
    b.name("Scenario_Notes", s, "B3")
    gpu_ids, model_ids, recipe_ids = id_range(ctx.gpus), id_range(ctx.models), id_range(ctx.recipes)
    row = 5
    groups: dict[str, list[str]] = {}
    for cell in INPUT_BY_FIELD.values():
        if cell.field not in BUDGET_FIELDS and cell.group != "Fine-tuning":  # those on the FineTuning sheet
            groups.setdefault(cell.group if cell.group != "Prices and budget" else "Prices", []).append(cell.field)
    for group, fields in groups.items():
        b.put(s, f"A{row}", group, "group")
        row += 1
        if group == "Model and data":
            _choice_row(ctx, s, row, "Model preset (fills parameters and architecture)", "Model_Preset",
                        sc.model or "", model_ids, "a model id from the Models sheet, or empty for your own numbers")
            row += 1
        if group == "Cluster":
            _choice_row(ctx, s, row, "GPU type (fills TFLOP/s, memory, GPUs per node)", "GPU_Type",
                        sc.gpu or "", gpu_ids, "a GPU id from the GPUs sheet, or empty for your own numbers")
            row += 1
        for field in fields:
            if field == "usd_per_gpu_hour" and ctx.prices is not None:  # the tier dropdown heads the price it fills
                _choice_row(ctx, s, row, "Price tier (fills the price per GPU-hour from the Prices sheet)",
                            "Price_Tier", sc.price_tier or "", tier_range(ctx.prices),
                            "a tier from the Prices sheet (on-demand, reserved-1y, reserved-3y, spot, ...), "
                            "or empty for your own price")
                row += 1
                input_row(ctx, s, row, field, price_value(ctx, sc))
                row += 1
                continue
            if field == "capex_usd_per_gpu" and ctx.prices is not None:  # looked up by GPU_Type, as the price
                input_row(ctx, s, row, field, capex_value(ctx, sc))
                row += 1
                continue
            if field == "bytes_weights" and ctx.frameworks is not None:  # what the software fills, then the recipe
                row = framework_rows(ctx, s, row)
            if field == "bytes_weights":  # the recipe dropdown heads the three byte counts it fills
                _choice_row(ctx, s, row, "Precision recipe (fills bytes per parameter)", "Recipe_Id",
                            sc.recipe or "", recipe_ids,
                            "a recipe id from the Recipes sheet, or empty for your own numbers"
                            + (" (or the Framework's)" if ctx.frameworks is not None else ""))
                row += 1
            input_row(ctx, s, row, field, derived_value(ctx, sc, field, "GPU_Type", "Model_Preset", "Recipe_Id",
                                                        framework=True))
            row += 1
        row += 1
    b.put(s, f"A{row}", "Cells with a formula in yellow (e.g. Peak_TFLOPS, Bytes_Grads, Logits_Buffer_Bytes) are "
          "looked up from the preset, recipe or framework; type a number over them to use your own value.", "note")
    b.freeze[s] = "A5"


FRAMEWORK_FILLS = ("the bytes per parameter (the recipe it names; a picked Recipe_Id wins), Logits_Buffer_Bytes, "
                   "Optimizer_Step_Bytes, Autocast_Copy_Bytes and Grads_Freed, from the Frameworks sheet")


def framework_rows(ctx: Ctx, s: str, row: int) -> int:
    """The Framework and Precision dropdowns (names as ``--framework`` / ``--precision`` take them); the next row."""
    fw = ctx.frameworks
    assert fw is not None
    sc = ctx.scenario
    _choice_row(ctx, s, row, "Framework (fills the memory inputs of the software you train with)", "Framework",
                sc.framework or "", ref_text(fw.sheet, f"A{fw.first_row}") + f":$A${fw.last_row}",
                f"one of {', '.join(FRAMEWORKS)} (as --framework), or empty for your own numbers",
                ". It sets " + FRAMEWORK_FILLS + "; a number typed over one of them wins")
    _choice_row(ctx, s, row + 1, "Precision (with the framework)", "Precision", sc.precision or "",
                ref_text(fw.sheet, f"A{fw.precision_first}") + f":$A${fw.precision_last}",
                f"one of {', '.join(PRECISIONS)} (as --precision), or empty for the framework's usual one",
                ": " + "; ".join(f"{k} {v}" for k, v in PRECISIONS.items()) + ". The Frameworks sheet lists the "
                "precisions each framework offers")
    return row + 2


def tier_range(prices: PriceTable) -> str:
    """Absolute reference text of the Prices sheet's list of tiers (the Price_Tier dropdown)."""
    return ref_text(prices.sheet, f"A{prices.tier_first}") + f":$A${prices.tier_last}"


NO_PRICE = (": no published ", " price on the Prices sheet \u2014 type it in USD_per_GPU_Hour")  # around the tier
NO_GPU_FOR_TIER = ("Price_Tier needs a GPU_Type to look a price up: pick a GPU, or clear Price_Tier "
                   "and type a price in USD_per_GPU_Hour")


def price_lookup(prices: PriceTable, field: str, gpu: Any = None, tier: Any = None) -> Any:
    """``INDEX(Prices!<field>, MATCH(GPU_Type&"|"&Price_Tier, Prices!<key>, 0))``: a column of the Prices sheet's
    row for the chosen GPU and tier (raises/#N/A when the catalog has no rate for them)."""
    key = Concat(gpu if gpu is not None else Var("GPU_Type"), "|", tier if tier is not None else Var("Price_Tier"))
    return catalog_lookup(key, prices.sheet, prices.col("key"), prices.col(field), prices.first_row,
                          prices.last_row)


def price_value(ctx: Ctx, scenario: Scenario) -> Any:
    """USD_per_GPU_Hour's cell: the Prices sheet's rate for GPU_Type at Price_Tier, or the scenario's number.

    ``IF(Price_Tier="", number, IF(GPU_Type="", <message>, IFERROR(<look-up>, <message>)))``: with no tier
    picked the typed number stands; a GPU and tier the catalog has no rate for reads "<gpu>: no published
    <tier> price on the Prices sheet - type it in USD_per_GPU_Hour" (never #N/A). A number typed over the
    cell wins, as over any look-up.
    """
    assert ctx.prices is not None
    gpu, tier = Var("GPU_Type"), Var("Price_Tier")
    missing = Concat(gpu, NO_PRICE[0], tier, NO_PRICE[1])
    looked_up = IfError(price_lookup(ctx.prices, "usd_per_gpu_hour"), missing)
    return if_(eq(tier, ""), scenario.usd_per_gpu_hour, if_(eq(gpu, ""), NO_GPU_FOR_TIER, looked_up))


def _chunks(text: str, size: int = 200) -> list[str]:
    """A long text in pieces that Excel accepts as string constants in a formula (at most 255 characters each)."""
    return [text[i:i + size] for i in range(0, len(text), size)]


def capex_value(ctx: Ctx, scenario: Scenario, gpu_key: str = "GPU_Type") -> Any:
    """Capex_USD_per_GPU's cell: the Prices sheet's purchase price for GPU_Type, or the scenario's typed number.

    ``IFERROR(INDEX/MATCH(GPU_Type, <purchase prices>), <message>)``: a GPU with no purchase price (or none chosen)
    reads the sentence of xlcalc.catalog.missing_capex, never #N/A. A number typed over the cell wins, as over any
    look-up; a scenario's own number (one its GPU's catalog price does not give) is written as that number.
    """
    assert ctx.prices is not None
    p = ctx.prices
    typed = scenario.capex_usd_per_gpu
    buy = catalog.purchase_price(scenario.gpu) if scenario.gpu else None
    if typed is not None and (buy is None or buy.capex_usd_per_gpu != typed):
        return typed
    gpu = Var(gpu_key)
    head, tail = catalog.missing_capex_detail("\0").split("\0")
    line = str(InputError("capex_usd_per_gpu", None, "a purchase price per GPU in USD", "\1"))
    start, end = line.split("\1")
    missing = Concat(*_chunks(start + head), gpu, *_chunks(tail + end))
    no_gpu = Concat(*_chunks(str(catalog.missing_capex(None))))
    lookup = catalog_lookup(gpu, p.sheet, "A", "B", p.capex_first, p.capex_last)
    return if_(eq(gpu, ""), no_gpu, IfError(lookup, missing))


def capex_used(ctx: Ctx) -> Any:
    """The purchase price the sheet used, in words (as the CLI states it, xlcalc.catalog.capex_note):

    "$30,000 per GPU, price catalog <id> (<date>)", "$25,000 per GPU, typed", or the cell's message when it holds no
    number (the GPU has no purchase price).
    """
    capex = Var("Capex_USD_per_GPU")
    amount = Concat("$", Func("FIXED", (capex, wrap(0))), " per GPU, ")
    if ctx.prices is None:
        return if_(IsNumber(capex), Concat(amount, "typed"), capex)
    p = ctx.prices
    gpu = Var("GPU_Type")
    rate = IfError(catalog_lookup(gpu, p.sheet, "A", "B", p.capex_first, p.capex_last), -1)
    from_catalog = Concat("price catalog ", catalog_lookup(gpu, p.sheet, "A", "D", p.capex_first, p.capex_last), " (",
                          catalog_lookup(gpu, p.sheet, "A", "C", p.capex_first, p.capex_last), ")")
    return if_(IsNumber(capex), Concat(amount, if_(eq(capex, rate), from_catalog, "typed")), capex)


def price_used(ctx: Ctx) -> Any:
    """The price and tier the sheet used, in words (as the CLI states it, xlcalc.scenario.price_note):

    "$4.916/GPU-hour, capacity-block tier, price catalog <id> (<date>)", "$3.1/GPU-hour, typed over the spot
    price", "$2/GPU-hour, typed (no tier)", or the price cell's message when it holds no number.
    """
    usd, tier = Var("USD_per_GPU_Hour"), Var("Price_Tier")
    if ctx.prices is None:
        return Concat("$", Func("ROUND", (usd, wrap(3))), "/GPU-hour")
    catalog_rate = IfError(price_lookup(ctx.prices, "usd_per_gpu_hour"), -1)
    from_catalog = Concat(tier, " tier, price catalog ", price_lookup(ctx.prices, "id"), " (",
                          price_lookup(ctx.prices, "date"), ")")
    which = if_(eq(tier, ""), "typed (no tier)",
                if_(eq(usd, catalog_rate), from_catalog, Concat("typed over the ", tier, " price")))
    return if_(IsNumber(usd), Concat("$", Func("ROUND", (usd, wrap(3))), "/GPU-hour, ", which), usd)


def _choice_row(ctx: Ctx, sheet: str, row: int, label: str, name: str, value: str, list_ref: str, allowed: str,
                more: str = "") -> None:
    b = ctx.book
    b.put(sheet, f"A{row}", label)
    b.put(sheet, f"B{row}", value, "text_input")
    b.name(name, sheet, f"B{row}")
    b.put(sheet, f"D{row}", f"{name}: {allowed}{more}", "note")
    b.validations.append({"sheet": sheet, "at": f"B{row}", "list": "=" + list_ref, "label": f"{label} ({name})",
                          "allowed": allowed})



# A cell that can show a message (a formula's text) wraps at the top of its cell, merged across the free columns
# beside it, with the row's other cells at the top too; LibreOffice does not grow a row for a wrapped formula on load,
# so its row is given the height of the longest message it can show: its lines at one character per unit of column
# width (message_lines), LINE_POINTS each.
PURCHASE_PRICE_USED = "Purchase price used: "


@functools.cache
def longest_message() -> int:
    """The longest sentence a catalog look-up puts in a cell: the missing purchase price's (for any GPU of the
    catalog, or none chosen), longer than the rental price's and a missing figure's, and than a purchase price
    stated in words."""
    texts = [str(catalog.missing_capex(None))] + [str(catalog.missing_capex(g.id)) for g in catalog.gpus()]
    texts += [catalog.capex_note(p) for p in catalog.prices() if p.capex_usd_per_gpu is not None]
    return max(len(t) for t in texts)


@functools.cache
def longest_price_message() -> int:
    """The longest message the price cell (USD_per_GPU_Hour) can show: no GPU for the tier, or no rate of the
    catalog's for a GPU at a tier."""
    ids = [g.id for g in catalog.gpus()]
    tiers = [p.tier for p in catalog.prices() if p.tier]
    return max(len(NO_GPU_FOR_TIER), max(map(len, ids)) + len("".join(NO_PRICE)) + max(map(len, tiers)))


def missing_figure_text(field: str, sheet: str) -> str:
    """What follows the id in a preset look-up's message where its catalog row has no figure for ``field``:
    ": no published <what> on the <sheet> sheet - type it in <Name>" (model.Lookup.missing_text)."""
    return f": no published {WHAT[field]} on the {sheet} sheet \u2014 type it in {INPUT_BY_FIELD[field].name}"


@functools.cache
def missing_figures() -> dict[str, int]:
    """Input name -> the longest message its preset look-up shows for a figure a catalog leaves unpublished
    ("<id>: no published <what> on the <sheet> sheet - type it in <Name>"), over the catalog rows without that
    figure; an input whose figure every row gives has no entry (the catalog sheets are protected)."""
    from .catalogs import _row_value

    out: dict[str, int] = {}
    for fields, sheet, rows, value in (
            (GPU_DERIVED, "GPUs", catalog.gpus(), getattr),
            (MODEL_DERIVED, "Models", catalog.models(), _row_value),
            (RECIPE_DERIVED, "Recipes", [get_recipe(r) for r in RECIPES], getattr)):
        for field, column in fields.items():
            if field not in WHAT or field not in INPUT_BY_FIELD:
                continue
            ids = [r.id for r in rows if value(r, column) is None]
            if ids:
                name = INPUT_BY_FIELD[field].name
                out[name] = max(out.get(name, 0), max(map(len, ids)) + len(missing_figure_text(field, sheet)))
    return out


def longest_message_in(deps: Any) -> int:
    """The longest message a catalog look-up puts in a cell that depends on the defined names ``deps`` (0: none): a
    missing purchase price's sentence, a missing rental rate's, or a figure's a catalog leaves unpublished, as the
    inputs among ``deps`` can hold them."""
    figures = missing_figures()
    return max([longest_message()] * ("Capex_USD_per_GPU" in deps) + [longest_price_message()] *
               ("USD_per_GPU_Hour" in deps) + [figures[n] for n in deps if n in figures] + [0])


def _header_row(b, s: str, row: int, names: tuple[str, ...]) -> None:
    """Column headings of a sheet's A-D table."""
    for col, name in zip("ABCD", names):
        b.put(s, f"{col}{row}", name, "header")

# --- Memory ----------------------------------------------------------------------------

def memory_sheet(ctx: Ctx) -> dict[str, int]:
    """Memory per GPU by part and pipeline stage (first and last), against the GPU's memory.

    Every cell is a step of the one stage memory model (xlcalc.stage_memory) under its defined name; a layout
    that does not split into whole pieces shows the layout check's message whole in its row (B4, wrapped across
    B:D) and LAYOUT_POINTER, the way to it, in every memory cell.
    """
    s, b = "Memory", ctx.book
    b.put(s, "A1", "Memory per GPU, by part and pipeline stage", "title")
    b.put(s, "A2", "The first stage holds the input embedding and the most micro-batches in flight, the last the "
          "output layer and the logits; the GPU of the heavier stage sets the memory. GB = 1e9 bytes.", "note")
    layout_row(ctx, s, LAYOUT_ROW)
    output_row(ctx, s, 5, "DP_Size", pointer=LAYOUT_POINTER)
    _header_row(b, s, 7, ("per GPU", "first stage", "last stage", "formula and source"))
    rows: dict[str, int] = {}
    row = 8
    steps = {st.name: st for st in memory_steps(MEMORY_SOURCES, capacity=Var("GPU_Memory_GB"), layout_dp=1)}
    stage_rows: list[tuple[str, Any, Any]] = [("Layers on the stage", "Stage_Layers_First", "Stage_Layers_Last"),
                  ("Parameters of the stage (billions)", "Stage_Params_B_First", "Stage_Params_B_Last")]
    part_names = {st.part: st.name for st in steps.values() if st.part and st.of == "First"}
    for key, label in PARTS:
        if key == "comm_buffers":
            stage_rows.append((label, Var("Comm_Buffer_GB"), Var("Comm_Buffer_GB")))
        elif key == "other":
            stage_rows.append((label, Var("Overhead_GB"), Var("Overhead_GB")))
        elif key == "recompute_working":
            stage_rows.append((label, "Mem_Recompute_GB", Var("Mem_Recompute_GB")))
        else:
            stage_rows.append((label, part_names[key], part_names[key].replace("_First_", "_Last_")))
    stage_rows.append(("Total per GPU", "Mem_First_Total_GB", "Mem_Last_Total_GB"))
    for label, first, last in stage_rows:
        b.put(s, f"A{row}", label, "header" if label.startswith("Total") else "label")
        note = ""
        for col, item in (("B", first), ("C", last)):
            if isinstance(item, str):
                out = OUTPUT_BY_NAME[item]
                expr, subs = output_formula(item, None, inline=True)
                b.put(s, f"{col}{row}", pointing(guarded_output(item, expr), LAYOUT_POINTER,
                                                 checks_pointer=CHECK_POINTER), "output",
                      out.number_format, subs)
                b.name(item, s, f"{col}{row}")
                note = f"{out.formula.udf_name}: {out.formula.equation}. Source: {out.formula.source}"
            else:
                b.put(s, f"{col}{row}", _guarded(item), "formula", "#,##0.00")
                note = note or f"{item.name} from the Inputs sheet"
        b.put(s, f"D{row}", note, "note")
        rows[label] = row
        row += 1
    rows["Weights"], rows["Other"] = rows["Weights"], rows[PARTS[-1][1]]
    row += 1
    b.put(s, f"A{row}", "Against the GPU", "group")
    row += 1
    output_row(ctx, s, row, "Mem_Total_GB", pointer=LAYOUT_POINTER)
    formula_row(ctx, s, row + 1, "GPU memory", guarded(Var("GPU_Memory_GB"), {"GPU_Memory_GB"}), "GB",
                "GPU_Memory_GB from the Inputs sheet",
                "#,##0.00")
    output_row(ctx, s, row + 2, "Fit_Margin_GB", pointer=LAYOUT_POINTER)
    output_row(ctx, s, row + 3, "Fit_Verdict", pointer=LAYOUT_POINTER)
    output_row(ctx, s, row + 4, "Fits_GPU", pointer=LAYOUT_POINTER)
    b.rules.append((s, f"B{row + 4}", "good_if_true"))
    output_row(ctx, s, row + 5, "Fit_Capacity_GB", pointer=LAYOUT_POINTER)
    output_row(ctx, s, row + 6, "Mem_Static_GB", pointer=LAYOUT_POINTER)
    output_row(ctx, s, row + 7, "Mem_Activations_GB", pointer=LAYOUT_POINTER)
    output_row(ctx, s, row + 8, "Max_Micro_Batch", pointer=LAYOUT_POINTER)
    row += 10
    b.put(s, f"A{row}", "Working (one layer, shared by the stages)", "group")
    row += 1
    for name in ("Layer_Params_B", "Layer_Act_Bytes", "Layer_Act_Bytes_No_Recompute", "Inflight_First",
                 "Inflight_Last", "Mem_First_Optimizer_Step_GB", "Mem_Last_Optimizer_Step_GB", "Layer_Autocast_Copy_Bytes",
                 "Layer_Autocast_Copy_Bytes_No_Recompute"):
        output_row(ctx, s, row, name, pointer=LAYOUT_POINTER)
        row += 1
    b.put(s, f"A{row + 1}", f"Defaults (recipe {DEFAULT_RECIPE}, other memory {MEMORY_DEFAULTS['overhead_gb']:g} GB, "
          "logits, buckets): xlcalc.recipes — the same for the CLI, the planner and the worksheet functions.", "note")
    b.freeze[s] = "A8"
    return rows


def _guarded(expr: Any) -> Any:
    """An input shown on the Memory sheet: CHECK_POINTER instead of the number for a failing input check, else
    LAYOUT_POINTER for a broken layout (the precedence of the memory results' guards)."""
    return pointing(guarded(if_(eq(Var("Layout_Check"), LAYOUT_OK), expr, LAYOUT_POINTER), needs(expr)),
                    LAYOUT_POINTER, checks_pointer=CHECK_POINTER)


def layout_row(ctx: Ctx, s: str, row: int) -> None:
    """Layout_Check in B (merged across B:D, wrapped, its row tall enough for the longest message), its formula and
    source in D of the row above."""
    b = ctx.book
    output_row(ctx, s, row, "Layout_Check", label="Layout check (OK = every piece whole)")
    cells = b.sheets[s]
    del cells[f"C{row}"]  # the unit ("text") under the merged message
    cells[f"D{row - 1}"] = cells.pop(f"D{row}")
    b.wrap.discard((s, f"D{row}"))
    b.wrap.add((s, f"D{row - 1}"))
    message_cell(b, s, row, "B", "D", longest_layout_message())


# --- Time ---------------------------------------------------------------------------------

def time_sheet(ctx: Ctx) -> None:
    s, b = "Time", ctx.book
    b.put(s, "A1", "Compute and time", "title")
    b.put(s, "A2", "C = 6ND; days = C / (peak x GPUs x MFU); the deadline rounding follows seed 002 §7.3: "
          "exact GPUs -> whole TP x PP replicas -> + spare -> whole nodes.", "note")
    _header_row(b, s, 4, ("", "value", "unit", "formula and source"))
    output_row(ctx, s, 5, "Train_FLOPs")
    output_row(ctx, s, 6, "Train_Days")
    output_row(ctx, s, 7, "GPU_Hours")
    b.put(s, "A9", "GPUs for a deadline", "group")
    formula_row(ctx, s, 10, "Deadline", guarded(Var("Deadline_Days"), {"Deadline_Days"}), "days", "Deadline_Days from the Inputs sheet", "#,##0.0")
    output_row(ctx, s, 11, "GPUs_for_Deadline")
    output_row(ctx, s, 12, "Replicas_for_Deadline")
    output_row(ctx, s, 13, "GPUs_with_Spare")
    output_row(ctx, s, 14, "GPUs_to_Provision")
    output_row(ctx, s, 15, "Train_Days", {"N_GPUs": "GPUs_to_Provision"},
               label="Days on the GPUs to provision", define=False)
    b.freeze[s] = "A5"


# --- Budget -----------------------------------------------------------------------------------

# Cost by category (seed 003): every line of the total, in the order the pie chart shows them.
BUDGET_LINES = ("Compute_Cost_USD", "Power_Cost_USD", "Failures_USD", "Experiments_USD",
                "Data_Line_USD", "People_Line_USD", "other_usd")
# Lines given as a share of compute, an amount, or both (seed 003): the inputs above the lines.
BUDGET_SHARES = ("experiments_frac", "experiments_usd", "data_frac", "data_usd", "people_frac", "people_usd")
OVER_TIME_MONTHS = (0, 3, 6, 9, 12, 18, 24, 30, 36, 48, 60)


CHART_DATA_HEADING = ("Chart data for the own vs rent chart: the table's numbers, #N/A where it shows a message "
                      "(a chart plots text as $0, #N/A as no point)")
CHART_DATA_COLS = ("K", "L", "M")  # months, rent, own: grouped and hidden beside the table, never printed


def chart_data_block(b: Book, s: str, first: int, last: int) -> tuple[int, int]:
    """The own vs rent table (rows first..last: months, rent, own in A, B, C) as its chart reads it, in hidden columns
    beside it: a number stays, a message becomes #N/A. Returns the block's first and last data rows."""
    months_col, rent_col, own_col = CHART_DATA_COLS
    b.put(s, f"{months_col}{first - 2}", CHART_DATA_HEADING, "group")
    for col, head in zip(CHART_DATA_COLS, ("months", "rent (USD)", "own (USD)")):
        b.put(s, f"{col}{first - 1}", head, "header")
    for row in range(first, last + 1):
        b.put(s, f"{months_col}{row}", Var(ref_text(s, f"A{row}")), "formula", "0")
        for src, col in (("B", rent_col), ("C", own_col)):
            x = Var(ref_text(s, f"{src}{row}"))
            b.put(s, f"{col}{row}", Func("IF", (IsNumber(x), x, NotAvailable())), "formula", '"$"#,##0')
    b.hidden_columns.append((s, months_col, own_col))
    return first, last


def budget_sheet(ctx: Ctx) -> dict[str, Any]:
    """Goodput, cost by category, estimate vs budget, own vs rent and its table over time.

    Returns the rows the money charts plot (see :mod:`xlcalc.workbook.charts`).
    """
    s, b, sc = "Budget", ctx.book, ctx.scenario
    b.put(s, "A1", "Budget — finance may edit the yellow lines", "title")
    b.put(s, "A2", "Rent = GPU-hours x price; own = depreciation and hosting (over utilisation) + electricity. "
          "Failures come from goodput (GPU MTBF, checkpoint and restart times on Inputs) unless Use_Typed_Tax "
          "is TRUE. Categories follow seed 003.", "note")
    formula_row(ctx, s, 3, "Price per GPU-hour used", guarded(Var("USD_per_GPU_Hour"), {"USD_per_GPU_Hour"}),
                "USD/GPU-hour", "", '"$"#,##0.000')
    b.put(s, "D3", Concat(price_used(ctx), ". Pick Price_Tier or type over USD_per_GPU_Hour on Inputs."), "formula")
    b.put(s, "E1", "Money inputs")
    b.put(s, "F1", checks.guard("OK: every money input is within its bounds", BOUNDED), "formula")
    # a looked-up money input's message that fails its check (the price: no rate at the tier) wraps across F:I
    message_cell(b, s, 1, "F", "I", longest_message_in({n for n in BOUNDED if n in checks.LOOKED_UP_FAILING}))
    b.put(s, "A4", "Failures and checkpoints", "group")
    output_row(ctx, s, 5, "Cluster_MTBF_H")
    output_row(ctx, s, 6, "Ckpt_Interval_H")
    output_row(ctx, s, 7, "Goodput")
    input_row(ctx, s, 8, "failure_frac", sc.failure_frac)
    output_row(ctx, s, 9, "Failure_Frac_Used")
    output_row(ctx, s, 10, "Wall_Days")
    b.put(s, "A12", "Other lines: a share of compute and power, an amount, or both (seed 003)", "group")
    row = 12
    for field in BUDGET_SHARES:
        row += 1
        input_row(ctx, s, row, field, getattr(sc, field))
    row += 2
    _header_row(b, s, row, ("line", "USD", "unit", "formula and source"))
    first = row = row + 1
    for line in BUDGET_LINES:
        if line in INPUT_BY_FIELD:
            input_row(ctx, s, row, line, getattr(sc, line))
        else:
            output_row(ctx, s, row, line)
        row += 1
    last = row - 1
    output_row(ctx, s, row, "Total_Cost_USD")
    output_row(ctx, s, row + 1, "USD_per_M_Tokens")
    row += 3
    b.put(s, f"A{row}", "Estimate vs budget", "group")
    input_row(ctx, s, row + 1, "budget_usd", sc.budget_usd)
    output_row(ctx, s, row + 2, "Budget_Left_USD")
    b.rules.append((s, f"B{row + 2}", "bad_if_negative"))
    row += 4
    b.put(s, f"A{row}", "Own vs rent (the clean run; failures and the other lines come on top of either)", "group")
    b.put(s, f"D{row}", Concat(PURCHASE_PRICE_USED, capex_used(ctx)), "formula")
    message_cell(b, s, row, "D", "D", len(PURCHASE_PRICE_USED) + longest_message())
    over_time_note = (f"RENT_OVER_MONTHS_USD: {ownership.rent_over_months_usd.equation}; "
                      f"OWN_OVER_MONTHS_USD: {ownership.own_over_months_usd.equation}")
    for name in ("Rent_Cost_USD", "Own_Cost_USD", "Own_USD_per_GPU_Hour", "Breakeven_Utilisation",
                 "Breakeven_Months", "Capex_per_GPU_All_In", "Hardware_Capex_USD", "KW_per_GPU_All_In",
                 "Facility_MW", "Racks_Needed"):
        row += 1
        output_row(ctx, s, row, name)  # a message wraps in the result's column (its unit and note beside it)
    row += 2
    b.put(s, f"A{row}", "Own vs rent over time (cumulative cash for the cluster at its utilisation)", "group")
    b.put(s, f"D{row}", over_time_note, "note")  # the own column spans C:D below, where a message wraps
    b.wrap.add((s, f"D{row}"))
    row += 1
    _header_row(b, s, row, ("months", "rent (USD)", "own (USD)"))
    b.merges.append((s, f"C{row}:D{row}"))
    t_first = row + 1
    for months in OVER_TIME_MONTHS:
        row += 1
        b.put(s, f"A{row}", months, "formula", "0")
        rent = ownership.rent_over_months_usd(
            n_gpus=Var("N_GPUs"), usd_per_gpu_hour=Var("USD_per_GPU_Hour"), months=Var(ref_text(s, f"A{row}")),
            utilisation=Var("Utilisation"))
        b.put(s, f"B{row}", pointing(guarded(rent, needs(rent)), None, checks_pointer=CHECK_POINTER), "formula",
              '"$"#,##0')
        message_cell(b, s, row, "B", "B", longest_message_in(needs(rent)))  # no rental rate: its sentence
        own = ownership.own_over_months_usd(
            n_gpus=Var("N_GPUs"), capex_usd_per_gpu=Var("Capex_per_GPU_All_In"), kw_per_gpu=Var("KW_per_GPU_All_In"),
            pue=Var("PUE"), usd_per_kwh=Var("Own_USD_per_kWh"), kw_per_rack=Var("KW_per_Rack"),
            usd_per_rack_month=Var("USD_per_Rack_Month"), months=Var(ref_text(s, f"A{row}")), utilisation=Var("Utilisation"))
        b.put(s, f"C{row}", pointing(guarded(own, needs(own)), None, checks_pointer=CHECK_POINTER), "formula",
              '"$"#,##0')
        message_cell(b, s, row, "C", "D", longest_message())  # a missing purchase price's sentence
    t_last = row
    chart_data = chart_data_block(b, s, t_first, t_last)
    row += 2
    b.put(s, f"A{row}", "Ranges: one input at a time at its low and high end (multipliers on Inputs)", "group")
    row += 1
    for col, head in zip("ABCDEFGHI", ("input", "low", "high", "cost at low", "cost at high", "change at low",
                                        "change at high", "days at low", "days at high")):
        b.put(s, f"{col}{row}", head, "header")
    r_first = row + 1
    for field, name, low_x, high_x, f in RANGES:
        row += 1
        out = OUTPUT_BY_NAME["Total_Cost_USD"]
        fmt = spec(INPUT_BY_FIELD[field].spec_name).number_format
        b.put(s, f"A{row}", INPUT_BY_FIELD[field].label)
        for col, mult in (("B", low_x), ("C", high_x)):
            end = f(base_value=Var(name), range_factor=Var(INPUT_BY_FIELD[mult].name))
            b.put(s, f"{col}{row}", range_checked(low_x, high_x, pointing(guarded(end, needs(end)), None,
                                                                   checks_pointer=CHECK_POINTER)), "formula",
                  fmt if fmt != "General" else "#,##0.00")
            message_cell(b, s, row, col, col, longest_message_in(needs(end)))
        for val_col, cost_col, change_col, days_col in (("B", "D", "F", "H"), ("C", "E", "G", "I")):
            # the range's end stands for the input; every other looked-up input is checked by name
            varmap = {name: ref_text(s, f"{val_col}{row}")}
            expr, subs = output_formula("Total_Cost_USD", varmap)
            b.put(s, f"{cost_col}{row}", range_checked(low_x, high_x, pointing(
                guarded_output("Total_Cost_USD", expr, varmap, {name}), None, checks_pointer=CHECK_POINTER)),
                "formula", out.number_format, subs)
            change = ranges.cost_change_usd(total_usd=Var(ref_text(s, f"{cost_col}{row}")),
                                            base_usd=Var("Total_Cost_USD"))
            b.put(s, f"{change_col}{row}", range_checked(low_x, high_x, pointing(
                guarded(change, needs(change) | dependencies("Total_Cost_USD")), None, checks_pointer=CHECK_POINTER)),
                "formula", '"$"#,##0;-"$"#,##0')
            expr, subs = output_formula("Wall_Days", varmap)
            b.put(s, f"{days_col}{row}", range_checked(low_x, high_x, pointing(
                guarded_output("Wall_Days", expr, varmap, {name}), None, checks_pointer=CHECK_POINTER)),
                "formula", "#,##0.0", subs)
        for cols, result in (("DEFG", "Total_Cost_USD"), ("HI", "Wall_Days")):  # a catalog's message wraps
            for col in cols:
                message_cell(b, s, row, col, col, longest_message_in(dependencies(result)))
    r_last = row
    row = budget_first(ctx, row + 2)
    b.freeze[s] = "A5"
    rows = {"lines": (first, last), "over_time": (t_first, t_last), "chart_data": chart_data,
            "ranges": (r_first, r_last)}
    b.charts.append(lambda wb: charts.cost_chart(wb, *rows["lines"]))
    b.charts.append(lambda wb: charts.own_vs_rent_chart(wb, *rows["over_time"], *rows["chart_data"],
                                                          CHART_DATA_COLS))
    b.charts.append(lambda wb: charts.tornado_chart(wb, *rows["ranges"]))
    return rows


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
    b.put(s, f"D{row}", "Budget_USD (above), Deadline_Days, GPU_Type (Peak_TFLOPS), MFU and Price_Tier "
          "(USD_per_GPU_Hour) on Inputs; owned: Own_USD_per_GPU_Hour (own vs rent above).", "note")
    b.wrap.add((s, f"D{row}"))
    row += 1
    _header_row(b, s, row, ("", "rent", "own", "formula and source"))
    row += 1
    b.put(s, f"A{row}", "Price of a busy GPU-hour (USD)")
    for col, price in (("B", "USD_per_GPU_Hour"), ("C", "Own_USD_per_GPU_Hour")):
        b.put(s, f"{col}{row}", pointing(guarded(Var(price), needs(Var(price))), None, checks_pointer=CHECK_POINTER),
              "formula", '"$"#,##0.000')
        message_cell(b, s, row, col, col, longest_message_in(needs(Var(price))))
    b.put(s, f"D{row}", "USD_per_GPU_Hour (Inputs); OWN_USD_PER_GPU_HOUR: "
          f"{ownership.own_usd_per_gpu_hour.equation}", "note")
    b.wrap.add((s, f"D{row}"))
    flops_at: dict[str, str] = {}
    for label, f, fmt in BUDGET_FIRST_ROWS:
        row += 1
        b.put(s, f"A{row}", label)
        b.wrap.add((s, f"A{row}"))  # a label longer than its column wraps in the row (as tall as its message)
        for col, price in (("B", "USD_per_GPU_Hour"), ("C", "Own_USD_per_GPU_Hour")):
            expr = budget_first_expr(f, price)
            subs = {budget_first_expr(budget.budget_compute_flops, price).key(): flops_at[price]} \
                if price in flops_at else None
            ref = b.put(s, f"{col}{row}", pointing(guarded(expr, needs(expr)), None, checks_pointer=CHECK_POINTER),
                        "formula", fmt, subs)
            message_cell(b, s, row, col, col, longest_message_in(needs(expr)))  # the price's message, wrapped
            if f is budget.budget_compute_flops:
                flops_at[price] = ref
        b.put(s, f"D{row}", f"{f.udf_name}: {f.equation}. Source: {f.source}", "note")
        b.wrap.add((s, f"D{row}"))
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


# --- Start -----------------------------------------------------------------------------------------

def plan_title(ctx: Ctx, ref: Any = None) -> Concat:
    """A plan's title built from its inputs (never a stale or contradicting typed title).

    ``ref`` maps defined names to the cells of another column (Scenarios); default: the Inputs sheet.
    """
    def v(name: str) -> Var:
        return Var((ref or {}).get(name, name))

    g = ctx.gpus
    gpu = v("GPU_Type")
    gpu_name = IfError(catalog_lookup(gpu, g.sheet, g.col("id"), g.col("name"), g.first_row, g.last_row), gpu)
    gpu_text = if_(eq(gpu, ""), Concat("GPUs of ", v("Peak_TFLOPS"), " TFLOP/s"), gpu_name)
    usd = v("USD_per_GPU_Hour")  # a price tier with no rate leaves a message there, not a number
    price = if_(IsNumber(usd), Concat("$", Func("ROUND", (usd, wrap(2))), " per GPU-hour"), "no price per GPU-hour")
    m = ctx.models
    model = v("Model_Preset")  # the model picked (its catalog name), or none: the typed architecture
    model_name = IfError(catalog_lookup(model, m.sheet, m.col("id"), m.col("name"), m.first_row, m.last_row), model)
    model_text = if_(eq(model, ""), "", Concat(model_name, ", "))
    return Concat(model_text, Func("ROUND", (v("Params_B"), wrap(1))), "B parameters, ",
                  Func("ROUND", (v("Tokens_T"), wrap(2))),
                  "T tokens on ", v("N_GPUs"), " x ", gpu_text, " at MFU ", Func("ROUND", (v("MFU") * 100, wrap(1))),
                  "%, ", price)


CHECKED = ("Peak_TFLOPS", "GPU_Memory_GB", "GPUs_per_Node", "Params_B", "Seq_Len", "Hidden", "Layers", "Heads",
           "Bytes_Weights", "Bytes_Grads", "Bytes_Optimizer", "USD_per_GPU_Hour")
ALL_CLEAR = "OK: every key result is computed"  # the master check when every check passes
KEY_CHECK = ("Train_Days", "GPUs_to_Provision", "Total_Cost_USD")
# The money inputs whose bounds the sheets check (a value pasted or written past the cell's validation): budget,
# prices, owning, failures and checkpoints. Each out of bounds gives "<Name> = <value> is not allowed: <Name> must
# be <what is allowed>", the words of xlcalc.errors.InputError.
MONEY_GROUPS = ("Prices and budget", "Owning the hardware", "Failures and checkpoints")
BOUNDED = tuple(c.name for c in INPUT_BY_FIELD.values() if c.group in MONEY_GROUPS
                and spec(c.spec_name).kind in ("float", "int"))


def input_check() -> Any:
    """The master check: the first input whose check fails (its cell and why, or a looked-up input's message), the
    layout check with the cell it blames, an inverted range, a result past its bound, else OK or a hint."""
    ok: Any = if_(and_(*(IsNumber(Var(n)) for n in KEY_CHECK)), ALL_CLEAR,
                  "A result cannot be computed: check the yellow cells on the Inputs sheet (a number is missing)")
    for name in reversed(BOUNDED_OUTPUTS):  # a result past its bound: its message, naming the inputs
        ok = if_(IsNumber(Var(name)), ok, IfError(Var(name), ok))
    for _field, _name, low_x, high_x, _f in reversed(RANGES):  # an inverted range: the scenario's own message
        ok = if_(range_inverted(low_x, high_x), range_message(low_x, high_x), ok)
    return checks.master(ok)  # every input's check (Checks sheet), then the layout, then the above


def key_result(name: str, check: str) -> Any:
    """A result as the summary shows it: the number, or the message of a looked-up input it needs.

    A result waits for each looked-up input it depends on to be a number (a catalog gap holds a
    message, and a comparison with text would give a silently wrong TRUE/FALSE), then shows its
    value, or the input check's message in place of an error value.
    """
    if name not in OUTPUT_BY_NAME:  # an input: its value, or its check's message
        return guarded(Var(name), {name})
    deps = dependencies(name)
    expr: Any = IfError(Var(name), Var(check))  # the named result shows a failing input's message itself
    # the message its cell points to, whole
    expr = if_(IfError(eq(Var(name), CHECK_POINTER), False), Var(check), expr)
    if OUTPUT_BY_NAME[name].guarded:  # a memory result
        expr = if_(IfError(eq(Var(name), LAYOUT_POINTER), False), Var("Layout_Check"), expr)
    for dep in reversed([n for n in CHECKED if n in deps]):
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
    row = 5
    b.put(s, f"B{row}", "Key results", "group")
    for name, label in KEY_RESULTS:
        row += 1
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

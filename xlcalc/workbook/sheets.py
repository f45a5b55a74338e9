"""The planning sheets' shared rooms: the context, the input, result and formula rows, the Inputs sheet, the
look-ups of presets, prices and purchase prices, the messages a cell can show and the plan's title. The sheets
themselves: start.py (Start), memory_sheets.py (Memory, Time), budget_sheet.py (Budget)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .. import catalog
from ..errors import InputError
from ..expr import Expr, Func, Var, eq, if_, round_, wrap
from ..frameworks import FRAMEWORKS, PRECISIONS, get_profile
from ..inputs import spec
from ..layout import preset_stage_ends
from ..outputs import BOUNDED_OUTPUTS, OUTPUT_BY_NAME, bound_short
from ..recipes import RECIPES, get_recipe
from ..scenario import INPUT_BY_FIELD, STEP_GROUP, Scenario
from . import checks
from .catalogs import FRAMEWORK_DERIVED, GPU_DERIVED, MODEL_DERIVED, RECIPE_DERIVED, FrameworkTable, PriceTable, Table
from .messages import CHECK_POINTER, message_cell
from .model import Book, Concat, IfError, IsNumber, column_range, missing_text
from .rendering import (
    BOOL_FORMAT,
    catalog_lookup,
    dependencies,
    display_format,
    guarded_output,
    needs,
    output_formula,
    pointed,
    pointer_format,
    pointing,
    preset_or,
)

BUDGET_FIELDS = ("failure_frac", "experiments_frac", "experiments_usd", "data_frac", "data_usd", "people_frac",
                 "people_usd", "other_usd", "budget_usd")


@dataclass
class Ctx:
    book: Book
    scenario: Scenario
    gpus: Table
    models: Table
    recipes: Table
    prices: PriceTable
    frameworks: FrameworkTable


def id_range(table: Table) -> str:
    """Absolute reference text of a catalog's id column (for a dropdown list)."""
    return column_range(table.sheet, table.col("id"), table.first_row, table.last_row)


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
    if field in STAGE_ENDS:
        return stage_ends_value(scenario, field, model_key)
    own = value = getattr(scenario, field)
    if framework and (field in FRAMEWORK_DERIVED or field in RECIPE_DERIVED):
        value = framework_value(ctx.frameworks, scenario, field, value, ctx.recipes)
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
    split = preset_stage_ends(Var("Layers"), Var("PP_Size"))[STAGE_ENDS.index(field)]
    if scenario.model and preset_stage_ends(scenario.layers, scenario.pp)[STAGE_ENDS.index(field)] != value:
        return value  # the scenario's own split wins over its preset's
    return preset_or(model_key, value, IfError(split, 0))  # a PP or Layers not allowed: named by the checks


def input_row(ctx: Ctx, sheet: str, row: int, field: str, value: Any, listed: str | None = None) -> None:
    """Label, value (named, validated, unlocked), unit and what is allowed; ``listed``: the range of a sheet that
    lists the allowed values (a choice's dropdown shows that list rather than the spec's)."""
    cell = INPUT_BY_FIELD[field]
    s = spec(cell.spec_name)
    b = ctx.book
    b.put(sheet, f"A{row}", cell.label)
    fmt = s.number_format if s.number_format != "General" else "#,##0" if s.kind == "int" else None
    fmt = BOOL_FORMAT if s.kind == "bool" else fmt
    if cell.name in checks.LOOKED_UP_FAILING:  # a look-up's message prints as the way to Start's input check
        fmt = pointer_format(fmt)
    b.put(sheet, f"B{row}", value, "input", fmt, name=cell.name)
    b.put(sheet, f"C{row}", s.unit)
    looked_up = isinstance(value, Expr) and not isinstance(value, Var)
    preset = ("GPU_Type" if field in GPU_DERIVED else "Model_Preset" if field in MODEL_DERIVED or field in STAGE_ENDS
              else "Framework and Precision" if field in FRAMEWORK_DERIVED
              else "Recipe_Id, else by Framework and Precision")
    how = f" Looked up by {preset}; a number typed here wins." if looked_up else ""
    b.note(sheet, f"D{row}", f"{cell.name}: {s.allowed}. {s.doc}.{how}".replace("..", "."))
    if isinstance(value, Expr) and (chars := longest_message_in({cell.name})):  # the look-up's message wraps in B
        message_cell(b, sheet, row, "B", "B", chars)
    label = f"{cell.label} ({cell.name})"
    b.validations.append({"sheet": sheet, "at": f"B{row}", "label": label, "list": listed, "allowed": s.allowed}
                         if listed is not None else {"sheet": sheet, "at": f"B{row}", "spec": s, "label": label})


def output_row(ctx: Ctx, sheet: str, row: int, name: str, varmap: dict[str, str] | None = None,
               label: str | None = None, define: bool = True, pointer: str | None = None) -> str:
    """A named result (or the same result over other cells) with its equation and source; ``pointer``: the text a
    memory result shows for a broken layout instead of the layout check's message. Every result but the layout check
    shows CHECK_POINTER for a failing input check or look-up instead of its message, which Start's input check shows
    whole (:func:`rendering.pointing`): the result's column is too narrow to print it."""
    out = OUTPUT_BY_NAME[name]
    expr, subs = output_formula(name, varmap)
    expr = guarded_output(name, expr, varmap)
    points = name != "Layout_Check"  # the layout check's row shows a failing input's message whole
    expr = pointing(expr, pointer, checks_pointer=CHECK_POINTER if points else None)
    b = ctx.book
    b.put(sheet, f"A{row}", label or out.label)
    ref = b.put(sheet, f"B{row}", expr, "output" if define else "formula", display_format(out), subs,
                name if define else None)
    b.put(sheet, f"C{row}", out.unit)
    b.note(sheet, f"D{row}", f"{name if define else out.formula.udf_name}: {out.formula.equation}. "
                            f"Source: {out.formula.source}")
    deps = dependencies(name).union(*(dependencies(v) | {v} for v in (varmap or {}).values() if v in OUTPUT_BY_NAME))
    if points:  # a failing look-up's message is pointed to (CHECK_POINTER), not shown
        deps = {d for d in deps if d not in checks.LOOKED_UP_FAILING}
    # a catalog's message (no purchase price, rate or figure) wraps in B
    message_cell(b, sheet, row, "B", "B", longest_message_in(deps))
    if name in BOUNDED_OUTPUTS:  # past its bound, its own message (outputs.bound_short) wraps in B
        message_cell(b, sheet, row, "B", "B", len(bound_short(out)))
    return ref


def output_rows(ctx: Ctx, sheet: str, row: int, names: tuple[str, ...], pointer: str | None = None) -> int:
    """:func:`output_row` for each of ``names``, from ``row`` down; the next row."""
    for k, name in enumerate(names):
        output_row(ctx, sheet, row + k, name, pointer=pointer)
    return row + len(names)


def formula_row(ctx: Ctx, sheet: str, row: int, label: str, expr: Any, unit: str, note: str,
                fmt: str | None = None, subs: Any = None) -> str:
    b = ctx.book
    b.put(sheet, f"A{row}", label)
    # a failing input check or look-up: the way to Start's input check, which shows the message whole
    ref = b.put(sheet, f"B{row}", pointed(expr), "formula", fmt, subs)
    b.put(sheet, f"C{row}", unit)
    b.note(sheet, f"D{row}", note)
    if isinstance(expr, Expr):  # a catalog's message (no purchase price, rate or figure) wraps in B
        message_cell(b, sheet, row, "B", "B", longest_message_in(needs(expr)))
    return ref


# --- Inputs ---------------------------------------------------------------------------

def inputs_sheet(ctx: Ctx) -> None:
    s, b, sc = "Inputs", ctx.book, ctx.scenario
    b.put(s, "A1", "Inputs — type in the yellow cells; everything else follows", "title")
    for row, label, name, text in ((2, "Scenario", "Scenario_Name", sc.name), (3, "Notes", "Scenario_Notes", sc.notes)):
        b.put(s, f"A{row}", label)
        b.put(s, f"B{row}", text, "text_input", name=name)
    row = 5
    groups: dict[str, list[str]] = {}
    for cell in INPUT_BY_FIELD.values():
        # those on the FineTuning and StepTime sheets
        if cell.field not in BUDGET_FIELDS and cell.group not in ("Fine-tuning", STEP_GROUP):
            groups.setdefault(cell.group if cell.group != "Prices and budget" else "Prices", []).append(cell.field)
    for group, fields in groups.items():
        b.put(s, f"A{row}", group, "group")
        row += 1
        if group == "Model and data":
            row = _choice_row(ctx, s, row, "Model preset (fills parameters and architecture)", "Model_Preset",
                              sc.model or "", id_range(ctx.models),
                              "a model id from the Models sheet, or empty for your own numbers")
        if group == "Cluster":
            row = _choice_row(ctx, s, row, "GPU type (fills TFLOP/s, memory, GPUs per node)", "GPU_Type",
                              sc.gpu or "", id_range(ctx.gpus),
                              "a GPU id from the GPUs sheet, or empty for your own numbers")
        for field in fields:
            if field == "usd_per_gpu_hour":  # the tier dropdown heads the price it fills
                tiers = column_range(ctx.prices.sheet, "A", ctx.prices.tier_first, ctx.prices.tier_last)
                row = _choice_row(ctx, s, row, "Price tier (fills the price per GPU-hour from the Prices sheet)",
                                  "Price_Tier", sc.price_tier or "", tiers,
                                  "a tier from the Prices sheet (on-demand, reserved-1y, reserved-3y, spot, ...), "
                                  "or empty for your own price")
                value = price_value(ctx, sc)
            elif field == "capex_usd_per_gpu":  # looked up by GPU_Type, as the price
                value = capex_value(ctx, sc)
            else:
                if field == "bytes_weights":  # what the software fills, then the recipe dropdown heading its bytes
                    row = _choice_row(ctx, s, framework_rows(ctx, s, row), "Precision recipe (fills bytes per "
                                      "parameter)", "Recipe_Id", sc.recipe or "", id_range(ctx.recipes),
                                      "a recipe id from the Recipes sheet, or empty for your own numbers (or the "
                                      "Framework's)")
                value = derived_value(ctx, sc, field, "GPU_Type", "Model_Preset", "Recipe_Id", framework=True)
            input_row(ctx, s, row, field, value)
            row += 1
        row += 1
    b.put(s, f"A{row}", "Cells with a formula in yellow (e.g. Peak_TFLOPS, Bytes_Grads, Logits_Buffer_Bytes) are "
          "looked up from the preset, recipe or framework; type a number over them to use your own value.", "note")
    b.freeze[s] = "A5"


FRAMEWORK_FILLS = ("the bytes per parameter (the recipe it names; a picked Recipe_Id wins), Logits_Buffer_Bytes, "
                   "Optimizer_Step_Bytes, Autocast_Copy_Bytes and Grads_Freed, from the Frameworks sheet")


def framework_rows(ctx: Ctx, s: str, row: int) -> int:
    """The Framework and Precision dropdowns (names as ``--framework`` / ``--precision`` take them); the next row."""
    fw, sc = ctx.frameworks, ctx.scenario
    row = _choice_row(ctx, s, row, "Framework (fills the memory inputs of the software you train with)", "Framework",
                      sc.framework or "", column_range(fw.sheet, "A", fw.first_row, fw.last_row),
                      f"one of {', '.join(FRAMEWORKS)} (as --framework), or empty for your own numbers",
                      ". It sets " + FRAMEWORK_FILLS + "; a number typed over one of them wins")
    return _choice_row(ctx, s, row, "Precision (with the framework)", "Precision", sc.precision or "",
                       column_range(fw.sheet, "A", fw.precision_first, fw.precision_last),
                       f"one of {', '.join(PRECISIONS)} (as --precision), or empty for the framework's usual one",
                       ": " + "; ".join(f"{k} {v}" for k, v in PRECISIONS.items()) + ". The Frameworks sheet lists "
                       "the precisions each framework offers")


NO_PRICE = (": no published ", " price on the Prices sheet \u2014 type it in USD_per_GPU_Hour")  # around the tier
NO_GPU_FOR_TIER = ("Price_Tier needs a GPU_Type to look a price up: pick a GPU, or clear Price_Tier "
                   "and type a price in USD_per_GPU_Hour")


def price_lookup(prices: PriceTable, field: str) -> Any:
    """``INDEX(Prices!<field>, MATCH(GPU_Type&"|"&Price_Tier, Prices!<key>, 0))``: a column of the Prices sheet's
    row for the chosen GPU and tier (raises/#N/A when the catalog has no rate for them)."""
    return catalog_lookup(Concat(Var("GPU_Type"), "|", Var("Price_Tier")), prices.sheet, prices.col("key"),
                          prices.col(field), prices.first_row, prices.last_row)


def price_value(ctx: Ctx, scenario: Scenario) -> Any:
    """USD_per_GPU_Hour's cell: the Prices sheet's rate for GPU_Type at Price_Tier, or the scenario's number.

    ``IF(Price_Tier="", number, IF(GPU_Type="", <message>, IFERROR(<look-up>, <message>)))``: with no tier
    picked the typed number stands; a GPU and tier the catalog has no rate for reads "<gpu>: no published
    <tier> price on the Prices sheet - type it in USD_per_GPU_Hour" (never #N/A). A number typed over the
    cell wins, as over any look-up.
    """
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
    typed = scenario.capex_usd_per_gpu
    buy = catalog.purchase_price(scenario.gpu) if scenario.gpu else None
    if typed is not None and (buy is None or buy.capex_usd_per_gpu != typed):
        return typed
    gpu = Var(gpu_key)
    head, tail = catalog.missing_capex_detail("\0").split("\0")
    start, end = str(InputError("capex_usd_per_gpu", None, "a purchase price per GPU in USD", "\1")).split("\1")
    missing = Concat(*_chunks(start + head), gpu, *_chunks(tail + end))
    no_gpu = Concat(*_chunks(str(catalog.missing_capex(None))))
    lookup = catalog_lookup(gpu, ctx.prices.sheet, "A", "B", ctx.prices.capex_first, ctx.prices.capex_last)
    return if_(eq(gpu, ""), no_gpu, IfError(lookup, missing))


def capex_used(ctx: Ctx) -> Any:
    """The purchase price the sheet used, in words (as the CLI states it, xlcalc.catalog.capex_note):

    "$30,000 per GPU, price catalog <id> (<date>)", "$25,000 per GPU, typed", or the cell's message when it holds no
    number (the GPU has no purchase price).
    """
    capex = Var("Capex_USD_per_GPU")
    amount = Concat("$", Func("FIXED", (capex, wrap(0))), " per GPU, ")
    p, gpu = ctx.prices, Var("GPU_Type")
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
    catalog_rate = IfError(price_lookup(ctx.prices, "usd_per_gpu_hour"), -1)
    from_catalog = Concat(tier, " tier, price catalog ", price_lookup(ctx.prices, "id"), " (",
                          price_lookup(ctx.prices, "date"), ")")
    which = if_(eq(tier, ""), "typed (no tier)",
                if_(eq(usd, catalog_rate), from_catalog, Concat("typed over the ", tier, " price")))
    return if_(IsNumber(usd), Concat("$", round_(usd, 3), "/GPU-hour, ", which), usd)


def _choice_row(ctx: Ctx, sheet: str, row: int, label: str, name: str, value: str, list_ref: str, allowed: str,
                more: str = "") -> int:
    """A dropdown of the list ``list_ref`` in row ``row``, named ``name``; the next row."""
    b = ctx.book
    b.put(sheet, f"A{row}", label)
    b.put(sheet, f"B{row}", value, "text_input", name=name)
    b.put(sheet, f"D{row}", f"{name}: {allowed}{more}", "note")
    b.validations.append({"sheet": sheet, "at": f"B{row}", "list": "=" + list_ref, "label": f"{label} ({name})",
                          "allowed": allowed})
    return row + 1


PURCHASE_PRICE_USED = "Purchase price used: "  # before the purchase price in words (Budget sheet)


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
            if ids := [r.id for r in rows if value(r, column) is None]:
                name = INPUT_BY_FIELD[field].name
                out[name] = max(out.get(name, 0), max(map(len, ids)) + len(missing_text(WHAT[field], sheet, name)))
    return out


def longest_message_in(deps: Any) -> int:
    """The longest message a catalog look-up puts in a cell that depends on the defined names ``deps`` (0: none): a
    missing purchase price's sentence, a missing rental rate's, or a figure's a catalog leaves unpublished, as the
    inputs among ``deps`` can hold them."""
    figures = missing_figures()
    return max([longest_message()] * ("Capex_USD_per_GPU" in deps) + [longest_price_message()] *
               ("USD_per_GPU_Hour" in deps) + [figures[n] for n in deps if n in figures] + [0])


def plan_title(ctx: Ctx, ref: Any = None) -> Concat:
    """A plan's title built from its inputs (never a stale or contradicting typed title).

    ``ref`` maps defined names to the cells of another column (Scenarios); default: the Inputs sheet.
    """
    def v(name: str) -> Var:
        return Var((ref or {}).get(name, name))

    def name_of(t: Table, key: Var) -> Any:  # the catalog's name of the id in ``key``, else the id as typed
        return IfError(catalog_lookup(key, t.sheet, t.col("id"), t.col("name"), t.first_row, t.last_row), key)

    gpu = v("GPU_Type")
    gpu_text = if_(eq(gpu, ""), Concat("GPUs of ", v("Peak_TFLOPS"), " TFLOP/s"), name_of(ctx.gpus, gpu))
    usd = v("USD_per_GPU_Hour")  # a price tier with no rate leaves a message there, not a number
    price = if_(IsNumber(usd), Concat("$", round_(usd, 2), " per GPU-hour"), "no price per GPU-hour")
    model = v("Model_Preset")  # the model picked (its catalog name), or none: the typed architecture
    model_text = if_(eq(model, ""), "", Concat(name_of(ctx.models, model), ", "))
    return Concat(model_text, round_(v("Params_B"), 1), "B parameters, ", round_(v("Tokens_T"), 2), "T tokens on ",
                  v("N_GPUs"), " x ", gpu_text, " at MFU ", round_(v("MFU") * 100, 1), "%, ", price)

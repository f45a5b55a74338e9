"""The planning workbook as built (no spreadsheet engine needed): contract, portability, safety, numbers."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.formula import Tokenizer

from named_edits import list_cells, validation_of
from xlcalc import errors as x_errors
from xlcalc.outputs import OUTPUTS, output_excel
from xlcalc.scenario import INPUTS, evaluate, load_scenario
from xlcalc.workbook import build

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "xlcalc" / "presets"  # the scenario presets (package data)

CONTRACT_INPUTS = ("Params_B Tokens_T Peak_TFLOPS N_GPUs MFU Seq_Len Micro_Batch Hidden Layers Heads TP_Size "
                   "PP_Size ZeRO_Stage Seq_Parallel Recompute Bytes_Weights Bytes_Grads Bytes_Optimizer "
                   "Overhead_GB USD_per_GPU_Hour").split()
CONTRACT_OUTPUTS = ("Train_FLOPs Train_Days GPU_Hours Mem_Static_GB Mem_Activations_GB Mem_Total_GB "
                    "Compute_Cost_USD Total_Cost_USD").split()

# Classic functions shared by Excel 2016+, LibreOffice, Google Sheets and Numbers.
PORTABLE = {"IF", "IFERROR", "INDEX", "MATCH", "VLOOKUP", "HLOOKUP", "ROUNDUP", "ROUNDDOWN", "ROUND",
            "CEILING", "FLOOR", "MIN", "MAX", "SUM", "SUMPRODUCT", "INT", "AND", "OR", "NOT", "SQRT",
            "LOG", "LN", "EXP", "ABS", "ISNUMBER",
            "NA",  # #N/A: only in Budget's chart-data block, the one value a chart draws no point for
            "FIXED",  # number as text with thousands separators: Excel's classic text functions, LibreOffice, gnumeric
            "LEFT", "FIND", "LEN"}  # the same classic text functions: a Parallelism row's layout check, short


def first_stage_psi_b(params_b=70, vocab=32000, hidden=8192, layers=80, pp=4, tp=4):
    """Billions of parameters one GPU of the first pipeline stage holds: its L/p layers (the model's parameters
    less the input embedding and the output layer, V x h each, spread evenly over the layers) plus the input
    embedding (Megatron puts it on the first stage), split over TP."""
    vh = vocab * hidden / 1e9
    return ((params_b - 2 * vh) / layers * (layers / pp) + vh) / tp


@pytest.fixture(scope="module")
def seed002(tmp_path_factory):
    path = tmp_path_factory.mktemp("wb") / "seed002.xlsx"
    lay = build(path, [load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    return path, lay


@pytest.fixture(scope="module")
def formulas_wb(seed002):
    return openpyxl.load_workbook(seed002[0])


@pytest.fixture(scope="module")
def values_wb(seed002):
    return openpyxl.load_workbook(seed002[0], data_only=True)


def named(wb, name):
    dests = list(wb.defined_names[name].destinations)
    assert len(dests) == 1, f"{name} names {dests}"
    sheet, at = dests[0]
    assert ":" not in at
    return wb[sheet][at.replace("$", "")]


def test_defined_names_are_the_contract_and_each_names_one_cell(formulas_wb):
    for name in CONTRACT_INPUTS + CONTRACT_OUTPUTS:
        assert name in formulas_wb.defined_names, name
        named(formulas_wb, name)
    for cell in INPUTS:
        named(formulas_wb, cell.name)
    for out in OUTPUTS:
        named(formulas_wb, out.name)


def _peel_guards(text, pointer=None):
    """A formula without its ``IF(ISNUMBER(X), ..., X)`` wrappers and the input checks' ``IF(Checks!C="OK", ...,
    Checks!C)`` inside them; returns (inner formula, the Xs in order, the check cell or None). ``pointer``: the text
    (a formula's string constant) each of those guards shows instead of X or Checks!C (a narrow memory cell's)."""
    body, names = text[1:], []
    while body.startswith("IF(ISNUMBER("):
        name = body[len("IF(ISNUMBER("):].split(")", 1)[0]
        shown = pointer or name
        assert body.endswith(f",{shown})"), body[-60:]
        body = body[len(f"IF(ISNUMBER({name}),"):-len(f",{shown})")]
        names.append(name)
    check = None
    if body.startswith("IF(Checks!"):
        check = body[len("IF("):].split("=", 1)[0]
        shown = pointer or check
        assert body.startswith(f'IF({check}="OK",') and body.endswith(f",{shown})"), body[:60]
        body = body[len(f'IF({check}="OK",'):-len(f",{shown})")]
    return "=" + body, names, check


def test_named_results_are_the_engines_formula_text(formulas_wb):
    """Each named result's cell holds exactly xlcalc.outputs.output_excel(out): one definition, wrapped only in
    the checks that show a looked-up input's message (no catalog figure, no price at the tier) in place of #VALUE!,
    then a bounded result's message (a result past its formula's bound) where it is computed from one; a memory
    result shows "see <Layout_Check's cell>" for a broken layout instead of the layout check's message, and "see
    Start!C3" (Start's input check, the master) instead of a failing input's or look-up's message."""
    from xlcalc.outputs import BOUNDED_OUTPUTS
    from xlcalc.scenario import INPUT_BY_NAME
    from xlcalc.workbook.rendering import LOOKED_UP, dependencies

    checks = formulas_wb["Checks"]
    (sheet, at), = formulas_wb.defined_names["Layout_Check"].destinations
    pointer = f'"see {sheet}!{at.replace("$", "")}"'
    assert formulas_wb["Start"]["B3"].value == "Input check"  # the master check, whole in C3
    for out in OUTPUTS:
        inner, guards, check = _peel_guards(named(formulas_wb, out.name).value,
                                            '"see Start!C3"' if out.guarded else None)
        want = output_excel(out)
        if out.guarded:  # a broken layout: the way to Layout_Check's cell, not its message (too long for the cell)
            assert want.endswith(",Layout_Check)"), out.name
            want = want[:-len("Layout_Check)")] + pointer + ")"
        assert inner == want, out.name
        deps = dependencies(out.name)
        assert guards == [n for n in (*LOOKED_UP, *BOUNDED_OUTPUTS) if n in deps], out.name
        # the checks of exactly the input cells the result depends on, gathered in one cell of the Checks sheet
        row = int(check.rsplit("$", 1)[1])
        assert set(checks[f"B{row}"].value.split(", ")) == {n for n in deps if n in INPUT_BY_NAME}, out.name


@pytest.mark.parametrize("names", [("seed002-70b-a800",),
                                   ("seed002-70b-a800", "seed002-70b-ascend910b", "seed000-100b-a100")])
def test_templated_formulas_equal_the_reference_trees(names):
    """A named result over other cells is built and rendered once per shape (a template bound to each cell's
    references): every formula cell's text and engine value equal those of the reference build, which makes each
    cell's tree anew (model.reference_rendering)."""
    from xlcalc.expr.template import Bound
    from xlcalc.workbook import layout
    from xlcalc.workbook.model import identity, reference_rendering

    def has_bound(e):
        return isinstance(e, Bound) or any(has_bound(c) for c in e.children())

    def cells(book):
        values = book.cached_values()
        return {(s, at): (c.value.to_excel(identity, c.subs), values[(s, at)]) for s, at, c in book.formula_cells()}

    scenarios = [load_scenario(TEMPLATES / f"{n}.toml") for n in names]
    fast = layout(scenarios)
    with reference_rendering():
        ref = layout(scenarios)
    assert sum(has_bound(c.value) for _, _, c in fast.book.formula_cells()) > 1000  # the templates are used
    assert not any(has_bound(c.value) for _, _, c in ref.book.formula_cells())
    fast_cells, ref_cells = cells(fast.book), cells(ref.book)
    assert fast_cells.keys() == ref_cells.keys()
    differ = [k for k in ref_cells if fast_cells[k] != ref_cells[k]]
    assert not differ, [(k, fast_cells[k], ref_cells[k]) for k in differ[:3]]


def test_every_formula_uses_only_portable_functions(formulas_wb):
    count = 0
    for ws in formulas_wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type != "f":
                    continue
                count += 1
                assert "_xlfn" not in c.value and "_xlws" not in c.value, (ws.title, c.coordinate, c.value)
                for tok in Tokenizer(c.value).items:
                    if tok.type == "FUNC" and tok.subtype == "OPEN":
                        assert tok.value[:-1].upper() in PORTABLE, (ws.title, c.coordinate, c.value)
                    if tok.type == "OPERAND" and tok.subtype == "NUMBER":
                        assert re.fullmatch(r"\d+(\.\d+)?(E[+-]\d+)?", tok.value), (c.coordinate, tok.value)
                    if tok.type == "OPERAND" and tok.subtype == "RANGE":
                        assert "[" not in tok.value, f"external or structured reference in {c.value}"
    assert count > 500  # the whole planner is formulas, not typed numbers


def test_every_formula_cell_has_a_cached_value(formulas_wb, values_wb):
    empty = []
    for ws in formulas_wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f" and values_wb[ws.title][c.coordinate].value is None:
                    empty.append(f"{ws.title}!{c.coordinate}")
    assert not empty, empty[:10]


def test_seed002_numbers_visible_without_recalculation(values_wb):
    """Seed 002 §7.3: 70B, 2T tokens -> 8.4e23 FLOPs; 1024 A800 (312 TFLOPS, MFU 0.4) -> 76.08 days."""
    v = lambda n: named(values_wb, n).value  # noqa: E731
    assert v("Train_FLOPs") == pytest.approx(6 * 70e9 * 2e12, rel=1e-12) == pytest.approx(8.4e23)
    assert round(v("Train_Days"), 2) == 76.08
    assert v("Peak_TFLOPS") == 312  # looked up from the GPUs sheet (seed 002: A800 312 TFLOPS)
    # Independent arithmetic (ZeRO-1 over DP = 1024/16 = 64). Per layer and token, Megatron selective recompute with
    # SP over t = 4 keeps (32h + 8)/t bytes: two RMSNorms' inputs and outputs 8h and their fp32 1/rms 8, q, k, v 6h,
    # the attention output 2h, the FFN's (F = 4h) first matmul output and activation output 16h (Korthikanti's 34h
    # less the two dropout masks, no dropout). The first of 4 pipeline stages is the heavier: 20 of the 80 layers
    # plus the 32000 x 8192 input embedding (the model's other 70e9 - 2Vh parameters are spread evenly over the
    # layers), and 4 micro-batches in flight; plus the recompute working set: the attention core of one layer
    # re-materialised, FlashAttention's fp32 log-sum-exp of a/t = 16 heads, 4 x 16 bytes per token.
    psi = first_stage_psi_b()
    static = (2 + 4) * psi + 8 * psi / 64
    act = (20 * 4 * 4096 * 1 * (32 * 8192 + 8) / 4 + 4096 * 4 * 16) / 1e9
    assert v("Mem_Static_GB") == pytest.approx(static, rel=1e-12)
    assert v("Mem_Activations_GB") == pytest.approx(act, rel=1e-12)
    assert v("Mem_Total_GB") == pytest.approx(static + act + 4, rel=1e-12)
    assert v("Fits_GPU") is True
    hours = 8.4e23 / (312e12 * 0.4) / 3600
    assert v("GPU_Hours") == pytest.approx(hours, rel=1e-12)
    assert v("Compute_Cost_USD") == pytest.approx(hours * 2.0, rel=1e-12)
    # Goodput (Young's interval): 1 - SQRT(2 delta / M) - R / M with M = 50,677 h / 1024 GPUs, delta = 60 s,
    # R = 600 s; failures cost 1/goodput - 1 of compute, so the total is compute / goodput.
    m, d, r = 50_677 / 1024, 60 / 3600, 600 / 3600
    goodput = 1 - (2 * d / m) ** 0.5 - r / m
    assert v("Goodput") == pytest.approx(goodput, rel=1e-12)
    assert v("Total_Cost_USD") == pytest.approx(hours * 2.0 / goodput, rel=1e-12)
    # Seed 002 §7.3 step 2 rounding (FORMULAS.md: exact GPUs for 90 days = 865.6)
    assert v("GPUs_for_Deadline") == pytest.approx(8.4e23 / (312e12 * 0.4 * 90 * 86400), rel=1e-12)
    assert round(v("GPUs_for_Deadline"), 1) == 865.6
    assert v("Replicas_for_Deadline") == 55                 # CEILING(865.6 / 16)
    assert v("GPUs_with_Spare") == pytest.approx(55 * 16 * 1.05)
    assert v("GPUs_to_Provision") == 928                    # 924 rounded up to whole 8-GPU nodes


def test_cached_values_are_the_engine_results(seed002, values_wb):
    results = evaluate(seed002[1].scenario)
    for out in OUTPUTS:
        got, want = named(values_wb, out.name).value, results[out.name]
        if isinstance(want, bool):
            assert got is want, out.name
        elif isinstance(want, str):  # a message (Layout_Check); pytest 9's approx takes numbers only
            assert got == want, out.name
        else:
            assert got == pytest.approx(want, rel=1e-12), out.name


def test_scenario_columns_equal_the_engine_on_each_gpu(seed002, values_wb):
    lay = seed002[1]
    assert len(lay.column_maps) >= 3
    for (sc, _), refs in zip(lay.columns, lay.column_maps):
        results = evaluate(sc)
        for out in OUTPUTS:
            sheet, at = refs[out.name].split("!")
            got, want = values_wb[sheet][at.replace("$", "")].value, results[out.name]
            assert got == (want if isinstance(want, str) else pytest.approx(want, rel=1e-12)), (sc.gpu, out.name)
    gpus = [sc.gpu for sc, _ in lay.columns]
    assert gpus == ["a800", "h100-sxm", "ascend-910b"]
    assert lay.columns[2][0].peak_tflops == 320 and lay.columns[2][0].gpu_memory_gb == 64  # seed 002: 910B


def test_derived_inputs_hold_their_lookup_as_default(formulas_wb):
    peak = named(formulas_wb, "Peak_TFLOPS").value
    assert peak.startswith('=IF(GPU_Type="",312,') and "INDEX(GPUs!" in peak and "MATCH(GPU_Type" in peak
    assert named(formulas_wb, "GPU_Type").value == "a800"
    # no model preset: the scenario's number until a preset is picked in the dropdown
    params = named(formulas_wb, "Params_B").value
    assert params.startswith('=IF(Model_Preset="",70,') and "MATCH(Model_Preset,Models!" in params


def test_model_preset_fills_architecture(tmp_path):
    sc = load_scenario(TEMPLATES / "empty.toml").model_copy()
    from xlcalc.scenario import Scenario
    sc = Scenario.build(model="llama2-70b", gpu="h100")
    path = tmp_path / "m.xlsx"
    build(path, [sc])
    wb = openpyxl.load_workbook(path)
    for name in ("Params_B", "Hidden", "Layers", "Heads", "Seq_Len"):
        assert "MATCH(Model_Preset" in named(wb, name).value, name
    vals = openpyxl.load_workbook(path, data_only=True)
    assert named(vals, "Layers").value == 80 and named(vals, "Hidden").value == 8192  # Llama 2 paper Table 1
    assert named(vals, "Peak_TFLOPS").value == 989.4  # published.json hw-h100-sxm


# --- precision recipe ---------------------------------------------------------------------

def test_recipe_dropdown_lists_the_recipe_ids(formulas_wb):
    from xlcalc.recipes import RECIPES

    assert named(formulas_wb, "Recipe_Id").value == "seed002"  # xlcalc/presets/seed002-70b-a800.toml
    assert not named(formulas_wb, "Recipe_Id").protection.locked
    dv = validation_of(formulas_wb, "Recipe_Id")
    assert dv.type == "list" and dv.formula1.startswith("Recipes!$A$")
    assert "Recipe_Id" in dv.error and "Recipes sheet" in dv.error
    assert list_cells(formulas_wb, dv.formula1) == list(RECIPES) == ["zero", "megatron", "seed002", "fp32", "torchtune", "qlora"]


def test_recipes_sheet_holds_each_recipe_with_its_source(formulas_wb):
    from xlcalc.recipes import RECIPES

    ws = formulas_wb["Recipes"]
    rows = {r[0].value: [c.value for c in r[1:5]] for r in ws.iter_rows(min_row=4) if r[0].value}
    assert rows == {r.id: [r.weights, r.grads, r.optimizer, r.source] for r in RECIPES.values()}
    # independent figures: seed 002 §7.1.2 (2 + 4 + 8 = 14 B/param); ZeRO paper (2 + 2 + K = 12)
    assert rows["seed002"][:3] == [2, 4, 8] and rows["zero"][:3] == [2, 2, 12]
    assert "seed 002" in rows["seed002"][3] and "ZeRO" in rows["zero"][3]


def test_bytes_hold_the_recipe_lookup_as_default(formulas_wb, values_wb):
    for name, want in (("Bytes_Weights", 2), ("Bytes_Grads", 4), ("Bytes_Optimizer", 8)):  # seed 002 §7.1.2
        text = named(formulas_wb, name).value
        assert text.startswith('=IF(Recipe_Id="",') and "MATCH(Recipe_Id,Recipes!$A$" in text, text
        assert not named(formulas_wb, name).protection.locked, name
        assert named(values_wb, name).value == want, name


def test_scenario_recipe_fills_the_bytes_and_explicit_bytes_win():
    from xlcalc.errors import InputError
    from xlcalc.scenario import Scenario

    sc = Scenario.build(recipe="Megatron")
    assert (sc.recipe, sc.bytes_weights, sc.bytes_grads, sc.bytes_optimizer) == ("megatron", 2, 4, 12)
    sc = Scenario.build(recipe="fp32", bytes_optimizer=12)
    assert (sc.bytes_weights, sc.bytes_grads, sc.bytes_optimizer) == (4, 4, 12)
    assert Scenario.build().recipe is None
    with pytest.raises(InputError, match=r"recipe = 'bf16' is not allowed: recipe must be one of "
                                         r"zero, megatron, seed002, fp32, torchtune, qlora"):
        Scenario.build(recipe="bf16")


def test_unknown_recipe_in_a_scenario_file_names_the_input(tmp_path):
    from xlcalc.errors import InputError

    bad = tmp_path / "bad.toml"
    bad.write_text('recipe = "fp8"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"recipe = 'fp8' is not allowed: recipe must be one of zero, megatron"):
        load_scenario(bad)


def test_overwritten_byte_count_is_a_number_the_others_stay_looked_up(tmp_path):
    from xlcalc.scenario import Scenario

    sc = Scenario.build(recipe="megatron", gpu="h100", bytes_grads=3)
    path = tmp_path / "r.xlsx"
    build(path, [sc])
    wb, vals = openpyxl.load_workbook(path), openpyxl.load_workbook(path, data_only=True)
    assert named(wb, "Recipe_Id").value == "megatron"
    assert named(wb, "Bytes_Grads").value == 3
    assert "MATCH(Recipe_Id" in named(wb, "Bytes_Weights").value
    assert "MATCH(Recipe_Id" in named(wb, "Bytes_Optimizer").value
    assert named(vals, "Bytes_Optimizer").value == 12  # Megatron: fp32 master + m + v = 4 + 4 + 4
    # ZeRO-1 over DP = 1024/16 = 64: (2 + 3) * psi + 12 * psi / 64, psi = the first stage's parameters / TP
    psi = first_stage_psi_b()
    assert named(vals, "Mem_Static_GB").value == pytest.approx(5 * psi + 12 * psi / 64, rel=1e-12)


def test_unlinked_scenario_columns_look_up_their_own_recipe(tmp_path):
    from xlcalc.scenario import Scenario

    a = load_scenario(TEMPLATES / "seed002-70b-a800.toml")
    b = Scenario.build(**{**a.model_dump(exclude={"bytes_weights", "bytes_grads", "bytes_optimizer"}),
                          "recipe": "zero", "name": "ZeRO recipe"})
    path = tmp_path / "two.xlsx"
    lay = build(path, [a, b])
    wb, vals = openpyxl.load_workbook(path), openpyxl.load_workbook(path, data_only=True)
    for (sc, _), refs in zip(lay.columns, lay.column_maps):
        sheet, at = refs["Bytes_Grads"].split("!")
        assert "MATCH(Scenarios!$" in wb[sheet][at.replace("$", "")].value
        assert vals[sheet][at.replace("$", "")].value == {"seed002": 4, "zero": 2}[sc.recipe]
        sheet, at = refs["Mem_Static_GB"].split("!")
        assert vals[sheet][at.replace("$", "")].value == pytest.approx(evaluate(sc)["Mem_Static_GB"], rel=1e-12)


def test_number_formats_come_from_the_specs(formulas_wb):
    assert named(formulas_wb, "MFU").number_format == "0.0%"
    assert named(formulas_wb, "USD_per_GPU_Hour").number_format == '"$"#,##0.00'
    for out in OUTPUTS:
        want = '"TRUE";"TRUE";"FALSE"' if out.formula.returns == "bool" else out.number_format
        if want == '"$"#,##0':  # whole dollars keep an explicit negative section (the .ods -> PDF route needs it)
            want = '"$"#,##0;-"$"#,##0'
        assert named(formulas_wb, out.name).number_format == want, out.name


def test_inputs_have_validation_that_names_the_input(formulas_wb):
    ws = formulas_wb["Inputs"]
    by_cell = {}
    for dv in ws.data_validations.dataValidation:
        for rng in dv.sqref.ranges:
            by_cell[rng.coord] = dv
    mfu = named(formulas_wb, "MFU").coordinate
    assert "MFU" in by_cell[mfu].error and "> 0" in by_cell[mfu].error and "<= 1" in by_cell[mfu].error
    assert by_cell[mfu].showErrorMessage
    rec = by_cell[named(formulas_wb, "Recompute").coordinate]
    assert rec.type == "list" and rec.formula1 == '"none,selective,op_selective,full"'
    zero = by_cell[named(formulas_wb, "ZeRO_Stage").coordinate]
    assert "INT(" in zero.formula1 and ">=0" in zero.formula1 and "<=3" in zero.formula1
    assert by_cell[named(formulas_wb, "Seq_Parallel").coordinate].formula1 == '"TRUE,FALSE"'
    gpu = by_cell[named(formulas_wb, "GPU_Type").coordinate]
    assert gpu.type == "list" and gpu.formula1.startswith("GPUs!$A$")


def test_every_validated_cell_has_its_rule_once_and_a_grid_shares_one_per_column(seed002, formulas_wb):
    """Each cell the layout validates lies in exactly one validation of its sheet, with its own error text; a
    numeric rule refers to the top-left cell of its range (a workbook application applies it relatively to the
    others). The Parallelism grid's five input columns (TP, PP, ZeRO, recompute, sequence parallel) need five
    validations, not one per cell."""
    _, lay = seed002
    for v in lay.book.validations:
        col, row = re.match(r"([A-Z]+)(\d+)$", v["at"]).groups()
        dvs = [dv for dv in formulas_wb[v["sheet"]].data_validations.dataValidation if v["at"] in dv.sqref]
        assert len(dvs) == 1, (v["sheet"], v["at"])
        dv = dvs[0]
        assert dv.error.startswith(v["label"] + " must be"), (v["sheet"], v["at"])
        if dv.type == "custom":
            (rng,) = dv.sqref.ranges
            assert dv.formula1.startswith(f"AND(ISNUMBER({rng.coord.split(':')[0]})"), (v["sheet"], v["at"])
    grid = [dv for dv in formulas_wb["Parallelism"].data_validations.dataValidation]
    assert sorted(dv.promptTitle for dv in grid) == sorted(["TP_Size", "PP_Size", "ZeRO_Stage", "Recompute",
                                                            "Seq_Parallel"])


def test_validation_bounds_are_numbers_a_formula_reads(formulas_wb):
    # "10,000,000" in a formula is three arguments (10, 0, 0): AND(..., A5<=10,000,000, ...) is never TRUE
    for ws in formulas_wb.worksheets:
        for dv in ws.data_validations.dataValidation:
            if dv.type == "custom":
                assert not re.search(r"\d,\d", dv.formula1), (ws.title, str(dv.sqref), dv.formula1)
    (sheet, at), = formulas_wb.defined_names["N_GPUs"].destinations
    dv = validation_of(formulas_wb, "N_GPUs")
    assert "<=10000000," in dv.formula1  # xlcalc/inputs.py: n_gpus le=10_000_000


def test_protected_sheets_with_unlocked_inputs(formulas_wb):
    for ws in formulas_wb.worksheets:
        assert ws.protection.sheet, ws.title
        assert not ws.protection.password, ws.title
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f" and ws.title != "Scenarios":
                    # formulas are locked, except derived inputs that hold a look-up as their default
                    if c.fill.start_color.rgb not in ("00FFF2CC", "FFFFF2CC"):
                        assert c.protection.locked, (ws.title, c.coordinate)
    for cell in INPUTS:
        assert not named(formulas_wb, cell.name).protection.locked, cell.name


def test_no_macros_no_external_links(seed002):
    with zipfile.ZipFile(seed002[0]) as zf:
        names = zf.namelist()
        types = zf.read("[Content_Types].xml").decode()
    assert not any("vbaProject" in n or "externalLink" in n for n in names)
    assert "macroEnabled" not in types


def _chart_refs(path):
    """Per chart part: (values range, categories range) of each series (a scatter's y and x values)."""
    out = {}
    with zipfile.ZipFile(path) as zf:
        for n in zf.namelist():
            if n.startswith("xl/charts/chart"):
                xml = zf.read(n).decode()
                sers = re.findall(r"<(?:c:)?ser>.*?</(?:c:)?ser>", xml, re.S)
                out[n] = [(re.search(r"<(?:c:)?(?:val|yVal)>.*?<(?:c:)?f>(.*?)</(?:c:)?f>", x, re.S).group(1),
                           re.search(r"<(?:c:)?(?:cat|xVal)>.*?<(?:c:)?f>(.*?)</(?:c:)?f>", x, re.S).group(1))
                          for x in sers]
    return out


def _rows(ref):
    m = re.fullmatch(r"'?(\w+)'?!\$([A-Z]+)\$(\d+):\$([A-Z]+)\$(\d+)", ref)
    assert m, ref
    return m[1], m[2], int(m[3]), m[4], int(m[5])


def test_every_series_covers_the_rows_of_its_categories(seed002):
    charts = _chart_refs(seed002[0])
    assert charts
    for part, series in charts.items():
        assert series, part
        for val, cat in series:
            vs, vc1, v1, vc2, v2 = _rows(val)
            cs, _, c1, _, c2 = _rows(cat)
            assert vs == cs and vc1 == vc2 and (v1, v2) == (c1, c2), (part, val, cat)


def test_sensitivity_and_memory_charts_plot_their_whole_tables(seed002, formulas_wb):
    lay = seed002[1]
    tables = lay.extras["sensitivity"]
    series = [s for refs in _chart_refs(seed002[0]).values() for s in refs]
    ws = formulas_wb["Sensitivity"]
    for key in ("days", "spend"):
        t = tables[key]
        first, last = t["head"] + 1, t["head"] + t["rows"]
        assert ws[f"A{last + 1}"].value is None  # the table ends there
        mine = [s for s in series if s[1] == f"'Sensitivity'!$A${first}:$A${last}"]
        cols = {_rows(v)[1] for v, _ in mine}
        assert cols == {chr(ord("A") + j) for j in range(1, t["cols"] + 1)}, (key, mine)  # every MFU column
    mem = [s for s in series if s[0].startswith("'Memory'!")]
    assert len(mem) == 1
    _, _, first, _, last = _rows(mem[0][0])
    labels = [formulas_wb["Memory"][f"A{r}"].value.strip() for r in range(first, last + 1)]
    from xlcalc.stage_memory import PARTS
    assert labels == [label for _, label in PARTS]  # every part of the (first) stage, weights to other


def test_monthly_spend_grows_with_the_gpu_count(seed002, values_wb):
    """Total cost is the same GPU-hours at any GPU count; what grows is the spend per 30 days (x GPUs)."""
    t = seed002[1].extras["sensitivity"]["spend"]
    ws = values_wb["Sensitivity"]
    for j in range(t["cols"]):
        col = chr(ord("B") + j)
        gpus = [ws[f"A{t['head'] + 1 + i}"].value for i in range(t["rows"])]
        spend = [ws[f"{col}{t['head'] + 1 + i}"].value for i in range(t["rows"])]
        # independent arithmetic: 30 days of N GPUs at $2/GPU-hour (no power price) plus the failures'
        # share 1/goodput - 1, goodput at Young's interval on N GPUs (per-GPU MTBF 50,677 h: Llama 3's
        # 419 interruptions in 54 days on 16,384 GPUs; 60 s saves, 600 s restarts: the scenario's defaults)
        def failures(n):
            m, save, restart = 50_677 / n, 60 / 3600, 600 / 3600
            tau = math.sqrt(2 * save * m)
            return 1 / (1 - save / tau - (tau / 2 + restart) / m) - 1
        assert spend == pytest.approx([n * 24 * 30 * 2.0 * (1 + failures(n)) for n in gpus], rel=1e-9)


def test_memory_chart_sits_below_its_table():
    from xlcalc.workbook import layout
    from xlcalc.workbook.writer import to_workbook

    wb = to_workbook(layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")]).book)
    ws = wb["Memory"]
    last_text = max(c.row for row in ws.iter_rows() for c in row if c.value is not None)
    (chart,) = ws._charts
    col, row = re.fullmatch(r"([A-Z]+)(\d+)", chart.anchor).groups()
    assert col == "A" and int(row) > last_text  # covers no cell with text (notes overflowed under it before)
    assert [b.id for b in ws.row_breaks.brk] == [int(row) - 1]  # and prints on a page of its own


def test_budget_charts_sit_below_its_tables():
    from xlcalc.workbook import layout
    from xlcalc.workbook.writer import to_workbook

    wb = to_workbook(layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")]).book)
    ws = wb["Budget"]
    last_text = max(c.row for row in ws.iter_rows() for c in row if c.value is not None)
    anchors = [re.fullmatch(r"([A-Z]+)(\d+)", c.anchor).groups() for c in ws._charts]
    assert len(anchors) == 3  # cost by category, own vs rent, tornado
    assert all(int(row) > last_text for _, row in anchors)  # none covers a cell with text


def _charts_of(path, sheet: str) -> list:
    """The chart parts drawn on a sheet of the saved package, as parsed XML (in the drawing's order)."""
    import posixpath
    import zipfile

    from defusedxml import ElementTree as ET

    from xlcalc.workbook.cache import sheet_paths

    rel = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"

    def targets(zf, part):
        rels = posixpath.join(posixpath.dirname(part), "_rels", posixpath.basename(part) + ".rels")
        if rels not in zf.namelist():
            return []
        return [posixpath.normpath(posixpath.join(posixpath.dirname(part), r.get("Target")))
                if not r.get("Target").startswith("/") else r.get("Target").lstrip("/")
                for r in ET.fromstring(zf.read(rels)).iter(rel)]

    with zipfile.ZipFile(path) as zf:
        drawings = [t for t in targets(zf, sheet_paths(zf)[sheet]) if "/drawings/" in t]
        return [ET.fromstring(zf.read(t)) for d in drawings for t in targets(zf, d) if "/charts/" in t]


C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"


def _refs(ser, what: str) -> str:
    return ser.find(f"{C}{what}").find(f".//{C}f").text


def test_own_vs_rent_is_a_scatter_over_a_number_axis_of_months(seed002, formulas_wb):
    """Months 0..36, 48, 60 are plotted at their distance (a value axis), both lines straight, reading the
    chart-data columns: the table's cell where it is a number, #N/A (no point) where it is a message."""
    from chart_data import chart_data_rows

    ws = formulas_wb["Budget"]
    scatter = [c for c in _charts_of(seed002[0], "Budget") if c.find(f".//{C}scatterChart") is not None]
    assert len(scatter) == 1
    chart = scatter[0]
    plot = chart.find(f".//{C}plotArea")
    assert plot.find(f"{C}catAx") is None and len(plot.findall(f"{C}valAx")) == 2  # x is a number axis
    assert chart.find(f".//{C}plotVisOnly").get("val") in ("0", "false")  # reads the hidden chart-data columns
    series = plot.findall(f".//{C}ser")
    assert len(series) == 2
    rows = chart_data_rows(formulas_wb)
    months = [r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == 0 and ws[f"A{r + 1}"].value == 3]
    (first,) = months
    assert [ws[f"A{r}"].value for r in range(first, first + 11)] == [0, 3, 6, 9, 12, 18, 24, 30, 36, 48, 60]
    assert rows == range(first, first + 11)  # the block beside the table, row for row
    for ser, table_col in zip(series, "BC"):
        assert ser.find(f"{C}smooth").get("val") in ("0", "false")
        assert _refs(ser, "xVal") == f"'Budget'!$A${first}:$A${first + 10}"
        col = re.fullmatch(rf"'Budget'!\$([A-Z]+)\${first}:\$\1\${first + 10}", _refs(ser, "yVal"))
        assert col, _refs(ser, "yVal")
        for r in rows:  # a number stays, anything else (a message) is #N/A: no point, never $0
            src = f"Budget!${table_col}${r}"
            assert ws[f"{col[1]}{r}"].value == f"=IF(ISNUMBER({src}),{src},NA())"
        at = openpyxl.utils.column_index_from_string(col[1])  # never shown or printed: the table shows the message
        assert any(d.hidden and d.min <= at <= d.max for d in ws.column_dimensions.values()), col[1]


def test_tornado_draws_every_row_and_both_changes_of_its_table(seed002, formulas_wb):
    ws = formulas_wb["Budget"]
    head = next(r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == "input")
    cols = [c.column_letter for c in ws[head] if str(c.value or "").startswith("change at")]
    last = head
    while ws[f"A{last + 1}"].value:
        last += 1
    (tornado,) = [c for c in _charts_of(seed002[0], "Budget") if c.find(f".//{C}barChart") is not None]
    series = tornado.findall(f".//{C}ser")
    assert len(series) == len(cols) == 2  # change at low, change at high
    for ser, col in zip(series, cols):
        assert _refs(ser, "val") == f"'Budget'!${col}${head + 1}:${col}${last}"
        assert _refs(ser, "cat") == f"'Budget'!$A${head + 1}:$A${last}"
    cat_ax = tornado.find(f".//{C}catAx")
    assert cat_ax.find(f"{C}tickLblPos").get("val") == "low"  # names left of the plot, clear of the bars


def test_page_setup_fits_every_sheet_to_one_page_wide(formulas_wb):
    for ws in formulas_wb.worksheets:
        assert ws.print_area, ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        assert ws.page_setup.fitToWidth == 1 and ws.page_setup.fitToHeight == 0, ws.title
        # a title row repeated on every page: the sheet's title (row 1) or its table's column headings, which sit
        # right above the frozen panes; never a section heading from inside the sheet
        m = re.fullmatch(r"\$(\d+):\$(\d+)", ws.print_title_rows or "")
        assert m and m[1] == m[2], (ws.title, ws.print_title_rows)
        row = int(m[1])
        if row != 1:
            assert ws.freeze_panes and int(re.sub(r"[A-Z]", "", ws.freeze_panes)) == row + 1, ws.title
            assert all(c.font.b for c in ws[row] if c.value), (ws.title, row)  # headings, every one bold
            assert len([c for c in ws[row] if c.value]) >= 2, (ws.title, row)  # a table's, not one section's
    assert formulas_wb["Budget"].print_title_rows == "$1:$1"  # not "Failures and checkpoints" on every page
    area = formulas_wb["Start"].print_area
    assert area.endswith("$A$1:$D$" + area.rsplit("$", 1)[1])
    labels = [formulas_wb["Start"][f"B{r}"].value for r in range(1, 12)]
    for label in ("GPUs in the plan", "Training days on those GPUs", "Total cost incl. training tax (USD)"):
        assert label in labels  # near the top: page 1 of a print-out


def test_start_names_every_sheet_in_print_order(formulas_wb):
    ws = formulas_wb["Start"]
    (row,) = [r for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value == "Contents"]
    assert ws[f"C{row}"].value == "Sheets, in print order: " + ", ".join(formulas_wb.sheetnames) + "."
    assert row <= int(ws.print_area.rsplit("$", 1)[1])  # on the printed page 1


def test_parallelism_columns_fit_their_widest_values(formulas_wb, values_wb):
    """Every number of the Parallelism table fits its column as formatted (else a print-out shows ###)."""
    ws, formulas = values_wb["Parallelism"], formulas_wb["Parallelism"]
    for col in range(1, ws.max_column + 1):
        letter = openpyxl.utils.get_column_letter(col)
        width = formulas.column_dimensions[letter].width
        for r in range(5, ws.max_row + 1):
            v, fmt = ws.cell(r, col).value, formulas.cell(r, col).number_format
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                decimals = len(fmt.split(".")[1]) if "." in fmt and "0.00" in fmt else 0
                shown = f"{v:,.{decimals}f}" if "," in fmt else f"{v:.{decimals}f}"
                assert len(shown) + 2 <= width, (letter, r, shown, width)


def test_booleans_read_as_words(formulas_wb):
    words = '"TRUE";"TRUE";"FALSE"'
    assert named(formulas_wb, "Fits_GPU").number_format == words
    assert named(formulas_wb, "Seq_Parallel").number_format == words
    ws = formulas_wb["Parallelism"]
    assert all(ws[f"J{r}"].number_format == words for r in range(5, ws.max_row + 1) if ws[f"J{r}"].value)


def test_titles_are_built_from_the_inputs(formulas_wb, values_wb):
    assert formulas_wb["Start"]["C2"].value.startswith('=IF(Model_Preset="","",')  # the model's name once picked
    assert "&ROUND(Params_B,1)&" in formulas_wb["Start"]["C2"].value
    # seed 002 §7.3: 70B, 2T tokens, 1024 A800, MFU 0.4; the template's price $2/GPU-hour
    assert values_wb["Start"]["C2"].value == \
        f"70B parameters, 2T tokens on 1024 x {_gpu_name('a800')} at MFU 40%, $2 per GPU-hour"
    titles = [values_wb["Scenarios"][f"{c}5"].value for c in "CDE"]
    for title, gpu in zip(titles, ("a800", "h100-sxm", "ascend-910b")):
        assert f"on 1024 x {_gpu_name(gpu)} at MFU 40%" in title
    assert "A800" not in titles[1] and "A800" not in titles[2]  # no "...1024 A800 ... on NVIDIA H100"


def _gpu_name(gpu_id):
    from xlcalc import catalog
    return catalog.get_gpu(gpu_id).name


def test_charts_reference_cells(seed002):
    with zipfile.ZipFile(seed002[0]) as zf:
        charts = [zf.read(n).decode() for n in zf.namelist() if n.startswith("xl/charts/chart")]
    assert len(charts) >= 5  # memory, cost by category, own vs rent, days vs GPUs, cost vs GPUs
    joined = "\n".join(charts)
    # cost by category: the seven lines of the Budget total (rows 21-27); own vs rent: both columns of its chart data
    from xlcalc.workbook.sheets import CHART_DATA_COLS
    rent, own = (f"'Budget'!${c}$" for c in CHART_DATA_COLS[1:])
    for ref in ("'Memory'!$B$10:$B$19", "'Budget'!$B$21:$B$27", rent, own, "'Sensitivity'!"):
        assert ref in joined
    assert all("<numRef>" in c for c in charts)


HOSTILE = '''name = "=HYPERLINK(\\"http://example.invalid\\",\\"click\\")"
notes = "+cmd|' /C calc'!A0 @SUM(1) -2+3"
gpu = "h100"
'''


def test_hostile_scenario_text_stays_text(tmp_path):
    toml = tmp_path / "hostile.toml"
    toml.write_text(HOSTILE, encoding="utf-8")
    sc = load_scenario(toml)
    path = tmp_path / "hostile.xlsx"
    lay = build(path, [sc])
    wb = openpyxl.load_workbook(path)
    for name, text in (("Scenario_Name", sc.name), ("Scenario_Notes", sc.notes)):
        c = named(wb, name)
        assert c.data_type == "s" and c.value == text
    # the comparison columns' titles are built from their inputs, never from typed text
    assert wb["Scenarios"]["C5"].data_type == "f" and "HYPERLINK" not in wb["Scenarios"]["C5"].value
    with zipfile.ZipFile(path) as zf:
        xml = zf.read("xl/worksheets/sheet2.xml").decode()  # Inputs
    cell = re.search(r'<c r="B2"[^>]*>.*?</c>', xml).group(0)
    assert "<f>" not in cell and "inlineStr" in cell
    assert lay.book.cell("Inputs", "B2").value.startswith("=HYPERLINK")


def test_build_workbook_script(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "build_workbook.py"), "--help"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0 and "--scenario" in out.stdout and "-o" in out.stdout
    assert "--force" in out.stdout and "never" in out.stdout and "overwritten" in out.stdout
    run = subprocess.run([sys.executable, str(ROOT / "build_workbook.py")], capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "planner.xlsx").exists()
    assert (tmp_path / "planner.xlsx").stat().st_mode & 0o777 == 0o644  # readable by others
    # an existing file is not overwritten silently
    (tmp_path / "planner.xlsx").write_bytes(b"mine")
    again = subprocess.run([sys.executable, str(ROOT / "build_workbook.py")], capture_output=True, text=True,
                           cwd=tmp_path)
    assert again.returncode == 2 and "planner.xlsx" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr and (tmp_path / "planner.xlsx").read_bytes() == b"mine"
    forced = subprocess.run([sys.executable, str(ROOT / "build_workbook.py"), "--force"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert zipfile.is_zipfile(tmp_path / "planner.xlsx")
    bad = subprocess.run([sys.executable, str(ROOT / "build_workbook.py"), "--scenario", "no-such-plan"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "scenario" in bad.stderr and "Traceback" not in bad.stderr


def test_bad_scenario_file_names_the_input(tmp_path):
    from xlcalc.errors import InputError

    bad = tmp_path / "bad.toml"
    bad.write_text('mfu = 1.7\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"mfu = 1.7 is not allowed: mfu must be a number > 0 and <= 1"):
        load_scenario(bad)


@pytest.mark.parametrize("template", sorted(p.name for p in TEMPLATES.glob("*.toml")))
def test_every_template_builds(template, tmp_path):
    sc = load_scenario(TEMPLATES / template)
    lay = build(tmp_path / "t.xlsx", [sc])
    assert lay.scenario == sc
    assert all(math.isfinite(v) for v in evaluate(sc).values() if not isinstance(v, (bool, str)))
    assert evaluate(sc)["Layout_Check"] == "OK"


def test_a_true_false_rule_gives_its_cells_the_words_format():
    """Any cell coloured by TRUE/FALSE reads as words (and LibreOffice 7.4 can export it to PDF)."""
    from xlcalc.expr.nodes import Var
    from xlcalc.workbook import layout
    from xlcalc.workbook.writer import to_workbook

    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    lay.book.put("Time", "F20", Var("Fits_GPU"), "formula")
    lay.book.rules.append(("Time", "F20", "good_if_true"))
    wb = to_workbook(lay.book)
    assert wb["Time"]["F20"].number_format == '"TRUE";"TRUE";"FALSE"'


# --- price tiers: the Price_Tier dropdown looks the price up on the Prices sheet --------------------------------

def _pick(lay, **picks):
    """Type values into the named input cells of a laid-out book (as a user picks them) and recalculate."""
    for name, value in picks.items():
        sheet, at = lay.book.names[name]
        lay.book.sheets[sheet][at].value = value
    lay.book._memo.clear()  # cells are evaluated afresh when read
    return lay.book


def test_prices_sheet_holds_every_catalog_rate_with_date_and_source(formulas_wb):
    from xlcalc import catalog
    ws = formulas_wb["Prices"]
    rows = {ws[f"A{r}"].value: r for r in range(4, ws.max_row + 1) if ws[f"A{r}"].value}
    rates = [p for p in catalog.prices() if p.usd_per_gpu_hour is not None]
    assert len(rates) >= 10
    for p in rates:
        r = rows[f"{p.gpu}|{p.tier}"]
        assert (ws[f"B{r}"].value, ws[f"C{r}"].value, ws[f"D{r}"].value, ws[f"F{r}"].value) == \
            (p.gpu, p.tier, p.usd_per_gpu_hour, p.id)
        assert ws[f"E{r}"].value == p.date and "published.json" in ws[f"G{r}"].value
    dv = [d for d in formulas_wb["Inputs"].data_validations.dataValidation
          if str(named(formulas_wb, "Price_Tier").coordinate) in str(d.sqref)]
    assert len(dv) == 1 and dv[0].type == "list" and dv[0].formula1.startswith("Prices!")
    listed = [ws[f"A{r}"].value for r in range(int(dv[0].formula1.rsplit("$", 1)[1]) - len(catalog.PRICE_TIERS) + 1,
                                               int(dv[0].formula1.rsplit("$", 1)[1]) + 1)]
    assert listed == list(catalog.PRICE_TIERS)


def test_every_gpu_and_tier_gives_the_catalog_rate_or_a_message_naming_both():
    """Each GPU of the dropdown at each tier: the catalog's rate (and costs in dollars), or a sentence naming the
    GPU and the tier in the price cell, the cost results and the input check (engine evaluation of the cells)."""
    from xlcalc import catalog
    from xlcalc.workbook import layout
    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    start = {lay.book.sheets["Start"][f"B{r}"].value: f"C{r}" for r in range(1, 30)
             if isinstance(lay.book.sheets["Start"].get(f"B{r}") and lay.book.sheets["Start"][f"B{r}"].value, str)}
    tried = priced = 0
    for g in catalog.gpus():
        for tier in catalog.PRICE_TIERS:
            book = _pick(lay, GPU_Type=g.id, Price_Tier=tier)
            usd = book.value_of("USD_per_GPU_Hour")
            cost = book.value("Start", start["Total cost incl. training tax (USD)"])
            try:
                rate = catalog.rental_price(g.id, tier).usd_per_gpu_hour
            except x_errors.InputError:
                rate = None
            tried += 1
            if rate is not None:
                priced += 1
                assert usd == rate, (g.id, tier)
                if g.half_tflops is not None:
                    assert isinstance(cost, float) and cost > 0, (g.id, tier, cost)
                    compute = book.value("Start", start["Compute: GPU-hours x price (USD)"])
                    assert compute == pytest.approx(book.value_of("GPU_Hours") * rate, rel=1e-12)
                note = book.value("Start", "D" + start["Price assumed per GPU-hour (USD)"][1:])
                assert note.startswith(f"${rate:g}/GPU-hour, {tier} tier, price catalog ")
            else:
                msg = f"{g.id}: no published {tier} price on the Prices sheet \u2014 type it in USD_per_GPU_Hour"
                assert usd == msg, (g.id, tier, usd)
                assert book.value("Start", start["Compute: GPU-hours x price (USD)"]) == msg
                if g.half_tflops is not None and g.memory_gb and g.gpus_per_node:
                    assert cost == msg and book.value("Start", "C3") == msg
                    assert isinstance(book.value("Start", start["Training days on those GPUs"]), float)
    assert tried == len(catalog.gpus()) * len(catalog.PRICE_TIERS) and 10 <= priced < tried


def test_typed_price_wins_over_the_tier_and_says_so():
    from xlcalc.workbook import layout
    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    book = _pick(lay, GPU_Type="h100-sxm", Price_Tier="spot", USD_per_GPU_Hour=3.1)
    assert book.value("Budget", "D3").startswith("$3.1/GPU-hour, typed over the spot price")
    assert book.value_of("Compute_Cost_USD") == pytest.approx(book.value_of("GPU_Hours") * 3.1, rel=1e-12)
    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    book = _pick(lay, GPU_Type="", Price_Tier="spot")
    assert str(book.value_of("USD_per_GPU_Hour")).startswith("Price_Tier needs a GPU_Type")


def test_one_pass_package_is_the_bytes_openpyxl_and_inject_write(seed002):
    """build() writes the cells and their cached values in one pass (writer.save_package); the reference is
    openpyxl's own writer (stored_package) with cache.inject's cached values: every part byte for byte, but the
    document properties' save time."""
    import io

    from xlcalc.workbook import cache
    from xlcalc.workbook.writer import save_package, stored_package, to_workbook

    _, lay = seed002
    values = lay.book.cached_values()
    ref, fast = io.BytesIO(), io.BytesIO()
    cache.inject(io.BytesIO(stored_package(to_workbook(lay.book))), values, ref)
    save_package(to_workbook(lay.book), values, fast)
    with zipfile.ZipFile(ref) as a, zipfile.ZipFile(fast) as b:
        assert a.namelist() == b.namelist()
        differ = [n for n in a.namelist() if a.read(n) != b.read(n)]
    assert differ in ([], ["docProps/core.xml"])


def test_the_build_leaves_the_cycle_collector_as_it_found_it():
    import gc

    from xlcalc.workbook import collector_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a build that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_start_sheet_and_readme_say_how_libreoffice_recalculates_on_load(formulas_wb):
    # LibreOffice's default profile shows an .xlsx's saved values; its help names the option (Formula options,
    # "Recalculation on File Load", "Excel 2007 and newer": "Always recalculate")
    path = "Tools > Options > LibreOffice Calc > Formula > Recalculation on File Load"
    ws = formulas_wb["Start"]
    rows = {ws[f"B{r}"].value: ws[f"C{r}"].value for r in range(1, ws.max_row + 1)}
    hint = rows["Recalculation"]
    assert "Excel recalculates on open" in hint and path in hint and "Always recalculate" in hint
    area = ws.print_area.rsplit("$", 1)[1]
    row = next(r for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value == "Recalculation")
    assert row <= int(area)  # printed with the rest of the Start sheet
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert path in readme and "Always recalculate" in readme and "Excel recalculates" in readme


def test_scenarios_price_sentences_wrap_in_rows_tall_enough(formulas_wb, values_wb):
    """A Scenarios column whose GPU has no purchase price (seed 002's A800) shows the catalog's sentence in its
    purchase-price cell and in every owning result: wrapped at the top of its column, the row tall enough
    for the sentence at one character per width unit and 13 points a line (a conservative count of its lines)."""
    from xlcalc import catalog

    sentence = str(catalog.missing_capex("a800"))
    ws, shown = formulas_wb["Scenarios"], values_wb["Scenarios"]
    col = next(c for c in "CDEFG" if ws[f"{c}4"].value and shown[f"{c}8"].value == "a800")  # the GPU type row
    rows = [r for r in range(1, ws.max_row + 1) if shown[f"{col}{r}"].value == sentence]
    labels = {ws[f"A{r}"].value for r in rows}
    assert "Purchase price per GPU (USD)" in labels and "Own: cost of one busy GPU-hour" in labels, labels
    width = ws.column_dimensions[col].width
    for r in rows:
        cell = ws[f"{col}{r}"]
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top", (r, ws[f"A{r}"].value)
        assert (ws.row_dimensions[r].height or 0) >= math.ceil(len(sentence) / width) * 13, (r, ws[f"A{r}"].value)


def test_the_checks_sheet_prints_every_check(formulas_wb):
    """The Checks sheet's print area holds the layout check and every input's check (A:C, from the title) and every
    check of the other sheets' input cells and Parallelism layouts (E:G, from its heading), and none of the cells that
    gather them (the working cells below the input checks)."""
    from openpyxl.utils.cell import range_boundaries

    ws = formulas_wb["Checks"]
    areas = [range_boundaries(a.split("!")[-1].replace("$", "")) for a in ws.print_area.split(",")]
    assert len(areas) == 2, ws.print_area

    def printed(col: int, row: int) -> bool:
        return any(c1 <= col <= c2 and r1 <= row <= r2 for c1, r1, c2, r2 in areas)

    inputs = [r for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value and str(ws[f"B{r}"].value).count("!") == 1
              and ws[f"A{r}"].value in ws.parent.defined_names]
    others = [r for r in range(1, ws.max_row + 1) if ws[f"G{r}"].data_type == "f"]
    gathering = [r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value or "").endswith(" inputs")]
    assert len(inputs) > 60 and len(others) > 300 and gathering
    layouts = [r for r in others if ws[f"F{r}"].value == "Layout_Check"]
    assert len(layouts) == len([r for r in range(5, 200) if formulas_wb["Parallelism"][f"A{r}"].value is not None])
    for r in inputs:
        assert all(printed(c, r) for c in (1, 2, 3)), r
    for r in others:
        assert all(printed(c, r) for c in (5, 6, 7)), r
    assert printed(1, 1) and printed(3, 4)  # the title and the layout check
    for r in gathering:
        assert not printed(3, r), r


# A catalog's message in a cell (the engine's value of the workbook's formulas): a GPU without a published figure
# (its GPUs per node) on Inputs and in the last Scenarios column, a GPU and tier without a rental rate, a GPU without
# a purchase price (seed 002's A800). The sentences are written here from the catalog's gaps.
def _gap_picks():
    from xlcalc import catalog

    gap = next(g.id for g in catalog.gpus() if g.gpus_per_node is None)
    rated = {(p.gpu, p.tier) for p in catalog.prices() if p.tier and p.usd_per_gpu_hour is not None}
    gpu, tier = next((g.id, t) for g in catalog.gpus() for t in catalog.PRICE_TIERS
                     if (g.id, t) not in rated and t != "assumed" and catalog.get_gpu(g.id).gpus_per_node)
    no_buy = next(g.id for g in catalog.gpus() if catalog.purchase_price(g.id) is None and g.gpus_per_node)
    return [({"GPU_Type": gap, "Scenarios!E8": gap},
             f"{gap}: no published GPUs per node on the GPUs sheet \u2014 type it in GPUs_per_Node"),
            ({"GPU_Type": gpu, "Price_Tier": tier},
             f"{gpu}: no published {tier} price on the Prices sheet \u2014 type it in USD_per_GPU_Hour"),
            ({"GPU_Type": no_buy}, str(catalog.missing_capex(no_buy)))]


@pytest.mark.parametrize("case", range(3))
def test_every_cell_showing_a_catalog_message_fits_it_or_wraps_in_a_row_tall_enough(case):
    """Every formula cell of every sheet whose value is a catalog's sentence (or holds it) either fits it on one line
    of its width (merged width where merged) or wraps it at the top in a row tall enough for it at one character
    per width unit and 13 points a line (a conservative count of its lines)."""
    from openpyxl.utils import get_column_letter
    from openpyxl.utils.cell import range_boundaries

    from xlcalc.workbook import layout
    from xlcalc.workbook.writer import to_workbook

    picks, sentence = _gap_picks()[case]
    book = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")]).book
    assert book.value("Scenarios", "A8") == "GPU type"
    for name, value in picks.items():
        sheet, at = name.split("!") if "!" in name else book.names[name]
        book.cell(sheet, at).value = value
    values = book.cached_values()
    wb = to_workbook(book)
    shown = [(s, at, v) for (s, at), v in values.items() if isinstance(v, str) and sentence in v]
    assert len(shown) >= 5, (sentence, shown)
    for s, at, text in shown:
        ws = wb[s]
        c1 = c2 = ws[at].column
        for rng in ws.merged_cells.ranges:
            if at in rng:
                c1, _, c2, _ = range_boundaries(str(rng))
        width = sum(ws.column_dimensions[get_column_letter(c)].width or 13 for c in range(c1, c2 + 1))
        if len(text) <= width:
            continue
        cell = ws[at]
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top", (s, at, text)
        need = math.ceil(len(text) / width) * 13
        assert (ws.row_dimensions[cell.row].height or 0) >= need, (s, at, ws.row_dimensions[cell.row].height, need)

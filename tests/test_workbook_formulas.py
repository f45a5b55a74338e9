"""The planning workbook's formulas as built (no spreadsheet engine needed): the defined names' contract, each named
result the engine's formula text, portable functions only, and cached values that are the engine's numbers."""

from __future__ import annotations

import re

import openpyxl
import pytest
from openpyxl.formula import Tokenizer

from seed002_workbook import TEMPLATES, first_stage_psi_b, named
from xlcalc.outputs import OUTPUTS, output_excel
from xlcalc.scenario import INPUTS, evaluate, load_scenario
from xlcalc.workbook import build

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
    (a formula's string constant) each of those guards shows instead of Checks!C, or of X where X's message fails its
    check (xlcalc.workbook.checks.LOOKED_UP_FAILING; a missing purchase price's sentence shows as it is) or X is a
    bounded result (its cell holds a short message past its bound, which Start's input check shows whole)."""
    from xlcalc.outputs import BOUNDED_OUTPUTS
    from xlcalc.workbook.checks import LOOKED_UP_FAILING

    body, names = text[1:], []
    while body.startswith("IF(ISNUMBER("):
        name = body[len("IF(ISNUMBER("):].split(")", 1)[0]
        shown = pointer if pointer and name in (*LOOKED_UP_FAILING, *BOUNDED_OUTPUTS) else name
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
    then the way to Start's input check where it is computed from a bounded result (past its formula's bound); a memory
    result shows "see <Layout_Check's cell>" for a broken layout instead of the layout check's message, and every
    result but the layout check "see Start!C3" (Start's input check, the master) instead of a failing input's or
    look-up's message (the result's cell is too narrow to print it)."""
    from xlcalc.outputs import BOUNDED_OUTPUTS
    from xlcalc.scenario import INPUT_BY_NAME
    from xlcalc.workbook.rendering import LOOKED_UP, dependencies

    checks = formulas_wb["Checks"]
    (sheet, at), = formulas_wb.defined_names["Layout_Check"].destinations
    pointer = f'"see {sheet}!{at.replace("$", "")}"'
    assert formulas_wb["Start"]["B3"].value == "Input check"  # the master check, whole in C3
    for out in OUTPUTS:
        inner, guards, check = _peel_guards(named(formulas_wb, out.name).value,
                                            None if out.name == "Layout_Check" else '"see Start!C3"')
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


# Excel's specifications and limits (support.microsoft.com, "Excel specifications and limits", calculation
# specifications): "Length of formula contents: 8,192 characters", "Nested levels of functions: 64". Past either,
# Excel refuses the formula (LibreOffice does not), so the workbook would open in Excel with cells removed.
EXCEL_FORMULA_CHARS = 8192
EXCEL_NESTED_FUNCTIONS = 64


def _nesting(formula: str) -> int:
    """The deepest nesting of function calls in ``formula`` (Excel's tokenizer, as openpyxl reads a formula)."""
    depth = deepest = 0
    for tok in Tokenizer(formula).items:
        if tok.type == "FUNC" and tok.subtype == "OPEN":
            depth += 1
            deepest = max(deepest, depth)
        elif tok.type == "FUNC" and tok.subtype == "CLOSE":
            depth -= 1
    assert depth == 0, formula
    return deepest


def test_nesting_counts_function_calls_only():
    assert _nesting("=1+(2*(3))") == 0
    assert _nesting('=IF(A1>0,IF(ISNUMBER(B1),"(x)",1),SUM(C1:C2))') == 3


def test_every_formula_is_within_excels_limits(formulas_wb):
    """No formula longer than Excel takes or nested deeper (the Sensitivity sheet's cost grid wrote the days out in
    each point's formula: 8,229 characters; it reads the days table's cell now)."""
    longest = deepest = 0
    for ws in formulas_wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f":
                    assert len(c.value) <= EXCEL_FORMULA_CHARS, (ws.title, c.coordinate, len(c.value))
                    assert _nesting(c.value) <= EXCEL_NESTED_FUNCTIONS, (ws.title, c.coordinate)
                    longest, deepest = max(longest, len(c.value)), max(deepest, _nesting(c.value))
    assert longest > 1000 and deepest > 10  # the check saw the long guarded formulas


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

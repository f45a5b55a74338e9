"""Checks that see every input, and presets that work, in the planning workbook.

A finance user pastes values past the cells' data validation (MFU 40 for 40%, utilisation 1.5, a budget of -5,
PP 3 on 80 layers, a GPU name typed wrong): LibreOffice recalculates the workbook, and Start's input check names the
cell and the reason while every result that depends on the input shows that message instead of a number. Every
model preset with every GPU of the dropdowns gives no error value, a layout that splits into whole pieces (uneven
pipeline stages where the model's layers need them) and a title naming the model and the GPU: all pairs in the
engine's evaluation of the workbook's formulas, one pick per model and GPU in LibreOffice
(tests/test_workbook_libreoffice.py).

Expected messages are written here from each input's declared bounds (docs: MFU is a fraction > 0 and at most 1,
utilisation at least 1% and at most 1, a budget above 0 and at most $10 trillion); stage splits are checked by
arithmetic (whole layers, the stages add up to the model's layers, the middle stages equal).
"""

from __future__ import annotations

import functools
import math
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

import lo_batch
from chart_data import chart_data_cells
from named_edits import Edits, named_cell
from procs import run_bounded
from xlcalc import catalog
from xlcalc.frameworks import FRAMEWORKS
from xlcalc.layout import preset_stage_ends
from xlcalc.outputs import OUTPUTS
from xlcalc.planner.search import uneven_stages
from xlcalc.scenario import Scenario, load_scenario
from xlcalc.workbook import build, layout
from xlcalc.workbook.readback import read_workbook

ROOT = Path(__file__).resolve().parent.parent
SEED002 = ROOT / "xlcalc" / "presets" / "seed002-70b-a800.toml"
ERROR_VALUES = ("#DIV/0!", "#VALUE!", "#N/A", "#NAME?", "#REF!", "#NUM!", "#NULL!", "Err:")
ALL_CLEAR = "OK: every key result is computed"

# pasted past the validation: (defined name, value, what the input's declaration allows, in words)
PASTED = {
    "mfu40": ("MFU", 40, "a number > 0 and <= 1"),
    "util15": ("Utilisation", 1.5, "a number >= 0.01 and <= 1"),
    "budget_neg": ("Budget_USD", -5, "a number > 0 and <= 1e+13"),
    "micro0": ("Micro_Batch", 0, "a whole number >= 1 and <= 1,000,000"),
    "gpu_typo": ("GPU_Type", "h100 sxm", "an id from the list on the GPUs sheet, or empty"),
    # the names `xlcalc memory --framework` takes (xlcalc.frameworks), listed
    "framework_typo": ("Framework", "hf-trainer", f"one of {', '.join(FRAMEWORKS)} (Frameworks sheet), or empty"),
}
# results each pasted input feeds (by defined name): every one must show the message, never a number
DEPENDENT = {
    "mfu40": ("Train_Days", "GPU_Hours", "GPUs_for_Deadline", "GPUs_to_Provision", "Compute_Cost_USD",
              "Power_Cost_USD", "Wall_Days", "Total_Cost_USD", "USD_per_M_Tokens", "Budget_Left_USD",
              "Rent_Cost_USD", "Own_Cost_USD"),
    "util15": ("Own_Cost_USD", "Own_USD_per_GPU_Hour", "Breakeven_Months"),
    "budget_neg": ("Budget_Left_USD",),
    "micro0": ("Mem_Total_GB", "Mem_First_Total_GB", "Mem_Activations_GB", "Fits_GPU"),
    "pp3": ("DP_Size", "Mem_Total_GB", "Mem_Static_GB", "Mem_Activations_GB", "Fits_GPU", "Max_Micro_Batch"),
}
# results that do not depend on the pasted input stay numbers
INDEPENDENT = {"mfu40": ("Mem_Total_GB", "Train_FLOPs"), "util15": ("Train_Days", "Total_Cost_USD"),
               "framework_typo": ("Train_Days", "Total_Cost_USD"),
               "budget_neg": ("Train_Days", "Total_Cost_USD", "Own_Cost_USD"), "pp3": ("Train_FLOPs",),
               "micro0": ("Hardware_Capex_USD", "Own_USD_per_GPU_Hour")}
# what the narrow memory cells (the Memory and FineTuning sheets') show for a failing input check or a catalog
# look-up's message: the way to Start's input check (C3, the master), which shows the first failing input whole
CHECK_POINTER = "see Start!C3"
MEMORY_RESULTS = {o.name for o in OUTPUTS if o.guarded}
START_LABELS = {"Train_Days": "Training days on those GPUs", "Total_Cost_USD": "Total cost incl. training tax (USD)",
                "Budget_Left_USD": "Budget left (negative = over)", "Mem_Total_GB": "Memory per GPU (GB)",
                "Fits_GPU": "Fits in one GPU?"}


def _base() -> Scenario:
    """Seed 002's plan on H100 (a GPU with a catalog purchase price, so owning is priced)."""
    data = load_scenario(SEED002).model_dump(exclude={"peak_tflops", "gpu_memory_gb", "gpus_per_node",
                                                      "usd_per_gpu_hour", "price_tier", "price_id"})
    return Scenario.build(**{**data, "gpu": "h100-sxm", "usd_per_gpu_hour": 2.0})


def _where(wb, name) -> str:
    (sheet, at), = wb.defined_names[name].destinations
    return f"{sheet}!{at.replace('$', '')}"


def _start(wb) -> dict:
    ws = wb["Start"]
    return {ws[f"B{r}"].value: ws[f"C{r}"].value for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value}


def _errors(wb) -> list[str]:
    """Error values shown anywhere but Budget's chart-data block (#N/A there draws no point: tests/chart_data.py)."""
    allowed = chart_data_cells(wb)
    return [f"{ws.title}!{c.coordinate}={c.value}" for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if isinstance(c.value, str) and c.value.startswith(ERROR_VALUES)
            and f"{ws.title}!{c.coordinate}" not in allowed]


# --- the split a model preset gets, by arithmetic -----------------------------------------------------------------

def _stages(layers: int, pp: int) -> list[int]:
    first, last = (int(x) for x in preset_stage_ends(layers, pp))
    if first == last == 0:
        return [layers // pp] * pp
    middle = (layers - first - last) / (pp - 2) if pp > 2 else None
    return [first, *([int(middle)] * (pp - 2) if middle is not None else []), last]


@pytest.mark.parametrize("model", [m.id for m in catalog.models()])
def test_a_preset_gets_whole_stages_on_any_pp(model):
    layers = catalog.get_model(model).layers
    for pp in (1, 2, 3, 4, 8, 16, layers):
        stages = _stages(layers, pp)
        assert len(stages) == pp and sum(stages) == layers, (model, pp, stages)
        assert all(isinstance(n, int) and n >= 1 for n in stages), (model, pp, stages)
        assert len(set(stages[1:-1])) <= 1, (model, pp, stages)  # the middle stages hold equal layers
        assert stages[-1] <= stages[0], (model, pp, stages)  # the last stage (output layer, loss) no more
        if layers % pp and (layers + 2) % pp in (0, 1):  # Meta's shape: the ends at most one layer fewer
            assert max(stages) - min(stages) == 1, (model, pp, stages)


def test_the_split_is_metas_where_the_planner_splits_unevenly():
    # Llama 3 405B, Dubey et al. 2024: 126 layers on 16 stages, 7 on the first and the last, 8 on the others
    assert _stages(126, 16) == [7] + [8] * 14 + [7]
    for layers in range(2, 130):
        for pp in range(2, 17):
            meta = uneven_stages(layers, pp)
            if meta is not None and layers % pp:
                assert tuple(_stages(layers, pp)) == meta, (layers, pp)


# --- every model preset x every GPU: the engine's values of the workbook's cells --------------------------------

@pytest.fixture(scope="module")
def seed_book():
    return layout([load_scenario(SEED002)]).book


def test_every_model_preset_with_every_gpu_gives_a_whole_layout_and_a_title_naming_both(seed_book):
    """All pairs in the engine's evaluation of the workbook's own formulas (the same trees LibreOffice recalculates
    in tests/test_workbook_libreoffice.py for one pick per model and per GPU)."""
    book = seed_book
    names = [o.name for o in OUTPUTS]
    before = {n: book.cell(*book.names[n]).value for n in ("Model_Preset", "GPU_Type")}

    def put(name, value):
        sheet, at = book.names[name]
        book.cell(sheet, at).value = value

    try:
        _every_pair(book, names, put)
    finally:
        for n, v in before.items():
            put(n, v)
        book._memo.clear()


def _every_pair(book, names, put):
    for m in catalog.models():
        for g in catalog.gpus():
            put("Model_Preset", m.id)
            put("GPU_Type", g.id)
            book._memo.clear()
            pair = (m.id, g.id)
            layers, pp = book.value_of("Layers"), book.value_of("PP_Size")
            first, last = book.value_of("First_Stage_Layers"), book.value_of("Last_Stage_Layers")
            assert (layers, pp) == (m.layers, 4), pair
            assert book.value_of("Layout_Check") == "OK", pair
            if layers % pp:  # uneven: the ends and the equal middle stages add up to the model's layers
                middle = (layers - first - last) / (pp - 2)
                assert middle == int(middle) and first >= 1 and last >= 1, pair
            else:
                assert first == last == 0, pair
            title = book.value("Start", "C2")
            assert title.startswith(f"{m.name}, ") and f" x {g.name} at MFU 40%" in title, (pair, title)
            values = [book.value_of(n) for n in names] + [book.value("Start", f"C{r}") for r in range(3, 19)]
            texts = [v for v in values if isinstance(v, str)]
            assert not [t for t in texts if t.startswith(ERROR_VALUES)], pair
            assert all(not isinstance(v, float) or math.isfinite(v) for v in values), pair
            check = book.value("Start", "C3")
            missing = [w for w, v in (("Peak_TFLOPS", g.half_tflops), ("GPU_Memory_GB", g.memory_gb),
                                      ("GPUs_per_Node", g.gpus_per_node)) if v is None]
            if missing:  # the catalog lacks a figure of this GPU: the check asks for it
                assert check.startswith(f"{g.id}: no published ") and check.endswith(f"type it in {missing[0]}")
            else:
                assert check == ALL_CLEAR, (pair, check)


# --- pasted values in LibreOffice -------------------------------------------------------------------------------

# The input cells of the other sheets, by their place in the layout of _base() (Scenarios: one column per GPU of the
# comparison, following the Inputs sheet; Sensitivity: the days table's MFU and GPU-count axes; Parallelism: a row's
# TP, PP, ZeRO, recompute, sequence parallel in columns A to E, the plan's row first)
SCENARIO_MFU_ROW_LABEL = "MFU (model FLOPs utilisation)"
PAR_TOTAL_GB_COL = "I"  # "Total GB", the 9th heading of the Parallelism table


@functools.cache
def _places() -> dict:
    lay = layout([_base()])
    days = lay.extras["sensitivity"]["days"]
    ws = lay.book.sheets["Scenarios"]
    gpu_row = next(int(at[1:]) for at, c in ws.items() if at.startswith("A") and c.value == "GPU type")
    plain = {k: v.replace("$", "") for k, v in {
        "scen_mfu": lay.column_maps[0]["MFU"], "scen_days": lay.column_maps[0]["Train_Days"],
        "scen_cost": lay.column_maps[0]["Total_Cost_USD"], "scen2_days": lay.column_maps[1]["Train_Days"],
        "scen3_days": lay.column_maps[2]["Train_Days"], "scen3_peak": lay.column_maps[2]["Peak_TFLOPS"],
        "sens_mfu": days["mfu_refs"][0], "sens_gpus": days["gpu_refs"][1]}.items()}
    plain["scen3_gpu"] = f"Scenarios!E{gpu_row}"
    plain["days"] = [[c.replace("$", "") for c in row] for row in days["cells"]]
    plain["cost"] = [[c.replace("$", "") for c in row] for row in lay.extras["sensitivity"]["cost"]["cells"]]
    return plain


# pasted into the other sheets' input cells (by place), with the message Start's check must show first
OTHER = {
    "scen_mfu": lambda p: ({p["scen_mfu"]: 40}, f"{p['scen_mfu']}: MFU = 40 is not allowed: MFU must be a number > 0 "
                                                 "and <= 1"),
    "scen_gpu": lambda p: ({p["scen3_gpu"]: "h100 sxm"}, f"{p['scen3_gpu']}: GPU_Type = h100 sxm is not allowed: "
                                                        "GPU_Type must be an id from the list on the GPUs sheet, or empty"),
    "sens": lambda p: ({p["sens_mfu"]: 40, p["sens_gpus"]: 2.5},
                       f"{p['sens_mfu']}: MFU = 40 is not allowed: MFU must be a number > 0 and <= 1"),
    "par": lambda p: ({"Parallelism!A5": 2.5, "Parallelism!D6": "sometimes"},
                      "Parallelism!A5: TP_Size = 2.5 is not allowed: TP_Size must be a whole number >= 1 and "
                      "<= 10,000,000"),
}
# Layouts typed into Parallelism rows that do not split into whole pieces (the typed 80 layers, 64 heads, 1,024 GPUs):
# row -> (TP, PP, the cell the check blames, by its column heading)
PAR_LAYOUTS = {6: (1, 3, "PP"), 7: (3, 1, "TP"), 8: (4, 5, "Layout check")}
# PP 7 on 80 layers (with 896 GPUs: 32 whole replicas of TP 4 x PP 7, and whole replicas of every TP x PP of the
# Parallelism candidates, which divide the 1,024 GPUs they were made for): typed architecture, and a model preset
PP7 = {"pp7": {"PP_Size": 7, "N_GPUs": 896}, "pp7_preset": {"Model_Preset": "llama2-70b", "PP_Size": 7, "N_GPUs": 896}}


@lo_batch.register("workbook_checks")
def _produce(work: Path) -> tuple[list[Path], list[str]]:
    pristine = work / "plan.xlsx"
    build(pristine, [_base()])
    cases = {**{k: {name: value} for k, (name, value, _) in PASTED.items()}, "pp3": {"PP_Size": 3}, **PP7,
             "precision_unoffered": {"Framework": "torchtitan", "Precision": "fp32"},
             **{k: f(_places())[0] for k, f in OTHER.items()},
             "par_layout": {f"Parallelism!{col}{r}": v for r, (tp, pp, _) in PAR_LAYOUTS.items()
                            for col, v in (("A", tp), ("B", pp))}}
    book = Edits(pristine)
    paths = [book.save(work / f"{case}.xlsx", values, text=True) for case, values in cases.items()]
    return paths, list(cases)


@pytest.fixture(scope="module")
def lo_paths() -> dict:
    paths, names = lo_batch.results("workbook_checks")
    return dict(zip(names, paths))


@pytest.fixture(scope="module")
def lo(lo_paths) -> dict:
    return {n: openpyxl.load_workbook(p, data_only=True) for n, p in lo_paths.items()}


def test_the_plan_as_built_passes_every_check(seed_book):
    book = seed_book
    values = book.cached_values()  # the engine's values (LibreOffice's equal them: test_workbook_libreoffice.py)
    assert book.value("Start", "C3") == ALL_CLEAR
    checks = [v for (sheet, _at), v in values.items() if sheet == "Checks"]
    assert len(checks) > 80 and set(checks) == {"OK"}


@pytest.mark.parametrize("case", sorted(PASTED))
def test_a_pasted_value_is_named_with_its_cell_and_its_dependents_show_no_number(lo, case):
    wb = lo[case]
    name, value, allowed = PASTED[case]
    shown = value if not isinstance(value, float) or not value.is_integer() else int(value)
    message = f"{_where(wb, name)}: {name} = {shown} is not allowed: {name} must be {allowed}"
    assert wb["Start"]["C3"].value == message
    start = _start(wb)
    for result in DEPENDENT.get(case, ()):
        # a result's cell (too narrow to print the message): the way to Start!C3, which shows it whole
        assert named_cell(wb, result).value == CHECK_POINTER, (case, result, named_cell(wb, result).value)
        if result in START_LABELS:
            assert start[START_LABELS[result]] == message, (case, result)
    for result in INDEPENDENT.get(case, ()):
        v = named_cell(wb, result).value
        assert isinstance(v, (int, float)) and math.isfinite(v), (case, result, v)
    assert not _errors(wb), (case, _errors(wb)[:5])


def test_a_gpu_typed_wrong_leaves_no_number_that_needs_its_figures(lo):
    wb = lo["gpu_typo"]
    looked_up = "h100 sxm: not on the GPUs sheet \u2014 pick an id from the list"
    assert named_cell(wb, "Peak_TFLOPS").value == looked_up
    # peak, then GPU memory: the results' cells point to Start!C3 (Start's rows show the look-up's message)
    for result in ("Train_Days", "GPU_Hours", "Total_Cost_USD", "Budget_Left_USD", "Fits_GPU", "Fit_Verdict",
                   "Max_Micro_Batch"):
        assert named_cell(wb, result).value == CHECK_POINTER, result
    assert wb["Start"]["C3"].value == (f"{_where(wb, 'GPU_Type')}: GPU_Type = h100 sxm is not allowed: GPU_Type must "
                                       "be an id from the list on the GPUs sheet, or empty")
    start = _start(wb)
    assert start["Training days on those GPUs"] == start["Total cost incl. training tax (USD)"] == looked_up
    assert start["Fits in one GPU?"] == looked_up
    assert isinstance(named_cell(wb, "Mem_Total_GB").value, float)  # the model's memory needs no GPU figure


def test_a_framework_typed_wrong_leaves_no_memory_number(lo):
    """hf-trainer is not a framework of the list: the memory inputs it would fill say so, and every memory result
    shows that instead of a number (time and cost do not depend on it)."""
    for case, words in (("framework_typo", "hf-trainer at its usual precision"),
                        ("precision_unoffered", "torchtitan at fp32")):
        wb = lo[case]
        looked_up = f"{words}: not on the Frameworks sheet \u2014 pick a Framework and one of the precisions it offers there"
        for name in ("Logits_Buffer_Bytes", "Optimizer_Step_Bytes", "Autocast_Copy_Bytes", "Grads_Freed"):
            assert named_cell(wb, name).value == looked_up, (case, name)
        for result in ("Mem_Total_GB", "Fits_GPU", "Fit_Verdict", "Max_Micro_Batch"):  # the way to Start!C3
            assert named_cell(wb, result).value == CHECK_POINTER, (case, result)
        # Start's memory result: the message the memory cell points to (the first failing input's, Framework's or
        # Precision's: the preset choices are checked before the other inputs), not the way to it
        assert _start(wb)["Memory per GPU (GB)"] == wb["Start"]["C3"].value != CHECK_POINTER, case
        assert isinstance(named_cell(wb, "Train_Days").value, float), case
        assert not _errors(wb), (case, _errors(wb)[:5])
    # torchtitan offers amp only (xlcalc.frameworks): Start's check names the cell, the framework and what it offers
    wb = lo["precision_unoffered"]
    assert wb["Start"]["C3"].value == (
        f"{_where(wb, 'Precision')}: Precision = fp32 is not allowed: Precision must be a precision the Frameworks "
        f"sheet gives for framework torchtitan: {', '.join(FRAMEWORKS['torchtitan'])}, or empty")


def test_a_layout_that_splits_no_whole_stages_is_named_with_the_pp_cell(lo):
    wb = lo["pp3"]
    # 80 layers on 3 stages: 26.67 layers each
    why = (f"pp = 3 is not allowed: pp must be a divisor of layers = 80 (every pipeline stage holds whole layers: "
           f"layers/PP = {round(80 / 3, 2)}; or give an uneven split: layers_per_stage, or first_stage_layers and "
           f"last_stage_layers)")
    assert wb["Start"]["C3"].value == f"{_where(wb, 'PP_Size')} (PP_Size): {why}"
    _layout_refused(wb, why)
    for result in INDEPENDENT["pp3"]:
        assert isinstance(named_cell(wb, result).value, float), result
    assert not _errors(wb)


def _layout_refused(wb, why: str) -> None:
    """The layout check's message shows whole in the layout check's cell and in Start's key results; the memory
    results (narrow cells) show the way to it, "see <its cell>", never a number."""
    assert named_cell(wb, "Layout_Check").value == why
    pointer = f"see {_where(wb, 'Layout_Check')}"
    assert pointer == "see Memory!B4"  # the cell docs/workbook.md names
    start = _start(wb)
    for result in DEPENDENT["pp3"]:
        assert named_cell(wb, result).value == pointer, result
        if result in START_LABELS:
            assert start[START_LABELS[result]] == why, result


def test_the_master_check_is_red_unless_all_clear(seed_book):
    from xlcalc.workbook.writer import to_workbook

    ws = to_workbook(seed_book)["Start"]
    rules = [(str(rng.sqref), r.operator, r.formula) for rng in ws.conditional_formatting for r in rng.rules]
    assert ("C3", "notEqual", [f'"{ALL_CLEAR}"']) in rules


def test_the_docs_examples_name_the_cells_the_builder_places(seed_book):
    """docs/workbook.md's example messages name the cells where the default plan's inputs stand."""
    import re

    book = seed_book
    text = (ROOT / "docs" / "workbook.md").read_text(encoding="utf-8")
    found = re.findall(r"`?(\w+)!([A-Z]+\d+)(?: \((\w+)\))?: (\w+) = ", text)
    assert len(found) >= 5
    for sheet, at, named, name in found:
        input_name = named or name
        if input_name == "pp":
            input_name = "PP_Size"
        if sheet == "Parallelism":  # a row's own cell: the column of its input, in a candidate's row
            head = {"PP_Size": "PP", "TP_Size": "TP", "Layout_Check": "Layout check"}[input_name]
            col = at.rstrip("0123456789")
            assert book.value(sheet, f"{col}4") == head and int(at[len(col):]) >= 5, (sheet, at, input_name)
            continue
        assert book.names[input_name] == (sheet, at), (sheet, at, input_name)


# --- pasted into the input cells of Scenarios, Sensitivity and Parallelism --------------------------------------

def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@pytest.mark.parametrize("case", sorted(OTHER))
def test_a_value_pasted_on_another_sheet_is_named_by_the_master_check(lo, case):
    """A value pasted into an input cell of Scenarios, Sensitivity or Parallelism feeds Start's input check (the cell
    and the reason, in the words of the input's declaration), and the results over that cell show the message."""
    wb = lo[case]
    p = _places()
    _, message = OTHER[case](p)
    assert wb["Start"]["C3"].value == message
    assert wb["Start"]["C3"].value != ALL_CLEAR
    for name in ("Train_Days", "Total_Cost_USD", "Mem_Total_GB"):  # the Inputs sheet's plan is not touched
        assert _number(named_cell(wb, name).value), (case, name)
    if case == "scen_mfu":  # its column's results: the cell the message blames; the other columns: numbers
        for where in ("scen_days", "scen_cost"):
            assert named_cell(wb, p[where]).value == message.split(": ", 1)[0] + " refused: see Checks", where
        assert _number(named_cell(wb, p["scen2_days"]).value)
    elif case == "scen_gpu":  # the column's figures are looked up by its GPU: the look-up's message, no number
        looked_up = "h100 sxm: not on the GPUs sheet \u2014 pick an id from the list"
        assert named_cell(wb, p["scen3_peak"]).value == looked_up
        assert named_cell(wb, p["scen3_days"]).value == looked_up
        assert _number(named_cell(wb, p["scen2_days"]).value)
    elif case == "sens":  # the MFU column and the GPU-count row point to Start's check; the rest are numbers
        for table in ("days", "cost"):
            grid = p[table]
            for i, row in enumerate(grid):
                for j, where in enumerate(row):
                    v = named_cell(wb, where).value
                    if j == 0 or i == 1:
                        assert v == CHECK_POINTER, (table, where, v)
                    else:
                        assert _number(v), (table, where, v)
    elif case == "par":  # row 5 (TP 2.5) and row 6 (recompute "sometimes"): the way to Start's check, whose message
        # is row 5's (the first failing); row 7 a number of GB
        ws = wb["Parallelism"]
        assert ws[f"{PAR_TOTAL_GB_COL}5"].value == ws[f"{PAR_TOTAL_GB_COL}6"].value == CHECK_POINTER
        assert ws[f"{PAR_TOTAL_GB_COL}4"].value == "Total GB"
        assert _number(ws[f"{PAR_TOTAL_GB_COL}7"].value), ws[f"{PAR_TOTAL_GB_COL}7"].value
    checks = wb["Checks"]
    failing = [checks[f"G{r}"].value for r in range(1, checks.max_row + 1)
               if checks[f"F{r}"].value and checks[f"G{r}"].value not in (None, "OK", "check (OK: allowed)")]
    assert message in failing, failing
    assert not _errors(wb), (case, _errors(wb)[:5])


# --- PP 7 on 80 layers: as xlcalc memory / estimate answer it -------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m xlcalc ...``, bounded by CPU time (tests/procs.py), not by the clock: a refusal takes seconds."""
    return run_bounded([sys.executable, "-m", "xlcalc", *args], cpu_s=120, cwd=ROOT)


def test_pp7_on_80_layers_is_refused_as_the_cli_refuses_it(lo):
    """PP 7 on the typed 80 layers (no model preset, no split given): xlcalc memory and estimate refuse it; Start's
    check names the PP cell with the same reason and no memory result shows a number."""
    wb = lo["pp7"]
    flags = ("--params-b", "70", "--layers", "80", "--hidden", "8192", "--heads", "64", "--vocab", "32000",
             "--seq-len", "4096", "--tp", "4", "--pp", "7", "--n-gpus", "896")
    memory = _cli("memory", *flags)
    estimate = _cli("estimate", *flags, "--tokens-t", "2", "--gpu", "h100-sxm")
    refusals = []
    for run, prog in ((memory, "memory"), (estimate, "estimate")):
        assert run.returncode == 2, (prog, run.stdout[-300:], run.stderr[-300:])
        refusals.append(run.stderr.strip().removeprefix(f"xlcalc {prog}: error: "))
    why = refusals[0]
    assert refusals[1] == why
    assert why.startswith("pp = 7 is not allowed: pp must be a divisor of layers = 80")
    assert f"layers/PP = {round(80 / 7, 2)}" in why
    assert wb["Start"]["C3"].value == f"{_where(wb, 'PP_Size')} (PP_Size): {why}"
    _layout_refused(wb, why)
    assert _number(named_cell(wb, "Train_FLOPs").value)
    assert not _errors(wb)


def test_a_parallelism_row_whose_layout_does_not_divide_is_named_by_the_master_check(lo):
    """PP 3 on 80 layers, TP 3 on 64 heads, and TP 4 x PP 5 on 1,024 GPUs typed into three Parallelism rows: each row's
    layout check cell shows the reason xlcalc memory gives for that layout short ("pp = 3 refused": the input and
    value it names, where that fits the cell, else "refused: see Checks") and its results the way to that cell
    instead of a number; each row's check on the Checks sheet names the row's cell it blames (its PP or TP cell; its
    layout check cell where the GPUs, an Inputs figure, do not divide) and why, whole in column H and without the
    arithmetic in brackets in the printed column G; Start's input check shows the first of them whole, and the other
    rows stay numbers."""
    wb = lo["par_layout"]
    ws = wb["Parallelism"]
    heads = {ws.cell(4, c).value: c for c in range(1, ws.max_column + 1) if ws.cell(4, c).value}
    results = range(heads["DP"], heads["In flight, first stage"] + 1)
    flags = ("--params-b", "70", "--layers", "80", "--hidden", "8192", "--heads", "64", "--vocab", "32000",
             "--seq-len", "4096", "--n-gpus", "1024")
    expected = []
    for r, (tp, pp, blamed) in PAR_LAYOUTS.items():
        assert (ws[f"A{r}"].value, ws[f"B{r}"].value) == (tp, pp), r
        run = _cli("memory", *flags, "--tp", str(tp), "--pp", str(pp))
        assert run.returncode == 2, (r, run.stdout[-300:])
        why = run.stderr.strip().removeprefix("xlcalc memory: error: ")
        check_col = ws.cell(r, heads["Layout check"]).column_letter
        head = why.split(" is not allowed")[0]  # the input and its value, as the CLI names them
        short = f"{head} refused" if len(head) <= 10 else "refused: see Checks"
        assert ws.cell(r, heads["Layout check"]).value == short, r
        shown = [ws.cell(r, c).value for c in results if c != heads["Layout check"]]
        assert shown == [f"see column {check_col}"] * len(shown), (r, shown[:3])
        cell = f"Parallelism!{ws.cell(r, heads[blamed]).column_letter}{r}"
        name = {"PP": "PP_Size", "TP": "TP_Size", "Layout check": "Layout_Check"}[blamed]
        expected.append(f"{cell} ({name}): {why}")
    assert expected[0].startswith("Parallelism!B6 (PP_Size): pp = 3 is not allowed: pp must be a divisor of layers")
    assert "tp = 3 is not allowed" in expected[1] and "n_gpus = 1024 is not allowed" in expected[2]
    assert wb["Start"]["C3"].value == expected[0]
    checks = wb["Checks"]
    failing = [r for r in range(1, checks.max_row + 1)
               if checks[f"F{r}"].value == "Layout_Check" and checks[f"G{r}"].value != "OK"]
    assert [checks[f"H{r}"].value for r in failing] == expected  # whole
    # printed: without the arithmetic in brackets after the reason, or, where that passes 90 characters, up to "is not
    # allowed" (one line of column G's 100 characters)
    lines = [e[:e.index(" (", e.index("): "))] for e in expected]
    lines = [e if len(e) <= 90 else e[:e.index(" is not allowed") + len(" is not allowed")] for e in lines]
    assert [checks[f"G{r}"].value for r in failing] == lines
    assert lines[2] == "Parallelism!N8 (Layout_Check): n_gpus = 1024 is not allowed"
    for r in (5, 9):  # the plan's row and the next candidate: numbers
        assert _number(ws.cell(r, heads["Total GB"]).value), r
    for name in ("Train_Days", "Total_Cost_USD", "Mem_Total_GB"):  # the Inputs sheet's plan is not touched
        assert _number(named_cell(wb, name).value), name
    assert not _errors(wb), _errors(wb)[:5]


def test_pp7_with_a_model_preset_is_the_split_its_cells_show_and_the_engine_agrees(lo, lo_paths):
    """With a model preset, PP 7 on its 80 layers takes the uneven split First_Stage_Layers / Last_Stage_Layers show
    (12 layers on each of the 5 middle stages, the other 20 shared by the ends: 10 and 10); xlcalc memory without a
    split refuses it and asks for one, and the engine (xlcalc read) given the workbook's cells computes the same
    memory, days and cost."""
    wb = lo["pp7_preset"]
    assert wb["Start"]["C3"].value == ALL_CLEAR
    first, last = named_cell(wb, "First_Stage_Layers").value, named_cell(wb, "Last_Stage_Layers").value
    middle = math.ceil(80 / 7)
    assert (first, last) == ((80 - 5 * middle) / 2, (80 - 5 * middle) / 2) == (10, 10)
    assert named_cell(wb, "Layout_Check").value == "OK"
    refused = _cli("memory", "--model", "llama2-70b", "--tp", "4", "--pp", "7", "--n-gpus", "896")
    assert refused.returncode == 2 and "first_stage_layers and last_stage_layers" in refused.stderr
    given = _cli("memory", "--model", "llama2-70b", "--tp", "4", "--pp", "7", "--n-gpus", "896",
                 "--first-stage-layers", "10", "--last-stage-layers", "10")
    assert given.returncode == 0, given.stderr[-300:]
    rb = read_workbook(lo_paths["pp7_preset"])
    assert (rb.scenario.pp, rb.scenario.first_stage_layers, rb.scenario.last_stage_layers) == (7, 10, 10)
    assert not rb.disagreements, rb.disagreements[:3]
    for name in ("Mem_Total_GB", "Train_Days", "Total_Cost_USD"):
        assert _number(named_cell(wb, name).value), name


def test_the_docs_example_of_a_scenarios_cell_is_the_cell_the_builder_places():
    """docs/workbook.md names the first Scenarios column's MFU cell in its example: the builder's cell."""
    import re

    text = " ".join((ROOT / "docs" / "workbook.md").read_text(encoding="utf-8").split())
    found = re.findall(r"MFU 40 pasted into the first Scenarios column is named as cell `(\w+!\w+)`", text)
    assert found == [_places()["scen_mfu"]]

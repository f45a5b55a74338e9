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

import math
from pathlib import Path

import openpyxl
import pytest

import lo_batch
from chart_data import chart_data_cells
from named_edits import Edits
from xlcalc import catalog
from xlcalc.layout import preset_stage_ends
from xlcalc.planner.search import uneven_stages
from xlcalc.scenario import OUTPUTS, Scenario, load_scenario
from xlcalc.workbook import build, layout

ROOT = Path(__file__).resolve().parent.parent
SEED002 = ROOT / "xlcalc" / "presets" / "seed002-70b-a800.toml"
ERROR_VALUES = ("#DIV/0!", "#VALUE!", "#N/A", "#NAME?", "#REF!", "#NUM!", "#NULL!", "Err:")
ALL_CLEAR = "OK: every key result is computed"

# pasted past the validation: (defined name, value, what the input's declaration allows, in words)
PASTED = {
    "mfu40": ("MFU", 40, "a number > 0 and <= 1"),
    "util15": ("Utilisation", 1.5, "a number >= 0.01 and <= 1"),
    "budget_neg": ("Budget_USD", -5, "a number > 0 and <= 1e+13"),
    "gpu_typo": ("GPU_Type", "h100 sxm", "an id from the list on the GPUs sheet, or empty"),
}
# results each pasted input feeds (by defined name): every one must show the message, never a number
DEPENDENT = {
    "mfu40": ("Train_Days", "GPU_Hours", "GPUs_for_Deadline", "GPUs_to_Provision", "Compute_Cost_USD",
              "Power_Cost_USD", "Wall_Days", "Total_Cost_USD", "USD_per_M_Tokens", "Budget_Left_USD",
              "Rent_Cost_USD", "Own_Cost_USD"),
    "util15": ("Own_Cost_USD", "Own_USD_per_GPU_Hour", "Breakeven_Months"),
    "budget_neg": ("Budget_Left_USD",),
    "pp3": ("DP_Size", "Mem_Total_GB", "Mem_Static_GB", "Mem_Activations_GB", "Fits_GPU", "Max_Micro_Batch"),
}
# results that do not depend on the pasted input stay numbers
INDEPENDENT = {"mfu40": ("Mem_Total_GB", "Train_FLOPs"), "util15": ("Train_Days", "Total_Cost_USD"),
               "budget_neg": ("Train_Days", "Total_Cost_USD", "Own_Cost_USD"), "pp3": ("Train_FLOPs",)}
START_LABELS = {"Train_Days": "Training days on those GPUs", "Total_Cost_USD": "Total cost incl. training tax (USD)",
                "Budget_Left_USD": "Budget left (negative = over)", "Mem_Total_GB": "Memory per GPU (GB)",
                "Fits_GPU": "Fits in one GPU?"}


def _base() -> Scenario:
    """Seed 002's plan on H100 (a GPU with a catalog purchase price, so owning is priced)."""
    data = load_scenario(SEED002).model_dump(exclude={"peak_tflops", "gpu_memory_gb", "gpus_per_node",
                                                      "usd_per_gpu_hour", "price_tier", "price_id"})
    return Scenario.build(**{**data, "gpu": "h100-sxm", "usd_per_gpu_hour": 2.0})


def _named(wb, name):
    (sheet, at), = wb.defined_names[name].destinations
    return wb[sheet][at.replace("$", "")]


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

@lo_batch.register("workbook_checks")
def _produce(work: Path) -> tuple[list[Path], list[str]]:
    pristine = work / "plan.xlsx"
    build(pristine, [_base()])
    cases = {**{k: {name: value} for k, (name, value, _) in PASTED.items()}, "pp3": {"PP_Size": 3}}
    book = Edits(pristine)
    paths = [book.save(work / f"{case}.xlsx", values, text=True) for case, values in cases.items()]
    return paths, list(cases)


@pytest.fixture(scope="module")
def lo() -> dict:
    paths, names = lo_batch.results("workbook_checks")
    return {n: openpyxl.load_workbook(p, data_only=True) for n, p in zip(names, paths)}


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
        assert _named(wb, result).value == message, (case, result, _named(wb, result).value)
        if result in START_LABELS:
            assert start[START_LABELS[result]] == message, (case, result)
    for result in INDEPENDENT.get(case, ()):
        v = _named(wb, result).value
        assert isinstance(v, (int, float)) and math.isfinite(v), (case, result, v)
    assert not _errors(wb), (case, _errors(wb)[:5])


def test_a_gpu_typed_wrong_leaves_no_number_that_needs_its_figures(lo):
    wb = lo["gpu_typo"]
    looked_up = "h100 sxm: not on the GPUs sheet \u2014 pick an id from the list"
    assert _named(wb, "Peak_TFLOPS").value == looked_up
    for result in ("Train_Days", "GPU_Hours", "Total_Cost_USD", "Budget_Left_USD", "Fits_GPU"):  # peak, memory
        assert _named(wb, result).value == looked_up, result
    start = _start(wb)
    assert start["Training days on those GPUs"] == start["Total cost incl. training tax (USD)"] == looked_up


def test_a_layout_that_splits_no_whole_stages_is_named_with_the_pp_cell(lo):
    wb = lo["pp3"]
    # 80 layers on 3 stages: 26.67 layers each
    why = (f"pp = 3 is not allowed: pp must be a divisor of layers = 80 (every pipeline stage holds whole layers: "
           f"layers/PP = {round(80 / 3, 2)}; or give an uneven split: layers_per_stage, or first_stage_layers and "
           f"last_stage_layers)")
    assert wb["Start"]["C3"].value == f"{_where(wb, 'PP_Size')} (PP_Size): {why}"
    start = _start(wb)
    for result in DEPENDENT["pp3"]:
        assert _named(wb, result).value == why, result
        if result in START_LABELS:
            assert start[START_LABELS[result]] == why, result
    for result in INDEPENDENT["pp3"]:
        assert isinstance(_named(wb, result).value, float), result
    assert not _errors(wb)


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
        assert book.names[input_name] == (sheet, at), (sheet, at, input_name)

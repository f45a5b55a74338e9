"""The workbook's Framework and Precision choices: dropdowns of the CLI's names, the Frameworks sheet written from
xlcalc.frameworks with a source per fact, the five memory inputs following the choice with the CLI's precedence (a
recipe wins for the bytes, a typed number wins), read-back of the choice and a bad name caught.

Expected values: the frameworks' facts as xlcalc.frameworks declares them with their sources (transformers' eager
loss on upcast logits: 4 + 4 + 4 = 12 bytes per logit; fp32 weights under autocast: 4 + 4 + 8 bytes per parameter,
2 bytes of bf16 weight copies; torchtitan's FSDP2 mixed precision: no autocast copies), and the CLI's own answer for
the same run. LibreOffice's recalculation of picked frameworks: tests/test_memory_faces.py; a bad name pasted past
the dropdown: tests/test_workbook_checks.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

from named_edits import list_cells, named_cell, validation_of
from xlcalc.cli import main
from xlcalc.errors import InputError
from xlcalc.frameworks import FRAMEWORKS, PRECISIONS, PROFILE_FIELDS
from xlcalc.recipes import MEMORY_DEFAULTS, RECIPES
from xlcalc.scenario import Scenario, load_scenario
from xlcalc.workbook import build, layout
from xlcalc.workbook.readback import read_workbook

ROOT = Path(__file__).resolve().parent.parent
SEED002 = ROOT / "xlcalc" / "presets" / "seed002-70b-a800.toml"
FRAMEWORK_INPUTS = ("Logits_Buffer_Bytes", "Optimizer_Step_Bytes", "Autocast_Copy_Bytes", "Grads_Freed")
BYTES = ("Bytes_Weights", "Bytes_Grads", "Bytes_Optimizer")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fw") / "planner.xlsx"
    build(path, [Scenario.build(model="llama3.1-8b", gpu="h100-sxm", tp=2, pp=2, n_gpus=64, seq_len=8192,
                                micro_batch=1)])
    return path


@pytest.fixture(scope="module")
def formulas(built):
    return openpyxl.load_workbook(built)


def test_the_dropdowns_list_the_clis_framework_and_precision_names(formulas):
    for name, want in (("Framework", list(FRAMEWORKS)), ("Precision", list(PRECISIONS))):
        cell = named_cell(formulas, name)
        assert cell.value in (None, "") and not cell.protection.locked and cell.parent.title == "Inputs"
        dv = validation_of(formulas, name)
        assert dv.type == "list" and dv.formula1.startswith("Frameworks!$A$")
        assert list_cells(formulas, dv.formula1) == want
    # the names `xlcalc memory --framework/--precision` takes
    assert {"megatron", "transformers", "torchtitan", "torchtune", "deepspeed"} <= set(FRAMEWORKS)
    assert set(PRECISIONS) == {"bf16", "amp", "fp32"}


def test_every_profile_has_a_row_per_fact_with_its_source(formulas):
    ws = formulas["Frameworks"]
    rows = {}
    for r in ws.iter_rows(min_row=4):
        key = r[0].value
        if isinstance(key, str) and key.count("|") == 2 and not key.startswith("key "):
            rows[key] = [c.value for c in r[1:6]]
    want = {}
    for fw, profiles in FRAMEWORKS.items():
        for pr, p in profiles.items():
            for field in PROFILE_FIELDS:
                value, source = p.facts.get(field, (None, None))
                want[f"{fw}|{pr}|{field}"] = (fw, pr, field, value)
                got = rows[f"{fw}|{pr}|{field}"]
                if source is not None:
                    assert got[4] == source, (fw, pr, field)
                else:  # no source gives it: the cell stays empty and the source column says so
                    assert "No source gives" in got[4] and "neutral default" in got[4], (fw, pr, field)
    assert {k: tuple(v[:4]) for k, v in rows.items()} == want
    # independent facts (xlcalc/frameworks.py's sources): transformers' eager loss on upcast logits 4 + 4 + 4,
    # fp32 weights under autocast (recipe fp32: 4 + 4 + 8) with 2-byte bf16 copies, zero_grad frees the gradients
    assert rows["transformers|amp|logits_buffer_bytes"][3] == 12
    assert rows["transformers|amp|recipe"][3] == "fp32" and RECIPES["fp32"].weights == 4
    assert rows["transformers|amp|autocast_copy_bytes"][3] == 2
    assert rows["transformers|amp|grads_freed"][3] is True
    assert rows["deepspeed|amp|logits_buffer_bytes"][3] is None  # no source: empty, never guessed


def test_no_framework_picked_leaves_the_typed_numbers(formulas, built):
    values = openpyxl.load_workbook(built, data_only=True)
    sc = read_workbook(built).scenario
    assert sc.framework is None and sc.precision is None
    for name in (*FRAMEWORK_INPUTS, *BYTES):
        text = named_cell(formulas, name).value
        assert isinstance(text, str) and 'IF(Framework&Precision="",' in text, (name, text)
    # today's defaults: Megatron-Core's (xlcalc.recipes: 2 + 4 + 12 bytes, 4 bytes per logit, grads kept)
    assert [named_cell(values, n).value for n in BYTES] == [2, 4, 12]
    assert named_cell(values, "Logits_Buffer_Bytes").value == MEMORY_DEFAULTS["logits_buffer_bytes"] == 4
    assert named_cell(values, "Grads_Freed").value is False


def _edited(built: Path, tmp_path: Path, values: dict) -> Path:
    wb = openpyxl.load_workbook(built)
    for name, value in values.items():
        named_cell(wb, name).value = value
    out = tmp_path / "edited.xlsx"
    wb.save(out)  # openpyxl keeps the formulas and drops the cached values
    return out


def test_a_picked_framework_fills_the_memory_inputs_as_the_engine_evaluates_them():
    """The engine's evaluation of the workbook's own formulas (LibreOffice's: tests/test_memory_faces.py)."""
    book = layout([load_scenario(SEED002)]).book

    def put(name, value):
        book.cell(*book.names[name]).value = value
        book._memo.clear()

    put("Recipe_Id", "")
    for fw, pr, want in (("transformers", "", (4, 4, 8, 12, 0, 2, True)),
                         ("torchtitan", "amp", (4, 4, 8, 12, 0, 0, True)),
                         ("torchtune", "", (2, 2, 4, 5, 0, 0, True)),
                         ("megatron", "fp32", (4, 4, 8, 4, 0, 0, False))):
        put("Framework", fw)
        put("Precision", pr)
        got = tuple(book.value_of(n) for n in (*BYTES, *FRAMEWORK_INPUTS))
        assert got == want, (fw, pr, got)
        assert book.value("Start", "C3") == "OK: every key result is computed"
    # a picked recipe wins for the bytes per parameter; the framework still sets the rest
    put("Recipe_Id", "megatron")
    put("Framework", "transformers")
    put("Precision", "")
    assert tuple(book.value_of(n) for n in (*BYTES, *FRAMEWORK_INPUTS)) == (2, 4, 12, 12, 0, 2, True)
    # deepspeed: no source gives its logits buffer or grads freed: the neutral defaults, as the CLI takes them
    put("Framework", "deepspeed")
    assert (book.value_of("Logits_Buffer_Bytes"), book.value_of("Grads_Freed")) == (
        MEMORY_DEFAULTS["logits_buffer_bytes"], MEMORY_DEFAULTS["grads_freed"])


@pytest.mark.parametrize("framework, precision", [("transformers", "amp"), ("torchtitan", None), ("torchtune", "bf16")])
def test_a_scenario_with_a_framework_gives_the_memory_of_the_cli(capsys, tmp_path, framework, precision):
    sc = Scenario.build(model="llama3.1-8b", gpu="h100-sxm", tp=2, pp=2, n_gpus=64, seq_len=8192, micro_batch=1,
                        framework=framework, precision=precision)
    path = tmp_path / "fw.xlsx"
    lay = build(path, [sc])
    argv = ["estimate", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--tp", "2", "--pp", "2", "--n-gpus", "64",
            "--seq-len", "8192", "--micro-batch", "1", "--framework", framework, "--json"]
    argv += ["--precision", precision] if precision else []
    assert main(argv) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert lay.book.value_of("Mem_Total_GB") == pytest.approx(estimate["results"]["Mem_Total_GB"], rel=1e-12)
    assert lay.book.value_of("Fit_Verdict") == estimate["results"]["Fit_Verdict"]
    values = openpyxl.load_workbook(path, data_only=True)
    assert named_cell(values, "Framework").value == framework
    rb = read_workbook(path)
    assert rb.ok and rb.scenario == sc
    assert (rb.scenario.framework, rb.scenario.precision) == (framework, precision or next(iter(FRAMEWORKS[framework])))


def test_read_back_takes_the_picked_framework(built, tmp_path):
    """Framework picked in the cell, not yet recalculated: the framework fills the five inputs, as in the sheet."""
    rb = read_workbook(_edited(built, tmp_path, {"Framework": "transformers", "Precision": "amp"}))
    sc = rb.scenario
    assert (sc.framework, sc.precision) == ("transformers", "amp")
    assert (sc.bytes_weights, sc.bytes_grads, sc.bytes_optimizer) == (4, 4, 8)
    assert (sc.logits_buffer_bytes, sc.optimizer_step_bytes, sc.autocast_copy_bytes, sc.grads_freed) == (12, 0, 2, True)
    assert not rb.findings and not rb.disagreements
    # a number typed over a looked-up input wins over the framework
    rb = read_workbook(_edited(built, tmp_path, {"Framework": "transformers", "Logits_Buffer_Bytes": 5}))
    assert (rb.scenario.logits_buffer_bytes, rb.scenario.autocast_copy_bytes) == (5, 2)


@pytest.mark.parametrize("values, words", [
    ({"Framework": "hf-trainer"}, "framework = 'hf-trainer' is not allowed: framework must be one of megatron, "
                                  "transformers, torchtitan"),
    ({"Framework": "HF Trainer"},
     "framework = 'HF Trainer' is not allowed: framework must be one of megatron, transformers, torchtitan, "
     "torchtitan-compile, torchtune, torchtune-compile, deepspeed, llm-foundry (the Framework dropdown), or empty (the "
     "workbook's look-ups take the framework's id: pick transformers)"),
    ({"Precision": "bf16-mixed"},
     "precision = 'bf16-mixed' is not allowed: precision must be one of bf16, amp, fp32, default (the Precision "
     "dropdown), or empty (the workbook's look-ups take the precision's id: pick amp)"),
    ({"Stack": "HF Trainer"},
     "stack = 'HF Trainer' is not allowed: stack must be one of megatron, megatron-2021, llm-foundry, fsdp-eager, "
     "fsdp-compiled (the Stack dropdown) (the workbook's look-ups take the stack's id: pick fsdp-eager)"),
    ({"LoRA_Targets": "q_proj,v_proj"},
     "lora_targets = 'q_proj,v_proj' is not allowed: lora_targets must be one of qv, qkv, attention, all_linear (the "
     "LoRA_Targets dropdown) (the workbook's look-ups take the lora_targets's id: pick qv)"),
    ({"Framework": "torchtitan", "Precision": "fp32"}, "precision = 'fp32' is not allowed: precision must be one of "
                                                        "amp with framework torchtitan"),
    ({"Precision": "fp8"}, "precision = 'fp8' is not allowed: precision must be one of bf16, amp, fp32"),
])
def test_read_back_names_a_bad_framework_or_precision_with_the_known_ones(built, tmp_path, values, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_workbook(_edited(built, tmp_path, values))


def test_the_workbook_checks_name_a_bad_framework_and_a_precision_it_does_not_offer():
    """The engine's evaluation of the Checks sheet's formulas (LibreOffice's: tests/test_workbook_checks.py)."""
    book = layout([load_scenario(SEED002)]).book

    def put(name, value):
        book.cell(*book.names[name]).value = value
        book._memo.clear()

    where = {n: "!".join(book.names[n]) for n in ("Framework", "Precision")}
    put("Framework", "hf-trainer")
    assert book.value("Start", "C3") == (
        f"{where['Framework']}: Framework = hf-trainer is not allowed: Framework must be one of "
        f"{', '.join(FRAMEWORKS)} (Frameworks sheet), or empty")
    # the narrow memory cell shows the way to Start's input check; Start's memory result shows the message itself
    assert book.value_of("Mem_Total_GB") == "see Start!C3"
    memory_row = next(at for at, c in book.sheets["Start"].items() if at.startswith("B") and
                      c.value == "Memory per GPU (GB)")
    assert book.value("Start", "C" + memory_row[1:]) == book.value("Start", "C3")
    assert isinstance(book.value_of("Train_Days"), float)  # time does not depend on the framework
    put("Framework", "torchtitan")
    put("Precision", "fp32")
    assert book.value("Start", "C3") == (
        f"{where['Precision']}: Precision = fp32 is not allowed: Precision must be a precision the Frameworks sheet "
        "gives for framework torchtitan: amp, or empty")
    assert isinstance(book.value_of("Fits_GPU"), str)


def test_each_scenarios_column_has_its_own_framework_and_precision_checked_against_it():
    """Scenarios side by side: each column's Framework and Precision dropdowns (the CLI's names) fill that column's
    memory inputs as on Inputs, and its Precision is checked against its own Framework, naming its cell (engine
    evaluation; LibreOffice's: tests/test_memory_faces.py)."""
    seed = load_scenario(SEED002)
    own = {k: v for k, v in seed.model_dump(exclude_unset=True).items() if k not in ("recipe", *map(str.lower, BYTES))}
    book = layout([seed, Scenario.build(**own, framework="transformers")]).book
    ws = book.sheets["Scenarios"]
    rows = {c.value: int(at[1:]) for at, c in ws.items() if at.startswith("A") and c.value in (
        "Framework", "Precision", "Logits buffer (bytes per logit)")}
    assert set(rows) >= {"Framework", "Precision"}
    assert book.value("Scenarios", f"C{rows['Framework']}") == "" and \
        book.value("Scenarios", f"D{rows['Framework']}") == "transformers"
    lists = [v for v in book.validations if v.get("sheet") == "Scenarios" and v.get("label") in ("Framework",
                                                                                              "Precision")]
    assert {v["at"] for v in lists} == {f"{c}{rows[n]}" for c in "CD" for n in ("Framework", "Precision")}

    def column(col: str, name: str):
        row = next(int(at[1:]) for at, c in ws.items() if at.startswith("A") and c.value == label[name])
        return book.value("Scenarios", f"{col}{row}")

    from xlcalc.scenario import INPUT_BY_NAME
    label = {n: INPUT_BY_NAME[n].label for n in (*BYTES, *FRAMEWORK_INPUTS)}
    # transformers at its usual precision (amp): as the Inputs sheet gives it (test above), 4 + 4 + 8 bytes, 12 bytes
    # per logit, 2 bytes of autocast copies, gradients freed; the seed's own column keeps its numbers
    assert tuple(column("D", n) for n in (*BYTES, *FRAMEWORK_INPUTS)) == (4, 4, 8, 12, 0, 2, True)
    assert tuple(column("C", n) for n in BYTES) == (seed.bytes_weights, seed.bytes_grads, seed.bytes_optimizer)
    # the first column switched to torchtitan at fp32, a pair the Frameworks sheet does not list: its own Precision
    # check names its cell and torchtitan's precisions (the Inputs sheet's Framework is empty: megatron's would differ)
    book.cell("Scenarios", f"C{rows['Framework']}").value = "torchtitan"
    book.cell("Scenarios", f"C{rows['Precision']}").value = "fp32"
    book._memo.clear()
    checks = book.sheets["Checks"]
    line = next(at for at, c in checks.items() if c.value == f"Scenarios!C{rows['Precision']}")
    check_col = chr(ord(line[0]) + 2)
    assert book.value("Checks", f"{check_col}{line[1:]}") == (
        f"Scenarios!C{rows['Precision']}: Precision = fp32 is not allowed: Precision must be a precision the Frameworks "
        "sheet gives for framework torchtitan: amp, or empty")
    book.cell("Scenarios", f"C{rows['Precision']}").value = "amp"
    book._memo.clear()
    assert book.value("Checks", f"{check_col}{line[1:]}") == "OK"
    # torchtitan's memory facts; the column's picked recipe (seed 002's) wins for the bytes, as on the CLI
    assert tuple(column("C", n) for n in (*BYTES, *FRAMEWORK_INPUTS)) == (
        seed.bytes_weights, seed.bytes_grads, seed.bytes_optimizer, 12, 0, 0, True)

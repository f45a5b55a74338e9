"""Read-back of an emailed workbook: guarded parsing, bounded size, clear rejections, lossless round trip."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import openpyxl
import pytest

from xlcalc.cli import main as cli_main
from xlcalc.errors import InputError
from xlcalc.scenario import INPUTS, load_scenario
from xlcalc.workbook import build, readback
from xlcalc.workbook.readback import WorkbookError, read_workbook

ROOT = Path(__file__).resolve().parent.parent
SEED002 = ROOT / "xlcalc" / "presets" / "seed002-70b-a800.toml"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("rb") / "planner.xlsx"
    build(path, [load_scenario(SEED002)])
    return path


def test_xml_attacks_are_guarded():
    assert openpyxl.DEFUSEDXML, "openpyxl must parse with defusedxml (installed as a dependency)"


def test_read_built_workbook_agrees(built):
    rb = read_workbook(built)
    assert rb.ok and not rb.missing_cache
    assert rb.scenario == load_scenario(SEED002)
    assert round(rb.results["Train_Days"], 2) == 76.08  # seed 002 §7.3


def test_edit_without_recalculation_is_reported(built, tmp_path):
    wb = openpyxl.load_workbook(built)
    (sheet, at), = wb.defined_names["N_GPUs"].destinations
    wb[sheet][at.replace("$", "")].value = 2048
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)  # openpyxl keeps formulas but no cached values
    rb = read_workbook(edited)
    assert rb.scenario.n_gpus == 2048
    assert "Train_Days" in rb.missing_cache and not rb.disagreements
    assert rb.results["Train_Days"] == pytest.approx(8.4e23 / (312e12 * 2048 * 0.4) / 86400, rel=1e-12)


def test_recipe_id_round_trips_without_recalculation(built, tmp_path):
    """Recipe_Id picked in the workbook, not yet recalculated: the recipe fills the byte counts."""
    assert read_workbook(built).scenario.recipe == "seed002"  # xlcalc/presets/seed002-70b-a800.toml
    wb = openpyxl.load_workbook(built)
    (sheet, at), = wb.defined_names["Recipe_Id"].destinations
    wb[sheet][at.replace("$", "")].value = "fp32"
    edited = tmp_path / "fp32.xlsx"
    wb.save(edited)  # openpyxl drops the cached values of the Bytes_* look-ups
    rb = read_workbook(edited)
    sc = rb.scenario
    assert (sc.recipe, sc.bytes_weights, sc.bytes_grads, sc.bytes_optimizer) == ("fp32", 4, 4, 8)
    # ZeRO-1 over DP = 64: (4 + 4) * psi + 8 * psi / 64; psi = the first of 4 stages' parameters / TP 4:
    # 20 of the 80 layers ((70e9 - 2 x 32000 x 8192) / 80 parameters each) and the 32000 x 8192 input embedding
    vh = 32000 * 8192 / 1e9
    psi = (20 * (70 - 2 * vh) / 80 + vh) / 4
    assert rb.results["Mem_Static_GB"] == pytest.approx(8 * psi + 8 * psi / 64, rel=1e-12)
    assert "Mem_Static_GB" in rb.missing_cache and not rb.disagreements


def test_unknown_recipe_in_workbook_names_the_input(built, tmp_path):
    wb = openpyxl.load_workbook(built)
    (sheet, at), = wb.defined_names["Recipe_Id"].destinations
    wb[sheet][at.replace("$", "")].value = "int4"
    edited = tmp_path / "int4.xlsx"
    wb.save(edited)
    with pytest.raises(InputError, match=r"recipe = 'int4' is not allowed: recipe must be one of zero, megatron"):
        read_workbook(edited)


def test_wrong_cached_value_is_a_disagreement(built, tmp_path):
    from xlcalc.workbook import cache

    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(built.read_bytes())
    cache.inject(bad, {("Time", "B6"): 99.0})  # Train_Days shown wrong
    rb = read_workbook(bad)
    assert [d.name for d in rb.disagreements] == ["Train_Days"]
    assert "workbook shows 99.0" in str(rb.disagreements[0])


def test_foreign_and_malformed_files_are_rejected(tmp_path):
    text = tmp_path / "notes.xlsx"
    text.write_text("hello", encoding="utf-8")
    with pytest.raises(WorkbookError, match="not an .xlsx workbook"):
        read_workbook(text)
    foreign = tmp_path / "other.xlsx"
    wb = openpyxl.Workbook()
    wb.active["A1"] = 1
    wb.save(foreign)
    with pytest.raises(WorkbookError, match="not an xlcalc planning workbook .missing defined names: Params_B"):
        read_workbook(foreign)
    zipped = tmp_path / "plain.xlsx"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("readme.txt", "not a workbook")
    with pytest.raises(WorkbookError, match="no xl/workbook.xml"):
        read_workbook(zipped)
    with pytest.raises(WorkbookError, match="cannot read the file"):
        read_workbook(tmp_path / "missing.xlsx")


def test_size_limits_and_zip_bombs(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/workbook.xml", b"\0" * (5 * 1024 * 1024))  # 5 MB of zeros compress ~1000:1
    with pytest.raises(WorkbookError, match="zip bomb"):
        read_workbook(bomb)
    monkeypatch.setattr(readback, "MAX_FILE_BYTES", 1000)
    with pytest.raises(WorkbookError, match="too large"):
        read_workbook(bomb)


def test_bad_input_in_workbook_names_the_input(built, tmp_path):
    wb = openpyxl.load_workbook(built)
    (sheet, at), = wb.defined_names["MFU"].destinations
    wb[sheet][at.replace("$", "")].value = 1.5
    edited = tmp_path / "mfu.xlsx"
    wb.save(edited)
    with pytest.raises(InputError, match=r"mfu = 1.5 is not allowed: mfu must be a number > 0 and <= 1"):
        read_workbook(edited)
    assert cli_main(["read", str(edited)]) == 2


def test_cli_read_prints_tables_a_person_reads(built, capsys):
    # the inputs printed Python's None for an empty cell, and an unpriced result's message (what to type) filled
    # the value column of every owning result, six times over
    assert cli_main(["read", str(built)]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    assert [line.split()[:2] for line in out.splitlines() if line.startswith(("framework ", "capex_usd_per_gpu "))] \
        == [["framework", "(empty)"], ["capex_usd_per_gpu", "(empty)"]]
    unpriced = [line for line in out.splitlines() if "capex_usd_per_gpu = (empty) is not allowed" in line]
    assert len(unpriced) == 1 and unpriced[0].startswith("Not computed (") and "Breakeven_Months" in unpriced[0]
    days = next(line for line in out.splitlines() if line.startswith("Train_Days "))
    assert days.split()[1] == "76.08"  # seed 002 §7.3


def test_cli_read_json(built, capsys):
    assert cli_main(["read", str(built), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scenario"]["n_gpus"] == 1024 and data["disagreements"] == []
    assert data["results"]["Train_FLOPs"] == pytest.approx(8.4e23)


def test_round_trip_through_libreoffice():
    """build -> edit inputs (openpyxl, by defined name) -> LibreOffice recalculation -> read: nothing lost."""
    from test_workbook_libreoffice import N_GENERATED, recalculated

    cases = recalculated()["cases"]
    for k in range(N_GENERATED):
        case = cases[f"gen{k}"]
        rb = read_workbook(case["output"])
        want = case["scenario"]
        for cell in INPUTS:
            got, exp = getattr(rb.scenario, cell.field), getattr(want, cell.field)
            if isinstance(exp, float):
                assert math.isclose(got, exp, rel_tol=1e-14), (cell.name, got, exp)
            else:
                assert got == exp, (cell.name, got, exp)
        assert rb.scenario.name == want.name and rb.scenario.notes == want.notes
        assert rb.scenario.recipe is None and want.recipe is None  # Recipe_Id cleared with the numbers typed
        assert rb.ok, [str(d) for d in rb.disagreements]
        assert not rb.missing_cache
    read = {name: read_workbook(cases[name]["output"])  # each file read once (a read checks every formula: seconds)
            for name in ("seed002", "recipe_megatron", "recipe_override", "gpu_switch")}
    for name, rb in read.items():
        assert rb.scenario == cases[name]["scenario"], name  # every field, the recipe id included
        assert rb.ok and not rb.missing_cache, name
    over = read["recipe_override"].scenario
    assert (over.recipe, over.bytes_weights, over.bytes_grads, over.bytes_optimizer) == ("megatron", 2, 3, 12)


def test_price_tier_round_trips_and_a_tier_without_a_rate_names_gpu_and_tier(tmp_path):
    from xlcalc.scenario import Scenario
    sc = Scenario.build(gpu="h100", price_tier="spot")
    path = tmp_path / "tier.xlsx"
    build(path, [sc])
    rb = read_workbook(path)
    assert rb.ok and rb.scenario.price_tier == "spot" and rb.scenario.usd_per_gpu_hour == sc.usd_per_gpu_hour
    # the GPU switched to one without a spot rate: the price cell held the message, the engine names both
    wb = openpyxl.load_workbook(path)
    for name, value in (("GPU_Type", "h200"),
                        ("USD_per_GPU_Hour", "h200: no published spot price on the Prices sheet")):
        (sheet, at), = wb.defined_names[name].destinations
        wb[sheet][at.replace("$", "")].value = value
    wb.save(tmp_path / "gap.xlsx")
    with pytest.raises(InputError) as e:
        read_workbook(tmp_path / "gap.xlsx")
    assert e.value.name == "price_tier" and "h200" in str(e.value) and "spot" in str(e.value)


def _edited(built: Path, tmp_path: Path, values: dict, name: str = "step.xlsx") -> Path:
    wb = openpyxl.load_workbook(built)
    for defined, value in values.items():
        (sheet, at), = wb.defined_names[defined].destinations
        wb[sheet][at.replace("$", "")].value = value
    wb.save(tmp_path / name)
    return tmp_path / name


def test_the_step_times_stack_and_batch_round_trip(built, tmp_path):
    # the StepTime sheet's Stack and Global_Batch_Tokens are the scenario's inputs: edited there, read back
    sc = read_workbook(built).scenario
    assert (sc.stack, sc.global_batch_tokens) == ("fsdp-eager", 1024 * 4096)  # the preset's (seed002-70b-a800.toml)
    rb = read_workbook(_edited(built, tmp_path, {"Stack": "megatron", "Global_Batch_Tokens": 2048 * 4096}))
    assert (rb.scenario.stack, rb.scenario.global_batch_tokens) == ("megatron", 8_388_608)
    assert not rb.findings and not rb.disagreements
    # cleared: not given (the scenario's None; the StepTime sheet asks for one), as is 0, which a formula reads alike
    for cleared in (None, 0):
        assert read_workbook(_edited(built, tmp_path, {"Global_Batch_Tokens": cleared})).scenario.global_batch_tokens \
            is None


@pytest.mark.parametrize("name,value,message", [
    ("Stack", "nemo-typo", r"stack = 'nemo-typo' is not allowed: stack must be one of megatron, megatron-2021, "
                           r"llm-foundry, fsdp-eager, fsdp-compiled \(the Stack dropdown\)$"),
    ("Stack", "Megatrn", r"stack = 'Megatrn' is not allowed: .* \(the Stack dropdown\) \(did you mean megatron\?\)$"),
    ("Stack", None, r"Stack = \(empty\) is not allowed"),
    ("Global_Batch_Tokens", "lots", r"global_batch_tokens = 'lots' is not allowed: global_batch_tokens must be a "
                                    r"number > 0 .*text, not a number"),
    ("Global_Batch_Tokens", -4096, r"global_batch_tokens = -4096 is not allowed")])
def test_a_bad_stack_or_batch_read_back_names_the_input(built, tmp_path, name, value, message):
    path = _edited(built, tmp_path, {name: value})
    with pytest.raises(InputError, match=message):
        read_workbook(path)
    assert cli_main(["read", str(path)]) == 2

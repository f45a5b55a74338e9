"""The precision recipe in the planning workbook: its dropdown, the Recipes sheet, the byte counts it looks up."""

from __future__ import annotations

import openpyxl
import pytest

from named_edits import list_cells, validation_of
from seed002_workbook import SEED002_LAYOUT, TEMPLATES, first_stage_psi_b, named
from xlcalc.scenario import evaluate, load_scenario
from xlcalc.workbook import build


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

    sc = Scenario.build(recipe="megatron", gpu="h100", bytes_grads=3, **SEED002_LAYOUT)
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

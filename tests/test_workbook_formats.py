"""The planning workbook's cells as built: number formats, validation rules that name the input, protection."""

from __future__ import annotations

import re

from named_edits import validation_of
from seed002_workbook import TEMPLATES, named
from xlcalc.outputs import OUTPUTS
from xlcalc.scenario import INPUTS, load_scenario


def test_number_formats_come_from_the_specs(formulas_wb):
    assert named(formulas_wb, "MFU").number_format == "0.0%"
    # a looked-up input: the spec's format for numbers, and a text section that prints a look-up's message (no rate at
    # the tier) as the way to Start's input check, which shows it whole
    assert named(formulas_wb, "USD_per_GPU_Hour").number_format == '"$"#,##0.00;-"$"#,##0.00;"$"#,##0.00;"see Start!C3"'
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


def test_booleans_read_as_words(formulas_wb):
    words = '"TRUE";"TRUE";"FALSE"'
    assert named(formulas_wb, "Fits_GPU").number_format == words
    assert named(formulas_wb, "Seq_Parallel").number_format == words
    ws = formulas_wb["Parallelism"]
    assert all(ws[f"J{r}"].number_format == words for r in range(5, ws.max_row + 1) if ws[f"J{r}"].value)


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

"""The layout check's steps given by the caller (xlcalc.layout.LAYOUT_STEPS): the same message as the check that
computes them itself; and the workbook's Parallelism rows, whose hidden cells hold the steps that the row's layout
check and its line on the Checks sheet read, give each row the message the Python layout check gives its numbers."""

from __future__ import annotations

import itertools

import pytest

from xlcalc.expr.nodes import Expr, Num, Var
from xlcalc.formulas.memory import layout_message as layout_message_formula
from xlcalc.layout import LAYOUT_OK, LAYOUT_STEPS, layout_message
from xlcalc.outputs import OUTPUT_BY_NAME
from xlcalc.scenario import Scenario
from xlcalc.workbook import layout
from xlcalc.workbook.compare import PAR_LAYOUT_STEPS, Shape, sensitivity_values, shaped_as


def steps_by_hand(layers, pp, first, last):
    """The steps written out here: end stages given, middle stages, layers left to them, layers of a middle stage."""
    given = (first > 0) + (last > 0)
    middle = pp - given
    rest = layers - first - last
    middle_layers = rest / max(middle, 1) if pp > 1 and given > 0 else layers / pp
    return {"given_ends": given, "middle_stages": middle, "rest_layers": rest, "middle_stage_layers": middle_layers}


BASE = {"hidden": 8192, "heads": 64, "seq_len": 4096, "kv_heads": 8, "tp": 2, "cp": 1}


@pytest.mark.parametrize("layers,pp,first,last,virtual",
                         list(itertools.product((80, 61), (1, 2, 3, 4, 7), (0, 5, 20), (0, 1, 20), (1, 2, 3))))
def test_steps_given_give_the_message_the_check_computes(layers, pp, first, last, virtual):
    v = {**BASE, "layers": layers, "pp": pp, "first_stage_layers": first, "last_stage_layers": last,
         "virtual_stages": virtual}
    assert set(steps_by_hand(layers, pp, first, last)) == set(LAYOUT_STEPS)
    assert layout_message({**v, **steps_by_hand(layers, pp, first, last)}) == layout_message(v)


def test_a_step_given_is_the_one_read():
    # 80 layers on 4 stages, 4 virtual stages: whole (20 layers a stage); told 6 layers a middle stage, it is not
    v = {**BASE, "layers": 80, "pp": 4, "first_stage_layers": 0, "last_stage_layers": 0, "virtual_stages": 4}
    assert layout_message(v) == LAYOUT_OK
    told = layout_message({**v, "middle_stage_layers": 6})
    assert told.startswith("virtual_stages = 4 is not allowed") and "stage = 6 " in told


# A preset with an uneven split (126 layers: 7, 8 x 14, 7 on 16 stages) and rows whose PP splits it evenly, unevenly
# (the preset's split on that PP), or not at all, or whose TP does not divide the heads
CONFIGS = [(8, 16, 1, "selective", True), (1, 3, 1, "full", False), (2, 5, 1, "selective", True),
           (1, 4, 3, "full", False), (1, 7, 1, "full", False), (1, 200, 1, "full", False), (3, 2, 1, "full", False),
           (1, 1, 1, "full", False), (2, 10, 3, "selective", True)]


@pytest.fixture(scope="module")
def book():
    sc = Scenario.build(model="llama3.1-405b", gpu="h100-sxm", n_gpus=2048, tp=8, pp=16, virtual_stages=2,
                        first_stage_layers=7, last_stage_layers=7)
    gpus, mfus = sensitivity_values(sc)
    with shaped_as(Shape(gpus, mfus, CONFIGS)):
        return layout([sc]).book


def _header_cols(book, sheet, labels):
    heads = {c.value: at[:-1] for at, c in book.sheets[sheet].items() if at.endswith("4") and at[:-1].isalpha()}
    return {k: heads[label] for k, label in labels.items()}


def test_each_rows_steps_and_message_are_the_python_layout_checks(book):
    cols = _header_cols(book, "Parallelism", {**PAR_LAYOUT_STEPS, "whole": "Layout check, whole",
                                              "first": "Layers on the first stage (0 = even split)",
                                              "last": "Layers on the last stage (0 = even split)"})
    messages = set()
    for r, (tp, pp, *_) in enumerate(CONFIGS, start=5):
        first, last = (book.value("Parallelism", f"{cols[k]}{r}") for k in ("first", "last"))
        layers = book.value_of("Layers")
        for step, value in steps_by_hand(layers, pp, first, last).items():
            assert book.value("Parallelism", f"{cols[step]}{r}") == pytest.approx(value, rel=1e-12), (r, step)
        # the Python layout check over the row's numbers (the Inputs' values for the names the row does not hold)
        row = {"TP_Size": tp, "PP_Size": pp, "First_Stage_Layers": first, "Last_Stage_Layers": last}
        args = {k: a.value if isinstance(a, Num) else row[a.name] if a.name in row else book.value_of(a.name)
                for k, a in OUTPUT_BY_NAME["Layout_Check"].args.items() if isinstance(a, (Num, Var))}
        assert len(args) == len(OUTPUT_BY_NAME["Layout_Check"].args)
        expected = layout_message_formula(**args)
        assert book.value("Parallelism", f"{cols['whole']}{r}") == expected, r
        messages.add(expected.split(" = ")[0] if expected != LAYOUT_OK else LAYOUT_OK)
    assert messages >= {LAYOUT_OK, "pp", "tp", "virtual_stages"}  # whole rows and three kinds of refusal met
    assert any(book.value("Parallelism", f"{cols['first']}{r}") for r in range(5, 5 + len(CONFIGS)))  # uneven rows


def test_the_checks_line_of_a_row_names_the_cell_its_layout_blames(book):
    whole = {}
    for at, c in book.sheets["Checks"].items():
        if at.startswith("H") and isinstance(c.value, Expr):
            whole[int(at[1:])] = book.value("Checks", at)
    refused = {r: v for r, v in whole.items() if v != "OK"}
    assert len(whole) == len(CONFIGS) and refused
    for r, text in refused.items():
        where = book.value("Checks", f"I{r}")
        assert where != "OK" and text.startswith(where + ": ")
        cell = where.split(" (")[0]
        assert cell.startswith("Parallelism!")
    for r in set(whole) - set(refused):
        assert book.value("Checks", f"I{r}") == "OK"

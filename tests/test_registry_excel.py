"""Every registry formula: the Python value equals what a spreadsheet engine computes
from the rendered Excel text (the ``formulas`` package, in-process)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import inputs_for
from xlcalc import InputError, all_formulas

formulas_pkg = pytest.importorskip("formulas", reason="the 'formulas' package evaluates Excel text in-process")

FORMULAS = all_formulas()
_compiled: dict[str, object] = {}


def _cells(params):
    # A1, A2, ... one cell per input, in parameter order
    return {p: f"A{i + 1}" for i, p in enumerate(params)}


def _excel_function(f):
    if f.name not in _compiled:
        text = f.excel(_cells(f.params))
        _compiled[f.name] = formulas_pkg.Parser().ast(text)[1].compile()
    return _compiled[f.name]


def _scalar(value):
    while hasattr(value, "tolist") or isinstance(value, (list, tuple)):
        value = value.tolist() if hasattr(value, "tolist") else value[0]
        if isinstance(value, list):
            value = value[0] if value else None
    return value


@pytest.mark.parametrize("f", FORMULAS, ids=[f.name for f in FORMULAS])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_python_equals_excel(f, data):
    values = data.draw(inputs_for(f.params))
    try:
        expected = f(**values)
    except InputError:
        return  # the generated combination is not allowed (e.g. tp does not divide heads)
    func = _excel_function(f)
    cells = _cells(f.params)
    param_of = {cell: p for p, cell in cells.items()}
    ordered = [values[param_of[cell]] for cell in func.inputs]
    got = _scalar(func(*ordered))
    if isinstance(expected, bool):
        assert bool(got) is expected
    elif isinstance(expected, str):  # a text result (LAYOUT_MESSAGE): the same words, numbers written alike
        assert got == expected, (f.excel(cells), values)
    else:
        assert isinstance(got, (int, float)), f"Excel evaluation gave {got!r} for {f.excel(cells)}"
        assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12), (f.excel(cells), values)


def test_every_formula_has_docs_units_and_source():
    for f in FORMULAS:
        assert f.summary and f.unit and f.equation and f.source, f.name
        assert f.udf_name == f.udf_name.upper(), f.name
        assert len(f.udf_help) <= 255, f.name


def test_udf_names_are_unique():
    names = [f.udf_name for f in FORMULAS]
    assert len(names) == len(set(names))

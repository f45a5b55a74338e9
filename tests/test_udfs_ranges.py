"""Fast ranges: each distinct argument value validated once, all rows computed in one pass over
whole columns (numpy when installed, plain Python lists otherwise, as in xlwings Lite), and every
cell equal to what the same row gives as a single cell - its number or its message."""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlcalc
from strategies import inputs_for
from xlcalc.inputs import all_specs, spec
from xlcalc.validate import validate_one

pytest.importorskip("xlwings")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "udfs") not in sys.path:
    sys.path.insert(0, str(ROOT / "udfs"))
udfs = importlib.import_module("xlcalc_udfs")
runtime = importlib.import_module("xlcalc_udf_runtime")

FORMULAS = [f for f in xlcalc.all_formulas() if f.params]
MODES = ["numpy", "lists"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    if request.param == "numpy":
        pytest.importorskip("numpy")
    monkeypatch.setattr(runtime, "USE_NUMPY", request.param == "numpy")
    return request.param


class _Message(str):
    """A single cell's error message (a text result, such as LAYOUT_MESSAGE's, is an ordinary str)."""


def _single(f, row):
    """The single-cell path: a value, or the cell's message."""
    try:
        return getattr(udfs, f.udf_name)(*row)
    except ValueError as exc:
        return _Message(exc)


def _same(mode, got, expected):
    if isinstance(expected, str) or isinstance(got, str):
        return got == expected
    if isinstance(expected, bool) or isinstance(got, bool):
        return got is expected
    if mode == "lists":  # the same Python operations in the same order: the same float
        return got == expected
    return got == expected or math.isclose(got, expected, rel_tol=1e-12)


def _variants(s, n):
    """n allowed values of one input, around its example."""
    if s.kind == "bool":
        return [bool(i % 2) for i in range(n)]
    if s.kind == "choice":
        return [s.choices[i % len(s.choices)] for i in range(n)]
    base = s.example
    if s.kind == "int":
        lo = int(s.ge if s.ge is not None else 1)
        hi = int(s.le) if s.le is not None else None
        vals = [max(lo, int(base) * (1 + i % 3)) for i in range(n)]
        return [min(v, hi) if hi is not None else v for v in vals]
    vals = [base * (0.5 + 0.25 * (i % 4)) for i in range(n)]
    if s.le is not None:
        vals = [min(v, s.le) for v in vals]
    return [float(v) for v in vals]


@pytest.mark.parametrize("f", FORMULAS, ids=[f.udf_name for f in FORMULAS])
def test_every_formula_over_columns_equals_its_single_cells(f, mode):
    n = 12
    columns = {p: _variants(spec(p), n) for p in f.params}
    rows = [[columns[p][k] for p in f.params] for k in range(n)]
    out = getattr(udfs, f.udf_name)(*[[[v] for v in columns[p]] for p in f.params])
    assert len(out) == n
    for k, row in enumerate(rows):
        expected = _single(f, row)
        if isinstance(expected, _Message):
            expected = f"#VALUE! row {k + 1}, column 1: {expected}"
        assert _same(mode, out[k][0], expected), (k, row, out[k][0], expected)


@pytest.mark.parametrize("f", FORMULAS, ids=[f.udf_name for f in FORMULAS])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_random_rows_equal_single_cells_in_both_modes(f, data):
    scenarios = data.draw(st.lists(inputs_for(f.params), min_size=2, max_size=5))
    for use_numpy in (True, False):
        runtime.USE_NUMPY = use_numpy and runtime.HAVE_NUMPY
        try:
            cols = [[[s[p]] for s in scenarios] for p in f.params]
            out = getattr(udfs, f.udf_name)(*cols)
        finally:
            runtime.USE_NUMPY = runtime.HAVE_NUMPY
        for k, s in enumerate(scenarios):
            expected = _single(f, [s[p] for p in f.params])
            if isinstance(expected, _Message):
                expected = f"#VALUE! row {k + 1}, column 1: {expected}"
            assert _same("numpy" if use_numpy else "lists", out[k][0], expected)


def test_each_distinct_value_is_validated_once(mode, monkeypatch):
    calls = []
    real = runtime.validate_one
    monkeypatch.setattr(runtime, "validate_one", lambda s, v: calls.append(s.name) or real(s, v))
    params = [[float(1 + i % 400)] for i in range(10_000)]
    out = udfs.TRAIN_DAYS(params, 2.0, 312.0, 1024.0, 0.4)
    assert len(out) == 10_000
    # a column of plain floats within the bounds is accepted as a whole; constants once each
    assert calls.count("params_b") <= 400
    assert calls.count("mfu") == calls.count("n_gpus") == 1
    # the numbers are those of seed 002's formula: days = 6*N*D / (peak * n * MFU) / 86400
    for i in (0, 69, 9_999):
        p = params[i][0]
        assert out[i][0] == pytest.approx(6 * p * 1e9 * 2e12 / (312e12 * 1024 * 0.4) / 86400, rel=1e-12)
    assert round(out[69][0], 2) == 76.08  # 70B: seed 002 §7.3
    # one text cell in the column: every distinct value goes through the validator, once
    calls.clear()
    out = udfs.TRAIN_DAYS(params + [["abc"]], 2.0, 312.0, 1024.0, 0.4)
    assert calls.count("params_b") == 401
    assert out[-1][0].startswith("#VALUE! row 10001, column 1: params_b = 'abc' is not allowed")


NUMERIC = [s for s in all_specs().values() if s.kind in ("float", "int")]


@pytest.mark.parametrize("s", NUMERIC, ids=[s.name for s in NUMERIC])
@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(st.floats(), st.integers(-10, 10).map(float),
                                  st.sampled_from([0.0, 1.0, 3.0, 10.0, 100.0, 0.5])), min_size=1, max_size=4))
def test_the_column_shortcut_accepts_only_what_validation_returns_unchanged(s, values):
    for use_numpy in (True, False):
        runtime.USE_NUMPY = use_numpy and runtime.HAVE_NUMPY
        try:
            accepted = runtime._plainly_allowed(s, values)
        finally:
            runtime.USE_NUMPY = runtime.HAVE_NUMPY
        if accepted:
            for v in values:
                clean = validate_one(s, v)
                assert clean == v and type(clean) is (int if s.kind == "int" else float)


def test_bad_rows_keep_their_own_message_and_the_rest_compute(mode):
    mfu = [[0.4], [1.5], [None], ["abc"], [0.4], [True]]
    out = udfs.TRAIN_DAYS(70, 2, 312, 1024, mfu)
    assert round(out[0][0], 2) == round(out[4][0], 2) == 76.08
    assert out[1][0] == "#VALUE! row 2, column 1: mfu = 1.5 is not allowed: mfu must be a number > 0 and <= 1 (a fraction: 1.5 would be 150%; for 1.5% type 0.015)"
    assert out[2][0].startswith("#VALUE! row 3, column 1: mfu = (empty) is not allowed")
    assert out[3][0].startswith("#VALUE! row 4, column 1: mfu = 'abc' is not allowed")
    assert out[5][0].startswith("#VALUE! row 6, column 1: mfu = True is not allowed")


def test_a_bad_constant_argument_marks_every_cell(mode):
    out = udfs.TRAIN_DAYS([[70], [7]], 2, 312, 0, 0.4)
    assert [r[0] for r in out] == [
        f"#VALUE! row {i}, column 1: n_gpus = 0 is not allowed: n_gpus must be a whole number >= 1 and <= 10,000,000" for i in (1, 2)]


def test_empty_cells_in_a_column_take_the_default(mode):
    out = udfs.MEM_STATIC_GB([[70], [70]], [[None], [0]], 1, 8, 1, 2, 4, 8)
    assert out == [[122.5], [122.5]]  # seed 002 §7.3: 14 bytes/param x 70B / TP 8


def test_cross_input_rules_are_checked_per_row(mode):
    # heads must divide by tp: row 2 (tp 3 on 64 heads) is refused, row 1 computes
    out = udfs.MEM_ACT_GB(4096, 1, 8192, 80, 64, [[8], [3]], True, "selective")
    assert out[0][0] == pytest.approx(80 * 34 * 4096 * 8192 / 8 / 1e9)  # Korthikanti Table 2
    assert out[1][0] == "#VALUE! row 2, column 1: " + _single(
        xlcalc.get_formula("MEM_ACT_GB"), [4096, 1, 8192, 80, 64, 3, True, "selective"])


def test_mixed_true_and_one_are_told_apart(mode):
    out = udfs.TRAIN_DAYS(70, 2, 312, [[1.0], [True], [1]], 0.4)
    assert isinstance(out[0][0], float) and isinstance(out[2][0], float)
    assert out[1][0].startswith("#VALUE! row 2, column 1: n_gpus = True is not allowed")


def test_a_table_of_ranges_broadcasts_rows_against_columns(mode):
    table = udfs.TRAIN_DAYS([[7], [70], [405]], 2, 312, [[512, 1024]], [[0.4, 0.5]])
    assert len(table) == 3 and all(len(r) == 2 for r in table)
    assert _same(mode, table[1][0], udfs.TRAIN_DAYS(70, 2, 312, 512, 0.4))
    assert _same(mode, table[2][1], udfs.TRAIN_DAYS(405, 2, 312, 1024, 0.5))


def test_a_row_past_the_formulas_bound_gets_its_single_cells_message(mode):
    # TRAIN_DAYS is bounded (at most the days input's bound, 1e8 days): 100,000 B parameters on 1,000 T tokens on one
    # GPU of 1 TFLOP/s at MFU 0.01 is 6e29 / 1e10 FLOP/s / 86,400 ~ 7e14 days, past it; the rows around it are seed
    # 002's 70 B x 2 T on 1,024 A800s at MFU 0.4: 76.08 days
    cols = [[[70.0], [1e5], [70.0]], [[2.0], [1e3], [2.0]], [[312.0], [1.0], [312.0]], [[1024.0], [1.0], [1024.0]],
            [[0.4], [0.01], [0.4]]]
    out = udfs.TRAIN_DAYS(*cols)
    single = _single(next(f for f in FORMULAS if f.udf_name == "TRAIN_DAYS"), [1e5, 1e3, 1.0, 1.0, 0.01])
    assert isinstance(single, _Message) and "at most" in single
    assert out[1][0] == f"#VALUE! row 2, column 1: {single}"
    days = 6 * 70e9 * 2e12 / (312e12 * 1024 * 0.4) / 86400
    assert round(out[0][0], 2) == round(out[2][0], 2) == round(days, 2) == 76.08

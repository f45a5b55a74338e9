"""Excel worksheet functions (udfs/xlcalc_udfs.py): one per registry formula, each equal
to its engine formula, scalar and array forms, with Excel's kinds of input."""

from __future__ import annotations

import importlib
import inspect
import math
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlcalc
from strategies import inputs_for
from xlcalc import InputError, catalog
from xlcalc.inputs import spec

pytest.importorskip("xlwings")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "udfs") not in sys.path:
    sys.path.insert(0, str(ROOT / "udfs"))
udfs = importlib.import_module("xlcalc_udfs")

FORMULAS = xlcalc.all_formulas()


def _udf(f):
    return getattr(udfs, f.udf_name)


# -- the list and the signatures ---------------------------------------------------------

def test_every_registry_formula_has_a_udf_and_nothing_else():
    registry = {f.udf_name for f in FORMULAS}
    assert set(udfs.FORMULA_UDFS) == registry
    assert len(udfs.FORMULA_UDFS) == len(registry) == len(FORMULAS)
    assert set(udfs.UDF_NAMES) == registry | {"GPU_SPEC", "MODEL_SPEC", "GPU_LIST", "MODEL_LIST", "PLAN", "BUDGET_PLAN",
                                            "GPU_PRICE", "GPU_PRICE_NOTE", "LAYOUT_STEP_S", "LAYOUT_MFU",
                                            "LAYOUT_TOKENS_PER_S_PER_GPU"}
    assert sorted(udfs.__all__) == sorted([*udfs.UDF_NAMES, "CATALOG_UDFS", "PLANNER_UDFS"])
    assert set(udfs.PLANNER_UDFS) <= set(udfs.__all__)


@pytest.mark.parametrize("f", FORMULAS, ids=[f.udf_name for f in FORMULAS])
def test_signature_and_help_follow_the_registry(f):
    fn = _udf(f)
    assert fn.__name__ == f.udf_name
    params = inspect.signature(fn).parameters
    assert tuple(params) == f.params
    for name, p in params.items():
        if name in f.dynamic_params:  # left out: empty, the value its drivers give (MEM_PER_GPU_GB's framework)
            assert p.default is None and name in f.defaults
        elif name in f.defaults:
            assert p.default == f.defaults[name]
        else:
            assert p.default is inspect.Parameter.empty
    assert fn.__doc__ == f.udf_help
    assert 0 < len(fn.__doc__) <= 255


def test_public_contract_names_and_argument_orders():
    """The names and argument orders promised in issue 3."""
    expected = {
        "TRAIN_FLOPS": "params_b, tokens_t",
        "TRAIN_DAYS": "params_b, tokens_t, peak_tflops, n_gpus, mfu",
        "GPU_HOURS": "params_b, tokens_t, peak_tflops, mfu",
        "GPUS_FOR_DAYS": "params_b, tokens_t, peak_tflops, mfu, days",
        "CHINCHILLA_TOKENS_T": "params_b, tokens_per_param=20",
        "MEM_STATIC_GB": "params_b, zero_stage=0, dp=1, tp=1, pp=1, bytes_weights=2, bytes_grads=4, bytes_optimizer=12",
        "MEM_ACT_GB": "seq_len, micro_batch, hidden, layers, heads, tp=1, seq_parallel=False, recompute='none'",
        "PIPELINE_BUBBLE": "pp, microbatches, virtual_stages=1",
        "GPU_SPEC": "gpu, field",
        "MODEL_SPEC": "model, field",
        "GPU_LIST": "",
        "MODEL_LIST": "",
    }
    for name, sig in expected.items():
        assert str(inspect.signature(getattr(udfs, name))) == f"({sig})", name


# -- the numbers the issue asks for -----------------------------------------------------------

def test_train_days_seed_002():
    # seed 002 §7.3 step 3: 8.4e23 / (312e12 * 1024 * 0.4 * 86400) = 76.08 days ("≈ 76 天")
    expected = 6 * 70e9 * 2e12 / (312e12 * 1024 * 0.4) / 86400
    assert round(expected, 2) == 76.08
    assert round(udfs.TRAIN_DAYS(70, 2, 312, 1024, 0.4), 2) == 76.08
    # as Excel hands it over: every number a float
    assert round(udfs.TRAIN_DAYS(70.0, 2.0, 312.0, 1024.0, 0.4), 2) == 76.08


def test_gpus_for_days_seed_002():
    # seed 002 §7.3 step 2: 8.4e23 FLOPs in 90 days on 312 TFLOP/s at MFU 0.4.
    # Exact: 8.4e23 / (312e12 * 0.4 * 90 * 86400) = 865.58 (the seed writes 861 because it
    # rounds the required throughput down to 107,500 TFLOP/s first). Not rounded to whole GPUs.
    expected = 8.4e23 / (312e12 * 0.4 * 90 * 86400)
    got = udfs.GPUS_FOR_DAYS(70, 2, 312, 0.4, 90)
    assert round(got, 1) == round(expected, 1) == 865.6


def test_mem_static_gb_seed_002():
    # seed 002 §7.3 step 1: 14 bytes/param (2 weights + 4 grads + 8 Adam) x 70B / TP 8 = 122.5 GB
    assert udfs.MEM_STATIC_GB(70, 0, 1, 8, 1, 2, 4, 8) == pytest.approx(14 * 70 / 8) == 122.5


def test_gpu_spec_reads_the_catalog():
    # H100 SXM dense BF16: 989.4 TFLOP/s on NVIDIA's datasheet (989.4 in the catalog; issue 3
    # rounds it to 989). A800: 80 GB.
    assert udfs.GPU_SPEC("H100", "bf16_tflops") == catalog.get_gpu("H100").bf16_tflops == pytest.approx(989.4)
    assert udfs.GPU_SPEC("A800", "memory_gb") == 80
    assert udfs.GPU_SPEC("h100", "BF16_TFLOPS") == udfs.GPU_SPEC("H100", "bf16_tflops")  # case-insensitive
    assert udfs.GPU_SPEC([["H100"], ["A800"]], "memory_gb") == [[80], [80]]


def test_model_spec_reads_the_catalog():
    m = catalog.models()[0]
    assert udfs.MODEL_SPEC(m.id, "layers") == m.layers
    assert udfs.MODEL_SPEC(m.name.upper(), "params_b") == pytest.approx(m.params_b)


def test_catalog_lists_spill_header_and_rows():
    gpus = udfs.GPU_LIST()
    assert gpus[0] == list(catalog.GPU_FIELDS)
    assert len(gpus) == len(catalog.gpus()) + 1
    assert all(len(row) == len(gpus[0]) for row in gpus)
    ids = [row[0] for row in gpus[1:]]
    assert ids == [g.id for g in catalog.gpus()]
    models = udfs.MODEL_LIST()
    assert models[0] == list(catalog.MODEL_FIELDS)
    assert [row[0] for row in models[1:]] == [m.id for m in catalog.models()]
    # every listed field can be looked up with GPU_SPEC where the catalog has a value
    for row in gpus[1:]:
        for field, value in zip(gpus[0], row):
            if value is not None:
                assert udfs.GPU_SPEC(row[0], field) == value


def test_catalog_lookup_errors_name_the_problem():
    with pytest.raises(ValueError, match="unknown GPU 'H999'; valid GPUs: .*a800"):
        udfs.GPU_SPEC("H999", "memory_gb")
    with pytest.raises(ValueError, match=r"^field = 'speed' is not allowed: field must be one of id, name"):
        udfs.GPU_SPEC("H100", "speed")
    with pytest.raises(ValueError, match=r"^gpu = \(empty\) is not allowed"):
        udfs.GPU_SPEC(None, "memory_gb")
    missing = [(g.id, k) for g in catalog.gpus() for k in catalog.GPU_FIELDS if getattr(g, k) is None]
    if missing:
        gpu, field = missing[0]
        with pytest.raises(ValueError, match=f"no published {field}"):
            udfs.GPU_SPEC(gpu, field)


# -- Excel realities ----------------------------------------------------------------------------

def test_empty_cells_mean_the_default():
    # the defaults: ZeRO-0, DP 1, PP 1 and the default recipe (Megatron's 2 + 4 + 12 bytes): 70 x 18 / TP 8
    full = udfs.MEM_STATIC_GB(70, 0, 1, 8, 1, 2, 4, 12)
    assert full == pytest.approx(70 * 18 / 8)
    assert udfs.MEM_STATIC_GB(70, None, None, 8, None, None, None, None) == full
    assert udfs.MEM_STATIC_GB(70, "", 1, 8) == full  # a cell holding "" counts as empty
    assert udfs.MEM_ACT_GB(4096, 1, 8192, 80, 64, 8, None, None) == udfs.MEM_ACT_GB(4096, 1, 8192, 80, 64, 8)


def test_empty_required_cell_is_an_error_naming_the_input():
    with pytest.raises(ValueError, match=r"^params_b = \(empty\) is not allowed: params_b must be a number > 0 "
                                         r"and <= 100,000 \(the input is required; the cell is empty\)$"):
        udfs.TRAIN_DAYS(None, 2, 312, 1024, 0.4)


def test_counts_as_floats_and_booleans_and_text_options():
    assert udfs.PIPELINE_BUBBLE(8.0, 32.0, 1.0) == pytest.approx(7 / 32)
    with pytest.raises(ValueError, match=r"^n_gpus = 2.5 is not allowed: n_gpus must be a whole number >= 1"):
        udfs.TRAIN_DAYS(70, 2, 312, 2.5, 0.4)
    # Korthikanti Table 2, selective recompute + sequence parallel: 34*s*b*h/t bytes per layer
    expected = 80 * 34 * 4096 * 1 * 8192 / 8 / 1e9
    assert udfs.MEM_ACT_GB(4096, 1, 8192, 80, 64, 8, True, "Selective") == pytest.approx(expected)
    assert udfs.MEM_ACT_GB(4096.0, 1.0, 8192.0, 80.0, 64.0, 8.0, True, " SELECTIVE ") == pytest.approx(expected)
    with pytest.raises(ValueError, match="^n_gpus = True is not allowed"):
        udfs.TRAIN_DAYS(70, 2, 312, True, 0.4)


BAD_INPUTS = [
    ("TRAIN_DAYS", (70, 2, 312, 1024, 1.5), r"^mfu = 1.5 is not allowed: mfu must be a number > 0 and <= 1 \(a fraction: 1.5 would be 150%; for 1.5% type 0.015\)$"),
    ("TRAIN_DAYS", (70, 2, 312, 0, 0.4), r"^n_gpus = 0 is not allowed: n_gpus must be a whole number >= 1 and <= 10,000,000$"),
    ("TRAIN_DAYS", (-70, 2, 312, 1024, 0.4), r"^params_b = -70 is not allowed: params_b must be a number > 0 and <= 100,000$"),
    ("TRAIN_DAYS", ("abc", 2, 312, 1024, 0.4), r"^params_b = 'abc' is not allowed: params_b must be a number > 0 and <= 100,000 \(text, not a number\)$"),
    ("MEM_STATIC_GB", (70, 5), r"^zero_stage = 5 is not allowed: zero_stage must be a whole number >= 0 and <= 3$"),
    ("MEM_ACT_GB", (4096, 1, 8192, 80, 64, 8, False, "sometimes"),
     r"""^recompute = 'sometimes' is not allowed: recompute must be one of "none", "selective", "op_selective", "full"$"""),
]


@pytest.mark.parametrize("name,args,message", BAD_INPUTS, ids=[m.split(" ")[0][1:] for _, _, m in BAD_INPUTS])
def test_bad_input_raises_a_value_error_naming_the_input(name, args, message):
    with pytest.raises(ValueError, match=message):
        getattr(udfs, name)(*args)


@pytest.mark.parametrize("name,args,message", BAD_INPUTS, ids=[m.split(" ")[0][1:] for _, _, m in BAD_INPUTS])
def test_bad_row_in_a_range_gives_the_message_in_that_cell_only(name, args, message):
    good = {
        "TRAIN_DAYS": (70, 2, 312, 1024, 0.4),
        "MEM_STATIC_GB": (70, 0),
        "MEM_ACT_GB": (4096, 1, 8192, 80, 64, 8, False, "none"),
    }[name]
    row = [[[g, b]] for g, b in zip(good, args)]  # each input: a 1x2 range; column 2 is bad
    out = getattr(udfs, name)(*row)
    assert len(out) == 1 and len(out[0]) == 2
    assert out[0][0] == getattr(udfs, name)(*good)
    assert isinstance(out[0][1], str)
    assert out[0][1].startswith("#VALUE! row 1, column 2: ")
    assert re.match(message.lstrip("^"), out[0][1][len("#VALUE! row 1, column 2: "):])


# -- ranges: broadcast and same shape ------------------------------------------------------------

def test_a_column_of_scenarios_is_one_call_and_keeps_its_shape():
    rows = [[70], [7], [405]]
    out = udfs.TRAIN_DAYS(rows, 2, 312, 1024, 0.4)
    assert out == [[udfs.TRAIN_DAYS(r[0], 2, 312, 1024, 0.4)] for r in rows]
    # a row of GPU counts against a column of model sizes: a table
    table = udfs.TRAIN_DAYS(rows, 2, 312, [[512, 1024, 2048]], 0.4)
    assert len(table) == 3 and all(len(r) == 3 for r in table)
    assert table[2][1] == udfs.TRAIN_DAYS(405, 2, 312, 1024, 0.4)
    # a flat list (a Python caller) is a column
    assert udfs.TRAIN_DAYS([70, 7, 405], 2, 312, 1024, 0.4) == out


def test_single_cell_range_gives_a_single_value():
    # classic xlwings with ndim=2 and xlwings Lite deliver one cell as [[x]]
    assert udfs.TRAIN_DAYS([[70.0]], [[2.0]], 312, [[1024.0]], 0.4) == udfs.TRAIN_DAYS(70, 2, 312, 1024, 0.4)


def test_mismatched_ranges_are_an_error_naming_the_input():
    with pytest.raises(ValueError, match=r"^n_gpus: ranges must have the same size.*params_b 3x1, n_gpus 2x1"):
        udfs.TRAIN_DAYS([[70], [7], [1]], 2, 312, [[1], [2]], 0.4)
    with pytest.raises(ValueError, match="params_b: the range must be rectangular"):
        udfs.TRAIN_DAYS([[70, 1], [7]], 2, 312, 1024, 0.4)


def test_ten_thousand_rows_spill_in_one_call():
    n = 10_000
    params = [[1 + (i % 400)] for i in range(n)]
    out = udfs.TRAIN_DAYS(params, 2, 312, 1024, 0.4)
    assert len(out) == n and all(len(r) == 1 for r in out)
    # independent: days = 6 * N * D / (peak * n * MFU) / 86400
    for i in (0, 1234, n - 1):
        p = params[i][0]
        assert out[i][0] == pytest.approx(6 * p * 1e9 * 2e12 / (312e12 * 1024 * 0.4) / 86400, rel=1e-12)


# -- every UDF equals its engine formula ------------------------------------------------------

def _excel_value(s, value):
    """What Excel hands over: numbers as floats, booleans and text as they are."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return float(value)


def _engine(f, values):
    try:
        return True, f(**values)
    except InputError as exc:
        return False, str(exc)


def _same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b or (math.isclose(a, b, rel_tol=1e-12, abs_tol=0))


@pytest.mark.parametrize("f", FORMULAS, ids=[f.udf_name for f in FORMULAS])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_udf_equals_engine_scalar(f, data):
    values = data.draw(inputs_for(f.params))
    ok, expected = _engine(f, values)
    args = [_excel_value(spec(p), values[p]) for p in f.params]
    if ok:
        assert _same(_udf(f)(*args), expected)
    else:
        with pytest.raises(ValueError) as err:
            _udf(f)(*args)
        assert str(err.value) == expected


@pytest.mark.parametrize("f", FORMULAS, ids=[f.udf_name for f in FORMULAS])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_udf_equals_engine_array(f, data):
    if not f.params:
        return
    scenarios = data.draw(st.lists(inputs_for(f.params), min_size=2, max_size=6))
    # every input a column of the scenarios' values, as Excel hands a range over
    columns = [[[_excel_value(spec(p), s[p])] for s in scenarios] for p in f.params]
    out = _udf(f)(*columns)
    assert len(out) == len(scenarios) and all(len(r) == 1 for r in out)
    for i, s in enumerate(scenarios):
        ok, expected = _engine(f, s)
        if ok:
            assert _same(out[i][0], expected)
        else:
            assert out[i][0] == f"#VALUE! row {i + 1}, column 1: {expected}"


def test_no_udf_returns_nan_or_none_for_example_inputs():
    # the registry refuses non-finite results; the wrapper never turns an error into a number
    for f in FORMULAS:
        values = {p: spec(p).example for p in f.params}
        try:
            result = _udf(f)(*[values[p] for p in f.params])
        except ValueError:
            continue
        assert result is not None
        if f.returns == "text":  # LAYOUT_MESSAGE: a message, or "OK"
            assert isinstance(result, str) and result
            continue
        assert isinstance(result, (bool, int, float))
        assert isinstance(result, bool) or math.isfinite(result)

"""Work bounded by design within the documented input limits (issue 23, part 3).

No test here has a wall-clock limit: each checks that the work is bounded by construction (divisors
from prime factors, ranges capped by their cell count before any cell is looked at).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from xlcalc.cli import main
from xlcalc.planner.divisors import divisors

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("n", [1, 2, 12, 97, 4096, 720720, 999_983 * 999_979, 2 ** 50, 10 ** 15,
                               999_999_999_999_989, 1024 * 1023 * 1021 * 1019, 244_140_625 * 4096])
def test_divisors_from_prime_factors_equal_sympys(n):
    sympy = pytest.importorskip("sympy")
    assert divisors(n) == [int(d) for d in sympy.divisors(n)]


def test_plan_with_the_largest_global_batch_the_inputs_allow_ends(capsys):
    # 1e15 tokens of 4096: 244,140,625 sequences per step; once a loop over every micro-batch count
    code = main(["plan", "--model", "llama2-70b", "--gpu", "H100", "--gpus", "1024", "--seq-len", "4096",
                 "--global-batch-tokens", "1e15", "--tokens-t", "2"])
    out, err = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in err
    assert "micro-batch" in out


@pytest.mark.parametrize("split", ["40,4\u2070", "40,\u0664\u0660", "40," + "9" * 5000, "40,-40", "40,4.0"])
def test_layers_per_stage_refuses_anything_but_ascii_whole_numbers(capsys, split):
    code = main(["plan", "--model", "llama2-70b", "--gpu", "H100", "--gpus", "16", "--seq-len", "4096",
                 "--global-batch-tokens", "4194304", "--pp", "2", "--layers-per-stage", split])
    err = capsys.readouterr().err
    assert code == 2 and "layers_per_stage" in err and "Traceback" not in err


@pytest.fixture()
def runtime():
    pytest.importorskip("xlwings")
    if str(ROOT / "udfs") not in sys.path:
        sys.path.insert(0, str(ROOT / "udfs"))
    importlib.import_module("xlcalc_udfs")
    return importlib.import_module("xlcalc_udf_runtime")


def test_a_whole_column_is_one_message_not_a_million_errors(runtime):
    column = [[None]] * 1_048_576  # =TRAIN_DAYS(A:A, ...): what xlwings hands over for a whole column
    with pytest.raises(ValueError, match=r"params_b: the range has 1,048,576 cells, more than the 100,000"):
        runtime.formula_call("train_days", column, 2, 312, 1024, 0.4)


def test_a_spill_over_the_cap_is_refused_before_any_cell(runtime):
    rows = [[70.0]] * 1000  # 1,000 rows by 1,000 columns: each range is small, the result is not
    cols = [[1024.0] * 1000]
    with pytest.raises(ValueError, match=r"the result .* has 1,000,000 cells"):
        runtime.formula_call("train_days", rows, 2, 312, cols, 0.4)


def test_a_range_at_the_cap_is_computed(runtime):
    n = runtime.MAX_RANGE_CELLS
    out = runtime.formula_call("train_days", [[70.0]] * n, 2, 312, 1024, 0.4)
    assert len(out) == n and out[0][0] == pytest.approx(6 * 70e9 * 2e12 / (312e12 * 1024 * 0.4) / 86400)

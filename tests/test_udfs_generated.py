"""The worksheet functions are ordinary, generated, checked-in functions (scripts/make_udfs.py):
grep finds them, and the checked-in files are what the registry gives today."""

from __future__ import annotations

import importlib
import os
import re
import stat
import sys
from pathlib import Path

import pytest

import xlcalc
from procs import run_bounded

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
make_udfs = importlib.import_module("make_udfs")

COMMAND = "python scripts/make_udfs.py"


@pytest.mark.parametrize("path", [make_udfs.CLASSIC, make_udfs.LITE], ids=["classic", "lite"])
def test_checked_in_file_is_what_the_registry_gives(path):
    expected = make_udfs.outputs()[path]
    current = path.read_text(encoding="utf-8")
    if current != expected:  # no diff of a 200 kB file: the message says what to do
        pytest.fail(f"{path.relative_to(ROOT)} is out of date with the registry and the engine: run {COMMAND}")


def test_check_mode_says_which_command_regenerates(tmp_path, monkeypatch):
    stale = tmp_path / "xlcalc_udfs.py"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(make_udfs, "outputs", lambda: {make_udfs.CLASSIC: "# new\n"})
    monkeypatch.setattr(make_udfs, "CLASSIC", stale)
    monkeypatch.setattr(make_udfs, "outputs", lambda: {stale.resolve(): "# new\n"})
    monkeypatch.setattr(make_udfs, "ROOT", tmp_path.resolve())
    assert make_udfs.main(["--check"]) == 1
    assert stale.read_text(encoding="utf-8") == "# old\n"  # --check writes nothing
    assert make_udfs.main([]) == 0
    assert stale.read_text(encoding="utf-8") == "# new\n"
    assert stat.S_IMODE(os.stat(stale).st_mode) == 0o644


def test_check_mode_passes_on_the_checked_in_files():
    result = run_bounded([sys.executable, str(ROOT / "scripts" / "make_udfs.py"), "--check"], cpu_s=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", [make_udfs.CLASSIC, make_udfs.LITE], ids=["classic", "lite"])
def test_every_formula_is_a_plain_def_that_grep_finds(path):
    source = path.read_text(encoding="utf-8")
    assert "def TRAIN_DAYS(params_b, tokens_t, peak_tflops, n_gpus, mfu):" in source
    assert "def MEM_STATIC_GB(params_b, zero_stage=0, dp=1, tp=1, pp=1, bytes_weights=2, " \
           "bytes_grads=2, bytes_optimizer=12):" in source
    for f in xlcalc.all_formulas():
        assert re.search(rf"^def {f.udf_name}\(", source, re.M), f.udf_name
    assert "exec(" not in source and "compile(" not in source


def test_no_worksheet_function_is_made_at_import():
    for path in (ROOT / "udfs").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"\bexec\(|\bcompile\(|globals\(\)\[", source), path.name


def test_table_functions_are_listed_for_the_generator():
    """Every hand-written function with @func(...) is in TABLE_UDFS, which the generator imports."""
    import ast

    tree = ast.parse((ROOT / "udfs" / "xlcalc_udf_tables.py").read_text(encoding="utf-8"))
    decorated = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
                 and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "func" for d in node.decorator_list)]
    assert tuple(decorated) == make_udfs._table_names()
    pytest.importorskip("xlwings")
    sys.path.insert(0, str(ROOT / "udfs"))
    tables = importlib.import_module("xlcalc_udf_tables")
    udfs = importlib.import_module("xlcalc_udfs")
    assert tables.TABLE_UDFS == make_udfs._table_names()
    for name in tables.TABLE_UDFS:
        assert getattr(udfs, name) is getattr(tables, name)
        assert name in udfs.__all__

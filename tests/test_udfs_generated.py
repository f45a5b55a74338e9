"""The worksheet functions are ordinary, generated functions (scripts/make_udfs.py): grep finds them,
the checked-in classic module is what the registry gives today, and the xlwings Lite main.py - a build
product git ignores - is built by the tests (tests/conftest.py's lite_main) and defines the same functions."""

from __future__ import annotations

import importlib
import os
import re
import shutil
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


def _generated(which: str, request) -> Path:
    """The classic module as checked in, or the Lite main.py as the session built it."""
    return make_udfs.CLASSIC if which == "classic" else request.getfixturevalue("lite_main")


def test_checked_in_file_is_what_the_registry_gives():
    expected = make_udfs.committed()[make_udfs.CLASSIC]
    current = make_udfs.CLASSIC.read_text(encoding="utf-8")
    if current != expected:  # no diff of a large file: the message says what to do
        pytest.fail(f"{make_udfs.CLASSIC.relative_to(ROOT)} is out of date with the registry and the engine: "
                    f"run {COMMAND}")


def test_lite_main_is_not_committed_and_is_built_the_same_way_twice(lite_main):
    """templates/lite/main.py is a build product: git ignores it, and a build from the same checkout gives the
    same bytes (a deterministic zip), which carry the classic module's functions after the loader."""
    rel = make_udfs.LITE.relative_to(ROOT).as_posix()
    if shutil.which("git") and (ROOT / ".git").exists():  # a checkout (CI: a fresh clone), not an unpacked sdist
        tracked = run_bounded(["git", "ls-files", "--", rel], cpu_s=60, cwd=ROOT)
        assert tracked.returncode == 0 and tracked.stdout.strip() == "", f"{rel} is committed: git rm --cached it"
        ignored = run_bounded(["git", "check-ignore", "-q", "--no-index", "--", rel], cpu_s=60, cwd=ROOT)
        assert ignored.returncode == 0, f"{rel} is not in .gitignore"
    text = lite_main.read_text(encoding="utf-8")
    assert text == make_udfs.lite_source()
    assert text.endswith(make_udfs.body()) and make_udfs.CLASSIC.read_text(encoding="utf-8").endswith(make_udfs.body())
    assert set(make_udfs.committed()) == {make_udfs.CLASSIC} and set(make_udfs.built()) == {make_udfs.LITE}


def test_check_mode_says_which_command_regenerates(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "xlcalc_udfs.py"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(make_udfs, "CLASSIC", stale)
    monkeypatch.setattr(make_udfs, "committed", lambda: {stale.resolve(): "# new\n"})
    monkeypatch.setattr(make_udfs, "built", lambda: {})
    monkeypatch.setattr(make_udfs, "ROOT", tmp_path.resolve())
    assert make_udfs.main(["--check"]) == 1
    assert f"xlcalc_udfs.py is out of date: run {COMMAND}" in capsys.readouterr().out
    assert stale.read_text(encoding="utf-8") == "# old\n"  # --check writes nothing
    assert make_udfs.main([]) == 0
    assert stale.read_text(encoding="utf-8") == "# new\n"
    assert stat.S_IMODE(os.stat(stale).st_mode) == 0o644


def test_check_mode_passes_on_the_checked_in_files():
    result = run_bounded([sys.executable, str(ROOT / "scripts" / "make_udfs.py"), "--check"], cpu_s=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not checked: templates/lite/main.py" in result.stdout  # it says what it leaves out


@pytest.mark.parametrize("lite", [None, "# an old main.py\n"], ids=["missing", "stale"])
def test_check_mode_ignores_the_lite_build_product_and_the_command_writes_it(tmp_path, monkeypatch, capsys, lite):
    """A missing or stale main.py (git ignores it) fails no --check; the command itself writes it, atomically."""
    classic, main = tmp_path / "xlcalc_udfs.py", tmp_path / "lite" / "main.py"
    classic.write_text("# current\n", encoding="utf-8")
    if lite is not None:
        main.parent.mkdir()
        main.write_text(lite, encoding="utf-8")
    monkeypatch.setattr(make_udfs, "ROOT", tmp_path.resolve())
    monkeypatch.setattr(make_udfs, "LITE", main)
    monkeypatch.setattr(make_udfs, "committed", lambda: {classic: "# current\n"})

    def built():
        raise AssertionError("--check built the Lite file")

    monkeypatch.setattr(make_udfs, "built", built)
    assert make_udfs.main(["--check"]) == 0
    assert "not checked: lite/main.py" in capsys.readouterr().out
    if lite is None:
        assert not main.exists()
    else:
        assert main.read_text(encoding="utf-8") == lite  # left as it was
    monkeypatch.setattr(make_udfs, "built", lambda: {main: "# new main.py\n"})
    assert make_udfs.main([]) == 0
    assert main.read_text(encoding="utf-8") == "# new main.py\n"
    assert stat.S_IMODE(os.stat(main).st_mode) == 0o644
    assert sorted(p.name for p in main.parent.iterdir()) == ["main.py"]  # no temporary file left beside it


@pytest.mark.parametrize("which", ["classic", "lite"])
def test_every_formula_is_a_plain_def_that_grep_finds(which, request):
    source = _generated(which, request).read_text(encoding="utf-8")
    assert "def TRAIN_DAYS(params_b, tokens_t, peak_tflops, n_gpus, mfu):" in source
    assert "def MEM_STATIC_GB(params_b, zero_stage=0, dp=1, tp=1, pp=1, bytes_weights=2, " \
           "bytes_grads=4, bytes_optimizer=12):" in source
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

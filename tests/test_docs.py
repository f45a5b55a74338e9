"""Generated documentation matches the code it documents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_formula_reference_is_up_to_date():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_formula_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_readme_names_the_commands_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "./test.sh" in readme and "./test.sh" in ci
    assert "python3 build_workbook.py" in readme


def test_docs_quote_the_catalog_training_efficiencies():
    # README, docs/planner.md and docs/catalogs.md quote the fitted efficiencies; a refit must update them
    from xlcalc import catalog
    values = [f"{catalog.get_gpu(g).training_matmul_efficiency:.3f}" for g in ("a100-80gb", "h100-sxm")]
    for doc in ("README.md", "docs/planner.md", "docs/catalogs.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert all(v in text for v in values), doc


def test_quoted_command_output_is_up_to_date(capsys):
    # every `xlcalc` command a doc quotes with its output (<!-- command: ... --> blocks) prints what the doc shows
    sys.path.insert(0, str(ROOT))
    from scripts import make_command_docs

    status = make_command_docs.main(["--check"])
    assert status == 0, capsys.readouterr().err


def test_command_docs_check_names_a_stale_block(tmp_path, capsys):
    # --check fails on a block whose output differs, names it and writes nothing; a rewrite then passes
    sys.path.insert(0, str(ROOT))
    from scripts import make_command_docs

    (tmp_path / "docs").mkdir()
    stale = ("# t\n\n<!-- command: xlcalc catalog gpus -->\n```text\n$ xlcalc catalog gpus\nH100 1000 TFLOPS\n```\n"
             "<!-- end command -->\n")
    (tmp_path / "README.md").write_text(stale, encoding="utf-8")
    assert make_command_docs.main(["--check"], root=tmp_path) == 1
    assert "README.md:3: out of date: xlcalc catalog gpus" in capsys.readouterr().err
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == stale
    assert make_command_docs.main([], root=tmp_path) == 0
    text = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "H100 1000 TFLOPS" not in text and "989.4" in text  # the H100 SXM's dense BF16 peak (NVIDIA datasheet)
    assert make_command_docs.main(["--check"], root=tmp_path) == 0


def test_command_docs_refuses_a_failing_command(tmp_path, capsys):
    sys.path.insert(0, str(ROOT))
    from scripts import make_command_docs

    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("<!-- command: xlcalc estimate --mfu 7 -->\n<!-- end command -->\n",
                                        encoding="utf-8")
    assert make_command_docs.main([], root=tmp_path) == 1
    assert "mfu" in capsys.readouterr().err


def test_readme_python_session_prints_what_it_shows():
    # the README's `>>>` session runs as a doctest: each value it shows is what the library returns now
    import doctest
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sessions = [b for b in re.findall(r"```python\n(.*?)```", readme, re.DOTALL) if ">>> " in b]
    assert sessions
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for k, text in enumerate(sessions):
        test = doctest.DocTestParser().get_doctest(text, {}, f"README.md python session {k + 1}", "README.md", 0)
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_worksheet_function_examples_give_what_the_docs_show():
    # `=TRAIN_DAYS(70, 2, 312, 1024, 0.4) -> 76.08` in docs/excel.md and `=...` → 76.08 in README: each call, run
    # through the worksheet functions, rounds to the number shown (to the decimals shown)
    import ast
    import importlib
    import re

    import pytest

    pytest.importorskip("xlwings")
    if str(ROOT / "udfs") not in sys.path:
        sys.path.insert(0, str(ROOT / "udfs"))
    udfs = importlib.import_module("xlcalc_udfs")
    number = r"\s*`?(-?[0-9][0-9,]*(?:\.[0-9]+)?)"
    arrow = r"`?=([A-Z][A-Z0-9_]*)\(([^()]*)\)`?\s*(?:->|→)" + number  # =F(...) -> 1.5
    equals = r"`([A-Z][A-Z0-9_]*)\(([^()]*)\)` =" + number  # `F(...)` = 1.5
    call = re.compile(arrow + "|" + equals)
    found = 0
    for doc in ("README.md", "docs/excel.md"):
        for m in call.finditer((ROOT / doc).read_text(encoding="utf-8")):
            name, args, shown = m.group(1, 2, 3) if m.group(1) else m.group(4, 5, 6)
            got = getattr(udfs, name)(*ast.literal_eval(f"({args},)"))
            decimals = len(shown.partition(".")[2])
            assert round(got, decimals) == float(shown.replace(",", "")), (doc, name, args, shown, got)
            found += 1
    assert found >= 12


def test_the_step_model_experiments_script_answers_help_and_a_wrong_flag_before_its_refits():
    # it read sys.argv by hand: --help and a misspelt flag both started the minutes-long leave-one-source-out refits
    script = str(ROOT / "scripts" / "stepmodel_experiments.py")
    proc = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("usage:") and "--fp8-pairs" in proc.stdout
    proc = subprocess.run([sys.executable, script, "--pairz"], capture_output=True, text=True)
    assert proc.returncode == 2 and "--pairs" in proc.stderr

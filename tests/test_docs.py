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

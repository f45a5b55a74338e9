"""templates/: the classic add-in's xlwings.conf and xlwings Lite's requirements.txt, and the Lite main.py that
`python scripts/make_udfs.py` writes there (a build product, not committed: built for the tests by
tests/conftest.py's lite_main)."""

from __future__ import annotations

import csv
import re
import tomllib
from pathlib import Path

import pytest

xlwings = pytest.importorskip("xlwings")

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"


def test_xlwings_conf_uses_keys_the_add_in_reads():
    # the add-in reads each line with VBA `Input #f, name, value`: two quoted fields, no comments
    bas = (Path(xlwings.__file__).parent / "xlwings.bas").read_text(encoding="utf-8", errors="replace")
    known = set(re.findall(r'GetConfig\("([A-Z_ ]+)"', bas))
    lines = (TEMPLATES / "xlwings.conf").read_text(encoding="utf-8").splitlines()
    rows = list(csv.reader(lines))
    assert rows and all(len(r) == 2 for r in rows)
    assert all(line.startswith('"') and line.count('"') == 4 for line in lines)
    conf = dict(rows)
    assert set(conf) <= known, set(conf) - known
    assert conf["UDF MODULES"] == "xlcalc_udfs"
    assert (ROOT / "udfs" / (conf["UDF MODULES"] + ".py")).exists()
    assert conf["PYTHONPATH"].endswith("udfs")


def test_lite_requirements_install_as_they_are():
    """Only package names a Lite user can install from PyPI or Pyodide as they are: no wheel to
    build or host, no URL. The engine itself travels inside main.py."""
    reqs = [r.strip() for r in (TEMPLATES / "lite" / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    reqs = [r for r in reqs if r]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", r) for r in reqs), reqs  # bare names: Pyodide picks versions
    names = {r.lower() for r in reqs}
    assert names == {"xlwings", "pydantic"}
    # pydantic is what the engine needs beyond the standard library (validation); openpyxl and
    # defusedxml serve the workbook builder, which worksheet functions do not import
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    deps = {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert "pydantic" in deps


def test_lite_main_uses_the_lite_decorators_and_carries_the_engine(lite_main):
    main = lite_main.read_text(encoding="utf-8")
    assert "from xlwings import arg, func, ret" in main
    assert "_BUNDLE = (" in main and "def _unpack_bundle()" in main
    assert "https://" not in main and "example.com" not in main

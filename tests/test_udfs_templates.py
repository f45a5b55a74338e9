"""templates/: the classic add-in's xlwings.conf and xlwings Lite's main.py + requirements.txt."""

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


def test_lite_requirements_cover_the_engine_dependencies():
    reqs = (TEMPLATES / "lite" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    names = {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in reqs if r and not r.startswith("#")}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for dep in project["dependencies"]:
        assert re.split(r"[<>=!~ ;\[]", dep, maxsplit=1)[0].lower() in names, dep
    assert "xlwings" in names
    assert any(r.endswith(".whl") for r in reqs), "xlcalc itself comes as a wheel URL"


def test_lite_main_uses_the_lite_decorators():
    main = (TEMPLATES / "lite" / "main.py").read_text(encoding="utf-8")
    assert "from xlwings import arg, func, ret" in main
    assert "import xlcalc" in main

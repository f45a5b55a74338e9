import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Which xlcalc the tests import. ./test.sh (and so CI) installs the package into a virtual environment
# (.cache/test-venv, non-editable) and sets XLCALC_TEST_INSTALLED=1: the tests then import that installed copy from
# site-packages, never the checkout, and subprocesses (python -m xlcalc, build_workbook.py) do too
# (PYTHONSAFEPATH: no script directory or working directory first on sys.path). Otherwise, e.g.
# `python -m pytest` in a checkout, the tests import this checkout's code. tests/test_packaging.py
# asserts which one was imported.
INSTALLED = os.environ.get("XLCALC_TEST_INSTALLED") == "1"
if INSTALLED:
    os.environ["PYTHONSAFEPATH"] = "1"
    sys.path[:] = [p for p in sys.path if p not in ("", ".", str(ROOT)) and Path(p).resolve() != ROOT]
else:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

REFERENCE = ROOT / "xlcalc" / "data" / "reference"  # published records, copied into the repo with their sources


def published_records() -> dict:
    """The published records (xlcalc/data/reference/published.json) by id."""
    import json

    return {r["id"]: r for r in json.loads((REFERENCE / "published.json").read_text(encoding="utf-8"))}


# --- two test processes (pytest-xdist, pyproject's addopts: -n 2 --dist loadfile) -------------------------------
# Each test file is one unit of work (its module-scoped fixtures are made once, in one process), except that the
# files of one LibreOffice run (tests/lo_batch.py RUNS) are one unit together, so that each soffice run happens once,
# not once per process. Units are handed out in the order below, the longest first, so that the two processes finish
# together instead of one starting a long unit at the end.
import pytest  # noqa: E402

import lo_batch  # noqa: E402

# the longest units, longest first (seconds in a run on a 2-core machine, pytest --durations); the rest follow in
# collection order
LONGEST_FIRST = (*lo_batch.RUNS, "test_memory_loss_torch", "test_memory_harness_torch", "test_hostile_workbook",
                 "test_workbook_print", "test_validation_runs", "test_registry_excel", "test_lite_pyodide",
                 "test_atomic_build_kill")


def unit_of(nodeid: str) -> str:
    """The unit of work of a test: its file's name, or its LibreOffice run."""
    stem = nodeid.split("::", 1)[0].rpartition("/")[2].removesuffix(".py")
    return lo_batch.run_of(stem) or stem


def pytest_collection_modifyitems(config, items):
    unlisted = sorted({item.module.__name__ for item in items if getattr(item.module, "lo_batch", None) is not None
                       and lo_batch.run_of(item.module.__name__) is None})
    if unlisted:
        raise pytest.UsageError(f"tests/lo_batch.py: add {', '.join(unlisted)} to a LibreOffice run in RUNS")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    order = {item.nodeid: i for i, item in enumerate(items)}
    items.sort(key=lambda item: (rank.get(unit_of(item.nodeid), len(rank)), order[item.nodeid]))


def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile hands out the units of unit_of (files; a LibreOffice run's files together) in collection order."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return Units(config, log)


# --- the xlwings Lite main.py: a build product, built once per test session (per test process) -------------------
@pytest.fixture(scope="session")
def lite_main(tmp_path_factory) -> Path:
    """templates/lite/main.py as `python scripts/make_udfs.py` writes it, built from this checkout into a temporary
    folder with make_udfs' own functions. git does not keep that file, so no test reads a copy in templates/."""
    import importlib

    import xlcalc  # noqa: F401  (the xlcalc this session imports, before make_udfs puts the checkout on sys.path)

    saved = list(sys.path)
    try:
        sys.path.insert(0, str(ROOT / "scripts"))
        make_udfs = importlib.import_module("make_udfs")
        path = tmp_path_factory.mktemp("lite") / make_udfs.LITE.name
        make_udfs.write(path, make_udfs.lite_source())
    finally:
        sys.path[:] = saved
    return path


# --- seed 002's planning workbook as built, read by tests/test_workbook_*.py: built once per test process ----------
from seed002_workbook import formulas_wb, seed002, values_wb  # noqa: E402, F401  (fixtures, made available here)

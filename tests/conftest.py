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

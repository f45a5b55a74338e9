"""Generate the table of docs/calibrate.md: calibrated on one run, each source's other runs predicted.

    python scripts/make_calibration_docs.py            write the table between the markers of docs/calibrate.md
    python scripts/make_calibration_docs.py --check    exit 1 if it is out of date

The work is done by :mod:`xlcalc.validation` (the runs, queries and predictions of docs/validation.md) and
:mod:`xlcalc.validation.calibration`; this script only writes and checks the file.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.docsplice import doc_main
from xlcalc.validation import calibration as C
from xlcalc.validation.pipeline import validate

DOC = ROOT / "docs" / "calibrate.md"
BEGIN = "<!-- BEGIN calibration table (scripts/make_calibration_docs.py) -->"
END = "<!-- END calibration table -->"


def render() -> str:
    rows = C.by_source(validate()["stated"]["scored"])  # the stack facts as stated, as plan --stack plans
    return C.table(rows) + "\n\n" + C.overall(rows) + "\n"


if __name__ == "__main__":
    raise SystemExit(doc_main(DOC, render, "make_calibration_docs.py", __doc__.split("\n\n")[0], (BEGIN, END)))

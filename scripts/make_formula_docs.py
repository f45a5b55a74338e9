"""Write docs/formulas.md from the formula registry: name, UDF, unit, equation, source, Excel text.

    python scripts/make_formula_docs.py          # rewrite docs/formulas.md
    python scripts/make_formula_docs.py --check  # exit 1 if docs/formulas.md is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.docsplice import doc_main, md_table
from xlcalc import all_formulas
from xlcalc.inputs import spec

OUT = ROOT / "docs" / "formulas.md"
TITLES = {"compute": "Compute and time", "memory": "Memory per GPU", "parallel": "Parallelism and communication",
          "roofline": "Roofline", "cost": "Cost", "steptime": "Step-time model"}


def render() -> str:
    lines = [
        "# Formulas",
        "",
        "Generated from the formula registry by `python scripts/make_formula_docs.py`; do not edit by hand.",
        "Each formula is defined once in `xlcalc/formulas/`; the same definition is the Python function,",
        "the Excel worksheet function (UDF) and the formula text written into the planning workbook.",
        "Units: GB = 1e9 bytes, params in billions (`_b`), tokens in trillions (`_t`), TFLOP/s per GPU.",
        "",
    ]
    by_cat: dict[str, list] = {}
    for f in all_formulas():
        by_cat.setdefault(f.category, []).append(f)
    for cat, fs in by_cat.items():
        lines += [f"## {TITLES.get(cat, cat.title())}", "", "| Python | Excel UDF | result | equation | source |",
                  "|---|---|---|---|---|"]
        for f in fs:
            args = ", ".join(f"[{p}={f.defaults[p]!r}]" if p in f.defaults else p for p in f.params)
            row = [f"`{f.name}`", f"`{f.udf_name}({args})`", f"{f.summary} [{f.unit}]", f.equation, f.source]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        lines.append("")
    specs = {p: spec(p) for p in sorted({p for f in all_formulas() for p in f.params})}
    lines += ["## Inputs", "", *md_table(("name", "unit", "meaning", "allowed"),
                                       [(f"`{p}`", s.unit, s.doc, s.allowed) for p, s in specs.items()])]
    return "\n".join(lines + [""])


if __name__ == "__main__":
    sys.exit(doc_main(OUT, render, "make_formula_docs.py", __doc__.splitlines()[0]))

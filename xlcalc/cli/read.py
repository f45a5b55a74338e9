"""``xlcalc read planner.xlsx``: read an edited planning workbook back and check it against the engine.

Exit status: 0 when every result agrees and every cell is what xlcalc writes; 1 when a result disagrees or a
cell was changed (a formula edited or replaced, a formula typed into an input, text that lost its protection);
2 when the file is refused (not a planning workbook, too large, a zip bomb, macros, external links, DDE, ...)
or an input is not allowed.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("read", help="read a planning workbook's inputs and check its results",
                              description=__doc__)
    p.add_argument("path", help="the .xlsx planning workbook")
    p.add_argument("--json", action="store_true", help="print the scenario, results and disagreements as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..inputs import spec
    from ..outputs import OUTPUT_BY_NAME
    from ..scenario import INPUT_BY_FIELD
    from ..workbook import WorkbookError, read_workbook
    from .fmt import dump_json, number, table

    try:
        rb = read_workbook(args.path)
    except WorkbookError as exc:
        print(f"xlcalc read: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(dump_json(rb.to_dict()))
        return 0 if rb.ok else 1
    sc = rb.scenario
    print(f"Scenario: {sc.name}" + (f"  (model {sc.model})" if sc.model else "") + (f"  (GPU {sc.gpu})" if sc.gpu else ""))
    rows = []
    for field, value in sc.model_dump().items():
        if field not in ("name", "notes", "model", "gpu"):
            cell = INPUT_BY_FIELD.get(field)
            unit = spec(cell.spec_name).unit if cell else ""
            shown = ("(empty)" if value is None else number(value, unit)
                     if isinstance(value, (int, float)) and not isinstance(value, bool) else value)
            rows.append((field, shown, unit))
    print(table(rows, headers=("input", "value", "unit"), align="lll"))
    shown_results: list[tuple[str, object, str]] = []
    unanswered: dict[str, list[str]] = {}
    for name, value in rb.results.items():
        unit = OUTPUT_BY_NAME[name].unit
        if isinstance(value, str) and unit != "text":  # a number a missing input leaves unanswered: what to type
            unanswered.setdefault(value, []).append(name)
        else:
            shown_results.append((name, number(value, unit) if isinstance(value, (int, float)) else value, unit))
    print("\n" + table(shown_results, headers=("result (engine)", "value", "unit"), align="lrl"))
    for why, names in unanswered.items():
        print(f"Not computed ({', '.join(names)}): {why}")
    if rb.missing_cache:
        print(f"Not recalculated in the file (open and save it in a spreadsheet to compare): "
              f"{', '.join(rb.missing_cache)}")
    if rb.findings:
        print(f"CHANGED from the workbook xlcalc writes ({len(rb.findings)}; formulas, inputs, names):",
              *(f"  {f}" for f in rb.findings), sep="\n")
    if rb.disagreements:
        print("DISAGREEMENTS between the workbook and the engine:", *(f"  {d}" for d in rb.disagreements), sep="\n")
    if not rb.ok:
        return 1
    print("The workbook's values agree with the engine and its formulas are the ones xlcalc writes."
          if not rb.missing_cache else "Its formulas are the ones xlcalc writes.")
    return 0

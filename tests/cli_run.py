"""The `xlcalc` command run in-process for a test: ``run(capsys, *argv)`` -> (exit code, stdout, stderr)."""

from __future__ import annotations

from typing import Any

from seed002_workbook import SEED002_LAYOUT
from xlcalc.cli import main

# seed 002's layout as flags (tests/seed002_workbook.py: its preset's; left out, a command computes one GPU's)
SEED002_LAYOUT_FLAGS = ("--tp", str(SEED002_LAYOUT["tp"]), "--pp", str(SEED002_LAYOUT["pp"]), "--zero-stage",
                        str(SEED002_LAYOUT["zero_stage"]), "--seq-parallel", str(SEED002_LAYOUT["seq_parallel"]),
                        "--recompute", SEED002_LAYOUT["recompute"])


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err

"""The `xlcalc` command run in-process for a test: ``run(capsys, *argv)`` -> (exit code, stdout, stderr)."""

from __future__ import annotations

from typing import Any

from xlcalc.cli import main


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err

#!/usr/bin/env python3
"""Write the LLM training planning workbook: a live-formula .xlsx.

    python build_workbook.py [-o planner.xlsx] [--scenario NAME-or-FILE.toml ...]   (NAME: a preset of xlcalc/presets/)
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from xlcalc.cli.workbook import add_arguments, run
    from xlcalc.errors import CatalogError, InputError

    parser = argparse.ArgumentParser(
        prog="build_workbook.py",
        description="Write the LLM training planning workbook (.xlsx): inputs, memory, time, budget, "
                    "scenarios, sensitivity, parallel layouts, catalogs and references, all live formulas.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (InputError, CatalogError) as exc:
        print(f"build_workbook.py: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: an existing output file is left as it was
        print("build_workbook.py: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

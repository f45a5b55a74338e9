"""The ``xlcalc`` command line. Each subcommand lives in its own module with
``register(subparsers)``; the modules hold no formulas, only parsing and printing."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import CatalogError, InputError

COMMANDS = ("estimate", "memory", "catalog", "plan", "workbook", "read", "cost", "budget", "goodput")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xlcalc",
        description="LLM training planner: will it fit, how many GPUs, how many days, how much money.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"xlcalc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f".{name}", __name__).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (InputError, CatalogError) as exc:
        print(f"xlcalc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head & co.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

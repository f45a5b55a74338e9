"""The ``xlcalc`` command line. Each subcommand lives in its own module with
``register(subparsers)``; the modules hold no formulas, only parsing and printing."""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from ..errors import CatalogError, InputError

COMMANDS = ("estimate", "memory", "catalog", "plan", "calibrate", "workbook", "read", "cost", "budget", "goodput")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xlcalc", description="LLM training planner: will it fit, how many GPUs, how many days, how much money.")
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
        _refuse_empty(args)
        return int(args.func(args) or 0)
    except (InputError, CatalogError) as exc:
        if isinstance(exc, InputError) and len(exc.problems) > 1:  # every mistake on its own line
            lines = "\n".join(f"  - {p}" for p in exc.problems)
            print(f"xlcalc {args.command}: error: {len(exc.problems)} inputs are not allowed:\n{lines}",
                  file=sys.stderr)
        else:
            print(f"xlcalc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: a file being written was left as it was (xlcalc.atomic)
        print(f"xlcalc {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head & co.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _refuse_empty(args: argparse.Namespace) -> None:
    """A flag given an empty value (``--gpu ''``) is a mistake, never "use the default": every one is named."""
    empty = [InputError(name, value, "a value, not empty (leave the flag out to use its default)")
             for name, value in vars(args).items() if isinstance(value, str) and not value.strip()]
    if empty:
        raise InputError.all(empty)

"""The ``xlcalc`` command line. Each subcommand lives in its own module with
``register(subparsers)``; the modules hold no formulas, only parsing and printing."""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
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
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse_unknown(parser, args, unknown)
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
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> None:
    """A flag the command does not take (often a neighbouring command's: estimate --days) is named with the command
    and the command's flags it resembles, as that command's usage error (exit 2), never the bare top-level one."""
    command = getattr(args, "command", None)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    target = sub.choices.get(command) if sub is not None and command else None
    if target is None:
        parser.error("unrecognized arguments: " + " ".join(unknown))
    flags = [o for a in target._actions if a.help != argparse.SUPPRESS for o in a.option_strings if o.startswith("--")]
    hints = []
    for word in unknown:
        if word.startswith("--"):
            typed = word.split("=", 1)[0]
            # this command's flags holding every word of the typed one (--days: --deadline-days), else a near
            # spelling (--tokens-per-sec: --tokens-per-s)
            parts = set(typed[2:].split("-"))
            close = [f for f in flags if parts <= set(f[2:].split("-"))] or difflib.get_close_matches(
                typed, flags, n=3, cutoff=0.8)
            if close:
                hints.append(f"{typed}: did you mean {' or '.join(close[:3])}?")
    target.error("unrecognized arguments: " + " ".join(unknown) + (" (" + "; ".join(hints) + ")" if hints else "")
                 + f"; see xlcalc {command} --help")


def _refuse_empty(args: argparse.Namespace) -> None:
    """A flag given an empty value (``--gpu ''``) is a mistake, never "use the default": every one is named."""
    if empty := [InputError(name, value, "a value, not empty (leave the flag out to use its default)")
                 for name, value in vars(args).items() if isinstance(value, str) and not value.strip()]:
        raise InputError.all(empty)

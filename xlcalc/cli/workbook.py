"""``xlcalc workbook``: write the live-formula planning workbook (same as build_workbook.py)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError
from ..scenario import Scenario, load_scenario


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default="planner.xlsx",
                        help="where to write the workbook (default: ./planner.xlsx). An existing file is never "
                             "overwritten silently: the build stops (exit 2) unless --force is given")
    parser.add_argument("-f", "--force", action="store_true",
                        help="overwrite the output file if it exists (the new file replaces it in one step: "
                             "an interrupted build leaves the old file as it was)")
    parser.add_argument("--follow-symlinks", action="store_true",
                        help="if the output is a symbolic link, replace the file it points to (without this "
                             "flag a link is refused)")
    parser.add_argument("--scenario", action="append", default=[], metavar="TOML",
                        help="a scenario: a TOML file, or the name of a preset shipped with xlcalc "
                             "(xlcalc/presets/<name>.toml, e.g. seed000-100b-h100); repeat to compare "
                             "several side by side. The first one fills the Inputs sheet. Default: seed 002's "
                             "70B on A800, compared with H100 and Ascend 910B")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("workbook", help="write the planning workbook (.xlsx with live formulas)",
                              description=__doc__)
    add_arguments(p)
    p.set_defaults(func=run)


def scenario_from(label: str) -> Scenario:
    """A scenario from ``--scenario``: a TOML file, or a preset shipped with xlcalc by name (xlcalc.presets)."""
    from .. import presets

    path = Path(label)
    if path.exists() or path.parent != Path(".") or label.endswith(".toml") and presets.find(label) is None:
        return load_scenario(path)
    return presets.load(label)  # a shipped preset, or a message naming them all


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """SIGTERM (``kill``) ends the build like Ctrl-C does: through the cleanup of its temporary file."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def run(args: argparse.Namespace) -> int:
    from ..atomic import check_target
    from ..workbook import build

    scenarios = [scenario_from(s) for s in args.scenario or ["seed002-70b-a800"]]
    out = Path(args.output)
    if out.suffix.lower() != ".xlsx":
        raise InputError("output", str(out), "a file name ending in .xlsx")
    force, follow = args.force, args.follow_symlinks
    check_target(out, overwrite=force, follow_symlinks=follow)
    try:
        with _terminate_as_exit():
            lay = build(out, scenarios, overwrite=force, follow_symlinks=follow)
    except OSError as exc:
        raise InputError("output", str(out), "a path that can be written", exc.strerror or str(exc)) from None
    n = sum(1 for _ in lay.book.formula_cells())
    print(f"wrote {out} ({n} formula cells, {len(lay.book.names)} defined names; scenario: {scenarios[0].name})")
    return 0

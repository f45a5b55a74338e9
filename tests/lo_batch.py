"""LibreOffice runs shared by the test modules that need a real spreadsheet engine: one soffice call per run.

Each module registers a producer when it is imported: a function that writes its .xlsx files into the folder it is
given and returns them, with whatever else its tests need. The modules are grouped into runs (``RUNS``): the first
test that asks for any module's results runs the producers of that module's run and converts all their files in
one ``soffice`` call (each start of soffice costs seconds on a 2-core machine, several times more under load); each
module then gets its own recalculated files, in the order its producer returned them. A run's modules are one unit
of work for the two test processes (tests/conftest.py), so the two runs go side by side in the two processes.
Skips where LibreOffice is absent, except under CI=true, where it fails.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from requires import require
from xlcalc.workbook.libreoffice import recalculate, soffice

Producer = Callable[[Path], tuple[list[Path], Any]]

# The test modules that use LibreOffice, by run: about the same CPU time each (the workbook module's 36 files; the
# other modules' 25 files; the print-outs are tests/test_workbook_print.py's own soffice run). A module that imports
# this one must be listed (tests/conftest.py fails the run otherwise); test_readback asks for the workbook module's
# files.
RUNS: dict[str, frozenset[str]] = {
    "libreoffice-workbook": frozenset({"test_workbook_libreoffice", "test_readback"}),
    "libreoffice-faces": frozenset({"test_finetune_faces", "test_memory_faces", "test_moe", "test_money_faces",
                                    "test_workbook_bounds", "test_workbook_budget_first", "test_workbook_checks",
                                    "test_workbook_step_time"}),
}


def run_of(module: str) -> str | None:
    """The LibreOffice run a test module (by its name, e.g. ``test_money_faces``) belongs to, or None."""
    name = module.rpartition(".")[2]
    return next((run for run, modules in RUNS.items() if name in modules), None)


_PRODUCERS: dict[str, Producer] = {}
_DONE: dict[str, tuple[list[Path], Any]] = {}
_FAILED: list[BaseException] = []


def register(name: str) -> Callable[[Producer], Producer]:
    """Decorator: ``producer(folder) -> (files written in folder, extra)`` joins the one LibreOffice run as ``name``."""
    def add(producer: Producer) -> Producer:
        if name in _PRODUCERS and _PRODUCERS[name] is not producer:
            raise ValueError(f"two LibreOffice producers named {name!r}")
        _PRODUCERS[name] = producer
        return producer
    return add


def require_libreoffice() -> None:
    require(soffice(), "LibreOffice (soffice) is not installed: install libreoffice-calc-nogui")


def _run(run: str | None) -> None:
    """Every producer of ``run`` not converted yet, in one soffice call."""
    work = Path(tempfile.mkdtemp(prefix="xlcalc-lo-batch-"))  # one folder per run
    atexit.register(shutil.rmtree, work, True)
    flat_dir = work / "in"
    flat_dir.mkdir()
    made: dict[str, tuple[list[Path], Any]] = {}
    for name, producer in _PRODUCERS.items():
        if name in _DONE or run_of(producer.__module__) != run:  # converted already, or another run's
            continue
        folder = work / "make" / name
        folder.mkdir(parents=True)
        files, extra = producer(folder)
        flat = []
        for f in files:  # one flat folder, names prefixed by the module: soffice names each output by its input
            dst = flat_dir / f"{name}--{f.name}"
            shutil.copy(f, dst)
            flat.append(dst)
        made[name] = (flat, extra)
    sources = [f for flat, _ in made.values() for f in flat]
    outputs = dict(zip(sources, recalculate(sources, work / "out")))
    for name, (flat, extra) in made.items():
        _DONE[name] = ([outputs[f] for f in flat], extra)


def results(name: str) -> tuple[list[Path], Any]:
    """(the recalculated .xlsx files of producer ``name``, its extra); the first call of a run runs its producers and
    soffice."""
    require_libreoffice()
    if name not in _PRODUCERS:
        raise KeyError(f"no LibreOffice producer named {name!r}")
    if _FAILED:
        raise RuntimeError("the one LibreOffice run of the session failed (see the first test that asked)") from _FAILED[0]
    if name not in _DONE:
        try:
            _run(run_of(_PRODUCERS[name].__module__))
        except BaseException as exc:
            _FAILED.append(exc)
            raise
    return _DONE[name]

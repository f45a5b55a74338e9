"""One LibreOffice run recalculates the workbooks of every test module that needs a real spreadsheet engine.

Each module registers a producer when it is imported: a function that writes its .xlsx files into the folder it is
given and returns them, with whatever else its tests need. The first test that asks for any module's results runs
every registered producer and converts all their files in one ``soffice`` call (each start of soffice costs seconds
on a 2-core machine, several times more under load); each module then gets its own recalculated files, in the order
its producer returned them. Skips where LibreOffice is absent, except under CI=true, where it fails.
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


def _run() -> None:
    work = Path(tempfile.mkdtemp(prefix="xlcalc-lo-batch-"))  # one folder per run
    atexit.register(shutil.rmtree, work, True)
    flat_dir = work / "in"
    flat_dir.mkdir()
    made: dict[str, tuple[list[Path], Any]] = {}
    for name, producer in _PRODUCERS.items():
        if name in _DONE:  # a module imported after an earlier run: only its own files are converted now
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
    """(the recalculated .xlsx files of producer ``name``, its extra); the first call runs every producer and soffice."""
    require_libreoffice()
    if name not in _PRODUCERS:
        raise KeyError(f"no LibreOffice producer named {name!r}")
    if _FAILED:
        raise RuntimeError("the one LibreOffice run of the session failed (see the first test that asked)") from _FAILED[0]
    if name not in _DONE:
        try:
            _run()
        except BaseException as exc:
            _FAILED.append(exc)
            raise
    return _DONE[name]

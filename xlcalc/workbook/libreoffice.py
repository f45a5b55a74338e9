"""Recalculate workbooks in LibreOffice (headless Calc) — the real-engine proof.

``recalculate(paths, outdir)`` converts several .xlsx files in one ``soffice`` call
with a fresh, private user profile whose settings force a full recalculation on
load (``org.openoffice.Office.Calc/Formula/Load/OOXMLRecalcMode`` = 0, "always").
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

RECALC_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" \
xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse">\
<value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse">\
<value>0</value></prop></item>
</oor:items>
"""


class LibreOfficeError(RuntimeError):
    pass


def soffice() -> str | None:
    """Path of the LibreOffice binary, or None."""
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    return None


def make_profile(root: Path) -> str:
    """A fresh user profile that always recalculates OOXML files; returns its file URL."""
    user = root / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(RECALC_XCU, encoding="utf-8")
    return root.resolve().as_uri()


# A conversion is bounded by the work it does, not by the clock: a loaded machine makes soffice slower, not
# busier. Each soffice process may use CPU_SECONDS_START plus CPU_SECONDS_PER_FILE per file (RLIMIT_CPU); the
# wall-clock HANG_GUARD_S only catches a process that waits forever (it uses no CPU), far above what a
# conversion takes on a busy 2-core machine.
CPU_SECONDS_START = 120
CPU_SECONDS_PER_FILE = 60
HANG_GUARD_S = 1800


def recalculate(paths: Sequence[str | Path], outdir: str | Path, cpu_seconds: float | None = None) -> list[Path]:
    """Open each workbook in LibreOffice, recalculate everything, save as .xlsx into ``outdir``."""
    return convert(paths, outdir, "xlsx:Calc MS Excel 2007 XML", ".xlsx", cpu_seconds)


def to_pdf(paths: Sequence[str | Path], outdir: str | Path, cpu_seconds: float | None = None) -> list[Path]:
    """``soffice --convert-to pdf`` straight from each .xlsx (recalculated on load), as a user would print it."""
    return convert(paths, outdir, "pdf", ".pdf", cpu_seconds)


def _cpu_limit(seconds: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
    return apply


def convert(paths: Sequence[str | Path], outdir: str | Path, target: str, suffix: str,
            cpu_seconds: float | None = None) -> list[Path]:
    """Convert each file with ``soffice --convert-to target`` in one run (fresh profile, full recalculation).

    ``cpu_seconds`` bounds the CPU time of each soffice process (default: CPU_SECONDS_START + CPU_SECONDS_PER_FILE
    per file); there is no wall-clock limit but the hang guard."""
    binary = soffice()
    if binary is None:
        raise LibreOfficeError("LibreOffice (soffice) is not installed; on Debian: apt-get install libreoffice-calc-nogui")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    srcs = [Path(p).resolve() for p in paths]
    if cpu_seconds is None:
        cpu_seconds = CPU_SECONDS_START + CPU_SECONDS_PER_FILE * len(srcs)
    limit = max(1, int(cpu_seconds))
    if any(p.parent == outdir.resolve() for p in srcs):
        raise ValueError("the output folder must differ from the input files' folder")
    with tempfile.TemporaryDirectory(prefix="xlcalc-lo-") as tmp:
        profile = make_profile(Path(tmp) / "profile")
        cmd = [binary, f"-env:UserInstallation={profile}", "--headless", "--invisible", "--norestore",
               "--nolockcheck", "--convert-to", target, "--outdir", str(outdir),
               *map(str, srcs)]
        env = {**os.environ, "HOME": tmp}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_GUARD_S, env=env,
                                  preexec_fn=_cpu_limit(limit))
        except subprocess.TimeoutExpired as exc:
            raise LibreOfficeError(f"LibreOffice hung: no result within {HANG_GUARD_S} s") from exc
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise LibreOfficeError(f"LibreOffice used more than its {limit} CPU seconds for {len(srcs)} file(s)")
    outs = [outdir / (p.stem + suffix) for p in srcs]
    missing = [o.name for o in outs if not o.exists()]
    if proc.returncode != 0 or missing:
        raise LibreOfficeError(
            f"LibreOffice conversion failed (exit {proc.returncode}; missing {missing}): "
            f"{proc.stderr.strip() or proc.stdout.strip()}"
        )
    return outs

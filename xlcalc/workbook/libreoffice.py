"""Recalculate workbooks in LibreOffice (headless Calc) — the real-engine proof.

``recalculate(paths, outdir)`` converts several .xlsx files in one ``soffice`` call
with a fresh, private user profile whose settings force a full recalculation on
load (``org.openoffice.Office.Calc/Formula/Load/OOXMLRecalcMode`` = 0, "always").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
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


def recalculate(paths: Sequence[str | Path], outdir: str | Path, timeout: float | None = None) -> list[Path]:
    """Open each workbook in LibreOffice, recalculate everything, save as .xlsx into ``outdir``."""
    return convert(paths, outdir, "xlsx:Calc MS Excel 2007 XML", ".xlsx", timeout)


def to_pdf(paths: Sequence[str | Path], outdir: str | Path, timeout: float | None = None) -> list[Path]:
    """``soffice --convert-to pdf`` straight from each .xlsx (recalculated on load), as a user would print it."""
    return convert(paths, outdir, "pdf", ".pdf", timeout)


def convert(paths: Sequence[str | Path], outdir: str | Path, target: str, suffix: str,
            timeout: float | None = None) -> list[Path]:
    """Convert each file with ``soffice --convert-to target`` in one run (fresh profile, full recalculation)."""
    binary = soffice()
    if binary is None:
        raise LibreOfficeError("LibreOffice (soffice) is not installed; on Debian: apt-get install libreoffice-calc-nogui")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    srcs = [Path(p).resolve() for p in paths]
    if timeout is None:  # a shared, loaded machine takes several seconds per workbook
        timeout = 120 + 20 * len(srcs)
    if any(p.parent == outdir.resolve() for p in srcs):
        raise ValueError("the output folder must differ from the input files' folder")
    with tempfile.TemporaryDirectory(prefix="xlcalc-lo-") as tmp:
        profile = make_profile(Path(tmp) / "profile")
        cmd = [binary, f"-env:UserInstallation={profile}", "--headless", "--invisible", "--norestore",
               "--nolockcheck", "--convert-to", target, "--outdir", str(outdir),
               *map(str, srcs)]
        env = {**os.environ, "HOME": tmp}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise LibreOfficeError(f"LibreOffice did not finish within {timeout:.0f} s") from exc
    outs = [outdir / (p.stem + suffix) for p in srcs]
    missing = [o.name for o in outs if not o.exists()]
    if proc.returncode != 0 or missing:
        raise LibreOfficeError(
            f"LibreOffice conversion failed (exit {proc.returncode}; missing {missing}): "
            f"{proc.stderr.strip() or proc.stdout.strip()}"
        )
    return outs

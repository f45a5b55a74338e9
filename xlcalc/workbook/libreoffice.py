"""Recalculate workbooks in LibreOffice (headless Calc) — the real-engine proof.

``recalculate(paths, outdir)`` converts several .xlsx files in one ``soffice`` call with a fresh, private user profile
whose settings force a full recalculation on load (``org.openoffice.Office.Calc/Formula/Load/OOXMLRecalcMode`` = 0,
"always").
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

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
    return shutil.which("soffice") or shutil.which("libreoffice")


def make_profile(root: Path) -> str:
    """A fresh user profile that always recalculates OOXML files; returns its file URL."""
    user = root / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(RECALC_XCU, encoding="utf-8")
    return root.resolve().as_uri()


# A conversion is bounded by the work it does, not by the clock: a loaded machine makes soffice slower, not
# busier. Each soffice process may use CPU_SECONDS_START plus CPU_SECONDS_PER_FILE per file (RLIMIT_CPU). A hang is
# a process that stops working: soffice (with the processes it starts) used less than HANG_MIN_CPU_S of CPU in
# HANG_GUARD_S seconds, which a working process does however many others share the machine. Where /proc is absent
# (no CPU time to read), HANG_WALL_S is a plain wall-clock limit, far above what a conversion takes.
CPU_SECONDS_START = 120
CPU_SECONDS_PER_FILE = 60
HANG_GUARD_S = 600
HANG_MIN_CPU_S = 1.0
HANG_WALL_S = 1800


def _tree(pid: int) -> dict[int, float] | None:
    """CPU seconds (user + system, reaped children's included) of ``pid`` and each process under it, from /proc;
    None without /proc."""
    proc = Path("/proc")
    if not (proc / str(os.getpid()) / "stat").exists():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, ... utime stime cutime cstime
        parent[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = sum(int(x) for x in fields[11:15]) / tick

    def under(p: int) -> bool:
        seen = set()
        while p not in seen and p > 1:
            if p == pid:
                return True
            seen.add(p)
            p = parent.get(p, 0)
        return False

    return {p: c for p, c in cpu.items() if under(p)}


def run_working(cmd: Sequence[str], hang_s: float = HANG_GUARD_S, min_cpu_s: float = HANG_MIN_CPU_S,
                wall_s: float = HANG_WALL_S, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` for as long as the child (and what it starts)
    keeps working: it is hung, killed with its processes and ``subprocess.TimeoutExpired`` raised, once it used less
    than ``min_cpu_s`` CPU seconds in ``hang_s`` seconds (without /proc: once ``wall_s`` seconds passed)."""
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)

    def kill(tree: dict[int, float] | None) -> None:
        for pid in sorted(tree or {}, reverse=True):  # the child and every process under it
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.kill()
        proc.communicate()

    start = time.monotonic()
    try:
        tree = _tree(proc.pid)
        window = (start, sum(tree.values()) if tree is not None else 0.0)
        while True:
            try:
                out, err = proc.communicate(timeout=min(5.0, hang_s / 4))
                return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if now - window[0] < (hang_s if tree is not None else wall_s):
                continue
            tree = _tree(proc.pid)
            used = sum(tree.values()) if tree is not None else 0.0
            if tree is not None and used - window[1] >= min_cpu_s:
                window = (now, used)  # still working
                continue
            kill(tree)  # hung
            raise subprocess.TimeoutExpired(proc.args, now - start)
    except BaseException:  # interrupted (or hung): nothing is left running, as subprocess.run leaves nothing
        if proc.poll() is None:
            kill(_tree(proc.pid))
        raise


def recalculate(paths: Sequence[str | Path], outdir: str | Path, cpu_seconds: float | None = None) -> list[Path]:
    """Open each workbook in LibreOffice, recalculate everything, save as .xlsx into ``outdir``."""
    return convert(paths, outdir, "xlsx:Calc MS Excel 2007 XML", ".xlsx", cpu_seconds)


def to_pdf(paths: Sequence[str | Path], outdir: str | Path, cpu_seconds: float | None = None) -> list[Path]:
    """``soffice --convert-to pdf`` straight from each .xlsx (recalculated on load), as a user would print it."""
    return convert(paths, outdir, "pdf", ".pdf", cpu_seconds)


def convert(paths: Sequence[str | Path], outdir: str | Path, target: str, suffix: str,
            cpu_seconds: float | None = None) -> list[Path]:
    """Convert each file with ``soffice --convert-to target`` in one run (fresh profile, full recalculation).

    ``cpu_seconds`` bounds the CPU time of each soffice process (default: CPU_SECONDS_START + CPU_SECONDS_PER_FILE
    per file); there is no wall-clock limit: a process that stops working is hung (run_working)."""
    if (binary := soffice()) is None:
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
               "--nolockcheck", "--convert-to", target, "--outdir", str(outdir), *map(str, srcs)]
        cpu_limit = partial(resource.setrlimit, resource.RLIMIT_CPU, (limit, limit + 5))  # in the child, before soffice
        try:
            proc = run_working(cmd, env={**os.environ, "HOME": tmp}, preexec_fn=cpu_limit)
        except subprocess.TimeoutExpired as exc:
            raise LibreOfficeError(f"LibreOffice hung: it stopped working ({exc.timeout:.0f} s)") from exc
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise LibreOfficeError(f"LibreOffice used more than its {limit} CPU seconds for {len(srcs)} file(s)")
    outs = [outdir / (p.stem + suffix) for p in srcs]
    missing = [o.name for o in outs if not o.exists()]
    if proc.returncode != 0 or missing:
        raise LibreOfficeError(f"LibreOffice conversion failed (exit {proc.returncode}; missing {missing}): "
                               f"{proc.stderr.strip() or proc.stdout.strip()}")
    return outs

"""Subprocesses bounded by the work they do, not by the clock: a loaded machine slows a child down, it does
not make it do more. ``run_bounded`` limits each child process's CPU time (RLIMIT_CPU, inherited by the
processes it starts), and a child is hung only when it stops working: less than a CPU second in HANG_GUARD_S
seconds, counted over it and the processes it starts (xlcalc.workbook.libreoffice.run_working, the wait the
LibreOffice conversions use), never because a busy machine made it slow."""

from __future__ import annotations

import resource
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

from xlcalc.workbook.libreoffice import run_working

HANG_GUARD_S = 600  # a child (with the processes it starts) that used under a CPU second this long is hung


def _limit_cpu(cpu_s: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    return apply


def run_bounded(cmd: Sequence[str], cpu_s: int, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` with at most ``cpu_s`` CPU seconds per
    process; a child killed for exceeding it comes back with a return code and a stderr line that say so."""
    out = run_working(list(cmd), hang_s=HANG_GUARD_S, preexec_fn=_limit_cpu(cpu_s), **kwargs)
    if out.returncode in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU):
        out.stderr = (out.stderr or "") + f"\n(the command used more than its {cpu_s} CPU seconds: {' '.join(cmd)[:200]})"
    return out

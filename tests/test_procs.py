"""The wait on a child process (xlcalc.workbook.libreoffice.run_working, under tests/procs.run_bounded): a child is
hung when it stops working (too little CPU time in a window), not when a busy machine makes it slow; a hung child is
killed with the processes it started."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from procs import run_bounded
from xlcalc.workbook.libreoffice import run_working

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="CPU time read from /proc (Linux)")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def test_a_child_that_works_runs_to_its_end_however_long_it_takes():
    # about a CPU second of work, watched in windows of 0.5 s that ask for a clock tick of CPU time each (2% of a
    # core: a working child gets that on a machine shared by dozens of processes); the windows pass before it ends
    burn = "n = 0\nfor i in range(10_000_000): n += i\nprint(n)"
    out = run_working([sys.executable, "-c", burn], hang_s=0.5, min_cpu_s=0.005)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(sum(range(10_000_000)))


def test_a_child_that_stops_working_is_hung_and_killed_with_what_it_started(tmp_path):
    # the child starts a grandchild and writes its pid (windows with any CPU time: still working), then both sleep:
    # a window of 2 s without a clock tick of CPU is a hang
    pid_file = tmp_path / "grandchild.pid"
    child = textwrap.dedent(f"""
        import subprocess, sys, time
        g = subprocess.Popen(["sleep", "300"])
        open({str(pid_file)!r}, "w").write(str(g.pid))
        time.sleep(300)
    """)
    with pytest.raises(subprocess.TimeoutExpired):
        run_working([sys.executable, "-c", child], hang_s=2, min_cpu_s=0.005)
    grandchild = int(pid_file.read_text())
    # SIGKILL is sent; the kernel ends the process when it is next scheduled, later on a loaded machine: wait for that
    # (a killed process ends within moments; one that was never killed would still sleep after the minute)
    waited = time.monotonic()
    while _alive(grandchild) and time.monotonic() - waited < 60:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_run_bounded_kills_a_child_past_its_cpu_seconds_and_says_so():
    out = run_bounded([sys.executable, "-c", "while True: pass"], cpu_s=1)
    assert out.returncode != 0
    assert "used more than its 1 CPU seconds" in out.stderr

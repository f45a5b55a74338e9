"""The real build, killed by its PID at random points and raced against itself: ``xlcalc workbook -o plan.xlsx
--force`` leaves the old workbook or the new one, whole, and no temporary file once a later build has run.

tests/test_atomic_write.py kills the write path itself many times in forked children; here the whole command
runs as a user runs it (its own process, the scenario loaded, the workbook laid out, computed and written), so a
kill can land in any phase. The number of kills is fixed (bounded by work); the random delays are fractions of
the time one build took on this machine just before, so they spread over the build however loaded the machine is.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from openpyxl import load_workbook

from conftest import ROOT
from xlcalc import atomic

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

KILLS = 3


def build(target: Path, scenario: str) -> subprocess.Popen:
    """``xlcalc workbook`` as a user runs it (the installed package under ./test.sh, else this checkout)."""
    return subprocess.Popen([sys.executable, "-m", "xlcalc", "workbook", "-o", str(target), "--force",
                             "--scenario", scenario], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def title(path: Path) -> str:
    """The scenario the workbook was built for (its Scenario_Name cell), read by openpyxl: the file is whole."""
    wb = load_workbook(path)
    (sheet, at), = wb.defined_names["Scenario_Name"].destinations
    name = str(wb[sheet][at.replace("$", "")].value)
    return {"70B on 2T tokens, 1024 A800 (seed 002 §7.3)": "a800", "100B on 2T tokens, 1024 H100 (seed 000)": "h100"}[name]


def leftovers(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith((atomic.TEMP_SUFFIX, atomic.LOCK_SUFFIX)))


def test_a_build_killed_at_random_points_leaves_the_old_or_the_new_workbook(tmp_path):
    target = tmp_path / "plan.xlsx"
    start = time.monotonic()
    first = build(target, "seed002-70b-a800")
    out, err = first.communicate()
    assert first.returncode == 0, err
    one_build_s = time.monotonic() - start
    old = target.read_bytes()
    assert title(target) == "a800"
    rng = random.Random(20261127)
    for _ in range(KILLS):
        proc = build(target, "seed000-100b-h100")
        time.sleep(rng.uniform(0.2, 1.1) * one_build_s)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        now = target.read_bytes()
        assert now == old or title(target) == "h100", "the target is neither the old workbook nor a whole new one"
        assert title(target) in ("a800", "h100")
        old = now
    final = build(target, "seed002-70b-a800")
    _, err = final.communicate()
    assert final.returncode == 0, err
    assert title(target) == "a800"
    assert [n for n in leftovers(tmp_path) if n.endswith(atomic.TEMP_SUFFIX)] == []  # the next build cleaned up


def test_two_builds_of_one_path_at_once_one_writes_the_other_is_told(tmp_path):
    target = tmp_path / "plan.xlsx"
    procs = [build(target, "seed002-70b-a800"), build(target, "seed000-100b-h100")]
    results = [p.communicate() + (p.returncode,) for p in procs]
    codes = [code for _, _, code in results]
    assert 0 in codes and set(codes) <= {0, 2}, results
    for out, err, code in results:
        assert "Traceback" not in err
        if code == 2:  # refused while the other held the lock: said so, never a second "wrote"
            assert "wrote" not in out and "lock" in err.lower(), err
    assert title(target) in ("a800", "h100")
    assert [n for n in leftovers(tmp_path) if n.endswith(atomic.TEMP_SUFFIX)] == []

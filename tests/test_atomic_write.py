"""Atomic workbook writes (xlcalc.atomic): the target is always the old file or the new one.

Kills and races run the write path in forked children (no interpreter start-up per child) on small
valid .xlsx payloads written in many chunks, so a kill at a random moment lands mid-write. Their
number is fixed (bounded by work); the random delays only pick the moment. A SIGKILL can leave the
killed write's temporary file behind (never a broken target): the tests check that the next write of
the same path removes it, as the module documents.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest
from openpyxl import Workbook, load_workbook

from xlcalc import atomic
from xlcalc.errors import InputError

posix_only = pytest.mark.skipif(sys.platform == "win32" or "fork" not in multiprocessing.get_all_start_methods(),
                                reason="forks children and uses POSIX signals")


def payload(label: str) -> bytes:
    """A small valid .xlsx whose A1 says ``label``, padded so a write takes many chunks."""
    wb = Workbook()
    wb.active["A1"] = label
    for r in range(2, 400):
        wb.active.cell(r, 1, f"{label} row {r} " + "x" * 40)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def slow_write(path: Path, data: bytes, chunks: int = 64, **kw) -> None:
    step = max(1, len(data) // chunks)
    with atomic.write(path, **kw) as f:
        for i in range(0, len(data), step):
            f.write(data[i:i + step])
            f.flush()


def leftovers(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith((atomic.TEMP_SUFFIX, atomic.LOCK_SUFFIX)))


def a1(path: Path) -> str:
    return load_workbook(path, read_only=True).active["A1"].value


def test_clean_write_replaces_with_mode_0644_and_leaves_nothing(tmp_path):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(payload("old"))
    target.chmod(0o600)
    slow_write(target, payload("new"))
    assert a1(target) == "new"
    if sys.platform != "win32":
        assert target.stat().st_mode & 0o777 == 0o644
    assert leftovers(tmp_path) == []


def test_an_error_mid_write_keeps_the_old_file_and_removes_the_temp(tmp_path):
    target = tmp_path / "plan.xlsx"
    old = payload("old")
    target.write_bytes(old)
    with pytest.raises(KeyboardInterrupt), atomic.write(target) as f:
        f.write(b"half a file")
        raise KeyboardInterrupt
    assert target.read_bytes() == old
    assert leftovers(tmp_path) == []


def test_write_text_replaces_a_doc_byte_for_byte(tmp_path):
    # what the doc generators (scripts/, bench/) write through: UTF-8, newlines kept as given, nothing left beside it
    target = tmp_path / "doc.md"
    target.write_text("old\n", encoding="utf-8")
    atomic.write_text(target, "new \u2264 1\r\nline\n")
    assert target.read_bytes() == "new \u2264 1\r\nline\n".encode()
    assert leftovers(tmp_path) == []


def test_no_overwrite_refuses_an_existing_file(tmp_path):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"keep")
    with pytest.raises(InputError, match="exists already") as exc, atomic.write(target, overwrite=False) as f:
        f.write(b"new")
    assert exc.value.name == "output"
    assert target.read_bytes() == b"keep" and leftovers(tmp_path) == []


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_a_symlink_is_refused_unless_asked_then_its_file_is_replaced(tmp_path):
    real, link = tmp_path / "real.xlsx", tmp_path / "link.xlsx"
    real.write_bytes(b"keep")
    link.symlink_to(real.name)
    with pytest.raises(InputError, match="symbolic link.*--follow-symlinks"):
        slow_write(link, payload("new"))
    assert real.read_bytes() == b"keep" and link.is_symlink()
    slow_write(link, payload("new"), follow_symlinks=True)
    assert link.is_symlink() and a1(real) == "new"
    dangling = tmp_path / "dangling.xlsx"
    dangling.symlink_to("nowhere.xlsx")
    with pytest.raises(InputError, match="symbolic link"):
        slow_write(dangling, b"x")
    slow_write(dangling, payload("created"), follow_symlinks=True)  # as cp does: the file it names is made
    assert a1(tmp_path / "nowhere.xlsx") == "created"
    with pytest.raises(InputError, match="directory or a special file"):
        slow_write(tmp_path, b"x")
    assert leftovers(tmp_path) == []


def test_a_second_writer_of_the_same_path_gets_a_clear_error(tmp_path):
    target = tmp_path / "plan.xlsx"
    with atomic.write(target) as f:
        f.write(payload("first"))
        with pytest.raises(InputError, match="another xlcalc build is writing it now") as exc:
            slow_write(target, payload("second"))
        assert exc.value.name == "output"
    assert a1(target) == "first" and leftovers(tmp_path) == []
    slow_write(target, payload("third"))  # the lock is gone with its holder
    assert a1(target) == "third"


def _writer(path: str, data: bytes, rounds: int) -> None:
    for _ in range(rounds):
        try:
            slow_write(Path(path), data, chunks=256)
        except InputError:
            os._exit(3)
    os._exit(0)


@posix_only
def test_sigkill_at_random_points_leaves_the_old_or_the_new_file(tmp_path):
    ctx = multiprocessing.get_context("fork")
    target = tmp_path / "plan.xlsx"
    old, new = payload("old"), payload("new")
    target.write_bytes(old)
    rng = random.Random(23)
    for _ in range(8):
        child = ctx.Process(target=_writer, args=(str(target), new, 10_000))
        child.start()
        time.sleep(rng.uniform(0.0, 0.15))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL
        assert target.read_bytes() in (old, new)  # never empty, never half
        assert a1(target) in ("old", "new")
    # a killed write may leave its temp (and lock file); the next write of the path removes them
    slow_write(target, payload("final"))
    assert a1(target) == "final" and leftovers(tmp_path) == []


@posix_only
def test_concurrent_writers_one_wins_the_others_are_told(tmp_path):
    ctx = multiprocessing.get_context("fork")
    target = tmp_path / "plan.xlsx"
    for round_ in range(3):
        labels = [f"w{round_}-{i}" for i in range(3)]
        children = [ctx.Process(target=_writer, args=(str(target), payload(lb), 3)) for lb in labels]
        for c in children:
            c.start()
        for c in children:
            c.join()
        codes = dict(zip(labels, (c.exitcode for c in children), strict=True))
        assert set(codes.values()) <= {0, 3}, codes
        # the file holds the scenario of a writer that finished every write: no writer that was told
        # "busy" and no half-written file
        assert a1(target) in {lb for lb, code in codes.items() if code == 0}
        assert leftovers(tmp_path) == []


def _stoppable_writer(path: str, data: bytes, ready) -> None:
    from xlcalc.cli.workbook import _terminate_as_exit  # what `xlcalc workbook` wraps its build in

    with _terminate_as_exit():
        ready.set()
        while True:
            slow_write(Path(path), data, chunks=256)


@posix_only
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_terminate_or_ctrl_c_mid_write_keeps_the_old_file_and_removes_the_temp(tmp_path, sig):
    ctx = multiprocessing.get_context("fork")
    target = tmp_path / "plan.xlsx"
    old, new = payload("old"), payload("new")
    rng = random.Random(sig)
    for _ in range(4):
        target.write_bytes(old)
        ready = ctx.Event()
        child = ctx.Process(target=_stoppable_writer, args=(str(target), new, ready))
        child.start()
        assert ready.wait(600)  # the signal handlers are in place (a safety net, not a time limit)
        time.sleep(rng.uniform(0.0, 0.1))
        os.kill(child.pid, getattr(signal, sig))
        child.join()
        assert child.exitcode != 0 and child.exitcode != -getattr(signal, sig)  # it ran its cleanup
        assert target.read_bytes() in (old, new)
        assert leftovers(tmp_path) == []

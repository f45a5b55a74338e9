"""What the benchmarks share: CPU-time measurement in interleaved passes, and the dated blocks they write into docs.

* **Time** is CPU time (``time.process_time``: this process's own time, which other processes on a shared
  machine do not add to) with wall-clock time (``time.perf_counter``) beside it. The things compared are timed
  in interleaved passes (A, B, C, then B, C, A, ...), so a busy spell of the machine falls on all of them, and
  each is reported as the median over the passes with the minimum and maximum.
* **Blocks**: a benchmark run with ``--write`` puts its figures between two markers in each doc that quotes them
  (``<!-- bench_udfs.py: begin -->`` ... ``<!-- bench_udfs.py: end -->``), with the date and the machine's load
  average (``os.getloadavg``). ``--check`` runs the benchmark again and fails unless each block has the shape of
  what the script writes now and the same target statements (met / not met): the numbers themselves vary from
  run to run and are not compared.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from xlcalc.atomic import write_text


@dataclass
class Timing:
    """CPU and wall seconds of one thing, one entry per pass."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.cpu)

    def ms(self, digits: int = 2) -> str:
        """``median ms (min-max), wall median``."""
        return (f"{self.median * 1e3:.{digits}f} ms ({min(self.cpu) * 1e3:.{digits}f}-{max(self.cpu) * 1e3:.{digits}f}),"
                f" wall {statistics.median(self.wall) * 1e3:.{digits}f}")


def ratio(num: Timing, den: Timing) -> tuple[float, float, float]:
    """(ratio of the CPU medians, lowest and highest ratio within one pass)."""
    per_pass = [a / b for a, b in zip(num.cpu, den.cpu)]
    return num.median / den.median, min(per_pass), max(per_pass)


def interleaved(things: dict[str, tuple[Callable[[], object], int]], passes: int) -> dict[str, Timing]:
    """Time each of ``things`` (name -> (function, calls per pass)) once per pass, the order rotating from pass
    to pass; per call, CPU and wall seconds."""
    out = {name: Timing() for name in things}
    names = list(things)
    for p in range(passes):
        for name in names[p % len(names):] + names[:p % len(names)]:
            fn, calls = things[name]
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(calls):
                fn()
            c1, w1 = time.process_time(), time.perf_counter()
            out[name].cpu.append((c1 - c0) / calls)
            out[name].wall.append((w1 - w0) / calls)
    return out


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def machine() -> str:
    return (f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores "
            f"{platform.machine()}")


def today() -> str:
    return date.today().isoformat()


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


# -- blocks in docs ---------------------------------------------------------------------------

def markers(script: str) -> tuple[str, str]:
    return f"<!-- {script}: begin -->", f"<!-- {script}: end -->"


def _parts(text: str, script: str) -> tuple[str, str, str] | None:
    begin, end = markers(script)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        return None
    head, rest = text.split(begin)
    body, tail = rest.split(end)
    return head, body, tail


def shape(text: str) -> str:
    """A block with its numbers (dates, times, ratios, loads) blanked: what ``--check`` compares."""
    return re.sub(r"\d[\d,.]*", "#", text).strip()


def write_or_check(script: str, blocks: dict[str, str], check: bool) -> int:
    """Put each block (doc path relative to the root -> text) between the script's markers, or with ``check``
    compare each doc's block with it by :func:`shape`. Returns the exit status."""
    status = 0
    begin, end = markers(script)
    for rel, block in blocks.items():
        parts = _parts((ROOT / rel).read_text(encoding="utf-8"), script)
        if parts is None:
            print(f"{rel} lacks one pair of the markers {begin} ... {end}", file=sys.stderr)
            status = 1
            continue
        head, body, tail = parts
        if check:
            if shape(body) != shape(block):
                print(f"{rel}: the block differs from a fresh run beyond its numbers (its format, or a target "
                      f"statement); rerun: python bench/{script} --write\n--- in the doc:\n{body.strip()}\n"
                      f"--- a fresh run:\n{block.strip()}", file=sys.stderr)
                status = 1
            else:
                print(f"{rel}: the block has the current format and the fresh run's target statements")
            continue
        write_text(ROOT / rel, head + begin + "\n" + block.strip() + "\n" + end + tail)
        print(f"wrote {rel}")
    return status


def arguments(description: str, extra: Sequence[tuple[str, dict[str, object]]] = ()) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--write", action="store_true", help="write the figures into the docs that quote them")
    ap.add_argument("--check", action="store_true",
                    help="run again and fail unless the docs' blocks have the current format and target statements")
    ap.add_argument("--passes", type=int, default=11, help="interleaved passes")
    for flag, kw in extra:
        ap.add_argument(flag, **kw)  # type: ignore[arg-type]
    return ap.parse_args()


def report(script: str, blocks: dict[str, str], ok: bool, args: argparse.Namespace) -> int:
    """Print the blocks; with ``--write`` or ``--check``, :func:`write_or_check` them. Exit status 1 if a target is
    not met or a doc's block is not what the script writes."""
    print("\n\n".join(blocks.values()))
    status = write_or_check(script, blocks, args.check) if args.write or args.check else 0
    return status or (0 if ok else 1)

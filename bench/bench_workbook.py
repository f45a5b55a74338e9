#!/usr/bin/env python3
"""Benchmark: build time of the full planning workbook and its LibreOffice recalculation time.

LibreOffice time is given as a ratio to a baseline measured in the same run: converting
an empty workbook (start-up and save cost of soffice alone).

    python bench/bench_workbook.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openpyxl  # noqa: E402

from xlcalc import presets  # noqa: E402
from xlcalc.workbook import build, layout  # noqa: E402
from xlcalc.workbook.libreoffice import recalculate, soffice  # noqa: E402


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sc = [presets.load("seed002-70b-a800")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        lay = layout(sc)
        n_formulas = sum(1 for _ in lay.book.formula_cells())
        t_layout = timed(lambda: layout(sc).book.cached_values(), args.repeat)
        t_build = timed(lambda: build(tmp / "planner.xlsx", sc), args.repeat)
        size_kb = (tmp / "planner.xlsx").stat().st_size / 1024
        print(f"formula cells: {n_formulas}; file size {size_kb:.0f} KiB")
        print(f"layout + engine values: median {statistics.median(t_layout) * 1000:.0f} ms")
        print(f"full build (layout, write, cached values): median {statistics.median(t_build) * 1000:.0f} ms "
              f"(min {min(t_build) * 1000:.0f}, max {max(t_build) * 1000:.0f})")
        if soffice() is None:
            print("LibreOffice not installed: recalculation not measured")
            return 0
        empty = tmp / "src" / "empty.xlsx"
        empty.parent.mkdir()
        openpyxl.Workbook().save(empty)
        (tmp / "src" / "planner.xlsx").write_bytes((tmp / "planner.xlsx").read_bytes())
        lo_repeat = max(1, args.repeat // 2 + 1)
        t_empty = timed(lambda: recalculate([empty], tmp / "out1"), lo_repeat)
        t_full = timed(lambda: recalculate([tmp / "src" / "planner.xlsx"], tmp / "out2"), lo_repeat)
        me, mf = statistics.median(t_empty), statistics.median(t_full)
        print(f"LibreOffice convert, empty workbook (baseline): median {me:.2f} s")
        print(f"LibreOffice open + full recalculation + save of the planner: median {mf:.2f} s "
              f"= {mf / me:.2f} x baseline (recalculation and I/O of the planner: {mf - me:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

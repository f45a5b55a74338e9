"""Benchmark: one worksheet-function call over a 10,000-row range vs 10,000 one-cell calls.

    python bench/bench_udfs.py [rows]

Both forms run here, in one process, on the Python side only: arguments arrive as
xlwings hands them over with ndim=2 (a cell as [[x]], a column as [[x1], [x2], ...]).
In Excel each one-cell call also pays the Excel -> VBA -> COM -> Python round trip
(classic add-in) or a JavaScript -> Pyodide hop (xlwings Lite) on top of what is
measured here, so the real ratio in Excel is larger than the one printed.
Results are written up in docs/excel.md.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "udfs")]

import xlcalc  # noqa: E402
import xlcalc_udfs as udfs  # noqa: E402


def xlwings_conversion():
    """read(args) / write(result) through xlwings' own conversion pipelines, as call_udf does
    for each call, with a stand-in engine whose per-value cleaning is a no-op (Windows' real
    one does more, so this is a lower bound). None if xlwings is not installed."""
    try:
        import xlwings
        from xlwings import conversion
    except ImportError:
        return None

    class _Impl:
        name = type = "bench"

        @staticmethod
        def clean_value_data(data, *args):
            return data

        @staticmethod
        def prepare_xl_data_element(x, *args):
            return "" if x is None else x

    if "bench" not in [e.name for e in xlwings.engines]:
        xlwings.engines.add(xlwings.Engine(impl=_Impl()))

    def call(fn, *args):
        values = [conversion.read(None, a, {"ndim": 2}, engine_name="bench") for a in args]
        return conversion.write(fn(*values), None, {}, engine_name="bench")

    return call


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(rows: int = 10_000, repeats: int = 5) -> None:
    params_b = [[float(1 + i % 400)] for i in range(rows)]
    cases = {
        "TRAIN_DAYS (5 args)": (udfs.TRAIN_DAYS, lambda p: (p, [[2.0]], [[312.0]], [[1024.0]], [[0.4]])),
        "MEM_STATIC_GB (8 args)": (udfs.MEM_STATIC_GB,
                                   lambda p: (p, [[1.0]], [[64.0]], [[8.0]], [[2.0]], [[2.0]], [[4.0]], [[8.0]])),
    }
    print(f"{date.today().isoformat()}  {platform.python_implementation()} {platform.python_version()}  "
          f"{os.cpu_count()} cores  {platform.machine()}  rows={rows}  best of {repeats}")
    convert = xlwings_conversion()
    engines = {"TRAIN_DAYS (5 args)": lambda p: xlcalc.train_days(p, 2.0, 312.0, 1024.0, 0.4),
               "MEM_STATIC_GB (8 args)": lambda p: xlcalc.mem_static_gb(p, 1.0, 64.0, 8.0, 2.0, 2.0, 4.0, 8.0)}
    print(f"{'function':<24} {'one call, range':>16} {'one-cell calls':>16} {'ratio':>8} {'per cell':>10}")
    for name, (fn, args) in cases.items():
        column = args(params_b)
        out = fn(*column)
        assert len(out) == rows and all(isinstance(r[0], float) for r in out)
        singles = [args([row]) for row in params_b]
        assert [fn(*a) for a in singles[:3]] == [r[0] for r in out[:3]]

        t_range = best_of(lambda: fn(*column), repeats)
        t_cells = best_of(lambda: [fn(*a) for a in singles], repeats)
        print(f"{name:<24} {t_range * 1e3:>13.1f} ms {t_cells * 1e3:>13.1f} ms {t_cells / t_range:>7.2f}x "
              f"{t_range / rows * 1e6:>7.1f} us")
        if convert is not None:
            plain = [[a[0][0] for a in single] for single in singles]  # what Excel passes per cell
            ranged = [[[r[0]] for r in plain]] + list(plain[0][1:])  # params_b a column, the rest values
            c_range = best_of(lambda: convert(fn, *ranged), repeats)
            c_cells = best_of(lambda: [convert(fn, *a) for a in plain], repeats)
            print(f"{'  + xlwings conversion':<24} {c_range * 1e3:>13.1f} ms {c_cells * 1e3:>13.1f} ms "
                  f"{c_cells / c_range:>7.2f}x {c_range / rows * 1e6:>7.1f} us")
        eng = engines[name]
        t_engine = best_of(lambda: [eng(r[0]) for r in params_b], repeats)
        print(f"{'  engine alone':<24} {'':>16} {t_engine * 1e3:>13.1f} ms {'':>8} {t_engine / rows * 1e6:>7.1f} us")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)

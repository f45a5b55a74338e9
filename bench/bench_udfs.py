"""Benchmark: one worksheet-function call over a 10,000-row range, against its two baselines.

    python bench/bench_udfs.py [rows]

For TRAIN_DAYS (compute), MEM_STATIC_GB (memory) and OWN_COST_USD (cost), all in one process
and one run, on the Python side (arguments as xlwings hands them over with ndim=2: a cell as a
value, a column as [[x1], [x2], ...]):

* **range** - one call given the whole column (numpy installed, as in the classic add-in);
* **range, no numpy** - the same call on plain Python lists (xlwings Lite without numpy);
* **scalar calls** - 10,000 calls of one cell each (baseline 1; target: range >= 50x faster, with numpy
  and without),
  timed in chunks of 500 calls, each chunk the best of its repeats;
* **numpy floor** - the same arithmetic written by hand in numpy, from the same list of rows to
  the same list of rows, with no validation and, like the range, Python's cycle collector paused
  while the rows are built (baseline 2; target: range <= 20x slower). The arithmetic alone, on
  ready arrays, is shown beside it.

Two columns per function: 400 distinct values (scenarios repeat, as in a sweep over a few model
sizes) and 10,000 distinct values (every row validated). Results: docs/excel.md and the README.
In Excel each one-cell call also pays Excel -> VBA -> COM -> Python (classic) or JavaScript ->
Pyodide (Lite), which is not measured here: the real gap in Excel is larger.
"""

from __future__ import annotations

import gc
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "udfs")]

import xlcalc_udf_runtime as runtime  # noqa: E402
import xlcalc_udfs as udfs  # noqa: E402

SCALAR_TARGET = 50.0  # range at least this many times faster than one-cell calls
FLOOR_TARGET = 20.0  # range at most this many times slower than the numpy floor


# The same arithmetic as the registry formulas (xlcalc/formulas), written directly in numpy.
def floor_train_days(p, tokens_t, peak_tflops, n_gpus, mfu):
    return 6 * (p * 1e9) * (tokens_t * 1e12) / (peak_tflops * 1e12 * n_gpus * mfu) / 86400


def floor_mem_static_gb(p, zero_stage, dp, tp, pp, w, g, o):
    shard = tp * pp
    return (w * p / shard / (dp if zero_stage >= 3 else 1)
            + g * p / shard / (dp if zero_stage >= 2 else 1)
            + o * p / shard / (dp if zero_stage >= 1 else 1))


def floor_owned_cost_usd(days, n_gpus, capex, years, kw, pue, usd_per_kwh):
    return n_gpus * capex * days / (365 * years) + n_gpus * kw * pue * days * 24 / 1000 * 1000 * usd_per_kwh


# name, UDF, the other arguments (the column goes first / where marked), floor, where the column goes
CASES = [
    ("TRAIN_DAYS", udfs.TRAIN_DAYS, lambda c: (c, 2.0, 312.0, 1024.0, 0.4),
     lambda a: floor_train_days(a, 2.0, 312.0, 1024.0, 0.4)),
    ("MEM_STATIC_GB", udfs.MEM_STATIC_GB, lambda c: (c, 1.0, 64.0, 8.0, 2.0, 2.0, 4.0, 8.0),
     lambda a: floor_mem_static_gb(a, 1, 64.0, 8.0, 2.0, 2.0, 4.0, 8.0)),
    ("OWN_COST_USD", udfs.OWN_COST_USD, lambda c: (1024.0, 30000.0, 3.0, c, 1.0, 1.3, 0.1),
     lambda a: floor_owned_cost_usd(a, 1024.0, 30000.0, 3.0, 1.0, 1.3, 0.1)),
]


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def column(rows: int, distinct: int) -> list[list[float]]:
    return [[float(1 + i % distinct) + 0.5] for i in range(rows)]


def measure(name, fn, args, floor, col, repeats: int) -> dict[str, float]:
    call = args(col)
    out = fn(*call)
    assert len(out) == len(col) and all(isinstance(r[0], float) for r in out), name

    def by_numpy():  # with the cycle collector paused while it builds its rows, as the range does
        gc.disable()
        try:
            a = np.array(col, dtype=float).ravel()
            return floor(a).reshape(-1, 1).tolist()
        finally:
            gc.enable()

    reference = by_numpy()
    assert all(abs(x[0] - y[0]) <= 1e-12 * abs(y[0]) for x, y in zip(out, reference)), name
    k = next(i for i, a in enumerate(call) if a is col)
    singles = [tuple(row[0] if i == k else a for i, a in enumerate(call)) for row in col]
    assert [fn(*s) for s in singles[:3]] == [r[0] for r in out[:3]], name

    t_range = best_of(lambda: fn(*call), repeats)
    runtime.USE_NUMPY = False
    try:
        assert fn(*call) == out or all(abs(x[0] - y[0]) <= 1e-12 * abs(y[0]) for x, y in zip(fn(*call), out))
        t_lists = best_of(lambda: fn(*call), repeats)
    finally:
        runtime.USE_NUMPY = runtime._np is not None
    # in chunks of 500 calls, each the best of its repeats: a long run on a shared machine is
    # interrupted more often than a short one, which would flatter the range
    chunks = [singles[i:i + 500] for i in range(0, len(singles), 500)]
    t_scalar = sum(best_of(lambda c=c: [fn(*s) for s in c], SCALAR_REPEATS) for c in chunks)
    t_floor = best_of(by_numpy, repeats)
    ready = np.array(col, dtype=float).ravel()
    t_arith = best_of(lambda: floor(ready), repeats)
    return {"range": t_range, "lists": t_lists, "scalar": t_scalar, "floor": t_floor, "arith": t_arith}


SCALAR_REPEATS = 5


def main(rows: int = 10_000, repeats: int = 60) -> int:
    print(f"{date.today().isoformat()}  {platform.python_implementation()} {platform.python_version()}  "
          f"numpy {np.__version__}  {os.cpu_count()} cores  {platform.machine()}  rows={rows}  best of {repeats} "
          f"(scalar calls: best of {SCALAR_REPEATS})")
    head = (f"{'function':<15} {'distinct':>8} {'range':>9} {'no numpy':>9} {'scalar calls':>13} "
            f"{'numpy floor':>12} {'arith only':>11} {'scalar/range':>13} {'scalar/no numpy':>16} "
            f"{'range/floor':>12}")
    print(head)
    ok = True
    for distinct in (400, rows):
        for name, fn, args, floor in CASES:
            t = measure(name, fn, args, floor, column(rows, distinct), repeats)
            speedup, over_floor = t["scalar"] / t["range"], t["range"] / t["floor"]
            lists_speedup = t["scalar"] / t["lists"]
            ok &= speedup >= SCALAR_TARGET and lists_speedup >= SCALAR_TARGET and over_floor <= FLOOR_TARGET
            print(f"{name:<15} {distinct:>8,} {t['range'] * 1e3:>6.2f} ms {t['lists'] * 1e3:>6.2f} ms "
                  f"{t['scalar'] * 1e3:>10.1f} ms {t['floor'] * 1e3:>9.2f} ms {t['arith'] * 1e3:>8.3f} ms "
                  f"{speedup:>12.0f}x {lists_speedup:>15.0f}x {over_floor:>11.1f}x")
    print(f"targets: range (with and without numpy) >= {SCALAR_TARGET:.0f}x faster than scalar calls, "
          f"<= {FLOOR_TARGET:.0f}x the numpy floor: " + ("met" if ok else "NOT met"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))

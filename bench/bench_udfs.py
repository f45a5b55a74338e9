"""Benchmark: one worksheet-function call over a 10,000-row range, against its two baselines.

    python bench/bench_udfs.py [--rows 10000] [--passes 11] [--write | --check]

For TRAIN_DAYS (compute), MEM_STATIC_GB (memory) and OWN_COST_USD (cost), all in one process
and one run, on the Python side (arguments as xlwings hands them over with ndim=2: a cell as a
value, a column as [[x1], [x2], ...]):

* **range** - one call given the whole column (numpy installed, as in the classic add-in);
* **range, no numpy** - the same call on plain Python lists (xlwings Lite without numpy);
* **one-cell calls** - 10,000 calls of one cell each (baseline 1; target: range >= 50x faster, with numpy
  and without);
* **numpy floor** - the same arithmetic written by hand in numpy, from the same list of rows to
  the same list of rows, with no validation and, like the range, Python's cycle collector paused
  while the rows are built (baseline 2; target: range <= 20x slower). The arithmetic alone, on
  ready arrays, is shown beside it.

Times are CPU time of this process (time.process_time), per call, in interleaved passes (every pass times
each of the five once, the order rotating), reported as the median over the passes with min-max and the
wall-clock median beside; a ratio is the ratio of the CPU medians (min-max: the ratio within one pass). Two
columns per function: 400 distinct values (scenarios repeat, as in a sweep over a few model sizes) and 10,000
distinct values (every row validated). ``--write`` puts the figures, dated and with the machine's load, into
docs/excel.md and the README; ``--check`` runs again and fails unless those blocks have this script's format
and the fresh run's target statements (bench/benchdoc.py). In Excel each one-cell call also pays Excel -> VBA
-> COM -> Python (classic) or JavaScript -> Pyodide (Lite), which is not measured here: the real gap in Excel is
larger.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "udfs"), str(ROOT / "bench")]

import benchdoc

import xlcalc_udf_runtime as runtime
import xlcalc_udfs as udfs

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


def column(rows: int, distinct: int) -> list[list[float]]:
    return [[float(1 + i % distinct) + 0.5] for i in range(rows)]


def measure(name, fn, args, floor, col, passes: int) -> dict[str, benchdoc.Timing]:
    call = args(col)
    out = fn(*call)
    assert len(out) == len(col) and all(isinstance(r[0], float) for r in out), name

    def by_numpy():  # with the cycle collector paused while it builds its rows, as the range does
        gc.disable()
        try:
            return floor(np.array(col, dtype=float).ravel()).reshape(-1, 1).tolist()
        finally:
            gc.enable()

    def without_numpy():
        runtime.USE_NUMPY = False
        try:
            return fn(*call)
        finally:
            runtime.USE_NUMPY = runtime.HAVE_NUMPY

    assert all(abs(x[0] - y[0]) <= 1e-12 * abs(y[0]) for x, y in zip(out, by_numpy())), name
    k = next(i for i, a in enumerate(call) if a is col)
    singles = [tuple(row[0] if i == k else a for i, a in enumerate(call)) for row in col]
    assert [fn(*s) for s in singles] == [r[0] for r in without_numpy()], name  # Lite's path: the same floats
    ready = np.array(col, dtype=float).ravel()
    return benchdoc.interleaved({
        "range": (lambda: fn(*call), 5),
        "lists": (without_numpy, 5),
        "scalar": (lambda: [fn(*s) for s in singles], 1),
        "floor": (by_numpy, 5),
        "arith": (lambda: floor(ready), 200),
    }, passes)


def run(rows: int, passes: int) -> tuple[list[tuple[str, int, dict[str, benchdoc.Timing]]], str, str]:
    load_before = benchdoc.load()
    results = [(name, distinct, measure(name, fn, args, floor, column(rows, distinct), passes))
               for distinct in (400, rows) for name, fn, args, floor in CASES]
    return results, load_before, benchdoc.load()


def render(results, rows: int, passes: int, load_before: str, load_after: str) -> tuple[str, str, bool]:
    """(the block of docs/excel.md, the README's, all targets met)."""
    speedups = [benchdoc.ratio(t["scalar"], t["range"]) for _, _, t in results]
    lists_speedups = [benchdoc.ratio(t["scalar"], t["lists"]) for _, _, t in results]
    over_floor = [benchdoc.ratio(t["range"], t["floor"]) for _, _, t in results]
    lo_l, hi_l = min(r[0] for r in lists_speedups), max(r[0] for r in lists_speedups)
    lo_r, hi_r = min(r[0] for r in speedups), max(r[0] for r in speedups)
    lo_f, hi_f = min(r[0] for r in over_floor), max(r[0] for r in over_floor)
    ok_range, ok_lists, ok_floor = lo_r >= SCALAR_TARGET, lo_l >= SCALAR_TARGET, hi_f <= FLOOR_TARGET
    lines = [
        f"Written by `python bench/bench_udfs.py --write` on {benchdoc.today()}: {benchdoc.machine()}, numpy "
        f"{np.__version__}, {rows:,} rows, {passes} interleaved passes; load average (1 / 5 / 15 min) "
        f"{load_before} at the start, {load_after} at the end. Times: CPU time per call, median over the passes "
        f"(min-max), and the wall-clock median; ratios: of the CPU medians (min-max: within one pass).",
        "",
        "| function | distinct values | range | no numpy | 10,000 one-cell calls | numpy floor | arith only "
        "| one-cell / range | one-cell / no numpy | range / floor |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, distinct, t), sp, lsp, fl in zip(results, speedups, lists_speedups, over_floor):
        lines.append(
            f"| {name} | {distinct:,} | {t['range'].ms()} | {t['lists'].ms()} | {t['scalar'].ms(0)} "
            f"| {t['floor'].ms()} | {t['arith'].ms(3)} | {sp[0]:.0f}x ({sp[1]:.0f}-{sp[2]:.0f}) "
            f"| {lsp[0]:.0f}x ({lsp[1]:.0f}-{lsp[2]:.0f}) | {fl[0]:.1f}x ({fl[1]:.1f}-{fl[2]:.1f}) |")
    lines += [
        "",
        f"- without numpy (xlwings Lite's path), at least {SCALAR_TARGET:.0f}x faster than one-cell calls: "
        f"{benchdoc.verdict(ok_lists)} ({lo_l:.0f}-{hi_l:.0f}x)",
        f"- with numpy, at least {SCALAR_TARGET:.0f}x faster than one-cell calls: {benchdoc.verdict(ok_range)} "
        f"({lo_r:.0f}-{hi_r:.0f}x)",
        f"- at most {FLOOR_TARGET:.0f}x the time of the numpy floor: {benchdoc.verdict(ok_floor)} "
        f"({lo_f:.1f}-{hi_f:.1f}x)",
    ]
    readme = (
        f"- `bench/bench_udfs.py` ({benchdoc.today()}, load average {load_before.split(' / ')[0]}): one "
        f"worksheet-function call over a {rows:,}-row range, in CPU medians of {passes} interleaved passes, is "
        f"{lo_l:.0f}-{hi_l:.0f}x faster than {rows:,} one-cell calls without numpy (xlwings Lite's path; target "
        f">= {SCALAR_TARGET:.0f}x: {benchdoc.verdict(ok_lists)}) and {lo_r:.0f}-{hi_r:.0f}x with numpy (target "
        f"{benchdoc.verdict(ok_range)}), and {lo_f:.1f}-{hi_f:.1f}x the time of the same arithmetic in plain "
        f"numpy (target <= {FLOOR_TARGET:.0f}x: {benchdoc.verdict(ok_floor)}), for TRAIN_DAYS, MEM_STATIC_GB "
        f"and OWN_COST_USD. Figures and method: [docs/excel.md](docs/excel.md#speed-one-call-over-a-range-vs-"
        f"one-call-per-cell).")
    return "\n".join(lines), readme, ok_range and ok_lists and ok_floor


def main() -> int:
    args = benchdoc.arguments(__doc__.splitlines()[0],
                              [("--rows", dict(type=int, default=10_000, help="rows of the range"))])
    results, before, after = run(args.rows, args.passes)
    doc, readme, ok = render(results, args.rows, args.passes, before, after)
    return benchdoc.report("bench_udfs.py", {"docs/excel.md": doc, "README.md": readme}, ok, args)


if __name__ == "__main__":
    sys.exit(main())

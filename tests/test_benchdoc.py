"""The benchmark figures quoted in the docs are blocks the benchmarks write (bench/benchdoc.py): each block has
the shape of what its script renders now (numbers aside), so a hand edit or a stale format shows up without
running the benchmark (``--check`` runs it and also compares the target statements)."""

import sys

import pytest

from conftest import ROOT

sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "udfs"), str(ROOT)]
benchdoc = pytest.importorskip("benchdoc")


def _timing(ms: float) -> "benchdoc.Timing":
    return benchdoc.Timing(cpu=[ms / 1e3] * 3, wall=[ms / 1e3] * 3)


def _blocks(script: str) -> dict[str, str]:
    out = {}
    for rel in ("README.md", "docs/excel.md" if script == "bench_udfs.py" else "docs/planner.md"):
        parts = benchdoc._parts((ROOT / rel).read_text(encoding="utf-8"), script)
        assert parts is not None, f"{rel} lacks the markers of {script}"
        out[rel] = parts[1]
    return out


def test_shape_blanks_numbers_and_keeps_the_statements():
    assert benchdoc.shape("2026-11-27: 4.12 ms (3.1-5.0), 10,000 rows: met") == "#-#-#: # ms (#-#), # rows: met"
    assert benchdoc.shape("88x: met") != benchdoc.shape("88x: NOT met")


def test_the_udf_benchmark_blocks_have_the_current_format():
    pytest.importorskip("numpy")
    pytest.importorskip("xlwings")
    import bench_udfs

    t = {"range": _timing(2), "lists": _timing(4), "scalar": _timing(400), "floor": _timing(1.5),
         "arith": _timing(0.02)}
    results = [(name, d, t) for d in (400, 10_000) for name, *_ in bench_udfs.CASES]
    doc, readme, ok = bench_udfs.render(results, 10_000, 11, "1.0 / 1.0 / 1.0", "1.0 / 1.0 / 1.0")
    assert ok
    blocks = _blocks("bench_udfs.py")
    assert benchdoc.shape(blocks["docs/excel.md"]) == benchdoc.shape(doc)
    assert benchdoc.shape(blocks["README.md"]) == benchdoc.shape(readme)


def test_the_planner_benchmark_blocks_have_the_current_format():
    import bench_planner

    one = {"xlcalc": _timing(0.1), "llm-analysis": _timing(0.2)}
    r = {"evaluated": 100, "best": "TP=8, PP=2", "mfu": 0.4}
    searches = {name: (_timing(40), _timing(30), r, r) for name in bench_planner.SEARCHES}
    doc, readme, ok = bench_planner.render(one, searches, 11, "1.0 / 1.0 / 1.0", "1.0 / 1.0 / 1.0")
    assert ok
    blocks = _blocks("bench_planner.py")
    # the best plans' labels are text the search writes: compare the lines around them
    strip = [line for line in benchdoc.shape(blocks["docs/planner.md"]).splitlines() if "best" not in line]
    assert strip == [line for line in benchdoc.shape(doc).splitlines() if "best" not in line]
    assert benchdoc.shape(blocks["README.md"]) == benchdoc.shape(readme)

"""docs/workbook.md's benchmark figures are written by the current bench/bench_workbook.py (its --write).

The full check (``python bench/bench_workbook.py --check``) also measures afresh and compares the targets met;
this test only reads: the block is there, stamped by this version of the script, and README's row is the one
the script writes from the same run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench_workbook", ROOT / "bench" / "bench_workbook.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_workbook"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_block_is_written_by_this_script():
    bench = _bench()
    parts = bench.split_doc((ROOT / "docs" / "workbook.md").read_text(encoding="utf-8"))
    assert parts is not None, "run python bench/bench_workbook.py --write"
    block = parts[1]
    stamp = json.loads(block.rsplit("<!-- ", 1)[1].split(" -->", 1)[0])
    assert stamp["script"] == bench.script_version(), "run python bench/bench_workbook.py --write"
    assert f"{stamp['formula_cells']:,} formula cells, {stamp['kib']} KiB" in block
    for key, ok in stamp["verdicts"].items():
        assert ("met" if ok else "**not met**") in block, key
    rows = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").split("\n")
            if line.startswith(bench.README_ROW)]
    assert len(rows) == 1
    assert ("target ≤ 1 s met" if stamp["verdicts"]["build"] else "target ≤ 1 s not met") in rows[0]

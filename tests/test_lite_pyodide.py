"""xlwings Lite in a real Pyodide (WebAssembly CPython under node), following the README's Lite
section word for word: main.py is written by the command it gives (a build product, not committed:
built for the session by tests/conftest.py's lite_main with that command's own functions), the
requirements.txt it names is installed (from the Pyodide wheels on PyPI, cached offline by test.sh),
that main.py is loaded with xlwings' decorators stubbed (xlwings Lite brings its own xlwings), and the
cell it gives is computed. Then one function of each family - memory, cost, planner - and a range,
each equal to the same call in this CPython.

test.sh prepares .cache/pyodide (npm package pyodide, pinned, and the wheels). Without node or
that cache the test skips with the reason on a laptop, never when CI=true.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import re
import shutil
import sys
from pathlib import Path

import pytest

from procs import run_bounded
from requires import require

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
make_udfs = importlib.import_module("make_udfs")
CACHE = ROOT / ".cache" / "pyodide"
PYODIDE = CACHE / "node_modules" / "pyodide"
WHEELS = CACHE / "wheels"
README = ROOT / "README.md"

RUNNER = r"""
import { loadPyodide } from "%(mjs)s";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const [indexURL, wheels, mainPy, probe] = process.argv.slice(2);
const py = await loadPyodide({ indexURL });
// requirements.txt: the Pyodide wheels pip resolved for it (what micropip installs in xlwings Lite)
for (const w of readdirSync(wheels).filter((f) => f.endsWith(".whl")).sort()) {
  await py.loadPackage(join(wheels, w), { messageCallback: () => {} });
}
py.FS.mkdirTree("/home/pyodide/lite");
py.FS.writeFile("/home/pyodide/lite/main.py", readFileSync(mainPy));
console.log(await py.runPythonAsync(readFileSync(probe, "utf8")));
"""

PROBE = r'''
import json, math, sys, types

# xlwings Lite provides `xlwings`; here its decorators are stubs that record what they register
registered = {}
xlwings = types.ModuleType("xlwings")
def func(*args, **kwargs):
    def deco(f):
        registered[f.__name__] = {"category": kwargs.get("category"), "doc": f.__doc__}
        return f
    return deco
def arg(name, **kwargs):
    return lambda f: f
def ret(*args, **kwargs):
    return lambda f: f
xlwings.func, xlwings.arg, xlwings.ret = func, arg, ret
sys.modules["xlwings"] = xlwings
sys.path.insert(0, "/home/pyodide/lite")

import main

def call(name, args):
    try:
        return {"value": getattr(main, name)(*args)}
    except ValueError as exc:
        return {"error": str(exc)}

calls = json.loads(CALLS)
first = call(*calls[0])
# xlwings Lite runs main.py again after every edit: the second run must work as the first
import importlib
importlib.reload(main)
out = {
    "rerun": call(*calls[0]) == first,
    "python": sys.version.split()[0],
    "platform": sys.platform,
    "numpy": "numpy" in sys.modules,
    "registered": registered,
    "udf_names": list(main.UDF_NAMES),
    "results": [call(name, args) for name, args in calls],
}
json.dumps(out)
'''


def _readme_lite_section() -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(r"^### xlwings Lite.*?(?=^##)", text, re.M | re.S)
    assert m, "README.md has no '### xlwings Lite' section"
    return m.group(0)


def _readme_lite_steps() -> tuple[Path, Path, str, tuple, float]:
    """The README's Lite section: which files go into which tab, and the cell to type."""
    section = _readme_lite_section()
    req = re.search(r"\*\*requirements\.txt\*\* tab[^`]*`([^`]+)`", section)
    main = re.search(r"\*\*main\.py\*\* tab[^`]*`([^`]+)`", section)
    cell = re.search(r"`=(\w+)\(([^`]*)\)` into a cell: `([-\d.]+)`", section)
    assert req and main and cell, "the Lite section must name both files and the cell to type"
    args = ast.literal_eval("(" + cell.group(2) + ",)")
    return ROOT / req.group(1), ROOT / main.group(1), cell.group(1), args, float(cell.group(3))


def _requirements(path: Path) -> list[str]:
    lines = [line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [re.split(r"[<>=!~ ;\[]", line, maxsplit=1)[0].lower() for line in lines if line]


def test_the_readme_steps_start_with_the_command_that_writes_main_py():
    """main.py is not committed: the Lite steps first run the one command that writes it, and the file they
    paste is the one that command writes (the file lite_main builds with the command's own functions)."""
    section = _readme_lite_section()
    steps = re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", section, re.M | re.S)
    assert [int(n) for n, _ in steps] == list(range(1, len(steps) + 1)) and len(steps) >= 5, steps
    first = steps[0][1]
    assert re.search(r"`([^`]+)`", first).group(1) == make_udfs.COMMAND, first
    assert "`" + make_udfs.LITE.relative_to(ROOT).as_posix() + "`" in first
    _, main_path, *_ = _readme_lite_steps()
    assert main_path == make_udfs.LITE
    assert "**main.py** tab" not in first and any("**main.py** tab" in body for _, body in steps[1:])


@pytest.fixture(scope="module")
def lite(tmp_path_factory, request):
    req_path, main_path, cell_fn, cell_args, cell_value = _readme_lite_steps()
    assert main_path == make_udfs.LITE  # the file the README pastes is the one lite_main built
    node = shutil.which("node")
    require(node is not None, "node is not installed")
    require((PYODIDE / "pyodide.mjs").exists(), f"npm package pyodide is not in {CACHE.relative_to(ROOT)}")
    wheels = sorted(p.name for p in WHEELS.glob("*.whl")) if WHEELS.exists() else []
    # every requirement but xlwings (Lite's own) is installed from a cached wheel
    for name in _requirements(req_path):
        if name == "xlwings":
            continue
        require(any(w.lower().replace("_", "-").startswith(name + "-") for w in wheels),
                f"no Pyodide wheel for {name!r} in {WHEELS.relative_to(ROOT)}")
    calls = [
        (cell_fn, list(cell_args)),                                   # the README's cell
        ("MEM_STATIC_GB", [70, 0, 1, 8, 1, 2, 4, 8]),                 # memory
        ("CLOUD_COST_USD", [2.788e6, 2]),                             # cost
        ("PLAN", ["llama2-70b", "H100", 1024, 4096, 4194304, 2, 50]),  # planner
        ("TRAIN_DAYS", [[[7.0], [70.0], [405.0]], 2, 312, 1024, [[0.4], [0.4], [1.5]]]),  # a range
        ("GPU_SPEC", ["H100", "bf16_tflops"]),
        ("TRAIN_DAYS", [70, 2, 312, 1024, 1.5]),                      # an error
        ("LAYOUT_MFU", ["llama3.1-8b", "H100", 8, 8192, 1048576, 1, 1, 3]),  # one chosen layout
        ("LAYOUT_STEP_S", ["llama3.1-8b", "H100", 8, 8192, 1048576, 1, 1, 0]),  # a layout that does not fit
    ]
    lite_main = request.getfixturevalue("lite_main")  # built once the test can run
    tmp = tmp_path_factory.mktemp("lite")
    runner = tmp / "run.mjs"
    runner.write_text(RUNNER % {"mjs": (PYODIDE / "pyodide.mjs").as_posix()}, encoding="utf-8")
    probe = tmp / "probe.py"
    probe.write_text(PROBE.replace("CALLS", repr(json.dumps(calls))), encoding="utf-8")
    result = run_bounded([node, str(runner), str(PYODIDE) + "/", str(WHEELS), str(lite_main), str(probe)],
                         cpu_s=900)
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    return {"out": out, "calls": calls, "cell": (cell_fn, cell_args, cell_value), "main": lite_main}


def _cpython(name, args):
    sys.path[:0] = [str(ROOT / "udfs")]
    pytest.importorskip("xlwings")
    udfs = importlib.import_module("xlcalc_udfs")
    try:
        return {"value": getattr(udfs, name)(*args)}
    except ValueError as exc:
        return {"error": str(exc)}


def _close(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            return math.isclose(a, b, rel_tol=1e-12)
    return a == b


def test_it_is_a_real_pyodide_without_numpy(lite):
    out = lite["out"]
    assert out["rerun"] is True  # main.py run a second time (as after an edit) still works
    assert out["platform"] == "emscripten"
    assert out["python"].startswith("3.")
    assert out["numpy"] is False  # ranges ran on plain Python lists


def test_the_readme_cell_gives_its_number(lite):
    fn, args, value = lite["cell"]
    assert (fn, args, value) == ("TRAIN_DAYS", (70, 2, 312, 1024, 0.4), 76.08)  # seed 002 §7.3
    got = lite["out"]["results"][0]["value"]
    assert round(got, 2) == value
    assert got == pytest.approx(6 * 70e9 * 2e12 / (312e12 * 1024 * 0.4) / 86400, rel=1e-12)


def test_memory_cost_and_planner_families(lite):
    mem, cost, plan = (r["value"] for r in lite["out"]["results"][1:4])
    assert mem == pytest.approx(14 * 70 / 8)  # seed 002 §7.3: 122.5 GB per GPU
    assert cost == pytest.approx(5.576e6)  # DeepSeek-V3 report: 2.788M H800-hours x $2
    assert isinstance(plan, list) and len(plan) >= 2 and all(len(r) == len(plan[0]) for r in plan)
    assert all(isinstance(h, str) for h in plan[0])  # a header row, then plans


def test_every_call_equals_the_same_call_in_cpython(lite):
    for (name, args), got in zip(lite["calls"], lite["out"]["results"]):
        expected = _cpython(name, args)
        assert _close(got, expected), (name, got, expected)


def test_range_and_error_cells(lite):
    days, spec, err = (r for r in lite["out"]["results"][4:7])
    assert round(days["value"][1][0], 2) == 76.08
    assert days["value"][2][0].startswith("#VALUE! row 3, column 1: mfu = 1.5 is not allowed")
    assert spec["value"] == pytest.approx(989.4)  # NVIDIA H100 SXM datasheet, dense BF16
    assert err["error"].startswith("mfu = 1.5 is not allowed: mfu must be a number > 0 and <= 1")


def test_every_worksheet_function_registers_with_its_help(lite):
    out = lite["out"]
    assert set(out["registered"]) == set(out["udf_names"])
    assert all(r["category"] in ("xlcalc", "xlcalc building blocks") and r["doc"] for r in out["registered"].values())
    # the same categories as the classic add-in: the questions users ask and the table functions in the main one
    import xlcalc

    questions = {f.udf_name for f in xlcalc.all_formulas() if f.question}
    main = {n for n, r in out["registered"].items() if r["category"] == "xlcalc"}
    assert questions < main and "MEM_STATIC_GB" not in main and "PLAN" in main
    sys.path[:0] = [str(ROOT / "udfs")]
    pytest.importorskip("xlwings")
    assert set(out["udf_names"]) == set(importlib.import_module("xlcalc_udfs").UDF_NAMES)

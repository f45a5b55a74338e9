#!/usr/bin/env python3
"""Benchmark: CPU time of building the planning workbook and of its recalculation in LibreOffice.

    python bench/bench_workbook.py [--repeat 5] [--sheets]   # measure and print
    python bench/bench_workbook.py --write [--sheets]        # measure and rewrite the figures in the docs
    python bench/bench_workbook.py --check                   # exit 1 if the docs' figures are not this script's

CPU time, not wall time, so that a machine shared with other jobs reads about the same: the build is
``time.process_time`` of ``xlcalc.workbook.build`` in a fresh Python process (its first build: the formulas'
templates are made there; imports not counted), and of the builds after it in the same process. LibreOffice is
the CPU time of the ``soffice`` processes (``resource.getrusage(RUSAGE_CHILDREN)`` before and after each run),
converting an empty workbook (start-up and save alone), the planner (open, recalculate every formula, save) and
an empty workbook with the planner's sheets (what the sheet count alone costs), alternating so that a change in
the machine's load falls on all alike. Each figure is given as
min / median / max of its passes. ``--sheets`` also converts the planner with one sheet's formulas replaced by
their values, for each sheet that has formulas: what that saves is what the sheet's formulas cost LibreOffice.

``--write`` rewrites the block between the bench markers in docs/workbook.md (date, load average, the figures
and whether each target is met) and the benchmark's row in README.md. ``--check`` (CI) fails when the block is
missing, was written by another version of this script, states other workbook sizes than a fresh build has,
or states a target met (or missed) that a fresh measurement misses (or meets); the timings themselves vary
from run to run and are not compared.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openpyxl  # noqa: E402

from xlcalc import presets  # noqa: E402
from xlcalc.atomic import write_text  # noqa: E402
from xlcalc.expr.nodes import Expr  # noqa: E402
from xlcalc.workbook import build, layout  # noqa: E402
from xlcalc.workbook.libreoffice import recalculate, soffice  # noqa: E402
from xlcalc.workbook.writer import save_package, to_workbook  # noqa: E402

PRESET = "seed002-70b-a800"
BUILD_TARGET_S = 1.0   # CPU seconds of a build
LO_TARGET_X = 1.5      # LibreOffice's recalculation of the planner / an empty workbook (CPU)
DOC = ROOT / "docs" / "workbook.md"
README = ROOT / "README.md"
BEGIN = "<!-- bench_workbook.py: begin (python bench/bench_workbook.py --write rewrites this block) -->"
END = "<!-- bench_workbook.py: end -->"
README_ROW = "| `bench/bench_workbook.py` |"

# one fresh interpreter: import, then time the first build and the builds after it
CHILD = """
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from xlcalc import presets
from xlcalc.workbook import build
sc = [presets.load(sys.argv[2])]
out = []
with tempfile.TemporaryDirectory() as tmp:
    for i in range(int(sys.argv[3])):
        t = time.process_time()
        build(Path(tmp) / f"p{i}.xlsx", sc)
        out.append(time.process_time() - t)
print(json.dumps(out))
"""


def script_version() -> str:
    """The first 12 hex digits of this file's SHA-256: the doc block names the script that wrote it."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def spread(values: Sequence[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def child_cpu(fn: Callable[[], Any]) -> float:
    """CPU seconds (user + system) of the child processes ``fn`` runs and waits for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure_build(repeat: int) -> dict[str, Any]:
    first, again = [], []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), PRESET, "3"], capture_output=True, text=True,
                              check=True)
        times = json.loads(proc.stdout)
        first.append(times[0])
        again.extend(times[1:])
    return {"first": spread(first), "again": spread(again), "passes": repeat}


def frozen_variant(path: Path, freeze: Sequence[str]) -> Path:
    """The planner with the formulas of the sheets ``freeze`` replaced by their values."""
    lay = layout([presets.load(PRESET)])
    values = lay.book.cached_values()
    for sheet in freeze:
        for at, c in lay.book.sheets[sheet].items():
            if isinstance(c.value, Expr):
                c.value = values[(sheet, at)]
    with path.open("wb") as out:
        save_package(to_workbook(lay.book), {k: v for k, v in values.items() if k[0] not in freeze}, out)
    return path


# Parts of the built package a variant leaves out (``--sheets``): what each costs LibreOffice is the planner's least
# CPU time less the variant's. (part, where: "workbook" or "sheets", the regular expression of what is removed)
FEATURES = {
    "print titles (the heading row repeated on each printed page)":
        ("workbook", r'<definedName name="_xlnm\.Print_Titles"[^>]*>[^<]*</definedName>'),
    "charts": ("sheets", r"<drawing [^>]*/>"),
    "data validations": ("sheets", r"<dataValidations.*?</dataValidations>"),
    "conditional formats": ("sheets", r"<conditionalFormatting.*?</conditionalFormatting>"),
}


def feature_variant(src: Path, path: Path, feature: str) -> Path:
    """A copy of the built package ``src`` without ``feature`` (a measurement aid, not a workbook to use)."""
    import re
    import zipfile

    where, pattern = FEATURES[feature]
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if (where == "workbook" and info.filename == "xl/workbook.xml"
                    or where == "sheets" and info.filename.startswith("xl/worksheets/sheet")):
                data = re.sub(pattern, "", data.decode("utf-8"), flags=re.S).encode("utf-8")
            zout.writestr(info, data)
    return path


def formula_text(path: Path) -> dict[str, int]:
    """Characters of formula text per sheet of the built file (what LibreOffice parses on load and writes back)."""
    wb = openpyxl.load_workbook(path)
    return {ws.title: sum(len(c.value) for row in ws.iter_rows() for c in row if c.data_type == "f")
            for ws in wb.worksheets}


def measure_libreoffice(tmp: Path, planner: Path, repeat: int, sheets: bool) -> dict[str, Any]:
    src = tmp / "src"
    src.mkdir()
    files = {"empty": src / "empty.xlsx", "planner": src / "planner.xlsx", "sheets": src / "sheets.xlsx"}
    openpyxl.Workbook().save(files["empty"])
    files["planner"].write_bytes(planner.read_bytes())
    book = layout([presets.load(PRESET)]).book
    bare = openpyxl.Workbook()  # the planner's sheets, empty: what the sheet count alone costs
    bare.active.title = next(iter(book.sheets))
    for t in list(book.sheets)[1:]:
        bare.create_sheet(t)
    bare.save(files["sheets"])
    counts = {t: sum(1 for s, _, _ in book.formula_cells() if s == t) for t in book.sheets}
    # a sheet without formulas has nothing to replace: its variant would be the planner again (noise alone)
    titles = [t for t in book.sheets if counts[t]] if sheets else []
    if sheets:
        files["all sheets"] = frozen_variant(src / "frozen-all.xlsx", titles)
        for t in titles:
            files[t] = frozen_variant(src / f"frozen-{t}.xlsx", [t])
        for k, feature in enumerate(FEATURES):
            files[feature] = feature_variant(files["planner"], src / f"without-{k}.xlsx", feature)
    cpu: dict[str, list[float]] = {k: [] for k in files}
    for i in range(repeat):  # interleaved: empty, planner, (each variant), empty, planner, ...
        for key, path in files.items():
            outdir = tmp / f"out-{i}-{key}"
            cpu[key].append(child_cpu(lambda p=path, o=outdir: recalculate([p], o)))
    out: dict[str, Any] = {"empty": spread(cpu["empty"]), "planner": spread(cpu["planner"]), "passes": repeat,
                           "ratio": spread([p / e for p, e in zip(cpu["planner"], cpu["empty"])]),
                           "sheet_count": len(book.sheets),
                           "sheets_ratio": spread([s / e for s, e in zip(cpu["sheets"], cpu["empty"])])}
    if sheets:
        # minima: the pass least slowed by other jobs (a median moves with the load between the conversions)
        out["sheets"] = {t: min(cpu["planner"]) - min(cpu[t]) for t in ["all sheets", *titles]}
        out["formula_cells"] = {"all sheets": sum(counts.values()), **{t: counts[t] for t in titles}}
        text = formula_text(planner)
        out["formula_kib"] = {"all sheets": round(sum(text.values()) / 1024),
                              **{t: round(text.get(t, 0) / 1024) for t in titles}}
        out["no_formulas"] = [t for t in book.sheets if not counts[t]]
        out["frozen_ratio"] = min(cpu["all sheets"]) / min(cpu["empty"])
        out["features"] = {f: min(cpu["planner"]) - min(cpu[f]) for f in FEATURES}
    return out


def versions() -> dict[str, str]:
    lo = "not installed"
    if soffice():
        proc = subprocess.run([soffice(), "--version"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HOME": tempfile.gettempdir()})
        lo = " ".join(proc.stdout.split()[1:2]) or "unknown"
    return {"python": platform.python_version(), "openpyxl": openpyxl.__version__, "libreoffice_version": lo}


def measure(repeat: int, sheets: bool) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    res: dict[str, Any] = {"date": datetime.date.today().isoformat(), "cores": os.cpu_count(), **versions()}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        lay = build(tmp / "planner.xlsx", [presets.load(PRESET)])
        res["formula_cells"] = sum(1 for _ in lay.book.formula_cells())
        res["kib"] = round((tmp / "planner.xlsx").stat().st_size / 1024)
        res["build"] = measure_build(repeat)
        if soffice() is not None:
            res["libreoffice"] = measure_libreoffice(tmp, tmp / "planner.xlsx", max(2, repeat), sheets)
    res["load"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    res["verdicts"] = verdicts(res)
    return res


def verdicts(res: dict[str, Any]) -> dict[str, bool]:
    out = {"build": res["build"]["first"]["median"] <= BUILD_TARGET_S}
    if "libreoffice" in res:
        out["libreoffice"] = res["libreoffice"]["ratio"]["median"] <= LO_TARGET_X
    return out


def _s(d: dict[str, float], unit: str = " s") -> str:
    return f"{d['min']:.2f} / {d['median']:.2f} / {d['max']:.2f}{unit}"


def met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def render_block(res: dict[str, Any]) -> str:
    b, v = res["build"], res["verdicts"]
    lines = [
        f"Measured {res['date']} by `python bench/bench_workbook.py --write"
        f"{' --sheets' if 'sheets' in res.get('libreoffice', {}) else ''}` on a machine with {res['cores']} cores, "
        f"load average {res['load'][0]} before and {res['load'][1]} after (the machine was shared with other jobs "
        f"when the load is above the cores); Python {res['python']}, openpyxl {res['openpyxl']}, LibreOffice "
        f"{res['libreoffice_version']}; "
        f"seed 002's preset: {res['formula_cells']:,} formula cells, {res['kib']} KiB. CPU seconds, min / median / "
        "max of the passes.",
        "",
        "| step | CPU time | target |",
        "|---|---|---|",
        f"| build in a fresh process (layout, formula text, engine values, openpyxl write, cached values; "
        f"{b['passes']} processes) | {_s(b['first'])} | ≤ {BUILD_TARGET_S:g} s: {met(v['build'])} |",
        f"| each further build in the same process | {_s(b['again'])} | |",
    ]
    lo = res.get("libreoffice")
    if isinstance(lo, dict):
        lines += [
            f"| LibreOffice: convert an empty workbook (start-up and save; {lo['passes']} passes) | "
            f"{_s(lo['empty'])} | |",
            f"| LibreOffice: open the planner, recalculate everything, save | {_s(lo['planner'])} | |",
            f"| the same / the empty workbook, pass by pass | {_s(lo['ratio'], ' x')} | ≤ {LO_TARGET_X:g} x: "
            f"{met(v['libreoffice'])} |",
            f"| an empty workbook with the planner's {lo['sheet_count']} sheets (no cells) / the empty workbook | "
            f"{_s(lo['sheets_ratio'], ' x')} | |",
            "",
            f"LibreOffice spends CPU time on every sheet, empty or not: the planner's {lo['sheet_count']} sheets alone "
            f"cost {lo['sheets_ratio']['median']:.2f} x an empty workbook (median), so the ≤ {LO_TARGET_X:g} x target "
            f"leaves {max(LO_TARGET_X - lo['sheets_ratio']['median'], 0):.2f} x for all of the planner's cells, "
            "formulas, styles, validations, conditional formats and charts.",
        ]
        if "sheets" in lo:
            noise = lo["planner"]["max"] - lo["planner"]["min"]
            lines += ["", "What each sheet's formulas cost LibreOffice: the planner's least CPU time less that of the "
                      "planner with the sheet's formulas replaced by their values (differences of the minima of "
                      f"{lo['passes']} passes; the planner's own passes spread over {noise:.2f} s, so a smaller "
                      "difference, or one of a sheet with few formulas, may be noise):", "",
                      "| formulas replaced by values | formula cells | formula text | CPU saved |", "|---|---|---|---|"]
            lines += [f"| {t} | {lo['formula_cells'][t]:,} | {lo['formula_kib'][t]:,} KiB | {s:.2f} s |"
                      for t, s in sorted(lo["sheets"].items(), key=lambda kv: -kv[1])]
            lines += ["", f"The sheets without formulas ({', '.join(lo['no_formulas'])}) have none to replace and are "
                      "not converted again: what they cost is in the empty sheets' and the file's figures."]
            lines += ["", f"With every formula replaced by its value the planner still costs {lo['frozen_ratio']:.2f} x "
                      "an empty workbook (minima; its cells, styles, validations, charts and sheets)"
                      + (f": the ≤ {LO_TARGET_X:g} x target cannot be met by the formulas alone."
                         if lo["frozen_ratio"] > LO_TARGET_X else ".")]
            lines += ["", "What parts of the file cost LibreOffice: the planner's least CPU time less that of a copy "
                      "of the built file without the part (a measurement aid; the same noise as above):", "",
                      "| left out of the copy | CPU saved |", "|---|---|"]
            lines += [f"| {f} | {s:.2f} s |" for f, s in sorted(lo["features"].items(), key=lambda kv: -kv[1])]
    else:
        lines += ["", "LibreOffice was not installed: its recalculation was not measured."]
    stamp = {"script": script_version(), "formula_cells": res["formula_cells"], "kib": res["kib"],
             "verdicts": res["verdicts"]}
    lines += ["", f"<!-- {json.dumps(stamp, sort_keys=True)} -->"]
    return "\n".join(lines)


def readme_row(res: dict[str, Any]) -> str:
    b, v = res["build"], res["verdicts"]
    text = (f"build of the planning workbook {b['first']['median']:.2f} s CPU (median; target ≤ {BUILD_TARGET_S:g} s "
            f"{'met' if v['build'] else 'not met'})")
    lo = res.get("libreoffice")
    if isinstance(lo, dict):
        text += (f"; LibreOffice open + recalculate + save {lo['ratio']['median']:.2f}× an empty workbook "
                 f"(CPU, median; target ≤ {LO_TARGET_X:g}× {'met' if v['libreoffice'] else 'not met'}); "
                 f"{res['date']}, load {res['load'][0]} on {res['cores']} cores")
    return f"{README_ROW} {text} | [docs/workbook.md](docs/workbook.md) |"


def split_doc(text: str) -> tuple[str, str, str] | None:
    if BEGIN not in text or END not in text:
        return None
    head, rest = text.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    return head, block, tail


def write(res: dict[str, Any]) -> None:
    parts = split_doc(DOC.read_text(encoding="utf-8"))
    if parts is None:
        raise SystemExit(f"docs/workbook.md lacks the markers {BEGIN!r} ... {END!r}")
    head, _, tail = parts
    write_text(DOC, head + BEGIN + "\n\n" + render_block(res) + "\n\n" + END + tail)
    lines = README.read_text(encoding="utf-8").split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith(README_ROW)]
    if len(rows) != 1:
        raise SystemExit(f"README.md must hold one row starting {README_ROW!r}")
    lines[rows[0]] = readme_row(res)
    write_text(README, "\n".join(lines))
    print("wrote docs/workbook.md and README.md")


def check(repeat: int) -> int:
    """0 when the docs' block is this script's and a fresh measurement agrees with what it states."""
    parts = split_doc(DOC.read_text(encoding="utf-8"))
    if parts is None:
        print("docs/workbook.md has no benchmark block: run python bench/bench_workbook.py --write", file=sys.stderr)
        return 1
    block = parts[1]
    try:
        stamp = json.loads(block.rsplit("<!-- ", 1)[1].split(" -->", 1)[0])
    except (IndexError, ValueError):
        print("docs/workbook.md: the benchmark block has no stamp: run --write", file=sys.stderr)
        return 1
    problems = []
    if stamp.get("script") != script_version():
        problems.append(f"written by another version of the script ({stamp.get('script')}, this one is "
                        f"{script_version()})")
    readme = [line for line in README.read_text(encoding="utf-8").split("\n") if line.startswith(README_ROW)]
    if len(readme) != 1 or f"{stamp.get('formula_cells', 0):,}" not in block:
        problems.append("README.md's benchmark row or the block's text is not the script's")
    res = measure(repeat, sheets=False)
    for key in ("formula_cells", "kib"):
        if stamp.get(key) != res[key]:
            problems.append(f"{key}: the docs say {stamp.get(key)}, a fresh build has {res[key]}")
    for key, ok in res["verdicts"].items():
        if stamp.get("verdicts", {}).get(key) != ok:
            problems.append(f"target {key}: the docs say {met(stamp.get('verdicts', {}).get(key))}, a fresh "
                            f"measurement: {met(ok)}")
    print(render_block(res))
    if problems:
        print("docs/workbook.md is out of date (run python bench/bench_workbook.py --write):\n  "
              + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("docs/workbook.md and README.md: the benchmark block is this script's and a fresh run agrees")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="fresh build processes and LibreOffice passes (default 5)")
    ap.add_argument("--sheets", action="store_true", help="also what each sheet's formulas cost LibreOffice")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the figures in docs/workbook.md and README.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if the docs' figures are not this script's")
    args = ap.parse_args(argv)
    if args.check:
        return check(min(args.repeat, 3))
    res = measure(args.repeat, args.sheets)
    print(render_block(res))
    if args.write:
        write(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""templates/udf_demo.xlsx: its cells call the worksheet functions on input cells; evaluated
here with the Python functions (Excel needs the add-in), they give the seed's numbers."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest
from openpyxl import load_workbook
from openpyxl.utils.cell import range_boundaries

pytest.importorskip("xlwings")

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "templates" / "udf_demo.xlsx"
if str(ROOT / "udfs") not in sys.path:
    sys.path.insert(0, str(ROOT / "udfs"))
udfs = importlib.import_module("xlcalc_udfs")
build_demo = importlib.import_module("build_demo")

CALL = re.compile(r"^=([A-Z][A-Z0-9_]*)\((.*)\)$")


def _split(args: str) -> list[str]:
    out, cur, quoted = [], "", False
    for ch in args:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur] if args else []


def _formula_text(value) -> str | None:
    text = getattr(value, "text", value)
    return text if isinstance(text, str) and text.startswith("=") else None


def _value(wb, sheet, token: str):
    token = token.strip()
    if token.startswith('"'):
        return token[1:-1].replace('""', '"')
    if token.upper() in ("TRUE", "FALSE"):
        return token.upper() == "TRUE"
    if re.fullmatch(r"-?[0-9.]+(E[+-]?[0-9]+)?", token, flags=re.I):
        return float(token)
    if "!" in token:
        sheet, token = token.split("!")
    ws = wb[sheet]
    if ":" in token:
        c1, r1, c2, r2 = range_boundaries(token)
        return [[ws.cell(r, c).value for c in range(c1, c2 + 1)] for r in range(r1, r2 + 1)]
    return [[ws[token].value]]  # one cell, as xlwings hands it over with ndim=2


def evaluate(wb, sheet: str, text: str):
    """Evaluate a flat call =NAME(arg, ...) with the Python worksheet functions."""
    m = CALL.match(text)
    assert m, f"not one flat call: {text}"
    name, args = m.groups()
    assert name in udfs.UDF_NAMES, f"{name} is not an xlcalc worksheet function"
    return getattr(udfs, name)(*[_value(wb, sheet, a) for a in _split(args)])


@pytest.fixture(scope="module")
def wb():
    assert DEMO.exists(), "templates/udf_demo.xlsx is missing: run python udfs/build_demo.py --force"
    return load_workbook(DEMO)


def _results(wb) -> dict[str, object]:
    ws = wb["Demo"]
    out = {}
    for row in ws.iter_rows(min_col=1, max_col=2):
        label, cell = row
        text = _formula_text(cell.value)
        if text:
            try:
                out[label.value] = evaluate(wb, "Demo", text)
            except ValueError as exc:
                out[label.value] = exc
    return out


def test_every_formula_cell_is_a_call_of_an_xlcalc_function(wb):
    calls = 0
    for ws in wb:
        for row in ws.iter_rows():
            for cell in row:
                text = _formula_text(cell.value)
                if text:
                    m = CALL.match(text)
                    assert m and m.group(1) in udfs.UDF_NAMES, (ws.title, cell.coordinate, text)
                    calls += 1
    assert calls >= 10


def test_demo_gives_the_seed_002_numbers(wb):
    r = _results(wb)
    # seed 002 §7.3: 8.4e23 FLOPs; ≈ 76 days on 1024 A800 at MFU 0.4; 122.5 GB per GPU with TP 8
    assert r["Training compute"] == pytest.approx(8.4e23)
    assert round(r["Training days"], 2) == 76.08
    assert round(r["GPUs for the deadline"], 1) == 865.6  # 8.4e23 / (312e12*0.4*90*86400)
    assert r["Model states per GPU"] == pytest.approx(122.5)
    assert r["Chinchilla tokens"] == pytest.approx(70 * 20 / 1000)  # Hoffmann et al.: 20 tokens/param
    assert r["Pipeline bubble"] == 0  # pp = 1: (p-1)/(v*m) = 0
    assert r["GPU FP16 peak from the catalog"] == 312 and r["GPU memory from the catalog"] == 80  # A800: seed 002 §7.3 (312 TFLOPS FP16, 80 GB)
    # Korthikanti Table 2, selective recompute + sequence parallel: 34*s*b*h/t per layer, 80 layers
    assert r["Activations per GPU"] == pytest.approx(80 * 34 * 4096 * 8192 / 8 / 1e9)
    err = r["An error, on purpose (MFU 1.5)"]
    assert isinstance(err, ValueError) and str(err).startswith("mfu = 1.5 is not allowed")


def test_scenarios_spill_one_result_per_row_and_the_bad_row_shows_its_message(wb):
    sc = wb["Scenarios"]
    cell = sc["C3"].value
    assert getattr(cell, "ref", None) == "C3:C8"
    out = evaluate(wb, "Scenarios", cell.text)
    assert len(out) == 6 and all(len(r) == 1 for r in out)
    params = [sc[f"A{r}"].value for r in range(3, 9)]
    mfus = [sc[f"B{r}"].value for r in range(3, 9)]
    for i, (p, m) in enumerate(zip(params, mfus)):
        if m <= 1:
            assert out[i][0] == pytest.approx(6 * p * 1e9 * 2e12 / (312e12 * 1024 * m) / 86400)
        else:
            assert out[i][0] == f"#VALUE! row {i + 1}, column 1: mfu = 1.5 is not allowed: mfu must be a number > 0 and <= 1 (a fraction: 1.5 would be 150%; for 1.5% type 0.015)"


def test_demo_matches_its_generator(tmp_path, wb):
    fresh = load_workbook(build_demo.build(tmp_path / "demo.xlsx"))
    for title in ("Demo", "Scenarios"):
        def cells(book, title=title):
            return {c.coordinate: (getattr(c.value, "text", c.value), getattr(c.value, "ref", None))
                    for row in book[title].iter_rows() for c in row if c.value is not None}
        assert cells(wb) == cells(fresh), f"templates/udf_demo.xlsx sheet {title} is stale: run python udfs/build_demo.py --force"
    assert _formula_text(wb["Catalog"]["A3"].value) == "=GPU_LIST()"


def test_build_never_overwrites_silently_and_writes_0644(tmp_path, capsys):
    import os
    import stat

    out = tmp_path / "demo.xlsx"
    old = os.umask(0o077)  # a strict umask: the file must still be readable by others
    try:
        assert build_demo.main([str(out)]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    out.write_bytes(b"mine")
    assert build_demo.main([str(out)]) == 2
    assert out.read_bytes() == b"mine"  # untouched
    assert "--force" in capsys.readouterr().err
    assert build_demo.main([str(out), "--force"]) == 0
    assert load_workbook(out)["Demo"]["A1"].value == "xlcalc worksheet functions: demo"


def test_the_checked_in_demo_is_not_rebuilt_without_force(capsys):
    before = DEMO.read_bytes()
    assert build_demo.main([]) == 2
    assert DEMO.read_bytes() == before
    assert "--force" in capsys.readouterr().err

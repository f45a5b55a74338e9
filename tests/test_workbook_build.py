"""Building the planning workbook: no macros or links, hostile text stays text, the build script, every preset,
the one-pass package, the cycle collector left as found."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import zipfile

import openpyxl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seed002_workbook import ROOT, TEMPLATES, named
from xlcalc.scenario import evaluate, load_scenario
from xlcalc.workbook import build


def test_no_macros_no_external_links(seed002):
    with zipfile.ZipFile(seed002[0]) as zf:
        names = zf.namelist()
        types = zf.read("[Content_Types].xml").decode()
    assert not any("vbaProject" in n or "externalLink" in n for n in names)
    assert "macroEnabled" not in types


HOSTILE = '''name = "=HYPERLINK(\\"http://example.invalid\\",\\"click\\")"
notes = "+cmd|' /C calc'!A0 @SUM(1) -2+3"
gpu = "h100"
'''


def test_hostile_scenario_text_stays_text(tmp_path):
    toml = tmp_path / "hostile.toml"
    toml.write_text(HOSTILE, encoding="utf-8")
    sc = load_scenario(toml)
    path = tmp_path / "hostile.xlsx"
    lay = build(path, [sc])
    wb = openpyxl.load_workbook(path)
    for name, text in (("Scenario_Name", sc.name), ("Scenario_Notes", sc.notes)):
        c = named(wb, name)
        assert c.data_type == "s" and c.value == text
    # the comparison columns' titles are built from their inputs, never from typed text
    assert wb["Scenarios"]["C5"].data_type == "f" and "HYPERLINK" not in wb["Scenarios"]["C5"].value
    with zipfile.ZipFile(path) as zf:
        xml = zf.read("xl/worksheets/sheet2.xml").decode()  # Inputs
    cell = re.search(r'<c r="B2"[^>]*>.*?</c>', xml).group(0)
    assert "<f>" not in cell and "inlineStr" in cell
    assert lay.book.cell("Inputs", "B2").value.startswith("=HYPERLINK")


def test_build_workbook_script(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "build_workbook.py"), "--help"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0 and "--scenario" in out.stdout and "-o" in out.stdout
    assert "--force" in out.stdout and "never" in out.stdout and "overwritten" in out.stdout
    run = subprocess.run([sys.executable, str(ROOT / "build_workbook.py")], capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "planner.xlsx").exists()
    assert (tmp_path / "planner.xlsx").stat().st_mode & 0o777 == 0o644  # readable by others
    # an existing file is not overwritten silently
    (tmp_path / "planner.xlsx").write_bytes(b"mine")
    again = subprocess.run([sys.executable, str(ROOT / "build_workbook.py")], capture_output=True, text=True,
                           cwd=tmp_path)
    assert again.returncode == 2 and "planner.xlsx" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr and (tmp_path / "planner.xlsx").read_bytes() == b"mine"
    forced = subprocess.run([sys.executable, str(ROOT / "build_workbook.py"), "--force"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert zipfile.is_zipfile(tmp_path / "planner.xlsx")
    bad = subprocess.run([sys.executable, str(ROOT / "build_workbook.py"), "--scenario", "no-such-plan"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "scenario" in bad.stderr and "Traceback" not in bad.stderr


def test_bad_scenario_file_names_the_input(tmp_path):
    from xlcalc.errors import InputError

    bad = tmp_path / "bad.toml"
    bad.write_text('mfu = 1.7\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"mfu = 1.7 is not allowed: mfu must be a number > 0 and <= 1"):
        load_scenario(bad)


@pytest.mark.parametrize("template", sorted(p.name for p in TEMPLATES.glob("*.toml")))
def test_every_template_builds(template, tmp_path):
    sc = load_scenario(TEMPLATES / template)
    lay = build(tmp_path / "t.xlsx", [sc])
    assert lay.scenario == sc
    assert all(math.isfinite(v) for v in evaluate(sc).values() if not isinstance(v, (bool, str)))
    assert evaluate(sc)["Layout_Check"] == "OK"


def test_one_pass_package_is_the_bytes_openpyxl_and_inject_write(seed002):
    """build() writes the cells and their cached values in one pass (writer.save_package); the reference is
    openpyxl's own writer (stored_package) with cache.inject's cached values: every part byte for byte, but the
    document properties' save time."""
    import io

    from xlcalc.workbook import cache
    from xlcalc.workbook.writer import save_package, stored_package, to_workbook

    _, lay = seed002
    values = lay.book.cached_values()
    ref, fast = io.BytesIO(), io.BytesIO()
    cache.inject(io.BytesIO(stored_package(to_workbook(lay.book))), values, ref)
    save_package(to_workbook(lay.book), values, fast)
    with zipfile.ZipFile(ref) as a, zipfile.ZipFile(fast) as b:
        assert a.namelist() == b.namelist()
        differ = [n for n in a.namelist() if a.read(n) != b.read(n)]
    assert differ in ([], ["docProps/core.xml"])


def test_the_build_leaves_the_cycle_collector_as_it_found_it():
    import gc

    from xlcalc.workbook import collector_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a build that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_a_formula_text_is_refused_for_exactly_the_characters_openpyxl_refuses():
    """The writer binds a formula's text without openpyxl's ``cell.value`` (writer._bind_text): a control character
    in it is refused as openpyxl's own binding refuses it, and every other character is written. XML 1.0 allows no
    control character below 0x20 but tab, line feed and carriage return: 29 refused."""
    from openpyxl import Workbook
    from openpyxl.utils.exceptions import IllegalCharacterError

    from xlcalc.expr import Text
    from xlcalc.workbook.writer import write_cell

    ws = Workbook().active
    refused_here = []
    for ch in [chr(c) for c in range(0x80)] + ["\u2014", "\u00e9", "\ufffe", "\ud800"]:  # (a lone surrogate too)
        try:
            ws["A1"].value = f'="{ch}"'
            refused = False
        except IllegalCharacterError:
            refused = True
        try:
            write_cell(ws, "B1", Text(ch), "formula", None, None)
        except IllegalCharacterError:
            refused_here.append(ch)
            assert refused, repr(ch)
        else:
            assert not refused and ws["B1"].value == "=" + Text(ch).render(str), repr(ch)
    assert len(refused_here) == 29


def _styles(wb):
    """Every cell of every sheet as (sheet, coordinate, cell type, style array), and the workbook's style lists."""
    cells = [(ws.title, k, type(c).__name__, None if c._style is None else list(c._style))
             for ws in wb.worksheets for k, c in sorted(ws._cells.items())]
    return cells, list(wb._borders), list(wb._protections)


def test_merged_ranges_are_styled_as_openpyxl_merges_them(monkeypatch):
    """writer.Merger (openpyxl's merge with each border and protection sum worked out once) leaves every cell and
    style list as openpyxl's own ``merge_cells`` does: the planner's merged ranges, and ranges whose start cells
    have other borders and protections than the planner's."""
    from openpyxl import Workbook
    from openpyxl.styles import Border, Protection, Side

    from xlcalc.workbook import layout, writer

    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    merged = _styles(writer.to_workbook(lay.book))
    thin, thick = Side(style="thin"), Side(style="thick")

    def hand_made():
        wb = Workbook()
        ws = wb.active
        for row, (border, locked) in enumerate([(Border(left=thin, top=thin), False), (Border(right=thick), True),
                                                 (Border(left=thin, right=thin, top=thin, bottom=thin), False),
                                                 (Border(), None), (Border(bottom=thick), False)], start=2):
            ws.cell(row, 2, "x").border = border
            if locked is not None:
                ws.cell(row, 2).protection = Protection(locked=locked)
        ws.cell(4, 4, "end").border = Border(bottom=thin, right=thick)  # the end cell's sides go to the start cell
        return wb, ["B2:D2", "B3:D4", "B6:E7"]

    wb, ranges = hand_made()
    merger = writer.Merger()
    for rng in ranges:
        merger.merge(wb.active, rng)
    ours = _styles(wb)
    monkeypatch.setattr(writer.Merger, "merge", lambda self, ws, rng: ws.merge_cells(rng))
    assert _styles(writer.to_workbook(lay.book)) == merged
    wb, ranges = hand_made()
    for rng in ranges:
        wb.active.merge_cells(rng)
    assert _styles(wb) == ours
    assert any(t == "MergedCell" and s and s[2] for _, _, t, s in ours[0])  # a merged cell with a border of its own


@given(st.lists(st.sampled_from(["OK", "ok", "Ok", "OK ", "", "Inputs!B21: MFU = 40 is not allowed", 0, 1, 2.5,
                                 True, False]), min_size=1, max_size=8))
@settings(max_examples=60, deadline=None)
def test_a_gathering_cell_is_the_nested_ifs_it_stands_for(values):
    """model.FirstFailing (a Checks sheet's gathering cell as one node) writes IF(r1="OK",IF(r2="OK",...,"OK"),r2),r1)
    and is the first value that is not OK (case ignored, as = compares texts), else OK -- as the chain of IF nodes
    it stands for renders and evaluates."""
    from xlcalc.expr.nodes import identity
    from xlcalc.workbook.model import FirstFailing

    refs = [f"Checks!$C${k}" for k in range(1, len(values) + 1)]
    env = dict(zip(refs, values))
    node = FirstFailing(refs, "OK")
    text = "".join(f'IF({r}="OK",' for r in refs) + '"OK"' + "".join(f",{r})" for r in reversed(refs))
    assert node.render(identity) == node.chain().render(identity) == text
    failing = [v for v in values if not (isinstance(v, str) and v.lower() == "ok")]
    expected = failing[0] if failing else "OK"
    for got in (node.evaluate(env), node.chain().evaluate(env)):
        assert got == expected and type(got) is type(expected)
    assert node.variables() == set(refs) and node.functions() == {"IF"}
    assert node.key() == node.chain().key()

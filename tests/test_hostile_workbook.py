"""Hostile workbooks: each is refused (exit 2) or flagged (exit 1) with its cause named, within 10 s and 500 MB.

Every file is made here from one freshly built planning workbook by editing its zip parts (the XML is edited as
text, so nothing of xlcalc's writer is involved). All of them are read by ``xlcalc read`` in one child process,
which records for each file the exit status, the message, the CPU seconds and whether openpyxl was ever asked
to parse it; the child's peak memory comes from ``resource.getrusage``. The child first reads the pristine
workbook (it must agree), so the builder's layout of the expected workbook, laid out once per scenario and
shape, is not counted against each hostile file.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

import xlcalc
from procs import run_bounded
from xlcalc.scenario import load_scenario
from xlcalc.workbook import build

ROOT = Path(__file__).resolve().parent.parent
SEED002 = ROOT / "xlcalc" / "presets" / "seed002-70b-a800.toml"
CPU_LIMIT_S = 10.0
MEMORY_LIMIT_MB = 500
Parts = dict[str, bytes]

# --- editing a package as zip parts ------------------------------------------------------------------------


def parts_of(path: Path) -> Parts:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def write_parts(path: Path, parts: Parts, method: int = zipfile.ZIP_DEFLATED) -> None:
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in parts.items():
            zf.writestr(name, data)


def sheet_part(parts: Parts, title: str) -> str:
    """The part of a sheet by its title, through workbook.xml and its relationships."""
    rid = re.search(rf'<sheet [^>]*name="{title}"[^>]*r:id="(\w+)"', parts["xl/workbook.xml"].decode())
    assert rid, title
    rels = parts["xl/_rels/workbook.xml.rels"].decode()
    target = re.search(rf'<Relationship [^>]*Target="([^"]+)"[^>]*Id="{rid[1]}"', rels)
    assert target, rid[1]
    return target[1].lstrip("/")


def name_cell(parts: Parts, name: str) -> tuple[str, str]:
    ref = re.search(rf'<definedName name="{name}">([^<]+)</definedName>', parts["xl/workbook.xml"].decode())
    assert ref, name
    sheet, at = ref[1].split("!")
    return sheet, at.replace("$", "")


def edit_cell(parts: Parts, sheet: str, at: str, new: Callable[[str], str]) -> None:
    """Replace the XML of one cell (<c r="at" ...>...</c>) with new(old)."""
    part = sheet_part(parts, sheet)
    xml = parts[part].decode()
    m = re.search(rf'<c r="{at}"[^>]*?(?:/>|>.*?</c>)', xml)
    assert m, (sheet, at)
    parts[part] = (xml[:m.start()] + new(m.group(0)) + xml[m.end():]).encode()


def set_formula(text: str, keep_value: bool = True) -> Callable[[str], str]:
    """The cell's formula set to ``text`` (XML-escaped here), its cached value kept."""
    esc = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def new(old: str) -> str:
        value = re.search(r"<v>[^<]*</v>", old) if keep_value else None
        head = re.match(r'<c r="\w+"(?: s="\d+")?', old)
        assert head
        return f"{head.group(0)}><f>{esc}</f>{value.group(0) if value else ''}</c>"
    return new


def sub(parts: Parts, part: str, old: str, new: str, count: int = 1) -> None:
    xml = parts[part].decode()
    assert old in xml, (part, old)
    parts[part] = xml.replace(old, new, count).encode()


def add_row(parts: Parts, sheet: str, row_xml: str) -> None:
    sub(parts, sheet_part(parts, sheet), "</sheetData>", row_xml + "</sheetData>")


TRAIN_DAYS = ("Time", "B6")  # tests below check this against the defined name


# --- the cases ----------------------------------------------------------------------------------------------
# Each case edits the pristine parts (or writes raw bytes) and names the exit status and a pattern of the message.

def _formula_eq_1(p: Parts) -> None:
    edit_cell(p, *TRAIN_DAYS, set_formula("1"))


def _constant(p: Parts) -> None:
    edit_cell(p, *TRAIN_DAYS, lambda old: re.sub(r"<f>.*?</f>", "", old))


def _deleted(p: Parts) -> None:
    edit_cell(p, *TRAIN_DAYS, lambda old: "")


def _changed_constant(p: Parts) -> None:
    edit_cell(p, *TRAIN_DAYS, lambda old: old.replace("/86400", "/86401"))


def _changed_reference(p: Parts) -> None:
    edit_cell(p, *TRAIN_DAYS, lambda old: old.replace("N_GPUs*MFU", "N_GPUs*Spare_Frac"))


def _input_formula(name: str, text: str) -> Callable[[Parts], None]:
    return lambda p: edit_cell(p, *name_cell(p, name), set_formula(text))


def _formula_in_empty(p: Parts) -> None:
    add_row(p, "Time", '<row r="999"><c r="Z999"><f>1+1</f><v>2</v></c></row>')


def _formulas_everywhere(p: Parts) -> None:
    add_row(p, "Time", "".join(f'<row r="{r}"><c r="Z{r}"><f>1+1</f><v>2</v></c></row>' for r in range(1000, 4000)))


def _formula_in_label(p: Parts) -> None:
    edit_cell(p, "Time", "A6", set_formula('"Training days"', keep_value=False))


def _lost_protection(p: Parts) -> None:
    edit_cell(p, *name_cell(p, "Scenario_Name"),
              lambda old: '<c r="B2" t="inlineStr"><is><t>=cmd|\' /C calc\'!A0</t></is></c>')


def _name_repointed(p: Parts) -> None:
    sub(p, "xl/workbook.xml", '<definedName name="Train_Days">Time!$B$6<', '<definedName name="Train_Days">Time!$B$7<')


def _name_added(p: Parts) -> None:
    sub(p, "xl/workbook.xml", "</definedNames>", '<definedName name="Shadow">Time!$B$6</definedName></definedNames>')


def _array_formula(p: Parts) -> None:
    edit_cell(p, *TRAIN_DAYS, lambda old: old.replace("<f>", '<f t="array" ref="B6">'))


def _other_sheet(sheet: str, at: str, old: str, new: str) -> Callable[[Parts], None]:
    """``old`` replaced by ``new`` in the first formula cell of ``sheet`` whose reference matches ``at`` (a regular
    expression: cells move as sheets grow) and whose formula holds ``old``."""
    def edit(p: Parts) -> None:
        part = sheet_part(p, sheet)
        xml = p[part].decode()
        m = next((m for m in re.finditer(rf'<c r="{at}"[^>]*?(?:/>|>.*?</c>)', xml) if old in m.group(0)), None)
        assert m, (sheet, at, old)
        p[part] = (xml[:m.start()] + m.group(0).replace(old, new, 1) + xml[m.end():]).encode()
    return edit


def _not_zip(path: Path, parts: Parts) -> None:
    path.write_text("Dear colleague, please find the plan attached.", encoding="utf-8")


def _empty(path: Path, parts: Parts) -> None:
    path.write_bytes(b"")


def _truncated(path: Path, parts: Parts) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in parts.items():
            zf.writestr(n, d)
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])


def _ole(path: Path, parts: Parts) -> None:
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 4096)  # an encrypted OOXML is such a CFB file


def _oversized_file(path: Path, parts: Parts) -> None:
    p = dict(parts)
    p["xl/media/image1.png"] = os.urandom(21 * 1024 * 1024)  # incompressible: 21 MB on disk
    write_parts(path, p, zipfile.ZIP_STORED)


def _patch_central(path: Path, parts: Parts, member: str, patch: Callable[[bytearray, int], None]) -> None:
    write_parts(path, parts)
    data = bytearray(path.read_bytes())
    at = 0
    while True:
        at = data.index(b"PK\x01\x02", at)
        n = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + n].decode() == member:
            patch(data, at)
            break
        at += 4
    path.write_bytes(bytes(data))


def _encrypted_member(path: Path, parts: Parts) -> None:
    def flag(data: bytearray, at: int) -> None:
        data[at + 8] |= 1
    _patch_central(path, parts, "xl/workbook.xml", flag)


def _lying_size(path: Path, parts: Parts) -> None:
    def size(data: bytearray, at: int) -> None:
        data[at + 24:at + 28] = (10).to_bytes(4, "little")
    _patch_central(path, parts, sheet_part(parts, "Time"), size)


def _bzip2(path: Path, parts: Parts) -> None:
    write_parts(path, parts, zipfile.ZIP_BZIP2)


def _duplicate(path: Path, parts: Parts) -> None:
    write_parts(path, parts)
    with pytest.warns(UserWarning), zipfile.ZipFile(path, "a") as zf:
        zf.writestr("xl/workbook.xml", parts["xl/workbook.xml"])


def _ratio_bomb(p: Parts) -> None:
    part = sheet_part(p, "Time")
    p[part] = p[part].replace(b"<sheetData>", b"<sheetData>" + b" " * (8 * 1024 * 1024))


def _total_bomb(p: Parts) -> None:
    for k in range(30):
        p[f"xl/media/image{k + 1}.png"] = b"\0" * (1000 * 1000)


def _many_parts(p: Parts) -> None:
    for k in range(400):
        p[f"xl/media/image{k + 1}.png"] = b"x"


def _huge_part(p: Parts) -> None:
    p["xl/media/image1.png"] = os.urandom(17 * 1000 * 1000)  # incompressible: no zip bomb, only too large a part


def _huge_sheet(p: Parts) -> None:
    rows = "".join(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c></row>' for r in range(1000, 251000))
    add_row(p, "Sensitivity", rows)


def _doctype(body: str) -> Callable[[Parts], None]:
    def edit(p: Parts) -> None:
        xml = p["xl/workbook.xml"].decode()
        start = xml.index("<workbook")
        p["xl/workbook.xml"] = (xml[:start] + body + xml[start:]).encode()
    return edit


BILLION_LAUGHS = ('<!DOCTYPE workbook [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                  '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>')


def _deep(p: Parts) -> None:
    part = sheet_part(p, "Time")
    p[part] = p[part].replace(b"</worksheet>", b"<extLst>" + b"<x>" * 5000 + b"</x>" * 5000 + b"</extLst></worksheet>")


def _long_text(p: Parts) -> None:
    edit_cell(p, "Time", "A6", lambda old: f'<c r="A6" t="inlineStr"><is><t>{"x" * 40000}</t></is></c>')


def _malformed(p: Parts) -> None:
    part = sheet_part(p, "Time")
    p[part] = p[part][: len(p[part]) // 2]


def _add(name: str, data: bytes) -> Callable[[Parts], None]:
    def edit(p: Parts) -> None:
        p[name] = data
    return edit


def _content_type(old: str, new: str) -> Callable[[Parts], None]:
    return lambda p: sub(p, "[Content_Types].xml", old, new)


WB_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
DDE_LINK = (b'<externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            b'<ddeLink ddeService="cmd" ddeTopic="/C calc"><ddeItems><ddeItem name="A0"/></ddeItems></ddeLink>'
            b"</externalLink>")


def _external_rel(p: Parts) -> None:
    sub(p, "xl/_rels/workbook.xml.rels", "</Relationships>",
        '<Relationship Id="rId99" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'hyperlink" Target="http://example.invalid/x" TargetMode="External"/></Relationships>')


def _external_refs(p: Parts) -> None:
    sub(p, "xl/workbook.xml", "<definedNames>", '<externalReferences><externalReference r:id="rId99"/>'
        "</externalReferences><definedNames>")


def _validation_formula(p: Parts) -> None:
    part = sheet_part(p, "Inputs")
    xml = p[part].decode()
    p[part] = re.sub(r"<formula1>[^<]*</formula1>", '<formula1>WEBSERVICE("http://example.invalid")</formula1>',
                     xml, count=1).encode()


def _traversal(p: Parts) -> None:
    p["../../evil.xml"] = b"<x/>"


def _no_workbook(p: Parts) -> None:
    del p["xl/workbook.xml"]


def _foreign(path: Path, parts: Parts) -> None:
    import openpyxl
    wb = openpyxl.Workbook()
    wb.active["A1"] = 1
    wb.save(path)


REFUSED, FLAGGED = 2, 1
ParseEdit = Callable[[Parts], None]
FileEdit = Callable[[Path, Parts], None]
CASES: dict[str, tuple[ParseEdit | FileEdit, int, str, bool]] = {
    # name: (edit, exit status, message pattern, refused before openpyxl parses anything)
    "result formula =1, cached value kept": (_formula_eq_1, FLAGGED, r"Time!B6 \(Train_Days\): the formula differs", False),
    "result formula replaced by its value": (_constant, FLAGGED, r"Time!B6 \(Train_Days\): the formula .* was replaced by the constant", False),
    "result formula deleted": (_deleted, FLAGGED, r"Time!B6 \(Train_Days\): the formula .* was deleted", False),
    "a constant in a formula changed": (_changed_constant, FLAGGED, r"Time!B6 .*formula differs.*86401", False),
    "a reference in a formula changed": (_changed_reference, FLAGGED, r"Time!B6 .*formula differs.*Spare_Frac", False),
    "formula in an input (arithmetic)": (_input_formula("N_GPUs", "512*2"), FLAGGED, r"\(N_GPUs\): an input cell holds the formula '=512\*2'", False),
    "formula in an input (reference)": (_input_formula("MFU", "Time!B6/190"), FLAGGED, r"\(MFU\): an input cell holds the formula", False),
    "formula in a text input": (_input_formula("Scenario_Notes", '"a"&"b"'), FLAGGED, r"\(Scenario_Notes\): an input cell holds the formula", False),
    "formula in a cell the builder leaves empty": (_formula_in_empty, FLAGGED, r"Time!Z999: holds the formula '=1\+1' where xlcalc writes nothing", False),
    "3,000 formulas added": (_formulas_everywhere, FLAGGED, r"Time!Z1199: holds the formula.*\n  the workbook: more than 200 cells differ", False),
    "formula over a label": (_formula_in_label, FLAGGED, r"Time!A6: holds the formula .* where xlcalc writes a value", False),
    "formula-like text without its protection": (_lost_protection, FLAGGED, r"\(Scenario_Name\): the text .*cmd.* has lost its text protection", False),
    "defined name repointed": (_name_repointed, FLAGGED, r"defined name Train_Days: points to 'Time!\$B\$7'", False),
    "defined name added": (_name_added, FLAGGED, r"defined name Shadow: not one xlcalc writes", False),
    "array formula": (_array_formula, FLAGGED, r"Time!B6 .*array or data-table formula", False),
    "Parallelism formula changed": (_other_sheet("Parallelism", "H5", "/1E+9", "/1E+10"), FLAGGED, r"Parallelism!H5: the formula differs", False),
    "Scenarios formula changed": (_other_sheet("Scenarios", r"C\d+", "86400", "8640"), FLAGGED, r"Scenarios!C\d+: the formula differs", False),
    "Sensitivity formula changed": (_other_sheet("Sensitivity", "B6", "86400", "8640"), FLAGGED, r"Sensitivity!B6: the formula differs", False),
    "not a zip": (_not_zip, REFUSED, r"not an \.xlsx workbook \(an \.xlsx file is a zip package\)", True),
    "empty file": (_empty, REFUSED, r"not an \.xlsx workbook", True),
    "truncated zip": (_truncated, REFUSED, r"damaged or truncated \.xlsx package", True),
    "encrypted (OLE/CFB named .xlsx)": (_ole, REFUSED, r"encrypted \(password-protected\) or legacy \.xls", True),
    "encrypted zip member": (_encrypted_member, REFUSED, r"part xl/workbook\.xml is encrypted", True),
    "central directory lies about a size": (_lying_size, REFUSED, r"damaged \.xlsx package \(Bad CRC-32", True),
    "bzip2 compression": (_bzip2, REFUSED, r"compression method 12", True),
    "duplicate part": (_duplicate, REFUSED, r"part xl/workbook\.xml appears twice", True),
    "oversized file": (_oversized_file, REFUSED, r"\d+\.\d MB is too large for a planning workbook \(limit 20 MB\)", True),
    "zip bomb (compression ratio)": (_ratio_bomb, REFUSED, r"is compressed \d+:1; refusing a possible zip bomb", True),
    "zip bomb (total size)": (_total_bomb, REFUSED, r"unpacks to \d+ MB .*refusing a possible zip bomb", True),
    "too many parts": (_many_parts, REFUSED, r"\d+ parts in the package, more than a workbook has", True),
    "one huge part": (_huge_part, REFUSED, r"part xl/media/image1\.png unpacks to 17 MB \(limit 16 MB per part\)", True),
    "huge sheet XML (250,000 cells)": (_huge_sheet, REFUSED, r"more than 50,000 cells", True),
    "billion laughs": (_doctype(BILLION_LAUGHS), REFUSED, r"xl/workbook\.xml: declares a DTD.*billion laughs", True),
    "external entity (XXE)": (_doctype('<!DOCTYPE workbook [<!ENTITY x SYSTEM "file:///etc/passwd">]>'), REFUSED, r"declares a DTD", True),
    "deep XML": (_deep, REFUSED, r"XML nested deeper than 64 levels", True),
    "over-long text": (_long_text, REFUSED, r"a text longer than Excel's 32,767 characters", True),
    "malformed XML": (_malformed, REFUSED, r"is not well-formed XML", True),
    "vbaProject.bin": (_add("xl/vbaProject.bin", b"\0" * 64), REFUSED, r"contains macros \(a VBA project\)", True),
    "macro-enabled content type": (_content_type(WB_TYPE, "application/vnd.ms-excel.sheet.macroEnabled.main+xml"), REFUSED, r"content type .*macroEnabled", True),
    "wrong workbook content type": (_content_type(WB_TYPE, "application/xml"), REFUSED, r"the workbook part has content type 'application/xml'", True),
    "external link part with DDE": (_add("xl/externalLinks/externalLink1.xml", DDE_LINK), REFUSED, r"an external link to another file", True),
    "external relationship": (_external_rel, REFUSED, r"an external relationship to 'http://example\.invalid/x'", True),
    "externalReferences element": (_external_refs, REFUSED, r"<externalReferences> element", True),
    "DDE formula in an input": (_input_formula("N_GPUs", "cmd|' /C calc'!A0"), REFUSED, r"a formula with a DDE link", True),
    "WEBSERVICE in an input": (_input_formula("MFU", '_xlfn.WEBSERVICE("http://example.invalid")'), REFUSED, r"reaches outside the workbook: .*WEBSERVICE", True),
    "HYPERLINK in a result": (lambda p: edit_cell(p, *TRAIN_DAYS, set_formula('HYPERLINK("http://example.invalid",76.08)')), REFUSED, r"reaches outside the workbook: HYPERLINK", True),
    "reference to another file": (_input_formula("MFU", "[1]Sheet1!A1"), REFUSED, r"a reference to another file", True),
    "WEBSERVICE in a data validation": (_validation_formula, REFUSED, r"reaches outside the workbook: WEBSERVICE", True),
    "unknown part": (_add("xl/evil.bin", b"MZ"), REFUSED, r"part xl/evil\.bin is not one a planning workbook has", True),
    "embedded object": (_add("xl/embeddings/oleObject1.bin", b"\0"), REFUSED, r"embedded objects or controls", True),
    "path traversal part name": (_traversal, REFUSED, r"part \.\./\.\./evil\.xml is not one a planning workbook has", True),
    "no workbook part": (_no_workbook, REFUSED, r"not an Excel workbook \(no xl/workbook\.xml\)", True),
    "foreign workbook": (_foreign, REFUSED, r"not an xlcalc planning workbook \(missing defined names", False),
}

RUNNER = r"""
import contextlib, io, json, resource, sys, time, traceback
import openpyxl
from xlcalc.cli import main
parsed = []
real = openpyxl.load_workbook
def spy(*a, **k):
    parsed.append(1)
    return real(*a, **k)
openpyxl.load_workbook = spy
out = {}
for path in sys.argv[1:]:
    del parsed[:]
    o, e = io.StringIO(), io.StringIO()
    t = time.process_time()
    try:
        with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
            rc = main(["read", path])
    except BaseException:
        rc, e = -1, io.StringIO(traceback.format_exc())
    out[path] = {"rc": rc, "stdout": o.getvalue(), "stderr": e.getvalue(), "cpu_s": time.process_time() - t,
                 "parsed": bool(parsed)}
# this process's own peak (VmHWM: its address space's high-water mark, new at exec); getrusage's ru_maxrss would also
# count the peak of the process that started it (Linux carries it across exec), e.g. a long pytest run's
try:
    out["maxrss_mb"] = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    pristine = folder / "pristine.xlsx"
    build(pristine, [load_scenario(SEED002)])
    original = parts_of(pristine)
    assert name_cell(original, "Train_Days") == TRAIN_DAYS
    paths = {}
    for k, (name, (edit, _, _, _)) in enumerate(CASES.items()):
        path = folder / f"case{k:02d}.xlsx"
        parts = dict(original)
        if edit.__code__.co_argcount == 2:
            edit(path, parts)  # type: ignore[call-arg]
        else:
            edit(parts)  # type: ignore[call-arg]
            write_parts(path, parts)
        paths[name] = path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(xlcalc.__file__).parent.parent),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = run_bounded([sys.executable, "-c", RUNNER, str(pristine), *map(str, paths.values())],
                       cpu_s=int(CPU_LIMIT_S * (len(paths) + 1)) + 60, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    return {"pristine": data[str(pristine)], "maxrss_mb": data["maxrss_mb"],
            **{name: data[str(p)] for name, p in paths.items()}}


def test_the_suite_has_forty_hostile_files():
    assert len(CASES) >= 40
    assert sum(c[1] == REFUSED for c in CASES.values()) >= 20 and sum(c[1] == FLAGGED for c in CASES.values()) >= 10


def test_pristine_workbook_agrees(results):
    r = results["pristine"]
    assert r["rc"] == 0, r
    assert "formulas are the ones xlcalc writes" in r["stdout"]


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_file_is_refused_or_flagged_with_its_cause(results, name):
    _, status, pattern, before_parsing = CASES[name]
    r = results[name]
    assert "Traceback" not in r["stderr"] + r["stdout"], r["stderr"]
    assert r["rc"] == status, (r["rc"], r["stdout"][-800:], r["stderr"][-800:])
    text = r["stderr"] if status == REFUSED else r["stdout"]
    assert re.search(pattern, text), text[-1500:]
    if status == REFUSED:
        assert text.startswith("xlcalc read: error: ") and text.count("\n") == 1, text
    if before_parsing:  # refused by the package checks: openpyxl never saw the file
        assert not r["parsed"], text
    assert r["cpu_s"] <= CPU_LIMIT_S, (name, r["cpu_s"])


def test_memory_of_reading_every_hostile_file(results):
    print(f"peak memory of the reading process: {results['maxrss_mb']:.0f} MB")
    assert results["maxrss_mb"] <= MEMORY_LIMIT_MB, results["maxrss_mb"]

"""Checks of a received .xlsx package before any of it is parsed as a workbook.

The zip's central directory is inspected first (file size, number of parts, each part's declared size and compression
ratio, encryption, part names against an allow-list, no macros, external links or embedded objects). Then every XML part
is streamed once through expat with hard limits — no DTD or entity declarations, bounded nesting depth, elements, cells
and text length, no formula that reaches outside the workbook (DDE, external references, WEBSERVICE, HYPERLINK, ...) —
and a CPU-time budget. Only a package that passes is handed to openpyxl, so its time and memory are bounded by these
limits.
"""

from __future__ import annotations

import re
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from xml.parsers import expat

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Compound File Binary: encrypted OOXML, or a legacy .xls


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 20_000_000             # on disk (MB = 1e6 bytes)
    unpacked_bytes: int = 24_000_000         # all parts, as declared in the central directory
    part_bytes: int = 16_000_000             # one part
    parts: int = 300
    ratio: int = 200                         # uncompressed / compressed, for a part over 1 MB
    depth: int = 64                          # XML nesting
    elements: int = 2_000_000                # XML elements, all parts
    cells: int = 50_000                      # <c> elements, all sheets (the builder writes about 6,000)
    text_chars: int = 32_767                 # one text node (Excel's cell limit)
    formula_chars: int = 32_767              # one formula (Excel writes at most 8,192; LibreOffice more)
    cpu_s: float = 6.0                       # CPU seconds for these checks


class PackageError(ValueError):
    """The package is refused; the message names the cause."""


# Parts a planning workbook may hold: what the builder writes, and what a re-save in Excel or LibreOffice adds.
ALLOWED_PARTS = tuple(re.compile(p) for p in (
    r"\[Content_Types\]\.xml", r"_rels/\.rels",
    r"docProps/(app|core|custom)\.xml", r"docProps/thumbnail\.(jpeg|jpg|png|emf|wmf)",
    r"xl/workbook\.xml", r"xl/_rels/workbook\.xml\.rels", r"xl/styles\.xml", r"xl/sharedStrings\.xml",
    r"xl/calcChain\.xml", r"xl/theme/theme\d+\.xml", r"xl/theme/_rels/theme\d+\.xml\.rels",
    r"xl/worksheets/sheet\d+\.xml", r"xl/worksheets/_rels/sheet\d+\.xml\.rels",
    r"xl/drawings/drawing\d+\.xml", r"xl/drawings/_rels/drawing\d+\.xml\.rels",
    r"xl/charts/(chart|style|colors)\d+\.xml", r"xl/charts/_rels/chart\d+\.xml\.rels",
    r"xl/printerSettings/printerSettings\d+\.bin", r"xl/media/image\d+\.(png|jpeg|jpg|emf|wmf)",
))
# Parts refused with a cause of their own
FORBIDDEN_PARTS = (
    (re.compile(r"(^|/)vbaProject\.bin$|(^|/)vbaData\.xml$", re.I), "macros (a VBA project)"),
    (re.compile(r"^xl/externalLinks/", re.I), "an external link to another file (possibly DDE)"),
    (re.compile(r"^xl/(embeddings|activeX|ctrlProps)/", re.I), "embedded objects or controls"),
    (re.compile(r"^xl/(connections\.xml|queryTables/)", re.I), "data connections"),
    (re.compile(r"^xl/macrosheets/|^xl/dialogsheets/", re.I), "Excel 4.0 macro sheets"),
)
WORKBOOK_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
FORBIDDEN_TYPES = re.compile(r"macroEnabled|vbaProject|externalLink|oleObject|activeX|template\.main", re.I)
FORBIDDEN_RELS = re.compile(r"/(externalLink|oleObject|vbaProject|attachedTemplate|frame|package|control)$", re.I)
# What a formula of a planning workbook never holds: DDE (app|topic!item), a reference into another file
# ([1]Sheet!A1, 'C:\path\[x.xlsx]'!A1) and functions that reach outside the workbook or run code
FORMULA_DANGER = (
    (re.compile(r"\|"), "a DDE link (application|topic)"),
    (re.compile(r"\["), "a reference to another file"),
    (re.compile(r"\b(WEBSERVICE|FILTERXML|HYPERLINK|CALL|REGISTER(\.ID)?|EXEC|RTD|DDE|DDEAUTH|EVALUATE|IMPORTXML|"
                r"IMAGE|FOPEN|FWRITE|FWRITELN|FREAD|INFO|CELL|INDIRECT|GET\.\w+|SET\.\w+|RUN|IMPORTDATA|"
                r"IMPORTRANGE|_xll\.\w+|_xlfn\.\w+)\s*\(", re.I), "a function that reaches outside the workbook"),
)
FORMULA_TAGS = {"f", "formula", "formula1", "formula2", "definedName"}


def _refuse(path: Path, why: str) -> PackageError:
    return PackageError(f"{path}: refused: {why}")


def formula_danger(text: str) -> str | None:
    """What in a formula reaches outside the workbook (text in double quotes is data, not looked at), or None."""
    code = re.sub(r'"(?:[^"]|"")*"', '""', text)
    for pattern, what in FORMULA_DANGER:
        if m := pattern.search(code):
            return f"{what}: {m.group(0).rstrip('(').strip()}"
    return None


def check(path: Path, limits: Limits = Limits()) -> None:
    """Refuse, with the cause named, any package that is not a plain bounded .xlsx; nothing is parsed by openpyxl."""
    start = time.process_time()
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise PackageError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if size > limits.file_bytes:
        raise PackageError(f"{path}: {size / 1e6:.1f} MB is too large for a planning workbook "
                           f"(limit {limits.file_bytes / 1e6:.0f} MB)")
    if head == OLE_MAGIC:
        raise _refuse(path, "an encrypted (password-protected) or legacy .xls Office file, not an .xlsx package; "
                            "save it unencrypted as .xlsx")
    if not zipfile.is_zipfile(path):
        if head.startswith(b"PK\x03\x04"):
            raise _refuse(path, "a damaged or truncated .xlsx package (the zip has no central directory)")
        raise PackageError(f"{path}: not an .xlsx workbook (an .xlsx file is a zip package)")
    try:
        with zipfile.ZipFile(path) as zf:
            _check_zip(path, zf, limits, start)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise _refuse(path, f"a damaged .xlsx package ({exc})") from None


def _check_zip(path: Path, zf: zipfile.ZipFile, limits: Limits, start: float) -> None:
    infos = zf.infolist()
    if len(infos) > limits.parts:
        raise PackageError(f"{path}: {len(infos)} parts in the package, more than a workbook has "
                           f"(limit {limits.parts})")
    names = [i.filename for i in infos]
    if (total := sum(i.file_size for i in infos)) > limits.unpacked_bytes:
        raise PackageError(f"{path}: unpacks to {total / 1e6:.0f} MB (limit {limits.unpacked_bytes / 1e6:.0f} MB); "
                           "refusing a possible zip bomb")
    for i in infos:
        ratio = i.file_size // max(i.compress_size, 1)
        if i.file_size > 1_000_000 and ratio > limits.ratio:
            raise PackageError(f"{path}: part {i.filename} is compressed {ratio}:1; refusing a possible zip bomb")
        if i.file_size > limits.part_bytes:
            raise _refuse(path, f"part {i.filename} unpacks to {i.file_size / 1e6:.0f} MB "
                                f"(limit {limits.part_bytes / 1e6:.0f} MB per part)")
    if "xl/workbook.xml" not in names or "[Content_Types].xml" not in names:
        raise PackageError(f"{path}: not an Excel workbook (no xl/workbook.xml)")
    if twice := sorted(n for n in set(names) if names.count(n) > 1):
        raise _refuse(path, f"part {twice[0]} appears twice in the package")
    for i in infos:
        if i.flag_bits & 0x1:
            raise _refuse(path, f"part {i.filename} is encrypted")
        if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _refuse(path, f"part {i.filename} uses compression method {i.compress_type} (an .xlsx uses deflate)")
    for n in names:
        for pattern, what in FORBIDDEN_PARTS:
            if pattern.search(n):
                raise _refuse(path, f"it contains {what} (part {n}); a planning workbook has none")
        if not any(p.fullmatch(n) for p in ALLOWED_PARTS):
            raise _refuse(path, f"part {n} is not one a planning workbook has (allowed: the parts xlcalc writes and "
                                "those Excel or LibreOffice add on saving: docProps, theme, calcChain, "
                                "printerSettings, chart styles, images)")
    scanner = _Scanner(path, limits, start)
    for i in infos:
        if i.filename.endswith((".xml", ".rels")):
            scanner.scan(zf, i)


class _Scanner:
    """One bounded expat pass over each XML part: refuses DTDs, deep nesting, too many elements or cells,
    over-long text, external relationships, macro content types and formulas that reach outside the workbook."""

    def __init__(self, path: Path, limits: Limits, start: float) -> None:
        self.path, self.limits, self.start = path, limits, start
        self.elements = self.cells = 0  # all parts

    def scan(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        self.part, self.depth, self.chars, self.tag = info.filename, 0, 0, ""
        self.text: list[str] = []
        p = expat.ParserCreate(namespace_separator=" ")
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartDoctypeDeclHandler = lambda *_: self._fail("declares a DTD (<!DOCTYPE>); XML entity expansion "
                                                          "('billion laughs') is refused")
        p.EntityDeclHandler = lambda *_: self._fail("declares an XML entity; entity expansion is refused")
        p.ExternalEntityRefHandler = lambda *_: self._fail("refers to an external XML entity")
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._chars
        try:
            with zf.open(info) as fh:
                while chunk := fh.read(1 << 20):
                    p.Parse(chunk, False)
                    self._budget()
                p.Parse(b"", True)
        except expat.ExpatError as exc:
            raise _refuse(self.path, f"part {self.part} is not well-formed XML ({exc})") from None

    def _fail(self, why: str) -> NoReturn:
        raise _refuse(self.path, f"part {self.part}: {why}")

    def _budget(self) -> None:
        if time.process_time() - self.start > self.limits.cpu_s:
            self._fail(f"checking the package took more than its {self.limits.cpu_s:.0f} s CPU budget")

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        self.elements += 1
        if self.depth > self.limits.depth:
            self._fail(f"XML nested deeper than {self.limits.depth} levels")
        if self.elements > self.limits.elements:
            self._fail(f"more than {self.limits.elements:,} XML elements in the package")
        if self.elements % 4096 == 0:
            self._budget()
        local = name.rsplit(" ", 1)[-1]
        self.tag, self.text, self.chars = local, [], 0
        if local == "c":
            self.cells += 1
            if self.cells > self.limits.cells:
                self._fail(f"more than {self.limits.cells:,} cells in the workbook (a planning workbook has "
                           "a few thousand)")
        elif local == "Relationship":
            target = attrs.get("Target", "")
            if attrs.get("TargetMode", "").lower() == "external":
                self._fail(f"an external relationship to {target[:120]!r} (a link outside the workbook)")
            if FORBIDDEN_RELS.search(attrs.get("Type", "")):
                self._fail(f"a relationship of type {attrs.get('Type', '').rsplit('/', 1)[-1]} (to {target[:80]!r})")
        elif local in ("Override", "Default"):
            ctype = attrs.get("ContentType", "")
            if FORBIDDEN_TYPES.search(ctype):
                self._fail(f"content type {ctype} (macros, templates, external links or objects)")
            if attrs.get("PartName", "").lower() == "/xl/workbook.xml" and ctype != WORKBOOK_TYPE:
                self._fail(f"the workbook part has content type {ctype!r}, not an .xlsx workbook's {WORKBOOK_TYPE}")
        elif local in ("externalReference", "externalReferences", "oleObject", "control", "webPublishItem"):
            self._fail(f"a <{local}> element (a link or object outside the workbook's own cells)")

    def _chars(self, data: str) -> None:
        self.chars += len(data)
        if self.tag in FORMULA_TAGS:
            if self.chars > self.limits.formula_chars:
                self._fail(f"a formula longer than {self.limits.formula_chars:,} characters")
            self.text.append(data)
        elif self.chars > self.limits.text_chars:
            self._fail(f"a text longer than Excel's {self.limits.text_chars:,} characters per cell")

    def _end(self, name: str) -> None:
        self.depth -= 1
        if self.tag in FORMULA_TAGS and self.text:
            formula = "".join(self.text)
            if why := formula_danger(formula):
                self._fail(f"a formula with {why} ({formula[:80]!r})")
        self.tag, self.text, self.chars = "", [], 0

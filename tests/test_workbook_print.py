"""Proof on paper: the planning workbook printed to PDF by LibreOffice (one soffice run for every case, the
printed() batch) reads right: the key results on page 1, every sheet one page wide with no ###, money as money, and
every message that starts printing printed to its end, narrow cells printing the way to it instead.
Skips where LibreOffice or pdftotext is absent, except under CI=true, where it fails.
"""

from __future__ import annotations

import atexit
import functools
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import openpyxl
import pytest

from named_edits import Edits
from requires import require
from test_workbook_bounds import DAYS_MESSAGE, DAYS_SHORT, HOURS_SHORT, TINY_MFU
from test_workbook_libreoffice import (
    ERROR_VALUES,
    SEED002,
    _first_missing,
    _message,
    require_libreoffice,
    set_inputs,
)
from xlcalc import catalog
from xlcalc.outputs import OUTPUT_BY_NAME, OUTPUTS
from xlcalc.scenario import INPUT_BY_NAME, load_scenario
from xlcalc.workbook import build
from xlcalc.workbook.rendering import dependencies
from xlcalc.workbook.start import KEY_RESULTS

# --- print: soffice --convert-to pdf straight from the .xlsx -----------------------------------------------

def _pdftotext():
    require(shutil.which("pdftotext"), "pdftotext (poppler-utils) is not installed")


@functools.cache
def printed() -> dict:
    """PDFs as a user prints them, in two soffice runs: the seed 002 workbook saved as .ods, then one run printing
    seed002.xlsx (an A800: no purchase price), gap.xlsx (a GPU with a figure left unpublished, on Inputs and in the
    last Scenarios column), priced.xlsx (a GPU with a purchase price), pp3.xlsx (PP 3 on its 80 layers: a layout
    that does not split into whole stages), par.xlsx (such layouts typed into two Parallelism rows: PAR_ROWS),
    inputs.xlsx (FAILING_INPUTS: a value pasted past its check and a framework look-up with no row), pasted.xlsx
    (PASTED_VALUES: the issue's pasted values and a GPU typed wrong), bound.xlsx (an MFU within its range that puts
    the days, GPU-hours and GPUs for the deadline past their bounds) and that .ods (as seed002-ods)."""
    require_libreoffice()
    from xlcalc.workbook.libreoffice import convert, to_pdf

    work = Path(tempfile.mkdtemp(prefix="xlcalc-pdf-"))
    atexit.register(shutil.rmtree, work, True)
    src = work / "in"
    src.mkdir()
    build(src / "seed002.xlsx", [load_scenario(SEED002)])
    book = Edits(src / "seed002.xlsx")
    set_inputs(book, src / "gap.xlsx", {"GPU_Type": _gap_gpu().id, _scenario_gpu_cell(book.wb): _gap_gpu().id})
    set_inputs(book, src / "priced.xlsx", {"GPU_Type": _priced_gpu()})
    set_inputs(book, src / "pp3.xlsx", {"PP_Size": 3})
    set_inputs(book, src / "inputs.xlsx", FAILING_INPUTS)
    set_inputs(book, src / "pasted.xlsx", PASTED_VALUES)
    set_inputs(book, src / "bound.xlsx", {"MFU": TINY_MFU})
    set_inputs(book, src / "par.xlsx", {f"Parallelism!{col}{r}": v for r, (tp, pp, _, _) in PAR_ROWS.items()
                                        for col, v in (("A", tp), ("B", pp))})
    ods, = convert([src / "seed002.xlsx"], work / "ods", "ods", ".ods")
    ods = ods.rename(src / "seed002-ods.ods")
    pdfs = to_pdf([src / "seed002.xlsx", src / "gap.xlsx", src / "priced.xlsx", src / "pp3.xlsx", src / "par.xlsx",
                   src / "inputs.xlsx", src / "pasted.xlsx", src / "bound.xlsx", ods], work / "out")
    return {p.stem: p for p in pdfs} | {f"{p.stem}.xlsx": src / f"{p.stem}.xlsx" for p in pdfs}


def _pdf_text(path: Path, first: int | None = None, last: int | None = None, pitch: int | None = None) -> str:
    """Its text as printed (pdftotext -layout), or on one grid of ``pitch`` points for every page (-fixed)."""
    mode = ["-fixed", str(pitch)] if pitch else ["-layout"]
    args = ["pdftotext", *mode] + (["-f", str(first), "-l", str(last)] if first else []) + [str(path), "-"]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def test_pdf_export_straight_from_the_xlsx_has_the_key_results_on_page_one():
    _pdftotext()
    pdf = printed()["seed002"]
    assert pdf.stat().st_size > 10_000
    page1 = _pdf_text(pdf, 1, 1)
    hours = 8.4e23 / (312e12 * 0.4) / 3600          # seed 002 §7.3: 70B x 2T on A800 at MFU 0.4
    lines = {line.split("  ")[0].strip(): line.split()[-1] for line in page1.splitlines() if "  " in line.strip()}
    assert lines["GPUs in the plan"] == "1,024"
    assert lines["Training days on those GPUs"] == "76.08"
    # failures priced from goodput at Young's interval on 1024 GPUs (per-GPU MTBF 50,677 h from Llama 3's
    # 419 interruptions in 54 days on 16,384 GPUs; 60 s saves, 600 s restarts: the scenario's defaults)
    m, save, restart = 50_677 / 1024, 60 / 3600, 600 / 3600
    tau = math.sqrt(2 * save * m)
    goodput = 1 - save / tau - (tau / 2 + restart) / m
    assert lines["Total cost incl. training tax (USD)"] == f"${hours * 2.0 / goodput:,.0f}"
    assert "Start" in page1 and "page 1 of" in page1
    assert "Input check OK: every key result is computed" in " ".join(page1.split())  # the master check, page 1
    whole = _pdf_text(pdf)
    pages = whole.count("\f")
    # every sheet fits to one page wide: no 66-page print-out (18 sheets; rows tall enough for their messages)
    assert 8 <= pages <= 40, pages
    _no_error_value_nor_hashes(whole.split("\f"))  # no ###: no column too narrow
    # page 1 names every sheet; the pages follow that order (the footer names each page's sheet)
    contents = " ".join(page1.split()).split("Sheets, in print order: ", 1)[1].split(".", 1)[0].split(", ")
    assert len(set(contents)) == len(contents) == 18, contents
    footers = [re.findall(r"(\w+) \u2014 page \d+ of", page) for page in whole.split("\f") if page.strip()]
    order = [f[-1] for f in footers]
    assert [s for i, s in enumerate(order) if i == 0 or order[i - 1] != s] == contents
    # the Checks sheet prints every check: the Inputs' (A:C) and the other sheets' input cells and layouts (E:G)
    checks = " ".join(page for page, f in zip(whole.split("\f"), order) if f == "Checks")
    for line in (r"Params_B Inputs!B\d+ OK", r"Parallelism!A5 TP_Size OK", r"Parallelism![A-Z]+5 Layout_Check OK"):
        assert re.search(line, " ".join(checks.split())), line
    # a section heading prints once, where it stands: not repeated as the title row of each page after it
    budget = [page for page, f in zip(whole.split("\f"), order) if f == "Budget"]
    assert len(budget) >= 2 and sum("Failures and checkpoints" in page for page in budget) == 1


def test_pdf_via_ods_prints_money_as_money():
    """The .xlsx saved as .ods, then printed: the Start sheet's cost cells keep their dollar format."""
    _pdftotext()
    pdf = printed()["seed002-ods"]
    page1 = _pdf_text(pdf, 1, 1)
    lines = {line.split("  ")[0].strip(): line.split()[-1] for line in page1.splitlines() if "  " in line.strip()}
    for label in ("Total cost incl. training tax (USD)", "Compute: GPU-hours x price (USD)",
                  "Budget left (negative = over)"):
        assert re.fullmatch(r"-?\$[0-9]{1,3}(,[0-9]{3})*", lines[label]), (label, lines[label])
    hours = 8.4e23 / (312e12 * 0.4) / 3600          # seed 002 §7.3, at its $2 per GPU-hour
    assert lines["Compute: GPU-hours x price (USD)"] == f"${hours * 2.0:,.0f}"


def _gap_gpu():
    """A catalog GPU with a figure the Start sheet needs left unpublished (the first such row)."""
    return next(g for g in catalog.gpus() if _first_missing(g))


def _scenario_gpu_cell(wb) -> str:
    """The GPU type cell of the last Scenarios column (``Scenarios!E8``)."""
    ws = wb["Scenarios"]
    row = next(r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == "GPU type")
    col = max(c.column_letter for c in ws[4] if c.value)
    return f"Scenarios!{col}{row}"


def test_pdf_of_a_gpu_without_a_published_figure_shows_the_message():
    _pdftotext()
    gpu = _gap_gpu()
    page1 = " ".join(_pdf_text(printed()["gap"], 1, 1).split())
    assert _message(gpu, *_first_missing(gpu)[0]) in page1
    for error in ERROR_VALUES:
        assert error not in page1, error


def _priced_gpu() -> str:
    """A catalog GPU with a purchase price (the first)."""
    return next(g.id for g in catalog.gpus() if catalog.purchase_price(g.id) is not None)


# one line of 11-point text, in points (Excel's default row is 15 points); one character per unit of column width
# (a unit is the width of a digit: running text averages narrower, so this over-counts the lines)
LINE_PT = 13


def _lines_needed(text: str, width: float) -> int:
    return math.ceil(len(text) / width)


def _cell_width(ws, at: str) -> float:
    """The width (in column-width units) a cell's text has: its merged range's columns, or its own column."""
    from openpyxl.utils import get_column_letter
    from openpyxl.utils.cell import range_boundaries

    c1 = c2 = ws[at].column
    for rng in ws.merged_cells.ranges:
        if ws[at].coordinate in rng:
            c1, _, c2, _ = range_boundaries(str(rng))
    return sum(ws.column_dimensions[get_column_letter(c)].width or 13 for c in range(c1, c2 + 1))


def _budget_row(ws, starts: str) -> int:
    return next(r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value or "").startswith(starts))


def _messages(stem: str) -> list[tuple[str, str, str]]:
    """(sheet, cell, text) of the messages the printed workbook ``stem`` shows, from the catalog's own sentences:
    the purchase price used on Budget and the own column of its table over time (no purchase price), and Start's
    key results (a figure the catalog leaves unpublished)."""
    wb = openpyxl.load_workbook(printed()[f"{stem}.xlsx"])
    budget = wb["Budget"]
    heading = _budget_row(budget, "Own vs rent (")
    over_time = _budget_row(budget, "Own vs rent over time") + 2
    months = [r for r in range(over_time, budget.max_row + 1) if isinstance(budget[f"A{r}"].value, int)]
    months = months[:next((i for i, (a, b) in enumerate(zip(months, months[1:])) if b != a + 1), len(months))]
    if stem == "priced":
        buy = catalog.purchase_price(_priced_gpu())
        return [("Budget", f"D{heading}", "Purchase price used: " + catalog.capex_note(buy))]
    if stem == "seed002":
        sentence = str(catalog.missing_capex("a800"))
        labels = {OUTPUT_BY_NAME[n].label for n in OWNING}
        owning = [r for r in range(heading + 1, over_time) if budget[f"A{r}"].value in labels]
        assert len(owning) == len(OWNING)
        first = _budget_row(budget, "Budget-first: ")  # its own column: every row priced at the owned GPU-hour
        bought = [r for r in range(first + 1, budget.max_row + 1) if budget[f"A{r}"].value in BOUGHT]
        assert len(bought) == len(BOUGHT)
        return [("Budget", f"D{heading}", "Purchase price used: " + sentence)] + \
            [("Budget", f"B{r}", sentence) for r in owning] + [("Budget", f"C{r}", sentence) for r in bought] + \
            [("Budget", f"C{r}", sentence) for r in months]
    gpu = _gap_gpu()
    text = _message(gpu, *_first_missing(gpu)[0])
    start = wb["Start"]
    rows = [r for r in range(1, start.max_row + 1) if start[f"B{r}"].value in dict(KEY_RESULTS).values()]
    # the last Scenarios column, on that GPU: its figure's cell and every result over it show the sentence
    scenarios = wb["Scenarios"]
    col = _scenario_gpu_cell(wb).split("!")[1].rstrip("0123456789")
    figure = INPUT_BY_NAME[_first_missing(gpu)[0][1]].label
    over = {o.label for o in OUTPUTS if _first_missing(gpu)[0][1] in dependencies(o.name)}
    results = next(r for r in range(1, scenarios.max_row + 1) if scenarios[f"A{r}"].value == OUTPUTS[0].label)
    shown = [r for r in range(1, results) if scenarios[f"A{r}"].value == figure] + \
        [r for r in range(results, scenarios.max_row + 1) if scenarios[f"A{r}"].value in over]
    assert len(shown) == 1 + len(over) >= 2, (figure, over, shown)
    return [("Start", f"C{r}", text) for r in rows] + [("Scenarios", f"{col}{r}", text) for r in shown]


# the budget-first rows (their labels): what the budget buys, rented and owned
BOUGHT = ("Price of a busy GPU-hour (USD)", "GPUs the budget pays for over the deadline", "GPU-hours the budget buys",
          "Model FLOPs the budget buys", "Largest compute-optimal model (20 tokens/parameter), billions",
          "Its training tokens, trillions")
# the named own vs rent results on Budget that need a purchase price: with none (the A800), each shows its sentence
OWNING = ("Own_Cost_USD", "Own_USD_per_GPU_Hour", "Breakeven_Utilisation", "Breakeven_Months", "Capex_per_GPU_All_In",
          "Hardware_Capex_USD")


@pytest.mark.parametrize("stem", ["seed002", "priced", "gap"])
def test_pdf_prints_every_message_whole_in_rows_tall_enough(stem):
    """A long message (a missing purchase price's sentence on Budget, a figure's on Start and in a Scenarios column
    on a GPU without it) prints whole: wrapped in its cell (merged across the free columns), its row tall enough for
    its lines, so it neither runs off the page nor prints over the row below. A message in a column with text beside it (Budget's own vs rent results and the own
    column of budget-first: their unit or formula to the right) is read down its column of the printed page
    (_printed_in_column)."""
    _pdftotext()
    pdf = printed()[stem]
    page_text = _pdf_text(pdf)
    text = " ".join(page_text.split())
    wb = openpyxl.load_workbook(printed()[f"{stem}.xlsx"])
    messages = _messages(stem)
    assert messages
    for sheet, at, message in messages:
        ws = wb[sheet]
        beside = ws.cell(ws[at].row, ws[at].column + 1).value
        if (sheet == "Budget" and beside is not None) or sheet == "Scenarios":  # read down its printed column
            label = ws[f"A{ws[at].row}"].value
            assert _printed_in_column(page_text, label, message, None if beside is None else str(beside)), \
                (stem, sheet, at, label, message)
        else:
            assert " ".join(message.split()) in text, (stem, sheet, at, message)
        cell = ws[at]
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top", (sheet, at)
        need = _lines_needed(message, _cell_width(ws, at)) * LINE_PT
        assert (ws.row_dimensions[cell.row].height or 0) >= need, (sheet, at, ws.row_dimensions[cell.row].height, need)
    if stem == "gap":  # the Scenarios column's cells: its figure's and every result's over it
        assert len([m for m in messages if m[0] == "Scenarios"]) >= 5
    if stem == "seed002":  # the table's own column: the sentence once per month, whole
        months = messages[-11:]
        assert len(months) == 11 and text.count(" ".join(months[-1][2].split())) >= len(months)
        assert len(messages) == 1 + len(OWNING) + len(BOUGHT) + len(months)


# PP 3 on seed 002's 80 layers: the layout check's message, in the words of xlcalc.layout (as
# tests/test_workbook_checks.py writes it): 26.67 layers a stage
PP3_WHY = (f"pp = 3 is not allowed: pp must be a divisor of layers = 80 (every pipeline stage holds whole layers: "
           f"layers/PP = {round(80 / 3, 2)}; or give an uneven split: layers_per_stage, or first_stage_layers and "
           f"last_stage_layers)")


# Layouts typed into Parallelism rows of seed 002 (80 layers, 1,024 GPUs, CP 1): row -> (TP, PP, the cell the check
# blames, the message in the words of xlcalc.layout as the Checks sheet prints it: without the arithmetic in brackets,
# or only up to "is not allowed" where that line would pass 90 characters (row 8's: 105)
PAR_ROWS = {6: (1, 3, "Parallelism!B6 (PP_Size)", "pp = 3 is not allowed: pp must be a divisor of layers = 80"),
            8: (4, 5, "Parallelism!N8 (Layout_Check)", "n_gpus = 1024 is not allowed")}


def _read_down(lines: list[str], i: int, c: int, length: int, end: int | None = None) -> str:
    """The text of the cell whose first printed line is ``lines[i]`` from character ``c``: its lines read down that
    column, each up to the gap before the next column's text (or up to ``end``, where the next column's text starts:
    columns printed one space apart), without white space, until a blank or ``length``."""
    got = ""
    for below in lines[i:]:
        segment = below[c:end].split("  ", 1)[0]
        if not segment.strip():
            break
        got += "".join(segment.split())
        if len(got) >= length:
            break
    return got


def test_pdf_of_a_layout_that_does_not_divide_prints_its_message_whole_and_points_to_it():
    """PP 3 on the seed's 80 layers, printed: the layout check's message prints whole on the Memory sheet's pages
    (its row wrapped across B:D, tall enough), every memory cell of the Memory and FineTuning sheets prints the way
    to it ("see Memory!B4", the cell of Layout_Check) and no number, and nowhere does the message print clipped: each
    cell that starts it (the Memory sheet's, each Scenarios column's layout check, the Checks sheet's, Start's)
    prints it to its end."""
    _pdftotext()
    pdf = printed()["pp3"]
    wb = openpyxl.load_workbook(printed()["pp3.xlsx"])
    (sheet, at), = wb.defined_names["Layout_Check"].destinations
    pointer = f"see {sheet}!{at.replace('$', '')}"
    assert pointer == "see Memory!B4"
    whole = _pdf_text(pdf)
    pages = whole.split("\f")
    by_sheet, flat = _by_sheet(pages)
    why = " ".join(PP3_WHY.split())
    assert flat["Memory"].count(why) == 1, flat["Memory"][:2000]  # whole, once: the layout check's row
    assert "Layout check (OK = every piece whole) " + why in flat["Memory"]
    assert flat["Start"].count(why) >= 3  # the input check (after the cell it blames) and two key results
    for label in ("Layers on the stage", "Weights", "Total per GPU"):  # the part cells: both stages point to B4
        line = next(line for line in " ".join(by_sheet["Memory"]).splitlines() if line.startswith(label + " "))
        assert line.split()[len(label.split()):][:4] == pointer.split() * 2, (label, line)
    for label in (OUTPUT_BY_NAME[n].label for n in ("Mem_Total_GB", "Fits_GPU", "Max_Micro_Batch", "DP_Size")):
        line = next(line for line in " ".join(by_sheet["Memory"]).splitlines() if line.startswith(label[:40]))
        assert pointer in line, (label, line)
    fine = "\n".join(by_sheet["FineTuning"])
    for label in ("Weights, first stage (frozen base + adapters)", "Memory per GPU, heavier stage", "Fits the GPU?"):
        line = next(line for line in fine.splitlines() if line.startswith(label))
        assert line[len(label):].split()[:2] == pointer.split(), (label, line)
    # no clipped message: each cell that starts it prints all of it, read down its column on one fixed grid
    start, target = "pp = 3 is not allow", "".join(PP3_WHY.split())
    cells = 0
    for name, ps in _by_sheet(_pdf_text(pdf, pitch=3).split("\f"))[0].items():
        lines = "\n".join(ps).splitlines()
        for i, line in enumerate(lines):
            c = line.find(start)
            while c >= 0:
                cells += 1
                if name in ("Start", "Checks") and line.find("(PP_Size): ") == c - len("(PP_Size): "):
                    text = " ".join(" ".join(lines[i:i + 4]).split())  # after the cell it blames, wrapped under it
                    assert why in text, (name, line)
                else:
                    after = line.find(start, c + 1)  # the next column's copy of the message, on the same line
                    assert _read_down(lines, i, c, len(target), after if after >= 0 else None).startswith(target), \
                        (name, line)
                c = line.find(start, c + 1)
    assert cells >= 1 + 3 + 1 + 3  # Memory's, Start's (check and two key results), Checks', three Scenarios columns
    _no_error_value_nor_hashes(pages)


def _as_printed(stem: str) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """The pages of the case ``stem`` as printed (as many as the untouched plan's), by sheet (:func:`_by_sheet`)."""
    _pdftotext()
    pages = _pdf_text(printed()[stem]).split("\f")
    assert len(pages) == len(_pdf_text(printed()["seed002"]).split("\f"))
    return (pages, *_by_sheet(pages))


def _by_sheet(pages: list[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The printed pages by sheet (each page's footer names its sheet), and each sheet's text on one line."""
    by_sheet: dict[str, list[str]] = {}
    for page in pages:
        by_sheet.setdefault((re.findall(r"(\w+) \u2014 page \d+ of", page) or [""])[-1], []).append(page)
    return by_sheet, {name: " ".join(" ".join(ps).split()) for name, ps in by_sheet.items()}


def _no_error_value_nor_hashes(pages: list[str]) -> None:
    for n, page in enumerate(pages, start=1):
        for error in ERROR_VALUES:
            assert error not in page, (n, error)
        assert "###" not in page, (n, [line for line in page.splitlines() if "###" in line][:3])


def _where(wb, name: str) -> str:
    """The cell a defined name points to, as ``Sheet!A1``."""
    (sheet, at), = wb.defined_names[name].destinations
    return f"{sheet}!{at.replace('$', '')}"


def _print_whole(by_sheet: dict[str, list[str]], sentences: dict[str, str]) -> dict[str, int]:
    """On every sheet's printed pages, each message that starts printing (a key of ``sentences``: the start of the
    message that is its value) prints to its end: in the lines under it, or read down its column (``_read_down``).
    A start that begins a longer one found first in the line (the message after the cell it blames) is read there.
    Returns how many messages start on each sheet."""
    starts: dict[str, int] = {}
    for name, ps in by_sheet.items():
        lines = "\n".join(ps).splitlines()
        for i, line in enumerate(lines):
            seen: set[int] = set()
            for start, sentence in sentences.items():
                c = line.find(start)
                while c >= 0:
                    if not any(0 < c - at <= CELL_CHARS for at in seen):
                        seen.add(c)
                        starts[name] = starts.get(name, 0) + 1
                        text = " ".join(" ".join(lines[i:i + 4]).split())  # the cell's wrapped lines under it
                        tail = sentence[sentence.find(start):]
                        assert tail in text or _read_down(lines, i, c, len("".join(tail.split()))).startswith(
                            "".join(tail.split())), (name, line)
                    c = line.find(start, c + 1)
    return starts


CELL_CHARS = len("Scenarios!C100: ")  # the cell a message blames, before its sentence


# Inputs the memory reads, failing: a micro-batch of 0 pasted past its validation (its check refuses it), and
# torchtitan at fp32, a pair the Frameworks sheet does not list (torchtitan offers amp only: the framework inputs of
# the memory hold the look-up's message, "torchtitan at fp32: not on the Frameworks sheet ...")
FAILING_INPUTS = {"Micro_Batch": 0, "Framework": "torchtitan", "Precision": "fp32"}


def test_pdf_of_failing_inputs_prints_pointers_in_the_memory_cells_and_the_message_whole():
    """FAILING_INPUTS, printed: every memory cell of the Memory and FineTuning sheets prints the way to Start's input
    check, "see Start!C3", and no number; Start's input check prints the first failing input's message whole
    (Precision's: the preset choices are checked before the other inputs), and its memory and fit results that
    message; on every sheet every message that starts printing prints to its end (on Memory the layout check's row,
    which shows Micro_Batch's), and the narrow cells of every sheet print the way to it: "see Start!C3" (the
    framework inputs' cells on Inputs and Scenarios too), or in a Scenarios column "Inputs!B29 refused: see Checks"
    (the cell its message blames: the Checks sheet prints that cell's line whole, a long value in it cut to its start
    and "..."); no page more than the untouched plan."""
    from xlcalc.frameworks import FRAMEWORKS

    pages, by_sheet, flat = _as_printed("inputs")  # no page more than the untouched plan
    wb = openpyxl.load_workbook(printed()["inputs.xlsx"])
    assert 8 <= len(pages) - 1 <= 40
    assert wb["Start"]["B3"].value == "Input check"
    pointer = "see Start!C3"

    where = functools.partial(_where, wb)

    precision = (f"{where('Precision')}: Precision = fp32 is not allowed: Precision must be a precision the "
                 f"Frameworks sheet gives for framework torchtitan: {', '.join(FRAMEWORKS['torchtitan'])}, or empty")
    micro = (f"{where('Micro_Batch')}: Micro_Batch = 0 is not allowed: Micro_Batch must be a whole number >= 1 and "
             "<= 1,000,000")
    assert "Input check " + precision in flat["Start"], flat["Start"][:1500]
    for label in ("Memory per GPU (GB)", "Fits in one GPU?"):  # Start's memory results: the message, not the way
        assert f"{label} {precision}" in flat["Start"], label
    assert pointer not in flat["Start"]
    memory = "\n".join(by_sheet["Memory"]).splitlines()
    for label in ("Layers on the stage", "Weights", "Logits and loss buffers", "Recompute working set",
                  "Total per GPU"):  # the part cells: both stages point to Start!C3
        line = next(line for line in memory if line.startswith(label + " "))
        assert line.split()[len(label.split()):][:4] == pointer.split() * 2, (label, line)
    for name in ("DP_Size", "Mem_Total_GB", "Fit_Verdict", "Fits_GPU", "Max_Micro_Batch", "Inflight_First"):
        label = OUTPUT_BY_NAME[name].label
        line = next(line for line in memory if line.startswith(label[:40]))
        assert pointer in line and not re.search(r"\d", line.split(pointer, 1)[1].split("  ")[0]), (name, line)
    fine = "\n".join(by_sheet["FineTuning"]).splitlines()
    for label in ("Weights, first stage (frozen base + adapters)", "Memory per GPU, heavier stage", "Fits the GPU?"):
        line = next(line for line in fine if line.startswith(label))
        assert line[len(label):].split()[:2] == pointer.split(), (label, line)
    assert "Layout check (OK = every piece whole) " + micro in flat["Memory"]  # its row: the input's check, whole
    # on the Memory sheet and Start, every message that starts printing prints to its end
    sentences = {"Micro_Batch = 0 is not allow": micro, "Precision = fp32 is not allow": precision,
                 "torchtitan at fp32: not on the": "torchtitan at fp32: not on the Frameworks sheet \u2014 pick a "
                                                    "Framework and one of the precisions it offers there"}
    # each message also starts with the cell it blames ("Inputs!B29: Mi..."): a cell clipped short of the message
    starts = _print_whole(by_sheet, {where("Micro_Batch") + ": Mi": micro, where("Precision") + ": Pr": precision,
                                     **sentences})
    # Start's input check and its memory and fit results; Memory's layout check row; the Checks sheet's lines; each
    # Scenarios column's layout check (the column's input check's message)
    assert starts["Start"] >= 3 and starts["Memory"] >= 1 and starts["Checks"] >= 2 + 3 and starts["Scenarios"] >= 3
    # the narrow cells print the way to the whole message: Start's input check, or in a Scenarios column the cell its
    # message blames and the Checks sheet, where that cell's line prints whole
    for name in ("Inputs", "Time", "Budget", "FineTuning", "Sensitivity", "Parallelism", "Scenarios"):
        assert pointer in flat[name], name
    assert flat["Inputs"].count(pointer) == 4  # the framework inputs: their look-up's message names no cell
    assert flat["Scenarios"].count(f"{where('Micro_Batch')} refused: see Checks") >= 3 * 5  # in each column
    for checked in ("Grads_Freed", "Logits_Buffer_Bytes"):  # a long value in a check's line: its start and "..."
        assert re.search(rf"Scenarios!C\d+: {checked} = torchtitan at fp32: n\.\.\. is not allowed: {checked} must be",
                         flat["Checks"]), checked
    _no_error_value_nor_hashes(pages)


# The issue's pasted values (MFU 40, utilisation 1.5, a budget of -5) and a GPU typed wrong (its figures' look-ups hold
# "not on the GPUs sheet")
PASTED_VALUES = {"GPU_Type": "h100 sxm", "MFU": 40, "Utilisation": 1.5, "Budget_USD": -5}


def test_pdf_of_pasted_values_prints_every_message_whole_and_the_way_to_it():
    """PASTED_VALUES, printed: Start's input check prints the first failing input's message whole (GPU_Type's), and
    on every sheet every message that starts printing prints to its end; the narrow cells (Inputs' looked-up GPU
    figures, Time, Budget's lines, ranges, own vs rent and budget-first) print "see Start!C3" instead; no error value,
    no ###, no page more than the untouched plan."""
    pages, by_sheet, flat = _as_printed("pasted")
    wb = openpyxl.load_workbook(printed()["pasted.xlsx"])

    where = functools.partial(_where, wb)

    looked_up = "h100 sxm: not on the GPUs sheet \u2014 pick an id from the list"
    allowed = {"MFU": "a number > 0 and <= 1", "Utilisation": "a number >= 0.01 and <= 1",
               "Budget_USD": "a number > 0 and <= 1e+13"}  # as tests/test_workbook_checks.py's PASTED
    sentences = {f"{where(n)}: {n} = {PASTED_VALUES[n]} is not allowed: {n} must be {a}" for n, a in allowed.items()}
    gpu = (f"{where('GPU_Type')}: GPU_Type = h100 sxm is not allowed: GPU_Type must be an id from the list on the GPUs "
           "sheet, or empty")
    assert "Input check " + gpu in flat["Start"], flat["Start"][:1500]
    by_start = {m[:20]: m for m in (*sentences, gpu)} | {m[m.index(": ") + 2:][:20]: m[m.index(": ") + 2:]
                                                         for m in (*sentences, gpu)} | {looked_up[:24]: looked_up}
    starts = _print_whole(by_sheet, by_start)
    assert starts["Start"] >= 1 + 5 and starts["Checks"] >= 5, starts  # the key results wait for the peak's message
    pointer = "see Start!C3"
    for name in ("Inputs", "Time", "Budget"):
        assert pointer in flat[name], name
    assert flat["Inputs"].count(pointer) >= 3  # the GPU's figures: peak, memory, GPUs per node
    _no_error_value_nor_hashes(pages)


def test_pdf_of_results_past_their_bounds_prints_every_message_whole_and_the_way_to_it():
    """MFU 1e-300 (within its range) puts days, GPU-hours and GPUs for the deadline past their formulas' bounds:
    Start's input check prints the whole message naming the inputs (test_workbook_bounds.DAYS_MESSAGE); the
    results' own cells and those that compute them over other cells (a Scenarios column, a Sensitivity grid point, a
    Ranges row's end, the full fine-tune's days) print the short one whole, "Train_Days over 100,000,000"; the cells
    computed from the plan's results print "see Start!C3" (Time, Budget, FineTuning, Sensitivity's spend); every
    message that starts
    printing prints to its end, no error value, no ###, no page more than the untouched plan."""
    pages, by_sheet, flat = _as_printed("bound")
    assert "Input check " + DAYS_MESSAGE in flat["Start"], flat["Start"][:1500]
    shorts = (DAYS_SHORT, HOURS_SHORT, "GPUs_for_Deadline over 10,000,000", "TRAIN_DAYS over 100,000,000")
    # a short message starts with the result's name and "over" (a narrow cell wraps the bound to its next line)
    starts = _print_whole(by_sheet, {DAYS_MESSAGE[:20]: DAYS_MESSAGE} | {m[:m.index(" over") + 5]: m for m in shorts})
    # Start: the input check and the key results computed from the days; Time: the 3 bounded results; FineTuning: the
    # full fine-tune's days; a Scenarios column: the 3 bounded results and the results computed from them, in each
    # of the 3 columns; Budget: the Ranges rows of MFU and tokens (days and cost at both ends)
    assert starts["Start"] >= 5 and starts["Time"] >= 3 and starts["FineTuning"] >= 1, starts
    assert starts["Scenarios"] >= 3 * 10 and starts["Budget"] >= 4, starts
    for name in ("Time", "Budget", "FineTuning", "Sensitivity"):
        assert "see Start!C3" in flat[name], name
    _no_error_value_nor_hashes(pages)


def test_pdf_of_parallelism_rows_that_do_not_divide_prints_short_whole_messages_and_pointers():
    """Two Parallelism rows whose layouts do not divide (PAR_ROWS), printed: each row's layout check cell prints its
    reason short and whole ("pp = 3 refused"; "refused: see Checks" where the input and its value are longer), the
    row's results print the way to it ("see column N") and no number; the Checks sheet prints each row's line whole
    in one line (the cell it blames, then the message without the arithmetic in brackets, which it never starts);
    Start's input check prints the first row's whole message. Every message that starts printing prints to its end,
    and the printed pages are as many as the untouched plan's."""
    pages, by_sheet, flat = _as_printed("par")  # no page more than the untouched plan
    par = flat["Parallelism"]
    assert par.count("pp = 3 refused") == 1 and par.count("refused: see Checks") == 1, par[:3000]
    assert "is not allowed" not in par  # no message starts in the table's narrow cells
    # each row's results point to its layout check cell: DP, model states, activations, total, fits, micro-batch,
    # the stages' totals, layers, parameters, activation bytes, in flight (15 a row)
    assert par.count("see column N") == 15 * len(PAR_ROWS), par.count("see column N")
    checks = flat["Checks"]
    for r, (_, _, where, why) in PAR_ROWS.items():
        assert f"{where}: {why}" in checks, (r, checks[:3000])
        assert f"{where}: {why} (" not in checks and f"{where}: {why}:" not in checks  # nothing more is started
    assert "every pipeline stage holds whole" not in checks and "data parallelism needs whole" not in checks
    pp3 = PAR_ROWS[6]
    assert f"{pp3[2]}: {PP3_WHY}" in flat["Start"]  # the master check: the first failing row's message whole
    # every message that starts printing prints to its end (the whole message, or the Checks line without brackets)
    starts = 0
    for name, ps in by_sheet.items():
        lines = "\n".join(ps).splitlines()
        for i, line in enumerate(lines):
            for start in ("pp = 3 is not allow", "n_gpus = 1024 is not allow"):
                c = line.find(start)
                if c < 0:
                    continue
                starts += 1
                text = " ".join(" ".join(lines[i:i + 4]).split())  # the cell's wrapped lines under it
                if " ".join(PP3_WHY.split()) in text:
                    continue
                why = PAR_ROWS[6 if start.startswith("pp") else 8][3]  # else the Checks line: whole, no brackets
                tail = text[text.find(start):]
                assert tail.startswith(why), (name, line)
                assert not tail[len(why):].startswith((" (", ":")), (name, line)
    assert starts >= 2 + 1  # the two Checks lines and Start's input check
    _no_error_value_nor_hashes(pages)


def _printed_in_column(layout_text: str, label: str, message: str, beside: str | None) -> bool:
    """Whether ``message`` prints whole in the cell beside its row's ``label``, as pdftotext -layout lays the page
    out: the cell's wrapped lines read down the column where its first line starts, each line up to the gap before
    the next column's text, or up to where the text ``beside`` it starts on the first line (None: the page's last
    column, Scenarios' last); compared without white space, as a line may break inside a word or at a hyphen. The row is found by the label's first 24 characters
    (a long label wraps in its cell)."""
    target = "".join(message.split())
    first, head = message.split()[0], beside.split()[0] if beside else None
    lines = layout_text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(label[:24]) or (c := line.find(first, 24)) < 0:
            continue
        d = line.find(head, c + len(first)) if head else -1
        got = ""
        for below in lines[i:]:
            segment = below[c:]
            if d > 0:  # up to the first space from one character before the text beside (the layout's grid rounds)
                cut = segment.find(" ", d - c - 1)
                segment = segment[:cut] if cut >= 0 else segment
            segment = segment.split("  ", 1)[0]
            if not segment.strip():
                break
            got += "".join(segment.split())
            if len(got) >= len(target):
                break
        if got.startswith(target):
            return True
    return False

"""The planning workbook on screen and on paper, as built: page setup, titles, column widths, messages that fit or wrap,
what the Start and Checks sheets show."""

from __future__ import annotations

import math
import re

import openpyxl
import pytest

from seed002_workbook import ROOT, TEMPLATES
from xlcalc.scenario import load_scenario


def test_page_setup_fits_every_sheet_to_one_page_wide(formulas_wb):
    for ws in formulas_wb.worksheets:
        assert ws.print_area, ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        # as many pages tall as it takes (0), but StepTime: one chain read top to bottom, on one page
        tall = 1 if ws.title == "StepTime" else 0
        assert ws.page_setup.fitToWidth == 1 and ws.page_setup.fitToHeight == tall, ws.title
        # a title row repeated on every page: the sheet's title (row 1) or its table's column headings, which sit
        # right above the frozen panes; never a section heading from inside the sheet
        m = re.fullmatch(r"\$(\d+):\$(\d+)", ws.print_title_rows or "")
        assert m and m[1] == m[2], (ws.title, ws.print_title_rows)
        row = int(m[1])
        if row != 1:
            assert ws.freeze_panes and int(re.sub(r"[A-Z]", "", ws.freeze_panes)) == row + 1, ws.title
            assert all(c.font.b for c in ws[row] if c.value), (ws.title, row)  # headings, every one bold
            assert len([c for c in ws[row] if c.value]) >= 2, (ws.title, row)  # a table's, not one section's
    assert formulas_wb["Budget"].print_title_rows == "$1:$1"  # not "Failures and checkpoints" on every page
    area = formulas_wb["Start"].print_area
    assert area.endswith("$A$1:$D$" + area.rsplit("$", 1)[1])
    labels = [formulas_wb["Start"][f"B{r}"].value for r in range(1, 12)]
    for label in ("GPUs in the plan", "Training days on those GPUs", "Total cost incl. training tax (USD)"):
        assert label in labels  # near the top: page 1 of a print-out


def test_start_names_every_sheet_in_print_order(formulas_wb):
    ws = formulas_wb["Start"]
    (row,) = [r for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value == "Contents"]
    assert ws[f"C{row}"].value == "Sheets, in print order: " + ", ".join(formulas_wb.sheetnames) + "."
    assert row <= int(ws.print_area.rsplit("$", 1)[1])  # on the printed page 1


def test_parallelism_columns_fit_their_widest_values(formulas_wb, values_wb):
    """Every number of the Parallelism table fits its column as formatted (else a print-out shows ###)."""
    ws, formulas = values_wb["Parallelism"], formulas_wb["Parallelism"]
    for col in range(1, ws.max_column + 1):
        letter = openpyxl.utils.get_column_letter(col)
        width = formulas.column_dimensions[letter].width
        for r in range(5, ws.max_row + 1):
            v, fmt = ws.cell(r, col).value, formulas.cell(r, col).number_format
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                decimals = len(fmt.split(".")[1]) if "." in fmt and "0.00" in fmt else 0
                shown = f"{v:,.{decimals}f}" if "," in fmt else f"{v:.{decimals}f}"
                assert len(shown) + 2 <= width, (letter, r, shown, width)


def test_titles_are_built_from_the_inputs(formulas_wb, values_wb):
    assert formulas_wb["Start"]["C2"].value.startswith('=IF(Model_Preset="","",')  # the model's name once picked
    assert "&ROUND(Params_B,1)&" in formulas_wb["Start"]["C2"].value
    # seed 002 §7.3: 70B, 2T tokens, 1024 A800, MFU 0.4; the template's price $2/GPU-hour
    assert values_wb["Start"]["C2"].value == \
        f"70B parameters, 2T tokens on 1024 x {_gpu_name('a800')} at MFU 40%, $2 per GPU-hour"
    titles = [values_wb["Scenarios"][f"{c}5"].value for c in "CDE"]
    for title, gpu in zip(titles, ("a800", "h100-sxm", "ascend-910b")):
        assert f"on 1024 x {_gpu_name(gpu)} at MFU 40%" in title
    assert "A800" not in titles[1] and "A800" not in titles[2]  # no "...1024 A800 ... on NVIDIA H100"


def _gpu_name(gpu_id):
    from xlcalc import catalog
    return catalog.get_gpu(gpu_id).name


def test_start_sheet_and_readme_say_how_libreoffice_recalculates_on_load(formulas_wb):
    # LibreOffice's default profile shows an .xlsx's saved values; its help names the option (Formula options,
    # "Recalculation on File Load", "Excel 2007 and newer": "Always recalculate")
    path = "Tools > Options > LibreOffice Calc > Formula > Recalculation on File Load"
    ws = formulas_wb["Start"]
    rows = {ws[f"B{r}"].value: ws[f"C{r}"].value for r in range(1, ws.max_row + 1)}
    hint = rows["Recalculation"]
    assert "Excel recalculates on open" in hint and path in hint and "Always recalculate" in hint
    area = ws.print_area.rsplit("$", 1)[1]
    row = next(r for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value == "Recalculation")
    assert row <= int(area)  # printed with the rest of the Start sheet
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert path in readme and "Always recalculate" in readme and "Excel recalculates" in readme


def test_scenarios_price_sentences_wrap_in_rows_tall_enough(formulas_wb, values_wb):
    """A Scenarios column whose GPU has no purchase price (seed 002's A800) shows the catalog's sentence in its
    purchase-price cell and in every owning result: wrapped at the top of its column, the row tall enough
    for the sentence at one character per width unit and 13 points a line (a conservative count of its lines)."""
    from xlcalc import catalog

    sentence = str(catalog.missing_capex("a800"))
    ws, shown = formulas_wb["Scenarios"], values_wb["Scenarios"]
    col = next(c for c in "CDEFG" if ws[f"{c}4"].value and shown[f"{c}8"].value == "a800")  # the GPU type row
    rows = [r for r in range(1, ws.max_row + 1) if shown[f"{col}{r}"].value == sentence]
    labels = {ws[f"A{r}"].value for r in rows}
    assert "Purchase price per GPU (USD)" in labels and "Own: cost of one busy GPU-hour" in labels, labels
    width = ws.column_dimensions[col].width
    for r in rows:
        cell = ws[f"{col}{r}"]
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top", (r, ws[f"A{r}"].value)
        assert (ws.row_dimensions[r].height or 0) >= math.ceil(len(sentence) / width) * 13, (r, ws[f"A{r}"].value)


def test_the_checks_sheet_prints_every_check(formulas_wb):
    """The Checks sheet's print area holds the layout check and every input's check (A:C, from the title) and every
    check of the other sheets' input cells and Parallelism layouts (E:G, from its heading), and none of the cells that
    gather them (the working cells below the input checks)."""
    from openpyxl.utils.cell import range_boundaries

    ws = formulas_wb["Checks"]
    areas = [range_boundaries(a.split("!")[-1].replace("$", "")) for a in ws.print_area.split(",")]
    assert len(areas) == 2, ws.print_area

    def printed(col: int, row: int) -> bool:
        return any(c1 <= col <= c2 and r1 <= row <= r2 for c1, r1, c2, r2 in areas)

    inputs = [r for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value and str(ws[f"B{r}"].value).count("!") == 1
              and ws[f"A{r}"].value in ws.parent.defined_names]
    others = [r for r in range(1, ws.max_row + 1) if ws[f"G{r}"].data_type == "f"]
    gathering = [r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value or "").endswith(" inputs")]
    assert len(inputs) > 60 and len(others) > 300 and gathering
    layouts = [r for r in others if ws[f"F{r}"].value == "Layout_Check"]
    assert len(layouts) == len([r for r in range(5, 200) if formulas_wb["Parallelism"][f"A{r}"].value is not None])
    for r in inputs:
        assert all(printed(c, r) for c in (1, 2, 3)), r
    for r in others:
        assert all(printed(c, r) for c in (5, 6, 7)), r
    assert printed(1, 1) and printed(3, 4)  # the title and the layout check
    for r in gathering:
        assert not printed(3, r), r


# A catalog's message in a cell (the engine's value of the workbook's formulas): a GPU without a published figure
# (its GPUs per node) on Inputs and in the last Scenarios column, a GPU and tier without a rental rate, a GPU without
# a purchase price (seed 002's A800). The sentences are written here from the catalog's gaps.
def _gap_picks():
    from xlcalc import catalog

    gap = next(g.id for g in catalog.gpus() if g.gpus_per_node is None)
    rated = {(p.gpu, p.tier) for p in catalog.prices() if p.tier and p.usd_per_gpu_hour is not None}
    gpu, tier = next((g.id, t) for g in catalog.gpus() for t in catalog.PRICE_TIERS
                     if (g.id, t) not in rated and t != "assumed" and catalog.get_gpu(g.id).gpus_per_node)
    no_buy = next(g.id for g in catalog.gpus() if catalog.purchase_price(g.id) is None and g.gpus_per_node)
    return [({"GPU_Type": gap, "Scenarios!E8": gap},
             f"{gap}: no published GPUs per node on the GPUs sheet \u2014 type it in GPUs_per_Node"),
            ({"GPU_Type": gpu, "Price_Tier": tier},
             f"{gpu}: no published {tier} price on the Prices sheet \u2014 type it in USD_per_GPU_Hour"),
            ({"GPU_Type": no_buy}, str(catalog.missing_capex(no_buy)))]


@pytest.mark.parametrize("case", range(3))
def test_every_cell_showing_a_catalog_message_fits_it_or_wraps_in_a_row_tall_enough(case):
    """Every formula cell of every sheet whose value is a catalog's sentence (or holds it) either fits it on one line
    of its width (merged width where merged) or wraps it at the top in a row tall enough for it at one character
    per width unit and 13 points a line (a conservative count of its lines)."""
    from openpyxl.utils import get_column_letter
    from openpyxl.utils.cell import range_boundaries

    from xlcalc.workbook import layout
    from xlcalc.workbook.writer import to_workbook

    picks, sentence = _gap_picks()[case]
    book = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")]).book
    assert book.value("Scenarios", "A8") == "GPU type"
    for name, value in picks.items():
        sheet, at = name.split("!") if "!" in name else book.names[name]
        book.cell(sheet, at).value = value
    values = book.cached_values()
    wb = to_workbook(book)
    shown = [(s, at, v) for (s, at), v in values.items() if isinstance(v, str) and sentence in v]
    assert len(shown) >= 5, (sentence, shown)
    for s, at, text in shown:
        ws = wb[s]
        c1 = c2 = ws[at].column
        for rng in ws.merged_cells.ranges:
            if at in rng:
                c1, _, c2, _ = range_boundaries(str(rng))
        width = sum(ws.column_dimensions[get_column_letter(c)].width or 13 for c in range(c1, c2 + 1))
        if len(text) <= width:
            continue
        cell = ws[at]
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top", (s, at, text)
        need = math.ceil(len(text) / width) * 13
        assert (ws.row_dimensions[cell.row].height or 0) >= need, (s, at, ws.row_dimensions[cell.row].height, need)

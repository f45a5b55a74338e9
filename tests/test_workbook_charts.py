"""The planning workbook's charts as built: each plots the whole of its table, over the cells it names."""

from __future__ import annotations

import math
import re
import zipfile

import openpyxl
import pytest

from seed002_workbook import TEMPLATES
from xlcalc.scenario import load_scenario


def _chart_refs(path):
    """Per chart part: (values range, categories range) of each series (a scatter's y and x values)."""
    out = {}
    with zipfile.ZipFile(path) as zf:
        for n in zf.namelist():
            if n.startswith("xl/charts/chart"):
                xml = zf.read(n).decode()
                sers = re.findall(r"<(?:c:)?ser>.*?</(?:c:)?ser>", xml, re.S)
                out[n] = [(re.search(r"<(?:c:)?(?:val|yVal)>.*?<(?:c:)?f>(.*?)</(?:c:)?f>", x, re.S).group(1),
                           re.search(r"<(?:c:)?(?:cat|xVal)>.*?<(?:c:)?f>(.*?)</(?:c:)?f>", x, re.S).group(1))
                          for x in sers]
    return out


def _rows(ref):
    m = re.fullmatch(r"'?(\w+)'?!\$([A-Z]+)\$(\d+):\$([A-Z]+)\$(\d+)", ref)
    assert m, ref
    return m[1], m[2], int(m[3]), m[4], int(m[5])


def test_every_series_covers_the_rows_of_its_categories(seed002):
    charts = _chart_refs(seed002[0])
    assert charts
    for part, series in charts.items():
        assert series, part
        for val, cat in series:
            vs, vc1, v1, vc2, v2 = _rows(val)
            cs, _, c1, _, c2 = _rows(cat)
            assert vs == cs and vc1 == vc2 and (v1, v2) == (c1, c2), (part, val, cat)


def test_sensitivity_and_memory_charts_plot_their_whole_tables(seed002, formulas_wb):
    lay = seed002[1]
    tables = lay.extras["sensitivity"]
    series = [s for refs in _chart_refs(seed002[0]).values() for s in refs]
    ws = formulas_wb["Sensitivity"]
    for key in ("days", "spend"):
        t = tables[key]
        first, last = t["head"] + 1, t["head"] + t["rows"]
        assert ws[f"A{last + 1}"].value is None  # the table ends there
        mine = [s for s in series if s[1] == f"'Sensitivity'!$A${first}:$A${last}"]
        cols = {_rows(v)[1] for v, _ in mine}
        assert cols == {chr(ord("A") + j) for j in range(1, t["cols"] + 1)}, (key, mine)  # every MFU column
    mem = [s for s in series if s[0].startswith("'Memory'!")]
    assert len(mem) == 1
    _, _, first, _, last = _rows(mem[0][0])
    labels = [formulas_wb["Memory"][f"A{r}"].value.strip() for r in range(first, last + 1)]
    from xlcalc.stage_memory import PARTS
    assert labels == [label for _, label in PARTS]  # every part of the (first) stage, weights to other


def test_monthly_spend_grows_with_the_gpu_count(seed002, values_wb):
    """Total cost is the same GPU-hours at any GPU count; what grows is the spend per 30 days (x GPUs)."""
    t = seed002[1].extras["sensitivity"]["spend"]
    ws = values_wb["Sensitivity"]
    for j in range(t["cols"]):
        col = chr(ord("B") + j)
        gpus = [ws[f"A{t['head'] + 1 + i}"].value for i in range(t["rows"])]
        spend = [ws[f"{col}{t['head'] + 1 + i}"].value for i in range(t["rows"])]
        # independent arithmetic: 30 days of N GPUs at $2/GPU-hour (no power price) plus the failures'
        # share 1/goodput - 1, goodput at Young's interval on N GPUs (per-GPU MTBF 50,677 h: Llama 3's
        # 419 interruptions in 54 days on 16,384 GPUs; 60 s saves, 600 s restarts: the scenario's defaults)
        def failures(n):
            m, save, restart = 50_677 / n, 60 / 3600, 600 / 3600
            tau = math.sqrt(2 * save * m)
            return 1 / (1 - save / tau - (tau / 2 + restart) / m) - 1
        assert spend == pytest.approx([n * 24 * 30 * 2.0 * (1 + failures(n)) for n in gpus], rel=1e-9)


def test_memory_chart_sits_below_its_table():
    from xlcalc.workbook import layout
    from xlcalc.workbook.writer import to_workbook

    wb = to_workbook(layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")]).book)
    ws = wb["Memory"]
    last_text = max(c.row for row in ws.iter_rows() for c in row if c.value is not None)
    (chart,) = ws._charts
    col, row = re.fullmatch(r"([A-Z]+)(\d+)", chart.anchor).groups()
    assert col == "A" and int(row) > last_text  # covers no cell with text (notes overflowed under it before)
    assert [b.id for b in ws.row_breaks.brk] == [int(row) - 1]  # and prints on a page of its own


def test_budget_charts_sit_below_its_tables():
    from xlcalc.workbook import layout
    from xlcalc.workbook.writer import to_workbook

    wb = to_workbook(layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")]).book)
    ws = wb["Budget"]
    last_text = max(c.row for row in ws.iter_rows() for c in row if c.value is not None)
    anchors = [re.fullmatch(r"([A-Z]+)(\d+)", c.anchor).groups() for c in ws._charts]
    assert len(anchors) == 3  # cost by category, own vs rent, tornado
    assert all(int(row) > last_text for _, row in anchors)  # none covers a cell with text


def _charts_of(path, sheet: str) -> list:
    """The chart parts drawn on a sheet of the saved package, as parsed XML (in the drawing's order)."""
    import posixpath
    import zipfile

    from defusedxml import ElementTree as ET

    from xlcalc.workbook.cache import sheet_paths

    rel = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"

    def targets(zf, part):
        rels = posixpath.join(posixpath.dirname(part), "_rels", posixpath.basename(part) + ".rels")
        if rels not in zf.namelist():
            return []
        return [posixpath.normpath(posixpath.join(posixpath.dirname(part), r.get("Target")))
                if not r.get("Target").startswith("/") else r.get("Target").lstrip("/")
                for r in ET.fromstring(zf.read(rels)).iter(rel)]

    with zipfile.ZipFile(path) as zf:
        drawings = [t for t in targets(zf, sheet_paths(zf)[sheet]) if "/drawings/" in t]
        return [ET.fromstring(zf.read(t)) for d in drawings for t in targets(zf, d) if "/charts/" in t]


C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"


def _refs(ser, what: str) -> str:
    return ser.find(f"{C}{what}").find(f".//{C}f").text


def test_own_vs_rent_is_a_scatter_over_a_number_axis_of_months(seed002, formulas_wb):
    """Months 0..36, 48, 60 are plotted at their distance (a value axis), both lines straight, reading the
    chart-data columns: the table's cell where it is a number, #N/A (no point) where it is a message."""
    from chart_data import chart_data_rows

    ws = formulas_wb["Budget"]
    scatter = [c for c in _charts_of(seed002[0], "Budget") if c.find(f".//{C}scatterChart") is not None]
    assert len(scatter) == 1
    chart = scatter[0]
    plot = chart.find(f".//{C}plotArea")
    assert plot.find(f"{C}catAx") is None and len(plot.findall(f"{C}valAx")) == 2  # x is a number axis
    assert chart.find(f".//{C}plotVisOnly").get("val") in ("0", "false")  # reads the hidden chart-data columns
    series = plot.findall(f".//{C}ser")
    assert len(series) == 2
    rows = chart_data_rows(formulas_wb)
    months = [r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == 0 and ws[f"A{r + 1}"].value == 3]
    (first,) = months
    assert [ws[f"A{r}"].value for r in range(first, first + 11)] == [0, 3, 6, 9, 12, 18, 24, 30, 36, 48, 60]
    assert rows == range(first, first + 11)  # the block beside the table, row for row
    for ser, table_col in zip(series, "BC"):
        assert ser.find(f"{C}smooth").get("val") in ("0", "false")
        assert _refs(ser, "xVal") == f"'Budget'!$A${first}:$A${first + 10}"
        col = re.fullmatch(rf"'Budget'!\$([A-Z]+)\${first}:\$\1\${first + 10}", _refs(ser, "yVal"))
        assert col, _refs(ser, "yVal")
        for r in rows:  # a number stays, anything else (a message) is #N/A: no point, never $0
            src = f"Budget!${table_col}${r}"
            assert ws[f"{col[1]}{r}"].value == f"=IF(ISNUMBER({src}),{src},NA())"
        at = openpyxl.utils.column_index_from_string(col[1])  # never shown or printed: the table shows the message
        assert any(d.hidden and d.min <= at <= d.max for d in ws.column_dimensions.values()), col[1]


def test_tornado_draws_every_row_and_both_changes_of_its_table(seed002, formulas_wb):
    ws = formulas_wb["Budget"]
    head = next(r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == "input")
    cols = [c.column_letter for c in ws[head] if str(c.value or "").startswith("change at")]
    last = head
    while ws[f"A{last + 1}"].value:
        last += 1
    (tornado,) = [c for c in _charts_of(seed002[0], "Budget") if c.find(f".//{C}barChart") is not None]
    series = tornado.findall(f".//{C}ser")
    assert len(series) == len(cols) == 2  # change at low, change at high
    for ser, col in zip(series, cols):
        assert _refs(ser, "val") == f"'Budget'!${col}${head + 1}:${col}${last}"
        assert _refs(ser, "cat") == f"'Budget'!$A${head + 1}:$A${last}"
    cat_ax = tornado.find(f".//{C}catAx")
    assert cat_ax.find(f"{C}tickLblPos").get("val") == "low"  # names left of the plot, clear of the bars


def test_charts_reference_cells(seed002):
    with zipfile.ZipFile(seed002[0]) as zf:
        charts = [zf.read(n).decode() for n in zf.namelist() if n.startswith("xl/charts/chart")]
    assert len(charts) >= 5  # memory, cost by category, own vs rent, days vs GPUs, cost vs GPUs
    joined = "\n".join(charts)
    # cost by category: the seven lines of the Budget total (rows 21-27); own vs rent: both columns of its chart data
    from xlcalc.workbook.budget_sheet import CHART_DATA_COLS
    rent, own = (f"'Budget'!${c}$" for c in CHART_DATA_COLS[1:])
    for ref in ("'Memory'!$B$10:$B$19", "'Budget'!$B$21:$B$27", rent, own, "'Sensitivity'!"):
        assert ref in joined
    assert all("<numRef>" in c for c in charts)

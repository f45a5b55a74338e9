"""Charts over worksheet cells (so they follow every change): memory, cost, days and cost vs GPUs."""

from __future__ import annotations

from typing import Any

from openpyxl.chart import BarChart, LineChart, PieChart, Reference, ScatterChart, Series


def _place(ws: Any, chart: Any, first: int, last: int, size: tuple[float, float], anchor: str) -> None:
    """The chart's categories (column A, rows first..last), its axes shown (openpyxl 3.1 leaves an axis's delete
    unset: hidden; a pie has none), its (height, width) and its place at cell ``anchor``."""
    chart.set_categories(Reference(ws, min_col=1, min_row=first, max_row=last))
    if not isinstance(chart, PieChart):
        chart.x_axis.delete = chart.y_axis.delete = False
    chart.height, chart.width = size
    ws.add_chart(chart, anchor)


def memory_chart(wb: Any, first: int = 6, last: int = 10) -> None:
    ws = wb["Memory"]
    chart = BarChart()
    chart.type = "bar"
    chart.title = "Memory per GPU (GB)"
    chart.y_axis.title = "GB"
    chart.legend = None
    chart.add_data(Reference(ws, min_col=2, min_row=first, max_row=last), titles_from_data=False)
    _place(ws, chart, first, last, (10, 18), f"A{ws.max_row + 2}")  # below the table: it covers no text


def cost_chart(wb: Any, first: int, last: int) -> None:
    """Cost by category: every line of the Budget sheet's total (rows first..last)."""
    ws = wb["Budget"]
    chart = PieChart()
    chart.title = "Cost by category (USD)"
    chart.add_data(Reference(ws, min_col=2, min_row=first, max_row=last), titles_from_data=False)
    _place(ws, chart, first, last, (8, 14), f"A{ws.max_row + 2}")  # below the tables, beside own vs rent


def own_vs_rent_chart(wb: Any, first: int, last: int, data_cols: tuple[str, ...]) -> None:
    """Own vs rent over time: cumulative cash of both, one straight line each, over every month of the table.

    A scatter chart: the months (column A, rows first..last) are a number axis, so equal months are equal distances.
    The lines read the chart-data columns ``data_cols`` (months, rent, own; the same rows, their header above; hidden,
    hence ``plotVisOnly`` off): the table's rent and own with #N/A where it shows a message, so a message draws no
    point.
    """
    from openpyxl.utils.cell import column_index_from_string

    ws = wb["Budget"]
    chart = ScatterChart()
    chart.title = "Own vs rent over time (cumulative USD)"
    chart.style = 13
    chart.scatterStyle = "lineMarker"
    chart.visible_cells_only = False  # plotVisOnly off: the chart data sit in hidden columns
    chart.y_axis.title = "USD"
    chart.x_axis.title = "months"
    chart.x_axis.scaling.min = 0
    chart.x_axis.delete = chart.y_axis.delete = False  # openpyxl 3.1 leaves an axis's delete unset: hidden
    months = Reference(ws, min_col=1, min_row=first, max_row=last)
    for col in data_cols[1:]:
        series = Series(Reference(ws, min_col=column_index_from_string(col), min_row=first - 1, max_row=last), months,
                        title_from_data=True)
        series.marker.symbol = "none"
        series.smooth = False
        chart.series.append(series)
    chart.height, chart.width = 8, 14
    ws.add_chart(chart, f"D{ws.max_row + 2}")  # right of the cost pie, below the tables


def tornado_chart(wb: Any, first: int, last: int) -> None:
    """Tornado: the change in total cost with each input at its low and high end (every row of the table)."""
    ws = wb["Budget"]
    chart = BarChart()
    chart.type = "bar"
    chart.grouping = "clustered"
    chart.overlap = 100
    chart.title = "What moves the cost most (change vs base, USD)"
    chart.x_axis.title = "input"
    chart.add_data(Reference(ws, min_col=6, max_col=7, min_row=first - 1, max_row=last), titles_from_data=True)
    chart.x_axis.tickLblPos = "low"  # the input names left of the plot, clear of the bars that go below 0
    _place(ws, chart, first, last, (8, 20), f"A{ws.max_row + 20}")  # under the two charts above, a page of its own


SENSITIVITY_CHARTS = (("days", "Training days vs GPU count", "days"),
                      ("spend", "Average spend per 30 days vs GPU count", "USD per 30 days"))


def sensitivity_charts(wb: Any, tables: dict[str, Any]) -> None:
    """One line per MFU over every GPU count of the table (its whole grid), right of the tables."""
    ws = wb["Sensitivity"]
    anchor_col = 3 + tables["days"]["cols"]
    for i, (key, title, unit) in enumerate(SENSITIVITY_CHARTS):
        t = tables[key]
        chart = LineChart()
        chart.title = title
        chart.y_axis.title = unit
        chart.x_axis.title = "GPUs (one line per MFU)"
        data = Reference(ws, min_col=2, max_col=1 + t["cols"], min_row=t["head"], max_row=t["head"] + t["rows"])
        chart.add_data(data, titles_from_data=True)
        _place(ws, chart, t["head"] + 1, t["head"] + t["rows"], (8, 16), f"{chr(ord('A') + anchor_col)}{4 + 17 * i}")

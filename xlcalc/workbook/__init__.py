"""The planning workbook: a live-formula .xlsx rendered from xlcalc's formula registry.

``build(path, scenarios)`` lays the workbook out as a :class:`~xlcalc.workbook.model.Book` (cells, formulas as
expression trees, defined names), writes it with openpyxl and stores the engine's value of every formula cell as its
cached value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..scenario import Scenario
from .. import atomic
from ..engine import collector_paused
from . import budget_sheet, catalogs, charts, checks, compare, finetune, memory_sheets, sheets, start, step_sheet
from .model import Book
from .readback import WorkbookError, read_workbook
from .writer import SHEET_ORDER, save_package, to_workbook

__all__ = ["build", "layout", "Layout", "read_workbook", "WorkbookError"]


@dataclass
class Layout:
    book: Book
    scenario: Scenario
    columns: list[tuple[Scenario, bool]]
    column_maps: list[dict[str, str]] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


def layout(scenarios: Sequence[Scenario] = ()) -> Layout:
    """Lay out the whole workbook for a main scenario (the first) and comparison columns."""
    scenarios = list(scenarios) or [Scenario()]
    main = scenarios[0]
    book = Book()
    book.sheets.update({t: {} for t in (*SHEET_ORDER, checks.SHEET)})  # the sheets in print order
    with checks.collecting() as reg:  # the cells that gather input checks, placed as the results need them
        gpus, models, recipes = (catalogs.catalog_sheet(book, t) for t in ("GPUs", "Models", "Recipes"))
        frameworks, prices = catalogs.framework_sheet(book), catalogs.price_sheet(book)
        stacks = step_sheet.stack_sheet(book)
        ctx = sheets.Ctx(book, main, gpus, models, recipes, prices, frameworks)
        start.start_sheet(ctx)
        sheets.inputs_sheet(ctx)
        memory_sheets.memory_sheet(ctx)
        memory_sheets.time_sheet(ctx)
        step_sheet.step_time_sheet(ctx, stacks)
        budget_sheet.budget_sheet(ctx)
        finetune.finetune_sheet(ctx)
        # one scenario: the main plan on A800, H100 and Ascend 910B, its other inputs following the Inputs sheet
        columns = [(sc, False) for sc in scenarios] if len(scenarios) >= 2 else \
            [(compare.gpu_variant(main, g), True) for g in compare.COMPARE_GPUS]
        maps = compare.scenarios_sheet(ctx, columns)
        tables = compare.sensitivity_sheet(ctx)
        compare.parallelism_sheet(ctx)
        catalogs.references_sheet(book)
        checks.finish(book, reg, {
            **{n: (t.sheet, t.col("id"), t.first_row, t.last_row)
               for n, t in (("Model_Preset", models), ("GPU_Type", gpus), ("Recipe_Id", recipes))},
            "Framework": (frameworks.sheet, "A", frameworks.first_row, frameworks.last_row),
            "Precision": (frameworks.sheet, "A", frameworks.precision_first, frameworks.precision_last),
            "Price_Tier": (prices.sheet, "A", prices.tier_first, prices.tier_last)}, frameworks)
    book.charts.append(lambda wb: charts.sensitivity_charts(wb, tables))
    return Layout(book, main, columns, maps, {"sensitivity": tables})


def build(path: str | Path, scenarios: Sequence[Scenario] = (), *, overwrite: bool = True,
          follow_symlinks: bool = False) -> Layout:
    """Write the planning workbook to ``path`` (with cached values); return its layout.

    The write is atomic (:mod:`xlcalc.atomic`): ``path`` is always the old file or the complete
    new one, mode 0644. ``overwrite=False`` refuses an existing file; a symbolic link is refused unless
    ``follow_symlinks``; another build writing ``path`` at the same time is an :class:`InputError`.
    """
    atomic.check_target(path, overwrite=overwrite, follow_symlinks=follow_symlinks)  # before the work
    with collector_paused():
        lay = layout(scenarios)
        values = lay.book.cached_values()
        wb = to_workbook(lay.book)
        with atomic.write(path, overwrite=overwrite, follow_symlinks=follow_symlinks) as out:
            save_package(wb, values, out)  # the cells and their cached values written in one pass
    return lay

"""Every way the engine evaluates an expression tree, in one place; the faces call these and nothing else.

* **scalar** — ``Expr.evaluate(env)`` (:mod:`xlcalc.expr.nodes`: each node evaluates itself with the spreadsheet
  functions of :mod:`xlcalc.expr.excel`); a registered formula called with numbers runs the same operations. ``xlcalc`` commands, the worksheet functions' single cells and the workbook's cached
  values go this way.
* **columns** — :func:`evaluate_columns`: one pass over whole columns of values, with numpy or with plain lists
  (:mod:`xlcalc.engine.columns`, :mod:`xlcalc.engine.rows`); the worksheet functions' ranges.
* **compiled** — :func:`python_steps` / :func:`python_expr`: the text of a plain Python function computing a chain
  of steps (:mod:`xlcalc.engine.compiled`); ``scripts/make_memory_code.py`` writes the stage memory model the
  planner runs with it.

Rendering a tree as spreadsheet text is not evaluation: that is :meth:`xlcalc.expr.Expr.excel` and the workbook's
builder.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from .columns import HAVE_NUMPY, evaluate_columns
from .compiled import PY_FUNCTIONS, inline, python_expr, python_steps
from .rows import NoRowForm, rows_function

__all__ = ["evaluate_columns", "HAVE_NUMPY", "python_expr", "python_steps", "inline", "PY_FUNCTIONS",
           "rows_function", "NoRowForm", "collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the block (as it was after it).

    A workbook build makes tens of thousands of objects (expression nodes, cells, styles), a worksheet function over
    a range thousands of result rows (lists without cycles): a collection every few hundred of them, and every so
    often one that walks every object alive (the imported modules' included), took a good part of the CPU time.
    What the block leaves as garbage is freed when the collector next runs.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

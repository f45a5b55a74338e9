"""A tiny expression layer: one formula body computes numbers *and* renders Excel text.

A formula in xlcalc is an ordinary Python function written with ``+ - * / **``
and the functions of :mod:`xlcalc.expr.functions` (:func:`if_`, :func:`min_`, :func:`max_`, :func:`eq`, ...).
Called with numbers it returns a number. Called with :class:`Var` symbols it
returns an :class:`Expr` tree (:mod:`xlcalc.expr.nodes`), which can

* be evaluated against a mapping of input values (``Expr.evaluate``), and
* be rendered as Excel formula text over cell references or defined names
  (``Expr.to_excel``), using only classic functions that Excel 2016+,
  LibreOffice, Google Sheets and Numbers all share (:mod:`xlcalc.expr.excel`: what they compute in Python).

The functions dispatch on their arguments: with plain numbers they compute
directly (fast enough for the planner's inner loops); with any ``Expr``
argument they build a node. One tree placed over many cells is a :class:`Template`
(:mod:`xlcalc.expr.template`).

The rooms:

* :mod:`xlcalc.expr.excel` -- the spreadsheet functions and operators in Python; numbers as Excel writes them;
* :mod:`xlcalc.expr.nodes` -- the node types, their evaluation, rendering, substitution and constant folding;
* :mod:`xlcalc.expr.template` -- one tree shared by many cells, bound to each cell's references;
* :mod:`xlcalc.expr.functions` -- the functions formula bodies call.

This package re-exports their public names.
"""

from .excel import EXCEL_FUNCTIONS, PY_BINOPS, as_text, render_number
from .functions import abs_, and_, ceiling, concat, eq, floor_int, if_, max_, min_, not_, or_, round_, roundup, sqrt
from .nodes import BinOp, Bool, Call, Expr, Func, IfError, Neg, Num, Text, Var, identity, is_expr, unfolded, wrap
from .template import Bound, Template

__all__ = [
    "Expr", "Num", "Text", "Bool", "Var", "BinOp", "Neg", "Func", "Call",
    "wrap", "is_expr", "if_", "min_", "max_", "sqrt", "ceiling", "roundup",
    "floor_int", "eq", "concat", "as_text", "round_", "and_", "or_", "not_", "abs_", "render_number",
    "EXCEL_FUNCTIONS", "PY_BINOPS", "Template", "Bound", "identity", "IfError", "unfolded",
]

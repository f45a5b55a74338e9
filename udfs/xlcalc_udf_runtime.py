"""What Excel hands a worksheet function, and how xlcalc's functions take it (hand-written).

Used by the generated ``xlcalc_udfs.py`` (one function per registry formula) and by the
hand-written table functions of ``xlcalc_udf_tables.py``. Nothing here computes a quantity:
every number comes from a registry formula, which is also what validates the inputs.

* numbers arrive as floats (``1024.0`` GPUs is fine, ``2.5`` GPUs is refused);
* an empty cell arrives as None and means the input's default (an error if the input has
  none); ``""`` counts as empty too;
* TRUE/FALSE arrive as booleans; text options are case-insensitive ("Selective");
* a range arrives as a list of rows (``ndim=2``; a flat list is a column): single values
  are repeated against it and the result has its shape (a row of GPU counts against a
  column of model sizes gives a table). A bad row inside a range gives the text
  ``#VALUE! row 3, column 1: <message>`` in that cell and numbers elsewhere; the same bad
  input given alone raises the error (the cell shows the message).
* a range, or the result a call would spill, of more than ``MAX_RANGE_CELLS`` (100,000) cells is
  refused with one message (e.g. a whole column ``A:A`` of 1,048,576 cells: give the rows that
  hold values, ``A2:A500``), before any work on its cells.

Ranges are fast: each distinct value of an argument is validated once (not once per row),
and the formula's expression tree is evaluated once over whole columns (``xlcalc.engine``) - with numpy when it
is installed, with plain Python lists otherwise (xlwings Lite may have no numpy). A row that
divides by zero or leaves the finite numbers along the way is computed again on its own,
through exactly the path a single cell takes, so it gets the single cell's number or message.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from typing import Any

from xlcalc.engine import HAVE_NUMPY, collector_paused, evaluate_columns
from xlcalc.errors import InputError
from xlcalc.inputs import spec
from xlcalc.registry import Formula, get_formula
from xlcalc.validate import validate_one

try:  # numpy is optional (xlwings Lite may have none): checks a column of floats at once when it is there
    import numpy as _np
except ImportError:  # pragma: no cover - exercised in Pyodide
    _np = None

# Excel's Insert Function categories: the questions users ask (registry formulas declared question=True, and the
# table functions), then every other formula as a building block
CATEGORY = "xlcalc"
BLOCKS_CATEGORY = "xlcalc building blocks"
ERROR_PREFIX = "#VALUE!"
MAX_RANGE_CELLS = 100_000
"""The most cells a range argument, or the result a call spills, may have (a whole column has 1,048,576)."""
USE_NUMPY = HAVE_NUMPY
"""Evaluate columns with numpy when it is installed (tests switch it off to cover Lite's path)."""


# -- one cell ----------------------------------------------------------------------------

def is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def compute(formula: Formula, values: dict[str, Any]) -> Any:
    """One scenario: empty cells take the input's default (required inputs left empty are one error naming each of
    them); the registry formula validates and computes (and names the inputs to blame when the result would not be a
    finite number)."""
    if empty := [InputError(name, None, spec(name).allowed, "the input is required; the cell is empty")
                 for name, value in values.items() if is_empty(value) and name not in formula.defaults]:
        raise InputError.all(empty)
    clean = {name: formula.defaults[name] if is_empty(value) else value for name, value in values.items()}
    try:
        result = formula(**clean)
    except ArithmeticError:  # e.g. float overflow inside a helper: name the inputs, not the formula
        raise formula.undefined(formula.validate(formula.bind(**clean)), "overflows") from None
    if isinstance(result, float) and not math.isfinite(result):  # the registry already refuses these
        raise formula.undefined(formula.validate(formula.bind(**clean)), "has no finite result")
    return result


# -- ranges ------------------------------------------------------------------------------

def as_grid(name: str, value: Any) -> list[list[Any]] | None:
    """A range as a list of rows, or None for a single value. A flat list is a column."""
    if not isinstance(value, (list, tuple)):
        return None
    if len(value) == 0:
        raise ValueError(f"{name}: the range is empty")
    if len(value) > MAX_RANGE_CELLS:
        raise _too_big(name, len(value))
    kinds = set(map(type, value))
    if kinds <= {list, tuple} or all(isinstance(row, (list, tuple)) for row in value):
        rows = value if kinds == {list} and isinstance(value, list) else [list(row) for row in value]
        widths = set(map(len, rows))
        if len(widths) != 1 or 0 in widths:
            raise ValueError(f"{name}: the range must be rectangular")
        if len(rows) * len(rows[0]) > MAX_RANGE_CELLS:
            raise _too_big(name, len(rows) * len(rows[0]))
        return rows
    if any(isinstance(item, (list, tuple)) for item in value):
        raise ValueError(f"{name}: the range must be a list of values or a list of rows")
    return [[item] for item in value]


def _too_big(name: str, cells: int, what: str = "the range") -> ValueError:
    return ValueError(f"{name}: {what} has {cells:,} cells, more than the {MAX_RANGE_CELLS:,} a call takes; give "
                      "the rows that hold values (e.g. A2:A500, not the whole column A:A)")


def _shape(grids: dict[str, list[list[Any]]]) -> tuple[int, int]:
    rows = max(len(g) for g in grids.values())
    cols = max(len(g[0]) for g in grids.values())
    for name, g in grids.items():
        if len(g) not in (1, rows) or len(g[0]) not in (1, cols):
            shapes = ", ".join(f"{n} {len(x)}x{len(x[0])}" for n, x in grids.items())
            raise ValueError(f"{name}: ranges must have the same size, or one row / one column to repeat ({shapes})")
    if rows * cols > MAX_RANGE_CELLS:
        raise _too_big(", ".join(grids), rows * cols, "the result (rows of one range by columns of another)")
    return rows, cols


def error_text(exc: Exception, i: int, j: int) -> str:
    return f"{ERROR_PREFIX} row {i + 1}, column {j + 1}: {exc}"


def _split(values: dict[str, Any], columns: dict[str, list[Any]] | None = None,
           ) -> tuple[dict[str, list[list[Any]]], int, int]:
    """The ranges among ``values`` as grids, and their shape; ``columns`` (when given) receives the values
    of each range that is a column of one-element lists (xlwings' usual column), read in the same pass
    that checks its rows."""
    grids = {}
    for name, value in values.items():
        grid = None
        if columns is not None and type(value) is list and value and len(value) <= MAX_RANGE_CELLS \
                and type(value[0]) is list and len(value[0]) == 1 and set(map(type, value)) == {list}:
            with contextlib.suppress(ValueError):  # a row of another width: the grid's own checks
                columns[name] = [x for (x,) in value]
                grid = value
        if grid is None:
            grid = as_grid(name, value)
        if grid is not None:
            grids[name] = grid
    return (grids, *_shape(grids)) if grids else (grids, 0, 0)


def _cell(values: dict[str, Any], grids: dict[str, list[list[Any]]], i: int, j: int) -> dict[str, Any]:
    return {name: value if (g := grids.get(name)) is None else g[i if len(g) > 1 else 0][j if len(g[0]) > 1 else 0]
            for name, value in values.items()}


def broadcast(one: Callable[[dict[str, Any]], Any], values: dict[str, Any]) -> Any:
    """Call ``one`` per cell (the table functions' path). All single values: one result (errors
    raise). Any range: a list of lists of the broadcast shape (a 1x1 range gives a single value)."""
    grids, rows, cols = _split(values)
    if not grids:
        return one(values)
    if rows == cols == 1:
        return one(_cell(values, grids, 0, 0))

    def at(i: int, j: int) -> Any:
        try:
            return one(_cell(values, grids, i, j))
        except ValueError as exc:  # InputError and CatalogError are ValueErrors
            return error_text(exc, i, j)

    return [[at(i, j) for j in range(cols)] for i in range(rows)]


# -- worksheet functions of registry formulas --------------------------------------------

_formula = functools.cache(get_formula)  # a worksheet function's formula, looked up once


def formula_call(name: str, *args: Any) -> Any:
    """The body of every generated worksheet function: ``name`` is the registry formula's
    Python name, ``args`` its arguments in order, as Excel handed them over."""
    formula = _formula(name)
    values = dict(zip(formula.params, args))
    if formula.dynamic_defaults is not None:
        if any(_cells(values[name]) > 1 for name in formula.dynamic_from):  # a framework per row: cell by cell
            return broadcast(lambda cell: compute(formula, _dynamic_defaults(formula, cell)), values)
        values = _dynamic_defaults(formula, values)
        args = tuple(values.values())
    if not any(isinstance(v, (list, tuple)) for v in args):  # one cell
        return compute(formula, values)
    with collector_paused():
        columns: dict[str, list[Any]] = {}
        grids, rows, cols = _split(values, columns)
        if rows == cols == 1:
            return compute(formula, _cell(values, grids, 0, 0))
        return _columns(formula, values, grids, rows, cols, columns)


def _cells(value: Any) -> int:
    grid = as_grid("value", value)
    return 1 if grid is None else len(grid) * len(grid[0])


def _dynamic_defaults(formula: Formula, values: dict[str, Any]) -> dict[str, Any]:
    """The inputs a formula's dynamic defaults fill (MEM_PER_GPU_GB: the framework's bytes), in the cells left
    empty. The inputs that drive them (``dynamic_from``: framework, precision) are one value each here (a range of
    them goes cell by cell)."""
    given = {}
    for name in formula.dynamic_from:
        grid = as_grid(name, values[name])
        value = values[name] if grid is None else grid[0][0]
        if not is_empty(value):
            given[name] = value
    filled = formula.dynamic_defaults(given)  # type: ignore[misc]
    out = dict(values)
    for name in formula.dynamic_params:  # a driver not allowed fills nothing: its validation says so
        grid = as_grid(name, out[name]) if name in filled else None
        if grid is not None:
            out[name] = [[filled[name] if is_empty(x) else x for x in row] for row in grid]
        elif name in filled and is_empty(out[name]):
            out[name] = filled[name]
    return out


_BAD = object()  # a value that failed validation


def _flat(g: list[list[Any]], rows: int, cols: int) -> list[Any]:
    """A grid repeated to rows x cols, row by row."""
    gr, gc = len(g), len(g[0])
    if gc == 1:
        column = [row[0] for row in g] if gr > 1 else [g[0][0]]
        if cols == 1:
            return column if gr > 1 else column * rows
        return [x for x in column for _ in range(cols)] if gr > 1 else column * (rows * cols)
    if gr == 1:
        return g[0] * rows
    return [x for row in g for x in row]


def _validator(formula: Formula, name: str) -> Callable[[Any], Any]:
    s = spec(name)

    def clean(value: Any) -> Any:
        if is_empty(value):
            if name not in formula.defaults:
                return _BAD
            value = formula.defaults[name]
        try:
            return validate_one(s, value)
        except ValueError:
            return _BAD

    return clean


def _clean_column(clean: Callable[[Any], Any], column: list[Any], s: Any) -> tuple[list[Any], bool]:
    """Validate each distinct value once: (a column of validated values or _BAD, any _BAD)."""
    kinds = set(map(type, column))
    if kinds == {float} and _plainly_allowed(s, column):
        return (list(map(int, column)) if s.kind == "int" else column), False
    if len(kinds & {bool, int, float}) <= 1:  # True, 1 and 1.0 would share a key: only one of them here
        with contextlib.suppress(TypeError):  # an unhashable cell value: below
            done = {v: clean(v) for v in set(column)}
            return list(map(done.__getitem__, column)), any(c is _BAD for c in done.values())
    seen: dict[Any, Any] = {}
    out = []
    for v in column:
        try:
            key = (type(v), v)
            c = seen[key] if key in seen else seen.setdefault(key, clean(v))
        except TypeError:
            c = clean(v)
        out.append(c)
    return out, any(c is _BAD for c in out)


def _all_within(result: list[Any], limit: float) -> bool:
    """Every result a finite number at most ``limit``, found in two passes in C (sum, max); False: look row by row
    (text among the results, a NaN or infinity, which max would not order, or a result past the limit)."""
    try:
        return math.isfinite(sum(result)) and max(result) <= limit
    except (TypeError, OverflowError, ValueError):
        return False


def _plainly_allowed(s: Any, column: list[float]) -> bool:
    """True when every value of a column of floats is one the input's validation returns as it is
    (finite, within the input's bounds; whole for a count) - a shortcut for the common column.
    False means: validate value by value (which gives each refused row its message)."""
    if s.kind not in ("float", "int"):
        return False
    if _np is not None and USE_NUMPY:
        a = _np.array(column, dtype=float)
        if not _np.isfinite(a).all() or (s.kind == "int" and not (a == _np.trunc(a)).all()):
            return False
        lo, hi = float(a.min()), float(a.max())
    else:  # a sum of floats is finite only when every one is (inf and NaN stay; an overflow says no)
        if not math.isfinite(sum(column)) or (s.kind == "int" and not all(map(float.is_integer, column))):
            return False
        lo = min(column) if s.gt is not None or s.ge is not None or s.kind == "int" else 0.0
        hi = max(column) if s.lt is not None or s.le is not None or s.kind == "int" else 0.0
    if s.kind == "int" and max(abs(lo), abs(hi)) >= 2.0 ** 53:  # beyond exact whole floats: one by one
        return False
    return ((s.gt is None or lo > s.gt) and (s.ge is None or lo >= s.ge)
            and (s.lt is None or hi < s.lt) and (s.le is None or hi <= s.le))


def _columns(formula: Formula, values: dict[str, Any], grids: dict[str, list[list[Any]]],
             rows: int, cols: int, columns: dict[str, list[Any]]) -> list[list[Any]]:
    n = rows * cols
    env: dict[str, Any] = {}
    bad = False
    bad_rows: set[int] = set()
    for name, value in values.items():
        clean = _validator(formula, name)
        g = grids.get(name)
        if g is None or (len(g) == 1 and len(g[0]) == 1):
            env[name] = clean(value if g is None else g[0][0])
            bad = bad or env[name] is _BAD
            continue
        flat = columns[name] if name in columns and cols == 1 and len(g) == rows else _flat(g, rows, cols)
        column, has_bad = _clean_column(clean, flat, spec(name))
        if has_bad:
            first = next((x for x in column if x is not _BAD), _BAD)
            bad = bad or first is _BAD
            bad_rows.update(k for k, x in enumerate(column) if x is _BAD)
            column = [first if x is _BAD else x for x in column]
        env[name] = column
    if bad:  # a constant argument (or a whole column) is not allowed: every cell says why
        redo: set[int] | range = range(n)
        result: list[Any] = [None] * n
    else:
        if formula.check is not None:  # cross-input rules, e.g. heads divisible by tp: row by row
            for k in range(n):
                if k not in bad_rows:
                    try:
                        formula.check(**{p: (v[k] if isinstance(v, list) else v) for p, v in env.items()})
                    except ValueError:
                        bad_rows.add(k)
        result, redo = evaluate_columns(formula, env, n, USE_NUMPY)
        redo = set(redo) | bad_rows
        if formula.at_most is not None and not _all_within(result, formula.at_most[0]):
            # a result past the formula's bound: the single-cell path names the inputs
            redo |= {k for k, x in enumerate(result) if k not in redo and formula.beyond(x)}
    for k in redo:  # rows that need the single-cell path: its number or its message
        i, j = divmod(k, cols)
        try:
            result[k] = compute(formula, _cell(values, grids, i, j))
        except ValueError as exc:
            result[k] = error_text(exc, i, j)
    return [[x] for x in result] if cols == 1 else [result[i * cols:(i + 1) * cols] for i in range(rows)]

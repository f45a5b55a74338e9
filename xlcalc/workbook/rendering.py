"""Formula cells rendered from the engine's one definition of each named result.

A named result of :data:`xlcalc.scenario.OUTPUTS` can be placed over other cells
than the Inputs sheet's (a Scenarios column, a Sensitivity grid point, a row of
the Parallelism sheet): ``output_formula`` substitutes the cells for the defined
names in the *same* expression tree, so the workbook never holds a hand-typed
copy of a formula. ``catalog_lookup`` is the one place the builder writes a
table look-up (workbook plumbing, not a model formula).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..expr import Expr, Var
from ..scenario import OUTPUT_BY_NAME, OUTPUTS, output_expr
from .model import Lookup


def _deps(name: str, seen: dict[str, set[str]]) -> set[str]:
    """Every defined name (inputs and outputs) a named result depends on."""
    if name in seen:
        return seen[name]
    out = set()
    for v in output_expr(OUTPUT_BY_NAME[name]).variables():
        out.add(v)
        if v in OUTPUT_BY_NAME:
            out |= _deps(v, seen)
    seen[name] = out
    return out


_DEPS: dict[str, set[str]] = {}


def _over(name: str, varmap: Mapping[str, Expr], inline: bool) -> Expr:
    expr = output_expr(OUTPUT_BY_NAME[name])
    mapping: dict[str, Expr] = {}
    for v in expr.variables():
        if v in varmap:
            mapping[v] = varmap[v]
        elif inline and v in OUTPUT_BY_NAME and _deps(v, _DEPS) & set(varmap):
            mapping[v] = _over(v, varmap, inline)
    return expr.substitute(mapping)


def output_formula(name: str, varmap: Mapping[str, str] | None = None,
                   inline: bool = True) -> tuple[Expr, dict[Any, str]]:
    """The expression of named result ``name`` with some defined names replaced by cells.

    ``varmap`` maps defined names (inputs or other results) to reference text.
    Results that depend on a replaced name and are not themselves in ``varmap`` are
    written out in full (``inline``); the rest stay as their defined names. Returns
    the expression and the ``subs`` that render shared sub-results by their cell.
    """
    varmap = dict(varmap or {})
    vm = {k: Var(v) for k, v in varmap.items()}
    expr = _over(name, vm, inline)
    subs: dict[Any, str] = {}
    for earlier in OUTPUTS:
        if earlier.name == name:
            break
        if earlier.name in varmap:
            subs[earlier.expr().substitute(vm).key()] = varmap[earlier.name]
        elif not (_deps(earlier.name, _DEPS) & set(varmap)):
            subs[earlier.expr().key()] = earlier.name
    return expr, subs


def catalog_lookup(key: Expr | str, sheet: str, key_col: str, value_col: str, first_row: int, last_row: int) -> Lookup:
    """INDEX/MATCH of ``key`` in a catalog sheet's id column."""
    return Lookup(Var(key) if isinstance(key, str) else key, sheet, key_col, value_col, first_row, last_row)

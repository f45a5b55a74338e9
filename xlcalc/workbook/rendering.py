"""Formula cells rendered from the engine's one definition of each named result.

A named result of :data:`xlcalc.outputs.OUTPUTS` can be placed over other cells than the Inputs sheet's (a Scenarios
column, a Sensitivity grid point, a row of the Parallelism sheet): ``output_formula`` substitutes the cells for the
defined names in the *same* expression tree, so the workbook never holds a hand-typed copy of a formula.
``catalog_lookup`` is the one place the builder writes a table look-up (workbook plumbing, not a model formula).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from itertools import repeat, takewhile
from operator import contains
from typing import Any

from ..expr.functions import eq, if_
from ..expr.nodes import BinOp, Expr, Func, Text, Var, unfolded, wrap
from ..expr.template import Bound, Template
from ..layout import LAYOUT_OK
from ..outputs import BOUNDED_OUTPUTS, OUTPUT_BY_NAME, OUTPUTS, output_expr, plain_expr
from . import checks
from .messages import CHECK_CELL_POINTER, CHECK_POINTER, CHECK_REFUSED
from .model import RENDERING, Concat, IfError, IsNumber, Lookup


@functools.cache
def _deps(name: str) -> set[str]:
    """Every defined name (inputs and outputs) a named result depends on (made once: not to be changed)."""
    with unfolded():  # the names the formula is written over, those of a branch its arguments never take included
        expr = output_expr(OUTPUT_BY_NAME[name])
    return needs(expr)


def dependencies(name: str) -> set[str]:
    """Every defined name (inputs and results) the named result ``name`` depends on."""
    return set(_deps(name))


def _over(name: str, varmap: Mapping[str, str], top: bool = True) -> Expr:
    # a memory result carries its layout guard only as a cell of its own, not where another result inlines it
    expr = output_expr(OUTPUT_BY_NAME[name]) if top else plain_expr(OUTPUT_BY_NAME[name])
    mapping: dict[str, Expr] = {}
    for v in expr.variables():
        if v in varmap:  # (a Scenarios column maps some 150 names, of which one result's formula reads a few)
            mapping[v] = Var(varmap[v])
        elif v in OUTPUT_BY_NAME and not _deps(v).isdisjoint(varmap):
            mapping[v] = _over(v, varmap, top=False)
    return expr.substitute(mapping)


def output_formula(name: str, varmap: Mapping[str, str] | None = None) -> tuple[Expr, dict[Any, str]]:
    """The expression of named result ``name`` with some defined names replaced by cells.

    ``varmap`` maps defined names (inputs or other results) to reference text. Results that depend on a replaced name
    and are not themselves in ``varmap`` are written out in full; the rest stay as their defined names. Returns the
    expression and the ``subs`` that render shared sub-results by their cell.

    The expression is built and rendered once per shape (the result, which names are replaced) as a
    :class:`~xlcalc.expr.Template` over placeholders, and bound to this call's cell references (its subs travel inside
    it); the text and the values are those of :func:`output_formula_tree`, the reference, which builds the tree anew for
    every cell.
    """
    varmap = varmap or {}  # (read, never changed: the split and the templates keep copies of what they keep)
    if not RENDERING.templates:
        return output_formula_tree(name, varmap)
    refs, over = _split(varmap)
    if over is None:  # two names on one cell: not a template's case
        return output_formula_tree(name, varmap)
    shape = (name, over)
    template = _TEMPLATES.get(shape)
    if template is None:  # each name of ``refs`` (a cell) mapped to its placeholder
        slot_of = {Template.slot(k): k for k in refs}
        expr, subs = output_formula_tree(name, {**varmap, **{k: Template.slot(k) for k in refs}})
        subs = {key: Template.sub_slot(slot_of[text]) if text in slot_of else text for key, text in subs.items()}
        template = _TEMPLATES[shape] = Template(expr, subs, refs)
    return template.bind(refs), {}


_TEMPLATES: dict[Any, Template] = {}
_SPLIT: list[Any] = [None]  # (the last varmap split (a copy), its split)


def _split(varmap: Mapping[str, str]) -> tuple[dict[str, str], tuple[frozenset[str], tuple[tuple[str, str], ...]] | None]:
    """``varmap``'s cell references (a defined name has no "!") and the shape they and its other names give a
    template: (the names mapped to cells, the names mapped to defined names and theirs), None where two names are
    mapped to one cell. A name mapped to a defined name (N_GPUs -> GPUs_to_Provision) stays in the template as that
    name. (A row or column places its results over one varmap: the split of the last one is kept.)"""
    last = _SPLIT[0]
    if last is not None and last[0] == varmap:
        return last[1]
    refs = {k: v for k, v in varmap.items() if "!" in v}
    over = (frozenset(refs), tuple(sorted((k, v) for k, v in varmap.items() if k not in refs))) \
        if len(set(refs.values())) == len(refs) else None
    _SPLIT[0] = (dict(varmap), (refs, over))  # one item: another thread reads a varmap with its own split
    return refs, over


def output_formula_tree(name: str, varmap: Mapping[str, str] | None = None) -> tuple[Expr, dict[Any, str]]:
    """:func:`output_formula` built as a tree of its own for this call (the reference its templates match).

    The subs come from the list of every named result's (key, cell) over this ``varmap``, made once for all the
    results placed over it (:func:`_sub_entries`): those of the results before ``name``.
    """
    varmap = dict(varmap or {})
    expr = _over(name, varmap)
    earlier = takewhile(lambda entry: entry[0] != name, _sub_entries(varmap))
    return expr, {key: text for _, key, text in earlier if key is not None}


_SUB_ENTRIES: dict[Any, list[tuple[str, Any, str]]] = {}


def _sub_entries(varmap: Mapping[str, str]) -> list[tuple[str, Any, str]]:
    """(result, key, text) of every named result in order: the key of its expression over ``varmap`` and the cell
    that stands for it, or its key and defined name where it depends on no name ``varmap`` replaces (key None: none)."""
    memo_key = tuple(sorted(varmap.items()))
    entries = _SUB_ENTRIES.get(memo_key)
    if entries is None:
        vm = {k: Var(v) for k, v in varmap.items()}
        entries = _SUB_ENTRIES[memo_key] = [
            (o.name, o.expr().substitute(vm).key(), varmap[o.name]) if o.name in varmap
            else (o.name, o.expr().key(), o.name) if _deps(o.name).isdisjoint(varmap) else (o.name, None, "")
            for o in OUTPUTS]
    return entries


def catalog_lookup(key: Expr | str, sheet: str, key_col: str, value_col: str, first_row: int, last_row: int,
                   what: str | None = None, type_in: str | None = None) -> Lookup:
    """INDEX/MATCH of ``key`` in a catalog sheet's id column.

    With ``what`` (e.g. "peak TFLOPS") and ``type_in`` (where to type a value), an empty catalog cell or an unknown id
    gives a readable message instead of 0 or #N/A.
    """
    return Lookup(Var(key) if isinstance(key, str) else key, sheet, key_col, value_col, first_row, last_row,
                  what, type_in)


def preset_or(key: Expr | str, value: Any, lookup: Expr) -> Expr:
    """``IF(key="", value, look-up)``: the preset's figure, or ``value`` while no preset is chosen."""
    k = Var(key) if isinstance(key, str) else key
    return if_(eq(k, ""), value, lookup)


BOOL_FORMAT = '"TRUE";"TRUE";"FALSE"'  # TRUE/FALSE as words in LibreOffice too (where a boolean is 1/0)


def pointer_format(fmt: str | None) -> str:
    """``fmt`` with a text section that shows CHECK_POINTER: the cell of a looked-up input whose text is a look-up's
    message (a figure the catalog lacks, an id typed wrong, a framework and precision the Frameworks sheet does not
    list) or a value typed wrong, which Start's input check names whole; the cell (30 to 44 characters wide) would
    print the message clipped. Its value stays the message (the formula bar, ``xlcalc read`` and every result that
    reads it see it)."""
    sections = (fmt or "General").split(";")
    if len(sections) == 1:  # positive; negative; zero
        sections = [sections[0], "-" + sections[0], sections[0]]
    assert len(sections) == 3, fmt
    return ";".join(sections + [f'"{CHECK_POINTER}"'])


def display_format(out: Any) -> str:
    """Number format of a named result's cell: its own, or TRUE/FALSE as words for a boolean."""
    if getattr(out.formula, "returns", "number") == "bool" and out.number_format in (None, "General"):
        return BOOL_FORMAT
    return out.number_format


# Inputs whose cell may hold a message instead of a number: a preset's look-up where the catalog has no figure, the
# price of a GPU at a tier with no sourced rate, the purchase price of a GPU without one.
LOOKED_UP = (*checks.CATALOG_LOOKED_UP, *checks.LOOKED_UP_TEXT_OK)


def needs(expr: Expr) -> set[str]:
    """Every defined name an expression depends on: its variables and, for named results, theirs."""
    names = expr.variables()
    return names.union(*(_deps(v) for v in names if v in OUTPUT_BY_NAME))


def guarded(expr: Any, deps: Any, refs: Mapping[str, str] | None = None, follows: Any = (),
            exclude: Any = (), cells: Any = (), inline: Sequence[str] = ()) -> Any:
    """``IF(ISNUMBER(input), expr, input)`` for each looked-up input of ``deps`` (first one outermost), around
    ``IF(<checks>="OK", expr, <checks>)``, the input checks of ``deps`` gathered on the Checks sheet (checks.py).

    A cell that depends on an input holding a message (no catalog figure, no price at the tier) shows that message
    instead of #VALUE!; so does one that depends on a bounded result past its bound (Train_Days, GPU_Hours, ...), and
    one that depends on an input its checks refuse (a value past its bounds, of the wrong type, not in its list).
    ``refs`` maps defined names to the cells that stand for them (a Scenarios column): their inputs are not checked,
    except those in ``follows`` (a cell that follows the Inputs sheet's cell of that name); ``exclude``: inputs the
    cell does not take from the Inputs sheet (a Sensitivity grid point's GPUs and MFU). An input cell of another sheet
    that stands for an input in ``refs`` (a Scenarios column's, a Parallelism row's), or is one of ``cells`` (a
    Sensitivity grid point's GPUs and MFU), is checked by its own check (checks.register). ``inline``: the bounded
    results the cell's formula writes out over ``refs`` (:func:`written_bounded`), checked as written.
    """
    refs = refs or {}
    expr = checks.guard(expr, needs_inputs(deps, refs, follows, exclude, cells))
    # a bounded result past its bound holds its message (outputs.bound_message): checked where its own cell stands
    # for it (by name, or its cell in ``refs``), not where another's formula writes it out over other cells
    standing = refs.keys()
    shown = [n for n in BOUNDED_OUTPUTS if n in deps and (n in refs or standing.isdisjoint(_deps(n)))]
    for name in reversed(inline):  # written out in the cell's formula: checked as written, its bound included
        bounded = _over(name, refs)
        expr = Func("IF", (IsNumber(bounded), wrap(expr), bounded))
    for name in reversed([n for n in LOOKED_UP if n in deps] + shown):
        ref = Var(refs.get(name, name))
        expr = Func("IF", (IsNumber(ref), wrap(expr), ref))  # if_(ISNUMBER(ref), expr, ref)
    return expr


def guarded_output(name: str, expr: Any, refs: Mapping[str, str] | None = None, follows: Any = (),
                   exclude: Any = (), cells: Any = ()) -> Any:
    """A named result's cell guarded by the looked-up inputs it depends on (see :func:`guarded`).

    A result placed from a template (:func:`output_formula`) is guarded as a template too (``cells`` empty): where
    its guards depend only on the names ``refs`` maps (no reference a registered check), and where some of its
    references are checked cells of its own (a Parallelism row's: :func:`_guarded_row`, those cells' checks bound
    too). The guarded tree is made once per layout and shape and each cell binds it to its own references -- the
    same text and values as guarding the cell's tree.
    """
    refs = refs or {}
    if isinstance(expr, Bound) and RENDERING.templates and not cells:
        if not (own := checks.cell_checks(refs)):
            return _guarded_bound(name, expr, refs, follows, exclude)
        if (made := _guarded_row(name, expr, refs, follows, exclude, own)) is not None:
            return made
    return guarded(expr, _output_deps(name, refs), refs, follows, exclude, cells, written_bounded(name, refs))


def written_bounded(name: str, refs: Mapping[str, str]) -> list[str]:
    """The bounded results that named result ``name``'s formula over ``refs`` writes out (:func:`output_formula`
    writes out a result it depends on whose own inputs ``refs`` replaces, e.g. Train_Days in a Ranges row's days at
    low MFU): past its bound there, the cell shows its message (outputs.bound_short), never a number."""
    return [n for n in BOUNDED_OUTPUTS if n in dependencies(name) and n not in refs
            and not refs.keys().isdisjoint(_deps(n))]


def _output_deps(name: str, refs: Mapping[str, str]) -> set[str]:
    deps = dependencies(name)
    for ref in OUTPUT_BY_NAME.keys() & refs.values():  # a named result standing for an input (the GPUs to
        deps |= dependencies(ref)                      # provision for N_GPUs)
    return deps


def _guarded_bound(name: str, bound: Bound, refs: Mapping[str, str], follows: Any, exclude: Any) -> Expr:
    template, bound_refs = bound.template, bound.refs
    # a name whose cell is one of the template's references stands as that reference's placeholder
    same = refs == bound_refs  # (the common case: every name the cell maps is one of the template's references)
    slotted = None if same else {k: Template.slot(k) if k in template.slots and bound_refs[k] == v else v
                                 for k, v in refs.items()}
    shape = () if slotted is None else tuple(sorted(slotted.items()))
    key = ("guarded", name, template, same, shape, frozenset(follows), frozenset(exclude))
    memo = checks.layout_memo()  # the checks' cells are the layout's: one memo per layout
    made = memo.get(key)
    if made is None:
        if slotted is None:
            slotted = {k: Template.slot(k) for k in refs}
        expr = guarded(template.expr, _output_deps(name, refs), slotted, follows, exclude,
                       inline=written_bounded(name, refs))
        made = memo[key] = template if expr is template.expr else Template(expr, template.subs, template.slots)
    return bound if made is template else made.bind(bound_refs)


def pointing(expr: Any, pointer: str | None, layout: str = "Layout_Check", checks_pointer: str | None = None,
             lookups: frozenset[str] = frozenset()) -> Any:
    """``expr`` with its layout guard, ``IF(Layout_Check="OK", x, Layout_Check)`` (xlcalc.outputs.output_expr),
    showing the text ``pointer`` instead of the layout check's message: a cell too narrow for the message names the
    cell that shows it whole (None: the layout guard as it is). ``layout``: the reference text that stands for
    Layout_Check (a Scenarios column's).
    ``checks_pointer``: the text the guards of :func:`guarded` show instead of their message, the look-up guards of
    the looked-up inputs whose message fails their check (checks.LOOKED_UP_FAILING) and the input checks'
    (``IF(Checks!C<row>="OK", x, Checks!C<row>)``), naming the master check that shows such a message whole;
    messages.CHECK_CELL_POINTER: an input check's guard names the cell its message blames (:func:`refused`) and a
    look-up guard's shows CHECK_POINTER (``lookups``: the column's cells of the framework inputs, where the cell is
    not a template's placeholder); None: those guards as they are. The guards are found down the then-branches
    (they keep their precedence); ``expr`` is returned as it is where it has none to rewrite."""
    if isinstance(expr, Bound):
        # (``layout`` stays out of the key: in a template the guard reads the Layout_Check slot, or a reference that
        # is the template's own, so that the rows of a Parallelism sheet share one pointing template)
        key = ("pointing", expr.template, pointer, checks_pointer)
        memo = checks.layout_memo()  # a guarded template is the layout's (_guarded_bound): one memo per layout
        made = memo.get(key)
        if made is None:
            inner = pointing(expr.template.expr, pointer, layout, checks_pointer, lookups)
            made = memo[key] = expr.template if inner is expr.template.expr else \
                Template(inner, expr.template.subs, expr.template.slots)
        return expr if made is expr.template else made.bind(expr.refs)
    if not (isinstance(expr, Func) and expr.name == "IF"):
        return expr
    cond, then, otherwise = expr.args
    inner = pointing(then, pointer, layout, checks_pointer, lookups)
    if pointer is not None and _is_layout_guard(cond, otherwise, layout):
        return Func("IF", (cond, inner, Text(pointer)))
    if checks_pointer is not None and not _is_layout_guard(cond, otherwise, layout) and \
            _is_input_guard(cond, otherwise, checks_pointer == CHECK_CELL_POINTER, lookups):
        if checks_pointer == CHECK_CELL_POINTER:  # the cell the input check blames; a look-up's: the master check
            return Func("IF", (cond, inner, refused(cond.left) if isinstance(cond, BinOp) else Text(CHECK_POINTER)))
        return Func("IF", (cond, inner, Text(checks_pointer)))
    return expr if inner is then else Func("IF", (cond, inner, otherwise))


def pointed(expr: Any) -> Any:
    """``expr`` showing CHECK_POINTER, the way to Start's input check (which shows the message whole), for a failing
    input check or look-up (:func:`pointing`): a result's cell is too narrow to print the message."""
    return pointing(expr, None, checks_pointer=CHECK_POINTER)


def checked(expr: Any, deps: Any = None) -> Any:
    """``expr`` guarded by the inputs it depends on (``deps``, default: :func:`needs`), :func:`pointed`."""
    return pointed(guarded(expr, needs(expr) if deps is None else deps))


def refused(check: Expr) -> Expr:
    """The way from a Scenarios column's result to the Checks sheet's printed line of a failing input check ``check``
    (a gathering cell, not printed): the cell its message blames, "Scenarios!C27 refused: see Checks" (the message
    starts with that cell and a colon; else "refused: see Checks"). Made once per check (a node never changes: the
    results that one check guards share it)."""
    key = check.key()
    made = _REFUSED.get(key)
    if made is None:
        cell = Func("LEFT", (check, Func("FIND", (Text(":"), check)) - 1))
        made = _REFUSED[key] = Concat(IfError(Concat(cell, " "), ""), CHECK_REFUSED)
    return made


_REFUSED: dict[Any, Expr] = {}


def _is_input_guard(cond: Expr, otherwise: Expr, column: bool = False, lookups: frozenset[str] = frozenset()) -> bool:
    """``cond`` and ``otherwise`` are those of a look-up guard, ``IF(ISNUMBER(X), x, X)`` of a looked-up input X whose
    message fails its check or of a bounded result X (the Inputs' plan's), or of an input check,
    ``IF(Checks!C<row>="OK", x, Checks!C<row>)`` (in a template: the check cell's placeholder; the caller rules out
    the layout check's guard). ``column``: in a
    Scenarios column, whose look-up guards read its cells (a template's slots): those of the framework inputs only
    (a GPU figure the column's GPU lacks is the column's to show, whole)."""
    if isinstance(cond, IsNumber):
        arg = cond.arg
        if not isinstance(arg, Var):
            return False
        named = arg.name in _FRAMEWORK_SLOTS or arg.name in lookups if column else arg.name in _POINTED_NAMES
        return named and otherwise.key() == arg.key()
    return isinstance(cond, BinOp) and cond.op == "=" and isinstance(cond.left, Var) \
        and cond.left.name.startswith(_CHECK_CELL_STARTS) and cond.right.key() == _OK_KEY \
        and otherwise.key() == cond.left.key()


# the defined names whose message a guard of the Inputs' plan points to: the looked-up inputs whose message fails their
# check, and the bounded results (a result past its bound holds outputs.bound_short; Start's input check shows
# outputs.bound_message whole)
_POINTED_NAMES = frozenset(checks.LOOKED_UP_FAILING) | frozenset(BOUNDED_OUTPUTS)
# the framework inputs' placeholders in a Scenarios column's templates
_FRAMEWORK_SLOTS = frozenset(Template.slot(n) for n in checks.FRAMEWORK_INPUTS)
_CHECK_CELL_STARTS = (f"{checks.SHEET}!", Template.slot("")[0])  # a check's cell, or a template's placeholder of one
_OK_KEY, _LAYOUT_OK_KEY = Text(checks.OK).key(), Text(LAYOUT_OK).key()
_LAYOUT_SLOT = Template.slot("Layout_Check")


def _is_layout_guard(cond: Expr, otherwise: Expr, layout: str) -> bool:
    """``cond`` and ``otherwise`` are those of ``IF(<layout>="OK", x, <layout>)`` (in a template: its slot)."""
    return isinstance(cond, BinOp) and cond.op == "=" and isinstance(cond.left, Var) \
        and (cond.left.name == layout or cond.left.name == _LAYOUT_SLOT) and cond.right.key() == _LAYOUT_OK_KEY \
        and otherwise.key() == cond.left.key()


def _guarded_row(name: str, bound: Bound, refs: Mapping[str, str], follows: Any, exclude: Any,
                 own: tuple[tuple[str, str], ...]) -> Expr | None:
    """A named result over a row's cells that are input cells with checks of their own (a Parallelism row), guarded
    as a template: the guards of the first row of a shape made as :func:`guarded` makes them, their references to the
    row's cells and to those cells' checks then made placeholders, bound to each row's own. None where the shape is
    not a template's (the caller guards the cell's tree).

    The shape: the result, the template it is placed from, the names its references stand for, which of them are
    checked cells (in the order of the Checks sheet) and ``follows``/``exclude``. Over one shape :func:`guarded`
    makes the same guards but for those references: the inputs' checks are gathered by defined name, each checked
    cell's own check is written (not gathered per row: at most ``checks.INLINE_CELLS`` of them)."""
    memo = checks.layout_memo()
    row = _row_facts(memo, refs, bound.refs, own)
    if row is None:
        return None
    names, checked, row_refs = row
    template = bound.template
    key = ("guarded row", name, template, names, checked, frozenset(follows), frozenset(exclude))
    made = memo.get(key, False)
    if made is False:
        deps = _output_deps(name, refs)
        made = None
        if sum(k in deps for k in checked) <= checks.INLINE_CELLS:  # more: a gathering cell per row (no template)
            real = guarded(bound, deps, refs, follows, exclude, inline=written_bounded(name, refs))
            slot_of = {v: Var(Template.slot(k)) for k, v in row_refs.items()}
            if len(slot_of) == len(row_refs):
                made = Template(_reguard(real, bound, template.expr, slot_of), template.subs, row_refs)
        memo[key] = made
    return None if made is None else made.bind(row_refs)


_ROW_FACTS = ("row facts",)  # the layout memo's key of the last _row_facts answer


def _row_facts(memo: dict[Any, Any], refs: Mapping[str, str], bound_refs: Mapping[str, str],
               own: tuple[tuple[str, str], ...]) -> tuple[frozenset[str], tuple[str, ...], dict[str, str]] | None:
    """What :func:`_guarded_row` makes of a row's cells: (the names ``refs`` maps, the names of ``own`` (the checked
    cells), the references of the row's templates with those cells' checks), None where the row's shape is not a
    template's (``refs`` are not the template's references, or not all cell references). Made once per row:
    checks.cell_checks gives the same ``own`` for the same ``refs`` (its references, and its checks, unchanged),
    and ``bound_refs`` is the references the row's templates are bound to (never changed once made)."""
    last = memo.get(_ROW_FACTS)
    if last is not None and last[0] is own and last[1] is bound_refs:
        return last[2]  # type: ignore[no-any-return]
    facts = None
    if refs == bound_refs and all(map(contains, refs.values(), repeat("!"))):  # (each a cell reference)
        facts = (frozenset(refs), tuple(k for k, _ in own), {**refs, **{"check " + k: check for k, check in own}})
    memo[_ROW_FACTS] = (own, bound_refs, facts)
    return facts


def _reguard(expr: Expr, inner: Expr, new_inner: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """The guards :func:`guarded` wrapped around ``inner`` (nested ``IF(test, <inner or guards>, value)``) around
    ``new_inner`` instead, their own references replaced as ``mapping`` says."""
    if expr is inner:
        return new_inner
    assert isinstance(expr, Func) and expr.name == "IF", expr
    test, then, value = expr.args
    return Func("IF", (test.substitute(mapping), _reguard(then, inner, new_inner, mapping), value.substitute(mapping)))


def needs_inputs(deps: Any, refs: Mapping[str, str], follows: Any = (), exclude: Any = (),
                 cells: Any = ()) -> set[str]:
    """The input cells a cell over ``refs`` depends on through ``deps``: defined names (Inputs, Budget, FineTuning
    sheets) and the reference text of the other sheets' input cells that stand for some (``refs``) or are ``cells``."""
    out = {n for n in deps if (n not in refs or n in follows) and n not in exclude and checks.is_checked(n)}
    registered = checks.registered_cells()
    out |= {refs[n] for n in deps if n in refs and refs[n] in registered}
    return out | {c for c in cells if c in registered}

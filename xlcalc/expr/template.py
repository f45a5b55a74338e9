"""One expression shared by many cells: a :class:`Template` rendered once, :class:`Bound` to each cell's references."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .nodes import Expr, Func, Names, Var, _name_of, identity

__all__ = ["Template", "Bound"]


# A template's placeholders: a variable renders as ``\x00slot\x00``, a shared sub-result as ``\x01slot\x01``
# (neither character can occur in a name, a cell reference or a formula's text).
_SLOT = re.compile("([\x00\x01])([^\x00\x01]*)\\1")


class Template:
    """One expression shared by many cells: written over placeholder variables, rendered once.

    A formula placed over other cells row after row (a Parallelism row, a Sensitivity grid point, a Scenarios
    column) has the same tree and text each time but for the cell references. The template holds that tree over
    the variables :meth:`slot` names and the ``subs`` rendering shared sub-results (their cell text given as
    :meth:`sub_slot`); :meth:`bind` fills the slots with references. A bound template renders and evaluates
    exactly as the tree with the references substituted, rendered with the subs built over those references,
    provided the references are distinct and never occur in the template as names of their own.
    """

    __slots__ = ("expr", "subs", "slots", "_text", "_vars", "_pieces", "_outer")

    def __init__(self, expr: Expr, subs: Mapping[Any, str] | None, slots: Any):
        self.expr, self.subs = expr, subs
        self.slots = frozenset(slots)
        self._text: str | None = None
        self._vars: set[str] | None = None
        self._pieces: tuple[list[str], tuple[tuple[int, str], ...]] | None = None
        self._outer: tuple[tuple[tuple[Expr, Expr], ...], Expr] | None = None

    @staticmethod
    def slot(name: str) -> str:
        """The placeholder variable standing for the reference bound to ``name``."""
        return "\x00" + name + "\x00"

    @staticmethod
    def sub_slot(name: str) -> str:
        """The text a shared sub-result renders as when it sits in the cell bound to ``name``."""
        return "\x01" + name + "\x01"

    def text(self, names: Names) -> str:
        """The rendered text with the placeholders left in (computed once for :func:`identity`)."""
        if names is identity:  # (a placeholder is its own text there, as every other variable)
            if self._text is None:
                self._text = self.expr.render(identity, self.subs)
            return self._text
        held = {self.slot(k) for k in self.slots}
        return self.expr.render(lambda v: v if v in held else _name_of(names, v), self.subs)

    def pieces(self) -> tuple[list[str], tuple[tuple[int, str], ...]]:
        """The text for :func:`identity` in pieces: the text between the placeholders, with an empty piece where each
        placeholder stands, and (that piece's index, the slot named there) for each. Writing ``refs[k]`` at the index
        of each and joining the pieces gives the text with the references written in (as a ``str.format`` of it
        would, without parsing the text again for each cell)."""
        if self._pieces is None:
            parts = _SLOT.split(self.text(identity))  # text, marker, slot name, text, marker, slot name, ..., text
            texts, slots = parts[0::3], parts[2::3]
            pieces = [piece for text in texts[:-1] for piece in (text, "")] + texts[-1:]  # text, "", ..., text
            self._pieces = pieces, tuple((2 * k + 1, slot) for k, slot in enumerate(slots))
        return self._pieces

    def outer_guards(self) -> tuple[tuple[tuple[Expr, Expr], ...], Expr]:
        """The guards around the template's formula that read no slot: (test, value) of each ``IF(test, <the rest>,
        value)`` from the outermost down its then-branches while neither test nor value reads a placeholder, and the
        expression inside them (made once). Every cell bound to the template passes them, or fails the first one that
        fails with its value, alike."""
        if self._outer is None:
            guards: list[tuple[Expr, Expr]] = []
            expr = self.expr
            while isinstance(expr, Func) and expr.name == "IF":
                test, then, value = expr.args
                if any(v.startswith("\x00") for v in test.variables() | value.variables()):
                    break
                guards.append((test, value))
                expr = then
            self._outer = tuple(guards), expr
        return self._outer

    def variables(self) -> set[str]:
        if self._vars is None:
            self._vars = self.expr.variables()
        return self._vars

    def bind(self, refs: Mapping[str, str]) -> "Bound":
        """The template with slot ``k`` standing for the reference ``refs[k]`` (every slot bound)."""
        return Bound(self, refs)


class Bound(Expr):
    """A :class:`Template` with its slots bound to references: renders the template's text with the references
    written in, evaluates the template with each slot read through its reference.

    It carries the template's ``subs``: the subs a caller passes to :meth:`render` do not reach inside it.
    """

    __slots__ = ("template", "refs", "_expanded")

    def __init__(self, template: Template, refs: Mapping[str, str]):
        if not refs.keys() >= template.slots:  # (every slot bound: checked without a set of the keys made)
            raise KeyError(f"no reference given for the template's slots {sorted(template.slots - set(refs))}")
        self.template, self.refs = template, refs
        self._expanded: Expr | None = None

    @property
    def prec(self) -> float:  # type: ignore[override]
        return self.template.expr.prec

    def expand(self) -> Expr:
        """The same expression as a plain tree over the references (what a template saves building per cell)."""
        if self._expanded is None:
            self._expanded = self.template.expr.substitute({Template.slot(k): Var(v) for k, v in self.refs.items()})
        return self._expanded

    def children(self) -> tuple[Expr, ...]:
        return (self.expand(),)

    def _collect(self, out: set[str]) -> None:
        for v in self.template.variables():  # a placeholder names its slot's reference
            out.add(self.refs[v[1:-1]] if v.startswith("\x00") and v.endswith("\x00") else v)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        template = self.template
        # an environment that keeps each template's outer guards' outcome (a workbook's: model._Env) has them evaluated
        # once for all the cells bound to the template: they read no slot, so each cell passes or fails them alike
        passed = None if type(env) is _Rebound else getattr(env, "outer_guards", None)
        if passed is None:
            return template.expr.evaluate(_Rebound(env, self.refs, template.slots))
        outcome = passed.get(template)
        if outcome is None:  # the guards in order, as the IFs evaluate them (an error raised is not kept)
            guards, inner = template.outer_guards()
            outcome = inner
            for test, value in guards:
                if not test.evaluate(env):
                    outcome = (value.evaluate(env),)
                    break
            passed[template] = outcome
        if type(outcome) is tuple:  # a guard that fails: its value
            return outcome[0]
        return outcome.evaluate(_Rebound(env, self.refs, template.slots))

    def render(self, names: Names, subs: Mapping[Any, str] | None = None) -> str:
        refs = self.refs
        if names is identity:
            pieces, at = self.template.pieces()
            written = pieces.copy()
            for i, k in at:
                written[i] = refs[k]
            return "".join(written)
        text = self.template.text(names)
        return _SLOT.sub(lambda m: _name_of(names, refs[m[2]]) if m[1] == "\x00" else refs[m[2]], text)

    def substitute(self, mapping: Mapping[str, Expr]) -> Expr:
        return self.expand().substitute(mapping)

    def key(self) -> Any:
        return self.expand().key()


# a variable a template's formula reads -> the slot it is the placeholder of ("\x00", never a slot, for any other
# variable): each variable's name looked at once (the layouts' templates read the same few thousand names)
_SLOT_OF: dict[str, str] = {}


class _Rebound(dict[str, Any]):
    """An environment in which a template's placeholder variables read their bound references.

    A variable is read through the environment the first time and kept: a template's formula reads the same few
    cells again and again (a guard's input, then the result over it), and a value read does not change while the
    template is evaluated (the environment's values are the cells' computed values).
    """

    __slots__ = ("env", "refs", "slots")

    def __init__(self, env: Mapping[str, Any], refs: Mapping[str, str], slots: Any):
        super().__init__()
        self.env, self.refs, self.slots = env, refs, slots

    def __missing__(self, var: str) -> Any:
        # a placeholder, Template.slot(k) for a slot k (a name never holds "\x00"), reads its reference
        slot = _SLOT_OF.get(var)
        if slot is None:
            slot = _SLOT_OF[var] = var[1:-1] if len(var) > 1 and var[0] == var[-1] == "\x00" else "\x00"
        value = self.env[self.refs[slot]] if slot in self.slots else self.env[var]
        self[var] = value
        return value

    def __getattr__(self, name: str) -> Any:  # what else the environment offers (a workbook's cells)
        return getattr(self.env, name)

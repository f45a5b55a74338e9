"""The formula registry: each formula written once, with its units, docs and source.

``@formula(...)`` turns a plain Python function into a :class:`Formula`:

* ``f(70, 2)`` validates the inputs and computes the number (the Python face);
* ``f.excel({...})`` renders the same body as Excel text over cell names (the workbook face);
* ``f.udf_name`` and the input specs drive the Excel worksheet function (the UDF face).

The expression tree ``f.expr`` is built once, at import, by calling the body
with :class:`~xlcalc.expr.Var` symbols.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError, UnknownNameError
from .expr import functions as _functions
from .expr.nodes import Call, Expr, Names, Var, wrap
from .inputs import spec
from .validate import call_error, validate_all

REGISTRY: dict[str, "Formula"] = {}


def _not_finite(x: Any) -> bool:
    return isinstance(x, float) and not math.isfinite(x)


# Fast dispatch: while a formula computes numbers (``expr.functions._numeric`` > 0), a formula called from inside it
# gets plain values that were validated at the boundary, so it skips what only the faces need -- signature binding
# (Python binds the arguments and applies the defaults itself), the is-this-an-expression checks and validation.


@dataclass
class Formula:
    name: str
    func: Callable[..., Any]
    udf_name: str
    unit: str
    equation: str
    source: str
    category: str
    returns: str = "number"  # number | bool
    check: Callable[..., None] | None = None
    memo: bool = False  # cache numeric results of nested positional calls (a pure, often-repeated formula)
    # the largest result that is physically possible or within the stated horizon, and why (e.g. MFU <= 1): a
    # result past it is refused, naming the inputs that produced it (see :meth:`beyond`)
    at_most: tuple[float, str] | None = None
    # defaults that depend on other inputs (MEM_PER_GPU_GB's framework and precision): called with the inputs
    # given, it returns a value for some optional inputs; one left out (an empty cell) takes it instead of its
    # plain default, one given wins. dynamic_params: the inputs it fills (a worksheet function leaves them empty).
    dynamic_defaults: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    dynamic_params: tuple[str, ...] = ()
    dynamic_from: tuple[str, ...] = ()             # the inputs that drive them (one value each on a worksheet)
    # answers a question users ask by name (days, GPUs, GPU-hours, memory per GPU, what it costs): the worksheet
    # functions list it in the main category, every other formula under the building blocks
    question: bool = False
    params: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    expr: Expr = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.signature = sig = inspect.signature(self.func)
        self.params = tuple(sig.parameters)
        self.defaults = {k: p.default for k, p in sig.parameters.items() if p.default is not p.empty}
        for p in self.params:
            spec(p)  # every parameter must be a known input
        self.expr = wrap(self.func(**{p: Var(p) for p in self.params}))
        self.__doc__ = self.func.__doc__
        self.__name__ = self.name
        self._cache: dict[tuple[Any, ...], Any] | None = {} if self.memo else None
        # the body itself, for inner loops running inside :func:`numeric` on validated numbers (the planner's
        # search): no validation and no bookkeeping at all
        self.fast = self.func

    def cache_clear(self) -> None:
        """Forget the memoised results (``memo=True`` formulas)."""
        if self._cache is not None:
            self._cache.clear()

    # -- the Python face ------------------------------------------------------
    @property
    def summary(self) -> str:
        return (self.func.__doc__ or self.name).strip().splitlines()[0].strip()

    def bind(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Arguments by input name, defaults applied. Arguments that do not bind raise :class:`InputError`
        naming every missing input at once (or the unknown name with its close matches)."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:
            raise call_error(self.name, self.signature, args, kwargs) from None
        if self.dynamic_defaults is not None:
            for k, v in self.dynamic_defaults(bound.arguments).items():
                bound.arguments.setdefault(k, v)
        bound.apply_defaults()
        return dict(bound.arguments)

    def validate(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Every input checked; one :class:`InputError` names every input that is not allowed."""
        clean = validate_all(values)
        if self.check is not None:
            self.check(**clean)
        return clean

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _functions._numeric:  # nested inside a formula computing numbers: the fast path
            cache = self._cache
            if cache is None or kwargs:
                return self.func(*args, **kwargs)
            try:
                return cache[args]
            except KeyError:
                return cache.setdefault(args, self.func(*args))
        values = self.bind(*args, **kwargs)
        if any(isinstance(v, Expr) for v in values.values()):
            return Call(self, {k: wrap(v) for k, v in values.items()})
        clean = self.validate(values)
        try:
            with numeric():
                result = self.func(**clean)
        except ZeroDivisionError:
            raise self.undefined(clean, "divides by zero") from None
        except OverflowError:
            raise self.undefined(clean, "overflows") from None
        if isinstance(result, float) and not math.isfinite(result):
            raise self.undefined(clean, "overflows" if not math.isnan(result) else "has no defined result")
        if self.beyond(result):
            raise self.out_of_bounds(clean, result)
        return result

    def beyond(self, result: Any) -> bool:
        """The result is past the formula's stated bound (``at_most``)."""
        return (self.at_most is not None and isinstance(result, (int, float)) and not isinstance(result, bool)
                and result > self.at_most[0])

    def out_of_bounds(self, clean: Mapping[str, Any], result: float) -> InputError:
        """The error for inputs that are each allowed but together give a result past the formula's bound: it names
        the inputs to blame (as :meth:`undefined`), the result and the bound with its reason."""
        assert self.at_most is not None
        limit, why = self.at_most
        unit = "" if self.unit == "fraction" else f" {self.unit}"
        return self.undefined(
            clean, f"= {_number(result)}{unit}", bad=lambda x: _not_finite(x) or self.beyond(x),
            wanted=f"at most {_number(limit)}{unit}", why=why)

    def undefined(self, clean: Mapping[str, Any], what: str, bad: Callable[[Any], bool] = _not_finite,
                  wanted: str = "a finite result", why: str = "") -> InputError:
        """The error for inputs that are each allowed but give no finite result together: it names the
        inputs to blame -- those whose typical value (the input's example) gives a finite result again
        with every other input as given -- not the formula."""
        blamed = []
        for name, value in clean.items():
            s = spec(name)
            if s.kind not in ("float", "int") or s.example is None or value == s.example:
                continue
            try:
                trial = self.raw(**{**clean, name: s.example})
            except (ArithmeticError, ValueError, TypeError):
                continue
            if not bad(trial):
                blamed.append(name)
        if not blamed:  # no single input: every number far from its typical value, else every number
            far = [n for n, v in clean.items() if spec(n).kind in ("float", "int") and spec(n).example
                   and isinstance(v, (int, float)) and not isinstance(v, bool)
                   and (v == 0 or abs(math.log10(abs(v) / abs(spec(n).example))) > 3)]
            blamed = far or [n for n in clean if spec(n).kind in ("float", "int")]
        others = ", ".join(f"{n} = {clean[n]!r}" for n in clean if n not in blamed)
        detail = f"{self.udf_name} {what} with it" + (f" and {others}" if others else "") + (f"; {why}" if why else "")
        return InputError.all(
            InputError(n, clean[n], f"{spec(n).allowed}, and one that gives {self.udf_name} {wanted}",
                       detail) for n in blamed)

    def raw(self, **values: Any) -> Any:
        """Compute without validation (for inner loops whose inputs were validated once), numbers only."""
        if _functions._numeric:  # already computing numbers (e.g. inside :func:`numeric`): call the body directly
            return self.func(**values)
        with numeric():
            return self.func(**values)

    # -- the workbook face ---------------------------------------------------
    def excel(self, names: Names | None = None, subs: Mapping[Any, str] | None = None) -> str:
        """Excel formula text over ``names`` (default: each input's defined name)."""
        return self.expr.to_excel({p: spec(p).excel_name for p in self.params} if names is None else names, subs)

    # -- the UDF face ---------------------------------------------------------
    @property
    def udf_help(self) -> str:
        """Insert-Function description (Excel keeps at most 255 characters)."""
        text = f"{self.summary} [{self.unit}]. {self.equation}. Source: {self.source}"
        return text if len(text) <= 255 else text[:252] + "..."


def _number(x: float) -> str:
    """A result or a bound as a person reads it: 36,525 or 3.04e+301 or 1.33."""
    if abs(x) >= 1e9:
        return f"{x:.3g}"
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.4g}" if abs(x) < 1000 else f"{x:,.0f}"


@contextmanager
def numeric() -> Iterator[None]:
    """Compute numbers only inside this block: every ``Formula.raw`` and nested call takes the fast path.

    For inner loops (the planner's search) whose inputs were validated once at the boundary.
    """
    _functions._numeric += 1
    try:
        yield
    finally:
        _functions._numeric -= 1


@contextmanager
def symbolic() -> Iterator[None]:
    """Build expressions inside this block, even inside :func:`numeric` (a chain's steps, built when first used)."""
    saved, _functions._numeric = _functions._numeric, 0
    try:
        yield
    finally:
        _functions._numeric = saved


def formula(*, udf: str, **options: Any) -> Callable[[Callable[..., Any]], Formula]:
    """Register a formula: ``udf`` is its worksheet function's name, ``options`` the other fields of
    :class:`Formula` (unit, equation, source, category, ...). The body must use only arithmetic and the helpers of
    :mod:`xlcalc.expr`."""

    def deco(func: Callable[..., Any]) -> Formula:
        name = func.__name__
        if name in REGISTRY:
            raise ValueError(f"formula {name} is defined twice")
        return REGISTRY.setdefault(name, Formula(name=name, func=func, udf_name=udf, **options))

    return deco


def all_formulas() -> list[Formula]:
    """Every registered formula: importing the package (``xlcalc/__init__.py``) registers them all."""
    return list(REGISTRY.values())


def get_formula(name: str) -> Formula:
    """A formula by its Python name or its worksheet-function name (any case); an unknown name raises
    :class:`~xlcalc.errors.UnknownNameError` (a KeyError) naming it and the close matches."""
    key = str(name).strip().lower()
    for f in REGISTRY.values():
        if f.name == key or f.udf_name.lower() == key:
            return f
    known = [f.name for f in REGISTRY.values()] + [f.udf_name for f in REGISTRY.values()]
    raise UnknownNameError("formula", name, known)

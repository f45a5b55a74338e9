"""Input validation at the boundary, translated into one clear message.

Numbers are checked here directly (finite, a number and not text or TRUE/FALSE, whole for a count,
within the input's bounds); TRUE/FALSE and text options go through pydantic. Every refusal is an
:class:`~xlcalc.errors.InputError` naming the input, the value and what is allowed, with a hint when
the mistake has a likely cause (a percentage typed for a fraction, a value past a stated upper bound).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError

from .errors import InputError, missing
from .inputs import InputSpec, fmt_bound
from .inputs import spec as _spec
from .stack_names import name_key


@cache
def _adapter(spec: InputSpec) -> TypeAdapter:
    if spec.kind == "bool":
        typ: Any = Annotated[bool, Field(strict=False)]
    else:  # choice
        lower = BeforeValidator(lambda v: v.strip().lower() if isinstance(v, str) else v)  # any case, spaces around
        typ = Annotated[Literal[spec.choices], lower]  # type: ignore[valid-type]
    return TypeAdapter(typ)


def validate_one(spec: InputSpec, value: Any, name: str | None = None) -> Any:
    """``value`` as input ``spec`` takes it (a float, an int, a bool, one of the choices or a name).

    ``name`` is the input's name in the message when the caller calls it something else
    (e.g. the scenario's ``deadline_days`` checked as ``days``).
    """
    label = name or spec.name
    if spec.kind in ("float", "int"):
        return _number(spec, value, label)
    if spec.kind == "name":  # a catalog row's id or alias: the catalog's look-up says whether it knows it
        if isinstance(value, str) and value.strip():
            return value.strip()
        raise InputError(label, value, spec.allowed, "the input is empty" if isinstance(value, str) else "not text")
    if spec.kind == "bool" and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value not in (0, 1):
        raise InputError(label, value, spec.allowed, "TRUE/FALSE, or 1/0")
    if spec.reads is not None and isinstance(value, str) and value.strip():
        value = spec.reads(value)  # a text users type for a choice (e.g. a list of matrices): that choice
    if spec.aliases and isinstance(value, str) and name_key(value) in dict(spec.aliases):
        value = dict(spec.aliases)[name_key(value)]  # a name users know a choice by: that choice
    try:
        return _adapter(spec).validate_python(value)
    except ValidationError:
        detail = "text, not TRUE or FALSE" if spec.kind == "bool" and isinstance(value, str) else ""
        if spec.kind == "choice" and isinstance(value, str) and value.strip():
            close = difflib.get_close_matches(value.strip().lower(), list(spec.choices), n=1, cutoff=0.6)
            detail = f"did you mean \"{close[0]}\"?" if close else ""
        elif spec.kind == "choice" and not isinstance(value, str):
            detail = "not text"
        raise InputError(label, value, spec.allowed, detail) from None


def check_value(name: str, value: Any, label: str | None = None) -> Any:
    """Validate and normalise one value of input ``name`` (its spec in :mod:`xlcalc.inputs`); raise
    :class:`InputError` if not allowed.

    ``label`` names the value in the message when the caller calls it something else."""
    return validate_one(_spec(name), value, name=label)


def _number(spec: InputSpec, value: Any, label: str) -> Any:
    if isinstance(value, bool):
        raise InputError(label, value, spec.allowed, "TRUE/FALSE, not a number")
    if isinstance(value, str):
        raise InputError(label, value, spec.allowed, _text_detail(spec, value))
    if not isinstance(value, (numbers.Real, Decimal)):
        raise InputError(label, value, spec.allowed, "the input is required" if value is None
                         else f"not a number (a {type(value).__name__})")
    try:
        x = float(value)
    except (OverflowError, ValueError, TypeError):  # an integer beyond any float
        positive = str(value).lstrip()[:1] != "-"
        raise InputError(label, value, spec.allowed, _above(spec) if positive else "a number too large for a float") \
            from None
    if not math.isfinite(x):
        raise InputError(label, value, spec.allowed, "not a finite number")
    if spec.kind == "int" and not x.is_integer():
        raise InputError(label, value, spec.allowed, "got a fractional number")
    if (spec.gt is not None and not x > spec.gt) or (spec.ge is not None and not x >= spec.ge) \
            or (spec.lt is not None and not x < spec.lt):
        raise InputError(label, value, spec.allowed, spec.floor_reason)
    if spec.le is not None and not x <= spec.le:
        raise InputError(label, value, spec.allowed, _above(spec, x))
    if spec.kind == "int":
        return value if type(value) is int else int(x)
    return x


def _text_detail(spec: InputSpec, value: str) -> str:
    """Why text is refused for a number: empty, a percentage typed for a fraction ("40%": type 0.4), or text."""
    if not value.strip():
        return "the input is empty"
    try:
        percent = float(value.strip().removesuffix("%")) if spec.is_fraction and value.strip().endswith("%") else None
    except ValueError:
        percent = None
    if percent is not None and math.isfinite(percent):
        return f"text, not a number; for {percent:g}% type {percent / 100:g}"
    return "text, not a number"


def _above(spec: InputSpec, x: float | None = None) -> str:
    """Why a value above the input's upper bound is refused."""
    if spec.is_fraction and x is not None and 1 < x <= 100:
        return f"a fraction: {x:g} would be {x * 100:,.0f}%; for {x:g}% type {x / 100:g}"
    return f"the upper bound is {spec.limit_reason}" if spec.limit_reason else ""


# -- whole calls: every mistake at once ---------------------------------------------------

def validate_all(values: Mapping[str, Any], names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Validate several inputs at once; one :class:`InputError` lists every one that is not allowed.

    ``names`` maps a value's key to the input spec that checks it (default: the key itself).
    """
    return InputError.each(lambda key: validate_one(_spec((names or {}).get(key, key)), values[key], name=key), values)


def call_error(func_name: str, signature: inspect.Signature, args: Sequence[Any], kwargs: Mapping[str, Any],
               allowed: Callable[[str], str] | None = None) -> InputError:
    """The :class:`InputError` for a call whose arguments do not bind: every missing input named at once,
    an unknown keyword with its close matches, or too many values."""
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    known = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if not any(p.kind == p.VAR_KEYWORD for p in params) and (unknown := [k for k in kwargs if k not in known]):
        return InputError.all(_unknown_argument(func_name, k, kwargs[k], known) for k in unknown)
    if not any(p.kind == p.VAR_POSITIONAL for p in params) and len(args) > len(positional):
        return InputError("arguments", len(args), f"at most {len(positional)} values in order for "
                                                  f"{func_name}{signature}", "too many values")
    given = {p.name for p in positional[:len(args)]} | set(kwargs)
    if twice := [p.name for p in positional[:len(args)] if p.name in kwargs]:
        return InputError.all(InputError(n, kwargs[n], "given once", "given by position and by name") for n in twice)
    lacking = [p.name for p in params if p.default is p.empty and p.name not in given
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return missing(lacking, allowed or _allowed_of, where=func_name)


def _unknown_argument(func_name: str, name: str, value: Any, known: Sequence[str]) -> InputError:
    close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.6)
    hint = "no such input" + (": did you mean " + " or ".join(close) + "?" if close else "")
    return InputError(name, value, f"one of the inputs of {func_name}: {', '.join(known)}", hint)


def _allowed_of(name: str) -> str:
    try:
        return _spec(name).allowed
    except KeyError:
        return "given"


F = TypeVar("F", bound=Callable[..., Any])


def checked_inputs(**specs: str) -> Callable[[F], F]:
    """Decorate a Python entry point (e.g. the planner's ``plan``): arguments that do not bind raise
    :class:`InputError` (every missing one named, unknown names with their close matches), and the
    arguments named here are validated by the input spec given (``seq_len="seq_len"``),
    every mistake at once, before the function runs. None means "not given" and is left to the function."""

    def deco(func: F) -> F:
        sig = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                raise call_error(func.__name__, sig, args, kwargs,
                                 lambda n: _spec(specs[n]).allowed if n in specs else _allowed_of(n)) from None
            given = {k: v for k, v in bound.arguments.items() if k in specs and v is not None}
            validate_all(given, specs)  # raises every mistake at once; values stay as given
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return deco


def from_pydantic(exc: ValidationError, specs: Mapping[str, str] | None = None) -> InputError:
    """A pydantic ValidationError as one :class:`InputError` (every field it names), in the one format:
    never pydantic's own "Input should be ..." after "must be"."""
    errors = []
    for err in exc.errors():
        original = (err.get("ctx") or {}).get("error")
        if isinstance(original, InputError):
            errors.append(original)
            continue
        loc = err.get("loc") or ()
        name = ".".join(str(p) for p in loc) or "input"
        value = err.get("input")
        spec_name = (specs or {}).get(name, name)
        try:
            s = _spec(spec_name)
        except KeyError:
            s = None
        if s is not None and err.get("type") != "missing":
            try:
                validate_one(s, value, name=name)
            except InputError as e:
                errors.append(e)
                continue
        errors.append(InputError(name, None if err.get("type") == "missing" else value, _allowed_text(err, s),
                                 _detail_text(err)))
    return InputError.all(errors)


def _allowed_text(err: Mapping[str, Any], s: InputSpec | None) -> str:
    if s is not None:
        return s.allowed
    ctx = err.get("ctx") or {}
    kind = err.get("type", "")
    words = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
             "less_than_equal": "<= {le}"}
    if kind in words:
        bound = {k: fmt_bound(ctx[k]) if isinstance(ctx.get(k), (int, float)) else ctx.get(k) for k in ("gt", "ge", "lt", "le")}
        return "a number " + words[kind].format(**bound)
    if kind == "literal_error":
        return "one of " + str(ctx.get("expected", ""))
    plain = {**dict.fromkeys(("int_parsing", "int_type", "int_from_float"), "a whole number"),
             **dict.fromkeys(("float_parsing", "float_type", "finite_number"), "a finite number"),
             **dict.fromkeys(("bool_parsing", "bool_type"), "TRUE or FALSE"),
             "extra_forbidden": "a known field (this one is not)", "missing": "given"}
    return plain.get(kind) or ("text" if kind.startswith("string") else "a valid value")


def _detail_text(err: Mapping[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "missing":
        return "the input is required"
    if kind == "value_error":
        return str((err.get("ctx") or {}).get("error", "")) or ""
    return ""

"""Input validation at the boundary, with pydantic, translated into one clear message."""

from __future__ import annotations

import math
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError

from .errors import InputError
from .inputs import InputSpec


def _reject_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a number is required, not TRUE/FALSE")
    return value


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


@cache
def _adapter(spec: InputSpec) -> TypeAdapter:
    bounds = {k: getattr(spec, k) for k in ("gt", "ge", "lt", "le") if getattr(spec, k) is not None}
    if spec.kind == "bool":
        typ: Any = Annotated[bool, Field(strict=False)]
    elif spec.kind == "choice":
        typ = Annotated[Literal[spec.choices], BeforeValidator(_lower)]  # type: ignore[valid-type]
    elif spec.kind == "int":
        typ = Annotated[int, BeforeValidator(_reject_bool), Field(**bounds)]
    else:
        typ = Annotated[float, BeforeValidator(_reject_bool), Field(allow_inf_nan=False, **bounds)]
    return TypeAdapter(typ)


def validate_one(spec: InputSpec, value: Any) -> Any:
    if spec.kind == "bool" and isinstance(value, (int, float)) and not isinstance(value, bool):
        if value not in (0, 1):
            raise InputError(spec.name, value, spec.allowed)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(spec.name, value, spec.allowed, "not a finite number")
    try:
        return _adapter(spec).validate_python(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        kind = err.get("type", "")
        detail = ""
        if kind == "int_from_float":
            detail = "got a fractional number"
        elif kind in ("float_parsing", "int_parsing", "float_type", "int_type"):
            detail = "not a number"
        elif kind == "value_error":
            detail = str(err.get("ctx", {}).get("error", "")) or err.get("msg", "")
        raise InputError(spec.name, value, spec.allowed, detail) from None

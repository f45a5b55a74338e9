"""The stack files' shared reading, below both the memory frameworks and the planner's stack profiles.

``xlcalc/data/stacks/`` holds one TOML file per stack profile and ``names.toml`` (the names users know stacks
by). :mod:`xlcalc.planner.stack_files` validates every file in full; :mod:`xlcalc.frameworks` reads here only
which memory framework each name means (:func:`framework_names`), so ``--framework nemo`` or
``--framework hf-trainer`` answers as ``--stack`` does, without the memory model importing the planner.
"""

from __future__ import annotations

import tomllib
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from typing import Any

from .errors import CatalogError, InputError
from .untrusted import check_value, read_limited

__all__ = ["STACKS_DIR", "NAMES_FILE", "MAX_STACK_FILE_BYTES", "read_stack_file", "name_key", "framework_names",
           "unprofiled_names"]

# the packaged profiles (read through importlib.resources, as the catalogs' data is)
STACKS_DIR: Traversable = files("xlcalc") / "data" / "stacks"
NAMES_FILE = "names.toml"
MAX_STACK_FILE_BYTES = 64_000
"""The largest stack file read (the largest shipped is under 6 kB)."""


def read_stack_file(path: Traversable, label: str) -> dict[str, Any]:
    """The TOML table of one stack file (read_limited: a regular file, at most MAX_STACK_FILE_BYTES)."""
    try:
        with as_file(path) as real:  # the packaged file's own path (a temporary copy from a zip)
            raw = read_limited(real, "stack file", MAX_STACK_FILE_BYTES, "stack profile TOML file")
    except (OSError, InputError) as exc:
        detail = (f"{exc.detail}; it must be {exc.allowed}" if isinstance(exc, InputError)
                  else exc.strerror or str(exc))
        raise CatalogError(f"stack file {label} cannot be read: {detail}") from exc
    try:
        table = tomllib.loads(raw.decode("utf-8"))
        check_value("", table)  # no NaN or infinity (TOML has them), no control characters
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"stack file {label} is not valid TOML: {exc}") from exc
    except InputError as exc:
        raise CatalogError(f"stack file {label} is not valid: {exc}") from exc
    return table


def name_key(text: Any) -> str:
    """A stack's or framework's name as the look-ups key it: case, spaces and underscores ignored
    ("HF Trainer", "hf_trainer": hf-trainer)."""
    return str(text).strip().lower().replace(" ", "-").replace("_", "-")


def _names_file() -> dict[str, Any]:
    return read_stack_file(STACKS_DIR / NAMES_FILE, f"xlcalc/data/stacks/{NAMES_FILE}")


def unprofiled_names() -> dict[str, str]:
    """Software ``names.toml`` names without a profile (``[[no_profile]]``) -> why (the refusal says it)."""
    return {n["name"]: n["why"] for n in _names_file().get("no_profile", []) if "name" in n and "why" in n}


def framework_names() -> dict[str, str]:
    """Each name of ``names.toml`` -> the memory framework (an :mod:`xlcalc.frameworks` id) it means: a profile id
    its file's ``[framework] id``; an alias its own ``framework``, else its profile's. Names whose profile states
    no framework are left out. (Whether each id is a framework is checked by :mod:`xlcalc.frameworks` and by the
    stack files' full validation.)"""
    names = _names_file()
    own: dict[str, str] = {}
    for sid in names.get("profiles", []):
        framework = read_stack_file(STACKS_DIR / f"{sid}.toml", f"xlcalc/data/stacks/{sid}.toml").get("framework")
        if isinstance(framework, dict) and isinstance(framework.get("id"), str):
            own[sid] = framework["id"]
    out = dict(own)
    for alias in names.get("alias", []):
        framework = alias.get("framework") or own.get(alias.get("stack", ""))
        if framework:
            out[alias["name"]] = framework
    return out

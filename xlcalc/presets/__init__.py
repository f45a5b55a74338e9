"""Scenario presets shipped with xlcalc: one TOML file of :class:`~xlcalc.scenario.Scenario` fields each.

They are package data (``xlcalc/presets/<name>.toml``), read through :mod:`importlib.resources`, so
``xlcalc workbook --scenario seed002-70b-a800`` works the same from a checkout and from an installed
wheel. ``names()`` lists them, ``find(label)`` returns one preset's resource (or None), ``load(label)``
reads it as a scenario.
"""

from __future__ import annotations

from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..scenario import Scenario

__all__ = ["names", "find", "load"]


def names() -> list[str]:
    """The shipped presets' names (file names without ``.toml``), sorted."""
    return sorted(r.name.removesuffix(".toml") for r in files(__name__).iterdir() if r.name.endswith(".toml"))


def find(label: str) -> Traversable | None:
    """The preset ``label`` (``seed002-70b-a800`` or ``seed002-70b-a800.toml``), or None if none is shipped."""
    name = label if label.endswith(".toml") else f"{label}.toml"
    if not name.removesuffix(".toml") or "/" in name or "\\" in name:
        return None
    resource = files(__name__) / name
    return resource if resource.is_file() else None


def load(label: str) -> Scenario:
    """Read a shipped preset as a :class:`~xlcalc.scenario.Scenario`; an unknown name lists the shipped ones."""
    from ..scenario import load_scenario

    resource = find(label)
    if resource is None:
        raise InputError("scenario", label, f"a preset shipped with xlcalc ({', '.join(names())}) or a TOML file")
    with as_file(resource) as path:
        return load_scenario(path)

"""The stack profiles as data: one TOML file per profile in ``xlcalc/data/stacks/`` and ``names.toml`` beside them
(the profiles in the order the faces list them, the names users know stacks by, software with no profile).

Each file is validated on load as the catalogs are (:mod:`xlcalc.catalog`): an unknown key, a fact without a
source, a setting that is not a field of :class:`xlcalc.planner.Settings` or a value of the wrong type is refused
with a :class:`~xlcalc.errors.CatalogError` naming the file, the key, the value and what is allowed. Every
setting a profile pins is named by the fact that states it (``sets``) or is fitted (``[fitted]``, with how).
:mod:`xlcalc.planner.stacks` builds its profiles from what :func:`load_stack_files` returns.
"""

from __future__ import annotations

import difflib
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, NamedTuple, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import CatalogError
from ..frameworks import FRAMEWORKS
from ..stack_names import MAX_STACK_FILE_BYTES, NAMES_FILE, STACKS_DIR
from ..stack_names import read_stack_file as _read
from .settings_kinds import KINDS

__all__ = ["StackFiles", "load_stack_files", "STACK_FIELDS", "NAMES_FILE", "MAX_STACK_FILE_BYTES"]

# Settings a profile may pin: every field of xlcalc.planner.Settings by kind (the stack, framework and precision
# fields name profiles; a profile does not set them)
STACK_FIELDS: dict[str, type[BaseModel]] = {name: kind for kind in KINDS.values() for name in kind.model_fields}

_ID = r"^[a-z0-9][a-z0-9.\-]*$"


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Fact(_Table):
    what: str = Field(min_length=3, pattern=r"\S")
    source: str = Field(min_length=3, pattern=r"\S")
    sets: tuple[str, ...] = ()


class _Framework(_Table):
    id: str
    why: str = Field(min_length=3, pattern=r"\S")


class _Fitted(BaseModel):
    # the other keys are Settings fields fitted with the efficiency (checked as [settings] are)
    model_config = ConfigDict(extra="allow", frozen=True)

    how: str = Field(min_length=3, pattern=r"\S", description="what was fitted to what, and where (docs/validation.md)")
    matmul_efficiency: Optional[float] = Field(default=None, gt=0, le=1, strict=True)


class _StackFile(_Table):
    id: str = Field(pattern=_ID)
    name: str = Field(min_length=3, pattern=r"\S")
    sources: tuple[str, ...] = ()
    framework: Optional[_Framework] = None
    fitted: _Fitted
    settings: dict[str, Any] = {}
    fact: tuple[_Fact, ...] = Field(min_length=1)


class _Alias(_Table):
    name: str = Field(pattern=_ID)
    stack: str
    source: str = Field(min_length=3, pattern=r"\S")
    framework: Optional[str] = None


class _NoProfile(_Table):
    name: str = Field(pattern=_ID)
    why: str = Field(min_length=3, pattern=r"\S")


class _NamesFile(_Table):
    profiles: tuple[Annotated[str, Field(pattern=_ID)], ...] = Field(min_length=1)
    alias: tuple[_Alias, ...] = ()
    no_profile: tuple[_NoProfile, ...] = ()


_TABLES: dict[str, type[BaseModel]] = {"": _StackFile, "framework": _Framework, "fitted": _Fitted, "fact": _Fact,
                                       "alias": _Alias, "no_profile": _NoProfile}


class StackFiles(NamedTuple):
    """What the stack files say: each profile's Stack arguments in order, then the names users know stacks by."""

    profiles: tuple[dict[str, Any], ...]
    aliases: dict[str, tuple[str, str]]
    alias_frameworks: dict[str, str]
    no_profile: dict[str, str]


def load_stack_files(folder: str | Path | None = None, reserved: Optional[dict[str, str]] = None) -> StackFiles:
    """Read and validate ``names.toml`` and every profile it lists from ``folder`` (default: the packaged
    ``xlcalc/data/stacks/``); a :class:`CatalogError` naming the file, the key and the value otherwise.
    ``reserved``: names no profile or alias may take (name -> what it means)."""
    where: Traversable = Path(folder) if folder is not None else STACKS_DIR
    shown = str(folder) if folder is not None else "xlcalc/data/stacks"
    names_label = f"{shown}/{NAMES_FILE}"
    names = _validate(_NamesFile, _read(where / NAMES_FILE, names_label), names_label)
    profiles = names.profiles
    _check_names(names, names_label, reserved or {})
    try:
        present = {p.name for p in where.iterdir() if p.name.endswith(".toml")}
    except OSError as exc:
        raise CatalogError(f"stack files {shown} cannot be listed: {exc.strerror or exc}") from exc
    if stray := sorted(present - {NAMES_FILE} - {f"{sid}.toml" for sid in profiles}):
        raise CatalogError(f"stack files {shown}: {', '.join(stray)} not listed in {NAMES_FILE} profiles "
                           f"({', '.join(profiles)}); list each profile there, in the order the faces show them")
    loaded = tuple(_profile(where / f"{sid}.toml", f"{shown}/{sid}.toml", sid) for sid in profiles)
    return StackFiles(loaded, {a.name: (a.stack, a.source) for a in names.alias},
                      {a.name: a.framework for a in names.alias if a.framework is not None},
                      {n.name: n.why for n in names.no_profile})


def _validate(schema: type[BaseModel], raw: dict[str, Any], label: str) -> Any:
    try:
        return schema.model_validate(raw)
    except ValidationError as exc:
        raise CatalogError(f"stack file {label} is not valid: {'; '.join(_describe(e) for e in exc.errors())}") from exc


def _describe(err: Any) -> str:
    """One validation error as "[[fact]] #2 source = '': what is allowed"."""
    loc = list(err.get("loc", ()))
    table, key = "", ""
    for i, part in enumerate(loc):
        if isinstance(part, int) and i > 0:  # the n-th table of an array of tables ([[fact]]), or item of a list
            key = key.removesuffix(str(loc[i - 1]))
            key += f"[[{loc[i - 1]}]] #{part + 1} " if str(loc[i - 1]) in _TABLES else f"{loc[i - 1]} #{part + 1}"
        else:
            key += str(part) if not key or key.endswith(" ") else f".{part}"
            if i < len(loc) - 1 and str(part) in _TABLES:
                table = str(part)
    key = key.strip() or "file"
    if err.get("type") == "missing":
        return f"{key}: missing (required)"
    value = f" = {err['input']!r}" if not isinstance(err.get("input"), dict) else ""
    if err.get("type") == "extra_forbidden":
        where = f"[[{table}]]" if table in ("fact", "alias", "no_profile") else f"[{table}]" if table else "a stack file"
        return f"{key}{value}: not a key of {where} (allowed: {', '.join(_TABLES[table].model_fields)})"
    if err.get("type") == "string_pattern_mismatch":
        wanted = ("a lowercase name of letters, digits, '.' and '-'" if err.get("ctx", {}).get("pattern") == _ID
                  else "text, not blank")
        return f"{key}{value}: {wanted}"
    return f"{key}{value}: {err.get('msg', 'invalid')}"


def _profile(path: Traversable, label: str, sid: str) -> dict[str, Any]:
    """One profile's Stack arguments, every rule of the module docstring checked."""
    spec: _StackFile = _validate(_StackFile, _read(path, label), label)
    problems = []
    if spec.id != sid:
        problems.append(f"id = {spec.id!r}: the file's name without .toml ({sid!r})")
    fitted = dict(spec.fitted.model_extra or {})
    problems += _settings_problems("fitted", fitted) + _settings_problems("settings", spec.settings)
    if "matmul_efficiency" in spec.settings:
        problems.append(f"settings.matmul_efficiency = {spec.settings['matmul_efficiency']!r}: give the efficiency in "
                        "[fitted] (fitted to the stack's runs, docs/validation.md)")
    problems += [f"settings.{k} = {spec.settings[k]!r}: also in [fitted]; give it once"
                 for k in sorted(set(fitted) & set(spec.settings))]
    named = {k for fact in spec.fact for k in fact.sets}
    problems += [f"[[fact]] #{i + 1} sets = {k!r}: not a key of [settings] ({', '.join(spec.settings) or 'none'})"
                 for i, fact in enumerate(spec.fact) for k in fact.sets if k not in spec.settings]
    problems += [f"settings.{k} = {v!r}: no fact names it in sets (each pinned value is stated by a sourced fact; "
                 "a fitted one goes in [fitted])" for k, v in spec.settings.items() if k not in named]
    if spec.framework is not None and spec.framework.id not in FRAMEWORKS:
        problems.append(f"framework.id = {spec.framework.id!r}: a framework of xlcalc.frameworks "
                        f"({', '.join(FRAMEWORKS)})")
    if problems:
        raise CatalogError(f"stack file {label} is not valid: {'; '.join(problems)}")
    return dict(id=spec.id, name=spec.name, settings={**fitted, **spec.settings},
                facts=tuple((f.what, f.source) for f in spec.fact), matmul_efficiency=spec.fitted.matmul_efficiency,
                sources=spec.sources, framework=(spec.framework.id, spec.framework.why) if spec.framework else None)


def _settings_problems(table: str, values: dict[str, Any]) -> list[str]:
    """Each key a field of xlcalc.planner.Settings, each value of its type and range (strictly: no "4" for 4.0)."""
    problems = []
    for key, value in values.items():
        if (kind := STACK_FIELDS.get(key)) is None:
            close = difflib.get_close_matches(key, STACK_FIELDS, n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            problems.append(f"{table}.{key} = {value!r}: not a field of xlcalc.planner.Settings that a profile pins "
                            f"({hint}allowed: {', '.join(STACK_FIELDS)})")
            continue
        try:
            kind.model_validate({key: value}, strict=True)
        except ValidationError as exc:
            msg = "; ".join(e.get("msg", "invalid") for e in exc.errors())
            problems.append(f"{table}.{key} = {value!r}: {msg} (xlcalc.planner.Settings.{key})")
    return problems


def _check_names(names: _NamesFile, label: str, reserved: dict[str, str]) -> None:
    """Profile ids and names unique (none reserved), each alias pointing at a profile and a known framework."""
    problems, seen = [], dict(reserved)
    for what, name in ([("profiles", p) for p in names.profiles] + [("[[alias]] name", a.name) for a in names.alias]
                       + [("[[no_profile]] name", n.name) for n in names.no_profile]):
        if name in seen:
            problems.append(f"{what} = {name!r}: already {seen[name]}")
        seen.setdefault(name, f"in {what}")
    for a in names.alias:
        if a.stack not in names.profiles:
            problems.append(f"[[alias]] {a.name} stack = {a.stack!r}: one of profiles ({', '.join(names.profiles)})")
        if a.framework is not None and a.framework not in FRAMEWORKS:
            problems.append(f"[[alias]] {a.name} framework = {a.framework!r}: a framework of xlcalc.frameworks "
                            f"({', '.join(FRAMEWORKS)})")
    if problems:
        raise CatalogError(f"stack file {label} is not valid: {'; '.join(problems)}")

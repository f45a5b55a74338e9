"""One flag name, one form and one stated default per input, for every command.

An input's flag is its name with dashes (``n_gpus`` -> ``--n-gpus``). Its default is the scenario's
(:class:`xlcalc.scenario.Scenario`, the one declaration of the planning inputs' defaults), stated once in the help
text; the argparse default stays None so that a command can tell a typed value from a left-out one. An older
spelling (``plan --gpus``) is kept as a hidden alias that sets the same input. A TRUE/FALSE input takes both forms
on every command: ``--seq-parallel`` (on), ``--seq-parallel false`` and ``--no-seq-parallel`` (off).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..inputs import spec
from ..scenario import Scenario, check_field
from ..validate import check_value
from .fmt import cli_value

# What a command or a worksheet function is told that is not an input of the answer: what to print, where to read
# or write. Every other documented flag and argument is an input, declared once: its spec (xlcalc.inputs), a
# planner setting (xlcalc.planner.settings_kinds) or a scenario field under its spec's name (xlcalc.scenario.INPUTS);
# tests/test_inputs_declared.py holds every command and worksheet function to that. Option -> why it is no input.
OPTIONS: dict[str, str] = {
    "json": "how to print (JSON for scripts instead of tables), not what is computed",
    "ranges": "what to print: estimate also prints the low/high range of its answers",
    "top": "what to print: how many of the ranked plans plan (and PLAN) lists",
    "seed001_tiers": "what to print: budget shows seed 001's three budget tiers instead of one budget",
    "field": "what to print: which column of a catalog row GPU_SPEC and MODEL_SPEC return",
    "config": "where to read: a Hugging Face config.json whose figures are the model's inputs",
    "scenario": "where to read: a scenario TOML file whose fields are the inputs (xlcalc.scenario.Scenario)",
    "profile": "where to read: a calibration profile whose fitted values are the planner's settings",
    "out": "where to write: the file calibrate writes its profile to",
    "output": "where to write: the workbook file",
    "force": "whether to write: the workbook may replace an existing file",
    "follow_symlinks": "where to write: the workbook may be written through a symbolic link",
}

# An input's older flags, still accepted (hidden from --help): input name -> spellings.
ALIASES: dict[str, tuple[str, ...]] = {"n_gpus": ("--gpus",)}


DECLARED: Any = object()  # "the scenario's default", for a command's table of flags


def flag(name: str) -> str:
    """The one flag of input ``name``."""
    return "--" + name.replace("_", "-")


def input_default(name: str) -> Any:
    """The default of input ``name``: the scenario's field default (None where the input has none)."""
    field = Scenario.model_fields.get(name)
    return None if field is None else field.default


def _stated(name: str, text: str, default: Any) -> str:
    """``text`` with the default it states (the scenario's unless ``default`` is given: None states none)."""
    value = input_default(name) if default is DECLARED else default
    return text if value is None or "default" in text else f"{text} (default {shown(value)})"


def shown(value: Any) -> str:
    """A default as the help text states it."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def add_command(sub: argparse._SubParsersAction, name: str, help_text: str,
                description: str) -> argparse.ArgumentParser:
    """Subcommand ``name``'s parser. No flag may be abbreviated: a prefix of one flag never sets another."""
    return sub.add_parser(name, help=help_text, description=description, allow_abbrev=False)


def add_input(p: Any, name: str, text: str, default: Any = DECLARED, metavar: str = "X",
              aliases: tuple[str, ...] = ()) -> None:
    """``--name X`` for input ``name``; the help states the default once (the scenario's unless ``default`` is
    given: None states none). ``aliases``: this command's older spellings, hidden. The value is checked where the
    command uses it (the input's spec)."""
    p.add_argument(flag(name), dest=name, metavar=metavar, default=None, help=_stated(name, text, default))
    for alias in ALIASES.get(name, ()) + aliases:
        p.add_argument(alias, dest=name, metavar=metavar, default=None, help=argparse.SUPPRESS)


def tier_choices() -> str:
    """The price tiers as a help text lists them (the price_tier input's choices)."""
    *first, last = spec("price_tier").choices
    return ", ".join(first) + " or " + last


def given(args: argparse.Namespace, name: str, default: Any = DECLARED) -> Any:
    """Input ``name`` as typed (a number where it spells one), else ``default`` (DECLARED: the scenario's)."""
    if (value := getattr(args, name)) is not None:
        return cli_value(value)
    return input_default(name) if default is DECLARED else default


def checked(args: argparse.Namespace, name: str, default: Any = DECLARED) -> Any:
    """:func:`given`, validated as input ``name`` (its error names ``name``, the flag the user typed)."""
    value = given(args, name, default)
    return value if value is None else check_field(name, value)


def add_switch(p: Any, name: str, text: str, default: Any = DECLARED) -> None:
    """A TRUE/FALSE input in both forms: ``--name`` (TRUE), ``--name X`` (TRUE/FALSE, 1/0) and ``--no-name``
    (FALSE, hidden). Read it with :func:`switch_value`."""
    p.add_argument(flag(name), dest=name, nargs="?", const="TRUE", default=None, metavar="TRUE|FALSE",
                   help=_stated(name, text, default))
    p.add_argument("--no-" + name.replace("_", "-"), dest=name, action="store_const", const="FALSE",
                   help=argparse.SUPPRESS)


def switch_value(args: argparse.Namespace, name: str) -> bool | None:
    """The TRUE/FALSE a switch was given as (None when left out), checked as the input's spec takes it."""
    value = getattr(args, name)
    return None if value is None else bool(check_value(name, cli_value(value), label=name))

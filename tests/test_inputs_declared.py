"""Every input declared once (issue 22, item 1): every documented flag of every command, every workbook input cell
and every worksheet function argument is derived from one declaration, and an input declared anywhere else fails.

The one declarations: an input spec (``xlcalc.inputs``: unit, meaning, bounds with their reason, kind or choices);
a planner setting (``xlcalc.planner.Settings``, declared by kind with its default in ``planner/settings_kinds.py``;
a switch flag names the setting it sets, ``xlcalc.cli.settings_flags.SETTING_SWITCHES``); a scenario field checked
by a spec under another name (``xlcalc.scenario.INPUTS``, e.g. ``deadline_days`` as ``days``); or a command option
that is no input, with its reason (``xlcalc.cli.flags.OPTIONS``: what to print, where to read or write).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from xlcalc.cli import COMMANDS, build_parser
from xlcalc.cli.flags import OPTIONS
from xlcalc.cli.settings_flags import SETTING_SWITCHES
from xlcalc.inputs import all_specs
from xlcalc.planner import Settings
from xlcalc.registry import all_formulas
from xlcalc.scenario import INPUT_BY_FIELD, INPUTS

SPECS = all_specs()
SETTINGS = Settings.model_fields

def declared_as(name: str, arg_specs: dict[str, str] | None = None) -> str | None:
    """Where input ``name`` is declared, in words; None where it is declared nowhere but where it is used.
    ``arg_specs``: a worksheet function's arguments whose spec has another name."""
    if name in SPECS:
        return "spec"
    if arg_specs and arg_specs.get(name) in SPECS:
        return f"spec {arg_specs[name]}"
    cell = INPUT_BY_FIELD.get(name)
    if cell is not None and cell.spec_name in SPECS:
        return f"scenario field checked as spec {cell.spec_name}"
    if name in SETTINGS:
        return "planner setting"
    if name in SETTING_SWITCHES and SETTING_SWITCHES[name][0] in SETTINGS:
        return f"switch of planner setting {SETTING_SWITCHES[name][0]}"
    if name in OPTIONS:
        return "command option"
    return None


def documented_flags(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    """(command, action) of every flag --help shows, of each subcommand (or of ``parser`` itself without any)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands = {name: p for s in subs for name, p in s.choices.items()} or {parser.prog: parser}
    for command, p in commands.items():
        for a in p._actions:
            if a.option_strings and a.help != argparse.SUPPRESS and a.dest != "help" \
                    and not isinstance(a, argparse._VersionAction):
                yield command, a


def undeclared(uses: Iterable[tuple[str, str]], arg_specs: dict[str, str] | None = None) -> list[str]:
    """Each ``(where, input name)`` whose input is declared nowhere but there, as "where: name"."""
    return sorted({f"{where}: {name}" for where, name in uses
                   if declared_as(name, arg_specs) is None})


def flag_uses(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    return [(f"{command} {a.option_strings[-1]}", a.dest) for command, a in documented_flags(parser)]


PARSER = build_parser()
FLAGS = list(documented_flags(PARSER))


def _udf_modules():
    pytest.importorskip("xlwings")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "udfs"))
    return importlib.import_module("xlcalc_udfs"), importlib.import_module("xlcalc_udf_tables")


def _table_arguments() -> list[tuple[str, str]]:
    _, tables = _udf_modules()
    return [(fn, p) for fn in tables.TABLE_UDFS for p in inspect.signature(getattr(tables, fn)).parameters]


# --- the commands -------------------------------------------------------------------------------------------------

def test_every_documented_flag_of_every_command_is_declared_once():
    assert {c for c, _ in FLAGS} == set(COMMANDS)
    assert len(FLAGS) > 300
    assert undeclared(flag_uses(PARSER)) == []
    ways = {declared_as(a.dest) for _, a in FLAGS}
    # each way is in use: specs, settings, the scenario's other names, switches and options
    assert {"spec", "planner setting", "command option", "scenario field checked as spec days",
            "switch of planner setting matmul_efficiency_of_mamf"} <= ways


def test_an_undeclared_flag_is_reported():
    # a throwaway command with one flag declared nowhere (and one declared, one option) beside it
    parser = argparse.ArgumentParser(prog="xlcalc")
    sub = parser.add_subparsers()
    p = sub.add_parser("made-up")
    p.add_argument("--made-up-input", help="an input that has no spec")
    p.add_argument("--params-b", help="model parameters, billions")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--hidden-old", dest="also_made_up", help=argparse.SUPPRESS)  # hidden: an alias, not checked
    assert undeclared(flag_uses(parser)) == ["made-up --made-up-input: made_up_input"]
    # a parser without subcommands is walked as one command
    solo = argparse.ArgumentParser(prog="solo")
    solo.add_argument("--over-the-moon", help="declared nowhere")
    assert undeclared(flag_uses(solo)) == ["solo --over-the-moon: over_the_moon"]


def test_options_are_no_inputs_each_with_its_reason_and_each_used():
    assert not set(OPTIONS) & (set(SPECS) | set(SETTINGS) | set(INPUT_BY_FIELD)), \
        "an option that is also an input is declared twice"
    assert all(reason.strip() and "\n" not in reason for reason in OPTIONS.values())
    used = {a.dest for _, a in FLAGS} | {name for _, name in _table_arguments()}
    assert set(OPTIONS) <= used, set(OPTIONS) - used  # no option left over from a flag that is gone


def test_a_switch_sets_a_true_false_setting_away_from_its_default():
    for flag_name, (field, value, text) in SETTING_SWITCHES.items():
        assert SETTINGS[field].annotation is bool and SETTINGS[field].default is not value, flag_name
        assert flag_name not in SETTINGS or flag_name == field, flag_name
        assert text.strip()


def test_a_flag_takes_what_its_spec_allows():
    # a flag that lists its values lists the spec's; an on/off flag is a TRUE/FALSE spec or setting
    listed = switched = 0
    for command, a in FLAGS:
        s = SPECS.get(a.dest)
        if a.choices is not None and s is not None:
            assert set(a.choices) == set(s.choices), (command, a.dest, a.choices, s.choices)
            listed += 1
        if isinstance(a, argparse._StoreTrueAction) and a.dest not in OPTIONS:
            kind = s.kind if s is not None else "bool" if SETTINGS.get(
                SETTING_SWITCHES.get(a.dest, (a.dest,))[0], None) is not None else None
            assert kind == "bool", (command, a.dest)
            switched += 1
    assert listed >= 4 and switched >= 6  # --quant, --sharding, --recipe, --job; --fp8, --own and the switches


def test_the_command_level_inputs_have_their_specs():
    # the inputs only a command's own flag used to declare
    named = {"model", "gpu", "recipe", "price_tier", "own", "sharding", "quant", "fp8", "max_micro_batch",
             "peak_memory_gb", "over_days", "over_gpus", "stack", "global_batch_tokens"}
    assert named <= set(SPECS)
    for name in ("max_micro_batch", "peak_memory_gb", "over_days", "over_gpus"):
        assert SPECS[name].le is not None and SPECS[name].limit_reason, name  # a bound with its reason


# --- the workbook's input cells ---------------------------------------------------------------------------------

def test_every_workbook_input_cell_is_checked_by_a_spec():
    assert len(INPUTS) > 60
    assert [c.field for c in INPUTS if c.spec_name not in SPECS] == []
    # a cell under another name is that spec's input: the same unit (e.g. deadline_days is days)
    renamed = {c.field: c.spec_name for c in INPUTS if c.field != c.spec_name}
    assert renamed["deadline_days"] == "days" and renamed["ckpt_save_s"] == "save_s"
    assert all(c.field not in SPECS for c in INPUTS if c.field != c.spec_name), \
        "a cell checked by another spec while a spec of its own name exists: two declarations"


# --- the worksheet functions -------------------------------------------------------------------------------------

def test_every_registry_formula_argument_is_a_spec():
    # a formula's argument is the input itself: a spec of its name, never a setting, option or other name
    formulas = all_formulas()
    assert len(formulas) > 150
    assert sorted({f"{f.udf_name}: {p}" for f in formulas for p in f.params if p not in SPECS}) == []


def test_every_worksheet_function_argument_is_declared_once():
    udfs, tables = _udf_modules()
    generated = [(n, p) for n in udfs.__all__ if callable(fn := getattr(udfs, n)) and n not in tables.TABLE_UDFS
                 for p in inspect.signature(fn).parameters]
    assert len(generated) > 1000
    assert undeclared(generated) == []
    table_args = _table_arguments()
    assert {"model", "gpu", "tier", "field", "top"} <= {p for _, p in table_args}
    assert undeclared(table_args, tables.ARG_SPECS) == []
    assert all(v in SPECS and k not in SPECS for k, v in tables.ARG_SPECS.items())


def test_an_undeclared_worksheet_argument_is_reported():
    def MADE_UP(params_b, made_up_input, top=5):
        return params_b

    uses = [("MADE_UP", p) for p in inspect.signature(MADE_UP).parameters]
    assert undeclared(uses) == ["MADE_UP: made_up_input"]

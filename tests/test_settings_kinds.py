"""The planner's settings split by what they are (issue 22, item 2): the stack's facts, the recipe's memory inputs,
overrides of the GPU's figures and the price, each declared once in its own class (xlcalc.planner.settings_kinds),
joined by Settings; the CLI groups its flags the same way and states the declared defaults."""

from __future__ import annotations

import re

import pytest

from xlcalc.cli import main
from xlcalc.cli.settings_flags import SETTING_FLAGS
from xlcalc.planner import Settings
from xlcalc.planner.hardware import resolve_hardware
from xlcalc.planner.settings_kinds import KINDS, HardwareOverrides, MemoryRecipe, PriceInputs, StackFacts
from xlcalc.planner.stacks import STACKS

PROFILE_CHOICE = {"stack", "framework", "precision"}  # what names the profiles that fill the kinds


def test_every_setting_is_of_one_kind():
    seen: dict[str, str] = {}
    for kind, model in KINDS.items():
        for name in model.model_fields:
            assert name not in seen, (name, kind, seen.get(name))
            seen[name] = kind
    assert set(seen) | PROFILE_CHOICE == set(Settings.model_fields)
    assert set(KINDS.values()) == {StackFacts, MemoryRecipe, HardwareOverrides, PriceInputs}


@pytest.mark.parametrize("stack", list(STACKS))
def test_a_stack_sets_stack_facts_and_its_frameworks_recipe_never_the_gpu_or_the_price(stack):
    allowed = set(StackFacts.model_fields) | set(MemoryRecipe.model_fields)
    assert set(STACKS[stack].settings) <= allowed, set(STACKS[stack].settings) - allowed


def test_the_gpu_is_resolved_from_the_catalog_and_its_overrides_not_from_the_recipe_or_the_facts():
    base = resolve_hardware("h100-sxm", Settings(stack="planner"), 64)
    recipe = Settings(stack="planner", bytes_weights=4, grads_freed=True, overhead_gb=9, link_efficiency=0.6,
                      tp_overlap=0.5)
    assert resolve_hardware("h100-sxm", recipe, 64) == base
    assert resolve_hardware("h100-sxm", Settings(stack="planner", hbm_tb_s=2.0), 64).hbm_tb_s == 2.0


def test_each_kind_reads_back_as_its_own_model():
    st = Settings(stack="megatron", hbm_tb_s=3.0, usd_per_gpu_hour=2.5)
    assert st.part(HardwareOverrides).hbm_tb_s == 3.0
    assert st.part(PriceInputs).usd_per_gpu_hour == 2.5
    assert st.part(StackFacts).elementwise_factor == st.elementwise_factor
    assert set(st.part(MemoryRecipe).model_dump()) == set(MemoryRecipe.model_fields)


def test_no_flag_types_a_default_of_its_own():
    # a number after "default" would be a second declaration: the help reads it from the kind's field ({default})
    for name, text in SETTING_FLAGS.items():
        assert not re.search(r"default:? \d", text), name
        assert name in Settings.model_fields


@pytest.mark.parametrize("command", ["plan", "calibrate"])
def test_help_groups_the_settings_by_kind_with_the_declared_defaults(capsys, command):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for kind in KINDS:
        assert f"settings: {kind}:" in text
    assert "--link-efficiency LINK_EFFICIENCY achieved collective bandwidth / link bandwidth (default " \
           f"{StackFacts.model_fields['link_efficiency'].default:g})" in text
    assert f"(default {MemoryRecipe.model_fields['overhead_gb'].default:g})" in text

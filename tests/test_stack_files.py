"""The stack profiles as data (xlcalc/data/stacks/, issue 22 item 2): the shipped files keep their rules (every fact
sourced, every pinned setting a Settings field stated by a fact, ids the file names, aliases pointing at profiles),
the numbers derived in the papers equal the files' values, and a malformed file is refused naming file, key and
value."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from xlcalc.errors import CatalogError
from xlcalc.planner import Settings, stacks
from xlcalc.planner.kernels import FLASH_ATTENTION_2_SHARE
from xlcalc.planner.stack_files import MAX_STACK_FILE_BYTES, NAMES_FILE, STACK_FIELDS, load_stack_files
from xlcalc.planner.stacks import ALIASES, NO_PROFILE, PLANNER, STACKS, stack_id

FOLDER = Path(__file__).resolve().parent.parent / "xlcalc" / "data" / "stacks"
RAW = {p.stem: tomllib.loads(p.read_text(encoding="utf-8")) for p in sorted(FOLDER.glob("*.toml"))
       if p.name != NAMES_FILE}
NAMES = tomllib.loads((FOLDER / NAMES_FILE).read_text(encoding="utf-8"))


# -- the shipped files ---------------------------------------------------------------------------------------------

def test_one_file_per_profile_named_by_its_id_in_the_listed_order():
    assert NAMES["profiles"] == list(STACKS)
    assert set(RAW) == set(STACKS)
    assert all(raw["id"] == stem for stem, raw in RAW.items())
    assert stacks.DEFAULT_STACK in STACKS and PLANNER not in STACKS


def test_every_fact_is_sourced_and_every_pinned_setting_is_stated_by_one():
    for sid, raw in RAW.items():
        for fact in raw["fact"]:
            assert fact["what"].strip() and fact["source"].strip(), (sid, fact)
        named = {k for fact in raw["fact"] for k in fact.get("sets", ())}
        assert set(raw["settings"]) == named, sid  # each pinned value has its fact, each fact's setting is pinned
        fitted = set(raw["fitted"]) - {"how", "matmul_efficiency"}
        assert fitted == {"elementwise_factor"}, sid
        assert "docs/validation.md" in raw["fitted"]["how"], sid  # where the fit is reported


def test_settings_keys_are_fields_of_settings_and_the_profiles_are_valid_settings():
    profile_fields = set(Settings.model_fields) - {"stack", "framework", "precision"}
    assert set(STACK_FIELDS) == profile_fields
    for sid, stack in STACKS.items():
        assert set(stack.settings) <= profile_fields, sid
        st = Settings(stack=sid)  # every value of the right type and range: Settings takes them
        assert all(getattr(st, k) == v for k, v in stack.settings.items()), sid


def test_every_alias_names_a_profile_and_names_do_not_collide():
    assert {a["name"] for a in NAMES["alias"]} == set(ALIASES)
    for name, (sid, source) in ALIASES.items():
        assert sid in STACKS and source.strip(), name
        assert stack_id(name.upper().replace("-", " ")) == sid  # reachable as users type it
    assert set(stacks.ALIAS_FRAMEWORKS) <= set(ALIASES)
    names = [*STACKS, *ALIASES, *NO_PROFILE, PLANNER]
    assert len(names) == len(set(names))
    assert all(why.strip() for why in NO_PROFILE.values())


def test_the_derived_numbers_in_the_files_are_the_papers_and_the_constants():
    # Dao 2023 §4.1: FlashAttention-2 is 1.3-1.5x faster than FlashAttention in Triton forward (the middle, 1.4) and
    # about 2x backward; the backward has 2.5x the forward's FLOPs: time per forward-FLOP unit over a step
    forward_slower, backward_slower, backward_flops = (1.3 + 1.5) / 2, 2.0, 2.5
    triton = (1 + backward_flops) / (1 * forward_slower + backward_flops * backward_slower)
    assert RAW["llm-foundry"]["settings"]["attention_kernel_speed"] == pytest.approx(triton, rel=1e-12)
    assert stacks.TRITON_FLASH_ATTENTION_SPEED == pytest.approx(triton, rel=1e-12)
    # Dao 2023: FlashAttention-2 "reaching 50-73% of the theoretical maximum FLOPs/s on A100", the low end causal
    fa2_a100 = 50 / 100
    for sid in ("llm-foundry", "fsdp-eager", "fsdp-compiled"):
        assert RAW[sid]["settings"]["attention_efficiency"] == fa2_a100 == FLASH_ATTENTION_2_SHARE["a100-80gb"], sid
        assert RAW[sid]["settings"]["attention_by_generation"] is True, sid
    # the non-matmul factor is fitted once for every stack (tests/test_validation_runs.py checks the fit)
    assert {raw["fitted"]["elementwise_factor"] for raw in RAW.values()} == {stacks.NONMATMUL_FACTOR}


def test_the_loader_gives_what_the_files_say():
    files = load_stack_files(FOLDER)
    for spec, (sid, raw) in zip(files.profiles, ((s, RAW[s]) for s in NAMES["profiles"])):
        assert spec["id"] == sid and spec["name"] == raw["name"]
        assert spec["facts"] == tuple((f["what"], f["source"]) for f in raw["fact"])
        assert spec["settings"] == {"elementwise_factor": raw["fitted"]["elementwise_factor"], **raw["settings"]}
        assert spec["matmul_efficiency"] == raw["fitted"]["matmul_efficiency"] == STACKS[sid].matmul_efficiency
    assert files.no_profile == {n["name"]: n["why"] for n in NAMES["no_profile"]}


# -- malformed files ------------------------------------------------------------------------------------------------

@pytest.fixture
def copy(tmp_path: Path) -> Path:
    folder = tmp_path / "stacks"
    shutil.copytree(FOLDER, folder)
    return folder


def _edit(folder: Path, name: str, old: str, new: str) -> None:
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (name, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _refused(folder: Path, *expected: str) -> str:
    with pytest.raises(CatalogError) as err:
        load_stack_files(folder)
    message = str(err.value)
    for part in expected:
        assert part in message, (part, message)
    return message


def test_a_clean_copy_loads():
    assert load_stack_files(FOLDER) == load_stack_files()


# one edit of a shipped file -> what the refusal names (file, key, value, what is allowed)
ONE_EDIT = {
    "an unknown key": ("megatron.toml", '\nid = "megatron"\nname', '\nid = "megatron"\ncolour = "blue"\nname',
                       ("colour", "'blue'", "allowed: id, name")),
    "an unknown key in a fact": ("megatron-2021.toml", 'sets = ["grad_bytes"]\n',
                                 'sets = ["grad_bytes"]\nsourced = true\n',
                                 ("[[fact]] #2 sourced = True: not a key of [[fact]]", "allowed: what, source, sets")),
    "a fact without a source": ("megatron-2021.toml", 'source = "FlashAttention appeared in 2022"\n', "",
                                ("[[fact]] #3 source", "missing")),
    "a fact with an empty source": ("megatron-2021.toml", 'source = "FlashAttention appeared in 2022"\n',
                                    'source = ""\n', ("[[fact]] #3 source = \'\'",)),
    "a setting that is not a Settings field": ("megatron.toml", "fp8_cast_bytes = 4.0\n", "fp8_cast_byte = 4.0\n",
                                               ("settings.fp8_cast_byte = 4.0", "not a field of xlcalc.planner.Settings",
                                                "did you mean fp8_cast_bytes")),
    "a string where a number is required": ("megatron-2021.toml", "grad_bytes = 2\n", 'grad_bytes = "2"\n',
                                            ("settings.grad_bytes = '2'", "valid number")),
    "a value out of range": ("llm-foundry.toml", "attention_efficiency = 0.5\n", "attention_efficiency = 1.5\n",
                             ("settings.attention_efficiency = 1.5", "less than or equal to 1")),
    "NaN": ("llm-foundry.toml", "attention_efficiency = 0.5\n", "attention_efficiency = nan\n",
            ("attention_efficiency", "nan", "finite")),
    "a pinned setting no fact states": ("megatron-2021.toml", 'sets = ["flash_attention"]\n', "",
                                        ("settings.flash_attention = False", "no fact names it")),
    "a fitted efficiency outside 0-1": ("megatron.toml", "matmul_efficiency = 0.774\n", "matmul_efficiency = 7.74\n",
                                        ("fitted.matmul_efficiency = 7.74", "less than or equal to 1")),
    "an id that is not the file name": ("fsdp-eager.toml", 'id = "fsdp-eager"\n', 'id = "fsdp"\n',
                                        ("id = 'fsdp'", "'fsdp-eager'")),
}


@pytest.mark.parametrize("case", ONE_EDIT)
def test_a_malformed_file_is_refused_naming_file_key_and_value(copy, case):
    name, old, new, expected = ONE_EDIT[case]
    _edit(copy, name, old, new)
    _refused(copy, name, *expected)


def test_an_alias_to_no_profile_and_a_stray_file_are_refused(copy):
    _edit(copy, NAMES_FILE, 'name = "mcore"\nstack = "megatron"\n', 'name = "mcore"\nstack = "megatron-3"\n')
    _refused(copy, NAMES_FILE, "[[alias]] mcore stack = 'megatron-3'", "one of profiles")
    _edit(copy, NAMES_FILE, 'stack = "megatron-3"\n', 'stack = "megatron"\n')
    shutil.copy(copy / "megatron.toml", copy / "megatron-3.toml")
    _refused(copy, "megatron-3.toml", "not listed in names.toml")


def test_a_name_taken_twice_or_reserved_is_refused(copy):
    _edit(copy, NAMES_FILE, 'name = "mcore"\n', 'name = "fsdp-eager"\n')
    _refused(copy, NAMES_FILE, "[[alias]] name = 'fsdp-eager'", "already in profiles")
    with pytest.raises(CatalogError, match="'planner': already the planner's own settings"):
        _edit(copy, NAMES_FILE, 'name = "fsdp-eager"\n', 'name = "planner"\n')
        load_stack_files(copy, reserved={PLANNER: "the planner's own settings"})


def test_an_oversized_file_is_refused(copy):
    with (copy / "megatron.toml").open("a", encoding="utf-8") as f:
        f.write("#" * MAX_STACK_FILE_BYTES + "\n")
    _refused(copy, "megatron.toml", f"at most {MAX_STACK_FILE_BYTES:,} bytes")


def test_a_listed_profile_without_its_file_is_refused(copy):
    (copy / "megatron-2021.toml").unlink()
    _refused(copy, "megatron-2021.toml", "cannot be read", "No such file")

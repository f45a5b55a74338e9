"""PLAN(...): the planner as a worksheet function that spills its table."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "udfs"))

import xlcalc_udfs as u  # noqa: E402
from xlcalc.errors import CatalogError, InputError  # noqa: E402
from xlcalc.planner import Settings, plan  # noqa: E402
from xlcalc.planner.answer import PLAN_COLUMNS  # noqa: E402
from xlcalc.planner.stacks import DEFAULT_STACK  # noqa: E402


def cell(x):
    return [[x]]  # xlwings hands every argument over as a 2-D range (ndim=2)


ARGS = dict(model="llama2-70b", gpu="H100", n_gpus=1024.0, seq_len=4096.0, global_batch_tokens=4194304.0,
            tokens_t=2.0, scaleout_gb_s=50.0, top=3.0, stack=None)


def call(**overrides):
    values = {**ARGS, **overrides}
    return u.PLAN(*(None if values[k] is None else cell(values[k]) for k in inspect.signature(u.PLAN).parameters))


def test_plan_spills_header_and_the_planners_best_plans():
    table = call()
    assert table[0] == list(PLAN_COLUMNS)
    assert [row[0] for row in table[1:4]] == [1, 2, 3]
    result = plan("llama2-70b", gpu="H100", n_gpus=1024, seq_len=4096, global_batch_tokens=4194304, tokens_t=2,
                  settings=Settings(scaleout_gb_s=50), top=3)
    for row, p in zip(table[1:4], result.plans):
        assert dict(zip(PLAN_COLUMNS[1:], row[1:])) == {k: getattr(p, k) for k in PLAN_COLUMNS[1:]}
    # then the inputs the planner assumed, as the CLI states them: the default stack, the catalog's price
    assumed = [row for row in table[4:] if row[0] != "range"]
    assert [row[0] for row in table[4:]] == ["assumed"] * len(assumed) + ["range"] * (len(table) - 4 - len(assumed))
    assert all(len(row) == len(PLAN_COLUMNS) and row[0] == "assumed" for row in assumed)
    assert [row[1] for row in assumed] == ["stack", "usd_per_gpu_hour"]
    assert [row[3] for row in assumed] == [result.assumed["stack"].basis, result.assumed["usd_per_gpu_hour"].basis]
    assert assumed[1][2] == result.assumed["usd_per_gpu_hour"].value
    assert assumed[0][2] == DEFAULT_STACK and "default" in assumed[0][3]


def test_plan_states_the_published_tokens_it_plans_without_tokens_t():
    # Touvron et al. 2023 (Llama 2) Table 1: 2.0T tokens; the cell left empty plans them and says so
    table = call(tokens_t=None)
    row = next(r for r in table if r[:2] == ["assumed", "tokens_t"])
    assert row[2] == 2.0 and row[3].startswith("published, ")


def test_empty_sequence_and_batch_cells_plan_the_catalogs_as_the_cli_without_the_flags(capsys):
    import json

    from xlcalc.cli import main

    # Llama 3.1 405B: pre-trained at 8,192 tokens, 2,048 sequences per step (Dubey et al. 2024, Table 4 / §3.4.1)
    table = call(model="llama3.1-405b", n_gpus=16384.0, seq_len=None, global_batch_tokens=None, tokens_t=15.6)
    assumed = {r[1]: r[2] for r in table if r[0] == "assumed"}
    assert (assumed["seq_len"], assumed["global_batch_tokens"]) == (8192, 2048 * 8192)
    assert main(["plan", "--model", "llama3.1-405b", "--gpu", "H100", "--n-gpus", "16384", "--tokens-t", "15.6",
                 "--scaleout-gb-s", "50", "--top", "3", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    days = PLAN_COLUMNS.index("days")
    assert [r[days] for r in table[1:4]] == [p["days"] for p in cli["plans"]]
    # a model without a published batch: the empty batch cell is named, as the CLI names --global-batch-tokens
    with pytest.raises(InputError, match="^global_batch_tokens = \\(empty\\) is not allowed"):
        call(model="llama3.1-8b", global_batch_tokens=None)


def test_plan_takes_the_stack_as_the_cli_does(capsys):
    import json

    from xlcalc.cli import main

    table = call(stack="fsdp-eager")
    assert main(["plan", "--model", "llama2-70b", "--gpu", "H100", "--n-gpus", "1024", "--seq-len", "4096",
                 "--global-batch-tokens", "4194304", "--tokens-t", "2", "--scaleout-gb-s", "50", "--stack",
                 "fsdp-eager", "--top", "3", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    rows = [dict(zip(PLAN_COLUMNS, r)) for r in table[1:4]]
    assert [(r["tp"], r["pp"], r["days"]) for r in rows] == [(p["tp"], p["pp"], p["days"]) for p in cli["plans"]]
    assert "stack" not in [r[1] for r in table if r[0] == "assumed"]  # named: not assumed
    # FSDP's 4 + 4 + 8 bytes per parameter (the profile's sourced fact) against the planner's own 2 + 4 + 12
    assert rows[0]["days"] != call(stack="planner")[1][PLAN_COLUMNS.index("days")]


def test_an_empty_stack_cell_plans_the_default_stack_as_the_cli_without_stack(capsys):
    import json

    from xlcalc.cli import main

    empty, named = call(), call(stack=DEFAULT_STACK)
    assert main(["plan", "--model", "llama2-70b", "--gpu", "H100", "--n-gpus", "1024", "--seq-len", "4096",
                 "--global-batch-tokens", "4194304", "--tokens-t", "2", "--scaleout-gb-s", "50", "--top", "3",
                 "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert empty[1:4] == named[1:4]  # the plans: the same with the default named
    days = PLAN_COLUMNS.index("days")
    assert [r[days] for r in empty[1:4]] == [p["days"] for p in cli["plans"]]
    assert cli["assumed"]["stack"]["value"] == DEFAULT_STACK


@pytest.mark.parametrize("alias, sid", [("torchtitan", "fsdp-eager"), ("HF Trainer", "fsdp-eager"),
                                        ("NeMo", "megatron"), ("megatron-core", "megatron"),
                                        ("composer", "llm-foundry")])
def test_plan_takes_the_names_users_know_a_stack_by(capsys, alias, sid):
    import json

    from xlcalc.cli import main
    from xlcalc.planner.stacks import ALIAS_FRAMEWORKS, ALIASES

    key = alias.lower().replace(" ", "-")
    assert ALIASES[key][0] == sid and ALIASES[key][1]
    table = call(stack=alias)
    if key not in ALIAS_FRAMEWORKS:  # the profile's own memory: the profile's plans
        assert table[1:4] == call(stack=sid)[1:4]
    # the CLI's plans of the name as typed (the Hugging Face Trainer: fsdp-eager's step, transformers' memory)
    assert main(["plan", "--model", "llama2-70b", "--gpu", "H100", "--n-gpus", "1024", "--seq-len", "4096",
                 "--global-batch-tokens", "4194304", "--tokens-t", "2", "--scaleout-gb-s", "50", "--stack", alias,
                 "--top", "3", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["plans"]
    rows = [dict(zip(PLAN_COLUMNS, r)) for r in table[1:4]]
    assert [(r["tp"], r["pp"], r["days"], r["memory_gb"]) for r in rows] == \
        [(p["tp"], p["pp"], p["days"], p["memory_gb"]) for p in cli]


def test_deepspeed_is_refused_as_a_stack_with_no_profile():
    with pytest.raises(InputError) as info:
        call(stack="deepspeed")
    assert str(info.value).startswith("stack = 'deepspeed'") and "no stack profile" in str(info.value)
    assert "fsdp-eager" in str(info.value) and "torchtitan" in str(info.value)


def test_an_unknown_stack_lists_the_known_ones():
    with pytest.raises(InputError) as info:
        call(stack="nemo9")
    assert str(info.value).startswith("stack = 'nemo9'") and "fsdp-eager" in str(info.value)


def test_plan_is_a_registered_worksheet_function():
    assert "PLAN" in u.UDF_NAMES and "PLAN" in u.__all__


@pytest.mark.parametrize(
    "overrides, name",
    [(dict(n_gpus=0.0), "n_gpus"), (dict(n_gpus=2.5), "n_gpus"), (dict(seq_len="abc"), "seq_len"),
     (dict(top=0.0), "top"), (dict(top=float("inf")), "top"), (dict(top=float("nan")), "top"),
     (dict(global_batch_tokens=None), "global_batch_tokens"), (dict(model=None), "model")],
)
def test_bad_plan_inputs_name_the_input(overrides, name):
    with pytest.raises(InputError) as info:
        call(**overrides)
    assert str(info.value).startswith(f"{name} = ")


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(CatalogError, match="valid models: .*llama2-70b"):
        call(model="llama9")


def test_a_range_where_one_cell_is_expected_is_refused():
    values = [cell(v) for v in ARGS.values()]
    values[2] = [[1024.0], [2048.0]]
    with pytest.raises(InputError, match="n_gpus .* a single cell"):
        u.PLAN(*values)


def test_plan_spills_the_best_plans_range_as_plan_prints_it(capsys):
    import json

    from xlcalc.cli import main

    table = call()
    assert main(["plan", "--model", "llama2-70b", "--gpu", "H100", "--n-gpus", "1024", "--seq-len", "4096",
                 "--global-batch-tokens", "4194304", "--tokens-t", "2", "--scaleout-gb-s", "50", "--top", "3",
                 "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["interval"]
    ranges = {row[1]: row[2] for row in table if row[0] == "range"}
    assert ranges == {k: cli[k] for k in ("mfu_low", "mfu_high", "days_low", "days_high", "gpu_hours_low",
                                          "gpu_hours_high", "cost_low_usd", "cost_high_usd")}
    # where the range comes from, once (the first bound's row), the other rows pointing at it
    notes = [row[3] for row in table if row[0] == "range"]
    assert notes[0].startswith("80% range from ") and cli["basis"] in notes[0]
    assert notes[1:] == ["80% range, as mfu_low's"] * 7

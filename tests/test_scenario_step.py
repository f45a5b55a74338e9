"""The step time's two inputs, the software stack and the global batch, declared once as the scenario's (issue 22):
their defaults are plan's, a scenario file states them, and the scenario's Python face (xlcalc.scenario_step) gives
the step time ``xlcalc plan`` gives for the same run with every layout flag pinned.

The workbook's StepTime sheet built from them: tests/test_workbook_step_time.py; read back: tests/test_readback.py.
"""

from __future__ import annotations

import json

import pytest

from cli_run import run
from xlcalc.errors import InputError
from xlcalc.planner import layout_prediction, plan
from xlcalc.planner.stacks import DEFAULT_STACK
from xlcalc.scenario import INPUT_BY_FIELD, Scenario, load_scenario
from xlcalc.scenario_step import step_prediction

# one run: Llama 3.1 70B on 128 H100, TP 8 x PP 4 x DP 4, ZeRO-1, SP, selective recompute; Megatron's stack and a
# 4M-token batch (512 sequences of 8,192: 128 per replica, micro-batch 1)
RUN = dict(model="llama3.1-70b", gpu="h100-sxm", n_gpus=128, seq_len=8192, tp=8, pp=4, zero_stage=1,
           seq_parallel=True, recompute="selective", micro_batch=1)
STACK, BATCH = "megatron", 4 * 2 ** 20


def test_the_stack_and_batch_are_scenario_inputs_with_plans_defaults():
    assert (INPUT_BY_FIELD["stack"].name, INPUT_BY_FIELD["global_batch_tokens"].name) == ("Stack",
                                                                                         "Global_Batch_Tokens")
    sc = Scenario()
    assert sc.stack == DEFAULT_STACK == "fsdp-eager"  # plain PyTorch FSDP without compilation (planner.stacks)
    assert sc.global_batch_tokens is None  # not given: no batch assumed for a model the catalog has none of
    # a catalog model's published batch, plan's rule: Llama 3.1 405B's 2,048 sequences of 8,192 (Dubey et al. 2024
    # §3.4.1); Llama 3.1 70B's catalog row gives none (Meta states it only as a rounded token count)
    assert Scenario.build(model="llama3.1-405b").global_batch_tokens == 2048 * 8192
    assert Scenario.build(model="llama3.1-70b").global_batch_tokens is None
    assert plan("llama3.1-405b", gpu="h100-sxm", n_gpus=1024, top=1).assumed["global_batch_tokens"].value \
        == 2048 * 8192
    # a batch given wins over the published one
    assert Scenario.build(model="llama3.1-405b", global_batch_tokens=BATCH).global_batch_tokens == BATCH


def test_a_stack_is_named_as_plan_takes_it():
    assert Scenario(stack="Megatron").stack == "megatron"
    assert Scenario(stack="torch-compile").stack == "fsdp-compiled"  # an alias: its profile (planner.stacks.ALIASES)
    with pytest.raises(InputError) as e:
        Scenario.build(stack="megatrn", global_batch_tokens="4M")
    text = str(e.value)  # every input refused, at once, each with what is allowed
    assert "stack = 'megatrn' is not allowed" in text and 'did you mean "megatron"' in text
    assert "global_batch_tokens = '4M' is not allowed" in text and "text, not a number" in text


def test_a_scenario_file_states_the_stack_and_batch(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('model = "llama3.1-70b"\ngpu = "h100-sxm"\nstack = "llm-foundry"\n'
                    'global_batch_tokens = 4194304\n', encoding="utf-8")
    sc = load_scenario(path)
    assert (sc.stack, sc.global_batch_tokens) == ("llm-foundry", 4194304)
    path.write_text('stack = 3\nglobal_batch_tokens = "lots"\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_scenario(path)
    assert "stack = 3" in str(e.value) and "global_batch_tokens = 'lots'" in str(e.value)


def test_the_scenarios_step_time_is_plans(capsys):
    sc = Scenario.build(**RUN, stack=STACK, global_batch_tokens=BATCH)
    py = step_prediction(sc)
    code, out, err = run(capsys, "plan", "--model", RUN["model"], "--gpu", RUN["gpu"], "--n-gpus", "128", "--seq-len",
                         "8192", "--global-batch-tokens", str(BATCH), "--stack", STACK, "--tp", "8", "--pp", "4",
                         "--cp", "1", "--zero-stage", "1", "--seq-parallel", "TRUE", "--recompute", "selective",
                         "--micro-batch", "1", "--virtual-stages", "1", "--top", "1", "--json")
    assert code == 0, err
    cli = json.loads(out)["plans"][0]
    for field in ("step_s", "mfu", "tokens_per_s_per_gpu", "microbatches"):
        assert getattr(py, field) == pytest.approx(cli[field], rel=1e-12), field
    assert cli["microbatches"] == BATCH // 8192 // 4  # 128 micro-batches of one sequence per replica
    # the stack and the batch are the scenario's: another of either gives another step
    other = step_prediction(Scenario.build(**RUN, global_batch_tokens=BATCH))
    assert other.step_s != py.step_s
    assert other.step_s == pytest.approx(layout_prediction(
        RUN["model"], gpu=RUN["gpu"], n_gpus=128, seq_len=8192, global_batch_tokens=BATCH, stack=DEFAULT_STACK,
        **{k: RUN[k] for k in ("tp", "pp", "zero_stage", "seq_parallel", "recompute", "micro_batch")}).step_s,
        rel=1e-12)
    assert step_prediction(Scenario.build(**RUN, stack=STACK, global_batch_tokens=2 * BATCH)).microbatches == 256


def test_a_scenario_without_a_batch_or_a_gpu_is_named():
    with pytest.raises(InputError) as e:  # Llama 3.1 70B: no published batch, none given (plan's message)
        step_prediction(Scenario.build(**RUN))
    assert e.value.name == "global_batch_tokens" and "no published batch of Llama 3.1 70B" in str(e.value)
    with pytest.raises(InputError) as e:
        step_prediction(Scenario.build(global_batch_tokens=BATCH))
    assert e.value.name == "gpu" and "catalog" in str(e.value)

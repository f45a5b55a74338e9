"""The stack a plan assumes when none is named (issue 21, item 2): one declared default, every face uses it, it is
stated in the answer, it is not the fastest profile; the names users know a stack by resolve, others are refused."""

from __future__ import annotations

import json

import pytest

from xlcalc.cli import main
from xlcalc.errors import InputError
from xlcalc.planner import Settings, plan
from xlcalc.planner.stacks import ALIASES, DEFAULT_STACK, NO_PROFILE, PLANNER, STACKS, get_stack, stack_id

# seed 002 §7.3: Llama 2 70B on 1024 A800 80 GB, seq 4096, ~4M-token batches, 2 T tokens
SEED = ["--model", "llama2-70b", "--gpu", "a800", "--n-gpus", "1024", "--seq-len", "4096",
        "--global-batch-tokens", "4194304", "--tokens-t", "2", "--top", "3"]


def _json(capsys, *argv) -> dict:
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_default_is_a_named_profile_and_the_settings_default():
    assert DEFAULT_STACK in STACKS and DEFAULT_STACK != PLANNER
    st = Settings()
    assert st.stack == DEFAULT_STACK and not st.stack_named
    assert Settings(stack=DEFAULT_STACK).stack_named
    # the profile's facts fill what is not given, as when it is named
    named = Settings(stack=DEFAULT_STACK)
    assert all(getattr(st, k) == getattr(named, k) for k in STACKS[DEFAULT_STACK].settings)


def test_plan_without_stack_gives_the_days_of_plan_with_the_default_stack_named(capsys):
    default = _json(capsys, *SEED)
    named = _json(capsys, *SEED, "--stack", DEFAULT_STACK)
    assert [p["days"] for p in default["plans"]] == [p["days"] for p in named["plans"]]
    assert [p["memory_gb"] for p in default["plans"]] == [p["memory_gb"] for p in named["plans"]]
    assert default["matmul_efficiency"] == named["matmul_efficiency"] == STACKS[DEFAULT_STACK].matmul_efficiency
    # the answer names the stack it assumed, and only when none was named
    assert default["assumed"]["stack"]["value"] == DEFAULT_STACK and "stack" not in named["assumed"]
    assert default["stack_spread"] and not named["stack_spread"]
    # the Python API without settings: the same plan
    res = plan("llama2-70b", gpu="a800", n_gpus=1024, seq_len=4096, global_batch_tokens=4194304, tokens_t=2, top=3)
    assert [p.days for p in res.plans] == [p["days"] for p in default["plans"]]


def test_the_text_says_the_stack_was_the_default_and_how_to_name_another(capsys):
    assert main(["plan", *SEED]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("stack profile:"))
    assert f"{DEFAULT_STACK} (the default)" in line and "--stack" in line
    assert all(sid in line for sid in STACKS) and PLANNER in line
    spread = out[out.index("No stack named: the best layout on each named stack"):]
    assert f"{DEFAULT_STACK} (assumed):" in spread and all(f"  {sid}" in spread for sid in STACKS)


@pytest.mark.parametrize("model, gpu, n_gpus, seq_len, batch", [
    ("llama2-70b", "a800", 1024, 4096, 4 * 2**20),      # seed 002
    ("llama2-7b", "h100-sxm", 64, 4096, 4 * 2**20),
    ("llama3.1-70b", "h100-sxm", 512, 8192, 16 * 2**20),
])
def test_the_default_is_not_the_fastest_named_stack(model, gpu, n_gpus, seq_len, batch):
    res = plan(model, gpu=gpu, n_gpus=n_gpus, seq_len=seq_len, global_batch_tokens=batch, tokens_t=1, top=1,
               stack_spread=True)
    spread = res.stack_spread
    assert set(spread) == set(STACKS) and all(o is not None for o in spread.values())
    assert spread[DEFAULT_STACK].step_s == pytest.approx(res.plans[0].step_s)
    # the best layout on every named stack, each planned with its own facts and efficiency: one is faster
    assert min(o.step_s for sid, o in spread.items() if sid != DEFAULT_STACK) < spread[DEFAULT_STACK].step_s
    # and each stack planned on its own agrees with the spread where the layout is its own
    for sid, o in spread.items():
        if sid != DEFAULT_STACK and o.same_layout:
            p = res.plans[0]
            own = plan(model, gpu=gpu, n_gpus=n_gpus, seq_len=seq_len, global_batch_tokens=batch, tokens_t=1, top=1,
                       settings=Settings(stack=sid), tp=p.tp, pp=p.pp, zero_stage=p.zero_stage, recompute=p.recompute,
                       micro_batch=p.micro_batch, seq_parallel=p.seq_parallel, virtual_stages=p.virtual_stages)
            assert own.plans[0].step_s == pytest.approx(o.step_s)


@pytest.mark.parametrize("name, sid", [("nemo", "megatron"), ("Megatron-Core", "megatron"),
                                       ("megatron-bridge", "megatron"), ("torchtitan", "fsdp-eager"),
                                       ("hf_trainer", "fsdp-eager"), ("accelerate", "fsdp-eager"),
                                       ("pytorch-fsdp", "fsdp-eager"), ("composer", "llm-foundry"),
                                       (" FSDP-Compiled ", "fsdp-compiled"), ("planner", PLANNER)])
def test_names_users_know_resolve_to_a_profile(name, sid):
    assert stack_id(name) == sid
    assert Settings(stack=name).stack == sid


def test_every_alias_names_a_profile_and_its_source():
    for alias, (sid, source) in ALIASES.items():
        assert sid in STACKS and alias not in STACKS and source, alias
    assert not set(NO_PROFILE) & (set(ALIASES) | set(STACKS))


def test_the_alias_plans_as_the_profile_on_the_cli(capsys):
    a = _json(capsys, *SEED, "--stack", "torchtitan")
    b = _json(capsys, *SEED, "--stack", "fsdp-eager")
    assert [p["days"] for p in a["plans"]] == [p["days"] for p in b["plans"]]


@pytest.mark.parametrize("name", ["nope", "megatron-2019", ""])
def test_an_unknown_stack_is_refused_with_every_id_and_alias(name):
    with pytest.raises(InputError) as e:
        stack_id(name)
    text = str(e.value)
    assert text.startswith("stack = ") and all(s in text for s in (*STACKS, *ALIASES, PLANNER))


def test_software_with_no_profile_is_refused_and_says_so(capsys):
    with pytest.raises(InputError) as e:
        stack_id("DeepSpeed")
    assert "no stack profile" in str(e.value) and "fsdp-eager" in str(e.value)
    assert main(["plan", *SEED, "--stack", "deepspeed"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no stack profile" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(InputError, match="PyTorch is the library under several profiles"):
        stack_id("pytorch")  # which PyTorch stack: the refusal says how to name it
    with pytest.raises(InputError):
        get_stack(PLANNER)  # the planner's own settings are no profile


def test_calibrate_assumes_the_default_stack_and_an_old_profile_without_one_plans_at_the_planners_settings():
    from xlcalc.planner.calibrate import calibrate, profile_settings

    kw = dict(gpu="h100", n_gpus=8, seq_len=4096, global_batch_tokens=2**20, tp=1, pp=1, micro_batch=1,
              recompute="none", tokens_per_s=3500)
    profile, _ = calibrate("llama2-7b", **kw)
    assert profile.stack == DEFAULT_STACK and profile_settings(profile)["stack"] == DEFAULT_STACK
    # a profile written before the default stack holds stack null: it was calibrated at the planner's settings
    old = profile.model_copy(update={"stack": None})
    assert profile_settings(old)["stack"] == PLANNER and Settings(**profile_settings(old)).stack == PLANNER


def test_the_memory_line_says_whose_bytes_per_parameter_the_plans_hold(capsys):
    # PyTorch FSDP keeps fp32 sharded parameters, fp32 gradients and Adam's two fp32 moments: 4 + 4 + 8 bytes per
    # parameter (torchtitan's MixedPrecisionPolicy over fp32 parameters); Megatron's mixed precision 2 + 4 + 12 (bf16
    # weights, fp32 gradients, fp32 master copy and moments). A plan holds the memory of its stack's own framework,
    # and the line says which, not Megatron's when the stack is PyTorch FSDP.
    def line(*extra: str) -> str:
        assert main(["plan", *SEED, *extra]) == 0
        return next(x for x in capsys.readouterr().out.splitlines() if x.startswith("memory:"))

    default = line()
    assert "4+4+8 bytes/param," in default and "framework torchtitan at amp" in default
    assert "stack fsdp-eager's own" in default and "megatron" not in default
    megatron = line("--stack", "megatron")
    assert "2+4+12 bytes/param," in megatron and "framework megatron at amp" in megatron
    # the Hugging Face Trainer runs the fsdp-eager stack with transformers' memory (fp32 weights under autocast)
    assert "framework transformers at amp" in line("--stack", "hf-trainer")
    framework = line("--framework", "transformers")
    assert "4+4+8 bytes/param," in framework and "framework transformers at amp" in framework
    assert "own" not in framework  # named by the user, not the stack's


# One layout, one memory: a plan on a stack holds the GB per GPU `xlcalc memory --framework <the stack's framework>`
# gives for the same layout (PyTorch FSDP's 4 + 4 + 8 bytes and torchtitan's eager fp32 loss for the default stack,
# Megatron-Core's 2 + 4 + 12 for megatron), so "does it fit" has one answer whichever command a user asks.
STACK_FRAMEWORKS = [("fsdp-eager", "torchtitan"), ("fsdp-compiled", "torchtitan-compile"), ("megatron", "megatron"),
                    ("llm-foundry", "llm-foundry"), ("hf-trainer", "transformers")]


@pytest.mark.parametrize("stack, framework", STACK_FRAMEWORKS, ids=[s for s, _ in STACK_FRAMEWORKS])
def test_a_plan_holds_the_memory_of_its_stacks_framework(capsys, stack, framework):
    layout = ["--tp", "8", "--pp", "4", "--zero-stage", "1", "--recompute", "selective", "--micro-batch", "1"]
    got = _json(capsys, *SEED, *layout, "--stack", stack)
    assert got["plans"], got.get("rejected")
    best = got["plans"][0]
    assert [best["tp"], best["pp"], best["zero_stage"], best["recompute"]] == [8, 4, 1, "selective"]
    sp = ["--seq-parallel", "TRUE" if best["seq_parallel"] else "FALSE"]
    argv = ["memory", "--model", "llama2-70b", "--gpu", "a800", "--n-gpus", "1024", "--seq-len", "4096",
            "--global-batch", "1024", *layout, *sp, "--virtual-stages", str(best["virtual_stages"]),
            "--framework", framework, "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["total_gb"] == pytest.approx(best["memory_gb"], rel=1e-9)

"""Contradictions and derived results outside a physical range: each is a message naming the inputs, on every face.

The cases of issue 23's "silent numbers": a flag that conflicts with a preset or with another flag, and a result that
cannot be (an MFU above 1, fractional layers on a stage, days past the stated horizon). Each case runs through the
bad-input suite's judge (tests/test_bad_input.py): a number where an error was due is *silent*, an error that does
not name the input and its value *unclear*, any other exception a *traceback*; all three must be 0. Expected values
are worked out here by hand, not copied from the engine's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import xlcalc
from test_bad_input import Case, cli, judge
from xlcalc.registry import get_formula

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "udfs") not in sys.path:
    sys.path.insert(0, str(ROOT / "udfs"))


def _udf(name: str):
    import xlcalc_udfs

    return getattr(xlcalc_udfs, name)


# -- derived results: each formula refuses a result past its stated bound, naming the input to blame ---------------

# 6 * 70e9 * 2e12 = 8.4e23 FLOPs; / (312e12 * 1024 * 1e-300) / 86400 = 3.04e301 days (bound: 1e8 days)
# IMPLIED_MFU: 8.4e23 / (1000 h * 3600 * 312e12) = 747.9 (an MFU is at most 1)
# HFU_FROM_MFU: full recompute does 8N instead of 6N per token: 1.0 * 4/3 = 1.33 (an HFU is at most 1)
# STAGE_LAYERS(80, 3): 80 / 3 = 26.67 layers on a stage (whole layers only)
DERIVED = [
    ("TRAIN_DAYS", (70, 2, 312, 1024, 1e-300), ("mfu",), 1e-300, ("TRAIN_DAYS", "at most 100,000,000 days")),
    ("IMPLIED_MFU", (70, 2, 312, 1000), ("gpu_hours",), 1000, ("IMPLIED_MFU = 747.9", "at most 1")),
    ("HFU_FROM_MFU", (1.0, "full", 4096, 8192), ("mfu",), 1.0, ("HFU_FROM_MFU = 1.333", "recompute = 'full'")),
    ("STAGE_LAYERS", (80, 3), ("pp",), 3, ("a divisor of layers = 80", "26.67")),
    ("GPU_HOURS", (70, 2, 312, 1e-290), ("mfu",), 1e-290, ("GPU_HOURS",)),
    ("GPUS_FOR_DAYS", (70, 2, 312, 0.4, 1e-9), ("days",), 1e-9, ("at most 10,000,000 GPUs",)),
    ("DAYS_FROM_THROUGHPUT", (70, 2, 1, 1e-9), ("achieved_tflops",), 1e-9, ("at most 100,000,000 days",)),
    ("FT_TRAIN_DAYS", (70, 2, 0.1, 312, 1024, 1e-300, "full"), ("mfu",), 1e-300, ("FT_TRAIN_DAYS",)),
]


def _derived_cases() -> list[Case]:
    cases = []
    for udf, args, names, value, extra in DERIVED:
        f = get_formula(udf)
        cases.append(Case("python", f"{f.name}{args}", lambda f=f, a=args: f(*a), names, value, (), extra))
        cases.append(Case("udf", f"{udf}{args}", lambda u=udf, a=args: _udf(u)(*a), names, value, (), extra))
        column = [[x] for x in args[-1:]] if udf != "STAGE_LAYERS" else None
        if column is not None:  # the same row inside a range: the row shows the message, not a number
            def ranged(u=udf, a=args):
                out = _udf(u)(*a[:-1], [[a[-1]], [a[-1]]])
                return out[1][0]
            cases.append(Case("udf", f"{udf} range {args}", ranged, names, value, (), extra))
    return cases


@pytest.mark.parametrize("case", _derived_cases(), ids=lambda c: f"{c.face}:{c.label}")
def test_derived_results_past_their_bound_are_messages_naming_the_inputs(case):
    judged = judge(case)
    assert judged.outcome == "clear", judged.message


def test_derived_results_within_their_bound_stay_numbers():
    # 8.4e23 / (312e12 * 1024 * 0.4) / 86400 = 76.0766 days (seed 002); 8.4e23 / (1.72e6 * 3600 * 312e12) = 0.43480
    assert xlcalc.train_days(70, 2, 312, 1024, 0.4) == pytest.approx(76.0766, abs=1e-4)
    assert xlcalc.implied_mfu(70, 2, 312, 1.72e6) == pytest.approx(0.434804, abs=1e-6)
    # selective recompute at s = 4096, h = 8192: 1 + 4096 / (18 * 8192 + 3 * 4096) = 1.02564; 0.4 x that
    assert xlcalc.hfu_from_mfu(0.4, "selective", 4096, 8192) == pytest.approx(0.410256, abs=1e-6)
    assert get_formula("STAGE_LAYERS")(80, 4) == 20
    assert get_formula("STAGE_LAYERS")(126, 16, "first", 7, 7) == 7


def test_an_mfu_of_one_with_full_recompute_names_the_recompute_mode_beside_the_mfu():
    with pytest.raises(xlcalc.InputError) as e:
        xlcalc.hfu_from_mfu(0.8, "full", 4096, 8192)  # 0.8 x 4/3 = 1.067
    assert "mfu = 0.8" in str(e.value) and "recompute = 'full'" in str(e.value)


# -- the command line: utilisation and MFU past their ranges ---------------------------------------------------------

CLI = [
    (("cost", "--gpu", "h100", "--utilisation", "1e-12"), ("utilisation",), 1e-12, ("the lower bound is 1%",)),
    (("estimate", "--mfu", "1e-300"), ("mfu",), 1e-300, ("at most 100,000,000 days",)),
    (("estimate", "--mfu", "1e-9"), ("mfu",), 1e-9, ("at most 100,000,000 days",)),
]


@pytest.mark.parametrize("argv, names, value, extra", CLI, ids=[" ".join(c[0]) for c in CLI])
def test_cli_refuses_contradictions_and_derived_results_past_their_bound(argv, names, value, extra):
    judged = judge(Case("cli", " ".join(argv), lambda: cli(*argv), names, value, (), extra))
    assert judged.outcome == "clear", judged.message


# -- one layout, one memory: xlcalc memory and xlcalc plan agree on DeepSeek-V3 -------------------------------------

def test_deepseek_v3_memory_and_plan_give_the_same_gb_for_the_same_layout(capsys):
    # The report's layout (PP 16 as 3, 4 x 14, 2; EP 64; ZeRO-1; DP 128 on 2,048 GPUs; 15,360 sequences of 4,096)
    # with full recompute, micro-batch 1. Both faces must charge MLA's attention with one head size: q/k heads of
    # nope 128 + rope 64 = 192 and v heads of 128, i.e. (192 + 128) / 2 = 160 (memory used 128 before: 2 GB apart).
    from xlcalc import catalog
    from xlcalc.planner import Settings, plan

    assert catalog.get_model("deepseek-v3").attention_head_dim == (128 + 64 + 128) // 2
    split = "3,4,4,4,4,4,4,4,4,4,4,4,4,4,4,2"
    code, out, err = cli("memory", "--model", "deepseek-v3", "--n-gpus", "2048", "--seq-len", "4096",
                         "--global-batch", "15360", "--tp", "1", "--layers-per-stage", split, "--ep", "64",
                         "--zero-stage", "1", "--recompute", "full", "--micro-batch", "12", "--json")
    assert code == 0, err
    import json

    memory_gb = json.loads(out)["total_gb"]
    result = plan("deepseek-v3", gpu="H800", n_gpus=2048, seq_len=4096, global_batch_tokens=62914560, tokens_t=14.8,
                  tp=1, stage_layers=[int(x) for x in split.split(",")], ep=64, zero_stage=1, recompute="full",
                  micro_batch=12, fp8=True, top=1, settings=Settings(stack="megatron"))
    # the memory face answers for its default framework, Megatron-Core: the plan names the stack of that memory
    assert result.plans, result.rejected_by_reason
    assert result.plans[0].memory_gb == pytest.approx(memory_gb, rel=1e-9)


# -- contradictions: a flag that conflicts with a preset or another flag is refused, never ignored ------------------

_70B = ("--params-b", "70", "--layers", "80", "--hidden", "8192", "--heads", "64", "--vocab", "32000")
_PLAN = ("plan", "--model", "llama2-70b", "--gpu", "H100", "--gpus", "1024", "--seq-len", "4096",
         "--global-batch-tokens", "4194304", "--tokens-t", "2")
CONTRADICTIONS = [
    # 64 GPUs / (TP 1 x PP 1 x CP 1) = DP 64, not the typed 4
    (("memory", *_70B, "--dp", "4", "--n-gpus", "64"), ("dp",), 4, ("64",)),
    # the plan's architecture comes from --model: --layers and --hidden are refused by name, both at once
    ((*_PLAN, "--layers", "40", "--hidden", "4096"), ("layers", "hidden"), "40", ("--model llama2-70b",)),
    # --deadline-days sizes the cluster; with --gpus there is nothing to size
    ((*_PLAN, "--deadline-days", "30"), ("deadline_days",), 30, ("n_gpus = 1024",)),
    # the ranges' low end above the high end
    (("estimate", "--ranges", "--mfu-low-x", "1.2", "--mfu-high-x", "0.5"), ("mfu_low_x",), 1.2,
     ("mfu_high_x = 0.5",)),
    # virtual stages: plan refuses them where the stages do not split into chunks of whole layers; so does every face.
    # 80 layers / PP 4 = 20 per stage; 20 / 3 = 6.67 layers per chunk
    (("estimate", "--pp", "4", "--virtual-stages", "3"), ("virtual_stages",), 3, ("= 20", "6.67")),
    (("estimate", "--pp", "1", "--virtual-stages", "2"), ("virtual_stages",), 2, ("1 with pp = 1",)),
    (("memory", *_70B, "--pp", "4", "--virtual-stages", "3"), ("virtual_stages",), 3, ("6.67",)),
    (("memory", *_70B, "--pp", "1", "--virtual-stages", "2"), ("virtual_stages",), 2, ("1 with pp = 1",)),
    # a split into 2 stages beside --pp 0: refused by both faces that take a split, not replaced by the split's count
    (("estimate", "--model", "llama3.1-8b", "--pp", "0", "--layers-per-stage", "16,16"), ("pp",), 0, ("16,16",)),
    (("memory", "--model", "llama3.1-8b", "--pp", "0", "--layers-per-stage", "16,16"), ("pp",), 0, ("16,16",)),
    ((*_PLAN, "--pp", "4", "--virtual-stages", "3"), (), None, ()),  # plan: no plan (exit 1), asserted below
]


@pytest.mark.parametrize("argv, names, value, extra", CONTRADICTIONS[:-1],
                         ids=[" ".join(c[0][:1] + c[0][-4:]) for c in CONTRADICTIONS[:-1]])
def test_contradicting_flags_are_refused_by_name(argv, names, value, extra):
    judged = judge(Case("cli", " ".join(argv), lambda: cli(*argv), names, value, (), extra))
    assert judged.outcome == "clear", judged.message


def test_plan_finds_no_layout_for_virtual_stages_that_do_not_split_the_stage():
    code, out, _ = cli(*CONTRADICTIONS[-1][0])
    assert code == 1 and "pinned virtual stages do not divide the stage" in out


def test_virtual_stages_that_split_whole_layers_are_accepted_on_every_face():
    # 80 layers / PP 4 = 20 per stage; v = 2, 4, 5 split it into whole chunks
    for v in ("2", "4", "5"):
        code, _, err = cli("memory", *_70B, "--pp", "4", "--virtual-stages", v)
        assert code == 0, err
    f = get_formula("LAYOUT_MESSAGE")
    assert f(8192, 64, 80, 4096, 8, pp=4, virtual_stages=4) == "OK"
    assert f(8192, 64, 80, 4096, 8, pp=4, virtual_stages=3).startswith("virtual_stages = 3 is not allowed")


def test_the_stage_memory_worksheet_function_refuses_virtual_stages_that_do_not_split_the_stage():
    # MEM_PER_GPU_GB(params_b, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, micro_batch, tp, pp, cp,
    #                dp, zero_stage, seq_parallel, recompute, gated_ffn, tied_embeddings, flash_attention, v)
    args = (70, 80, 8192, 64, 8, 28672, 32000, 4096, 1, 8, 4, 1, 1, 1, True, "selective", True, False, True)
    case = Case("udf", "MEM_PER_GPU_GB v=3", lambda: _udf("MEM_PER_GPU_GB")(*args, 3), ("virtual_stages",), 3)
    assert judge(case).outcome == "clear", case.message
    assert isinstance(_udf("MEM_PER_GPU_GB")(*args, 4), float)

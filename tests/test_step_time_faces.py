"""One layout's step time, MFU and throughput: the same in every face (issue 22).

For the same run with the same layout, ``xlcalc plan --json`` with every layout flag pinned, the Python entry point
``xlcalc.planner.layout_prediction`` and the worksheet functions LAYOUT_STEP_S, LAYOUT_MFU and
LAYOUT_TOKENS_PER_S_PER_GPU (called as the Python functions xlwings calls) give the same numbers; and the MFU they
give is the model FLOPs of the step, counted here from the catalog's architecture with the equation of
MODEL_FLOPS_PER_TOKEN's docstring (Narayanan et al. 2021 §5.1), over the step time, the GPUs and the GPU
catalog's dense bf16 peak.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "udfs"))

import xlcalc_udfs as u  # noqa: E402
from cli_run import run  # noqa: E402
from xlcalc import catalog  # noqa: E402
from xlcalc.errors import CatalogError, InputError  # noqa: E402
from xlcalc.planner import layout_prediction  # noqa: E402

REL = 1e-9

# (id, run, layout given to Python and the worksheet, stack). Every layout choice the first case leaves out is
# written into its CLI flags below as one GPU's layout (TP 1, PP 1, CP 1, no SP, no recompute, micro-batch 1, v 1)
CASES = [
    ("8b-8xH100-zero3-defaults", dict(model="llama3.1-8b", gpu="H100", n_gpus=8, seq_len=8192,
                                      global_batch_tokens=2 ** 20), dict(zero_stage=3), None),
    ("8b-8xH100-tp2-megatron", dict(model="llama3.1-8b", gpu="H100", n_gpus=8, seq_len=8192,
                                    global_batch_tokens=2 ** 20),
     dict(tp=2, pp=1, cp=1, zero_stage=1, seq_parallel=True, recompute="selective", micro_batch=1, virtual_stages=1),
     "megatron"),
    ("70b-64xA100-tp8-pp2-selective", dict(model="llama3.1-70b", gpu="A100", n_gpus=64, seq_len=4096,
                                           global_batch_tokens=4 * 2 ** 20),
     dict(tp=8, pp=2, cp=1, zero_stage=1, seq_parallel=True, recompute="selective", micro_batch=1, virtual_stages=1),
     None),
    ("70b-128xH100-cp2-interleaved-megatron", dict(model="llama3.1-70b", gpu="H100", n_gpus=128, seq_len=8192,
                                                   global_batch_tokens=4 * 2 ** 20),
     dict(tp=8, pp=4, cp=2, zero_stage=1, seq_parallel=True, recompute="none", micro_batch=1, virtual_stages=2),
     "megatron"),
    ("llama2-70b-64xH100-full-mb2-fsdp", dict(model="llama2-70b", gpu="H100", n_gpus=64, seq_len=4096,
                                              global_batch_tokens=4 * 2 ** 20),
     dict(tp=4, pp=4, cp=1, zero_stage=1, seq_parallel=True, recompute="full", micro_batch=2, virtual_stages=1),
     "fsdp-eager"),
    # a name users know with a framework of its own: the Hugging Face Trainer, fsdp-eager's step and transformers'
    # memory (fp32 weights under autocast) on every face
    ("8b-8xH100-zero3-hf-trainer", dict(model="llama3.1-8b", gpu="H100", n_gpus=8, seq_len=8192,
                                        global_batch_tokens=2 ** 20), dict(zero_stage=3, recompute="full"),
     "hf-trainer"),
]
IDS = [c[0] for c in CASES]
ONE_GPU = dict(tp=1, pp=1, cp=1, seq_parallel=False, recompute="none", micro_batch=1, virtual_stages=1)


def cli_plan(capsys, runspec: dict, layout: dict, stack: str | None) -> dict:
    """`xlcalc plan --json` with every layout flag pinned: its best (only) plan."""
    full = {**ONE_GPU, **layout}
    argv = ["plan", "--model", runspec["model"], "--gpu", runspec["gpu"], "--n-gpus", str(runspec["n_gpus"]),
            "--seq-len", str(runspec["seq_len"]), "--global-batch-tokens", str(runspec["global_batch_tokens"]),
            "--tp", str(full["tp"]), "--pp", str(full["pp"]), "--cp", str(full["cp"]),
            "--zero-stage", str(full["zero_stage"]), "--seq-parallel", str(full["seq_parallel"]).upper(),
            "--recompute", full["recompute"], "--micro-batch", str(full["micro_batch"]),
            "--virtual-stages", str(full["virtual_stages"]), "--top", "1", "--json"]
    if stack is not None:
        argv += ["--stack", stack]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    plans = json.loads(out)["plans"]
    assert len(plans) == 1
    p = plans[0]
    assert {k: p[k] for k in full} == full  # the layout asked for, nothing searched
    return p


def cell(x):
    return [[x]]  # xlwings hands every argument over as a 2-D range (ndim=2)


def udf(fn, runspec: dict, layout: dict, stack: str | None):
    values = {**runspec, **layout, "stack": stack}
    return fn(*(None if values.get(k) is None else cell(float(values[k]) if isinstance(values[k], int)
                                                        and not isinstance(values[k], bool) else values[k])
                for k in inspect.signature(fn).parameters))


@pytest.mark.parametrize("_id, runspec, layout, stack", CASES, ids=IDS)
def test_cli_python_and_worksheet_give_one_step_time_and_mfu(capsys, _id, runspec, layout, stack):
    cli = cli_plan(capsys, runspec, layout, stack)
    kw = {k: v for k, v in runspec.items() if k != "model"}
    py = layout_prediction(runspec["model"], **kw, **layout, stack=stack)
    for name, fn in (("step_s", u.LAYOUT_STEP_S), ("mfu", u.LAYOUT_MFU),
                     ("tokens_per_s_per_gpu", u.LAYOUT_TOKENS_PER_S_PER_GPU)):
        assert getattr(py, name) == pytest.approx(cli[name], rel=REL), name
        assert udf(fn, runspec, layout, stack) == pytest.approx(cli[name], rel=REL), name
    assert py.memory_gb == pytest.approx(cli["memory_gb"], rel=REL)


def model_flops_per_token(m: catalog.Model, seq_len: int) -> float:
    """MODEL_FLOPS_PER_TOKEN's equation, written out: 3*(L*(matmul + attention core) + 2*h*V) with
    matmul = 2*h*(a*dh) [Q] + 2*2*h*(kv*dh) [K,V] + 2*(a*dh)*h [O] + 2*h*F*(3 if gated else 2) and
    attention core = 4*s*a*dh (Narayanan et al. 2021 §5.1)."""
    h, a, kv, f = m.hidden, m.heads, m.kv_heads, m.ffn_hidden
    dh = m.head_dim or h // a
    matmul = 2 * h * a * dh + 2 * 2 * h * kv * dh + 2 * a * dh * h + 2 * h * f * (3 if m.gated_ffn else 2)
    core = 4 * seq_len * a * dh
    return 3 * (m.layers * (matmul + core) + 2 * h * m.vocab)


@pytest.mark.parametrize("_id, runspec, layout, stack", CASES, ids=IDS)
def test_mfu_is_the_model_flops_over_step_time_gpus_and_peak(_id, runspec, layout, stack):
    kw = {k: v for k, v in runspec.items() if k != "model"}
    p = layout_prediction(runspec["model"], **kw, **layout, stack=stack)
    m = catalog.get_model(runspec["model"])
    peak_tflops = catalog.get_gpu(runspec["gpu"]).bf16_tflops
    expected = (model_flops_per_token(m, runspec["seq_len"]) * runspec["global_batch_tokens"]
                / (p.step_s * runspec["n_gpus"] * peak_tflops * 1e12))
    assert p.mfu == pytest.approx(expected, rel=REL)
    assert p.tokens_per_s_per_gpu == pytest.approx(runspec["global_batch_tokens"] / p.step_s / runspec["n_gpus"],
                                                   rel=REL)
    assert 0.05 < p.mfu < 0.8  # a training step, not a unit slip


def test_llama3_8b_on_8_h100_mfu_by_hand():
    # 32 layers, h 4096, 32 heads, 8 KV heads (dh 128), SwiGLU F 14336, V 128256 (Llama 3 paper, Table 3), s 8192:
    # matmul 2*4096*4096 + 4*4096*1024 + 2*4096*4096 + 6*4096*14336 = 436,207,616 FLOPs per token and layer,
    # attention core 4*8192*4096 = 134,217,728; 3*(32*570,425,344 + 2*4096*128256) = 57,912,852,480 FLOPs per token
    assert model_flops_per_token(catalog.get_model("llama3.1-8b"), 8192) == 57_912_852_480
    p = layout_prediction("llama3.1-8b", gpu="H100", n_gpus=8, seq_len=8192, global_batch_tokens=2 ** 20,
                          zero_stage=3)
    assert p.mfu == pytest.approx(57_912_852_480 * 2 ** 20 / (p.step_s * 8 * 989.4e12), rel=REL)


def test_the_default_stack_is_plans_default_and_a_named_stack_changes_the_step(capsys):
    runspec, layout = CASES[2][1], CASES[2][2]
    kw = {k: v for k, v in runspec.items() if k != "model"}
    default = layout_prediction(runspec["model"], **kw, **layout)
    from xlcalc.planner.stacks import DEFAULT_STACK

    assert layout_prediction(runspec["model"], **kw, **layout, stack=DEFAULT_STACK).step_s == default.step_s
    assert udf(u.LAYOUT_STEP_S, runspec, layout, None) == default.step_s
    assert layout_prediction(runspec["model"], **kw, **layout, stack="megatron").step_s != default.step_s


CONFIGS = Path(__file__).resolve().parent / "data" / "hf_configs"


@pytest.mark.parametrize("config, moe", [("mistral-7b-v0.1.json", {}), ("mixtral-8x7b-v0.1.json", dict(ep=8))])
def test_a_config_json_model_gives_what_plan_config_gives(capsys, config, moe):
    # a model of a config.json (not in the catalog); the mixture of experts with its experts split over 8 GPUs and
    # each expert split as the dense layers (CLI --etp = TP, the function's etp left out)
    from xlcalc.hf_config import model_from_hf_config

    layout = dict(tp=2, pp=1, cp=1, zero_stage=1, seq_parallel=True, recompute="selective", micro_batch=1,
                  virtual_stages=1)
    argv = ["plan", "--config", str(CONFIGS / config), "--gpu", "H100", "--n-gpus", "16", "--seq-len", "4096",
            "--global-batch-tokens", "4194304", "--json", "--top", "1"]
    argv += [x for k, v in {**layout, **moe}.items() for x in ("--" + k.replace("_", "-"), str(v))]
    argv += ["--etp", "2"] if moe else []
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    (cli,) = json.loads(out)["plans"]
    py = layout_prediction(model_from_hf_config(CONFIGS / config), gpu="H100", n_gpus=16, seq_len=4096,
                           global_batch_tokens=4194304, **layout, **moe)
    assert (py.ep, py.etp) == (cli["ep"], cli["etp"]) == ((8, 0) if moe else (1, 0))
    for name in ("step_s", "mfu", "tokens_per_s_per_gpu", "memory_gb"):
        assert getattr(py, name) == pytest.approx(cli[name], rel=REL), name


# -- bad input ------------------------------------------------------------------------------------------------------

BASE = dict(model="llama3.1-8b", gpu="H100", n_gpus=8, seq_len=8192, global_batch_tokens=2 ** 20)


def test_an_unknown_model_names_the_known_ones():
    with pytest.raises(CatalogError, match="unknown model 'llama9'.*llama3.1-8b"):
        layout_prediction("llama9", **{k: v for k, v in BASE.items() if k != "model"})
    with pytest.raises(CatalogError, match="unknown model 'llama9'"):
        udf(u.LAYOUT_MFU, {**BASE, "model": "llama9"}, {}, None)


def test_gpus_not_a_multiple_of_tp_x_pp_is_refused_with_the_multiple():
    with pytest.raises(InputError) as info:
        udf(u.LAYOUT_STEP_S, {**BASE, "n_gpus": 12}, dict(tp=4, pp=2), None)
    assert str(info.value).startswith("n_gpus = 12 is not allowed: n_gpus must be a multiple of TP x PP x CP = 8")


def test_a_batch_of_no_whole_micro_batches_is_refused():
    with pytest.raises(InputError, match="multiple of DP x micro-batch = 8 x 3 = 24"):
        layout_prediction("llama3.1-8b", **{k: v for k, v in BASE.items() if k != "model"}, zero_stage=3,
                          micro_batch=3)


def test_a_layout_that_does_not_fit_says_what_it_needs():
    # 8B on one GPU's layout with no sharding: 16 bytes per parameter alone are 128 GB, more than an H100's 80
    with pytest.raises(InputError) as info:
        layout_prediction("llama3.1-8b", **{k: v for k, v in BASE.items() if k != "model"})
    message = str(info.value)
    assert message.startswith("layout = 'TP1 PP1 ZeRO-0 none mb1' is not allowed")
    assert "does not fit - needs" in message and "GB" in message and "weights" in message
    with pytest.raises(InputError, match="does not fit - needs"):
        udf(u.LAYOUT_MFU, BASE, {}, None)


def test_zero_sharding_without_data_parallelism_says_so():
    with pytest.raises(InputError, match="ZeRO-1 shards over the data-parallel GPUs and DP x CP = 1"):
        layout_prediction("llama2-7b", gpu="H200", n_gpus=1, seq_len=4096, global_batch_tokens=2 ** 20,
                          zero_stage=1)


def test_every_empty_required_cell_is_named_at_once():
    with pytest.raises(InputError) as info:
        u.LAYOUT_STEP_S(None, cell("H100"), None, cell(8192.0), None)
    assert info.value.names == ["model", "n_gpus", "global_batch_tokens"]
    assert "the cell is empty" in str(info.value)
    # Llama 3.1 8B: no published batch (the batch cell is required); 405B: 2,048 x 8,192 (Dubey et al. 2024)
    with pytest.raises(InputError) as info:
        u.LAYOUT_STEP_S(cell("llama3.1-8b"), cell("H100"), None, None, None)
    assert info.value.names == ["n_gpus", "global_batch_tokens"]
    with pytest.raises(InputError) as info:
        u.LAYOUT_STEP_S(cell("llama3.1-405b"), cell("H100"), None, None, None)
    assert info.value.names == ["n_gpus"]


def test_empty_sequence_and_batch_cells_take_the_catalogs_as_plan_does():
    empty = u.LAYOUT_MFU(cell("llama3.1-405b"), cell("H100"), cell(16384.0), None, None, tp=cell(8.0),
                         pp=cell(16.0), zero_stage=cell(1.0), recompute=cell("full"), micro_batch=cell(1.0))
    given = u.LAYOUT_MFU(cell("llama3.1-405b"), cell("H100"), cell(16384.0), cell(8192.0), cell(2048.0 * 8192),
                         tp=cell(8.0), pp=cell(16.0), zero_stage=cell(1.0), recompute=cell("full"),
                         micro_batch=cell(1.0))
    assert empty == given and 0 < empty < 1


def test_a_mixture_of_experts_needs_its_expert_parallel_size():
    with pytest.raises(InputError, match="^ep = \\(empty\\) is not allowed: ep must be the expert-parallel size, a "
                                         "divisor of experts = 256"):
        layout_prediction("deepseek-v3", gpu="H800", n_gpus=2048, seq_len=4096, global_batch_tokens=15_360 * 4096,
                          tp=1, pp=16)


def test_a_bad_layout_cell_names_the_input():
    with pytest.raises(InputError, match="^tp = 2.5 is not allowed"):
        udf(u.LAYOUT_STEP_S, BASE, dict(tp=2.5), None)
    with pytest.raises(InputError, match="^recompute = 'sometimes' is not allowed"):
        udf(u.LAYOUT_STEP_S, BASE, dict(recompute="sometimes"), None)
    with pytest.raises(InputError, match="^stack = 'nemo9' is not allowed"):
        udf(u.LAYOUT_STEP_S, BASE, dict(zero_stage=3), "nemo9")


def test_the_layout_functions_are_registered_worksheet_functions():
    for name in ("LAYOUT_STEP_S", "LAYOUT_MFU", "LAYOUT_TOKENS_PER_S_PER_GPU"):
        assert name in u.UDF_NAMES and name in u.__all__
        assert list(inspect.signature(getattr(u, name)).parameters) == [
            "model", "gpu", "n_gpus", "seq_len", "global_batch_tokens", "tp", "pp", "zero_stage", "recompute",
            "micro_batch", "cp", "virtual_stages", "seq_parallel", "ep", "stack"]

"""The worksheet functions a user calls for a question beside the CLI command that answers it, on names typed as
users type them: the same numbers, the same layout and the same fit answer.

Expected values come from the other face (``xlcalc ... --json``), never from the worksheet function itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli_run import run
from xlcalc import catalog
from xlcalc.errors import InputError
from xlcalc.inputs import spec
from xlcalc.lora_targets import target_set

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "udfs"))

import xlcalc_udfs as u  # noqa: E402


def cell(x):
    return [[x]]  # xlwings hands every argument over as a 2-D range (ndim=2)


def cli_json(capsys, *argv) -> dict:
    code, out, err = run(capsys, *map(str, argv), "--json")
    assert code == 0, err
    return json.loads(out)


# -- the fit: the memory the card has, as the CLI checks it --------------------------------------------------------

# (model, GPU as typed, layout): each predicted at 77-79 GB, inside the CUDA-exposed capacity with the margin
# (H100 SXM 79.11 GiB, A100 80GB 79.35 GiB: 80.5 GB and more) but over the nominal 80 GB less the margin (75.8 GB)
FIT_CASES = [
    ("llama3.1-8b", "H100 SXM", dict(seq_len=4096, micro_batch=1, tp=1, dp=64, zero_stage=1, recompute="none")),
    ("llama3.1-70b", "H100", dict(seq_len=8192, micro_batch=1, tp=4, dp=8, zero_stage=2, recompute="full",
                                  seq_parallel=True)),
    ("Llama 3.1 70B", "A100", dict(seq_len=4096, micro_batch=2, tp=4, dp=8, zero_stage=2, recompute="full",
                                   seq_parallel=True)),
]


@pytest.mark.parametrize("model, gpu, layout", FIT_CASES, ids=[c[0] + " " + c[1] for c in FIT_CASES])
def test_the_fit_from_gpu_spec_is_the_fit_xlcalc_memory_gives(capsys, model, gpu, layout):
    flags = [x for k, v in layout.items() for x in ("--" + k.replace("_", "-"), str(v).lower())]
    cli = cli_json(capsys, "memory", "--model", model, "--gpu", gpu, *flags)
    m = catalog.get_model(model)
    arch = [m.params_b, m.layers, m.hidden, m.heads, m.kv, m.ffn_hidden, m.vocab, layout["seq_len"]]
    total = u.MEM_PER_GPU_GB(*map(cell, arch), gated_ffn=cell(m.gated_ffn),
                             **{k: cell(v) for k, v in layout.items() if k != "seq_len"})
    assert total == pytest.approx(cli["total_gb"], rel=1e-9)
    capacity = u.GPU_SPEC(cell(gpu), cell("capacity_gb"))
    assert capacity == pytest.approx(cli["fit"]["capacity_gb"], rel=1e-12)
    verdict = u.FIT_VERDICT(cell(total), cell(capacity), cell(u.FIT_MARGIN_GB(cell(total))))
    assert verdict == cli["fit"]["verdict"] == "fits"
    # the nominal 80 GB is not what the CLI checks against: it would call the same layout tight
    nominal = u.GPU_SPEC(cell(gpu), cell("memory_gb"))
    assert u.FIT_VERDICT(cell(total), cell(nominal), cell(u.FIT_MARGIN_GB(cell(total)))) == "tight"


@pytest.mark.parametrize("kind, names", [("gpus", ("H100 SXM", "a100", "H200", "B200", "v100")),
                                         ("models", ("Llama 3.1 8B", "llama3.1-405b", "DeepSeek-V3"))])
def test_every_catalog_field_is_the_value_xlcalc_catalog_shows(capsys, kind, names):
    spec, fields = (u.GPU_SPEC, catalog.GPU_FIELDS) if kind == "gpus" else (u.MODEL_SPEC, catalog.MODEL_FIELDS)
    for name in names:
        shown = cli_json(capsys, "catalog", kind, name)
        assert set(fields) <= set(shown), f"{name}: the CLI lacks {set(fields) - set(shown)}"
        for field in fields:
            if shown[field] is None:  # not published: the look-up says so
                with pytest.raises(ValueError, match=f"no published {field}"):
                    spec(cell(name), cell(field))
            else:
                assert spec(cell(name), cell(field)) == shown[field], (name, field)


# -- the plan: every layout PLAN lists is the one xlcalc plan lists --------------------------------------------------

PLAN_CASES = [  # (model, GPU, GPUs, batch tokens, stack) as typed; the first lists context-parallel layouts
    ("Llama 3.1 8B", "H100 SXM", 64, 4194304, None),
    ("llama3.1-70b", "h200", 256, 8388608, "nemo"),
    ("deepseek-v3", "H800", 2048, None, "megatron"),
]


@pytest.mark.parametrize("model, gpu, n_gpus, batch, stack", PLAN_CASES, ids=[c[0] for c in PLAN_CASES])
def test_plan_lists_the_layouts_xlcalc_plan_lists(capsys, model, gpu, n_gpus, batch, stack):
    from xlcalc.planner.answer import PLAN_COLUMNS

    flags = [*(("--global-batch-tokens", batch) if batch else ()), *(("--stack", stack) if stack else ())]
    cli = cli_json(capsys, "plan", "--model", model, "--gpu", gpu, "--n-gpus", n_gpus, "--top", 5, *flags)
    table = u.PLAN(cell(model), cell(gpu), cell(n_gpus), None, None if batch is None else cell(batch), None, None,
                   cell(5), None if stack is None else cell(stack))
    rows = [dict(zip(PLAN_COLUMNS, r)) for r in table[1:] if isinstance(r[0], int)]
    assert len(rows) == len(cli["plans"]) == 5
    for row, p in zip(rows, cli["plans"]):
        layout = ("tp", "pp", "cp", "ep", "dp", "zero_stage", "seq_parallel", "recompute", "micro_batch",
                  "virtual_stages")
        assert {k: row[k] for k in layout} == {k: p[k] for k in layout}
        assert row["tp"] * row["pp"] * row["cp"] * row["dp"] == n_gpus  # the whole cluster, read off the row
        for k in ("memory_gb", "step_s", "mfu", "tokens_per_s_per_gpu", "days", "gpu_hours", "cost_usd"):
            assert row[k] == pytest.approx(p[k], rel=1e-12), k
    if model == "Llama 3.1 8B":
        assert any(row["cp"] > 1 for row in rows)  # the layouts the table once listed without their CP


# -- goodput: one default MTBF per GPU ------------------------------------------------------------------------------

@pytest.mark.parametrize("n_gpus", [1024, 16384])
def test_goodput_and_estimate_take_one_default_mtbf_and_give_one_goodput(capsys, n_gpus):
    alone = cli_json(capsys, "goodput", "--n-gpus", n_gpus)
    est = cli_json(capsys, "estimate", "--model", "llama3.1-70b", "--gpu", "H100", "--n-gpus", n_gpus)
    assert alone["gpu_mtbf_h"] == est["scenario"]["gpu_mtbf_h"]
    rows = {r["key"]: r["value"] for r in alone["rows"]}
    assert rows["goodput"] == pytest.approx(est["results"]["Goodput"], rel=1e-13)
    cells = [alone["n_gpus"], alone["gpu_mtbf_h"], alone["save_s"], alone["restart_s"]]
    assert u.GOODPUT(*map(cell, cells)) == pytest.approx(est["results"]["Goodput"], rel=1e-13)
    # the default is Llama 3's 419 interruptions in 54 days on 16,384 GPUs, to the hour (GPU-hours per interruption)
    assert alone["gpu_mtbf_h"] == pytest.approx(16384 * 54 * 24 / 419, abs=0.5)


@pytest.mark.parametrize("model", ["gpt3-175b", "Llama 2 7B", "BLOOM 176B", "llama3.1-8b"])
def test_model_spec_gives_the_heads_xlcalc_memory_computes_with(capsys, model):
    # a multi-head-attention model lists no kv_heads or head_dim (the schema: its heads; hidden / heads): the look-up
    # gives what `xlcalc memory --model` computes with, for MEM_PER_GPU_GB's cells, not "unpublished"
    used = cli_json(capsys, "memory", "--model", model, "--seq-len", 2048)["inputs"]
    for field in ("heads", "kv_heads", "head_dim"):
        assert u.MODEL_SPEC(cell(model), cell(field)) == used[field], field


# -- a price the catalog lacks: one sentence, saying where each face takes the rate ---------------------------------

@pytest.mark.parametrize("gpu", ["B200", "A100"])
def test_a_gpu_without_a_default_rate_is_the_same_sentence_in_a_cell_and_on_the_cli(capsys, gpu):
    with pytest.raises(ValueError) as e:
        u.GPU_PRICE(cell(gpu))
    # budget, whose every number is the price, refuses as the look-up does (cost and estimate take the declared
    # example rate and say so: the price line "example default ... give --usd-per-gpu-hour")
    code, _, err = run(capsys, "budget", "--gpu", gpu, "--budget-usd", "1000000")
    assert code == 2 and str(e.value) in err
    assert str(e.value).startswith("usd_per_gpu_hour = (empty) is not allowed")
    # where to type the rate on every face: the flag, the workbook's cell, a worksheet formula's argument
    assert all(w in str(e.value) for w in ("--usd-per-gpu-hour", "cell USD_per_GPU_Hour", "usd_per_gpu_hour argument"))


# -- LoRA targets typed as users type them ------------------------------------------------------------------------

@pytest.mark.parametrize("typed, framework", [("q,v", None), ("q_proj,v_proj", "torchtune"), ("Q,K,V,O", "HF Trainer"),
                                              ("q,k,v,o,gate,up,down", "hf-trainer"), ("wq, wv", None)])
def test_mem_per_gpu_gb_takes_the_lora_targets_xlcalc_memory_takes(capsys, typed, framework):
    m = catalog.get_model("llama3.1-8b")
    flags = ["--framework", framework] if framework else []
    cli = cli_json(capsys, "memory", "--model", "llama3.1-8b", "--seq-len", 4096, "--job", "lora", "--lora-rank", 16,
                   "--lora-targets", typed, *flags)
    arch = [m.params_b, m.layers, m.hidden, m.heads, m.kv, m.ffn_hidden, m.vocab, 4096]
    extra = {"framework": cell(framework)} if framework else {}
    got = u.MEM_PER_GPU_GB(*map(cell, arch), gated_ffn=cell(True), job=cell("lora"), lora_rank=cell(16),
                           lora_targets=cell(typed), **extra)
    assert got == pytest.approx(cli["total_gb"], rel=1e-12)
    assert cli["inputs"]["lora_targets"] in ("qv", "attention", "all_linear")


def test_a_lora_target_set_the_model_does_not_count_is_one_sentence_on_both_faces(capsys):
    m = catalog.get_model("llama3.1-8b")
    arch = [m.params_b, m.layers, m.hidden, m.heads, m.kv, m.ffn_hidden, m.vocab, 4096]
    with pytest.raises(ValueError) as e:
        u.MEM_PER_GPU_GB(*map(cell, arch), job=cell("lora"), lora_targets=cell("q,k"))
    code, _, err = run(capsys, "memory", "--model", "llama3.1-8b", "--job", "lora", "--lora-targets", "q,k")
    assert code == 2 and str(e.value) in err
    assert str(e.value).startswith("lora_targets = 'q,k' is not allowed: lora_targets must be one of \"qv\", \"qkv\", "
                                   "\"attention\", \"all_linear\", or one of these sets' matrices as a comma list: q,v |")


@pytest.mark.parametrize("typed", ["q", "w", "q,k", "x,y"])
def test_every_refusal_of_a_lora_target_states_what_the_input_allows(typed):
    # "q" (a matrix, not a set) was refused with "one of the sets q,v | ...", without the input's allowed sets
    with pytest.raises(InputError) as e:
        target_set(typed)
    assert spec("lora_targets").allowed in str(e.value) and e.value.names == ["lora_targets"]


def test_a_gpu_the_planner_lacks_figures_for_is_one_sentence_saying_where_they_are_given(capsys):
    with pytest.raises(ValueError) as e:
        u.PLAN(cell("llama3.1-8b"), cell("Ascend 910B"), cell(8), None, cell(1048576))
    code, _, err = run(capsys, "plan", "--model", "llama3.1-8b", "--gpu", "Ascend 910B", "--n-gpus", "8",
                       "--global-batch-tokens", "1048576")
    assert code == 2 and str(e.value) in err
    # the flags are the CLI's: a cell says that PLAN cannot take them, not only "the flag named"
    assert "--hbm-tb-s" in str(e.value) and "PLAN and LAYOUT_* take none of them" in str(e.value)

"""Fine-tuning (full, LoRA, QLoRA) in the stage memory model and in time and cost, through every face.

Expected values are hand counts from the LoRA and QLoRA papers' definitions (r(d + k) per adapted matrix, NF4 with
double-quantised constants), seed 002's 2P + 14P' and the FLOP count 4N + 6N'; the faces (Python, ``xlcalc memory``,
``xlcalc estimate``, the worksheet functions and the workbook recalculated by LibreOffice) must give one answer.
LibreOffice and xlwings tests skip where those are absent, except under CI=true, where they fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

import lo_batch
from test_memory_faces import named_cell, run, udf_module
from xlcalc import catalog
from xlcalc.formulas.finetune import nf4_bytes_per_param
from xlcalc.model_inputs import model_inputs
from xlcalc.recipes import RECIPES
from xlcalc.scenario import Scenario, evaluate
from xlcalc.stage_memory import stage_memory
from xlcalc.workbook import build

ROOT = Path(__file__).resolve().parent.parent

# The question: QLoRA of Llama 2 70B, rank 8 on every linear layer, on 8 H100 under ZeRO-3, 2 sequences of 2048
# tokens per GPU, full recompute, QLoRA's recipe (bf16 adapters, fp32 Adam states), 1B tokens.
MODEL, GPU = "llama2-70b", "h100-sxm"
L2_70B = catalog.get_model(MODEL)
H, L, KV_DIM, F, V = 8192, 80, 8 * 128, 28672, 32000
# r x sum of (d_in + d_out): q (h, h), k (h, 8 x 128), v (h, 8 x 128), o (h, h), gate and up (h, F), down (F, h)
ADAPTERS_R8 = 8 * (2 * (H + H) + 2 * (H + KV_DIM) + 3 * (H + F)) * L / 1e9
EMBED = 2 * V * H / 1e9  # input embedding and output layer, untied: kept in 16 bit
NF4 = (4 + 8 / 64 + 32 / (64 * 256)) / 8  # QLoRA §3: 4 bits + 0.127 bits of double-quantised constants
QLORA = RECIPES["qlora"]

SCENARIO = dict(model=MODEL, gpu=GPU, n_gpus=8, tp=1, pp=1, zero_stage=3, seq_len=2048, micro_batch=2,
                recompute="full", seq_parallel=False, job="qlora", lora_rank=8, lora_targets="all_linear",
                recipe="qlora", tokens_t=0.001)


def python_answer(**extra):
    v = model_inputs(L2_70B)
    v.update(seq_len=2048, micro_batch=2, dp=8, zero_stage=3, recompute="full", job="qlora", lora_rank=8,
             lora_targets="all_linear", bytes_weights=QLORA.weights, bytes_grads=QLORA.grads,
             bytes_optimizer=QLORA.optimizer)
    v.update(extra)
    return stage_memory(**v)


def test_adapters_weights_gradients_and_optimizer_by_hand():
    a = python_answer()
    assert a.values["Adapter_Params_B"] == pytest.approx(ADAPTERS_R8, rel=1e-12)
    assert round(ADAPTERS_R8 * 1e9) == 103_546_880
    part = a.parts_gb["first"]
    base = (L2_70B.params_b - EMBED) * NF4 + EMBED * 2
    assert nf4_bytes_per_param() == NF4
    assert part["weights"] == pytest.approx((base + 2 * ADAPTERS_R8) / 8, rel=1e-12)  # ZeRO-3 shards the base too
    assert part["gradients"] == pytest.approx(2 * ADAPTERS_R8 / 8, rel=1e-12)
    assert part["optimizer"] == pytest.approx(8 * ADAPTERS_R8 / 8, rel=1e-12)
    # ZeRO-3 gathers one frozen layer in NF4, without gradients: 4 bytes x layer of a trained one
    layer_b = (L2_70B.params_b - EMBED) / L
    assert part["gathered_params"] == pytest.approx(layer_b * NF4, rel=1e-9)


def test_seed002_lora_formula_is_the_stage_model_special_case():
    # seed 002 §7.1.2: LoRA model states = 2P + 14P' (fp16 frozen weights; adapters' weights, fp32 grads, Adam m, v).
    # Llama 2 7B, rank 8 on q and v: 8 x 2 x (4096 + 4096) x 32 layers = 4,194,304 adapter parameters.
    m = catalog.get_model("llama2-7b")
    r = RECIPES["seed002"]
    a = stage_memory(**{**model_inputs(m), "seq_len": 4096}, job="lora", lora_rank=8, lora_targets="qv",
                     bytes_weights=r.weights, bytes_grads=r.grads, bytes_optimizer=r.optimizer)
    p_lora = 8 * 2 * (4096 + 4096) * 32 / 1e9
    assert a.values["Trainable_Params_B"] == pytest.approx(p_lora, rel=1e-12)
    part = a.parts_gb["first"]
    states = part["weights"] + part["gradients"] + part["optimizer"]
    assert states == pytest.approx(2 * m.params_b + 14 * p_lora, rel=1e-12)


def test_full_job_is_pretraining_memory():
    # Llama 2 70B on TP 4 x DP 8, ZeRO-1, Megatron's recipe (2 + 4 + 12): every parameter trained.
    m = catalog.get_model(MODEL)
    common = dict(model_inputs(m), seq_len=4096, tp=4, dp=8, zero_stage=1, recompute="selective", seq_parallel=True)
    full = stage_memory(**common, job="full", lora_rank=64, lora_targets="qv")
    assert full.memory_gb == stage_memory(**common).memory_gb
    part = full.parts_gb["first"]
    assert part["weights"] == pytest.approx(2 * m.params_b / 4, rel=1e-12)
    assert part["gradients"] == pytest.approx(4 * m.params_b / 4, rel=1e-12)
    assert part["optimizer"] == pytest.approx(12 * m.params_b / 4 / 8, rel=1e-12)
    assert full.values["Trainable_Params_B"] == m.params_b and full.values["Adapter_Params_B"] == 0


def test_lora_between_qlora_and_full():
    qlora, lora = python_answer(), python_answer(job="lora")
    full = python_answer(job="full")
    assert qlora.memory_gb < lora.memory_gb < full.memory_gb
    # the frozen 16-bit base: 2 bytes per parameter, sharded over 8 GPUs
    assert lora.parts_gb["first"]["weights"] == pytest.approx((2 * L2_70B.params_b + 2 * ADAPTERS_R8) / 8, rel=1e-12)


def test_flops_per_token_lora_is_4n_plus_6n_adapters():
    sc = Scenario.build(**SCENARIO)
    res = evaluate(sc)
    n = sc.params_b
    assert res["Trainable_Params_B"] == pytest.approx(ADAPTERS_R8, rel=1e-12)
    assert res["Train_FLOPs"] == pytest.approx((4 * n + 6 * ADAPTERS_R8) * 1e9 * 1e9, rel=1e-12)
    days = (4 * n + 6 * ADAPTERS_R8) * 1e18 / (sc.peak_tflops * 1e12 * 8 * sc.mfu) / 86400
    assert res["Train_Days"] == pytest.approx(days, rel=1e-12)
    assert res["GPU_Hours"] == pytest.approx(days * 24 * 8, rel=1e-12)
    assert res["Compute_Cost_USD"] == pytest.approx(days * 24 * 8 * sc.usd_per_gpu_hour, rel=1e-12)
    full = evaluate(Scenario.build(**{**SCENARIO, "job": "full"}))
    assert full["Train_FLOPs"] == pytest.approx(6 * n * 1e18, rel=1e-12)  # 6ND


def test_cli_memory_estimate_python_and_udfs_agree(capsys):
    want = python_answer().memory_gb
    code, out, err = run(capsys, "memory", "--model", MODEL, "--seq-len", "2048", "--micro-batch", "2", "--dp", "8",
                         "--zero-stage", "3", "--recompute", "full", "--quant", "nf4", "--lora-rank", "8",
                         "--lora-targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
                         "--recipe", "qlora", "--json")
    assert code == 0, err
    memory = json.loads(out)
    assert memory["total_gb"] == pytest.approx(want, rel=1e-12)
    assert memory["inputs"]["job"] == "qlora" and memory["inputs"]["lora_targets"] == "all_linear"
    assert memory["trainable_params_b"] == pytest.approx(ADAPTERS_R8, rel=1e-12)
    code, out, err = run(capsys, "estimate", "--model", MODEL, "--gpu", GPU, "--n-gpus", "8", "--tp", "1", "--pp", "1",
                         "--zero-stage", "3", "--seq-len", "2048", "--micro-batch", "2", "--recompute", "full",
                         "--seq-parallel", "false", "--job", "qlora", "--lora-rank", "8", "--recipe", "qlora",
                         "--tokens-t", "0.001", "--json")
    assert code == 0, err
    estimate = json.loads(out)
    # the scenario keeps the catalog's parameter count to 3 decimals (68.977 for 68.9766)
    assert estimate["results"]["Mem_Total_GB"] == pytest.approx(
        python_answer(params_b=estimate["scenario"]["params_b"]).memory_gb, rel=1e-12)
    assert estimate["scenario"]["job"] == "qlora"
    udfs = udf_module()
    udf = udfs.MEM_PER_GPU_GB(L2_70B.params_b, L, H, 64, 8, F, V, 2048, 2, 1, 1, 1, 8, 3, False, "full", True,
                              bytes_weights=2, bytes_grads=2, bytes_optimizer=8, job="qlora", lora_rank=8,
                              lora_targets="all_linear")
    assert udf == pytest.approx(want, rel=1e-9)
    days = udfs.FT_TRAIN_DAYS(estimate["scenario"]["params_b"], 0.001, ADAPTERS_R8, estimate["scenario"]["peak_tflops"], 8, 0.4,
                              "qlora")
    assert days == pytest.approx(estimate["results"]["Train_Days"], rel=1e-12)


def test_cli_text_names_the_job(capsys):
    code, out, _ = run(capsys, "memory", "--model", "llama2-7b", "--lora-rank", "8", "--lora-targets", "q,v")
    assert code == 0
    assert "job: lora, rank 8 on qv: 4.19M adapter parameters trained" in out
    assert "base frozen in 16-bit" in out


@pytest.mark.parametrize("argv, words", [
    (["--quant", "nf4", "--job", "lora"], "quant = 'nf4' is not allowed: quant must be left out with --job lora"),
    (["--job", "full", "--lora-rank", "8"], "lora_rank = 8 is not allowed: lora_rank must be left out with --job full"),
    (["--lora-targets", "q,k"], "lora_targets = 'q,k' is not allowed: lora_targets must be one of \"qv\", \"qkv\", "
                                "\"attention\", \"all_linear\", or one of these sets' matrices"),
    (["--lora-targets", "q,x"], "'x' is not a matrix of a layer"),
    (["--lora-rank", "0"], "lora_rank = 0 is not allowed"),
    (["--job", "lora", "--lora-targets", "everything"], "lora_targets = 'everything' is not allowed"),
])
def test_bad_fine_tuning_flags_exit_2_naming_the_input(capsys, argv, words):
    for command in ("memory", "estimate"):
        code, out, err = run(capsys, command, "--model", "llama2-7b", *argv)
        assert code == 2 and out == "", (command, out)
        assert words in err, (command, err)
        assert "Traceback" not in err


def test_finetune_docs_are_current():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_finetune_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@lo_batch.register("finetune_faces")
def _produce(work: Path) -> tuple[list[Path], Scenario]:
    """A QLoRA plan and the same plan switched to LoRA in the sheet, for the session's one LibreOffice run."""
    sc = Scenario.build(**SCENARIO)
    build(work / "qlora.xlsx", [sc])
    wb = openpyxl.load_workbook(work / "qlora.xlsx")
    named_cell(wb, "Job").value = "lora"  # the sheet's own input: the same scenario as a LoRA job
    wb.save(work / "lora.xlsx")
    return [work / "qlora.xlsx", work / "lora.xlsx"], sc


@pytest.fixture(scope="module")
def recalculated():
    paths, sc = lo_batch.results("finetune_faces")
    return sc, [openpyxl.load_workbook(p, data_only=True) for p in paths]


def test_finetuning_sheet_recalculated_by_libreoffice_gives_the_engines_answer(recalculated):
    sc, (qlora_wb, lora_wb) = recalculated
    for wb, job in ((qlora_wb, "qlora"), (lora_wb, "lora")):
        res = evaluate(Scenario.build(**{**SCENARIO, "job": job}))
        assert named_cell(wb, "Job").value == job
        assert wb["FineTuning"] is not None
        for name in ("Adapter_Params_B", "Trainable_Params_B", "Mem_Total_GB", "Mem_First_Weights_GB", "Train_FLOPs",
                     "Train_Days", "GPU_Hours", "Total_Cost_USD"):
            assert named_cell(wb, name).value == pytest.approx(res[name], rel=1e-9), (job, name)
        assert named_cell(wb, "Mem_Total_GB").value == pytest.approx(
            python_answer(job=job, params_b=sc.params_b).memory_gb, rel=1e-9)
        assert named_cell(wb, "Adapter_Params_B").value == pytest.approx(ADAPTERS_R8, rel=1e-9)
    # the sheet's FLOPs per token: 4N + 6N' (the formula row under "Time and cost")
    ws = qlora_wb["FineTuning"]
    flops = [r[1].value for r in ws.iter_rows(min_row=1) if r[0].value == "Model FLOPs per token"]
    assert flops and flops[0] == pytest.approx((4 * sc.params_b + 6 * ADAPTERS_R8) * 1e9, rel=1e-9)


def test_finetuning_sheet_inputs_are_validated_choices(tmp_path):
    build(tmp_path / "book.xlsx", [Scenario.build(**SCENARIO)])
    wb = openpyxl.load_workbook(tmp_path / "book.xlsx")
    for name, choices in (("Job", '"full,lora,qlora"'), ("LoRA_Targets", '"qv,qkv,attention,all_linear"')):
        (sheet, at), = wb.defined_names[name].destinations
        assert sheet == "FineTuning"
        cell = at.replace("$", "")
        dvs = [dv for dv in wb[sheet].data_validations.dataValidation if cell in str(dv.sqref)]
        assert len(dvs) == 1 and dvs[0].type == "list" and dvs[0].formula1 == choices, name
        assert not wb[sheet][cell].protection.locked
    assert named_cell(wb, "LoRA_Rank").value == 8
    assert "Job" not in [c.value for c in wb["Inputs"]["A"]]  # the job's inputs live on the FineTuning sheet only


def test_pipelined_fsdp_holds_the_frozen_stage_gathered_without_its_gradients():
    # ZeRO-3 under PP keeps the whole stage gathered (FSDP2 under torch.distributed.pipelining) with its gradients
    # unsharded: (2 + bytes_grads) x stage params for a full job; a frozen stage has no gradients, 16-bit or NF4.
    m = catalog.get_model("llama2-7b")
    common = dict(model_inputs(m), seq_len=2048, pp=2, dp=4, zero_stage=3, recompute="full")
    for job, bytes_per_param in (("full", 2 + 4), ("lora", 2), ("qlora", NF4)):
        a = stage_memory(**common, job=job)
        stage_b = a.values["Stage_Params_B_First"]
        assert a.parts_gb["first"]["gathered_params"] == pytest.approx(bytes_per_param * stage_b, rel=1e-12), job

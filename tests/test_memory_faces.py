"""One memory question through every face, and every layout violation through every face.

Faces: ``xlcalc memory``, ``xlcalc estimate``, ``xlcalc plan`` (layout pinned), the worksheet functions
(udfs/xlcalc_udfs.py) and the workbook recalculated by LibreOffice. The same question gives the same memory
per GPU (within 1%) and, left at the defaults, the same recipe; a layout that does not split into whole
pieces gives the message naming the constraint, never a number and never "does not fit in memory".
Skips where LibreOffice or xlwings is absent, except under CI=true, where it fails.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import openpyxl
import pytest

import lo_batch
from cli_run import run
from named_edits import Edits, named_cell
from requires import require
from xlcalc import catalog
from xlcalc.errors import InputError
from xlcalc.outputs import OUTPUT_BY_NAME
from xlcalc.recipes import DEFAULT_RECIPE, RECIPES
from xlcalc.registry import get_formula
from xlcalc.scenario import Scenario
from xlcalc.stage_memory import stage_memory
from xlcalc.workbook import build
from xlcalc.workbook.libreoffice import soffice
from xlcalc.workbook.start import ALL_CLEAR

ROOT = Path(__file__).resolve().parent.parent

# The question: Llama 3.1 8B, 8K sequences, micro-batch 1, TP 2 x PP 2 on 64 H100 (DP 16), ZeRO-1, sequence
# parallelism, Megatron selective recompute; everything else at each face's defaults.
MODEL, GPU = "llama3.1-8b", "h100-sxm"
LAYOUT = dict(tp=2, pp=2, n_gpus=64, zero_stage=1, seq_len=8192, micro_batch=1)
GLOBAL_BATCH = 128  # sequences: 8 micro-batches per pipeline, more than PP, so the first stage holds PP in flight
DEFAULT = RECIPES[DEFAULT_RECIPE]
RECIPE_WORDS = f"{DEFAULT.id} {DEFAULT.weights:g}+{DEFAULT.grads:g}+{DEFAULT.optimizer:g} bytes/param"



def cli_memory(capsys, *extra):
    return run(capsys, "memory", "--model", MODEL, "--seq-len", "8192", "--micro-batch", "1", "--tp", "2", "--pp", "2",
               "--n-gpus", "64", "--zero-stage", "1", "--seq-parallel", "--recompute", "selective",
               "--global-batch", str(GLOBAL_BATCH), "--gpu", GPU, *extra)


def cli_estimate(capsys, *extra):
    return run(capsys, "estimate", "--model", MODEL, "--gpu", GPU, "--seq-len", "8192", "--micro-batch", "1",
               "--tp", "2", "--pp", "2", "--n-gpus", "64", "--zero-stage", "1", "--seq-parallel", "true",
               "--recompute", "selective", *extra)


# The memory faces take no stack: they answer for their default framework, Megatron-Core (xlcalc.frameworks
# DEFAULT_FRAMEWORK), whose memory the megatron stack profile plans with (it pins no memory fact); a plan that names
# no stack assumes the default stack (PyTorch FSDP, other bytes per parameter), so the plan face names megatron.
STACK = ("--stack", "megatron")


def cli_plan(capsys, *extra):
    return run(capsys, "plan", "--model", MODEL, "--gpu", GPU, "--gpus", "64", "--seq-len", "8192", *STACK,
               "--global-batch-tokens", str(GLOBAL_BATCH * 8192), "--tp", "2", "--pp", "2", "--zero-stage", "1",
               "--seq-parallel", "--recompute", "selective", "--micro-batch", "1", "--virtual-stages", "1", "--cp", "1",
               "--scaleout-gb-s", "50", *extra)


def udf_module():
    require(importlib.util.find_spec("xlwings"), "xlwings is not installed: the worksheet functions cannot be imported")
    if str(ROOT / "udfs") not in sys.path:
        sys.path.insert(0, str(ROOT / "udfs"))
    return importlib.import_module("xlcalc_udfs")


def udf_args() -> list:
    m = catalog.get_model(MODEL)
    # MEM_PER_GPU_GB(params_b, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, micro_batch, tp, pp, cp,
    #                dp, zero_stage, seq_parallel, recompute, gated_ffn, ...): the rest left empty (defaults)
    return [m.params_b, m.layers, m.hidden, m.heads, m.kv, m.ffn_hidden, m.vocab, 8192, 1, 2, 2, 1, 16, 1, True,
            "selective", m.gated_ffn]


def require_libreoffice():
    require(soffice(), "LibreOffice (soffice) is not installed")


def fit_capacities() -> dict[str, float]:
    """GPU memory (GB) for each fit answer of the question: the Python model's prediction T and margin M give a
    card of T + M + 1 GB (fits), T + M/2 (tight: between the prediction and prediction + margin) and T - 1 (does
    not fit); each boundary is over 1 GB from the answer, beyond the faces' 1% agreement on T."""
    m = catalog.get_model(MODEL)
    a = stage_memory(params_b=m.params_b, layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv,
                     ffn_hidden=m.ffn_hidden, gated_ffn=m.gated_ffn, vocab=m.vocab, seq_len=8192, micro_batch=1, tp=2,
                     pp=2, dp=16, zero_stage=1, seq_parallel=True, recompute="selective", memory_gb=80)
    t, margin = a.memory_gb, a.values["Fit_Margin_GB"]
    assert margin > 2  # the CUDA context and 5% of the prediction
    return {"fits": round(t + margin + 1, 2), "tight": round(t + margin / 2, 2), "not": round(t - 1, 2)}


# Layout violations: (id, scenario/memory values, expected words of the message)
VIOLATIONS = {
    # PP 7 on 80 layers split evenly: neither an even split nor the planner's uneven one (L + 2 or L + 1 a multiple
    # of PP; PP 3 on 80 layers is 27, 27, 26 there). (The workbook gives a catalog model picked as a preset a split
    # on any PP, xlcalc.layout.preset_stage_ends, unless the stage ends are typed; the CLI's memory and estimate
    # do not yet.)
    "pp_layers": (dict(model="llama2-70b", tp=4, pp=7, n_gpus=224),
                  "pp = 7 is not allowed: pp must be a divisor of layers = 80"),
    "head_size": (dict(params_b=7, layers=32, hidden=4000, heads=64, tp=4, pp=4, n_gpus=64),
                  "heads = 64 is not allowed: heads must be a divisor of hidden = 4000"),
    "replicas": (dict(model="llama2-70b", tp=4, pp=4, n_gpus=1000),
                 "n_gpus = 1000 is not allowed: n_gpus must be a multiple of TP x PP x CP = 16 (data parallelism "
                 "needs whole model replicas: GPUs/(TP x PP x CP) = 62.5)"),
    "tp_heads": (dict(model="llama2-70b", tp=3, pp=4, n_gpus=96),
                 "tp = 3 is not allowed: tp must be a divisor of heads = 64"),
}


# Framework (and Precision, GPU memory) picked in the question's workbook: (cells, memory's flags)
FRAMEWORK_PICKS = {"fw_transformers": {"Framework": "transformers"},
                   "fw_torchtitan": {"Framework": "torchtitan", "Precision": "amp"},
                   "fw_transformers_45gb": {"Framework": "transformers", "Precision": "amp", "GPU_Memory_GB": 45}}


@lo_batch.register("memory_faces")
def _produce(work: Path) -> tuple[list[Path], list[str]]:
    """The question and each violation as workbooks, for the session's one LibreOffice run (tests/lo_batch.py)."""
    src = work / "in"
    src.mkdir()
    question = Scenario.build(model=MODEL, gpu=GPU, seq_parallel=True, recompute="selective", **LAYOUT)
    build(src / "question.xlsx", [question])
    names = ["question"]
    base = Scenario.build(model="llama2-70b", gpu=GPU, tp=4, pp=4, n_gpus=1024)
    build(work / "base.xlsx", [base])
    # pp_layers: the stage ends typed 0 (an even split, as the CLI takes --pp without --layers-per-stage) instead of
    # the preset's split
    cells = {"pp_layers": {"PP_Size": 7, "N_GPUs": 224, "First_Stage_Layers": 0, "Last_Stage_Layers": 0}, "head_size": {"Hidden": 4000},
             "replicas": {"N_GPUs": 1000}, "tp_heads": {"TP_Size": 3, "N_GPUs": 96}}
    book = Edits(src / "question.xlsx")
    for verdict, cap in fit_capacities().items():  # the question against a card it fits, fits tightly, does not fit
        book.save(src / f"fit_{verdict}.xlsx", {"GPU_Memory_GB": cap})
        names.append(f"fit_{verdict}")
    for case, picks in FRAMEWORK_PICKS.items():  # a framework picked in the dropdowns, as a user would
        book.save(src / f"{case}.xlsx", picks)
        names.append(case)
    book = Edits(work / "base.xlsx")
    for key, values in cells.items():
        book.save(src / f"{key}.xlsx", values)
        names.append(key)
    # two scenarios side by side (columns of their own): the question as it is, and with transformers; the first
    # column's dropdowns then switched to torchtitan at amp, as a user would
    build(work / "columns.xlsx", [question, Scenario.build(**{**question.model_dump(exclude_unset=True),
                                                              "framework": "transformers"})])
    book = Edits(work / "columns.xlsx")
    book.save(src / "columns.xlsx", {})
    names.append("columns")
    at = {n: _column_cell(book.wb, n, "C") for n in ("Framework", "Precision")}
    book.save(src / "columns_picked.xlsx", {at["Framework"]: "torchtitan", at["Precision"]: "amp"})
    names.append("columns_picked")
    return [src / f"{n}.xlsx" for n in names], names


def _column_cell(wb, label: str, col: str) -> str:
    """The cell of a Scenarios column ``col`` in the row labelled ``label`` (column A), as ``Scenarios!C10``."""
    ws = wb["Scenarios"]
    row = next(r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == label)
    return f"Scenarios!{col}{row}"


@pytest.fixture(scope="module")
def recalculated():
    paths, names = lo_batch.results("memory_faces")
    return {n: openpyxl.load_workbook(p, data_only=True) for n, p in zip(names, paths)}


def test_one_question_same_memory_and_recipe_on_every_face(capsys, recalculated):
    code, out, _ = cli_memory(capsys, "--json")
    assert code == 0
    memory = json.loads(out)
    code, out, _ = cli_estimate(capsys, "--json")
    assert code == 0
    estimate = json.loads(out)
    code, out, _ = cli_plan(capsys, "--json")
    assert code == 0
    plan = json.loads(out)
    assert len(plan["plans"]) == 1 and (plan["plans"][0]["tp"], plan["plans"][0]["pp"]) == (2, 2)
    udfs = udf_module()
    udf = udfs.MEM_PER_GPU_GB(*udf_args())
    wb = recalculated["question"]
    workbook = named_cell(wb, "Mem_Total_GB").value

    answers = {"memory": memory["total_gb"], "estimate": estimate["results"]["Mem_Total_GB"],
               "plan": plan["plans"][0]["memory_gb"], "udf": udf, "workbook": workbook}
    ref = answers["memory"]
    assert ref > 10  # weights, gradients and optimizer states of 8B over TP 2 x PP 2 alone are 9 GB
    for face, gb in answers.items():
        assert isinstance(gb, float), (face, gb)
        assert abs(gb - ref) <= 0.01 * ref, answers

    # left at their defaults, every face used the same recipe, and says so
    assert memory["recipe"] == estimate["recipe"] == plan["recipe"] == RECIPE_WORDS
    assert (named_cell(wb, "Bytes_Weights").value, named_cell(wb, "Bytes_Grads").value,
            named_cell(wb, "Bytes_Optimizer").value) == (DEFAULT.weights, DEFAULT.grads, DEFAULT.optimizer)
    d = get_formula("MEM_PER_GPU_GB").defaults  # the worksheet function's optional byte counts
    assert (d["bytes_weights"], d["bytes_grads"], d["bytes_optimizer"]) == (DEFAULT.weights, DEFAULT.grads,
                                                                           DEFAULT.optimizer)
    # the same overhead: a plan's other memory is the memory command's
    assert plan["plans"][0]["overhead_gb"] == memory["stages"]["first"]["parts_gb"]["other"]
    # the text faces state the recipe too
    _, text, _ = cli_memory(capsys)
    assert f"recipe: {RECIPE_WORDS}" in text
    _, text, _ = cli_estimate(capsys)
    assert f"Memory: recipe {RECIPE_WORDS}" in text
    _, text, _ = cli_plan(capsys)
    assert f"recipe {RECIPE_WORDS}" in text


def _memory_values(values: dict) -> dict:
    v = dict(values)
    if "model" in v:
        m = catalog.get_model(v.pop("model"))
        v.update(params_b=m.params_b, layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv,
                 ffn_hidden=m.ffn_hidden, gated_ffn=m.gated_ffn, vocab=m.vocab)
    v.setdefault("vocab", 32000)
    v.setdefault("seq_len", 4096)
    v["cluster_gpus"] = v.pop("n_gpus")
    return v


def _flags(values: dict) -> list[str]:
    out = []
    for k, x in values.items():
        out += ["--" + k.replace("_", "-"), str(x)]
    return out


@pytest.mark.parametrize("key", list(VIOLATIONS))
def test_layout_violation_gets_its_message_on_every_face(capsys, recalculated, key):
    values, words = VIOLATIONS[key]
    # Python: the stage model and the scenario
    with pytest.raises(InputError) as exc:
        stage_memory(**_memory_values(values))
    assert words in str(exc.value)
    with pytest.raises(InputError) as exc:
        Scenario.build(**values)
    assert words in str(exc.value)
    # CLI: memory, estimate, plan (pinned): exit code 2, the message, no traceback, no memory verdict
    flags = _flags({k: v for k, v in values.items()})
    mem_flags = [f.replace("--n-gpus", "--n-gpus") for f in flags]
    for argv in (["memory", *mem_flags, "--seq-len", "4096", "--vocab", "32000"],
                 ["estimate", *flags],
                 ["plan", *[f.replace("--n-gpus", "--gpus").replace("--params-b", "--tokens-t") for f in flags],
                  "--gpu", GPU, "--scaleout-gb-s", "50", "--seq-len", "4096", "--global-batch-tokens",
                  str(4096 * 960)]):
        if argv[0] == "plan" and key == "head_size":
            argv = ["plan", "--layers", "32", "--hidden", "4000", "--heads", "64", "--tp", "4", "--pp", "4",
                    "--gpus", "64", "--gpu", GPU, "--scaleout-gb-s", "50", "--seq-len", "4096",
                    "--global-batch-tokens", str(4096 * 960)]
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert words.split(" (")[0] in err, (argv, err)
        assert "Traceback" not in err and "memory" not in err.split("error: ", 1)[1].lower()[:40], err
        assert out == ""
    # the worksheet functions: the cell shows the message
    udfs = udf_module()
    v = _memory_values(values)
    args = [v["params_b"], v["layers"], v["hidden"], v["heads"], v.get("kv_heads", v["heads"]),
            v.get("ffn_hidden", 4 * v["hidden"]), v["vocab"], v["seq_len"], 1, v["tp"], v["pp"], 1,
            max(1, v["cluster_gpus"] // (v["tp"] * v["pp"])), 1, False, "none"]
    if key == "replicas":
        with pytest.raises(ValueError, match=r"n_gpus = 1000 is not allowed"):
            udfs.DP_SIZE(1000, 4, 4)
        msg = udfs.LAYOUT_MESSAGE(v["hidden"], v["heads"], v["layers"], v["seq_len"], v["kv_heads"], 0, 0, 4, 4, 1,
                                  1, 1000)
        assert words in msg
    else:
        with pytest.raises(ValueError) as exc:
            udfs.MEM_PER_GPU_GB(*args)
        assert words.split(" (")[0] in str(exc.value)
    # the workbook, recalculated by LibreOffice: the message in the cells, never a number or an error value
    wb = recalculated[key]
    value = named_cell(wb, "Layout_Check").value
    assert isinstance(value, str) and words in value, value
    (sheet, at), = wb.defined_names["Layout_Check"].destinations  # the memory cells show the way to the message
    for name in ("Mem_Total_GB", "Mem_First_Total_GB", "Mem_Last_Weights_GB", "Mem_Static_GB", "Fits_GPU",
                 "Max_Micro_Batch", "DP_Size"):
        assert named_cell(wb, name).value == f"see {sheet}!{at.replace('$', '')}", name


# An uneven pipeline: Llama 3.1 70B's 80 layers on PP 3 as 27, 27, 26 (what the planner picks for PP 3), TP 4,
# 96 GPUs (DP 8), ZeRO-1, full recompute, 8 micro-batches per step
UNEVEN = ["--seq-len", "8192", "--micro-batch", "1", "--tp", "4", "--zero-stage", "1", "--recompute", "full"]


def test_uneven_split_same_memory_on_every_face(capsys):
    code, out, err = run(capsys, "memory", "--model", "llama3.1-70b", *UNEVEN, "--n-gpus", "96", "--global-batch",
                         "64", "--layers-per-stage", "27,27,26", "--json")
    assert code == 0, err
    memory = json.loads(out)
    assert (memory["stages"]["first"]["layers"], memory["stages"]["last"]["layers"]) == (27, 26)
    code, out, err = run(capsys, "estimate", "--model", "llama3.1-70b", "--gpu", GPU, *UNEVEN, "--n-gpus", "96",
                         "--seq-parallel", "false", "--layers-per-stage", "27,27,26", "--json")
    assert code == 0, err
    estimate = json.loads(out)
    plans = {}
    for split in (["--layers-per-stage", "27,27,26"], ["--pp", "3"]):
        code, out, err = run(capsys, "plan", "--model", "llama3.1-70b", "--gpu", GPU, "--gpus", "96", *STACK,
                             *UNEVEN[:6],
                             "--zero-stage", "1", "--recompute", "full", "--no-seq-parallel", "--virtual-stages",
                             "1", "--cp", "1", "--global-batch-tokens", str(64 * 8192), "--scaleout-gb-s", "50",
                             *split, "--json")
        assert code == 0, err
        plans[split[0]] = json.loads(out)["plans"][0]
    py = stage_memory(**{**_memory_values(dict(model="llama3.1-70b", n_gpus=96)), "seq_len": 8192}, tp=4, pp=3,
                      first_stage_layers=27, last_stage_layers=26, zero_stage=1, recompute="full", microbatches=8)
    answers = {"memory": memory["total_gb"], "estimate": estimate["results"]["Mem_Total_GB"],
               "plan (layers per stage)": plans["--layers-per-stage"]["memory_gb"],
               "plan (PP 3)": plans["--pp"]["memory_gb"], "python": py.memory_gb}
    # 27 layers of 70B (0.86 B parameters each) over TP 4: 2 + 4 bytes per parameter of weights and gradients
    # alone are > 34 GB
    assert answers["memory"] > 34
    for gb in answers.values():
        assert abs(gb - answers["memory"]) <= 0.01 * answers["memory"], answers
    assert plans["--pp"]["stage_layers"] == [27, 27, 26]


@pytest.mark.parametrize("split, words", [
    ("27,27,27", "layers_per_stage = '27,27,27' is not allowed: layers_per_stage must be layers per stage adding "
                 "up to the model's 80 layers (27 + 27 + 27 = 81)"),
    ("20,30,10,20", "layers_per_stage = '20,30,10,20' is not allowed: layers_per_stage must be a split whose "
                    "middle stages hold equal layers"),
])
def test_impossible_split_refused_on_every_face(capsys, split, words):
    for argv in (["memory", "--model", "llama3.1-70b", *UNEVEN, "--layers-per-stage", split],
                 ["estimate", "--model", "llama3.1-70b", "--gpu", GPU, *UNEVEN, "--layers-per-stage", split],
                 ["plan", "--model", "llama3.1-70b", "--gpu", GPU, "--gpus", "96", *UNEVEN[:6],
                  "--global-batch-tokens", str(64 * 8192), "--scaleout-gb-s", "50", "--layers-per-stage", split]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "", (argv, out, err)
        assert words.replace(" = '", " = ").replace("' is", " is") in err.replace("'", "") or words in err, (argv, err)
        assert "Traceback" not in err


def test_pp_that_does_not_divide_the_layers_names_the_split(capsys):
    words = "pp = 3 is not allowed: pp must be a divisor of layers = 80"
    for argv in (["memory", "--model", "llama3.1-70b", *UNEVEN, "--pp", "3"],
                 ["estimate", "--model", "llama3.1-70b", "--gpu", GPU, *UNEVEN, "--pp", "3", "--n-gpus", "96"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and words in err and "layers_per_stage" in err, (argv, err)


def test_gradients_freed_same_memory_on_every_face(capsys):
    # Llama 3.1 8B under FSDP on 8 GPUs, per-op selective recompute, fp32 gradients, gradients set to None between
    # steps (PyTorch's zero_grad): the memory command, estimate, the worksheet function and Python agree, and the
    # gradients (8.03e9 x 4 / 8 = 4.0 GB) are not added to the activations
    args = ["--model", MODEL, "--seq-len", "8192", "--micro-batch", "1", "--tp", "1", "--pp", "1", "--n-gpus", "8",
            "--zero-stage", "3",
            "--recompute", "op_selective", "--bytes-grads", "4"]
    code, out, err = run(capsys, "memory", *args, "--grads-freed", "--json")
    assert code == 0, err
    memory = json.loads(out)
    code, out, err = run(capsys, "memory", *args, "--json")
    assert code == 0, err
    kept = json.loads(out)
    code, out, err = run(capsys, "estimate", "--gpu", GPU, *args, "--grads-freed", "true", "--json")
    assert code == 0, err
    estimate = json.loads(out)
    m = catalog.get_model(MODEL)
    udf = udf_module().MEM_PER_GPU_GB(m.params_b, m.layers, m.hidden, m.heads, m.kv, m.ffn_hidden, m.vocab, 8192, 1,
                                      1, 1, 1, 8, 3, False, "op_selective", m.gated_ffn, bytes_grads=4,
                                      grads_freed=True)
    py = stage_memory(**{**_memory_values(dict(model=MODEL, n_gpus=8)), "seq_len": 8192}, zero_stage=3,
                      recompute="op_selective", bytes_grads=4, grads_freed=True)
    grads = kept["stages"]["first"]["parts_gb"]["gradients"]
    assert grads == pytest.approx(m.params_b * 4 / 8, rel=1e-3)
    assert memory["total_gb"] == pytest.approx(kept["total_gb"] - grads)
    answers = {"memory": memory["total_gb"], "estimate": estimate["results"]["Mem_Total_GB"], "udf": udf,
               "python": py.memory_gb}
    for gb in answers.values():
        assert abs(gb - answers["memory"]) <= 0.01 * answers["memory"], answers


VERDICT = {"fits": "fits", "tight": "tight", "not": "does not fit"}


@pytest.mark.parametrize("key", list(VERDICT))
def test_fit_answer_is_the_same_on_every_face(capsys, recalculated, key):
    """One card per answer: every face gives the same verdict (FIT_VERDICT) and says fits only where it is "fits"."""
    cap, want = fit_capacities()[key], VERDICT[key]
    code, out, _ = cli_memory(capsys, "--memory-gb", str(cap), "--json")
    assert code == 0
    memory = json.loads(out)
    code, out, _ = cli_estimate(capsys, "--gpu-memory-gb", str(cap), "--json")
    assert code == 0
    estimate = json.loads(out)["results"]
    code, out, _ = cli_plan(capsys, "--memory-gb", str(cap), "--json")
    plan = json.loads(out) if code == 0 else {"plans": [], "rejected": [], "error": out}
    udfs = udf_module()
    total = udfs.MEM_PER_GPU_GB(*udf_args())
    margin = udfs.FIT_MARGIN_GB(total)
    wb = recalculated[f"fit_{key}"]
    assert named_cell(wb, "GPU_Memory_GB").value == cap

    verdicts = {"memory": memory["fit"]["verdict"], "estimate": estimate["Fit_Verdict"],
                "udf": udfs.FIT_VERDICT(total, cap, margin), "workbook": named_cell(wb, "Fit_Verdict").value}
    assert set(verdicts.values()) == {want}, verdicts
    fits = {"memory": memory["fits"], "estimate": estimate["Fits_GPU"], "udf": udfs.FITS_IN_GPU(total, cap, margin),
            "workbook": named_cell(wb, "Fits_GPU").value, "plan": len(plan["plans"]) == 1}
    assert set(fits.values()) == {want == "fits"}, fits
    if want != "fits":  # the planner's rejection names the same answer
        assert any(want in r["reason"] for r in plan.get("rejected", [])) or want in plan.get("error", ""), plan
    # the text face names the answer, the margin and the two largest terms
    _, text, _ = cli_memory(capsys, "--memory-gb", str(cap))
    assert f"fit: {want.upper()}" in text and "margin" in text and "largest terms: activations" in text
    _, text, _ = cli_estimate(capsys, "--gpu-memory-gb", str(cap))
    assert f"fit: {want.upper()} on h100-sxm" in text and "largest terms: activations" in text


@pytest.mark.parametrize("framework", ["transformers", "torchtitan"])
def test_a_named_framework_gives_the_same_memory_on_every_face(capsys, recalculated, framework):
    # the framework's memory facts (xlcalc.frameworks: fp32 weights and gradients, the fp32 loss buffers, autocast
    # copies, gradients freed) reach memory, estimate, plan (layout pinned), MEM_PER_GPU_GB and the workbook (the
    # framework picked in its dropdown, recalculated by LibreOffice) alike
    code, out, err = cli_memory(capsys, "--framework", framework, "--json")
    assert code == 0, err
    memory = json.loads(out)
    code, out, err = cli_estimate(capsys, "--framework", framework, "--json")
    assert code == 0, err
    estimate = json.loads(out)
    code, out, err = cli_plan(capsys, "--framework", framework, "--json")
    assert code == 0, err
    plan = json.loads(out)
    udf = udf_module().MEM_PER_GPU_GB(*udf_args(), framework=framework)
    _, default_out, _ = cli_memory(capsys, "--json")
    # fp32 weights, gradients and Adam m, v (4 + 4 + 8) where the default keeps bf16 weights (2 + 4 + 12)
    assert memory["recipe"].startswith("fp32 4+4+8") and json.loads(default_out)["total_gb"] != memory["total_gb"]
    answers = {"memory": memory["total_gb"], "estimate": estimate["results"]["Mem_Total_GB"],
               "plan": plan["plans"][0]["memory_gb"], "udf": udf}
    for gb in answers.values():
        assert abs(gb - answers["memory"]) <= 0.01 * answers["memory"], answers
    wb = recalculated[f"fw_{framework}"]
    assert named_cell(wb, "Framework").value == framework
    workbook = named_cell(wb, "Mem_Total_GB").value
    assert isinstance(workbook, float) and abs(workbook - memory["total_gb"]) <= 0.001 * memory["total_gb"], (
        workbook, memory["total_gb"])
    verdicts = {"memory": memory["fit"]["verdict"], "estimate": estimate["results"]["Fit_Verdict"],
                "workbook": named_cell(wb, "Fit_Verdict").value}
    assert len(set(verdicts.values())) == 1, verdicts
    assert bool(named_cell(wb, "Fits_GPU").value) is memory["fits"] is estimate["results"]["Fits_GPU"]


def test_each_scenarios_column_takes_its_own_framework_as_the_cli_does(capsys, recalculated):
    """Scenarios side by side, each column with its own Framework and Precision dropdowns: a column built from a
    scenario with transformers, and one whose dropdowns were switched to torchtitan at amp in the sheet, each hold the
    memory `xlcalc memory --framework ...` gives for that framework; the Inputs plan keeps the default's."""
    want = {}
    for framework in ("transformers", "torchtitan", None):
        code, out, err = cli_memory(capsys, *(("--framework", framework) if framework else ()), "--json")
        assert code == 0, err
        want[framework] = json.loads(out)["total_gb"]
    assert len(set(want.values())) == 3  # the three answers differ: each column's own framework is seen
    mem_label = OUTPUT_BY_NAME["Mem_Total_GB"].label
    for case, columns in (("columns", {"C": None, "D": "transformers"}),
                          ("columns_picked", {"C": "torchtitan", "D": "transformers"})):
        wb = recalculated[case]
        for col, framework in columns.items():
            assert (named_cell(wb, _column_cell(wb, "Framework", col)).value or None) == framework, (case, col)
            got = named_cell(wb, _column_cell(wb, mem_label, col)).value
            assert isinstance(got, float) and abs(got - want[framework]) <= 0.001 * want[framework], (
                case, col, got, want[framework])
        assert abs(named_cell(wb, "Mem_Total_GB").value - want[None]) <= 0.001 * want[None]
        assert wb["Start"]["C3"].value == ALL_CLEAR  # every check passes, the columns' Precision checks included


def test_a_framework_picked_in_the_workbook_changes_the_fit_as_on_the_cli(capsys, recalculated):
    """transformers at amp (fp32 weights, gradients and AdamW states, 12-byte logits, autocast copies) does not fit a
    45 GB card that the default (Megatron-Core) fits tightly or does: the workbook says what `xlcalc memory` says."""
    code, out, err = cli_memory(capsys, "--framework", "transformers", "--precision", "amp", "--memory-gb", "45",
                                "--json")
    assert code == 0, err
    memory = json.loads(out)
    code, out, err = cli_memory(capsys, "--memory-gb", "45", "--json")
    assert code == 0, err
    default = json.loads(out)
    assert memory["fit"]["verdict"] == "does not fit" and default["fit"]["verdict"] != "does not fit"
    wb = recalculated["fw_transformers_45gb"]
    assert named_cell(wb, "GPU_Memory_GB").value == 45
    assert abs(named_cell(wb, "Mem_Total_GB").value - memory["total_gb"]) <= 0.001 * memory["total_gb"]
    assert named_cell(wb, "Fit_Verdict").value == "does not fit"
    assert not named_cell(wb, "Fits_GPU").value

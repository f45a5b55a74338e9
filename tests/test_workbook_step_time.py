"""The StepTime sheet: the step time and MFU ``xlcalc plan`` gives for the Inputs sheet's layout, as live formulas.

The planner (``plan`` with every layout choice pinned, the same run, GPU, global batch and stack) is the reference;
the workbook's own values (what its cells cache) and LibreOffice's recalculation of them must give its numbers, for
several presets and for the stacks picked in the Stack dropdown as a user would. Skips where LibreOffice is absent,
except under CI=true, where it fails.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import openpyxl
import pytest

import lo_batch
from cli_run import run
from named_edits import Edits, named_cell, validation_of
from xlcalc import catalog, presets
from xlcalc.planner import Settings, layout_prediction, plan
from xlcalc.planner.stacks import DEFAULT_STACK, STACKS
from xlcalc.planner.steptime import arch_from_flags, arch_from_model
from xlcalc.scenario import Scenario
from xlcalc.scenario_step import step_prediction
from xlcalc.workbook import build, layout
from xlcalc.workbook.step_sheet import BATCH_REFUSED, STEP_SHEET

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "udfs"))
import xlcalc_udfs as u  # noqa: E402

PRESETS = ("seed002-70b-a800", "llama31-405b-h100", "seed000-100b-h100")
# the sheet's names and the plan's fields
RESULTS = {"Step_Time_S": "step_s", "Step_MFU": "mfu", "Step_HFU": "hfu",
           "Step_Tokens_per_S_per_GPU": "tokens_per_s_per_gpu", "Step_DP_Comm_S": "dp_comm_s",
           "Step_Optimizer_S": "optimizer_s", "Step_Bubble_S": "bubble_s", "Step_Train_Days": "days",
           "Step_GPU_Hours": "gpu_hours"}
# the range plan prints for a named stack (the held-out errors of the stack profiles)
RANGE = {"Step_MFU_Low": "mfu_low", "Step_MFU_High": "mfu_high", "Step_Days_Low": "days_low",
         "Step_Days_High": "days_high"}
# (preset, Stack picked, global batch typed in tokens; None: as built)
LO_CASES = [("seed002-70b-a800", None, None), ("seed002-70b-a800", "megatron", None),
            ("llama31-405b-h100", "llm-foundry", None), ("llama31-405b-h100", "megatron-2021", 2048 * 8192),
            ("seed000-100b-h100", "fsdp-compiled", None)]


# one run through every face: a catalog model on 128 H100, TP 8 x PP 4 x DP 4, Megatron's stack, 4M-token batch
FACES_RUN = dict(model="llama3.1-70b", gpu="h100-sxm", n_gpus=128, seq_len=8192, tp=8, pp=4, zero_stage=1,
                 seq_parallel=True, recompute="selective", micro_batch=1)
FACES_STACK, FACES_BATCH = "megatron", 4 * 2 ** 20


def planned(sc, stack: str, batch_tokens: float):
    """``plan``'s prediction of the scenario's layout (every choice pinned) on ``stack``."""
    arch = arch_from_model(catalog.get_model(sc.model)) if sc.model else arch_from_flags(
        sc.layers, sc.hidden, sc.heads, sc.kv_heads, sc.ffn_hidden, sc.vocab, sc.gated_ffn, sc.seq_len)
    result = plan(arch=arch, gpu=sc.gpu, n_gpus=sc.n_gpus, seq_len=sc.seq_len, global_batch_tokens=batch_tokens,
                  tokens_t=sc.tokens_t,
                  settings=Settings(stack=stack), tp=sc.tp, pp=sc.pp, zero_stage=sc.zero_stage,
                  recompute=sc.recompute, micro_batch=sc.micro_batch, seq_parallel=sc.seq_parallel,
                  virtual_stages=sc.virtual_stages, cp=sc.cp, top=1)
    assert result.plans, [r.reason for r in result.rejected][:3]
    return result.plans[0], result.interval


# a scenario that states its stack and batch (as a scenario file or a workbook read back does): a stack other than the
# default and 2,048 sequences of 4,096 (32 micro-batches per replica over seed 002's DP 64)
STATED_PRESET, STATED_STACK, STATED_BATCH = "seed002-70b-a800", "megatron-2021", 2048 * 4096


def stated() -> Scenario:
    sc = presets.load(STATED_PRESET)
    sc.stack, sc.global_batch_tokens = STATED_STACK, STATED_BATCH  # validated on assignment
    return sc


def _value(lay, name: str):
    sheet, at = lay.book.names[name]
    return lay.book.value(sheet, at)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("stack", [DEFAULT_STACK, "megatron", "megatron-2021", "llm-foundry"])
def test_the_sheet_gives_plans_step_time(preset, stack):
    sc = presets.load(preset)
    lay = layout([sc])
    sheet, at = lay.book.names["Stack"]
    assert lay.book.value(sheet, at) == DEFAULT_STACK  # the default every face takes
    lay.book.put(sheet, at, stack, "text_input")
    lay.book.cached_values()  # recomputed with the stack picked
    assert _value(lay, "Step_Check") == "OK"
    expected, interval = planned(sc, stack, _value(lay, "Global_Batch_Tokens"))
    for name, field in RESULTS.items():
        assert _value(lay, name) == pytest.approx(getattr(expected, field), rel=1e-12), name
    for name, field in RANGE.items():
        assert _value(lay, name) == pytest.approx(getattr(interval, field), rel=1e-12), name


def test_a_scenarios_stack_and_batch_build_the_sheet_and_give_plans_step_time():
    # the sheet built from a scenario's stack and batch gives what plan (every layout choice pinned) and the
    # scenario's Python face (xlcalc.scenario_step) give for them
    sc = stated()
    lay = layout([sc])
    assert (_value(lay, "Stack"), _value(lay, "Global_Batch_Tokens")) == (STATED_STACK, STATED_BATCH)
    assert _value(lay, "Step_Check") == "OK"
    expected, interval = planned(sc, STATED_STACK, STATED_BATCH)
    assert expected.microbatches == 32 and expected.step_s != planned(sc, DEFAULT_STACK, STATED_BATCH)[0].step_s
    py = step_prediction(sc)
    for name, field in RESULTS.items():
        assert _value(lay, name) == pytest.approx(getattr(expected, field), rel=1e-12), name
        assert getattr(py, field) == pytest.approx(getattr(expected, field), rel=1e-12), name
    for name, field in RANGE.items():
        assert _value(lay, name) == pytest.approx(getattr(interval, field), rel=1e-12), name


def test_a_scenarios_uneven_pipeline_gives_plans_step_time_for_that_split():
    # 80 layers on PP 4 with 26 on the first stage: 26, 18, 18, 18 (the rest shared by the other three), on another
    # stack; the sheet, the Python face and plan given that split agree
    sc = presets.load(STATED_PRESET)
    sc.first_stage_layers, sc.stack = 26, "llm-foundry"
    lay = layout([sc])
    assert _value(lay, "Step_Check") == "OK"
    batch = _value(lay, "Global_Batch_Tokens")
    result = plan(arch=arch_from_flags(sc.layers, sc.hidden, sc.heads, sc.kv_heads, sc.ffn_hidden, sc.vocab,
                                       sc.gated_ffn, sc.seq_len), gpu=sc.gpu, n_gpus=sc.n_gpus, seq_len=sc.seq_len,
                  global_batch_tokens=batch, tokens_t=sc.tokens_t, settings=Settings(stack="llm-foundry"), tp=sc.tp,
                  pp=sc.pp, zero_stage=sc.zero_stage, recompute=sc.recompute, micro_batch=sc.micro_batch,
                  seq_parallel=sc.seq_parallel, virtual_stages=1, cp=1, stage_layers=[26, 18, 18, 18], top=1)
    expected, py = result.plans[0], step_prediction(sc)
    for name, field in RESULTS.items():
        assert _value(lay, name) == pytest.approx(getattr(expected, field), rel=1e-12), name
        assert getattr(py, field) == pytest.approx(getattr(expected, field), rel=1e-12), name


def test_a_number_typed_over_the_presets_architecture_gives_the_step_of_the_typed_architecture():
    # Llama 3.1 70B picked, 40 layers typed over its 80: the sheet computes from the cells (40 layers), and so must
    # the Python face; plan of that architecture (the catalog model's shape with 40 layers), pinned, is the answer
    sc = Scenario.build(**FACES_RUN, layers=40, stack=FACES_STACK, global_batch_tokens=FACES_BATCH)
    assert sc.model == "llama3.1-70b" and catalog.get_model(sc.model).layers == 80
    lay = layout([sc])
    assert _value(lay, "Layers") == 40 and _value(lay, "Step_Check") == "OK"
    m = catalog.get_model(sc.model)
    pins = dict(tp=8, pp=4, zero_stage=1, recompute="selective", micro_batch=1, seq_parallel=True, virtual_stages=1,
                cp=1, top=1)
    run = dict(gpu=sc.gpu, n_gpus=sc.n_gpus, seq_len=sc.seq_len, global_batch_tokens=FACES_BATCH, tokens_t=sc.tokens_t,
               settings=Settings(stack=FACES_STACK))
    result = plan(arch=arch_from_flags(40, m.hidden, m.heads, m.kv, m.ffn_hidden, m.vocab, m.gated_ffn, sc.seq_len),
                  **run, **pins)
    assert result.plans, [r.reason for r in result.rejected][:3]
    expected, py = result.plans[0], step_prediction(sc)
    assert expected.step_s < 0.6 * plan(m.id, **run, **pins).plans[0].step_s  # about half the preset's step
    for name, field in RESULTS.items():
        assert _value(lay, name) == pytest.approx(getattr(expected, field), rel=1e-12), name
        assert getattr(py, field) == pytest.approx(getattr(expected, field), rel=1e-12), name


def test_a_stack_a_gpu_or_a_batch_it_cannot_use_is_named():
    # Stack and Global_Batch_Tokens are the scenario's inputs: a value their spec refuses fails the input's check,
    # which Start shows whole and the step cells point to; an empty batch (none given, as plan) is the sheet's to ask
    lay = layout([presets.load("seed002-70b-a800")])
    book = lay.book
    stack_at, batch_at, gpu_at = book.names["Stack"], book.names["Global_Batch_Tokens"], book.names["GPU_Type"]
    book.put(*stack_at, "nemo-typo", "text_input")
    book.cached_values()
    assert _value(lay, "Step_Check") == "see Start!C3"
    assert book.value("Start", "C3") == (f"{STEP_SHEET}!{stack_at[1]}: Stack = nemo-typo is not allowed: Stack must "
                                         "be " + ", ".join(f'"{k}"' for k in STACKS).join(("one of ", "")))
    assert _value(lay, "Step_Time_S") == "see Start!C3"
    book.put(*stack_at, "megatron", "text_input")
    book.put(*batch_at, 4096 * 1000, "input")  # 1,000 sequences over DP 64: 15.6 micro-batches
    book.cached_values()
    assert "15.625 micro-batches" in _value(lay, "Step_Check")
    for pasted in ("lots", -4096):  # a text, a negative number pasted over the batch
        book.put(*batch_at, pasted, "input")
        book.cached_values()
        assert _value(lay, "Step_Check") == "see Start!C3"
        assert book.value("Start", "C3").startswith(f"{STEP_SHEET}!{batch_at[1]}: Global_Batch_Tokens = {pasted} is "
                                                    "not allowed: Global_Batch_Tokens must be a number > 0")
        assert _value(lay, "Step_MFU") == "see Start!C3"
    book.put(*batch_at, None, "input")  # cleared: not given, the sheet asks for one (plan's rule: no assumed batch)
    book.cached_values()
    assert book.value("Start", "C3").startswith("OK")
    assert _value(lay, "Step_Check") == BATCH_REFUSED and "type your run's global batch" in BATCH_REFUSED
    assert str(_value(lay, "Step_MFU")).startswith(f"see {STEP_SHEET}!B")  # the step-time check, which says so
    book.put(*batch_at, 4096 * 1024, "input")
    book.put(*gpu_at, "ascend-910b", "text_input")  # the GPU catalog has no HBM bandwidth for it
    book.cached_values()
    assert _value(lay, "Step_Check") == "ascend-910b: no published HBM bandwidth \u2014 type it on the GPUs sheet"


def test_the_stacks_sheet_holds_each_profiles_documented_facts():
    lay = layout([presets.load("seed002-70b-a800")])
    book = lay.book
    rows = {book.value("Stacks", f"A{r}"): r for r in range(4, 4 + len(STACKS))}
    assert set(rows) == set(STACKS)
    headers = {book.value("Stacks", f"{c}3"): c for c in "ABCDEFGHIJKLMNOPQRSTU"}
    # llm-foundry: fused cross-entropy on bf16 logits, 6 bytes per logit, no dropout (llmfoundry modeling_mpt.py);
    # Megatron-LM 2021: no FlashAttention (it predates it)
    assert book.value("Stacks", f"{headers['loss bytes per logit']}{rows['llm-foundry']}") == 6
    assert book.value("Stacks", f"{headers['dropout kernels']}{rows['llm-foundry']}") is False
    assert book.value("Stacks", f"{headers['fused attention']}{rows['megatron-2021']}") is False


@lo_batch.register("step_time")
def _produce(work: Path):
    src = work / "in"
    src.mkdir()
    files, cases = [], []
    for preset in dict.fromkeys(p for p, _, _ in LO_CASES):
        build(work / f"{preset}.xlsx", [presets.load(preset)])
        book = Edits(work / f"{preset}.xlsx")
        for k, (p, stack, batch) in enumerate(LO_CASES):
            if p != preset:
                continue
            edits = {**({"Stack": stack} if stack else {}), **({"Global_Batch_Tokens": batch} if batch else {})}
            out = src / f"{preset}-{k}.xlsx"
            book.save(out, edits)
            files.append(out)
            cases.append((p, stack or DEFAULT_STACK, batch))
    build(work / "faces.xlsx", [Scenario.build(**FACES_RUN)])
    Edits(work / "faces.xlsx").save(src / "faces.xlsx", {"Stack": FACES_STACK, "Global_Batch_Tokens": FACES_BATCH})
    build(src / "stated.xlsx", [stated()])  # built with the scenario's own stack and batch, no edit
    build(src / "blank.xlsx", [Scenario.build(**FACES_RUN)])  # Llama 3.1 70B: no published batch, none given
    return [*files, src / "faces.xlsx", src / "stated.xlsx", src / "blank.xlsx"], cases


@pytest.fixture(scope="module")
def recalculated():
    files, cases = lo_batch.results("step_time")
    return [(case, openpyxl.load_workbook(f, data_only=True)) for f, case in zip(files, [*cases, "faces", "stated", "blank"])]


def test_libreoffice_gives_plans_step_time_for_the_stack_picked(recalculated):
    assert len(recalculated) == len(LO_CASES) + 3
    for (preset, stack, batch), wb in recalculated[:-3]:
        sc = presets.load(preset)
        assert named_cell(wb, "Step_Check").value == "OK", (preset, stack)
        expected, interval = planned(sc, stack, batch or named_cell(wb, "Global_Batch_Tokens").value)
        for name, field in RANGE.items():
            assert named_cell(wb, name).value == pytest.approx(getattr(interval, field), rel=1e-9), (preset, name)
        for name, field in RESULTS.items():
            assert named_cell(wb, name).value == pytest.approx(getattr(expected, field), rel=1e-9), (preset, stack,
                                                                                                    name)


def test_the_stack_dropdown_lists_every_profile(tmp_path):
    build(tmp_path / "p.xlsx", [presets.load("seed002-70b-a800")])
    wb = openpyxl.load_workbook(tmp_path / "p.xlsx")
    dv = validation_of(wb, "Stack")
    sheet, rng = dv.formula1.lstrip("=").split("!")
    listed = [row[0].value for row in wb[sheet][rng.replace("$", "")]]
    assert listed == list(STACKS)


def test_one_run_gives_one_step_time_in_every_face(capsys, recalculated):
    # the CLI (plan --json, every layout flag pinned), Python (layout_prediction), the worksheet functions and the
    # workbook recalculated by LibreOffice with the stack picked in its dropdown
    case, wb = recalculated[-3]
    assert case == "faces" and named_cell(wb, "Step_Check").value == "OK"
    layout = {k: FACES_RUN[k] for k in ("tp", "pp", "zero_stage", "seq_parallel", "recompute", "micro_batch")}
    code, out, err = run(capsys, "plan", "--model", FACES_RUN["model"], "--gpu", FACES_RUN["gpu"],
                         "--n-gpus", str(FACES_RUN["n_gpus"]), "--seq-len", str(FACES_RUN["seq_len"]),
                         "--global-batch-tokens", str(FACES_BATCH), "--stack", FACES_STACK, "--tp", "8", "--pp", "4",
                         "--cp", "1", "--zero-stage", "1", "--seq-parallel", "TRUE", "--recompute", "selective",
                         "--micro-batch", "1", "--virtual-stages", "1", "--top", "1", "--json")
    assert code == 0, err
    cli = json.loads(out)["plans"][0]
    py = layout_prediction(FACES_RUN["model"], gpu=FACES_RUN["gpu"], n_gpus=FACES_RUN["n_gpus"],
                           seq_len=FACES_RUN["seq_len"], global_batch_tokens=FACES_BATCH, stack=FACES_STACK, **layout)
    values = {**FACES_RUN, "global_batch_tokens": FACES_BATCH, "stack": FACES_STACK, "cp": 1, "virtual_stages": 1}
    for name, field, fn in (("Step_Time_S", "step_s", u.LAYOUT_STEP_S), ("Step_MFU", "mfu", u.LAYOUT_MFU),
                            ("Step_Tokens_per_S_per_GPU", "tokens_per_s_per_gpu", u.LAYOUT_TOKENS_PER_S_PER_GPU)):
        args = [None if values.get(k) is None else [[values[k]]] for k in inspect.signature(fn).parameters]
        assert getattr(py, field) == pytest.approx(cli[field], rel=1e-12), name
        assert fn(*args) == pytest.approx(cli[field], rel=1e-12), name
        assert named_cell(wb, name).value == pytest.approx(cli[field], rel=1e-9), name


def test_libreoffice_gives_the_scenarios_step_time_for_its_stack_and_batch(recalculated):
    # the workbook built from a scenario's stack and batch, recalculated, gives the scenario's Python face's step
    case, wb = recalculated[-2]
    assert case == "stated" and named_cell(wb, "Step_Check").value == "OK"
    assert (named_cell(wb, "Stack").value, named_cell(wb, "Global_Batch_Tokens").value) == (STATED_STACK, STATED_BATCH)
    py = step_prediction(stated())
    for name, field in (("Step_Time_S", "step_s"), ("Step_MFU", "mfu"),
                        ("Step_Tokens_per_S_per_GPU", "tokens_per_s_per_gpu")):
        assert named_cell(wb, name).value == pytest.approx(getattr(py, field), rel=1e-9), name


def test_libreoffice_leaves_a_batch_not_given_to_the_step_time_check(recalculated):
    # no batch given and none published (plan's rule: none assumed): the input's check passes (an empty cell is not
    # given), the rest of the plan stands, and the step-time check asks for the run's batch
    case, wb = recalculated[-1]
    assert case == "blank" and named_cell(wb, "Global_Batch_Tokens").value is None
    assert wb["Start"]["C3"].value.startswith("OK")
    assert named_cell(wb, "Step_Check").value == BATCH_REFUSED
    assert str(named_cell(wb, "Step_MFU").value).startswith(f"see {STEP_SHEET}!B")


def test_a_model_with_its_own_head_dimension_gives_plans_step_time_and_memory():
    # Gemma 7B's config.json: head_dim 256 with hidden 3072 and 16 heads (3072 / 16 = 192); the sheet, the scenario's
    # Python face, plan --config with the layout pinned and memory --config take 256
    from xlcalc.cli import main
    from xlcalc.hf_config import model_from_hf_config
    path = Path(__file__).resolve().parent / "data" / "hf_configs" / "gemma-7b.json"
    sc = Scenario.build(model=model_from_hf_config(path), gpu="h100-sxm", n_gpus=64, tp=2, pp=2, seq_len=8192,
                        micro_batch=1, zero_stage=1, recompute="selective", seq_parallel=True, stack="megatron",
                        global_batch_tokens=256 * 8192)
    assert (sc.hidden, sc.heads, sc.head_dim_given) == (3072, 16, 256)
    lay = layout([sc])
    assert _value(lay, "Step_Check") == "OK" and _value(lay, "Head_Dim_Given") == 256
    result = plan(model_from_hf_config(path), gpu="h100-sxm", n_gpus=64, seq_len=8192,
                  global_batch_tokens=256 * 8192, tokens_t=sc.tokens_t, settings=Settings(stack="megatron"), tp=2,
                  pp=2, cp=1, zero_stage=1, recompute="selective", micro_batch=1,
                  seq_parallel=sc.seq_parallel, virtual_stages=1, top=1)
    expected, py = result.plans[0], step_prediction(sc)
    for name, field in RESULTS.items():
        assert _value(lay, name) == pytest.approx(getattr(expected, field), rel=1e-12), name
        assert getattr(py, field) == pytest.approx(getattr(expected, field), rel=1e-12), name
    # at hidden / heads the step differs: the head dimension reached the sheet's formulas
    sc.head_dim_given = 0
    assert layout([sc]).book.value(*lay.book.names["Step_Time_S"]) != pytest.approx(expected.step_s, rel=1e-6)
    # memory: the scenario's (the workbook's formulas) and the memory command's for the same run, within the
    # params_b the scenario rounds to a thousandth of a billion
    sc.head_dim_given = 256
    flags = ["--config", str(path), "--gpu", "h100-sxm", "--n-gpus", "64", "--tp", "2", "--pp", "2", "--seq-len",
             "8192", "--micro-batch", "1", "--zero-stage", "1", "--recompute", "selective", "--seq-parallel"]
    out = _cli_json(main, ["memory", *flags])
    assert _value(layout([sc]), "Mem_Total_GB") == pytest.approx(out["total_gb"], rel=1e-4)
    # and the worksheet function, given the head dimension (left out: hidden / heads, another number)
    m = model_from_hf_config(path)
    cells = dict(params_b=m.params_b, layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv,
                 ffn_hidden=m.ffn_hidden, vocab=m.vocab, seq_len=8192, micro_batch=1, tp=2, pp=2, dp=16, zero_stage=1,
                 seq_parallel=True, recompute="selective", gated_ffn=m.gated_ffn, tied_embeddings=m.tied_embeddings)
    assert u.MEM_PER_GPU_GB(**cells, head_dim_given=256) == pytest.approx(out["total_gb"], rel=1e-9)
    assert u.MEM_PER_GPU_GB(**cells) != pytest.approx(out["total_gb"], rel=1e-3)


def _cli_json(main, argv):
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([*argv, "--json"]) == 0
    return json.loads(buf.getvalue())


# The catalog's dense models whose layers hold more than their shape: biases and a learned position table (GPT-3,
# OPT: 2 rows more), biases (BLOOM), Transformer-XL relative positions (Chinchilla); by PP that divides their layers.
EXTRAS = {"gpt3-175b": 4, "opt-175b": 4, "bloom-176b": 5, "chinchilla-70b": 4}
TYPED_OVER = {"layers": 48}  # typed over GPT-3's 96: the typed shape keeps GPT-3's biases and position table
STEP_RESULTS = {"Step_Time_S": "step_s", "Step_MFU": "mfu", "Step_Tokens_per_S_per_GPU": "tokens_per_s_per_gpu",
                "Step_Train_Days": "days"}


def extras_run(model: str, **typed) -> Scenario:
    pp = EXTRAS[model]
    return Scenario.build(model=model, gpu="h100-sxm", n_gpus=64 * pp, tp=8, pp=pp, zero_stage=1, seq_parallel=True,
                          recompute="selective", micro_batch=1, stack="megatron", global_batch_tokens=1024 * 2048,
                          **typed)


def extras_counts(model: str, layers_typed: bool = False) -> tuple[int, int]:
    """(one layer's, the input embedding's parameters) counted by hand from the papers' architectures: a GPT layer
    of biased linear layers and LayerNorms is 12h^2 + 13h (Q, K, V, O 4h^2 + 4h; FFN 8h^2 + 5h; two norms 4h);
    Chinchilla's, bias-free with RMSNorm, 12h^2 + 2h plus Transformer-XL's h x h position projection and two
    h-long bias vectors; the embedding is the vocabulary plus the learned positions (2048, OPT 2050) times h."""
    m = catalog.get_model(model)
    h = m.hidden
    layer = 13 * h * h + 4 * h if m.relative_positions else 12 * h * h + 13 * h
    positions = {"gpt3-175b": 2048, "opt-175b": 2050}.get(model, 0)
    return layer, (m.vocab + positions) * h


def test_the_sheet_counts_biases_and_position_terms_as_plan_does():
    # the step, MFU, throughput and days of the sheet, of the scenario's Python face and of the worksheet functions
    # (plan by model id, the layout pinned) agree for every catalog model with biases, positions or relative terms
    for model in [*EXTRAS, "typed"]:
        sc = extras_run("gpt3-175b", **TYPED_OVER) if model == "typed" else extras_run(model)
        lay, py = layout([sc]), step_prediction(sc)
        assert _value(lay, "Step_Check") == "OK", model
        assert (_value(lay, "Step_Layer_Params"), _value(lay, "Step_Embedding_Params")) == extras_counts(sc.model)
        for name, field in STEP_RESULTS.items():
            assert _value(lay, name) == pytest.approx(getattr(py, field), rel=1e-12), (model, name)
        if model == "typed":  # the typed shape with GPT-3's terms: not the bias-free architecture of its numbers
            bare = layout_prediction(arch=arch_from_flags(48, sc.hidden, sc.heads, sc.kv_heads, sc.ffn_hidden,
                                                          sc.vocab, sc.gated_ffn, sc.seq_len),
                                     **{k: getattr(sc, k) for k in ("gpu", "n_gpus", "seq_len", "tp", "pp",
                                                                    "zero_stage", "recompute", "micro_batch",
                                                                    "seq_parallel", "global_batch_tokens", "stack")})
            assert py.step_s > bare.step_s * (1 + 1e-6)
            continue
        values = {**sc.model_dump(), "cp": 1, "virtual_stages": 1}
        for name, field, fn in (("Step_Time_S", "step_s", u.LAYOUT_STEP_S), ("Step_MFU", "mfu", u.LAYOUT_MFU),
                                ("Step_Tokens_per_S_per_GPU", "tokens_per_s_per_gpu", u.LAYOUT_TOKENS_PER_S_PER_GPU)):
            args = [None if k == "ep" else [[values[k]]] for k in inspect.signature(fn).parameters]
            assert fn(*args) == pytest.approx(getattr(py, field), rel=1e-12), (model, name)


@lo_batch.register("step_extras")
def _produce_extras(work: Path):
    files = [work / f"{m}.xlsx" for m in [*EXTRAS, "typed"]]
    for f, m in zip(files, EXTRAS):
        build(f, [extras_run(m)])
    build(files[-1], [extras_run("gpt3-175b", **TYPED_OVER)])
    return files, None


def test_libreoffice_counts_biases_and_position_terms_as_plan_does():
    files, _ = lo_batch.results("step_extras")
    for f, model in zip(files, [*EXTRAS, "typed"]):
        sc = extras_run("gpt3-175b", **TYPED_OVER) if model == "typed" else extras_run(model)
        wb, py = openpyxl.load_workbook(f, data_only=True), step_prediction(sc)
        assert named_cell(wb, "Step_Check").value == "OK", model
        counts = (named_cell(wb, "Step_Layer_Params").value, named_cell(wb, "Step_Embedding_Params").value)
        assert counts == extras_counts(sc.model), model
        for name, field in STEP_RESULTS.items():
            assert named_cell(wb, name).value == pytest.approx(getattr(py, field), rel=1e-9), (model, name)


def test_tied_embeddings_as_typed_give_the_step_of_the_sheet():
    # Tied_Embeddings is a cell the StepTime sheet reads (one table for the input embedding and the output layer: fewer
    # parameters to reduce and update); typed over a preset, with its shape typed over too, or for an architecture
    # without a preset, the Python face takes the tying as typed, as the sheet does
    run = dict(gpu="h100-sxm", n_gpus=64, tp=2, pp=1, zero_stage=1, micro_batch=1, stack="megatron",
               global_batch_tokens=1024 * 8192)
    m = catalog.get_model("llama3.1-8b")
    shape = dict(layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv, ffn_hidden=m.ffn_hidden,
                 vocab=m.vocab, gated_ffn=m.gated_ffn)
    assert not m.tied_embeddings
    for typed in ({"model": m.id}, {"model": m.id, "layers": 16}, shape):
        untied, tied = (Scenario.build(**run, **typed, tied_embeddings=t) for t in (False, True))
        lay_untied, lay_tied = layout([untied]), layout([tied])
        assert _value(lay_tied, "Step_Time_S") < _value(lay_untied, "Step_Time_S"), typed  # the tie matters
        for sc, lay in ((untied, lay_untied), (tied, lay_tied)):
            py = step_prediction(sc)
            for name, field in STEP_RESULTS.items():
                assert _value(lay, name) == pytest.approx(getattr(py, field), rel=1e-12), (typed, sc.tied_embeddings)

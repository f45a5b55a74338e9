"""Planner: seed 002's 70B case, pins, CLI contract (validation against measured runs: test_validation_runs.py)."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from xlcalc import catalog
from xlcalc.errors import CatalogError, InputError
from xlcalc.planner import Settings, arch_from_flags, plan, plan_table
from xlcalc.planner.stacks import DEFAULT_STACK, PLANNER, STACKS


@pytest.fixture(scope="module")
def seed002():
    # seed 002 §7.3: Llama 2 70B, 2T tokens, 1024 A800 80 GB, seq 4096, ~4M-token batches -- out of the box: every
    # A800 figure from the catalog (datasheet, HGX reference system), at the planner's own settings (Megatron's
    # bf16 weights, fp32 gradients, fp32 master weights and Adam states; the catalog's efficiency), which the
    # checks below count by hand
    return plan("llama2-70b", gpu="a800", n_gpus=1024, seq_len=4096, global_batch_tokens=4 * 2**20, tokens_t=2,
                settings=Settings(stack=PLANNER))


@pytest.fixture(scope="module")
def seed002_default():
    # the same, nothing given at all: the default stack
    return plan("llama2-70b", gpu="a800", n_gpus=1024, seq_len=4096, global_batch_tokens=4 * 2**20, tokens_t=2)


def test_seed002_top_plan_fits_with_tp_inside_node(seed002):
    best = seed002.plans[0]
    assert best.fits and best.memory_gb <= 80
    assert best.tp <= 8 and best.tp * best.pp * best.dp == 1024
    # memory breakdown adds up
    parts = best.weights_gb + best.grads_gb + best.optimizer_gb + best.zero3_buffer_gb + best.activations_gb + best.overhead_gb
    assert parts == pytest.approx(best.memory_gb)
    # independent check of the weights: 2 bytes x derived 70B params / (TP x PP) (+ embedding table on the
    # stage), and ZeRO-3 shards them over DP as well
    shards = best.tp * best.pp * (best.dp if best.zero_stage == 3 else 1)
    assert best.weights_gb == pytest.approx(2 * 68.98 / shards, rel=0.15)


def test_seed002_tp8_pp1_no_recompute_rejected_with_memory(seed002):
    plain = [r for r in seed002.rejected
             if (r.tp, r.pp, r.zero_stage, r.seq_parallel, r.recompute) == (8, 1, 0, False, "none")]
    assert plain, "TP=8, PP=1 without recompute (no ZeRO, no SP) must be listed as rejected"
    r = plain[0]
    # independent lower bound: 18 bytes/param x 69e9 / 8 = 155 GB of model states alone
    assert r.memory_gb > 18 * 69e9 / 8 / 1e9 > 80
    assert "needs" in r.reason and "of 80" in r.reason


def test_seed002_days_next_to_seed(seed002):
    best = seed002.plans[0]
    # seed 002: 8.4e23 FLOPs on 1024 A800 at MFU 0.4 -> 76 days. Days scale as 1/MFU at the same FLOPs:
    seed_days_at_predicted_mfu = 76.08 * 0.4 / best.mfu
    assert best.days == pytest.approx(seed_days_at_predicted_mfu, rel=0.10)  # 6ND vs 6N+attention per token
    assert 0.25 < best.mfu < 0.8


def test_plan_table_header_and_rows(seed002_default):
    seed002 = seed002_default
    rows = plan_table(seed002, 3)
    assert rows[0][:6] == ["rank", "tp", "pp", "cp", "ep", "dp"]
    assert rows[1][0] == 1 and [r[0] for r in rows[1:4]] == [1, 2, 3]
    # then one row per input assumed, each as wide as the header
    assert "stack" in seed002.assumed and [r[:2] for r in rows[4:] if r[0] == "assumed"] == \
        [["assumed", n] for n in seed002.assumed]
    assert all(len(r) == len(rows[0]) for r in rows)


def test_plan_says_which_matmul_efficiency_it_used():
    from xlcalc.planner.steptime import resolve_hardware
    arch = arch_from_flags(32, 4096, 32, vocab=32000)
    kw = dict(arch=arch, gpu="h100", n_gpus=64, seq_len=4096, global_batch_tokens=2**20, top=1)
    default = plan(**kw, settings=Settings(scaleout_gb_s=50))  # no stack named: the default stack's efficiency
    assert default.matmul_efficiency == STACKS[DEFAULT_STACK].matmul_efficiency
    assert default.matmul_efficiency_basis.startswith(f"stack {DEFAULT_STACK}, fitted to its published runs")
    own = plan(**kw, settings=Settings(stack=PLANNER, scaleout_gb_s=50))  # the planner's own: the catalog's
    assert own.matmul_efficiency == catalog.get_gpu("h100").training_matmul_efficiency
    assert "fitted to published training runs" in own.matmul_efficiency_basis
    given = plan(**kw, settings=Settings(scaleout_gb_s=50, matmul_efficiency=0.6))
    assert (given.matmul_efficiency, given.matmul_efficiency_basis) == (0.6, "given")
    # a catalog row with only the microbenchmark figure falls back to it
    row = catalog.GPU(id="test-gpu", name="Test GPU", source="test row", vendor="test", bf16_tflops=100,
                      memory_gb=80, hbm_tb_s=2, scaleup_gb_s=300, scaleout_gb_s=25, gpus_per_node=8,
                      matmul_efficiency=0.82)
    hw = resolve_hardware(row, Settings(stack=PLANNER))
    assert (hw.matmul_efficiency, hw.matmul_efficiency_basis) == (0.82, "catalog, single-GPU microbenchmark")


def test_pins_are_respected():
    arch = arch_from_flags(32, 4096, 32, vocab=32000)
    res = plan(arch=arch, gpu="h100", n_gpus=64, seq_len=4096, global_batch_tokens=2**20,
               settings=Settings(scaleout_gb_s=50), tp=4, recompute="full", zero_stage=1)
    assert res.plans and all((p.tp, p.recompute, p.zero_stage) == (4, "full", 1) for p in res.plans)


def test_bad_inputs_are_clear():
    arch = arch_from_flags(32, 4096, 32)
    with pytest.raises(InputError, match="tp"):
        plan(arch=arch, gpu="h100", n_gpus=64, seq_len=4096, global_batch_tokens=2**20,
             settings=Settings(scaleout_gb_s=50), tp=3)
    with pytest.raises(InputError, match="n_gpus"):
        plan(arch=arch, gpu="h100", n_gpus=0, seq_len=4096, global_batch_tokens=2**20, settings=Settings(scaleout_gb_s=50))
    # a catalog row missing several figures: ONE error names every one and the flag that supplies it
    row = catalog.GPU(id="test-gpu", name="Test GPU", source="test row", vendor="test", bf16_tflops=100,
                      memory_gb=80)
    with pytest.raises(CatalogError) as err:  # at the planner's own settings the catalog's efficiency is needed too
        plan(arch=arch, gpu=row, n_gpus=64, seq_len=4096, global_batch_tokens=2**20, settings=Settings(stack=PLANNER))
    for flag in ("--hbm-tb-s", "--scaleup-gb-s", "--scaleout-gb-s", "--gpus-per-node", "--matmul-efficiency"):
        assert flag in str(err.value), flag
    assert "--peak-tflops" not in str(err.value) and "--memory-gb" not in str(err.value)
    with pytest.raises(CatalogError) as err:  # the default stack brings its fitted efficiency: not asked for
        plan(arch=arch, gpu=row, n_gpus=64, seq_len=4096, global_batch_tokens=2**20)
    assert "--hbm-tb-s" in str(err.value) and "--matmul-efficiency" not in str(err.value)
    with pytest.raises(InputError, match="kv_heads"):
        arch_from_flags(32, 4096, 32, kv_heads=5)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "xlcalc", "plan", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_json_contract():
    out = _cli("--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8", "--ffn-hidden", "14336",
               "--gated-ffn", "--vocab", "128256", "--gpu", "H100", "--gpus", "64", "--seq-len", "8192",
               "--global-batch-tokens", "4194304", "--scaleout-gb-s", "50", "--json", "--top", "3")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    plans = data["plans"]
    assert 1 <= len(plans) <= 3
    for key in ("tp", "pp", "dp", "zero_stage", "recompute", "micro_batch", "memory_gb", "fits", "mfu",
                "tokens_per_s_per_gpu", "days"):
        assert key in plans[0]
    assert [p["step_s"] for p in plans] == sorted(p["step_s"] for p in plans)


def test_cli_errors_are_one_line():
    # TPU v4: the catalog has its peak, memory and HBM (Cloud TPU docs) but no ICI, host network or node size
    out = _cli("--model", "llama2-70b", "--gpu", "tpu-v4", "--gpus", "1024", "--seq-len", "4096",
               "--global-batch-tokens", "4194304", "--stack", "planner")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    for flag in ("--scaleup-gb-s", "--scaleout-gb-s", "--gpus-per-node", "--matmul-efficiency"):
        assert flag in out.stderr, flag
    out = _cli("--model", "nope", "--gpu", "H100", "--gpus", "8", "--seq-len", "4096", "--global-batch-tokens", "1e6")
    assert out.returncode == 2 and "unknown model" in out.stderr


# --- issue 11: out of the box on every GPU, today's layouts, one MFU convention ---------------------------------

PLANNING_GPUS = ("a800", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h800", "h200", "b200",
                 "gb200", "b300", "gb300", "mi300x", "mi325x")


@pytest.mark.parametrize("gpu", PLANNING_GPUS)
def test_plan_out_of_the_box_on_every_gpu(gpu):
    # only a model, a GPU type, a GPU count and tokens: one GPU (a 1.3B model, no network needed) and a cluster
    small = arch_from_flags(24, 2048, 16, vocab=32000)
    one = plan(arch=small, gpu=gpu, n_gpus=1, seq_len=2048, global_batch_tokens=2**20, tokens_t=0.03)
    assert one.plans and one.plans[0].dp == one.plans[0].tp == 1 and one.plans[0].fits
    many = plan("llama2-70b", gpu=gpu, n_gpus=512, seq_len=4096, global_batch_tokens=4 * 2**20, tokens_t=2)
    best = many.plans[0]
    assert best.fits and best.memory_gb <= catalog.get_gpu(gpu).memory_gb
    assert best.tp * best.pp * best.cp * best.dp == 512 and 0 < best.mfu < 1


def test_plan_takes_a_catalog_models_published_sequence_and_batch():
    # Llama 3 paper: pre-training on 8,192-token sequences, 16M tokens per batch = 16 sequences per data-parallel
    # rank x DP 128 (Table 4) = 2,048 sequences; nothing but the model, GPU, count and tokens given
    res = plan("llama3.1-405b", gpu="h100", n_gpus=16384, tokens_t=15.6)
    assert (res.seq_len, res.global_batch) == (8192, 2048) and res.plans
    assert set(res.assumed) == {"seq_len", "global_batch_tokens", "stack", "usd_per_gpu_hour"}  # tokens given
    assert (res.assumed["seq_len"].value, res.assumed["global_batch_tokens"].value) == (8192, 2048 * 8192)
    given = plan("llama3.1-405b", gpu="h100", n_gpus=16384, tokens_t=15.6, seq_len=8192,
                 global_batch_tokens=2048 * 8192)
    assert set(given.assumed) == {"stack", "usd_per_gpu_hour"} and given.plans[0].step_s == res.plans[0].step_s
    # DeepSeek-V3 report §4.2: 15,360 sequences of 4,096 tokens after the batch ramp-up
    assert catalog.get_model("deepseek-v3").global_batch_tokens == 15360 * 4096
    for m in catalog.models():  # a published batch is a whole number of the model's sequences
        if m.global_batch_tokens is not None:
            assert m.global_batch_tokens % m.seq_len == 0, m.id


def test_plan_asks_for_a_batch_the_catalog_does_not_have():
    # Llama 3.1 8B: the paper gives no batch for it; Llama 2 only a rounded "4M tokens": asked for, never guessed
    for model in ("llama3.1-8b", "llama2-70b"):
        with pytest.raises(InputError, match="global_batch_tokens") as e:
            plan(model, gpu="h100", n_gpus=64)
        assert "--global-batch-tokens" in str(e.value) and "seq_len" not in str(e.value)
    # a model outside the catalog: the default sequence length (memory's and estimate's), no batch
    out = _cli("--layers", "32", "--hidden", "4096", "--heads", "32", "--gpu", "H100", "--gpus", "8")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--global-batch-tokens" in out.stderr and "seq_len" not in out.stderr
    with pytest.raises(InputError) as e:  # every missing input at once
        plan(None, gpu=None, n_gpus=8)
    assert e.value.names == ["model", "gpu", "global_batch_tokens"]
    out = _cli("--model", "llama3.1-405b", "--gpu", "H100", "--gpus", "16384", "--json", "--top", "1")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["seq_len"], data["global_batch"]) == (8192, 2048)
    assert set(data["assumed"]) == {"seq_len", "global_batch_tokens", "tokens_t", "stack", "usd_per_gpu_hour"}
    assert data["tokens_t"] == 15.6  # Dubey et al. 2024: 405B trained on 15.6T tokens, not 20 per parameter
    tokens = data["assumed"]["tokens_t"]
    assert tokens["value"] == 15.6 and tokens["basis"].startswith("published, ") and "2407.21783" in tokens["basis"]


def test_plan_sizes_a_cluster_for_a_deadline_out_of_the_box():
    res = plan("llama2-7b", gpu="h200", seq_len=4096, global_batch_tokens=4 * 2**20, tokens_t=2, deadline_days=30)
    assert res.plans[0].days <= 30 and res.n_gpus % 8 == 0


def test_seed002_fits_in_80_gb_out_of_the_box(seed002, seed002_default):
    for res in (seed002, seed002_default):
        assert res.gpu_memory_gb == 80 and res.plans and all(p.memory_gb <= 80 for p in res.plans)
    assert "A100" in seed002.matmul_efficiency_basis  # the A800 is A100 silicon: its measured efficiency
    assert seed002_default.matmul_efficiency_basis.startswith(f"stack {DEFAULT_STACK}")


def test_llama31_405b_published_layout_accepted():
    # Llama 3 paper §3.3: 16K H100, TP 8, PP 16, 126 layers with one layer fewer on the first and the last stage,
    # seq 8192, 16M-token batches; CP 16 for the 131,072-token stage
    res = plan("llama3.1-405b", gpu="h100", n_gpus=16384, seq_len=8192, global_batch_tokens=16 * 2**20,
               tokens_t=15.6, tp=8, pp=16, cp=1)
    assert res.plans, res.rejected_by_reason
    p = res.plans[0]
    assert (p.tp, p.pp, p.dp) == (8, 16, 128) and p.stage_layers == [7] + [8] * 14 + [7]
    assert "stages 7, 8 x 14, 7" in p.label()
    long = plan("llama3.1-405b", gpu="h100", n_gpus=16384, seq_len=131072, global_batch_tokens=16 * 2**20,
                tokens_t=0.8, tp=8, pp=16, cp=16)
    assert long.plans, long.rejected_by_reason
    assert (long.plans[0].cp, long.plans[0].dp) == (16, 8) and long.plans[0].cp_comm_s >= 0
    # the same layout given stage by stage
    explicit = plan("llama3.1-405b", gpu="h100", n_gpus=16384, seq_len=8192, global_batch_tokens=16 * 2**20,
                    tokens_t=15.6, tp=8, stage_layers=[7] + [8] * 14 + [7], cp=1)
    assert explicit.plans[0].step_s == pytest.approx(p.step_s)
    with pytest.raises(InputError, match="layers_per_stage"):
        plan("llama3.1-405b", gpu="h100", n_gpus=16384, seq_len=8192, global_batch_tokens=16 * 2**20,
             stage_layers=[8] * 16)


@pytest.mark.parametrize("n_gpus, cp, dp, seq_len, published_mfu",
                         [(8192, 1, 64, 8192, 0.43), (16384, 1, 128, 8192, 0.41), (16384, 16, 8, 131072, 0.38)])
def test_llama31_405b_published_layout_mfu_within_15_percent(n_gpus, cp, dp, seq_len, published_mfu):
    # Llama 3 paper §3.3.2, Table 4 (BF16 MFU):
    #   "8,192 | 8 | 1 | 16 | 64 | 8,192 | 32 | 16M | 430 | 43%"
    #   "16,384 | 8 | 1 | 16 | 128 | 8,192 | 16 | 16M | 400 | 41%"
    #   "16,384 | 8 | 16 | 16 | 8 | 131,072 | 16 | 16M | 380 | 38%"
    # (GPUs | TP | CP | PP | DP | seq | batch per DP | tokens per batch | TFLOPs/GPU | MFU)
    # Meta's stack is Megatron-class (the validation scores llama3-paper with the megatron profile)
    res = plan("llama3.1-405b", gpu="h100", n_gpus=n_gpus, seq_len=seq_len, global_batch_tokens=16 * 2**20,
               tokens_t=15.6, tp=8, pp=16, cp=cp, settings=Settings(stack="megatron"))
    p = res.plans[0]
    assert (p.tp, p.pp, p.cp, p.dp) == (8, 16, cp, dp)
    assert p.mfu == pytest.approx(published_mfu, rel=0.15)


def test_uneven_stages_70_layers_on_pp12():
    # 70 layers on 12 stages: 5, 6 x 10, 5 (first and last one layer fewer)
    arch = arch_from_flags(70, 4096, 32, vocab=32000)
    res = plan(arch=arch, gpu="h100", n_gpus=96, seq_len=4096, global_batch_tokens=2**20, pp=12, tp=8)
    assert res.plans and res.plans[0].stage_layers == [5] + [6] * 10 + [5]


def test_pinned_micro_batch_16_is_honoured():
    arch = arch_from_flags(24, 2048, 16, vocab=32000)
    res = plan(arch=arch, gpu="h100", n_gpus=8, seq_len=2048, global_batch_tokens=256 * 2048, micro_batch=16)
    assert res.plans and all(p.micro_batch == 16 for p in res.plans)
    # unpinned, the search is not capped at 8: it goes up the per-replica batch's divisors until memory runs out
    from xlcalc.planner.hardware import resolve_hardware
    from xlcalc.planner.search import search
    from xlcalc.registry import numeric
    st = Settings()
    with numeric():
        fits, _, _, reasons = search(arch, resolve_hardware("h100", st, 8), st, 8, 2048, 256, tp=1, pp=1,
                                     zero_stage=0, recompute="full", seq_parallel=False)
    assert {p.config.micro_batch for p in fits} == {1, 2, 4, 8, 16, 32}  # DP 8: 32 sequences per replica


def test_a_search_that_finds_nothing_counts_rejections_by_reason():
    res = plan("llama3.1-405b", gpu="h100", n_gpus=8, seq_len=8192, global_batch_tokens=8 * 8192, tokens_t=1)
    assert not res.plans and res.rejected_by_reason.get("does not fit in GPU memory with the margin (tight or does not fit)", 0) > 0
    out = _cli("--model", "llama3.1-405b", "--gpu", "H100", "--gpus", "8", "--seq-len", "8192",
               "--global-batch-tokens", "65536", "--json")
    data = json.loads(out.stdout)
    assert out.returncode == 1 and data["plans"] == [] and data["rejected_by_reason"]["does not fit in GPU memory with the margin (tight or does not fit)"] > 0


def test_branch_and_bound_finds_the_exhaustive_best_plans():
    from xlcalc.planner.hardware import resolve_hardware
    from xlcalc.planner.search import search
    from xlcalc.planner.steptime import arch_from_model
    from xlcalc.registry import numeric
    st = Settings()
    arch = arch_from_model(catalog.get_model("llama3.1-8b"))
    hw = resolve_hardware("h100", st, 64)
    with numeric():
        bounded, _, n_bounded, _ = search(arch, hw, st, 64, 8192, 128, keep=10)
        full, _, n_full, _ = search(arch, hw, st, 64, 8192, 128)
    assert sorted(p.step_s for p in bounded)[:10] == sorted(p.step_s for p in full)[:10]
    assert n_bounded < n_full


def test_time_by_part_adds_up(seed002):
    p = seed002.plans[0]
    parts = (p.compute_s + p.recompute_s + p.tp_comm_s + p.cp_comm_s + p.pp_comm_s + p.bubble_s + p.dp_comm_s
             + p.optimizer_s)
    assert parts == pytest.approx(p.step_s)


def test_one_mfu_convention_across_faces(seed002):
    # plan's days equal estimate's, the TRAIN_DAYS worksheet function's and the workbook formula's days at the
    # plan's MFU (its 6*N*D convention, mfu_6nd) and tokens: TRAIN_DAYS = 6*N*D / (peak * GPUs * MFU)
    from xlcalc.formulas import compute
    p = seed002.plans[0]
    args = dict(params_b=seed002.params_b, tokens_t=seed002.tokens_t, peak_tflops=312, n_gpus=1024, mfu=p.mfu_6nd)
    assert compute.train_days(**args) == pytest.approx(p.days, rel=0.01)              # Python face / UDF body
    assert compute.train_days.expr.evaluate(args) == pytest.approx(p.days, rel=0.01)  # the workbook's formula
    out = subprocess.run([sys.executable, "-m", "xlcalc", "estimate", "--params-b", str(seed002.params_b),
                          "--tokens-t", "2", "--peak-tflops", "312", "--n-gpus", "1024", "--mfu", str(p.mfu_6nd),
                          "--json"], capture_output=True, text=True, cwd=ROOT)
    assert json.loads(out.stdout)["results"]["Train_Days"] == pytest.approx(p.days, rel=0.01)
    # and the convention is stated beside the number
    assert "6·N·D" in explain_text(seed002)


def explain_text(result):
    from xlcalc.planner import explain
    return explain(result)


def test_pinned_interleaving_beyond_the_search_range_is_honoured():
    # NeMo 24.07's Llama 2 13B on 16 H100: TP 1, PP 4, 10 virtual stages (40 layers: one layer per chunk); the
    # search tries up to 8 chunks by itself, a pinned 10 is the user's schedule, not a reason to find nothing
    res = plan("llama2-13b", gpu="h100-sxm", n_gpus=16, seq_len=4096, global_batch_tokens=128 * 4096, tokens_t=1,
               tp=1, pp=4, virtual_stages=10, micro_batch=1, top=1)
    assert res.plans and res.plans[0].virtual_stages == 10
    assert "pinned virtual stages do not divide the stage" not in res.rejected_by_reason


def test_plan_keeps_only_layouts_that_fit_with_the_margin(capsys):
    """A pinned layout on a card between its prediction and prediction + margin is rejected as tight; the margin's
    inputs are the planner's settings."""
    from xlcalc.cli import main

    argv = ["plan", "--model", "llama3.1-8b", "--gpu", "h100", "--gpus", "64", "--seq-len", "8192",
            "--global-batch-tokens", "1048576", "--tp", "2", "--pp", "2", "--zero-stage", "1", "--seq-parallel",
            "--recompute", "selective", "--micro-batch", "1", "--virtual-stages", "1", "--cp", "1", "--json"]
    assert main(argv + ["--memory-gb", "80"]) == 0
    total = json.loads(capsys.readouterr().out)["plans"][0]["memory_gb"]
    margin = 0.4 + 0.05 * total
    main(argv + ["--memory-gb", f"{total + margin / 2:.2f}"])
    out = capsys.readouterr().out
    assert json.loads(out)["plans"] == []
    assert "tight" in json.loads(out)["rejected"][0]["reason"]
    # no margin: the same card fits
    assert main(argv + ["--memory-gb", f"{total + margin / 2:.2f}", "--cuda-context-gb", "0",
                        "--allocator-reserve-frac", "0"]) == 0
    assert len(json.loads(capsys.readouterr().out)["plans"]) == 1

"""Planner: seed 002's 70B case, pins, CLI contract (validation against measured runs: test_validation_runs.py)."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from xlcalc import catalog
from xlcalc.errors import CatalogError, InputError
from xlcalc.planner import Settings, arch_from_flags, plan, plan_table

# A800 figures the catalog leaves empty: NVLink 400 GB/s both directions -> 200 per direction; one 200 Gb/s
# HDR port per GPU -> 25 GB/s; HBM2e 2.0 TB/s as the A100 80GB; A800 is A100 silicon (the A100's matmul
# efficiency in training, fitted to the published A100 runs: docs/validation.md).
A800 = Settings(hbm_tb_s=2.0, scaleup_gb_s=200, scaleout_gb_s=25,
                matmul_efficiency=catalog.get_gpu("a100-80gb").training_matmul_efficiency)


@pytest.fixture(scope="module")
def seed002():
    # seed 002 §7.3: Llama 2 70B, 2T tokens, 1024 A800 80 GB, seq 4096, ~4M-token batches
    return plan("llama2-70b", gpu="a800", n_gpus=1024, seq_len=4096, global_batch_tokens=4 * 2**20,
                tokens_t=2, settings=A800)


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


def test_plan_table_header_and_rows(seed002):
    rows = plan_table(seed002, 3)
    assert rows[0][:4] == ["rank", "tp", "pp", "dp"]
    assert len(rows) == 4 and rows[1][0] == 1


def test_plan_says_which_matmul_efficiency_it_used():
    from xlcalc.planner.steptime import resolve_hardware
    arch = arch_from_flags(32, 4096, 32, vocab=32000)
    kw = dict(arch=arch, gpu="h100", n_gpus=64, seq_len=4096, global_batch_tokens=2**20, top=1)
    default = plan(**kw, settings=Settings(scaleout_gb_s=50))
    assert default.matmul_efficiency == catalog.get_gpu("h100").training_matmul_efficiency
    assert "fitted to published training runs" in default.matmul_efficiency_basis
    given = plan(**kw, settings=Settings(scaleout_gb_s=50, matmul_efficiency=0.6))
    assert (given.matmul_efficiency, given.matmul_efficiency_basis) == (0.6, "given")
    # a catalog row with only the microbenchmark figure falls back to it
    row = catalog.GPU(id="test-gpu", name="Test GPU", source="test row", vendor="test", bf16_tflops=100,
                      memory_gb=80, hbm_tb_s=2, scaleup_gb_s=300, scaleout_gb_s=25, gpus_per_node=8,
                      matmul_efficiency=0.82)
    hw = resolve_hardware(row, Settings())
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
    with pytest.raises(CatalogError, match="scale-out"):
        plan(arch=arch, gpu="h100", n_gpus=64, seq_len=4096, global_batch_tokens=2**20)
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
    # the catalog has the A800's HBM and NVLink (product brief) but no InfiniBand figure
    out = _cli("--model", "llama2-70b", "--gpu", "A800", "--gpus", "1024", "--seq-len", "4096",
               "--global-batch-tokens", "4194304")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "--scaleout-gb-s" in out.stderr
    out = _cli("--model", "nope", "--gpu", "H100", "--gpus", "8", "--seq-len", "4096", "--global-batch-tokens", "1e6")
    assert out.returncode == 2 and "unknown model" in out.stderr

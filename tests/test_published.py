"""Published figures reproduced by the engine.

Every expected value below is written out from its source: a record of
``xlcalc/data/reference/published.json`` (cited by id) or the paper. Nothing here is
copied from the engine's own output. ``test_literals_match_published_json`` checks the
literals against the reference file when it is present.
"""

from __future__ import annotations

import pytest

from conftest import published_records
from xlcalc.formulas.compute import (
    days_from_throughput,
    gpu_hours,
    implied_mfu,
    megatron_iteration_flops,
    train_days,
    train_flops,
)
from xlcalc.formulas.cost import cloud_cost_usd, days_for_budget
from xlcalc.formulas.memory import (
    act_inflight_factor,
    act_layer_bytes,
    mem_act_pipeline_gb,
    mem_static_gb,
    mem_weights_gb,
    mem_zero3_buffer_gb,
)

GIB_PER_GB = 1e9 / 2**30  # GB (1e9 B) -> GiB (2^30 B)


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


# --- compute and time -----------------------------------------------------------------------

def test_gpt3_6nd_matches_reported_flops():
    # gpt3-175b: Brown et al. 2020 Table D.1 reports 3.14e23 FLOPs for 175B params x 300B tokens.
    assert rel(train_flops(175, 0.3), 3.14e23) < 0.005


def test_llama2_70b_implied_mfu_and_inverse():
    # llama2-70b: 1,720,320 A100-80GB hours for 70B x 2T tokens; derived_checks implied MFU 0.4347
    # at the A100's 312 TFLOP/s (hw-a100).
    mfu = implied_mfu(70, 2, 312, 1_720_320)
    assert mfu == pytest.approx(0.4347, abs=5e-5)
    # Independent: 6*70e9*2e12 / (1,720,320 h * 3600 s * 312e12) = 8.4e23 / 1.9322e21.
    assert mfu == pytest.approx(8.4e23 / (1_720_320 * 3600 * 312e12), rel=1e-12)
    assert rel(gpu_hours(70, 2, 312, 0.4347), 1_720_320) < 0.001


def test_llama1_65b_implied_mfu():
    # llama1-65b: 1,022,362 A100-hours for 65.2B x 1.4T tokens; derived_checks 0.4769.
    assert implied_mfu(65.2, 1.4, 312, 1_022_362) == pytest.approx(0.4769, abs=5e-5)


def test_llama1_65b_days_from_tokens_per_second():
    # llama1-65b: 380 tokens/s/GPU on 2048 A100-80GB -> "~21 days" for 1.4T tokens
    # (record notes: 1.4e12 / (380*2048) / 86400 = 20.8 d). The achieved MFU is 6*N*380/312e12.
    mfu = 6 * 65.2e9 * 380 / 312e12
    assert train_days(65.2, 1.4, 312, 2048, mfu) == pytest.approx(1.4e12 / (380 * 2048) / 86400, rel=1e-9)
    assert round(train_days(65.2, 1.4, 312, 2048, mfu), 1) == 20.8


# Narayanan et al. 2021 Table 2 (175B = 174.6B params, 300B tokens). Paper days and the record's
# derived_checks days_8TP_over_nX.
NARAYANAN_TABLE2 = [
    # record id, GPUs, achieved TFLOP/s per GPU, paper days, derived 8TP/(nX) days
    ("narayanan21-table2-175b-384", 384, 153, 84, 82.6),
    ("narayanan21-table2-175b-768", 768, 149, 43, 42.4),
    ("narayanan21-table2-175b-1536", 1536, 141, 23, 22.4),
]


@pytest.mark.parametrize("record, gpus, tflops, paper_days, derived_days", NARAYANAN_TABLE2)
def test_narayanan_table2_days(record, gpus, tflops, paper_days, derived_days):
    days = days_from_throughput(174.6, 0.3, gpus, tflops)
    # The formula (Eq. 4, full recompute: 8TP/(nX)) equals the record's arithmetic ...
    assert days == pytest.approx(derived_days, abs=0.05), record
    # ... and lands 1.5-2.7% under the whole days the paper prints; Eq. 4 is stated as an
    # approximation ("time ~= 8TP/nX"), so 3% is the paper's own rounding/approximation band.
    assert days < paper_days and rel(days, paper_days) < 0.03, record


@pytest.mark.parametrize("params_b, tokens_t, gpus, tflops, paper_days", [
    (175, 0.3, 1024, 140, 34),   # narayanan21-eq4-examples: GPT-3 on 1024 A100s -> 34 days
    (1000, 0.45, 3072, 163, 84),  # narayanan21-eq4-examples: 1T params on 3072 A100s -> 84 days
])
def test_narayanan_eq4_examples(params_b, tokens_t, gpus, tflops, paper_days):
    days = days_from_throughput(params_b, tokens_t, gpus, tflops)
    # derived_checks: 33.9 and 83.2 days; the paper rounds to 34 and 84 (within 1%).
    assert rel(days, paper_days) < 0.01
    assert days == pytest.approx(8 * params_b * 1e9 * tokens_t * 1e12 / (gpus * tflops * 1e12) / 86400)


def test_narayanan_eq4_without_recompute_is_six_over_eight():
    # narayanan21-table2-175b-384 derived_checks: days_6TP_over_nX = 61.9.
    assert days_from_throughput(174.6, 0.3, 384, 153, full_recompute=False) == pytest.approx(61.9, abs=0.05)


def test_megatron_a100_gpt3_1024_gpus():
    # megatron-a100-gpt3-175b-1024gpu: batch 1536 x 2048 tokens, ~32 s per step on 1024 A100s,
    # "138 teraFLOPs per GPU which is 44% of the theoretical peak" (hardware FLOPs, full recompute).
    step_s, gpus = 32, 1024
    hw_flops = megatron_iteration_flops(1536, 2048, 96, 12288, 51200, full_recompute=True)
    # Megatron pads GPT-2's 50257-token vocabulary to 51200 (a multiple of 128 x TP 8).
    assert rel(hw_flops / step_s / gpus / 1e12, 138) < 0.02
    # Model FLOPs (6ND): derived_checks tflops_6ND_per_gpu = 100.8 -> MFU 0.323 at 312 TFLOP/s.
    tokens_t = 1536 * 2048 / 1e12
    mfu = implied_mfu(175, tokens_t, 312, gpus * step_s / 3600)
    assert mfu == pytest.approx(100.8 / 312, abs=5e-4)


def test_deepseek_v3_cost_and_days():
    # deepseek-v3: 2,788K H800-hours x $2 (price-deepseek-h800-assumed) = $5.576M total,
    # 2,664K pre-training hours = $5.328M.
    assert cloud_cost_usd(2.788e6, 2) == pytest.approx(5.576e6)
    assert cloud_cost_usd(2.664e6, 2) == pytest.approx(5.328e6)
    # "180K H800 GPU hours [per trillion tokens], i.e., 3.7 days on our cluster with 2048 H800 GPUs"
    assert round(days_for_budget(180_000 * 2, 2, 2048), 1) == 3.7


# --- memory -------------------------------------------------------------------------------

@pytest.mark.parametrize("stage, paper_gb", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure1(stage, paper_gb):
    # Rajbhandari et al. 2019 (ZeRO) Fig. 1: 7.5B params, Nd = 64, K = 12 (mixed-precision Adam),
    # 2 B fp16 weights + 2 B fp16 gradients: 120 / 31.4 / 16.6 / 1.9 GB per GPU.
    assert round(mem_static_gb(7.5, stage, 64, 1, 1, 2, 2, 12), 1) == paper_gb


def test_deepspeed_zero2_estimator_t5_3b():
    # deepspeed-zero2-estimator-t5-3b: 2,851M params, 1 node x 8 GPUs, cpu_offload=0 -> 15.93 GiB.
    # DeepSpeed counts 4 B/param replicated (fp16 params + fp16 grads) and 16 B/param sharded
    # (fp32 params, grads, Adam m and v): with ZeRO-2, weights stay whole, the rest is / 8.
    gb = mem_static_gb(2.851, 2, 8, 1, 1, bytes_weights=4, bytes_grads=0, bytes_optimizer=16)
    assert gb == pytest.approx(4 * 2.851 + 16 * 2.851 / 8)
    assert round(gb * GIB_PER_GB, 2) == 15.93


def test_deepspeed_zero3_estimator_t5_3b():
    # deepspeed-zero3-estimator-t5-3b: largest layer 32M params, 8 GPUs, no offload -> 6.09 GiB =
    # 4 B x largest layer + 18 B/param sharded (16 B fp32 states + 2 B fp16 params).
    gb = mem_static_gb(2.851, 3, 8, 1, 1, bytes_weights=2, bytes_grads=0, bytes_optimizer=16)
    gb += mem_zero3_buffer_gb(0.032)
    assert gb == pytest.approx(4 * 0.032 + 18 * 2.851 / 8)
    assert round(gb * GIB_PER_GB, 2) == 6.09


def test_deepspeed_zero3_t5_large_example():
    # deepspeed-zero3-t5-large-example: 737.67M params, largest layer 32.90M, 4 GPUs:
    # case1 3291 MB; the largest-layer term alone is 125 MB (DeepSpeed's MB are MiB).
    mib = (mem_static_gb(0.73767, 3, 4, 1, 1, 2, 0, 16) + mem_zero3_buffer_gb(0.0329)) * 1e9 / 2**20
    assert round(mib) == 3291
    # The doc prints the layer as 32.90M (rounded): 4 B x 32.90M = 125.5 MiB against its 125 MB.
    assert mem_zero3_buffer_gb(0.0329) * 1e9 / 2**20 == pytest.approx(125, abs=1)


# Korthikanti et al. 2022 Fig. 1: GPT-3 175B (h = 12288, L = 96, a = 96, s = 2048, b = 1)
# with t = 8, p = 8 and an interleaved schedule of v = 3 chunks.
GPT3 = dict(seq_len=2048, micro_batch=1, hidden=12288, layers=96, heads=96)


def test_korthikanti_per_layer_bytes():
    # korthikanti22-activation-formulas: sbh(34 + 5as/h) = 2,868,903,936 bytes per layer
    # (no parallelism, no recompute).
    assert act_layer_bytes(2048, 1, 12288, 96) == 2_868_903_936
    # derived_checks gpt3_per_layer_selective_tp8_GB = 0.107 (34sbh/t).
    assert act_layer_bytes(2048, 1, 12288, 96, tp=8, seq_parallel=True, recompute="selective") / 1e9 == \
        pytest.approx(0.107, abs=5e-4)


def test_korthikanti_fig1_model_states():
    # 45.56 GiB of model states per GPU at 18 B/param (Megatron: 2 B fp16 weights, 4 B fp32 grads,
    # 12 B fp32 master + Adam m, v) with params = 12 h^2 L, split over t*p = 64 GPUs.
    params_b = 12 * 12288**2 * 96 / 1e9
    gb = mem_static_gb(params_b, 0, 1, 8, 8, 2, 4, 12)
    assert round(gb * GIB_PER_GB, 2) == 45.56


@pytest.mark.parametrize("mode, paper_gib", [
    (dict(seq_parallel=True, recompute="selective"), 12.35),   # TP + SP + selective recompute
    (dict(seq_parallel=False, recompute="none"), 66.84),        # TP only, no recompute
])
def test_korthikanti_fig1_activations(mode, paper_gib):
    factor = act_inflight_factor(8, 3)
    assert factor == pytest.approx(1 + 7 / 24)  # 1 + (p - 1)/(p v), Korthikanti §4.2.3
    gb = mem_act_pipeline_gb(**GPT3, tp=8, pp=8, virtual_stages=3, **mode)
    assert round(gb * GIB_PER_GB, 2) == paper_gib


def test_bloom_bf16_checkpoint_size():
    # bloom-176b-checkpoint-and-gpu-memory: "just the bf16 weights are 329GB" for 176,247M params;
    # derived_checks: 176.247e9 x 2 B = 328.3 GiB (the README's GB are GiB, rounded up).
    gib = mem_weights_gb(176.247, bytes_weights=2) * GIB_PER_GB
    assert round(gib, 1) == 328.3
    assert rel(gib, 329) < 0.005


# --- the literals above, checked against the reference file ----------------------------------

def _records() -> dict:
    return published_records()


def test_literals_match_published_json():
    r = _records()
    f = lambda rid: r[rid]["fields"]  # noqa: E731
    dc = lambda rid: r[rid].get("derived_checks", {})  # noqa: E731
    assert f("gpt3-175b")["reported_total_flops"] == 3.14e23
    assert f("llama2-70b")["gpu_hours"] == 1_720_320 and dc("llama2-70b")["implied_mfu_from_gpu_hours"] == 0.4347
    assert f("llama1-65b")["gpu_hours"] == 1_022_362 and dc("llama1-65b")["implied_mfu_from_gpu_hours"] == 0.4769
    assert f("llama1-65b")["throughput_tokens_per_s_per_gpu"] == 380
    for rid, gpus, tflops, days, derived in NARAYANAN_TABLE2:
        assert f(rid)["gpus"] == gpus and f(rid)["tflops_per_gpu"] == tflops
        assert f(rid)["training_days_for_300B_tokens"] == days and dc(rid)["days_8TP_over_nX"] == derived
    ex = f("narayanan21-eq4-examples")["examples"]
    assert (ex[0]["gpus"], ex[0]["tflops_per_gpu"], ex[0]["days"]) == (1024, 140, 34)
    assert (ex[1]["gpus"], ex[1]["tflops_per_gpu"], ex[1]["days"]) == (3072, 163, 84)
    m = f("megatron-a100-gpt3-175b-1024gpu")
    assert (m["step_time_s"], m["tflops_per_gpu"], m["global_batch_seqs"]) == (32, 138, 1536)
    assert f("deepseek-v3")["cost_usd_total"] == 5.576e6 and f("deepseek-v3")["gpu_hours_total"] == 2.788e6
    assert f("price-deepseek-h800-assumed")["usd_per_gpu_hour"] == 2.0
    assert f("deepspeed-zero2-estimator-t5-3b")["per_gpu_gb_cpu_offload_0"] == 15.93
    z3 = f("deepspeed-zero3-estimator-t5-3b")
    assert z3["largest_layer_params"] == 32e6 and z3["total_params"] == 2.851e9
    assert {row["per_gpu_gb"] for row in z3["rows"] if row["cpu_offload"] == 0} == {6.09}
    assert f("deepspeed-zero3-t5-large-example")["case1_gpu_mb"] == 3291
    k = f("korthikanti22-activation-formulas")["example_gpt3_175b_s2048_b1"]
    assert k["bytes_per_layer"] == 2_868_903_936
    assert f("bloom-176b-checkpoint-and-gpu-memory")["bf16_weights_checkpoint_gb"] == 329

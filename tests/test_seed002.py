"""Seed 002 (book chapter 7, "precise accounting of compute needs"): the worked 70B case.

The expected numbers are the seed's own closed forms and arithmetic, written out here:
6·P·D; N = 6PD / (peak · MFU · T); static memory 14P GB, ZeRO-2 2P + 12P/N, ZeRO-3 14P/N;
the cluster rounding of §7.3 (replicas of TP·PP = 16 GPUs, +5 % spare, whole 8-GPU nodes).
"""

from __future__ import annotations

import math

import pytest

from xlcalc import catalog
from xlcalc.formulas.compute import (
    gpus_for_days,
    gpus_whole_nodes,
    gpus_with_spare,
    replicas_needed,
    train_days,
    train_flops,
)
from xlcalc.formulas.memory import mem_static_gb
from xlcalc.scenario import Scenario, evaluate

P_B, D_T = 70, 2            # 70B parameters, 2T tokens (§7.3)
SEED_RECIPE = (2, 4, 8)     # bytes/param: fp16 weights, fp32 gradients, Adam m + v (§7.1.2) = 14P
DAY_S = 24 * 3600


def test_total_flops():
    # §7.2.1: 6 x 70e9 x 2e12 = 8.4e23 FLOPs.
    assert train_flops(P_B, D_T) == pytest.approx(8.4e23, rel=1e-12)


@pytest.mark.parametrize("gpu_label, peak, exact", [
    ("A800", 312, 865.6),         # 8.4e23 / (312e12 x 0.4 x 90 x 86400) = 865.58
    ("Ascend 910B", 320, 843.9),  # 8.4e23 / (320e12 x 0.4 x 90 x 86400) = 843.94
])
def test_gpus_for_90_days(gpu_label, peak, exact):
    assert catalog.get_gpu(gpu_label).peak_tflops() == peak  # seed §7.3 options A and B
    n = gpus_for_days(P_B, D_T, peak, 0.4, 90)
    assert n == pytest.approx(8.4e23 / (peak * 1e12 * 0.4 * 90 * DAY_S), rel=1e-12)
    assert round(n, 1) == exact


def test_why_the_seed_prints_861_and_840():
    # The seed first computes the effective throughput the deadline needs,
    # 8.4e23 / (90 x 86400 s) / 1e12 = 108,024.7 TFLOPS, writes it as "≈ 107.5 x 10^3", and then
    # divides the rounded 107,500 by 312 x 0.4 -> 861 and by 320 x 0.4 -> 840. The exact answers
    # are 865.6 and 843.9; the project prints those and documents the seed's rounding.
    effective_tflops = gpus_for_days(P_B, D_T, 1, 1, 90)  # a 1-TFLOP/s GPU at MFU 1 = the TFLOPS needed
    assert effective_tflops == pytest.approx(8.4e23 / (90 * DAY_S) / 1e12)
    assert round(effective_tflops, 1) == 108024.7
    assert round(107_500 / (312 * 0.4)) == 861
    assert round(107_500 / (320 * 0.4)) == 840
    assert gpus_for_days(P_B, D_T, 312, 0.4, 90) / 861 - 1 == pytest.approx(108_024.7 / 107_500 - 1, abs=1e-3)


def test_1024_a800_days():
    # §7.3 review: 8.4e23 / (312e12 x 1024 x 0.4 x 86400) ≈ 76 days (76.08).
    days = train_days(P_B, D_T, 312, 1024, 0.4)
    assert days == pytest.approx(8.4e23 / (312e12 * 1024 * 0.4 * DAY_S))
    assert round(days, 2) == 76.08


def test_static_memory_14p():
    # §7.1.2: 14P = 980 GB for P = 70; §7.3: 980 / 8 = 122.5 GB per GPU at TP = 8.
    assert mem_static_gb(P_B, 0, 1, 1, 1, *SEED_RECIPE) == pytest.approx(14 * 70)
    assert mem_static_gb(P_B, 0, 1, 8, 1, *SEED_RECIPE) == pytest.approx(122.5)
    # With TP = 4, PP = 4 (the seed's 16-GPU replica) and no ZeRO: 980 / 16.
    assert mem_static_gb(P_B, 0, 1, 4, 4, *SEED_RECIPE) == pytest.approx(61.25)


@pytest.mark.parametrize("n", [1, 2, 8, 16, 54, 64, 1024])
def test_zero2_and_zero3_closed_forms(n):
    # §7.1.2: ZeRO-2 = 2P + 12P/N, ZeRO-3 = 14P/N (GB, P in billions).
    assert mem_static_gb(P_B, 2, n, 1, 1, *SEED_RECIPE) == pytest.approx(2 * P_B + 12 * P_B / n)
    assert mem_static_gb(P_B, 3, n, 1, 1, *SEED_RECIPE) == pytest.approx(14 * P_B / n)


def test_cluster_rounding_from_the_seeds_861():
    # §7.3 step 2, starting from the seed's 861: 861 / 16 -> 54 replicas (53.8 rounded up),
    # 54 x 16 = 864 GPUs, + 5 % spare = 907.2, in whole 8-GPU nodes = 912 (114 nodes).
    assert replicas_needed(861, 16) == 54 == math.ceil(861 / 16)
    assert gpus_with_spare(861, 16, 0) == 864
    assert gpus_with_spare(861, 16, 0.05) == pytest.approx(864 * 1.05) == pytest.approx(907.2)
    assert gpus_whole_nodes(861, 16, 0.05, 8) == 912 == 8 * math.ceil(907.2 / 8)
    # The seed then rounds further to 1024 GPUs (128 nodes x 8) "to round the number and ease the
    # network topology design" — a topology choice (a power of two), not a formula; the planning
    # workbook leaves that last step to the user. 1024 GPUs then train in 76.08 days (above).


def test_cluster_rounding_from_the_exact_count():
    # From the exact 865.6 GPUs the same steps give 55 replicas: 880 -> 924 -> 928 GPUs.
    exact = gpus_for_days(P_B, D_T, 312, 0.4, 90)
    assert replicas_needed(exact, 16) == 55 == math.ceil(865.58 / 16)
    assert gpus_with_spare(exact, 16, 0.05) == pytest.approx(880 * 1.05)
    assert gpus_whole_nodes(exact, 16, 0.05, 8) == 928


def test_catalog_path_through_the_scenario():
    # The same case through the catalog: A800 (312 TFLOPS FP16, 80 GB, 8 per node, seed 002 §7.3).
    # params_b = 70 is given explicitly: the seed's "70B" is nominal; the llama2-70b preset
    # derives 68.98B from the architecture (see test_catalog.py).
    s = Scenario.build(gpu="A800", params_b=70, tokens_t=2, mfu=0.4, n_gpus=1024, tp=4, pp=4,
                       deadline_days=90, spare_frac=0.05)
    assert (s.peak_tflops, s.gpu_memory_gb, s.gpus_per_node) == (312, 80, 8)
    out = evaluate(s)
    assert out["Train_FLOPs"] == pytest.approx(8.4e23)
    assert round(out["Train_Days"], 2) == 76.08
    assert round(out["GPUs_for_Deadline"], 1) == 865.6
    assert out["GPUs_to_Provision"] == 928
    s910 = Scenario.build(gpu="910B", params_b=70, tokens_t=2, mfu=0.4, deadline_days=90)
    assert round(evaluate(s910)["GPUs_for_Deadline"], 1) == 843.9


def test_catalog_llama2_70b_preset():
    # With the llama2-70b architecture preset the parameter count is the derived 68.98B, so the
    # FLOPs are 6 x 68.977e9 x 2e12 = 8.28e23, 1.5 % under the seed's nominal 8.4e23.
    s = Scenario.build(model="llama2-70b", gpu="A800", tokens_t=2, mfu=0.4)
    assert s.params_b == pytest.approx(68.977, abs=1e-3)
    assert (s.layers, s.hidden, s.heads, s.seq_len) == (80, 8192, 64, 4096)
    assert evaluate(s)["Train_FLOPs"] == pytest.approx(6 * 68.977e9 * 2e12, rel=1e-5)

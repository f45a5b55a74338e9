"""Seed 004's roofline numbers, seed 000's GPU-hour bands, seed 001's cost model, FORMULAS.md §5."""

from __future__ import annotations

import pytest

import xlcalc as x


def test_critical_intensity_tpu_v5e_and_h100():
    # seed 004: v5e 1.97e14 FLOP/s / 8.2e11 B/s ~= 240 FLOP/B; FORMULAS.md §4: H100 9.89e14 / 3.35e12 ~= 295
    assert x.critical_intensity(197, 0.82) == pytest.approx(1.97e14 / 8.2e11)
    assert round(x.critical_intensity(197, 0.82)) == 240
    assert round(x.critical_intensity(989, 3.35)) == 295


def test_time_bounds_h100_example():
    # seed 004: 1e12 FLOPs on an H100 at 9.89e14 FLOP/s take ~1.01 ms
    assert x.t_math_s(1e12, 989) == pytest.approx(1.011e-3, rel=1e-3)
    lower = x.time_lower_s(1e12, 1e9, 989, 900)
    upper = x.time_upper_s(1e12, 1e9, 989, 900)
    assert lower == pytest.approx(max(1e12 / 989e12, 1e9 / 900e9))
    assert upper == pytest.approx(1e12 / 989e12 + 1e9 / 900e9)
    assert upper <= 2 * lower  # seed 004: the bounds differ by at most a factor 2


def test_matmul_intensity_is_about_the_batch_when_it_is_small():
    # seed 004: 2BDF / (2BD + 2DF + 2BF) ~= B when B << D, F
    assert x.matmul_intensity(240, 8192, 32768) == pytest.approx(240, rel=0.04)
    assert x.matmul_intensity(240, 8192, 32768) < 240


def test_dot_product_intensity_is_one_half():
    # seed 004: (2N - 1) FLOPs over 4N + 2 bytes -> 0.5 as N grows
    n = 10**9
    assert x.arithmetic_intensity(2 * n - 1, 4 * n + 2) == pytest.approx(0.5, rel=1e-6)


def test_two_way_model_parallel_threshold_on_v5e():
    # seed 004: D/2 > 1.97e14 / 4.5e10 = 4377 -> D > 8755
    assert x.model_parallel_min_dim(197, 45) == pytest.approx(2 * 1.97e14 / 4.5e10)
    assert int(x.model_parallel_min_dim(197, 45)) == 8755


def test_attainable_is_the_roofline():
    assert x.attainable_tflops(100, 989, 3.35) == pytest.approx(335)  # memory-bound: 100 FLOP/B x 3.35 TB/s
    assert x.attainable_tflops(1000, 989, 3.35) == 989  # compute-bound


@pytest.mark.parametrize(
    "gpu_hours, peak, lo, hi",
    [(3e6, 312, 0.35, 0.37), (2e6, 312, 0.53, 0.54), (1e6, 989, 0.33, 0.34), (0.7e6, 989, 0.48, 0.49)],
)
def test_seed_000_gpu_hour_bands_mean_mfu_30_to_50_percent(gpu_hours, peak, lo, hi):
    # seed 000: 100B x 2T tokens; A100 2-3 M GPU-hours, H100 0.7-1.0 M; FORMULAS.md §5 gives 36-53% and 34-48%
    assert lo <= x.implied_mfu(100, 2, peak, gpu_hours) <= hi


def test_seed_000_cloud_cost_band():
    # seed 000: 3 M GPU-hours x $2-4 = several to ~12 M USD
    assert x.cloud_cost_usd(3e6, 2) == 6e6
    assert x.cloud_cost_usd(3e6, 4) == 12e6


def test_seed_001_owned_cost_model():
    # seed 001 §5.1: 128 A100 at $15,000, 3-year depreciation, 30 days; power written out independently:
    # 128 GPUs x 0.4 kW x 1.0 PUE x 720 h x $0.10/kWh
    capex = 128 * 15000 / (3 * 365) * 30
    power = 128 * 0.4 * 1.0 * 30 * 24 * 0.10
    assert x.capex_cost_usd(128, 15000, 3, 30) == pytest.approx(capex)
    assert x.power_cost_usd(128, 0.4, 1.0, 30, 0.10) == pytest.approx(power)
    assert x.own_cost_usd(128, 15000, 3, 30, 0.4, 1.0, 0.10) == pytest.approx(capex + power)


def test_llama_energy_matches_the_papers_accounting():
    # published.json llama1-65b: energy = GPU-hours x 400 W x PUE 1.1 -> 1,022,362 h -> 449 MWh
    days = 1022362 / 24  # one GPU for that many days
    assert int(x.energy_mwh(1, 0.4, 1.1, days)) == 449  # 449.8 MWh; the paper prints 449


def test_training_tax_and_budget_lines():
    # seed 000: failures 10-20 %; seed 003: data, people, experiments
    assert x.training_tax_usd(10e6, 0.15, 0.2) == pytest.approx(3.5e6)
    assert x.total_cost_usd(10e6, 0.15, 0.2, 1e6, 2e6, 0.5e6) == pytest.approx(10e6 * 1.35 + 3.5e6)
    assert x.usd_per_million_tokens(4e6, 2) == pytest.approx(2.0)
    assert x.gpu_hours_for_budget(1e6, 2.5) == 400_000
    assert x.days_for_budget(1e6, 2.5, 1000) == pytest.approx(400_000 / 1000 / 24)
    assert x.budget_left_usd(1e7, 1.2e7) == -2e6


def test_chinchilla():
    # Hoffmann et al. 2022: D ~= 20 N; C = 6ND -> N_opt = sqrt(C/120)
    assert x.chinchilla_tokens_t(70) == pytest.approx(1.4)
    c = 6 * 70e9 * 1.4e12
    assert x.chinchilla_params_b(c) == pytest.approx(70)
    assert x.chinchilla_opt_tokens_t(c) == pytest.approx(1.4)


def test_pipeline_bubble():
    # Narayanan et al. 2021: (p-1)/m for 1F1B, (p-1)/(v m) interleaved
    assert x.pipeline_bubble(8, 32) == pytest.approx(7 / 32)
    assert x.pipeline_bubble(8, 32, 4) == pytest.approx(7 / 128)
    assert x.pipeline_bubble_share(8, 32) == pytest.approx(7 / 39)


def test_ring_collectives():
    # nccl-tests PERFORMANCE.md: all-reduce 2S(n-1)/n, all-gather S(n-1)/n
    assert x.allreduce_bytes(1e9, 8) == pytest.approx(1.75e9)
    assert x.allgather_bytes(1e9, 8) == pytest.approx(0.875e9)


def test_hfu_with_full_recompute_is_eight_sixths():
    # FORMULAS.md §1: full recompute => 8N instead of 6N per token
    assert x.hfu_from_mfu(0.3, "full", 2048, 12288) == pytest.approx(0.4)
    assert x.hfu_from_mfu(0.3, "none", 2048, 12288) == 0.3


def test_megatron_iteration_flops_reduce_to_6nd_for_large_h():
    # Narayanan Eq. 3 with s << h and V << L h: 72 B s L h^2 = 6 x (12 L h^2) x B s
    b, s, l, h = 1536, 2048, 96, 12288
    exact = x.megatron_iteration_flops(b, s, l, h, 51200)
    assert exact == pytest.approx(72 * b * s * l * h**2 * (1 + s / (6 * h) + 51200 / (12 * l * h)))
    assert x.megatron_iteration_flops(b, s, l, h, 51200, True) / exact == pytest.approx(4 / 3, rel=0.01)

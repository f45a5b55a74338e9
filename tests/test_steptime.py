"""Step-time formulas against the published closed forms they generalise."""

import pytest

from xlcalc.formulas import memory as fm
from xlcalc.formulas import steptime as fs


def test_model_flops_equal_narayanan_closed_form():
    # Narayanan et al. 2021 §5.1, GPT-3 175B: 72*B*s*L*h^2*(1 + s/(6h) + V/(12*L*h)) per B*s tokens
    h, L, s, V, a = 12288, 96, 2048, 51200, 96
    closed = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))
    assert fs.model_flops_per_token(L, h, a, a, h // a, 4 * h, V, s) == pytest.approx(closed)
    full = 96 * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    assert fs.hardware_flops_per_token(L, h, a, a, h // a, 4 * h, V, s, False, "full") == pytest.approx(full)


def test_swiglu_gqa_matmul_flops_llama2_70b():
    # 2 FLOPs per weight: Llama 2 70B layer weights = q 8192^2 + k,v 2*8192*1024 + o 8192^2 + 3*8192*28672
    weights = 8192 * 8192 * 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672
    assert fs.layer_matmul_flops(8192, 64, 8, 128, 28672, True) == 2 * weights


def test_general_activations_reduce_to_korthikanti():
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    for sp in (False, True):
        for rc in ("none", "selective", "full"):
            ours = fs.act_layer_bytes_general(s, b, h, a, a, h // a, 4 * h, False, t, sp, rc, False)
            assert ours == pytest.approx(fm.act_layer_bytes(s, b, h, a, t, sp, rc))


def test_korthikanti_fig1_selective_sp():
    # Korthikanti Fig. 1: GPT-3 175B, t = 8, SP + selective: 34*s*b*h/t per layer; 96 layers = 12.35 GiB / interleave
    per_layer = fs.act_layer_bytes_general(2048, 1, 12288, 96, 96, 128, 4 * 12288, False, 8, True, "selective", False)
    assert per_layer == 34 * 2048 * 12288 / 8


def test_bubble_and_comm():
    # (p-1)/(v*m) of the ideal m*t: p=8, m=32, v=1, t=0.5 s -> 7/32*16 = 3.5 s
    assert fs.bubble_time_s(8, 32, 0.5) == pytest.approx(3.5)
    assert fs.exposed_comm_s(1.0, 4.0, 0.5) == 0
    assert fs.exposed_comm_s(3.0, 4.0, 0.5) == pytest.approx(1.0)
    # 4 ring all-reduces of 2*s*b*h bytes on 8 ranks: 4 * 2 * (2*4096*8192) * 7/8
    assert fs.tp_comm_bytes_per_layer(4096, 1, 8192, 8) == pytest.approx(4 * 2 * 2 * 4096 * 8192 * 7 / 8)


def test_days_at_throughput():
    # 2T tokens at 400 tokens/s/GPU on 1024 GPUs: 2e12/(409600)/86400 = 56.5 days
    assert fs.train_days_at_throughput(2, 400, 1024) == pytest.approx(2e12 / 409600 / 86400)

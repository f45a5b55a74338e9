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
            ours = fm.act_layer_bytes_general(s, b, h, a, a, h // a, 4 * h, False, t, sp, rc, False)
            assert ours == pytest.approx(fm.act_layer_bytes(s, b, h, a, t, sp, rc))


def test_korthikanti_fig1_selective_sp():
    # Korthikanti Fig. 1: GPT-3 175B, t = 8, SP + selective: 34*s*b*h/t per layer; 96 layers = 12.35 GiB / interleave
    per_layer = fm.act_layer_bytes_general(2048, 1, 12288, 96, 96, 128, 4 * 12288, False, 8, True, "selective", False)
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


def test_wave_quantization_nvidia_guide():
    # NVIDIA Matrix Multiplication Background guide §3.2: an A100 runs one 256x128 tile per SM, 108 SMs a wave.
    # GPT-3 175B QKV at t = 8, one 2048-token micro-batch: output 2048 x 4608 = 8 x 36 = 288 tiles
    # -> 3 waves of 108 (324 tile slots), useful 288/324
    assert fs.gemm_wave_efficiency(2048, 4608, 108) == pytest.approx(288 / 324)
    # 22B (h = 6144) QKV at t = 8: 2048 x 2304 = 8 x 18 = 144 tiles (or 16 x 9 transposed) -> 2 waves: 144/216
    assert fs.gemm_wave_efficiency(2048, 2304, 108) == pytest.approx(144 / 216)
    # a ragged edge wastes the rest of its tile: 100 x 100 in one 256x128 tile on one SM = 10000/32768
    assert fs.gemm_wave_efficiency(100, 100, 1) == pytest.approx(100 * 100 / (256 * 128))
    # the same shape on 132 SMs (H100 SXM): 288 tiles -> 3 waves of 132 (396 slots)
    assert fs.gemm_wave_efficiency(2048, 4608, 132) == pytest.approx(288 / 396)


def test_linear_layer_time_whole_waves():
    # shapes that fill whole waves: 108*256 = 27648 rows, 128 and 256*108 columns -> efficiency 1 everywhere;
    # forward + input gradient + weight gradient = 3 x 2*T*K*N FLOPs (Narayanan et al. 2021: backward = 2 x forward)
    T, K, N = 27648, 27648, 13824
    assert fs.gemm_wave_efficiency(T, N, 108) == pytest.approx(1)
    assert fs.gemm_wave_efficiency(K, N, 108) == pytest.approx(1)
    rate = 312e12 * 0.859
    assert fs.linear_layer_time_s(T, K, N, 312, 0.859, 108) == pytest.approx(3 * 2 * T * K * N / rate)
    # full recompute runs the forward twice: 4 x
    assert fs.linear_layer_time_s(T, K, N, 312, 0.859, 108, 2) == pytest.approx(4 * 2 * T * K * N / rate)


def test_unfused_attention_bytes_kernel_count():
    # GPT-3 175B, t = 8: 12 heads per GPU, s = 2048 -> 12*2048 score elements per token and layer.
    # softmax/mask/dropout: fwd 2+2 (softmax) + 2+2+1 (dropout, mask) = 9; bwd 2+1+2 + 2+2+2 = 11; recompute + 9
    elems = 96 / 8 * 2048
    assert fs.attention_softmax_bytes_per_token(2048, 96, 8, "none") == pytest.approx(20 * elems)
    assert fs.attention_softmax_bytes_per_token(2048, 96, 8, "full") == pytest.approx(29 * elems)
    # matmuls: fwd 2 (QK^T writes) + 2 (AV reads); bwd 2 + 2 + 4; recompute + 4
    assert fs.attention_gemm_bytes_per_token(2048, 96, 8, "selective") == pytest.approx(16 * elems)
    # roofline: memory-bound matmul side (1 GB at 2 TB/s = 0.5 ms > 1e9 FLOPs) plus 2 GB of softmax traffic
    assert fs.unfused_attention_time_s(1e9, 1e9, 2e9, 312, 0.859, 2.0) == pytest.approx(0.5e-3 + 1e-3)

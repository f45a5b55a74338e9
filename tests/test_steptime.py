"""Step-time formulas against the published closed forms they generalise."""

import pytest

from xlcalc.formulas import communication as fcomm
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
    assert fcomm.exposed_comm_s(1.0, 4.0, 0.5) == 0
    assert fcomm.exposed_comm_s(3.0, 4.0, 0.5) == pytest.approx(1.0)
    # 4 ring all-reduces of 2*s*b*h bytes on 8 ranks: 4 * 2 * (2*4096*8192) * 7/8
    assert fcomm.tp_comm_bytes_per_layer(4096, 1, 8192, 8) == pytest.approx(4 * 2 * 2 * 4096 * 8192 * 7 / 8)


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


# --- the planner's per-stage terms, each a registered formula ------------------------------------------


def test_pipeline_stage_params_tables():
    # 80 layers of 0.8e9 params and a 0.25e9 embedding table: p = 4 -> 20 layers + one table (input or output)
    assert fs.pipeline_stage_params(80, 4, 8e8, 2.5e8) == pytest.approx(20 * 8e8 + 2.5e8)  # 16.25e9
    # p = 1 holds both tables unless they are tied
    assert fs.pipeline_stage_params(80, 1, 8e8, 2.5e8, False) == pytest.approx(64e9 + 5e8)
    assert fs.pipeline_stage_params(80, 1, 8e8, 2.5e8, True) == pytest.approx(64e9 + 2.5e8)


def test_logits_memory_fp32():
    # s = 4096, b = 1, V = 32000 fp32 logits split over t = 8: 4 * 4096 * 32000 / 8 = 65,536,000 bytes
    assert fs.logits_memory_bytes(4096, 1, 32000, 8) == 65_536_000
    assert fs.logits_memory_bytes(2048, 2, 50000) == 4 * 2048 * 2 * 50000  # 819.2 MB unsplit


def test_stage_activations_first_or_last():
    logits = 65_536_000
    # p = 4, 80 layers of 0.1 GB: first stage 80 layers' worth (in-flight factor 1) = 8 GB beats the last
    # stage's 20 layers + logits = 2.065536 GB
    assert fs.stage_activations_gb(80, 1e8, 1.0, logits, 4) == pytest.approx(8.0)
    # p = 1: the single stage holds the layers and the logits: 8 GB + 0.065536 GB
    assert fs.stage_activations_gb(80, 1e8, 1.0, logits, 1) == pytest.approx(8.065536)
    # m = 1 < p = 4: one micro-batch in flight (factor 1/4): first 4 * 0.1 GB / 4 = 0.1 GB;
    # last 1 layer + logits = 0.165536 GB wins
    assert fs.stage_activations_gb(4, 1e8, 0.25, logits, 4) == pytest.approx(0.165536)


def test_stage_matmul_flops_narayanan():
    # GPT-3 175B stage (p = 8: 12 layers), t = 8, one 2048-token micro-batch. Narayanan et al. 2021 §5.1:
    # 72*B*s*L*h^2 matmul FLOPs per iteration without recompute (24h^2 per token and layer, x3), 96 with full
    # recompute; the logit layer 6*B*s*h*V
    h, V, T, t, layers = 12288, 51200, 2048, 8, 12
    logits = 6 * T * h * V / t
    assert fs.logits_matmul_flops(h, V, T, t) == pytest.approx(logits)
    assert fs.logits_matmul_flops(4096, 32000, 4096, 2) == pytest.approx(1.610612736e12)  # 6*4096*32000*4096/2
    none = fs.stage_matmul_flops(layers, T, h, 96, 96, 128, 4 * h, V, False, t, "none")
    assert none == pytest.approx(72 * T * layers * h * h / t + logits)
    full = fs.stage_matmul_flops(layers, T, h, 96, 96, 128, 4 * h, V, False, t, "full")
    assert full == pytest.approx(96 * T * layers * h * h / t + logits)
    # selective recomputation reruns no matmul of the projections or the FFN
    assert fs.stage_matmul_flops(layers, T, h, 96, 96, 128, 4 * h, V, False, t, "selective") == pytest.approx(none)


def test_stage_linear_time_whole_tiles_equals_flops_at_efficiency():
    # With one SM and every matmul dimension a multiple of 256, every 256x128 tile is full and every wave is
    # one tile: no quantization loss. Then the time is the FLOPs at the matmul efficiency.
    # h = 1024, 8 heads of 128 (MHA), F = 4h = 4096, V = 32768, T = 2048, t = 2: QKV 1024 x 1536, attention
    # output 512 x 1024, FFN 1024 x 2048 and 2048 x 1024, logits 1024 x 16384 - all whole tiles.
    h, V, T, t, layers = 1024, 32768, 2048, 2, 6
    rate = 989e12 * 0.8
    flops_none = (72 * T * layers * h * h + 6 * T * h * V) / t
    flops_full = (96 * T * layers * h * h + 6 * T * h * V) / t  # the logit layer is not recomputed
    got = fs.stage_linear_time_s(layers, T, h, 8, 8, 128, 4 * h, V, 989, 0.8, 1, False, t, "none")
    assert got == pytest.approx(flops_none / rate)
    got = fs.stage_linear_time_s(layers, T, h, 8, 8, 128, 4 * h, V, 989, 0.8, 1, False, t, "full")
    assert got == pytest.approx(flops_full / rate)


def test_stage_attention_flops_and_time():
    # Narayanan et al. 2021 §5.1: the attention core adds 72*B*s*L*h^2 * s/(6h) = 12*B*s^2*L*h per iteration,
    # i.e. 12*s*h FLOPs per token and layer (fwd + bwd); selective/full recompute reruns the forward: 16*s*h.
    s, h, T, t, layers = 2048, 12288, 2048, 8, 12
    assert fs.stage_attention_flops(layers, T, s, 96, 128, t, "none") == pytest.approx(12 * s * h * layers * T / t)
    assert fs.stage_attention_flops(layers, T, s, 96, 128, t, "selective") == pytest.approx(16 * s * h * layers * T / t)
    assert fs.stage_attention_flops(layers, T, s, 96, 128, t, "full") == pytest.approx(16 * s * h * layers * T / t)
    # fused causal attention computes half of it: 1e15 FLOPs -> 0.5e15 at 35% of 989 TFLOP/s = 1.4445 s
    assert fs.flash_attention_time_s(1e15, 989, 0.35) == pytest.approx(0.5e15 / (989e12 * 0.35))


def test_stage_unfused_attention_time():
    # GPT-3 175B, t = 8 (12 heads per GPU), s = 2048, 12 layers, 2048 tokens, no recompute: per token and layer
    # 12 (matmul) + 20 (softmax, mask, dropout) bytes per score element of 12*2048 elements
    layers, T = 12, 2048
    elements = 12 * 2048
    gemm = layers * T * 12 * elements        # 7.247757312e9 bytes
    softmax = layers * T * 20 * elements     # 1.207959552e10 bytes
    # memory-bound matmuls (1 FLOP): everything at 2 TB/s
    got = fs.stage_unfused_attention_time_s(1, layers, T, 2048, 96, 312, 0.859, 2.0, 8, "none")
    assert got == pytest.approx((gemm + softmax) / 2e12)   # 9.663676416 ms
    # compute-bound matmuls: 1e15 FLOPs at 0.859 x 312 TFLOP/s, then the softmax traffic
    got = fs.stage_unfused_attention_time_s(1e15, layers, T, 2048, 96, 312, 0.859, 2.0, 8, "none")
    assert got == pytest.approx(1e15 / (312e12 * 0.859) + softmax / 2e12)


def test_elementwise_time_counts_layers_and_loss():
    # h = 4096, F = 16384 (not gated), t = 1: 6*(15h + 2F) = 6*(61440 + 32768) = 565,248 bytes per token and
    # layer; 32 layers + 16 bytes per logit x V = 32000: 18,087,936 + 512,000 = 18,599,936 bytes per token;
    # 4096 tokens at 2 TB/s: 7.6185337856e10 / 2e12 = 38.09 ms
    got = fs.elementwise_time_s(32, 4096, 4096, 16384, 32000, 2.0)
    assert got == pytest.approx(18_599_936 * 4096 / 2e12)
    # full recomputation reruns the forward third of the layer traffic (x 4/3), not the loss:
    # 565,248 * 32 * 4/3 = 24,117,248 + 512,000
    got = fs.elementwise_time_s(32, 4096, 4096, 16384, 32000, 2.0, False, 1, False, "full")
    assert got == pytest.approx(24_629_248 * 4096 / 2e12)


def test_elementwise_time_fused_loss_bytes():
    # one layer, h = 768, F = 3072 (not gated): 6*(15h + 2F) = 6*(11,520 + 6,144) = 105,984 bytes per token; the loss:
    # a fused cross-entropy on bf16 logits reads each logit in the forward (2 bytes) and reads it and writes its
    # gradient in the backward (2 + 2): 6 bytes x V = 50,368 = 302,208 bytes per token, against 16 x V = 805,888 over
    # fp32 logits; 4096 tokens at 2 TB/s
    got = fs.elementwise_time_s(1, 4096, 768, 3072, 50368, 2.0, loss_bytes=6)
    assert got == pytest.approx((105_984 + 302_208) * 4096 / 2e12)
    assert fs.elementwise_time_s(1, 4096, 768, 3072, 50368, 2.0) == pytest.approx((105_984 + 805_888) * 4096 / 2e12)


def test_elementwise_bytes_without_dropout():
    # h = 4096, F = 16384 (not gated), t = 1: with dropout 6*(15h + 2F) = 565,248 bytes per token and layer; without
    # (p = 0: no dropout kernel) the two 2.5h dropout terms go: 6*(10h + 2F) = 6*(40,960 + 32,768) = 442,368
    assert fs.elementwise_bytes_per_token(4096, 16384) == pytest.approx(565_248)
    assert fs.elementwise_bytes_per_token(4096, 16384, dropout=False) == pytest.approx(442_368)
    # and in the time of 32 layers plus a 16-byte loss over V = 32000 at 2 TB/s, 4096 tokens
    got = fs.elementwise_time_s(32, 4096, 4096, 16384, 32000, 2.0, dropout=False)
    assert got == pytest.approx((32 * 442_368 + 512_000) * 4096 / 2e12)


def test_tp_comm_time():
    # 4 ring all-reduces of 2*s*b*h = 2*4096*8192 bytes on t = 8: 4 * 2 * 67,108,864 * 7/8 = 469,762,048 bytes
    # per layer; 80 layers = 37,580,963,840 bytes over 450 GB/s x 0.8 = 360 GB/s -> 0.10439 s
    got = fcomm.tp_comm_time_s(80, 4096, 1, 8192, 8, 450, 0.8)
    assert got == pytest.approx(37_580_963_840 / 360e9)
    # half of it hidden behind compute
    assert fcomm.tp_comm_time_s(80, 4096, 1, 8192, 8, 450, 0.8, "none", 0.5) == pytest.approx(37_580_963_840 / 720e9)


def test_group_bandwidth_and_p2p():
    # 8 GPUs per node: a group of 8 stays on NVLink, a group of 16 crosses the network
    assert fcomm.group_bandwidth_gb_s(8, 8, 450, 50) == 450
    assert fcomm.group_bandwidth_gb_s(16, 8, 450, 50) == 50
    # p2p of one micro-batch: bf16 activations 2 bytes x 4096 tokens x 8192 / t=8 = 8,388,608 bytes, forward and
    # backward, 2 virtual stages: 33,554,432 bytes at 50 GB/s x 0.8 = 40 GB/s -> 0.8389 ms
    assert fcomm.pipeline_p2p_time_s(4096, 8192, 50, 0.8, 8, 2) == pytest.approx(33_554_432 / 40e9)


def test_dp_comm_bytes_by_zero_stage():
    # 1e9 parameters per GPU over d = 8 ranks, fp32 gradients (4 bytes), bf16 weights (2 bytes)
    # ZeRO-0: ring all-reduce of 4 GB: 2 * 4e9 * 7/8 = 7e9 bytes
    assert fcomm.dp_comm_bytes(1e9, 8, 0) == pytest.approx(7e9)
    # ZeRO-1/2: reduce-scatter 4e9 * 7/8 + all-gather of weights 2e9 * 7/8 = 3.5e9 + 1.75e9
    assert fcomm.dp_comm_bytes(1e9, 8, 1) == pytest.approx(5.25e9)
    assert fcomm.dp_comm_bytes(1e9, 8, 2) == pytest.approx(5.25e9)
    # ZeRO-3, m = 4 micro-batches: weights gathered for every forward and backward: 3.5e9 + 1.75e9 * 8
    assert fcomm.dp_comm_bytes(1e9, 8, 3, 4) == pytest.approx(17.5e9)


def test_dp_comm_time_overlap_window():
    # 25 GB/s x 0.8 = 20 GB/s. ZeRO-0: 7e9 bytes = 0.35 s, half of one 0.2 s micro-batch hides it: 0.25 s exposed
    assert fcomm.dp_comm_time_s(1e9, 8, 0.2, 25, 0.8, 0) == pytest.approx(0.25)
    # ZeRO-3, m = 4: 17.5e9 bytes = 0.875 s, window the whole step 4 x 0.2 s, half of it: 0.875 - 0.4 = 0.475 s
    assert fcomm.dp_comm_time_s(1e9, 8, 0.2, 25, 0.8, 3, 4) == pytest.approx(0.475)
    # a long micro-batch hides all of it
    assert fcomm.dp_comm_time_s(1e9, 8, 1.0, 25, 0.8, 0) == 0


# --- issue 11: hierarchical collectives, the attention kernel, context parallelism ---------------------------


def test_collective_inside_one_nvlink_domain_never_touches_the_nic():
    # 1 GB ring all-reduce over the 8 GPUs of one DGX H100: 2 * S * 7/8 over NVLink 450 GB/s at 80%
    t = fcomm.collective_time_s(1e9, 8, 8, 450, 0.001, 0.8, 2)
    assert t == pytest.approx(2 * 1e9 * 7 / 8 / 450e9 / 0.8)


def test_hierarchical_collective_hand_count():
    # 16 ranks, 8 per domain (two nodes): reduce-scatter inside (S*7/8 on NVLink), ring across the 2 domains on
    # 1/8 of the data (S/8 * 1/2 on the NIC), all-gather inside; x2 passes for an all-reduce
    inside = 1e9 * 7 / 8 / 450e9
    across = 1e9 / 8 * 1 / 2 / 50e9
    assert fcomm.collective_time_s(1e9, 16, 8, 450, 50, 0.8, 2) == pytest.approx(2 * (inside + across) / 0.8)
    # one member per domain (TP 8 fills the node): the flat ring over the NIC, 2 * S * 15/16
    assert fcomm.collective_time_s(1e9, 16, 1, 450, 50, 1, 2) == pytest.approx(2 * 1e9 * 15 / 16 / 50e9)


def test_ranks_per_domain_follow_megatron_rank_order():
    assert fcomm.ranks_per_domain(16, 1, 8) == 8     # DP with TP 1: 8 members on each DGX
    assert fcomm.ranks_per_domain(16, 8, 8) == 1     # DP with TP 8: one member per DGX
    assert fcomm.ranks_per_domain(64, 8, 72) == 9    # GB200 NVL72, TP 8: 72 / 8 = 9 members per rack
    assert fcomm.ranks_per_domain(4, 8, 72) == 4     # a group smaller than the rack's share


def test_attention_never_cheaper_per_flop_than_a_gemm():
    flops, peak = 1e15, 1000
    # a kernel at 35% on the causal half it computes: 0.5 * 1e15 / (0.35 * 1e15) s
    assert fs.attention_core_time_s(flops, peak, 0.35, 0.75) == pytest.approx(0.5 / 0.35)
    # a kernel claimed faster than the GEMMs is charged at the GEMM rate on every counted FLOP
    assert fs.attention_core_time_s(flops, peak, 0.9, 0.6) == pytest.approx(1 / 0.6)
    for eff in (0.2, 0.5, 0.8, 1.0):
        assert fs.attention_core_time_s(flops, peak, eff, 0.7) >= flops / (peak * 1e12 * 0.7)


def test_cp_kv_exchange_hand_count():
    # CP 4, 8192 tokens, 8 KV heads of 128, TP 8: K and V of 2048 tokens x 1 head x 128 x 2 bytes = 1 MiB;
    # passed 3 x (4 - 1) times (forward once; backward K, V and their gradients)
    kv = 2 * 2 * 2048 * 8 * 128 / 8
    assert fcomm.cp_comm_bytes_per_layer(8192, 8, 128, 4, 8) == pytest.approx(3 * 3 * kv)
    assert fcomm.cp_comm_bytes_per_layer(8192, 8, 128, 1, 8) == 0


def test_dp_traffic_of_a_group_inside_a_node_is_priced_on_nvlink():
    # issue 11: 13B on 16 H100 was priced on the NIC. TP 1, DP 16 over two DGX H100: 8 members per node
    from xlcalc.planner import Config, Settings, arch_from_flags, evaluate
    from xlcalc.planner.hardware import resolve_hardware
    arch = arch_from_flags(40, 5120, 40, vocab=32000)
    cfg = Config(tp=1, pp=1, dp=16, zero_stage=1, seq_parallel=False, recompute="full", micro_batch=1)
    st = Settings(stack="planner", dp_overlap=0)  # the planner's own bytes: fp32 gradients, bf16 weights
    hier = evaluate(arch, resolve_hardware("h100", st, 16), st, cfg, 4096, 256)
    flat_st = Settings(stack="planner", dp_overlap=0, nvlink_domain=1)  # as if every GPU were alone on its NIC
    flat = evaluate(arch, resolve_hardware("h100", flat_st, 16), flat_st, cfg, 4096, 256)
    # grads reduce-scatter (4 bytes) + weights all-gather (2 bytes) of 13B params, hand count
    p = 40 * (12 * 5120**2 + 2 * 5120) + 2 * 32000 * 5120  # layers (QKVO, 4h FFN, 2 norms) + untied tables
    hand_hier = (4 + 2) * p * (7 / 8 / 450e9 + 1 / 8 * 1 / 2 / 50e9) / 0.8
    hand_flat = (4 + 2) * p * 15 / 16 / 50e9 / 0.8
    assert hier.dp_comm_s == pytest.approx(hand_hier, rel=1e-9)
    assert flat.dp_comm_s == pytest.approx(hand_flat, rel=1e-9)
    assert hier.mfu > flat.mfu


def test_fast_dispatch_nested_calls_skip_binding_but_faces_still_validate():
    # issue 11: inside a formula computing numbers, nested formula calls take the fast path (Python binds the
    # arguments); the faces still validate and build expressions
    from xlcalc import expr
    from xlcalc.errors import InputError
    from xlcalc.expr import functions
    from xlcalc.formulas import compute
    from xlcalc.formulas import steptime as fs
    from xlcalc.registry import numeric

    with pytest.raises(InputError, match="mfu"):
        compute.train_days(70, 2, 312, 1024, 1.5)
    assert isinstance(compute.train_days(expr.Var("params_b"), 2, 312, 1024, 0.4), expr.Expr)
    assert functions._numeric == 0
    with numeric():
        assert functions._numeric == 1
        # 8 ranks in one domain: 2 * 1e9 * 7/8 / 450e9 / 0.8, positional arguments and a default (passes = 2)
        assert fcomm.collective_time_s(1e9, 8, 8, 450, 50, 0.8) == pytest.approx(2 * 1e9 * 7 / 8 / 450e9 / 0.8)
        assert fs.gemm_wave_efficiency(2048, 4608, 108) == pytest.approx(288 / 324)  # memoised: same answer
        assert fs.gemm_wave_efficiency(2048, 4608, 108) == pytest.approx(288 / 324)
    assert functions._numeric == 0
    with pytest.raises(ZeroDivisionError):
        with numeric():
            fs.compute_time_s.raw(flops=1, peak_tflops=0, matmul_efficiency=0.5)
    assert functions._numeric == 0  # left even after an error


# --- PyTorch per-op selective checkpointing (torchtitan: saves every other matmul and the attention kernel) ----

def test_op_selective_hardware_flops():
    from xlcalc.formulas import steptime as fs

    # GPT layer, h = 1024, a = 16, d = 64, F = 4h: matmuls 24 h^2 per token forward (Narayanan et al. 2021)
    h, layers, seq, vocab = 1024, 4, 2048, 50000
    args = dict(layers=layers, hidden=h, heads=16, kv_heads=16, head_dim=64, ffn_hidden=4 * h, vocab=vocab,
                seq_len=seq)
    model = 3 * (layers * (24 * h * h + 4 * seq * h) + 2 * h * vocab)
    assert fs.hardware_flops_per_token(**args, recompute="none") == model
    # every other matmul's forward is recomputed, the attention kernel is saved
    assert fs.hardware_flops_per_token(**args, recompute="op_selective") == model + layers * 24 * h * h / 2


def test_op_selective_linear_time():
    from xlcalc.formulas import steptime as fs

    # shapes that fill whole waves: a linear layer takes fwd + 2 x fwd; per-op SAC adds half a forward
    shape = dict(layers_per_stage=1, tokens=256 * 132, hidden=128 * 132, heads=132, kv_heads=132, head_dim=128,
                 ffn_hidden=4 * 128 * 132, vocab=128 * 132, peak_tflops=989, matmul_efficiency=0.5, sm_count=1)
    none = fs.stage_linear_time_s(**shape, recompute="none")
    full = fs.stage_linear_time_s(**shape, recompute="full")
    op = fs.stage_linear_time_s(**shape, recompute="op_selective")
    logits = fs.linear_layer_time_s(256 * 132, 128 * 132, 128 * 132, 989, 0.5, 1)
    assert (op - logits) / (none - logits) == pytest.approx(3.5 / 3)
    assert (full - logits) / (none - logits) == pytest.approx(4 / 3)


def test_pinned_op_selective_plans():
    from xlcalc.planner import plan

    r = plan("llama3.1-8b", gpu="h100", n_gpus=8, seq_len=8192, global_batch_tokens=8 * 8192, recompute="op_selective")
    assert r.plans and all(p.recompute == "op_selective" for p in r.plans)
    none = plan("llama3.1-8b", gpu="h100", n_gpus=8, seq_len=8192, global_batch_tokens=8 * 8192, recompute="none",
                tp=r.plans[0].tp, pp=r.plans[0].pp, micro_batch=r.plans[0].micro_batch,
                zero_stage=r.plans[0].zero_stage)
    assert none.plans  # the same layout without recomputation fits too (it holds more activations)
    assert r.plans[0].step_s > none.plans[0].step_s  # recomputing half the matmuls can only cost time


def test_fp8_cast_bytes_hand_count():
    # Llama 3 8B layer (h 4096, 32 heads, 8 KV heads, dh 128, SwiGLU F 14336), TP 1, 4 bytes per element
    # (Transformer Engine cast-transpose: read bf16 2 bytes, write FP8 1 byte and its transpose 1 byte).
    # Forward operands: QKV input 4096, attention-output input 4096, FC1 input 4096, FC2 input 14336 = 26624;
    # backward output gradients: QKV out 4096 + 2*1024 = 6144, out-proj 4096, FC1 (gate + up) 28672, FC2 4096 = 43008.
    assert fs.fp8_cast_bytes_per_token(4096, 32, 8, 128, 14336, True) == 4 * (26624 + 43008)
    # full recompute casts the forward operands twice; fused forward casts leave only the attention output (4096)
    assert fs.fp8_cast_bytes_per_token(4096, 32, 8, 128, 14336, True, recompute="full") == 4 * (2 * 26624 + 43008)
    assert fs.fp8_cast_bytes_per_token(4096, 32, 8, 128, 14336, True, fp8_forward_fused=True) == 4 * (4096 + 43008)
    # TP 8 with sequence parallelism: every term split 8 ways
    assert fs.fp8_cast_bytes_per_token(4096, 32, 8, 128, 14336, True, 8, True) == pytest.approx(4 * (26624 + 43008) / 8)


def test_matmul_efficiency_as_share_of_mamf():
    # ml-engineering MAMF table: H100 SXM 792.1 of 989 TFLOPS = 0.801 (catalog matmul_efficiency); a stack at 0.7 of it
    from xlcalc.planner import Settings
    from xlcalc.planner.hardware import resolve_hardware
    hw = resolve_hardware("h100-sxm", Settings(matmul_efficiency=0.7, matmul_efficiency_of_mamf=True), 8)
    assert hw.matmul_efficiency == pytest.approx(0.7 * 0.801)
    # the H800 has no MAMF of its own: the H100 SXM's (same die, matmul_efficiency_from)
    hw = resolve_hardware("h800", Settings(matmul_efficiency=0.7, matmul_efficiency_of_mamf=True), 8)
    assert hw.matmul_efficiency == pytest.approx(0.7 * 0.801)
    assert resolve_hardware("h100-sxm", Settings(matmul_efficiency=0.7), 8).matmul_efficiency == 0.7


def test_flash_attention_2_generation_factor():
    # FlashAttention-2: 50% of peak on A100 (Dao 2023), 35% on H100 (Shah et al. 2024): 0.35 / 0.50 = 0.70
    from xlcalc import catalog
    from xlcalc.planner import Settings, evaluate
    from xlcalc.planner.hardware import attention_factor, resolve_hardware
    from xlcalc.planner.steptime import Config, arch_from_model
    assert attention_factor("h100-sxm", True) == pytest.approx(0.70)
    assert attention_factor("a100-80gb", True) == 1.0
    assert attention_factor("b200", True) == 1.0  # no published FlashAttention-2 share: no factor
    assert attention_factor("h100-sxm", False) == 1.0
    # on H100 the attention part of a layer takes 1/0.70 as long, nothing else changes
    arch = arch_from_model(catalog.get_model("llama3.1-8b"))
    cfg = Config(tp=1, pp=1, dp=8, zero_stage=3, seq_parallel=False, recompute="none", micro_batch=1)
    off = Settings(stack="planner", matmul_efficiency=0.6)
    on = Settings(stack="planner", matmul_efficiency=0.6, attention_by_generation=True)
    a = evaluate(arch, resolve_hardware("h100-sxm", off, 8), off, cfg, 8192, 64)
    b = evaluate(arch, resolve_hardware("h100-sxm", on, 8), on, cfg, 8192, 64)
    from xlcalc.planner.steptime import _compute_mb
    _, att_off, _ = _compute_mb(arch, resolve_hardware("h100-sxm", off, 8), off, cfg, 8192, "none")
    _, att_on, _ = _compute_mb(arch, resolve_hardware("h100-sxm", on, 8), on, cfg, 8192, "none")
    assert att_on == pytest.approx(att_off / 0.70)
    assert b.compute_s - a.compute_s == pytest.approx(a.microbatches * 32 * (att_on - att_off))


def test_triton_flash_attention_runs_at_its_published_speed_of_flash_attention_2():
    # Dao 2023 §4.1: FlashAttention-2 is 1.3-1.5x faster than FlashAttention in Triton forward, ~2x backward; the
    # backward has 2.5x the forward's FLOPs: 3.5 / (1.4 x 1 + 2 x 2.5) of FlashAttention-2's speed
    from xlcalc import catalog
    from xlcalc.planner import Settings
    from xlcalc.planner.hardware import resolve_hardware
    from xlcalc.planner.stacks import STACKS, TRITON_FLASH_ATTENTION_SPEED
    from xlcalc.planner.steptime import Config, _compute_mb, arch_from_model
    assert TRITON_FLASH_ATTENTION_SPEED == pytest.approx(3.5 / 6.4)
    st = Settings(stack="llm-foundry")
    assert st.attention_kernel_speed == TRITON_FLASH_ATTENTION_SPEED
    assert st.attention_efficiency == 0.50  # FlashAttention-2 on A100, the low end of Dao 2023's 50-73%
    assert "attention_kernel_speed" not in STACKS["megatron"].settings  # cuDNN / TE fused attention: no derate
    # Llama 3 8B at 32k on 8 A100s: 32 heads x 128 = 4096, 4 s^2 d h forward FLOPs counted
    arch = arch_from_model(catalog.get_model("llama3.1-8b"))
    cfg = Config(tp=1, pp=1, dp=8, zero_stage=3, seq_parallel=False, recompute="none", micro_batch=1)
    flops = 3 * 4 * 32768 ** 2 * 4096  # forward + backward (2x), full s x s: the counted FLOPs
    for speed in (1.0, TRITON_FLASH_ATTENTION_SPEED):
        s = Settings(matmul_efficiency=0.6, attention_efficiency=0.5, attention_kernel_speed=speed)
        _, att, _ = _compute_mb(arch, resolve_hardware("a100-80gb", s, 8), s, cfg, 32768, "none")
        # the kernel computes the causal half at 0.5 x speed of the 312 TFLOP/s peak, never faster than the GEMM
        # rate (0.6) on the counted FLOPs
        expected = max(0.5 * flops / (312e12 * 0.5 * speed), flops / (312e12 * 0.6))
        assert att == pytest.approx(expected, rel=1e-9)
    # the Triton kernel is slower than the GEMM floor here, FlashAttention-2 is not
    assert 0.5 / (0.5 * TRITON_FLASH_ATTENTION_SPEED) > 1 / 0.6 > 0.5 / 0.5


def test_fp8_casts_add_hbm_time_only_to_fp8_runs():
    # the casts of one Llama 3 8B layer per micro-batch at HBM speed: bytes x tokens / (3.35 TB/s)
    from xlcalc import catalog
    from xlcalc.planner import Settings
    from xlcalc.planner.hardware import resolve_hardware
    from xlcalc.planner.steptime import Config, _compute_mb, arch_from_model
    arch = arch_from_model(catalog.get_model("llama3.1-8b"))
    base = Settings(stack="planner", matmul_efficiency=0.6, fp8_cast_bytes=0)
    cast = Settings(stack="planner", matmul_efficiency=0.6, fp8_cast_bytes=4, fp8_forward_casts_fused=False)
    for fp8 in (False, True):
        cfg = Config(tp=1, pp=1, dp=8, zero_stage=3, seq_parallel=False, recompute="none", micro_batch=2, fp8=fp8)
        a, _, _ = _compute_mb(arch, resolve_hardware("h100-sxm", base, 8), base, cfg, 4096, "none")
        b, _, _ = _compute_mb(arch, resolve_hardware("h100-sxm", cast, 8), cast, cfg, 4096, "none")
        expected = 4 * (26624 + 43008) * 8192 / 3.35e12 if fp8 else 0.0
        assert b - a == pytest.approx(expected)
    # the planner's own default (Megatron-Core with Transformer Engine): forward casts fused, only the attention
    # output's remains
    cfg = Config(tp=1, pp=1, dp=8, zero_stage=3, seq_parallel=False, recompute="none", micro_batch=2, fp8=True)
    default = Settings(stack="planner", matmul_efficiency=0.6)
    a, _, _ = _compute_mb(arch, resolve_hardware("h100-sxm", base, 8), base, cfg, 4096, "none")
    c, _, _ = _compute_mb(arch, resolve_hardware("h100-sxm", default, 8), default, cfg, 4096, "none")
    assert c - a == pytest.approx(4 * (4096 + 43008) * 8192 / 3.35e12)


def test_a_stack_fills_the_settings_not_given_and_its_efficiency_is_the_default():
    from xlcalc.errors import InputError
    from xlcalc.planner import Settings
    from xlcalc.planner.hardware import resolve_hardware
    from xlcalc.planner.stacks import STACKS, get_stack
    st = Settings(stack="llm-foundry")
    # PyTorch FSDP mixed precision: 4 + 4 + 8 bytes per parameter; FA2-class attention; unfused FP8 casts
    assert (st.bytes_weights, st.bytes_grads, st.bytes_optimizer) == (4, 4, 8)
    assert st.attention_by_generation and not st.fp8_forward_casts_fused
    assert Settings(stack="llm-foundry", bytes_weights=2).bytes_weights == 2  # given values win
    hw = resolve_hardware("h100-sxm", st, 8)
    assert hw.matmul_efficiency == STACKS["llm-foundry"].matmul_efficiency and "stack llm-foundry" in hw.matmul_efficiency_basis
    assert resolve_hardware("h100-sxm", Settings(stack="llm-foundry", matmul_efficiency=0.5), 8).matmul_efficiency == 0.5
    assert hw.attention_factor == pytest.approx(0.70)
    with pytest.raises(InputError, match="megatron"):
        get_stack("deepspeed-2019")
    for stack in STACKS.values():  # every fact names where it is stated
        assert stack.facts and all(what and where for what, where in stack.facts)
        Settings(**stack.settings)


def test_plan_cli_stack_flag(capsys):
    from xlcalc.cli import main
    rc = main(["plan", "--model", "llama3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "8192",
               "--global-batch-tokens", "1048576", "--stack", "fsdp-compiled", "--json"])
    import json
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["matmul_efficiency_basis"].startswith("stack fsdp-compiled")
    assert main(["plan", "--model", "llama3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "8192",
                 "--global-batch-tokens", "1048576", "--stack", "nope"]) == 2
    err = capsys.readouterr().err
    # the refusal names the input and lists every profile, the planner's own settings and the aliases
    assert "stack" in err and all(x in err for x in ("megatron", "fsdp-eager", "planner", "torchtitan", "nemo"))


def test_offloaded_optimizer_step_by_hand():
    # ZeRO-Offload (Ren et al. 2021 §4.1): Adam over the shard in host memory (30 bytes per parameter), then the
    # 16-bit weights back over PCIe. 8 B parameters, 75 GB/s of DRAM per GPU, 64 GB/s PCIe Gen5 x16 one way:
    # 30 x 8e9 / 75e9 + 2 x 8e9 / 64e9 = 3.2 + 0.25 s
    assert fs.offloaded_optimizer_step_s(8, 75, 64) == pytest.approx(3.45)
    # ZeRO-1 over 8 ranks: each GPU updates and uploads an eighth
    assert fs.offloaded_optimizer_step_s(8, 75, 64, zero_stage=1, dp=8) == pytest.approx(3.45 / 8)


def test_plan_with_the_optimizer_offloaded():
    from xlcalc.errors import InputError
    from xlcalc.planner import Settings, plan
    # Llama 3.1 8B on one 80 GB H100: 16 bytes per parameter of weights, gradients and Adam states (128 GB) do not
    # fit; with the 12 bytes of fp32 weights and Adam states in CPU memory they do
    # the planner's own recipe (bf16 weights, fp32 gradients, fp32 master weights and Adam states: ZeRO-Offload's)
    kw = dict(gpu="h100", n_gpus=1, seq_len=8192, global_batch_tokens=2**20, tokens_t=0.1,
              settings=Settings(stack="planner"))
    assert not plan("llama3.1-8b", **kw).plans
    with pytest.raises(InputError) as e:
        plan("llama3.1-8b", optimizer_offload=True, **kw)
    assert "--pcie-gb-s" in str(e.value) and "--host-memory-gb-s" in str(e.value)
    kw["settings"] = Settings(stack="planner", pcie_gb_s=64, host_memory_gb_s=77)
    res = plan("llama3.1-8b", optimizer_offload=True, **kw)
    best = res.plans[0]
    assert best.optimizer_offload and best.optimizer_gb == 0 and best.memory_gb <= 80
    assert "optimizer offloaded" in best.label()
    # the step's optimizer part: every parameter (8,030,261,248: transformers num_parameters() of
    # meta-llama/Llama-3.1-8B) through the CPU's Adam and back over PCIe
    assert best.optimizer_s == pytest.approx(8.030261248 * (30 / 77 + 2 / 64), rel=1e-3)

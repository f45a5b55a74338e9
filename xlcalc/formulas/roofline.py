"""The roofline of seed 004: time bounds, arithmetic intensity, critical intensity."""

from __future__ import annotations

from ..expr.functions import max_, min_
from ..registry import REGISTRY, formula


@formula(udf="T_MATH_S", unit="seconds", category="roofline",
         equation="T_math = FLOPs / (peak*1e12)", source="seed 004; Austin et al., How to Scale Your Model, ch. 1")
def t_math_s(flops, peak_tflops):
    """Time to do the arithmetic at peak."""
    return flops / (peak_tflops * 1e12)


@formula(udf="T_COMM_S", unit="seconds", category="roofline",
         equation="T_comm = bytes / (bandwidth*1e9)", source="seed 004; How to Scale Your Model, ch. 1")
def t_comm_s(bytes, bandwidth_gb_s):
    """Time to move the bytes at full bandwidth."""
    return bytes / (bandwidth_gb_s * 1e9)


@formula(udf="TIME_LOWER_S", unit="seconds", category="roofline",
         equation="max(T_math, T_comm): communication fully overlapped", source="seed 004")
def time_lower_s(flops, bytes, peak_tflops, bandwidth_gb_s):
    """Lower bound of the run time: the slower of compute and communication."""
    return max_(t_math_s(flops, peak_tflops), t_comm_s(bytes, bandwidth_gb_s))


@formula(udf="TIME_UPPER_S", unit="seconds", category="roofline",
         equation="T_math + T_comm: no overlap", source="seed 004")
def time_upper_s(flops, bytes, peak_tflops, bandwidth_gb_s):
    """Upper bound of the run time: compute and communication one after the other."""
    return t_math_s(flops, peak_tflops) + t_comm_s(bytes, bandwidth_gb_s)


@formula(udf="ARITHMETIC_INTENSITY", unit="FLOP/byte", category="roofline", equation="FLOPs / bytes", source="seed 004")
def arithmetic_intensity(flops, bytes):
    """FLOPs done per byte moved."""
    return flops / bytes


@formula(udf="CRITICAL_INTENSITY", unit="FLOP/byte", category="roofline",
         equation="peak FLOP/s / bandwidth B/s (TPU v5e: 1.97e14 / 8.2e11 = 240)", source="seed 004")
def critical_intensity(peak_tflops, hbm_tb_s):
    """Intensity above which a kernel is compute-bound on this chip."""
    return peak_tflops * 1e12 / (hbm_tb_s * 1e12)


@formula(udf="ATTAINABLE_TFLOPS", unit="TFLOP/s", category="roofline",
         equation="min(peak, intensity * bandwidth)", source="Williams et al. 2009 (roofline); seed 004")
def attainable_tflops(intensity, peak_tflops, hbm_tb_s):
    """Attainable TFLOP/s at an arithmetic intensity (the roofline)."""
    return min_(peak_tflops, intensity * hbm_tb_s)


@formula(udf="MATMUL_INTENSITY", unit="FLOP/byte", category="roofline",
         equation="2BDF / (bytes*(BD + DF + BF)); ~B when B << D, F", source="seed 004")
def matmul_intensity(rows, inner, cols, bytes_per_element=2):
    """Arithmetic intensity of [B,D] x [D,F]."""
    return 2 * rows * inner * cols / (bytes_per_element * (rows * inner + inner * cols + rows * cols))


@formula(udf="MODEL_PARALLEL_MIN_DIM", unit="elements", category="roofline",
         equation="two-way split of D is compute-bound iff D > 2*peak/link (v5e, 45 GB/s: 8755)", source="seed 004")
def model_parallel_min_dim(peak_tflops, link_gb_s):
    """Smallest model dimension D for which a 2-way model-parallel matmul stays compute-bound."""
    return 2 * peak_tflops * 1e12 / (link_gb_s * 1e9)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

"""Published shares of a GPU's peak that attention kernels reach, by GPU: read by the hardware model
(:func:`xlcalc.planner.hardware.attention_factor`) and by the stack profiles (:mod:`xlcalc.planner.stacks`)."""

from __future__ import annotations

__all__ = ["FLASH_ATTENTION_2_SHARE"]

# Share of the dense bf16 peak the FlashAttention-2 kernel reaches (forward + backward, causal), by GPU generation:
# Dao 2023 (FlashAttention-2, abstract: "reaching 50-73% of the theoretical maximum FLOPs/s on A100"; the causal
# forward + backward is at the low end), Shah et al. 2024 (FlashAttention-3, abstract: "FlashAttention-2 achieving
# only 35% utilization on H100"). A stack whose attention kernel was written for Ampere (FlashAttention-2, PyTorch
# SDPA's flash backend) reaches 0.35 / 0.50 = 0.70 of its A100 share on Hopper (Settings.attention_by_generation).
# A GPU not listed (Blackwell, AMD) gets no such factor: no source gives FlashAttention-2's share there.
FLASH_ATTENTION_2_SHARE = {
    "a100-80gb": 0.50, "a100-40gb": 0.50, "a800": 0.50,
    "h100-sxm": 0.35, "h100-pcie": 0.35, "h100-nvl": 0.35, "h800": 0.35, "h200": 0.35,
}

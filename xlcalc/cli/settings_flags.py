"""The step-time model's settings as flags (``plan``, ``calibrate``), grouped by kind as
:mod:`xlcalc.planner.settings_kinds` declares them: the stack's facts, the recipe's memory inputs, overrides of the GPU's
figures, the price. A default a help text states is read from that declaration (``{default}``), never typed here."""

from __future__ import annotations

import argparse

from ..planner.settings_kinds import KINDS
from ..planner.stacks import ALIASES, DEFAULT_STACK, PLANNER, STACKS
from .flags import add_switch, flag, shown
from .memory import add_framework_flags

__all__ = ["SETTING_FLAGS", "SETTING_SWITCHES", "add_settings_flags", "switched_settings"]

# flag (a Settings field) -> help; {default}: the field's declared default
SETTING_FLAGS: dict[str, str] = {
    "matmul_efficiency": "share of peak the matmuls reach in training (default: the stack profile's, fitted to its "
                         "published runs; --stack planner: the GPU's catalog value; docs/validation.md)",
    "attention_efficiency": "share of peak of the attention core (default: the stack profile's; --stack planner: "
                            "{default})",
    "attention_kernel_speed": "speed of the attention kernel relative to FlashAttention-2 on the same GPU (default "
                              "{default}; FlashAttention in Triton: 0.55)",
    "link_efficiency": "achieved collective bandwidth / link bandwidth (default {default})",
    "dp_overlap": "share of the overlap window that hides DP communication (default {default})",
    "tp_overlap": "share of TP communication hidden behind compute (default {default}; async TP / TP comm overlap: ~1)",
    "pp_overlap": "share of pipeline send/receive hidden behind compute (default {default})",
    "cp_overlap": "share of the attention compute that hides the CP KV exchange (default {default})",
    "ep_overlap": "share of a stage's compute that hides the MoE all-to-all (default {default}; DeepSeek-V3 "
                  "DualPipe: 1)",
    "a2a_bytes": "bytes per element the MoE all-to-all sends (default {default}, bf16; FP8 dispatch + bf16 combine: "
                 "1.5)",
    "max_nodes_per_token": "node-limited MoE routing: NVLink domains a token's experts may span (default {default}, "
                           "no limit; DeepSeek-V3: 4)",
    "comm_sms": "SMs kept by communication kernels that overlap compute (default {default}; DeepSeek-V3: 20 of 132)",
    "fp8_efficiency_ratio": "FP8 matmul efficiency relative to bf16 (default {default}, MAMF H100 fp8/bf16)",
    "fp8_cast_bytes": "HBM bytes per element of each FP8 GEMM operand cast (default {default}: Transformer Engine "
                      "cast-transpose; 0: casts not counted)",
    "overhead_gb": "other memory per GPU: NCCL, workspaces, GB (default {default})",
    "cuda_context_gb": "CUDA context per GPU, GB, in the fit's margin (default {default})",
    "allocator_reserve_frac": "caching allocator reserve, share of the prediction, in the fit's margin (default "
                              "{default})",
    "bytes_weights": "bytes/param of weights (default: the stack profile's; --stack planner: {default})",
    "bytes_grads": "bytes/param of gradients (default: the stack profile's; --stack planner: {default}, fp32 main "
                   "grads)",
    "bytes_optimizer": "bytes/param of optimizer states (default: the stack profile's; --stack planner: {default})",
    "peak_tflops": "override the GPU's dense bf16/fp16 peak TFLOP/s",
    "memory_gb": "override the GPU's memory, GB",
    "hbm_tb_s": "override the GPU's HBM bandwidth, TB/s",
    "scaleup_gb_s": "override the scale-up (NVLink) bandwidth per GPU and direction, GB/s",
    "scaleout_gb_s": "override the scale-out (InfiniBand) bandwidth per GPU and direction, GB/s",
    "pcie_gb_s": "host link (PCIe) bandwidth per GPU and direction, GB/s, for --optimizer-offload (PCIe Gen5 x16: 64)",
    "host_memory_gb_s": "CPU memory bandwidth per GPU, GB/s, for --optimizer-offload (the server's DRAM bandwidth / "
                        "its GPUs)",
    "gpus_per_node": "override GPUs per node",
    "nvlink_domain": "override GPUs per NVLink domain (8 on DGX/HGX, 72 on GB200 NVL72)",
    "usd_per_gpu_hour": "price per GPU-hour (default: the price catalog's)",
}


# switches that turn one TRUE/FALSE setting away from its default: flag -> (the Settings field it sets, the value it
# sets, help)
SETTING_SWITCHES: dict[str, tuple[str, bool, str]] = {
    "efficiency_of_mamf": ("matmul_efficiency_of_mamf", True,
                           "read --matmul-efficiency as a share of the GPU's measured MAMF, not of its peak"),
    "attention_by_generation": ("attention_by_generation", True, "FlashAttention-2-class attention (written for "
                                                                  "Ampere): 0.70 of its A100 share of peak on Hopper"),
    "fp8_unfused_casts": ("fp8_forward_casts_fused", False, "every FP8 operand cast in its own kernel (te.Linear "
                                                            "alone), not fused into norms and activation"),
}


def switched_settings(args: argparse.Namespace) -> dict[str, bool]:
    """The settings the given switches set (Settings field -> value)."""
    return {field: value for name, (field, value, _) in SETTING_SWITCHES.items() if getattr(args, name)}


def add_settings_flags(p: argparse.ArgumentParser, heading: str) -> argparse._ArgumentGroup:
    """The stack, framework and switches under ``heading``, then one group of flags per kind of setting; returns the
    first group (for a command's own flags beside them)."""
    g = p.add_argument_group(heading)
    g.add_argument("--stack", help="software-stack profile whose documented facts and fitted matmul efficiency to "
                                   f"use: {', '.join(STACKS)}, or a name it is known by ({', '.join(ALIASES)}); "
                                   f"{PLANNER}: the planner's own settings (default {DEFAULT_STACK}: plain PyTorch "
                                   "FSDP without compilation)")
    add_framework_flags(g)
    add_switch(g, "flash_attention", "fused (Flash) attention; FALSE: unfused, s x s scores stored")
    for name, (_field, _value, text) in SETTING_SWITCHES.items():
        g.add_argument(flag(name), action="store_true", help=text)
    for kind, model in KINDS.items():  # every kind has flags
        k = p.add_argument_group(f"settings: {kind}")
        for name in (n for n in SETTING_FLAGS if n in model.model_fields):
            default = shown(model.model_fields[name].default)
            k.add_argument(flag(name), help=SETTING_FLAGS[name].replace("{default}", default))
    return g

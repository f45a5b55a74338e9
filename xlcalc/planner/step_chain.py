"""The planner's inputs as the step-time chain's (:mod:`xlcalc.step_steps`): one layout's architecture, GPU,
stack settings and layout, by input-spec name, for the chain to evaluate or a sheet to show."""

from __future__ import annotations

from typing import Any, Optional

from ..step_steps import NOT_COVERED
from .architecture import Arch
from .hardware import Hardware
from .settings import Settings
from .steptime import Config, microbatches_per_step

__all__ = ["not_covered", "stack_facts", "step_chain_inputs"]


def not_covered(arch: Arch, st: Settings, cfg: Config) -> Optional[str]:
    """Why the chain cannot price this layout (:data:`xlcalc.step_steps.NOT_COVERED`), or None when it can."""
    applies = {"experts": arch.moe_layers or cfg.ep > 1, "fp8": cfg.fp8, "offload": cfg.offload,
               "stage_layers": cfg.stage_layers is not None and len(set(cfg.stage_layers[1:-1])) > 1,
               "comm_sms": st.comm_sms,
               "projection": arch.projection_shape != (arch.heads, arch.kv_heads, arch.head_dim)}
    return next((NOT_COVERED[why] for why, does in applies.items() if does), None)


def step_chain_inputs(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int,
                      global_batch: int) -> dict[str, Any]:
    """The chain's inputs for one configuration (global_batch in sequences), the planner's values one for one."""
    layers = cfg.stage_layers
    ends = (layers[0], layers[-1]) if layers is not None and cfg.pp > 1 and len(set(layers)) > 1 else (0, 0)
    return {
        **{k: getattr(arch, k) for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "gated_ffn",
                                         "vocab", "layer_params", "embedding_params", "tied_embeddings")},
        **{k: getattr(cfg, k) for k in ("micro_batch", "tp", "pp", "dp", "cp", "zero_stage", "seq_parallel",
                                        "recompute", "virtual_stages")},
        "seq_len": seq_len, "microbatches": microbatches_per_step(cfg, global_batch),
        # the end stages' layers where they differ from the middle ones (0: an even split)
        "first_stage_layers": ends[0], "last_stage_layers": ends[1],
        "peak_tflops": hw.peak_tflops, "matmul_efficiency": hw.matmul_efficiency,
        "sm_count": hw.sm_count or 1, "wave_quantization": bool(hw.sm_count), "hbm_tb_s": hw.hbm_tb_s,
        "scaleup_gb_s": hw.scaleup_gb_s,
        # None: the whole cluster is one scale-up domain and no group crosses a NIC
        "scaleout_gb_s": hw.scaleout_gb_s or hw.scaleup_gb_s, "nvlink_domain": hw.nvlink_domain,
        "attention_factor": hw.attention_factor, **stack_facts(st),
    }


def stack_facts(st: Settings) -> dict[str, Any]:
    """The chain's inputs a software stack sets (its profile's facts over the planner's defaults), and whether its
    attention kernel is FlashAttention-2 on a newer GPU than it was written for (Settings.attention_by_generation)."""
    return {**{k: getattr(st, k) for k in ("attention_efficiency", "attention_kernel_speed", "attention_by_generation",
                                           "flash_attention", "elementwise_factor", "loss_bytes", "dropout",
                                           "link_efficiency", "tp_overlap", "pp_overlap", "cp_overlap", "dp_overlap",
                                           "grad_bytes", "bytes_per_param_step")},
            "bytes_weights": st.gather_bytes or st.bytes_weights}  # the weights as the ZeRO / FSDP gathers move them

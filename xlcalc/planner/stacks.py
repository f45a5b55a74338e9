"""Named software-stack profiles: what a training stack does that the step-time model must know.

Each :class:`Stack` is a set of :class:`xlcalc.planner.Settings` values, every one a documented fact about the
software with its source, plus the stack's matmul efficiency fitted to its published runs. ``xlcalc plan
--stack ID`` plans with them; the validation (:mod:`xlcalc.validation`) predicts each source's runs with its
stack's facts and fits the efficiency leave-one-source-out. A value no source gives is not set (the planner's
default applies), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .kernels import FLASH_ATTENTION_2_SHARE

__all__ = ["Stack", "STACKS", "NONMATMUL_FACTOR", "TRITON_FLASH_ATTENTION_SPEED", "get_stack"]


@dataclass(frozen=True)
class Stack:
    id: str
    name: str
    settings: dict[str, Any]                        # Settings fields the stack pins
    facts: tuple[tuple[str, str], ...]              # (what the stack does, where that is stated)
    # matmul share of peak fitted to all of the stack's published runs at NONMATMUL_FACTOR (docs/validation.md,
    # "efficiency fitted on all its runs"; a test checks it against scripts/make_validation.py); None: the GPU
    # catalog's default
    matmul_efficiency: Optional[float] = None
    sources: tuple[str, ...] = field(default=())    # source_id of throughput_runs.json measured on this stack


# The non-matmul time factor fitted with the stacks' efficiencies on all the published runs (one for every stack;
# docs/validation.md, a test checks it): the counted HBM traffic of norms, activations, residuals and the loss
# takes this many times its time at peak bandwidth (bytes moved / bytes counted over achieved / peak bandwidth).
NONMATMUL_FACTOR = 4.0
_FIT = dict(elementwise_factor=NONMATMUL_FACTOR)

# PyTorch FSDP with mixed precision: fp32 sharded parameters, fp32 gradients, Adam m and v in fp32 (recipe fp32)
_FSDP_BYTES = dict(bytes_weights=4, bytes_grads=4, bytes_optimizer=8)
_FSDP_FACT = ("PyTorch FSDP keeps fp32 sharded parameters, fp32 gradients and Adam m, v (4 + 4 + 8 bytes per "
              "parameter) and gathers bf16 copies for compute",
              "torchtitan parallelize_llama.py MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32); "
              "Composer FSDP mixed precision DEFAULT")
# FlashAttention-2 class kernels: their A100 share of peak (the low end of Dao 2023's 50-73%, causal forward +
# backward), scaled to each GPU generation by attention_by_generation (0.35 on Hopper, Shah et al. 2024)
_FA2 = dict(attention_by_generation=True, attention_efficiency=FLASH_ATTENTION_2_SHARE["a100-80gb"])
_FA2_FACT = ("FlashAttention-2-class attention kernel written for Ampere: 0.50 of peak on A100 on the FLOPs it "
             "computes, 0.70 of that on Hopper (attention_efficiency 0.50, attention_by_generation)",
             "Dao 2023 (FlashAttention-2 reaches 50-73% of peak on A100); Shah et al. 2024 (FlashAttention-3: "
             "FlashAttention-2 achieves 35% of peak on H100)")
# FlashAttention in Triton against FlashAttention-2 on the same GPU (Dao 2023 §4.1: FlashAttention-2 is "around
# 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around 2x faster in the backward pass"; the
# backward has 2.5x the forward's FLOPs, Dao 2023 §4.1): one forward at 1/1.4 and one backward at 1/2 the speed,
# 3.5 / (1.4 + 2.5 x 2) = 0.55 of FlashAttention-2's speed over a training step
TRITON_FLASH_ATTENTION_SPEED = 3.5 / (1.4 + 2.5 * 2)
_TE_CAST = ("FP8 operands cast by Transformer Engine's cast-transpose: read 2 bytes, write 1 + 1 transposed "
            "(fp8_cast_bytes = 4)", "Micikevicius et al. 2022 (FP8 formats); Hopper FP8 GEMMs take only the TN layout")

STACKS: dict[str, Stack] = {s.id: s for s in (
    Stack(
        id="megatron", name="Megatron-Core / NeMo / Megatron-Bridge and Megatron-style 3D/4D stacks (2023-2026)",
        settings=dict(**_FIT, fp8_cast_bytes=4.0, fp8_forward_casts_fused=True),
        facts=(_TE_CAST,
               ("te.LayerNormLinear / te.LayerNormMLP write the norm and activation outputs in FP8, so only the "
                "attention output and the backward gradients are cast separately (fp8_forward_casts_fused)",
                "Megatron-Core transformer_engine spec (TELayerNormColumnParallelLinear, fused LayerNorm-MLP)"),
               ("cuDNN / Transformer Engine fused attention, tuned for each GPU generation: no generation factor",
                "Megatron-Core TEDotProductAttention")),
        matmul_efficiency=0.774,
        sources=("megatron-bridge-perf-summary", "megatron-moe-modelzoo", "nemo-perf-summary-24.07",
                 "megatron-lm-readme-h100", "megascale2024", "llama3-paper", "deepseek-v3-report"),
    ),
    Stack(
        id="megatron-2021", name="Megatron-LM of 2021-22 on A100 (no FlashAttention, fp16 gradients reduced after "
                                 "the backward pass)",
        settings=dict(**_FIT, dp_overlap=0.0, grad_bytes=2, flash_attention=False),
        facts=(("the data-parallel all-reduce runs after the whole forward-backward schedule (dp_overlap 0)",
                "Megatron-LM 2021 megatron/training.py train_step"),
               ("--fp16 without --accumulate-allreduce-grads-in-fp32 reduces fp16 gradients (grad_bytes 2)",
                "Megatron-LM 2021 arguments.py"),
               ("no FlashAttention (2021-22): the s x s scores go through HBM", "FlashAttention appeared in 2022")),
        matmul_efficiency=0.769,
        sources=("narayanan2021", "korthikanti2022", "megatron-lm-readme-a100"),
    ),
    Stack(
        id="llm-foundry", name="Composer / llm-foundry of 2023: PyTorch FSDP, FlashAttention-class kernels, MPT models",
        settings=dict(**_FIT, **_FSDP_BYTES, **_FA2, attention_kernel_speed=TRITON_FLASH_ATTENTION_SPEED,
                      fp8_cast_bytes=4.0, fp8_forward_casts_fused=False, loss_bytes=6.0, dropout=False),
        facts=(_FSDP_FACT,
               ("MPT trains without dropout: resid_pdrop and emb_pdrop default to 0.0 and the MPT yamls set no other; "
                "PyTorch's dropout at p = 0 returns its input and launches no kernel, so a layer's non-matmul traffic "
                "has no dropout terms (dropout False)",
                "llm-foundry llmfoundry/models/mpt/configuration_mpt.py (MPTConfig resid_pdrop=0.0, emb_pdrop=0.0), "
                "scripts/train/yamls/pretrain/mpt-*.yaml; PyTorch aten/src/ATen/native/Dropout.cpp (p == 0 returns "
                "the input)"),
               ("the loss is flash-attn's fused cross-entropy kernel on the bf16 logits (loss_fn default "
                "'fused_crossentropy'): forward reads each logit once (2 bytes), backward reads it and writes its "
                "gradient in place (2 + 2), 6 bytes per logit instead of 16 over fp32 logits (loss_bytes 6)",
                "llm-foundry llmfoundry/models/mpt/modeling_mpt.py (2023): ComposerMPTCausalLM "
                "om_model_config.get('loss_fn', 'fused_crossentropy') -> flash_attn.losses.cross_entropy."
                "CrossEntropyLoss"),
               ("Ampere-era FlashAttention in Triton: the benchmark script sets attn_impl (default 'triton', MPT's "
                "Triton port of FlashAttention; sweep.sh passes no other) and installs flash-attn 1.0.7 for the H100 "
                "FP8 runs; FlashAttention-2's share of peak (0.50 on A100, 0.70 of it on Hopper) times the Triton "
                "kernel's speed relative to FlashAttention-2, 1.4x slower forward and 2x slower backward: 0.55 "
                "(attention_efficiency 0.50, attention_by_generation, attention_kernel_speed)",
                "llm-foundry scripts/train/benchmarking/submit_benchmarks.py and sweep.sh at commit b2a43a1; Dao 2023 "
                "§4.1 (FlashAttention-2 1.3-1.5x faster than FlashAttention in Triton forward, 2x backward); Shah et "
                "al. 2024"),
               _TE_CAST,
               ("FP8 (Composer amp_fp8) swaps the linear layers for te.Linear: norms and activation stay separate "
                "bf16 kernels and every FP8 operand is cast on its own (fp8_forward_casts_fused False)",
                "llm-foundry scripts/train/benchmarking/submit_benchmarks.py (TransformerEngine v0.10 for H100 FP8)")),
        matmul_efficiency=0.779,
        sources=("llm-foundry-benchmarks",),
    ),
    Stack(
        id="fsdp-eager", name="PyTorch FSDP2 without compilation (torchtitan of 2024, eager)",
        settings=dict(**_FIT, **_FSDP_BYTES, **_FA2, fp8_cast_bytes=4.0,
                      fp8_forward_casts_fused=False),
        facts=(_FSDP_FACT, _FA2_FACT,
               ("compile = false: every operator its own kernel, FP8 casts included", "torchtitan train_configs "
                "(April 2024)")),
        matmul_efficiency=0.750,
        sources=("torchtitan-performance-a100",),
    ),
    Stack(
        id="fsdp-compiled", name="PyTorch FSDP2 with torch.compile (torchtitan)",
        settings=dict(**_FIT, **_FSDP_BYTES, **_FA2, fp8_cast_bytes=4.0,
                      fp8_forward_casts_fused=True),
        facts=(_FSDP_FACT, _FA2_FACT,
               ("torch.compile fuses the float8 casts into the kernels that produce the operands",
                "torchtitan torchtitan/components/quantization/float8.md: '`torch.compile` fuses the float8 "
                "scaling/casting kernels'")),
        matmul_efficiency=0.745,
        sources=("torchtitan-benchmarks",),
    ),
)}


def get_stack(stack_id: str) -> Stack:
    """The stack named ``stack_id``; an InputError lists the known ones."""
    from ..errors import InputError
    try:
        return STACKS[stack_id.strip().lower()]
    except KeyError:
        raise InputError("stack", stack_id, "one of " + ", ".join(STACKS)) from None

"""Named software-stack profiles: what a training stack does that the step-time model must know.

Each :class:`Stack` is a set of :class:`xlcalc.planner.Settings` values, every one a documented fact about the
software with its source, plus the stack's matmul efficiency fitted to its published runs. ``xlcalc plan
--stack ID`` plans with them; the validation (:mod:`xlcalc.validation`) predicts each source's runs with its
stack's facts and fits the efficiency leave-one-source-out. A value no source gives is not set (the planner's
default applies), never guessed.

A plan that names no stack plans with :data:`DEFAULT_STACK`, declared once here for every face (``xlcalc plan``,
``xlcalc calibrate``, ``PLAN()``, :class:`xlcalc.planner.Settings`). The principle that picks it, fixed before any
score was looked at: the default is the stack a user who names none most likely runs, plain PyTorch without
compilation, so ``fsdp-eager`` (PyTorch FSDP eager: torchtitan's ``compile = False`` default, Hugging Face
Trainer's ``torch_compile = False`` default); it is never chosen by comparing validation scores, and it is not the
fastest profile. :data:`PLANNER` names the planner's own settings (every Settings field at its own default, the GPU
catalog's efficiency) for the validation's baseline and whoever asks for them. The names users know a stack by are
:data:`ALIASES`, each with the source that says which profile that software is; software with no profile is in
:data:`NO_PROFILE` and refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..frameworks import profile_values
from .kernels import FLASH_ATTENTION_2_SHARE

__all__ = ["Stack", "STACKS", "NONMATMUL_FACTOR", "TRITON_FLASH_ATTENTION_SPEED", "get_stack", "DEFAULT_STACK",
           "PLANNER", "ALIASES", "ALIAS_FRAMEWORKS", "NO_PROFILE", "stack_id", "stack_choices", "stack_framework"]


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
    # the training framework whose memory facts (xlcalc.frameworks: recipe bytes, logits held for the loss,
    # optimizer-step temporaries, autocast copies, gradients freed) the stack's runs hold, and why: a plan on the
    # stack with no --framework holds these, so `xlcalc memory --framework <it>` gives the plan's GB per GPU
    framework: Optional[tuple[str, str]] = None

    def __post_init__(self) -> None:
        # the framework's memory inputs (recipe bytes, logits held for the loss, optimizer-step temporaries, autocast
        # copies, gradients freed) join the settings as xlcalc.frameworks declares them, not restated here
        if self.framework is not None:
            object.__setattr__(self, "settings", {**profile_values(self.framework[0]), **self.settings})


# The non-matmul time factor fitted with the stacks' efficiencies on all the published runs (one for every stack;
# docs/validation.md, a test checks it): the counted HBM traffic of norms, activations, residuals and the loss
# takes this many times its time at peak bandwidth (bytes moved / bytes counted over achieved / peak bandwidth).
NONMATMUL_FACTOR = 4.0
_FIT = dict(elementwise_factor=NONMATMUL_FACTOR)


# PyTorch FSDP with mixed precision: fp32 sharded parameters, fp32 gradients, Adam m and v in fp32 (recipe fp32; the
# bytes are the framework profile's, xlcalc.frameworks, which each FSDP stack names as its framework)
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
        framework=("megatron", "the profile's sources train with Megatron-Core: bf16 parameters, fp32 main gradients "
                               "and the distributed optimizer's fp32 main parameters and Adam m, v (xlcalc.frameworks "
                               "megatron)"),
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
        settings=dict(**_FIT, **_FA2, attention_kernel_speed=TRITON_FLASH_ATTENTION_SPEED,
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
        framework=("llm-foundry", "llm-foundry's benchmark runs train with Composer's FSDP at mixed precision "
                                  "DEFAULT (xlcalc.frameworks llm-foundry)"),
    ),
    Stack(
        id="fsdp-eager", name="PyTorch FSDP2 without compilation (torchtitan of 2024, eager)",
        settings=dict(**_FIT, **_FA2, fp8_cast_bytes=4.0,
                      fp8_forward_casts_fused=False),
        facts=(_FSDP_FACT, _FA2_FACT,
               ("compile = false: every operator its own kernel, FP8 casts included", "torchtitan train_configs "
                "(April 2024)")),
        matmul_efficiency=0.750,
        sources=("torchtitan-performance-a100",),
        framework=("torchtitan", "the profile's runs are torchtitan's with training.compile false "
                                 "(torchtitan-performance-a100; xlcalc.frameworks torchtitan)"),
    ),
    Stack(
        id="fsdp-compiled", name="PyTorch FSDP2 with torch.compile (torchtitan)",
        settings=dict(**_FIT, **_FA2, fp8_cast_bytes=4.0,
                      fp8_forward_casts_fused=True),
        facts=(_FSDP_FACT, _FA2_FACT,
               ("torch.compile fuses the float8 casts into the kernels that produce the operands",
                "torchtitan torchtitan/components/quantization/float8.md: '`torch.compile` fuses the float8 "
                "scaling/casting kernels'")),
        matmul_efficiency=0.745,
        sources=("torchtitan-benchmarks",),
        framework=("torchtitan-compile", "the profile's runs are torchtitan's with training.compile "
                                         "(torchtitan-benchmarks); today's torchtitan compiles the loss with the model "
                                         "(xlcalc.frameworks torchtitan-compile)"),
    ),
)}


# The stack a plan assumes when none is named (see the module docstring for the principle, fixed before scoring):
# the one a user who names nothing most likely runs, plain PyTorch without compilation
DEFAULT_STACK = "fsdp-eager"
DEFAULT_STACK_BASIS = ("the default: plain PyTorch FSDP without compilation, the stack a user who names none most "
                       "likely runs (torchtitan and Hugging Face Trainer compile nothing unless asked), not the "
                       "fastest profile")

# The planner's own settings: no profile's facts, every Settings field at its own default, the GPU catalog's
# matmul efficiency (the validation's baseline of what the model does with nothing pinned)
PLANNER = "planner"

# Names users know a stack by -> (profile id, the source that says which stack that software is)
ALIASES: dict[str, tuple[str, str]] = {
    "megatron-core": ("megatron", "Megatron-Core is the library the megatron profile's sources train with "
                                  "(NVIDIA Megatron-LM repository, megatron/core)"),
    "mcore": ("megatron", "short name of Megatron-Core in NVIDIA's docs and configs"),
    "megatron-lm": ("megatron", "Megatron-LM's training loop runs on Megatron-Core since 2023 (Megatron-LM README); "
                                "the 2021-22 release is megatron-2021"),
    "nemo": ("megatron", "NVIDIA NeMo trains LLMs with Megatron-Core (NeMo docs; nemo-perf-summary-24.07 is one "
                         "of the profile's sources)"),
    "megatron-bridge": ("megatron", "Megatron-Bridge trains with Megatron-Core (megatron-bridge-perf-summary is one "
                                    "of the profile's sources)"),
    "torchtitan": ("fsdp-eager", "torchtitan trains with PyTorch FSDP2 and compiles only when asked: "
                                 "torchtitan/config/job_config.py Training.compile: bool = False"),
    "pytorch-fsdp": ("fsdp-eager", "PyTorch FSDP without torch.compile (torch.compile is opt-in)"),
    "fsdp": ("fsdp-eager", "PyTorch FSDP without torch.compile (torch.compile is opt-in)"),
    "fsdp2": ("fsdp-eager", "PyTorch FSDP2 (fully_shard) without torch.compile (torch.compile is opt-in)"),
    "hf-trainer": ("fsdp-eager", "Hugging Face Trainer: PyTorch eager with fp32 master weights under bf16 autocast; "
                                 "compiles only with TrainingArguments(torch_compile=True) (transformers docs, "
                                 "torch.compile for training)"),
    "transformers": ("fsdp-eager", "the Hugging Face Trainer of transformers (see hf-trainer)"),
    "accelerate": ("fsdp-eager", "Hugging Face Accelerate runs PyTorch FSDP or DDP eagerly unless a dynamo backend "
                                 "is configured (accelerate launch --dynamo_backend defaults to 'no')"),
    "torch-compile": ("fsdp-compiled", "PyTorch FSDP2 with torch.compile (the fsdp-compiled profile)"),
    "composer": ("llm-foundry", "MosaicML Composer is the trainer llm-foundry runs (llm-foundry README)"),
    "llmfoundry": ("llm-foundry", "the package name of llm-foundry"),
}

# Names whose framework differs from their stack's (alias -> xlcalc.frameworks id): the Hugging Face Trainer runs the
# fsdp-eager stack but holds transformers' memory (fp32 weights under autocast, its eager loss)
ALIAS_FRAMEWORKS: dict[str, str] = {"hf-trainer": "transformers", "transformers": "transformers"}


def stack_framework(name: Optional[str]) -> Optional[str]:
    """The framework (xlcalc.frameworks id) whose memory facts a plan on the named stack holds when no framework is
    given: the alias's own (ALIAS_FRAMEWORKS), else the profile's (Stack.framework); None: the memory model's
    defaults (the planner's settings, megatron-2021)."""
    if name is None:
        return None
    key = str(name).strip().lower().replace(" ", "-").replace("_", "-")
    if key in ALIAS_FRAMEWORKS:
        return ALIAS_FRAMEWORKS[key]
    sid = ALIASES[key][0] if key in ALIASES else key
    stack = STACKS.get(sid)
    return stack.framework[0] if stack is not None and stack.framework is not None else None

# Software users name that has no profile here, with why (refused, never mapped to a guess)
NO_PROFILE: dict[str, str] = {
    "deepspeed": "DeepSpeed has no stack profile: no published DeepSpeed runs are in the validation, so no facts and "
                 "no efficiency are fitted for it",
    "megatron-deepspeed": "Megatron-DeepSpeed has no stack profile: no published runs of it are in the validation",
}


def stack_choices() -> str:
    """Every name a stack input takes, in words (the refusal of an unknown name lists them)."""
    aliases = ", ".join(f"{a} ({sid})" for a, (sid, _) in ALIASES.items())
    return (f"a stack profile: {', '.join(STACKS)}, or {PLANNER} (the planner's own settings); or a name it is "
            f"known by: {aliases} (default {DEFAULT_STACK})")


def stack_id(name: str) -> str:
    """The profile id (or :data:`PLANNER`) a stack name means: an id, an alias, case and spaces ignored; an
    InputError naming the stack and listing the ids and aliases otherwise (software with no profile: why)."""
    from ..errors import InputError
    key = str(name).strip().lower().replace(" ", "-").replace("_", "-")
    if key in STACKS or key == PLANNER:
        return key
    if key in ALIASES:
        return ALIASES[key][0]
    if key in NO_PROFILE:
        raise InputError("stack", name, stack_choices(), NO_PROFILE[key] + "; name the closest profile, or "
                                                          f"{PLANNER} for the planner's own settings")
    raise InputError("stack", name, stack_choices())


def get_stack(stack_id_or_alias: str) -> Stack:
    """The named stack profile (an id or an alias); an InputError lists the known ones."""
    from ..errors import InputError
    sid = stack_id(stack_id_or_alias)
    if sid == PLANNER:
        raise InputError("stack", stack_id_or_alias, "a named stack profile: " + ", ".join(STACKS))
    return STACKS[sid]

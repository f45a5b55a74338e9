"""Byte recipes for model states, and every default of the stage memory model — in this one place.

``DEFAULT_RECIPE``, ``MEMORY_DEFAULTS`` and ``DEFAULT_SEQ_LEN`` are what ``xlcalc memory``, ``estimate``, ``plan``,
the worksheet functions and the workbook assume when an input is left out; each face states the recipe it used
(:func:`recipe_label`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InputError


@dataclass(frozen=True)
class Recipe:
    id: str
    weights: float
    grads: float
    optimizer: float
    source: str


RECIPES: dict[str, Recipe] = {
    r.id: r
    for r in (
        Recipe("zero", 2, 2, 12, "Rajbhandari et al. 2019 (ZeRO): fp16 weights and grads, fp32 master + Adam m, v (K = 12)"),
        Recipe("megatron", 2, 4, 12, "Megatron-LM docs (dist_optimizer.md): bf16 weights, fp32 main grads, fp32 master + m + v"),
        Recipe("seed002", 2, 4, 8, "seed 002 §7.1.2: fp16 weights, fp32 grads, Adam m + v, no master copy (14 B)"),
        Recipe("fp32", 4, 4, 8, "plain fp32 Adam: fp32 weights and grads, m + v"),
        # fine-tuning recipes (the bytes of the *trained* parameters: all of them, or the LoRA adapters)
        Recipe("torchtune", 2, 2, 4, "pure bf16 as torchtune trains (dtype bf16): bf16 weights and grads, AdamW m, v in "
                                "the parameters' dtype, no fp32 master copy"),
        Recipe("qlora", 2, 2, 8, "QLoRA's qlora.py (--bf16): adapters and their grads in bf16, paged_adamw_32bit "
                                 "m, v in fp32"),
    )
}


# ZeRO / FSDP sharding by name -> ZeRO stage (HSDP: full shard inside dp_shard GPUs, replicated across groups); the
# memory model's (xlcalc.stage_memory), the names the sharding input takes (xlcalc.inputs)
SHARDING = {"none": 0, "zero0": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp_grad_op": 2, "fsdp_full_shard": 3,
            "hsdp": 3}

# Scenario field -> recipe attribute it is filled from (xlcalc.scenario.Scenario.build, the workbook's look-ups)
RECIPE_FIELDS = {"bytes_weights": "weights", "bytes_grads": "grads", "bytes_optimizer": "optimizer"}


def get_recipe(name: str) -> Recipe:
    try:
        return RECIPES[name.strip().lower()]
    except KeyError:
        raise InputError("recipe", name, "one of " + ", ".join(RECIPES)) from None


# The recipe every face assumes when none is given: bf16 mixed precision as Megatron-LM trains (bf16 weights,
# fp32 main gradients, fp32 master weights + Adam m, v). 2 + 4 + 12 = 18 bytes per parameter.
DEFAULT_RECIPE = "megatron"

# The sequence length when neither the question nor the model gives one: 4,096 tokens, Llama 2's training context
# (Touvron et al. 2023, Table 1) and seed 002's. The scenario's default (xlcalc.scenario.Scenario.seq_len: estimate,
# cost, the scenario files, the workbook), memory's and plan's for an architecture given by its numbers, and a model
# read from a config.json's (xlcalc.catalog.Model.seq_len; the file gives the context window
# max_position_embeddings, the longest sequence the positions allow, not the length the model was trained on). A
# catalog row's sequence length is its published pre-training one (data, never this default).
DEFAULT_SEQ_LEN = 4096

# The vocabulary when neither the question nor the model gives one: 32,000 tokens, Llama 1's and Llama 2's
# (Touvron et al. 2023). The scenario's default (xlcalc.scenario.Scenario.vocab) and plan's and memory's for an
# architecture given by its numbers (xlcalc.planner.architecture.FLAGS_VOCAB).
DEFAULT_VOCAB = 32000

# Every other default of the stage memory model (xlcalc.stage_memory), with where it comes from.
MEMORY_DEFAULTS: dict[str, Any] = {
    # CUDA context, NCCL workspaces, allocator reserve and fragmentation: a flat allowance per GPU (GB)
    "overhead_gb": 4.0,
    # What the card holds beyond the tensors, named in the fit answer's margin (xlcalc.formulas.memory, FIT_MARGIN_GB):
    # the CUDA context, about 400 MB with CUDA >= 11.7's lazy module loading (PyTorch's default): ptrblck in
    # https://github.com/pytorch/pytorch/issues/109888 (GB)
    "cuda_context_gb": 0.4,
    # the caching allocator's reserve (reserved - allocated: block rounding and fragmentation) as a share of the
    # predicted memory: 5%, as vllm-project/compressed-tensors reserves after measuring 1.83 GiB reserved but
    # unallocated beside 75.31 GiB allocated on an 80 GB card (https://github.com/vllm-project/compressed-tensors/pull/587)
    "allocator_reserve_frac": 0.05,
    # Communication buckets beyond the gradient buffer (Megatron's contiguous grad buffer is the gradients) (GB)
    "comm_buffer_gb": 0.0,
    # Logits kept for the loss: Megatron's vocab-parallel cross-entropy on fp32 logits (bytes per logit)
    "logits_buffer_bytes": 4.0,
    "bytes_fp8": 0.0,            # no FP8 weight copies (bf16 training)
    # the optimizer step allocates nothing beyond its states: a fused step (Megatron-Core's FusedAdam; PyTorch's
    # AdamW(fused=True)). PyTorch's default AdamW on GPUs is foreach: the parameters' dtype bytes (xlcalc.formulas.memory)
    "optimizer_step_bytes": 0.0,
    # no autocast weight copies: 16-bit weights, or fp32 weights cast by Megatron's / FSDP's mixed precision. fp32
    # weights under torch.autocast(bf16) (transformers' Trainer with bf16=True): 2 (xlcalc.formulas.memory)
    "autocast_copy_bytes": 0.0,
    "prefetch_layers": 0,        # ZeRO-3 gathers one layer at a time (DeepSpeed's estimate)
    "optimizer_offload": False,
    # Gradients persist across steps (Megatron-Core's contiguous gradient buffer), so they are added to the
    # activations' peak. PyTorch's Optimizer.zero_grad() sets them to None (set_to_none=True, the default since
    # PyTorch 2.0): set grads_freed to take the later of the two moments instead (xlcalc.formulas.memory).
    "grads_freed": False,
    "dp_shard": 0,               # ZeRO/FSDP shards over the whole data-parallel group
    "cp": 1,
    "first_stage_layers": 0,     # even pipeline split
    "last_stage_layers": 0,
    "virtual_stages": 1,
    "microbatches": 1000000,     # as many micro-batches as the pipeline can hold in flight
    "flash_attention": True,
    "tied_embeddings": False,
    # a plain two-matrix FFN (F = 4h), as seed 002's 70B model, the scenario's default architecture; a model or a
    # config.json gives its own (Llama, Mistral, Qwen, Gemma, DeepSeek: gated, SwiGLU/GeGLU)
    "gated_ffn": False,
    # fine-tuning (xlcalc.formulas.finetune): "full" trains every weight, as pre-training
    "job": "full",
    "lora_rank": 8,              # PEFT LoraConfig and torchtune's Llama 3.1 8B LoRA recipe: r = 8
    "lora_targets": "all_linear",  # QLoRA §4: adapters on every linear layer are needed to match full fine-tuning
    "quant_block": 64,           # QLoRA §3: NF4 blocks of 64 weights, constants double-quantised in blocks of 256
    "double_quant": True,
    # the layout when a question leaves it out: one GPU, no sharding, no recomputation, one sequence. The one
    # declaration of every face's layout defaults (xlcalc.scenario.Scenario's fields read them: estimate, cost, the
    # scenario files and the workbook); what is given is what is computed, a layout is the user's or xlcalc plan's
    "tp": 1, "pp": 1, "dp": 1, "zero_stage": 0, "seq_parallel": False, "recompute": "none", "micro_batch": 1,
}


def recipe_label(bytes_weights: float, bytes_grads: float, bytes_optimizer: float) -> str:
    """The recipe a face used, in words: its id when the bytes match one, else "custom"."""
    for r in RECIPES.values():
        if (r.weights, r.grads, r.optimizer) == (bytes_weights, bytes_grads, bytes_optimizer):
            return f"{r.id} {r.weights:g}+{r.grads:g}+{r.optimizer:g} bytes/param"
    return f"custom {bytes_weights:g}+{bytes_grads:g}+{bytes_optimizer:g} bytes/param"


def default_bytes() -> dict[str, float]:
    """Bytes per parameter of the default recipe, by input name."""
    return recipe_bytes(None)


def recipe_bytes(recipe: str | None) -> dict[str, float]:
    """Bytes per parameter of a recipe by input name (None: the default recipe)."""
    r = get_recipe(recipe or DEFAULT_RECIPE)
    return {field: getattr(r, attr) for field, attr in RECIPE_FIELDS.items()}

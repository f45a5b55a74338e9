"""Discrete facts that were set while the scored runs' errors were in view, and how the validation keeps them honest.

A discrete fact (a stack's kernel, a loss implementation, a recompute or overlap setting read from a training config)
moves predictions as much as a fitted constant does. Each fact here was pinned to what the stack's code or the
source states, but it was looked up while the scored runs' errors were in view, so the validation treats it like a
fitted constant (:func:`xlcalc.validation.factchoice.loso_chosen`): for each held-out source, every fact is set
either as stated or to its neutral state (the planner's default), whichever gives the smaller error on the *other*
sources; a fact that touches no run of the other sources cannot be chosen from them and takes its neutral state.
docs/validation.md gives the headline that way and, beside it, with every fact as stated.

:func:`xlcalc.validation.runs.to_query` builds a query without any of these facts (``off``) and records which of
them apply to it (:attr:`Query.facts`). Every other pinned setting (the stack facts of :mod:`xlcalc.planner.stacks`
not named here, a source's layout, the reference systems' bandwidths) is stated by its stack or source and pinned.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fact", "FACTS", "PROFILE_FACT_KEYS", "SOURCE_FACT_KEYS"]


@dataclass(frozen=True)
class Fact:
    id: str
    what: str          # what the fact pins
    where: str         # where the stack's code or the source states it
    neutral: str       # what a prediction without it assumes


FACTS: tuple[Fact, ...] = (
    Fact("attention-kernels",
         "attention kernels slower than the planner's default: FlashAttention-2 class (0.50 of peak on A100, 0.70 of "
         "that on Hopper) for llm-foundry and torchtitan, and llm-foundry's Triton FlashAttention at 0.55 of "
         "FlashAttention-2's speed",
         "Dao 2023 §4.1; Shah et al. 2024; llm-foundry scripts/train/benchmarking/submit_benchmarks.py (attn_impl "
         "'triton')",
         "the planner's default attention share of peak on every GPU"),
    Fact("llm-foundry-loss",
         "llm-foundry's fused cross-entropy on bf16 logits: 6 bytes per logit (loss_bytes 6)",
         "llm-foundry llmfoundry/models/mpt/modeling_mpt.py (loss_fn default 'fused_crossentropy')",
         "the planner's default loss traffic over fp32 logits"),
    Fact("llm-foundry-dropout",
         "MPT trains without dropout (dropout False)",
         "llm-foundry llmfoundry/models/mpt/configuration_mpt.py (resid_pdrop=0.0, emb_pdrop=0.0)",
         "dropout's traffic counted in every layer"),
    Fact("recipe-recompute",
         "Megatron-Bridge's recompute where its table does not state it, read from its performance configs "
         "(xlcalc.validation.runs.RECIPE_RECOMPUTE)",
         "Megatron-Bridge scripts/performance/configs/*_workload_base_configs.py, utils/overrides.py (c8327cf^)",
         "the planner's choice of recompute"),
    Fact("ep-overlap",
         "the expert-parallel all-to-all hidden behind another micro-batch's compute (ep_overlap 1): Megatron-Bridge "
         "configs with moe_a2a_overlap, the MoE model zoo's '1f1b overlap' rows, DeepSeek-V3's DualPipe",
         "Megatron-Bridge workload configs (c8327cf^); Megatron-Core MoE model zoo notes; DeepSeek-V3 report §3.2.1",
         "the planner's default all-to-all overlap"),
    Fact("deepseek-v3-settings",
         "DeepSeek-V3's node-limited routing (4 nodes per token), 20 of 132 SMs for communication, FP8 dispatch "
         "and BF16 combine (1.5 bytes)",
         "DeepSeek-V3 report §3.2.2, §3.3",
         "the planner's defaults for routing, communication SMs and all-to-all bytes"),
)

# Settings keys of a stack profile (xlcalc.planner.stacks) that each fact sets
PROFILE_FACT_KEYS: dict[str, tuple[str, ...]] = {
    "attention-kernels": ("attention_efficiency", "attention_by_generation", "attention_kernel_speed"),
    "llm-foundry-loss": ("loss_bytes",),
    "llm-foundry-dropout": ("dropout",),
}
# Settings keys of a source's or a run's own settings (runs.SOURCE_SETTINGS, runs._recipe_settings)
SOURCE_FACT_KEYS: dict[str, tuple[str, ...]] = {
    "ep-overlap": ("ep_overlap",),
    "deepseek-v3-settings": ("max_nodes_per_token", "comm_sms", "a2a_bytes"),
}

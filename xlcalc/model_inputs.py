"""The memory model's inputs of a model: its architecture as the input names of :mod:`xlcalc.stage_memory` (and
the scenario), from a catalog model or a Hugging Face config.json read into one."""

from __future__ import annotations

from typing import Any

__all__ = ["model_inputs"]


def model_inputs(model: Any) -> dict[str, Any]:
    """The model's inputs from a catalog model (MoE: the FFN size of the active experts, averaged over layers)."""
    L = model.layers
    moe_layers = L - model.dense_layers if model.experts else 0
    ffn = (L - moe_layers) * model.ffn_hidden
    if moe_layers:
        ffn += moe_layers * (model.experts_active + model.shared_experts) * (model.moe_ffn_hidden or 0)
    return dict(params_b=model.params_b, layers=L, hidden=model.hidden, heads=model.heads, kv_heads=model.kv,
                head_dim=model.attention_head_dim, ffn_hidden=max(1, round(ffn / L)), gated_ffn=model.gated_ffn, vocab=model.vocab,
                tied_embeddings=model.tied_embeddings, seq_len=model.seq_len, experts=model.experts or 0,
                expert_params_b=(moe_layers * model.experts * model.ffn_params(model.moe_ffn_hidden or 1) / 1e9
                                 if moe_layers else 0))

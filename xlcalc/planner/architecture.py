"""The architecture a plan trains: a transformer reduced to what the step-time model needs.

:func:`arch_from_model` reads a catalog model (dense or MoE, averaging the layers' FFN and parameters);
:func:`arch_from_flags` builds one from its numbers, validated.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import catalog
from ..errors import InputError
from ..inputs import check_value

__all__ = ["Arch", "arch_from_model", "arch_from_flags"]


@dataclass(frozen=True)
class Arch:
    """A transformer architecture reduced to what the step-time model needs."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_hidden: float      # active FFN inner size per layer, averaged over layers (MoE: active experts)
    gated_ffn: bool
    vocab: int
    layer_params: float    # parameters of one layer, averaged over layers (MoE: all experts)
    largest_layer_params: float
    embedding_params: float  # one vocab x hidden table (+ positions)
    tied_embeddings: bool
    params_b: float
    moe: bool = False


def arch_from_model(model: catalog.Model) -> Arch:
    L = model.layers
    embedding = model.vocab * model.hidden + (model.seq_len * model.hidden if model.learned_positions else 0)
    moe_layers = L - model.dense_layers if model.experts else 0
    dense_layers = L - moe_layers
    total_layer_params = dense_layers * model.layer_params(False)
    largest = model.layer_params(False)
    active_ffn = dense_layers * model.ffn_hidden
    if moe_layers:
        total_layer_params += moe_layers * model.layer_params(True)
        largest = max(largest, model.layer_params(True))
        active_ffn += moe_layers * (model.experts_active + model.shared_experts) * (model.moe_ffn_hidden or 0)
    return Arch(
        name=model.name, layers=L, hidden=model.hidden, heads=model.heads, kv_heads=model.kv, head_dim=model.dh,
        ffn_hidden=active_ffn / L, gated_ffn=model.gated_ffn, vocab=model.vocab,
        layer_params=total_layer_params / L, largest_layer_params=largest, embedding_params=embedding,
        tied_embeddings=model.tied_embeddings, params_b=model.params_b, moe=bool(model.experts),
    )


def arch_from_flags(layers: int, hidden: int, heads: int, kv_heads: int | None = None, ffn_hidden: int | None = None,
                    vocab: int = 32000, gated_ffn: bool | None = None, seq_len: int = 2048) -> Arch:
    """An architecture from its numbers (validated; FFN defaults to 4h, or 8h/3 rounded when gated)."""
    layers = check_value("layers", layers)
    hidden = check_value("hidden", hidden)
    heads = check_value("heads", heads)
    kv = check_value("kv_heads", kv_heads if kv_heads is not None else heads)
    vocab = check_value("vocab", vocab)
    if hidden % heads:
        raise InputError("heads", heads, f"a divisor of hidden = {hidden}")
    if heads % kv:
        raise InputError("kv_heads", kv, f"a divisor of heads = {heads}")
    gated = bool(gated_ffn) if gated_ffn is not None else False
    ffn = check_value("ffn_hidden", ffn_hidden if ffn_hidden is not None else 4 * hidden)
    model = catalog.Model(
        id="custom", name=f"custom {layers}x{hidden}", source="architecture flags", layers=layers, hidden=hidden,
        heads=heads, kv_heads=kv, ffn_hidden=ffn, gated_ffn=gated, vocab=vocab, seq_len=seq_len, published_params_b=1,
    )
    return arch_from_model(model)

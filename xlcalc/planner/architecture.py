"""The architecture a plan trains: a transformer reduced to what the step-time model needs.

:func:`arch_from_model` reads a catalog model (dense or MoE, averaging the layers' FFN and parameters);
:func:`arch_from_flags` builds one from its numbers, validated.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import catalog
from ..errors import InputError
from ..recipes import DEFAULT_SEQ_LEN, DEFAULT_VOCAB, MEMORY_DEFAULTS
from ..validate import check_value

__all__ = ["Arch", "arch_from_model", "arch_from_flags", "FLAGS_VOCAB", "FLAGS_SEQ_LEN"]

# What an architecture given by its numbers (no model, no config.json) assumes where it is not given (arch_from_flags;
# plan's and memory's flags and help take them from here).
# the one default vocabulary (xlcalc.recipes.DEFAULT_VOCAB: 32,000, Llama 1/2's, the scenario's too); the memory
# model's FFN (not gated)
FLAGS_VOCAB: int = DEFAULT_VOCAB
FLAGS_GATED_FFN: bool = MEMORY_DEFAULTS["gated_ffn"]
# the one default sequence length of every face (xlcalc.recipes.DEFAULT_SEQ_LEN: 4,096, Llama 2's context)
FLAGS_SEQ_LEN: int = DEFAULT_SEQ_LEN


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
    # attention projections as the step-time model charges them: (heads, kv heads, head size) of a GQA block with
    # the same matmul FLOPs. MHA/GQA: the model's own; MLA: a block of 1 head whose projections have MLA's parameters
    projection_shape: tuple[int, int, int]
    moe: bool = False
    # MoE (0 for a dense model): the 6*N*D convention and MFU count the active parameters
    active_params_b: float = 0.0   # parameters each token uses, billions (dense: params_b)
    experts: int = 0               # routed experts per MoE layer
    experts_active: int = 0        # routed experts each token goes to (top-k)
    moe_layers: int = 0            # layers with routed experts
    expert_params: float = 0.0     # routed-expert parameters of all layers (the part expert parallelism splits)

    @property
    def n_params_b(self) -> float:
        """N of the 6*N*D convention: the active parameters of an MoE, all parameters of a dense model."""
        return self.active_params_b or self.params_b


def arch_from_model(model: catalog.Model) -> Arch:
    L = model.layers
    embedding = model.input_embedding_params()
    moe_layers = L - model.dense_layers if model.experts else 0
    dense_layers = L - moe_layers
    total_layer_params = dense_layers * model.layer_params(False)
    largest = model.layer_params(False)
    active_ffn = dense_layers * model.ffn_hidden
    if moe_layers:
        total_layer_params += moe_layers * model.layer_params(True)
        largest = max(largest, model.layer_params(True))
        active_ffn += moe_layers * (model.experts_active + model.shared_experts) * (model.moe_ffn_hidden or 0)
    expert_params = moe_layers * model.experts * model.ffn_params(model.moe_ffn_hidden or 1) if moe_layers else 0
    # MLA (DeepSeek-V2/V3): the attention core works on q/k heads of nope + rope and v heads of v_head_dim,
    # charged as heads of their mean size (catalog.Model.attention_head_dim, the memory model's head_dim too)
    head_dim = model.attention_head_dim
    proj = (model.heads, model.kv, head_dim)  # MHA/GQA: its own heads
    if model.kv_lora_rank:
        # the projections (low-rank q and kv, output) as one GQA-shaped block of the same parameters: 1 query and
        # 1 kv head of size attention params / (4h)
        proj = (1, 1, max(1, round(model.attention_params() / (4 * model.hidden))))
    return Arch(
        name=model.name, layers=L, hidden=model.hidden, heads=model.heads, kv_heads=model.kv, head_dim=head_dim,
        ffn_hidden=active_ffn / L, gated_ffn=model.gated_ffn, vocab=model.vocab,
        layer_params=total_layer_params / L, largest_layer_params=largest, embedding_params=embedding,
        tied_embeddings=model.tied_embeddings, params_b=model.params_b, moe=bool(model.experts),
        active_params_b=model.active_params_b, experts=model.experts, experts_active=model.experts_active,
        moe_layers=moe_layers, expert_params=expert_params, projection_shape=proj)


def arch_from_flags(layers: int, hidden: int, heads: int, kv_heads: int | None = None, ffn_hidden: int | None = None,
                    vocab: int = FLAGS_VOCAB, gated_ffn: bool | None = None, seq_len: int = FLAGS_SEQ_LEN,
                    head_dim: int | None = None, tied_embeddings: bool = False) -> Arch:
    """An architecture from its numbers (validated; FFN defaults to 4h, or 8h/3 rounded when gated; the head
    dimension to hidden / heads; untied input and output embeddings unless ``tied_embeddings``)."""
    layers, hidden, heads = (check_value(n, x) for n, x in (("layers", layers), ("hidden", hidden), ("heads", heads)))
    kv = check_value("kv_heads", kv_heads if kv_heads is not None else heads)
    vocab = check_value("vocab", vocab)
    head_dim = None if head_dim is None else check_value("head_dim", head_dim)
    if hidden % heads and head_dim is None:
        raise InputError("heads", heads, f"a divisor of hidden = {hidden}")
    if heads % kv:
        raise InputError("kv_heads", kv, f"a divisor of heads = {heads}")
    gated = bool(gated_ffn) if gated_ffn is not None else FLAGS_GATED_FFN
    ffn = check_value("ffn_hidden", ffn_hidden if ffn_hidden is not None else 4 * hidden)
    return arch_from_model(catalog.Model(
        id="custom", name=f"custom {layers}x{hidden}", source="architecture flags", layers=layers, hidden=hidden,
        heads=heads, kv_heads=kv, head_dim=head_dim, ffn_hidden=ffn, gated_ffn=gated, vocab=vocab, seq_len=seq_len,
        tied_embeddings=bool(tied_embeddings), published_params_b=1))

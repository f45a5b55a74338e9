"""Tiny transformer layers in PyTorch, and PyTorch's own count of the bytes they keep for the backward pass.

The layers follow torchtitan's Llama 3 and MoE blocks (the reference implementation of PyTorch's
per-op selective activation checkpointing): RMSNorm (or LayerNorm), separate Q/K/V projections
with grouped-query attention, complex-number RoPE computed in fp32, ``scaled_dot_product_attention``
(FlashAttention-class: no s x s tensor kept) or an unfused attention (scores and softmax in the
open), SwiGLU (or a plain GELU) feed-forward, optional dropout; and a mixture-of-experts
feed-forward with a router (scores in fp32), top-k, capacity-factor dispatch into per-expert buffers
and batched expert matmuls. Everything runs on the CPU in bf16.

A layer built with ``heads / tp`` query heads, ``kv_heads / tp`` key/value heads and ``ffn / tp``
feed-forward columns (``experts_ffn / etp`` per expert) is what one tensor-parallel rank computes
(without sequence parallelism; the all-reduce changes no saved tensor).

Two instruments count the bytes, both deduplicated by *storage*: a tensor saved twice (the norm
output is saved by the Q, K and V projections) or a view of a saved tensor (a split of the
``wkv_b`` output) counts its underlying storage once, at ``untyped_storage().nbytes()``; the
layer's parameters and buffers (weights, RoPE table, causal mask) are not activations and are
left out.

* :func:`saved_tensor_bytes` — ``torch.autograd.graph.saved_tensors_hooks``: every tensor autograd
  packs for the backward pass. This sees everything without checkpointing; with checkpointing the
  checkpoint's own inner hooks hide what they keep, and it sees only the checkpoint's saved inputs.
* :func:`kept_bytes` — every storage an aten op created during the forward (a
  ``TorchDispatchMode`` holds a weak reference to each) that is still alive once the forward's
  locals are gone: what the autograd graph, ``torch.utils.checkpoint`` and the selective
  checkpointing cache keep until the backward. It works for every mode; without checkpointing it
  equals :func:`saved_tensor_bytes` (a test checks that).

Checkpointing modes, as torchtitan applies them to each transformer block:

* ``none`` — plain autograd;
* ``full`` — ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``;
* ``op_selective`` — the same with ``context_fn=create_selective_checkpoint_contexts(policy)`` and
  torchtitan's policy (``torchtitan/distributed/activation_checkpoint.py``, ``SelectiveAC``):
  save the outputs of the compute-intensive ops (``torch._functorch.partitioners
  .get_default_op_list().compute_intensive_ops``: mm, bmm, addmm, the SDPA kernels, ...), of
  ``topk`` and ``max``, recompute every second ``mm`` (the mm counter skips the router's gate,
  which is always recomputed) and everything else. Two substitutions for the CPU: the CPU flash
  kernel ``_scaled_dot_product_flash_attention_for_cpu`` stands in for the CUDA flash kernel of the
  list, and the experts' ``bmm`` over capacity buffers stands in for torchtitan's
  ``torch._grouped_mm``, which is *not* in the list (its backward does not run on the CPU), so the
  harness recomputes expert bmms as torchtitan recomputes grouped mms.
"""

from __future__ import annotations

import gc
import math
import weakref
from dataclasses import dataclass, replace
from functools import cache

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

DTYPE = torch.bfloat16
MODES = ("none", "op_selective", "full")


@dataclass(frozen=True)
class Shape:
    """One layer as one tensor-parallel rank holds it (heads, kv_heads, ffn already divided by tp)."""

    hidden: int = 256
    heads: int = 8
    kv_heads: int = 2
    head_dim: int = 32
    ffn: int = 512
    gated: bool = True
    norm: str = "rms"  # rms | layer
    flash: bool = True
    dropout: float = 0.0
    experts: int = 0  # 0: dense feed-forward
    topk: int = 2
    capacity_factor: float = 1.0
    experts_ffn: int = 128
    kv_lora_rank: int = 0  # > 0: DeepSeek's multi-head latent attention (MLA)
    q_lora_rank: int = 0
    rope_dim: int = 16
    nope_dim: int = 16
    v_dim: int = 32  # = nope_dim + rope_dim: the CPU flash kernel needs one head size for q, k and v


# --- blocks -----------------------------------------------------------------------------------

class _FusedRMSNormFn(torch.autograd.Function):
    """RMSNorm saving what the fused GPU kernel saves: PyTorch's ``FusedRmsNormBackward0`` node
    keeps ``_saved_input``, ``_saved_result1`` (the fp32 reciprocal RMS per token) and the weight. (On the CPU ``F.rms_norm`` decomposes into
    fp32 elementwise ops that keep fp32 copies; the GPU kernel does not.)"""

    @staticmethod
    def forward(ctx, x, weight, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        y = (xf * rstd).to(x.dtype) * weight
        ctx.save_for_backward(x, rstd, weight)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, rstd, weight = ctx.saved_tensors
        xf, gf = x.float(), (gy * weight).float()
        xhat = xf * rstd
        gx = rstd * (gf - xhat * (gf * xhat).mean(-1, keepdim=True))
        gw = (gy.float() * xhat).sum(dim=tuple(range(gy.dim() - 1)))
        return gx.to(x.dtype), gw.to(weight.dtype), None


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, dtype=DTYPE))
        self.eps = eps

    def forward(self, x):
        return _FusedRMSNormFn.apply(x, self.weight, self.eps)


def _norm(kind: str, dim: int) -> nn.Module:
    if kind == "rms":
        return RMSNorm(dim)
    return nn.LayerNorm(dim, dtype=DTYPE)


def _rope_table(seq: int, head_dim: int, theta: float = 500000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(seq).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)  # complex64 [seq, head_dim/2]


def _apply_rope(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """torchtitan's complex RoPE: fp32 complex multiply, result cast back to the input dtype."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * table[None, : x.shape[1], None, :]).flatten(-2)
    return out.type_as(x)


def _dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Dropout as the GPU runs it: ``native_dropout`` keeps a 1-byte bool mask. (On the CPU
    ``F.dropout`` takes another path that keeps the mask in the input's dtype.)"""
    if not training or p == 0:
        return x
    return torch.native_dropout(x, p, True)[0]


class Attention(nn.Module):
    def __init__(self, s: Shape, max_seq: int):
        super().__init__()
        self.s = s
        h, a, k, d = s.hidden, s.heads, s.kv_heads, s.head_dim
        self.wq = nn.Linear(h, a * d, bias=False, dtype=DTYPE)
        self.wk = nn.Linear(h, k * d, bias=False, dtype=DTYPE)
        self.wv = nn.Linear(h, k * d, bias=False, dtype=DTYPE)
        self.wo = nn.Linear(a * d, h, bias=False, dtype=DTYPE)
        self.register_buffer("rope", _rope_table(max_seq, d), persistent=False)
        self.register_buffer("causal", torch.ones(max_seq, max_seq, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x):
        s = self.s
        b, n, _ = x.shape
        q = self.wq(x).view(b, n, s.heads, s.head_dim)
        k = self.wk(x).view(b, n, s.kv_heads, s.head_dim)
        v = self.wv(x).view(b, n, s.kv_heads, s.head_dim)
        q, k = _apply_rope(q, self.rope), _apply_rope(k, self.rope)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if s.flash:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=s.heads != s.kv_heads,
                                               dropout_p=s.dropout if self.training else 0.0)
        else:  # unfused: scores, mask, softmax, dropout and the weighted sum in the open
            rep = s.heads // s.kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(s.head_dim))
            scores = scores.masked_fill(self.causal[:n, :n], float("-inf"))
            probs = _dropout(torch.softmax(scores, dim=-1), s.dropout, self.training)
            o = probs @ v
        o = o.transpose(1, 2).contiguous().view(b, n, s.heads * s.head_dim)
        return _dropout(self.wo(o), s.dropout, self.training)


class MLA(nn.Module):
    """DeepSeek-V3's multi-head latent attention in torchtitan's order of matmuls:
    (wq | wq_a, q_norm, wq_b), wkv_a, kv_norm, wkv_b, wo."""

    def __init__(self, s: Shape, max_seq: int):
        super().__init__()
        self.s = s
        h, a, dq = s.hidden, s.heads, s.nope_dim + s.rope_dim
        if s.q_lora_rank:
            self.wq_a = nn.Linear(h, s.q_lora_rank, bias=False, dtype=DTYPE)
            self.q_norm = RMSNorm(s.q_lora_rank)
            self.wq_b = nn.Linear(s.q_lora_rank, a * dq, bias=False, dtype=DTYPE)
        else:
            self.wq = nn.Linear(h, a * dq, bias=False, dtype=DTYPE)
        self.wkv_a = nn.Linear(h, s.kv_lora_rank + s.rope_dim, bias=False, dtype=DTYPE)
        self.kv_norm = RMSNorm(s.kv_lora_rank)
        self.wkv_b = nn.Linear(s.kv_lora_rank, a * (s.nope_dim + s.v_dim), bias=False, dtype=DTYPE)
        self.wo = nn.Linear(a * s.v_dim, h, bias=False, dtype=DTYPE)
        self.register_buffer("rope", _rope_table(max_seq, s.rope_dim), persistent=False)

    def forward(self, x):
        s = self.s
        b, n, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))) if s.q_lora_rank else self.wq(x)
        q_nope, q_pe = torch.split(q.view(b, n, s.heads, -1), [s.nope_dim, s.rope_dim], dim=-1)
        kv, k_pe = torch.split(self.wkv_a(x), [s.kv_lora_rank, s.rope_dim], dim=-1)
        q_pe, k_pe = _apply_rope(q_pe, self.rope), _apply_rope(k_pe.unsqueeze(2), self.rope)
        q = torch.cat([q_nope, q_pe], dim=-1)
        kv = self.wkv_b(self.kv_norm(kv)).view(b, n, s.heads, s.nope_dim + s.v_dim)
        k_nope, v = torch.split(kv, [s.nope_dim, s.v_dim], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, s.heads, -1)], dim=-1)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        o = o.transpose(1, 2).contiguous().view(b, n, s.heads * s.v_dim)
        return _dropout(self.wo(o), s.dropout, self.training)


class FeedForward(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        self.w1 = nn.Linear(s.hidden, s.ffn, bias=False, dtype=DTYPE)
        if s.gated:
            self.w3 = nn.Linear(s.hidden, s.ffn, bias=False, dtype=DTYPE)
        self.w2 = nn.Linear(s.ffn, s.hidden, bias=False, dtype=DTYPE)

    def forward(self, x):
        if self.s.gated:
            y = self.w2(F.silu(self.w1(x)) * self.w3(x))
        else:
            y = self.w2(F.gelu(self.w1(x)))
        return _dropout(y, self.s.dropout, self.training)


class MoE(nn.Module):
    """Router (fp32 scores, sigmoid), top-k, dispatch into per-expert buffers of
    ``ceil(capacity_factor * tokens * topk / experts)`` rows (overflow dropped, gaps zero),
    batched SwiGLU experts, weighted combine (``scatter_add``, as torchtitan's unpermute)."""

    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        e, h, f = s.experts, s.hidden, s.experts_ffn
        self.gate = nn.Linear(h, e, bias=False, dtype=torch.float32)  # router weights and scores in fp32
        self.w1 = nn.Parameter(torch.randn(e, h, f, dtype=DTYPE) / math.sqrt(h))
        self.w3 = nn.Parameter(torch.randn(e, h, f, dtype=DTYPE) / math.sqrt(h))
        self.w2 = nn.Parameter(torch.randn(e, f, h, dtype=DTYPE) / math.sqrt(f))

    def capacity(self, tokens: int) -> int:
        s = self.s
        return math.ceil(s.capacity_factor * tokens * s.topk / s.experts)

    def forward(self, x):
        s = self.s
        shape = x.shape
        x = x.reshape(-1, s.hidden)
        t, e, k = x.shape[0], s.experts, s.topk
        scores = torch.sigmoid(self.gate(x.float()))  # [t, e] fp32
        top_scores, top_idx = torch.topk(scores, k, dim=-1)  # [t, k]
        cap = self.capacity(t)
        with torch.no_grad():  # positions of each (token, slot) in its expert's buffer
            flat = top_idx.reshape(-1)
            onehot = F.one_hot(flat, e)
            pos = ((onehot.cumsum(0) - 1) * onehot).sum(-1)
            keep = pos < cap
            slot = (flat * cap + pos)[keep]
            token = torch.arange(t).repeat_interleave(k)[keep]
        buf = x.new_zeros(e * cap, s.hidden).index_put((slot,), x[token])
        hx = buf.view(e, cap, s.hidden)
        y = torch.bmm(F.silu(torch.bmm(hx, self.w1)) * torch.bmm(hx, self.w3), self.w2)
        rows = y.view(e * cap, s.hidden)[slot] * top_scores.reshape(-1)[keep].unsqueeze(-1).to(x.dtype)
        out = x.new_zeros(t, s.hidden).scatter_add(0, token.unsqueeze(-1).expand(-1, s.hidden), rows)
        return _dropout(out.view(shape), s.dropout, self.training)


class Layer(nn.Module):
    """A pre-norm decoder layer: x + attention(norm(x)), then + ffn(norm(.)) (dense or MoE)."""

    def __init__(self, s: Shape, max_seq: int = 1024):
        super().__init__()
        self.attention_norm = _norm(s.norm, s.hidden)
        self.attention = MLA(s, max_seq) if s.kv_lora_rank else Attention(s, max_seq)
        self.ffn_norm = _norm(s.norm, s.hidden)
        self.ffn = MoE(s) if s.experts else FeedForward(s)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.ffn(self.ffn_norm(h))


def make_layer(shape: Shape, max_seq: int = 1024, seed: int = 0) -> Layer:
    torch.manual_seed(seed)
    layer = Layer(shape, max_seq)
    with torch.no_grad():
        for p in layer.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
    return layer.train()


# --- the shapes the tests and docs/activations.md compare ---------------------------------------

BASE = Shape()  # h 256, 8 heads, 2 KV heads, head 32, SwiGLU 512, RMSNorm, flash
MOE_SHAPE = replace(BASE, experts=8, topk=2, experts_ffn=128)
MLA_SHAPE = replace(BASE, kv_lora_rank=64, q_lora_rank=96)

# name -> (the whole layer's shape, tp, etp): the harness builds what one rank holds
CASES = {
    "llama-gqa": (BASE, 1, 1),
    "llama-gqa-tp2": (BASE, 2, 1),
    "llama-gqa-tp4-kv-replicated": (BASE, 4, 1),  # 2 KV heads over 4 ranks: each keeps one
    "llama-mha": (replace(BASE, kv_heads=8), 1, 1),
    "llama-unfused-attention": (replace(BASE, flash=False), 1, 1),
    "gpt-layernorm-gelu-dropout-unfused": (replace(BASE, kv_heads=8, gated=False, norm="layer", flash=False,
                                                   dropout=0.1, ffn=1024), 1, 1),
    "gpt-tp2": (replace(BASE, kv_heads=8, gated=False, norm="layer", flash=False, dropout=0.1, ffn=1024), 2, 1),
    "moe-top2": (MOE_SHAPE, 1, 1),
    "moe-top1-capacity-1.25": (replace(MOE_SHAPE, topk=1, capacity_factor=1.25), 1, 1),
    "moe-tp2-etp2": (MOE_SHAPE, 2, 2),
    "mla-q-lora": (MLA_SHAPE, 1, 1),
    "mla-no-q-lora": (replace(MLA_SHAPE, q_lora_rank=0), 1, 1),
    "mla-q-lora-moe-tp2": (replace(MLA_SHAPE, experts=8, topk=2, experts_ffn=128), 2, 1),
}
SIZES = [(64, 1), (128, 2)]  # (sequence length, micro-batch)


def local_shape(shape: Shape, tp: int, etp: int) -> Shape:
    """What one tensor-parallel rank computes."""
    return replace(shape, heads=shape.heads // tp, kv_heads=max(shape.kv_heads // tp, 1), ffn=shape.ffn // tp,
                   experts_ffn=shape.experts_ffn // etp)


def formula_bytes(shape: Shape, tp: int, etp: int, seq: int, batch: int, mode: str) -> float:
    from xlcalc.formulas.activations import layer_activation_bytes

    return layer_activation_bytes(
        seq, batch, shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, shape.ffn,
        gated_ffn=shape.gated, norm_type="layernorm" if shape.norm == "layer" else "rmsnorm",
        flash_attention=shape.flash, dropout=shape.dropout > 0, tp=tp, recompute=mode,
        experts=shape.experts, topk=shape.topk, capacity_factor=shape.capacity_factor,
        expert_ffn_hidden=shape.experts_ffn, etp=etp, q_lora_rank=shape.q_lora_rank,
        kv_lora_rank=shape.kv_lora_rank, qk_rope_head_dim=shape.rope_dim, qk_nope_head_dim=shape.nope_dim,
        v_head_dim=shape.v_dim,
    )


# --- checkpointing ------------------------------------------------------------------------------

@cache
def _save_ops() -> frozenset:
    from torch._functorch.partitioners import get_default_op_list

    ops = {op.default for op in get_default_op_list().compute_intensive_ops}
    ops |= {
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,  # CPU stand-in for the CUDA flash op
        torch.ops.aten._scaled_dot_product_attention_math.default,
        torch.ops.aten.max.default,
        torch.ops.aten.linear.default,
        torch.ops.aten.topk.default,
    }
    return frozenset(ops)


def torchtitan_policy(layer: Layer):
    """torchtitan's ``SelectiveAC`` policy for one block (a fresh mm counter per forward)."""
    save_ops = _save_ops()
    mm_ops = (torch.ops.aten.mm.default, torch.ops.aten.linear.default)
    forced = set()
    experts: set[int] = set()
    if isinstance(layer.ffn, MoE):  # force_recompute_mm_shapes_by_fqns = ["moe.router.gate"]
        out_f, in_f = layer.ffn.gate.weight.shape
        forced.add((in_f, out_f))
        # the experts' bmm stands in for torchtitan's torch._grouped_mm, which is not saved
        experts = {w.untyped_storage().data_ptr() for w in (layer.ffn.w1, layer.ffn.w2, layer.ffn.w3)}
    meta = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.bmm.default and args[1].untyped_storage().data_ptr() in experts:
            return CheckpointPolicy.PREFER_RECOMPUTE
        if func in mm_ops:
            shape = tuple(args[1].shape)
            if func == torch.ops.aten.linear.default:
                shape = shape[::-1]
            if shape in forced:
                return CheckpointPolicy.PREFER_RECOMPUTE
            meta[key] += 1
        if func in save_ops:
            if func in mm_ops and meta[key] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def run(layer: Layer, x: torch.Tensor, mode: str) -> torch.Tensor:
    if mode == "none":
        return layer(x)
    if mode == "full":
        return checkpoint(layer, x, use_reentrant=False)
    if mode == "op_selective":
        return checkpoint(layer, x, use_reentrant=False,
                          context_fn=lambda: create_selective_checkpoint_contexts(torchtitan_policy(layer)))
    raise ValueError(f"unknown checkpointing mode {mode!r}")


# --- counting -----------------------------------------------------------------------------------

def _excluded(layer: nn.Module) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in [*layer.parameters(), *layer.buffers()]}


class _StorageTracker(TorchDispatchMode):
    """Weak references to the storage of every tensor an aten op returns."""

    def __init__(self):
        super().__init__()
        self.refs: dict[int, tuple[weakref.ref, str]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                known = self.refs.get(id(st))
                if known is None or known[0]() is not st:  # ids of dead storages are reused
                    self.refs[id(st)] = (weakref.ref(st), str(func))
        return out


def _input(shape: Shape, batch: int, seq: int, seed: int = 1) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randn(batch, seq, shape.hidden, dtype=DTYPE, requires_grad=True)


def kept_bytes(layer: Layer, batch: int, seq: int, mode: str, detail: bool = False, backward: bool = False):
    """Bytes of the storages created in the forward that stay alive for the backward (unique storages).

    The layer's input is made inside the count (a ``clone`` of a leaf, which saves nothing) so
    that it counts when the layer keeps it; the layer's output does not count (the next layer
    keeps it). Returns the byte count, or with ``detail`` a list of (bytes, op that made it); with
    ``backward`` the backward pass runs too (a check that the graph is whole).
    """
    x0 = _input(layer.attention.s, batch, seq)
    excluded = _excluded(layer)
    tracker = _StorageTracker()
    with tracker:
        x = x0.clone()
        out = run(layer, x, mode)
    del x
    gc.collect(0)  # the young generation only: the forward makes no long-lived cycles, and a full collection is slow
    out_ptr = out.untyped_storage().data_ptr()
    kept = []
    for ref, op in tracker.refs.values():
        st = ref()
        if st is None or st.data_ptr() in excluded or st.data_ptr() == out_ptr or st.nbytes() == 0:
            continue
        kept.append((st.nbytes(), op))
    if backward:
        out.float().sum().backward()
    return sorted(kept, reverse=True) if detail else sum(n for n, _ in kept)


class _PeakTracker(_StorageTracker):
    """Also the largest sum of live tracked storages seen after any op while ``on``."""

    def __init__(self, excluded: set[int]):
        super().__init__()
        self.excluded, self.peak, self.on = excluded, 0, False

    def live(self) -> int:
        total = 0
        for ref, _ in self.refs.values():
            st = ref()
            if st is not None and st.data_ptr() not in self.excluded:
                total += st.nbytes()
        return total

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if self.on:
            self.peak = max(self.peak, self.live())
        return out


def backward_peak_bytes(layer: Layer, batch: int, seq: int, mode: str) -> int:
    """The most bytes alive at once during the layer's backward: kept tensors, recomputed tensors,
    gradients (parameter storages left out). With recomputation the backward first rebuilds what the
    forward did not keep, so the peak shows the recompute working set on top of the kept bytes."""
    x0 = _input(layer.attention.s, batch, seq)
    tracker = _PeakTracker(_excluded(layer))
    with tracker:
        x = x0.clone()
        out = run(layer, x, mode)
        del x
        gc.collect(0)
        tracker.on = True
        out.backward(torch.ones_like(out))
    return tracker.peak


def saved_tensor_bytes(layer: Layer, batch: int, seq: int, mode: str = "none") -> int:
    """Unique storage bytes of the tensors autograd packs (``saved_tensors_hooks``)."""
    x0 = _input(layer.attention.s, batch, seq)
    excluded = _excluded(layer)
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in excluded:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run(layer, x0.clone(), mode)
    return sum(seen.values())

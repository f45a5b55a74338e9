"""Activation bytes of one transformer layer on one GPU, for today's blocks, per recompute mode.

What one layer keeps between its forward and its backward pass, counted tensor by tensor
(docs/activations.md writes every tensor out and compares with PyTorch's own count):

* attention: grouped-query (``kv_heads``) or DeepSeek's multi-head latent attention (MLA:
  ``q_lora_rank``, ``kv_lora_rank``, rope/nope head dims), FlashAttention-class (no s x s tensor,
  a 4-byte log-sum-exp per head and token) or unfused (scores, softmax, dropout in the open);
* feed-forward: SwiGLU (``gated_ffn``) or plain, or a mixture of experts (router in fp32, top-k,
  per-expert buffers of ``capacity_factor x tokens x k / experts`` rows, shared experts), with
  expert parallelism (``ep``: the same rows per GPU on average) and expert tensor parallelism
  (``etp``: each expert's inner size split);
* RMSNorm (keeps its input and a 4-byte 1/rms per token) or LayerNorm (mean and 1/std, 8 bytes);
* tensor parallelism ``tp`` with or without sequence parallelism (the norm/residual/dropout
  region split over tp, as Korthikanti et al. 2022 count it), context parallelism ``cp`` (every
  tensor holds s/cp tokens; unfused scores are (s/cp) x s per head), 16-bit activations with
  ``linear_input_bytes`` for what linear layers keep as inputs (1 for FP8 as Transformer Engine
  keeps them).

Recompute modes (``recompute``):

* ``none`` — everything autograd saves;
* ``selective`` — Megatron's selective recomputation (Korthikanti et al. 2022 §5): the attention
  core (QK^T, softmax, dropout, attention over V) is recomputed, so its s x s tensors (or the
  flash log-sum-exp) are not kept; its inputs q, k, v and its output are;
* ``op_selective`` — PyTorch's per-op selective activation checkpointing with torchtitan's policy
  (``torchtitan/distributed/activation_checkpoint.py``, ``SelectiveAC``; ``_save_list`` in older
  versions): inside a checkpointed block, the outputs of compute-intensive ops (mm, bmm, addmm and
  the SDPA/flash kernels), of ``topk`` and of the reduce-scatter and all-to-all collectives are
  saved and everything else is recomputed — except that every second ``mm`` (2nd, 4th, ...) is
  recomputed too, and the MoE router's gate mm is always recomputed without counting. So a
  Llama block (wq, wk, wv, wo, w1, w3, w2) saves the outputs of wq, wv, the attention kernel
  (output and log-sum-exp), w1 and w2, plus the block input that the checkpoint keeps; routed
  experts run as ``torch._grouped_mm``, which is not on the list, so they are recomputed;
* ``full`` — the checkpoint keeps only the layer input (2 bytes per element; / tp with sequence
  parallelism). During the backward one layer is recomputed and its activations live at once:
  :func:`act_recompute_working_bytes`.
"""

from __future__ import annotations

from ..errors import InputError
from ..expr.functions import and_, eq, if_, max_
from ..recipes import MEMORY_DEFAULTS as _D  # every input's default, declared once: the signatures read it
from ..registry import REGISTRY, formula

_SRC = ("Korthikanti et al. 2022 (arXiv 2205.05198) Table 2 and §4-5 for MHA/GELU/LayerNorm/TP/SP; "
        "tensor-by-tensor count of today's blocks in docs/activations.md, checked against PyTorch's saved tensors")


def _check_layout(*, heads=1, kv_heads=None, tp=1, experts=0, ep=1, topk=1, kv_lora_rank=0, qk_rope_head_dim=0,
                  qk_nope_head_dim=0, v_head_dim=0, **_):
    if heads % tp:
        raise InputError("tp", tp, f"a divisor of heads = {heads}", "tensor parallelism splits whole attention heads")
    if kv_heads is not None and (kv_heads % tp if kv_heads >= tp else tp % kv_heads):
        raise InputError("kv_heads", kv_heads, f"a multiple or a divisor of tp = {tp}",
                         "tensor parallelism splits whole key/value heads or replicates them")
    if experts and experts % ep:
        raise InputError("ep", ep, f"a divisor of experts = {experts}", "expert parallelism splits whole experts")
    if experts and topk > experts:
        raise InputError("topk", topk, f"at most experts = {experts}")
    if kv_lora_rank and not (qk_rope_head_dim and qk_nope_head_dim and v_head_dim):
        missing = [n for n, v in (("qk_rope_head_dim", qk_rope_head_dim), ("qk_nope_head_dim", qk_nope_head_dim),
                                  ("v_head_dim", v_head_dim)) if not v]
        raise InputError(missing[0], 0, "a whole number >= 1 for MLA (kv_lora_rank > 0)",
                         "MLA needs " + ", ".join(missing))


@formula(
    udf="ACT_ATTENTION_BYTES", unit="bytes per layer", category="activations",
    equation="T = s*b/cp, a = heads/t, k = max(kv/t, 1), r = 1/t with SP else 1, n = 4 (RMSNorm) or 8 (LayerNorm); "
             "none (GQA, flash): T*[r*(2h + n + l*h + h if dropout) + 2a*d + 4k*d + 2a*d + 4a]; unfused: 2a*s "
             "(5a*s with dropout) for 4a, k = a; MLA: docs/activations.md; selective: without 4a or 2a*s; "
             "op_selective: T*[2h*r + 2a*d + 2k*d + 2a*d + 4a (+2h/t SP with TP > 1)]; full: 2T*h*r",
    source=_SRC, check=_check_layout,
)
def act_attention_bytes(seq_len, micro_batch, hidden, heads, kv_heads, head_dim, norm_type="rmsnorm",
                        flash_attention=_D["flash_attention"], dropout=False, tp=_D["tp"], seq_parallel=_D["seq_parallel"], cp=_D["cp"], recompute=_D["recompute"],
                        linear_input_bytes=2, q_lora_rank=0, kv_lora_rank=0, qk_rope_head_dim=0,
                        qk_nope_head_dim=0, v_head_dim=0):
    """Activation bytes of the attention half of one layer (its norm, projections, core, residual input).

    Per token on one GPU (T = s*b/cp tokens; a = heads/t, k = max(kv_heads/t, 1) key/value heads,
    d = head_dim, r = 1/t with sequence parallelism else 1, l = linear_input_bytes):

    none — layer input 2h*r (kept by the norm), norm statistics 4*r (RMSNorm) or 8*r (LayerNorm),
    norm output l*h*r (kept by the Q/K/V projections), q 2*a*d and k 2*k*d after RoPE, v 2*k*d,
    attention output 2*a*d (kept by the kernel and by wo; with l < 2 wo keeps its own l*a*d copy),
    and the core: flash 4*a (fp32 log-sum-exp); unfused 2*a*S (softmax output, S = s keys; k and v
    repeated to a heads) or 5*a*S with dropout (+ 1-byte mask, + 2-byte dropped probabilities);
    dropout after wo keeps a 1-byte mask h*r.
    MLA — instead of q, k, v: the q down-projection 2*qr + 4 + l*qr (kept by q_norm and wq_b;
    only when q_lora_rank > 0), the kv down-projection output 2*(kvr + dr) (kv_norm keeps a view of
    it) + 4 + l*kvr, q and k 2*a*(dn + dr) each, and wkv_b's output 2*a*(dn + dv) (v is a view of
    it); the attention output is 2*a*dv.
    selective — none without the core's 4*a or 2*a*S/5*a*S.
    op_selective — layer input 2h*r, then the outputs of saved ops: GQA wq 2*a*d and wv 2*k*d;
    MLA with q_lora_rank: wq_a 2*qr, wkv_a 2*(kvr + dr), wo 2h (5 mms: odd ones saved); MLA
    without: wq 2*a*(dn + dr), wkv_b 2*a*(dn + dv); attention output 2*a*d plus flash 4*a or the
    unfused QK^T 2*a*S; with sequence parallelism (TP > 1) the reduce-scatter after wo 2h/t.
    full — layer input 2h*r.
    """
    t = seq_len * micro_batch / cp
    r = if_(seq_parallel, 1 / tp, 1)
    a = heads / tp
    kv = max_(kv_heads / tp, 1)
    keys = seq_len  # keys each query attends to (all s, also under context parallelism)
    mla = kv_lora_rank > 0
    qlora = and_(mla, q_lora_rank > 0)
    stats = if_(eq(norm_type, "layernorm"), 8, 4)
    d_out = if_(mla, v_head_dim, head_dim)
    out = 2 * a * d_out + if_(linear_input_bytes < 2, linear_input_bytes * a * d_out, 0)
    core = if_(flash_attention, 4 * a, if_(dropout, 5, 2) * a * keys)
    qkv_gqa = 2 * a * head_dim + if_(flash_attention, 4 * kv * head_dim, 4 * a * head_dim)
    dq = qk_nope_head_dim + qk_rope_head_dim
    qkv_mla = (if_(qlora, (2 + linear_input_bytes) * q_lora_rank + 4, 0)
               + 2 * (kv_lora_rank + qk_rope_head_dim) + 4 + linear_input_bytes * kv_lora_rank
               + 4 * a * dq + 2 * a * (qk_nope_head_dim + v_head_dim))
    region = r * (2 * hidden + stats + linear_input_bytes * hidden + if_(dropout, hidden, 0))
    kept = region + if_(mla, qkv_mla, qkv_gqa) + out
    # op_selective: mm outputs at odd positions, the attention kernel's outputs, reduce-scatter outputs
    saved_mm = if_(mla,
                   if_(qlora, 2 * q_lora_rank + 2 * (kv_lora_rank + qk_rope_head_dim) + 2 * hidden,
                       2 * a * dq + 2 * a * (qk_nope_head_dim + v_head_dim)),
                   2 * a * head_dim + 2 * kv * head_dim)
    core_saved = 2 * a * d_out + if_(flash_attention, 4 * a, 2 * a * keys)
    op_sel = 2 * hidden * r + saved_mm + core_saved + if_(and_(seq_parallel, tp > 1), 2 * hidden / tp, 0)
    per_token = if_(eq(recompute, "full"), 2 * hidden * r,
                    if_(eq(recompute, "op_selective"), op_sel,
                        if_(eq(recompute, "selective"), kept, kept + core)))
    return t * per_token


@formula(
    udf="ACT_FFN_BYTES", unit="bytes per layer", category="activations",
    equation=(
        "T = s*b/cp, F = ffn/t, r = 1/t with SP; none and selective: T*[r*(2h + n + l*h + h if dropout) + "
        "(6 + l)F gated or (2 + l)F plain]; op_selective: T*[gated 2F + 2h, plain 2F (after 4 attention mms; "
        "after 5: gated 2F, plain 2h) + 2h/t with SP and TP > 1]; full: 0 (the layer input is counted with attention)"
    ),
    source=_SRC,
)
def act_ffn_bytes(seq_len, micro_batch, hidden, ffn_hidden, gated_ffn=_D["gated_ffn"], norm_type="rmsnorm", dropout=False,
                  tp=_D["tp"], seq_parallel=_D["seq_parallel"], cp=_D["cp"], recompute=_D["recompute"], linear_input_bytes=2, q_lora_rank=0,
                  kv_lora_rank=0):
    """Activation bytes of the dense feed-forward half of one layer (its norm, its input, the FFN).

    Per token (F = ffn_hidden/t, r and l as in ACT_ATTENTION_BYTES):
    none/selective — norm input 2h*r, statistics 4*r or 8*r, norm output l*h*r (kept by w1 and w3),
    SwiGLU: w1 output 2F (kept by SiLU), SiLU output 2F and w3 output 2F (kept by the product),
    product l*F (kept by w2): (6 + l)F; plain: w1 output 2F (kept by the activation), activation
    output l*F: (2 + l)F; dropout keeps a 1-byte mask h*r.
    op_selective — the FFN's mms continue the block's count: after an even number of attention mms
    (GQA: 4; MLA without q_lora_rank: 4) w1 (5th) and w2 (7th) of SwiGLU are saved: 2F + 2h;
    plain: w1 2F. After an odd number (MLA with q_lora_rank: 5) SwiGLU saves w3 2F, plain w2 2h.
    With sequence parallelism (TP > 1) the reduce-scatter after w2 adds 2h/t.
    full — nothing beyond the layer input (counted in ACT_ATTENTION_BYTES).
    """
    t = seq_len * micro_batch / cp
    r = if_(seq_parallel, 1 / tp, 1)
    f = ffn_hidden / tp
    stats = if_(eq(norm_type, "layernorm"), 8, 4)
    inner = if_(gated_ffn, (6 + linear_input_bytes) * f, (2 + linear_input_bytes) * f)
    kept = r * (2 * hidden + stats + linear_input_bytes * hidden + if_(dropout, hidden, 0)) + inner
    odd = and_(kv_lora_rank > 0, q_lora_rank > 0)  # attention ran 5 mms: the FFN's first mm is recomputed
    saved = if_(gated_ffn, if_(odd, 2 * f, 2 * f + 2 * hidden), if_(odd, 2 * hidden, 2 * f))
    op_sel = saved + if_(and_(seq_parallel, tp > 1), 2 * hidden / tp, 0)
    per_token = if_(eq(recompute, "full"), 0, if_(eq(recompute, "op_selective"), op_sel, kept))
    return t * per_token


@formula(
    udf="ACT_MOE_BYTES", unit="bytes per layer", category="activations",
    equation=(
        "T = s*b/cp, R = c*k rows per token; none: T*[r*(2h + n) + 4h + 4E + 27k + 2k*h + R*(l*h + (6 + l)*Fe/etp) "
        "+ shared (l*h + (6 + l)*Fs/t)]; op_selective: T*[12k + (ep > 1: 2R*h + 2k*h) + shared saved mms]; full: 0"
    ),
    source=_SRC, check=_check_layout,
)
def act_moe_bytes(seq_len, micro_batch, hidden, experts, topk, expert_ffn_hidden, capacity_factor=1,
                  shared_ffn_hidden=0, norm_type="rmsnorm", dropout=False, tp=_D["tp"], seq_parallel=_D["seq_parallel"], cp=_D["cp"], ep=1,
                  etp=1, recompute=_D["recompute"], linear_input_bytes=2, q_lora_rank=0, kv_lora_rank=0):
    """Activation bytes of a mixture-of-experts feed-forward half of one layer.

    Per token (E experts, k = topk, c = capacity_factor, R = c*k expert-buffer rows per token — on
    one GPU also under expert parallelism: ep GPUs each hold E/ep experts and receive ep times
    the tokens' share; Fe = expert_ffn_hidden/etp; Fs = shared_ffn_hidden/t):
    none/selective — norm input 2h*r and statistics, the router's fp32 copy of its input 4h and
    its fp32 scores 4E, routing metadata 27k (top-k indices 8k, two int64 index lists for dispatch
    and combine 16k, a 1-byte keep mask k, bf16 gate weights 2k), the expert buffers R*(l*h) (kept
    by the first expert matmuls) and per row the SwiGLU (6 + l)*Fe, the expert outputs gathered
    back per token and slot 2k*h (kept by the gate-weight product), and shared experts like a
    dense SwiGLU: l*h + (6 + l)*Fs.
    op_selective — top-k values and indices 12k; with ep > 1 the all-to-all outputs (dispatch 2R*h,
    combine 2k*h); the router gate and the grouped expert matmuls are recomputed; shared experts'
    mms continue the block's mm count (after 4 attention mms: w1 2Fs and w2 2h saved).
    full — nothing beyond the layer input (counted in ACT_ATTENTION_BYTES).
    """
    t = seq_len * micro_batch / cp
    r = if_(seq_parallel, 1 / tp, 1)
    stats = if_(eq(norm_type, "layernorm"), 8, 4)
    rows = capacity_factor * topk
    fe = expert_ffn_hidden / etp
    fs = shared_ffn_hidden / tp
    shared = if_(shared_ffn_hidden > 0, linear_input_bytes * hidden * r + (6 + linear_input_bytes) * fs, 0)
    kept = (r * (2 * hidden + stats + if_(dropout, hidden, 0)) + 4 * hidden + 4 * experts + 27 * topk
            + 2 * topk * hidden + rows * (linear_input_bytes * hidden + (6 + linear_input_bytes) * fe) + shared)
    odd = and_(kv_lora_rank > 0, q_lora_rank > 0)
    shared_saved = if_(shared_ffn_hidden > 0, if_(odd, 2 * fs, 2 * fs + 2 * hidden), 0)
    op_sel = 12 * topk + if_(ep > 1, 2 * rows * hidden + 2 * topk * hidden, 0) + shared_saved
    per_token = if_(eq(recompute, "full"), 0, if_(eq(recompute, "op_selective"), op_sel, kept))
    return t * per_token


@formula(
    udf="LAYER_ACTIVATION_BYTES", unit="bytes per layer", category="activations",
    equation="ACT_ATTENTION_BYTES + (ACT_MOE_BYTES if experts > 0 else ACT_FFN_BYTES), per recompute mode",
    source=_SRC, check=_check_layout,
)
def layer_activation_bytes(seq_len, micro_batch, hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn=_D["gated_ffn"],
                           norm_type="rmsnorm", flash_attention=_D["flash_attention"], dropout=False, tp=_D["tp"], seq_parallel=_D["seq_parallel"], cp=_D["cp"],
                           recompute=_D["recompute"], linear_input_bytes=2, experts=0, topk=1, capacity_factor=1,
                           expert_ffn_hidden=0, shared_ffn_hidden=0, ep=1, etp=1, q_lora_rank=0, kv_lora_rank=0,
                           qk_rope_head_dim=0, qk_nope_head_dim=0, v_head_dim=0):
    """Activation bytes one transformer layer keeps for its backward pass on one GPU (one micro-batch).

    The layer is pre-norm: x + attention(norm(x)), then + feed-forward(norm(.)); the feed-forward is
    dense (ffn_hidden, SwiGLU or plain) or, with experts > 0, a mixture of experts. See
    ACT_ATTENTION_BYTES, ACT_FFN_BYTES and ACT_MOE_BYTES for the tensors, and the module docs for
    the recompute modes. With Korthikanti et al.'s GPT (MHA, plain FFN of 4h, LayerNorm, dropout,
    no flash) it is their Table 2 (sbh(34 + 5as/h), 34/t with SP, ...) plus the small per-token
    norm statistics they leave out.
    """
    attention = act_attention_bytes(seq_len, micro_batch, hidden, heads, kv_heads, head_dim, norm_type,
                                    flash_attention, dropout, tp, seq_parallel, cp, recompute, linear_input_bytes,
                                    q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim)
    dense = act_ffn_bytes(seq_len, micro_batch, hidden, ffn_hidden, gated_ffn, norm_type, dropout, tp, seq_parallel,
                          cp, recompute, linear_input_bytes, q_lora_rank, kv_lora_rank)
    moe = act_moe_bytes(seq_len, micro_batch, hidden, experts, topk, expert_ffn_hidden, capacity_factor,
                        shared_ffn_hidden, norm_type, dropout, tp, seq_parallel, cp, ep, etp, recompute,
                        linear_input_bytes, q_lora_rank, kv_lora_rank)
    return attention + if_(experts > 0, moe, dense)


@formula(
    udf="ACT_RECOMPUTE_WORKING_BYTES", unit="bytes", category="activations",
    equation="LAYER_ACTIVATION_BYTES(recompute = none) - LAYER_ACTIVATION_BYTES(recompute), once per GPU",
    source="torch.utils.checkpoint: the backward recomputes one checkpointed layer at a time; its recomputed tensors live until that layer's backward ends",
    check=_check_layout,
)
def act_recompute_working_bytes(seq_len, micro_batch, hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn=_D["gated_ffn"],
                                norm_type="rmsnorm", flash_attention=_D["flash_attention"], dropout=False, tp=_D["tp"], seq_parallel=_D["seq_parallel"],
                                cp=_D["cp"], recompute=_D["recompute"], linear_input_bytes=2, experts=0, topk=1, capacity_factor=1,
                                expert_ffn_hidden=0, shared_ffn_hidden=0, ep=1, etp=1, q_lora_rank=0,
                                kv_lora_rank=0, qk_rope_head_dim=0, qk_nope_head_dim=0, v_head_dim=0):
    """Recompute working set: the tensors one layer recomputes in its backward, alive at once (once per GPU).

    With recomputation a layer's backward first recomputes what it did not keep; those tensors
    live together until that layer's backward is done, then the next layer's take their place.
    So the peak holds, once, the difference between keeping everything and the mode's kept set.
    """
    args = (seq_len, micro_batch, hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn, norm_type,
            flash_attention, dropout, tp, seq_parallel, cp)
    rest = (linear_input_bytes, experts, topk, capacity_factor, expert_ffn_hidden, shared_ffn_hidden, ep, etp,
            q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim)
    return layer_activation_bytes(*args, "none", *rest) - layer_activation_bytes(*args, recompute, *rest)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

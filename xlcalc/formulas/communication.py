"""Step-time model, communication: the bytes and exposed time of tensor-, pipeline-, data-, context- and
expert-parallel communication, over NVLink inside a scale-up domain and the network across.

The planner's step time (:mod:`xlcalc.planner`) adds these to the compute terms of :mod:`xlcalc.formulas.steptime`.
Conventions: bf16 activations (2 bytes), GB = 1e9 bytes, GB/s = 1e9 bytes/s.
"""

from __future__ import annotations

from ..expr.functions import eq, floor_int, if_, max_, min_
from ..recipes import MEMORY_DEFAULTS as _D  # every input's default, declared once: the signatures read it
from ..recipes import default_bytes
from ..registry import REGISTRY, formula
from .parallel import allgather_bytes, allreduce_bytes

_B = default_bytes()  # the default recipe's bytes per parameter


@formula(
    udf="TP_COMM_BYTES_PER_LAYER", unit="bytes per GPU", category="steptime",
    equation="(4, or 6 with full recompute) ring all-reduces of 2*s*b*h bytes over t ranks; SP: RS+AG, same bytes",
    source="Shoeybi et al. 2019 (2 all-reduces forward, 2 backward); Korthikanti et al. 2022 §4.2.2 (SP); NCCL ring 2S(n-1)/n",
)
def tp_comm_bytes_per_layer(seq_len, micro_batch, hidden, tp, recompute=_D["recompute"]):
    """Bytes one GPU sends for tensor parallelism in one layer and one micro-batch."""
    count = if_(eq(recompute, "full"), 6, 4)
    return count * allreduce_bytes(2 * seq_len * micro_batch * hidden, tp)


@formula(
    udf="EXPOSED_COMM_S", unit="seconds", category="steptime",
    equation="MAX(0, comm - overlap * window)",
    source="xlcalc step-time model (communication hidden behind the compute it can overlap with)",
)
def exposed_comm_s(comm_s, window_s, overlap_frac):
    """Communication time left on the critical path after overlapping with compute."""
    return max_(0, comm_s - overlap_frac * window_s)


@formula(
    udf="TP_COMM_TIME_S", unit="seconds", category="steptime",
    equation="L/p * TP_COMM_BYTES_PER_LAYER / (scale-up GB/s * link efficiency * 1e9) * (1 - TP overlap)",
    source="Shoeybi et al. 2019 (TP all-reduces inside a node, over NVLink); NCCL bus bandwidth = link x efficiency",
)
def tp_comm_time_s(layers_per_stage, seq_len, micro_batch, hidden, tp, scaleup_gb_s, link_efficiency,
                   recompute=_D["recompute"], tp_overlap=0):
    """Exposed tensor-parallel communication time of one stage and one micro-batch."""
    total = layers_per_stage * tp_comm_bytes_per_layer(seq_len, micro_batch, hidden, tp, recompute)
    return total / (scaleup_gb_s * link_efficiency * 1e9) * (1 - tp_overlap)


@formula(
    udf="GROUP_BANDWIDTH_GB_S", unit="GB/s", category="steptime",
    equation="scale-out GB/s if the group spans more GPUs than a node holds, else scale-up GB/s",
    source="ranks placed TP innermost, then PP, then DP (Narayanan et al. 2021 §3.3): a group within one node "
           "talks over NVLink, a larger one over the node's network",
)
def group_bandwidth_gb_s(span_gpus, gpus_per_node, scaleup_gb_s, scaleout_gb_s):
    """Per-GPU bandwidth of a communicating group: scale-up inside a node, scale-out across nodes."""
    return if_(span_gpus > gpus_per_node, scaleout_gb_s, scaleup_gb_s)


@formula(
    udf="PIPELINE_P2P_TIME_S", unit="seconds", category="steptime",
    equation="2*v * 2*tokens*h/t bytes / (GB/s * link efficiency * 1e9) (activation forward, gradient backward)",
    source="Narayanan et al. 2021 §3.3 (p2p of b*s*h per micro-batch and stage boundary; interleaving: v times "
           "as many; scatter/gather splits it over t)",
)
def pipeline_p2p_time_s(tokens, hidden, bandwidth_gb_s, link_efficiency, tp=_D["tp"], virtual_stages=_D["virtual_stages"]):
    """Pipeline point-to-point time of one micro-batch: bf16 activations forward and gradients backward."""
    return 2 * virtual_stages * 2 * tokens * hidden / tp / (bandwidth_gb_s * link_efficiency * 1e9)


@formula(
    udf="DP_COMM_BYTES", unit="bytes per GPU", category="steptime",
    equation="ZeRO 0: all-reduce of params*grad bytes; ZeRO 1-2: reduce-scatter of grads + all-gather of weights; "
             "ZeRO 3: weight all-gathers x 2*m (forward and backward of every micro-batch); ring over d ranks",
    source="Rajbhandari et al. 2020 §5-7 (ZeRO communication volume); NCCL ring: all-reduce 2S(n-1)/n, "
           "all-gather and reduce-scatter S(n-1)/n",
)
def dp_comm_bytes(params_per_gpu, dp, zero_stage=_D["zero_stage"], microbatches=1, grad_bytes=4, bytes_weights=_B["bytes_weights"]):
    """Bytes one GPU sends for data parallelism in one step."""
    grads = params_per_gpu * grad_bytes
    sharded = (allgather_bytes(grads, dp)
               + allgather_bytes(params_per_gpu * bytes_weights, dp) * if_(zero_stage >= 3, 2 * microbatches, 1))
    return if_(eq(zero_stage, 0), allreduce_bytes(grads, dp), sharded)


@formula(
    udf="DP_COMM_TIME_S", unit="seconds", category="steptime",
    equation="EXPOSED_COMM_S(DP_COMM_BYTES / (GB/s * link efficiency * 1e9), "
             "window = t_microbatch (ZeRO 0-2: the last micro-batch's backward) or m*t_microbatch (ZeRO 3), overlap)",
    source="xlcalc step-time model: gradients are reduced as the last backward pass produces them; ZeRO-3 "
           "gathers overlap the whole step (Rajbhandari et al. 2020 §7)",
)
def dp_comm_time_s(params_per_gpu, dp, microbatch_s, bandwidth_gb_s, link_efficiency, zero_stage=_D["zero_stage"], microbatches=1,
                   grad_bytes=4, bytes_weights=_B["bytes_weights"], overlap_frac=0.5):
    """Exposed data-parallel communication time of one step."""
    comm = (dp_comm_bytes(params_per_gpu, dp, zero_stage, microbatches, grad_bytes, bytes_weights)
            / (bandwidth_gb_s * link_efficiency * 1e9))
    window = microbatch_s * if_(zero_stage >= 3, microbatches, 1)
    return exposed_comm_s(comm, window, overlap_frac)


@formula(
    udf="RANKS_PER_DOMAIN", unit="GPUs", category="steptime",
    equation="MAX(1, MIN(ranks, FLOOR(domain / stride)))",
    source="Megatron-LM rank order tp-cp-ep-dp-pp (RankGenerator): a group whose members are `stride` ranks apart "
           "has FLOOR(domain/stride) of them inside each scale-up (NVLink) domain",
)
def ranks_per_domain(ranks, stride_gpus, nvlink_domain):
    """How many members of a communicating group share one NVLink domain."""
    return max_(1, min_(ranks, floor_int(nvlink_domain / stride_gpus)))


@formula(
    udf="COLLECTIVE_TIME_S", unit="seconds", category="steptime",
    equation="passes * [S*(g-1)/g / scale-up + S/g*(k-1)/k / scale-out] / link efficiency, g = ranks per domain, "
             "k = ranks/g (hierarchical: reduce-scatter inside the domain, ring across domains on 1/g of the data, "
             "all-gather inside)",
    source="NCCL tests PERFORMANCE.md (ring all-reduce 2S(n-1)/n, all-gather S(n-1)/n); hierarchical all-reduce "
           "(Jia et al. 2018 'Highly scalable deep learning training system with mixed-precision', §4; NCCL tree/"
           "NVLS algorithms): a group inside one domain never touches the NIC",
)
def collective_time_s(size_bytes, ranks, ranks_per_domain, scaleup_gb_s, scaleout_gb_s, link_efficiency, passes=2):
    """Time of a ring collective of S bytes over a group that spans one or more NVLink domains."""
    g = ranks_per_domain
    k = ranks / g
    inside = size_bytes * (g - 1) / g / (scaleup_gb_s * 1e9)
    across = if_(k > 1, size_bytes / g * (k - 1) / k / (scaleout_gb_s * 1e9), 0)
    return passes * (inside + across) / link_efficiency


@formula(
    udf="DP_COMM_TIME_HIERARCHICAL_S", unit="seconds", category="steptime",
    equation="EXPOSED_COMM_S(ZeRO 0: all-reduce of grads; ZeRO 1-2: reduce-scatter of grads + all-gather of weights; "
             "ZeRO 3: + 2m weight all-gathers; each COLLECTIVE_TIME_S over the DP group, "
             "window = t_microbatch (ZeRO 0-2) or m*t_microbatch (ZeRO 3), overlap)",
    source="Rajbhandari et al. 2020 §5-7 (ZeRO communication volume); COLLECTIVE_TIME_S (hierarchical)",
)
def dp_comm_time_hierarchical_s(params_per_gpu, dp, ranks_per_domain, microbatch_s, scaleup_gb_s, scaleout_gb_s,
                                link_efficiency, zero_stage=_D["zero_stage"], microbatches=1, grad_bytes=4, bytes_weights=_B["bytes_weights"],
                                overlap_frac=0.5):
    """Exposed data-parallel communication time of one step, priced on NVLink inside a domain and the NIC across."""
    grads = collective_time_s(params_per_gpu * grad_bytes, dp, ranks_per_domain, scaleup_gb_s, scaleout_gb_s,
                              link_efficiency, if_(eq(zero_stage, 0), 2, 1))
    gathers = if_(eq(zero_stage, 0), 0, if_(zero_stage >= 3, 2 * microbatches, 1))
    weights = collective_time_s(params_per_gpu * bytes_weights, dp, ranks_per_domain, scaleup_gb_s, scaleout_gb_s,
                                link_efficiency, gathers)
    window = microbatch_s * if_(zero_stage >= 3, microbatches, 1)
    return exposed_comm_s(grads + weights, window, overlap_frac)


@formula(
    udf="CP_COMM_BYTES_PER_LAYER", unit="bytes per GPU", category="steptime",
    equation="3*(c-1) * 2*2*(tokens/c)*kv*dh/t (K and V of the local chunk passed round the ring: forward once, "
             "backward K,V and their gradients)",
    source="Megatron-LM context parallelism (ring attention with P2P KV exchange; Liu et al. 2023, Ring Attention)",
)
def cp_comm_bytes_per_layer(tokens, kv_heads, head_dim, cp, tp=_D["tp"]):
    """Bytes one GPU sends per layer and micro-batch for context parallelism."""
    return 3 * (cp - 1) * 2 * 2 * (tokens / cp) * kv_heads * head_dim / tp


@formula(
    udf="CP_COMM_TIME_S", unit="seconds", category="steptime",
    equation="EXPOSED_COMM_S(L/p * CP_COMM_BYTES_PER_LAYER / (GB/s * link efficiency * 1e9), attention time, overlap)",
    source="Megatron-LM context parallelism: the KV exchange of the next chunk overlaps the attention of this one",
)
def cp_comm_time_s(layers_per_stage, tokens, kv_heads, head_dim, cp, bandwidth_gb_s, link_efficiency, window_s,
                   tp=_D["tp"], cp_overlap=1):
    """Exposed context-parallel communication of one stage and micro-batch."""
    comm = layers_per_stage * cp_comm_bytes_per_layer(tokens, kv_heads, head_dim, cp, tp) / (
        bandwidth_gb_s * link_efficiency * 1e9)
    return exposed_comm_s(comm, window_s, cp_overlap)


# --- mixture of experts: expert-parallel all-to-all ---------------------------------------------------


@formula(
    udf="EP_ALLTOALL_TIME_S", unit="seconds", category="steptime",
    equation="EXPOSED_COMM_S(moe layers * (4, or 6 with full recompute) * MAX(inside / scale-up, across / scale-out) "
             "/ link efficiency, window, EP overlap); one copy = tokens*h*bytes; inside = copy*k*(g-1)/ep; "
             "across = copy*k*(ep-g)/ep, or with node-limited routing copy*MIN(k, nodes)*(ep/g-1)/(ep/g)",
    source="Lepikhin et al. 2020 (GShard: dispatch and combine all-to-all of each MoE layer, forward and backward); "
           "Megatron-LM MoE alltoall token dispatcher (rank order tp-cp-ep-dp-pp); DeepSeek-V3 Technical Report "
           "§3.2.2 (node-limited routing: each token to at most 4 nodes, sent once per node over InfiniBand and "
           "forwarded over NVLink; dispatch in FP8, combine in BF16; DualPipe hides the all-to-all behind compute)",
)
def ep_alltoall_time_s(layers_per_stage, tokens, hidden, topk, ep, ranks_per_domain, scaleup_gb_s, scaleout_gb_s,
                       link_efficiency, window_s, a2a_bytes=2, max_nodes_per_token=0, recompute=_D["recompute"],
                       ep_overlap=0):
    """Exposed expert-parallel all-to-all (dispatch and combine) time of one stage and one micro-batch.

    NVLink inside a scale-up domain and the NIC across domains run at the same time: the slower sets the pace.
    """
    g = ranks_per_domain
    domains = ep / g
    copy = tokens * hidden * a2a_bytes
    inside = copy * topk * (g - 1) / ep
    across_copies = if_(max_nodes_per_token > 0, min_(topk, max_nodes_per_token) * (domains - 1) / domains,
                        topk * (ep - g) / ep)
    across = copy * across_copies
    passes = if_(eq(recompute, "full"), 6, 4)
    comm = layers_per_stage * passes * max_(inside / (scaleup_gb_s * 1e9), across / (scaleout_gb_s * 1e9)) / link_efficiency
    return exposed_comm_s(comm, window_s, ep_overlap)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

"""Step-time model of one parallel configuration, built from the registry's formulas.

:class:`Settings` (:mod:`xlcalc.planner.settings`) holds every constant of the model as a documented input;
:class:`Hardware` and :class:`Arch` are the resolved GPU and architecture; :func:`evaluate` predicts memory and
step time of one :class:`Config`. The equations live in :mod:`xlcalc.formulas` (``steptime``,
``memory``, ``parallel``, ``compute``); here they are only called, with ``.raw`` because the
inputs were validated once at the boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, NamedTuple, Optional, cast

from .. import stage_memory as sm
from ..errors import CatalogError, InputError
from ..formulas import communication as fcomm
from ..formulas import memory as fm
from ..formulas import microbatch as fmb
from ..formulas import steptime as fs
from ..registry import numeric
from .architecture import Arch, arch_from_flags, arch_from_model  # noqa: F401  (re-exported)
from .hardware import SM_COUNT, Hardware, resolve_hardware  # noqa: F401  (re-exported)
from .settings import Settings

__all__ = ["Hardware", "Arch", "Config", "Prediction", "evaluate", "resolve_hardware", "arch_from_model",
           "arch_from_flags", "stage_params", "stage_layers", "step_lower_bound", "sequence_compute_bound",
           "flops_per_token"]


class Config(NamedTuple):
    """One parallel layout and recipe (a named tuple: the search builds thousands of them)."""
    tp: int
    pp: int
    dp: int
    zero_stage: int
    seq_parallel: bool
    recompute: str
    micro_batch: int
    virtual_stages: int = 1
    cp: int = 1                                  # context parallelism: each sequence split over cp GPUs
    stage_layers: Optional[tuple[int, ...]] = None  # layers of each pipeline stage; None = L/p each
    fp8: bool = False                            # linear layers of the transformer blocks in FP8
    ep: int = 1                                  # expert parallelism: experts split over ep GPUs of TP x CP x DP
    etp: int = 0                                 # expert tensor parallelism (0: = TP, Megatron-Core's default)
    offload: bool = False                        # optimizer states and step in CPU memory (ZeRO-Offload)

    @property
    def expert_tp(self) -> int:
        return self.etp or self.tp

    @property
    def n_gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp


@dataclass
class Prediction:
    config: Config
    microbatches: int
    # memory, GB per GPU
    weights_gb: float
    grads_gb: float
    optimizer_gb: float
    zero3_buffer_gb: float
    activations_gb: float
    overhead_gb: float
    memory_gb: float
    fits: bool
    # the fit answer (FIT_VERDICT): "fits" / "tight" / "does not fit", and its margin (FIT_MARGIN_GB), GB
    verdict: str = ""
    margin_gb: float = 0.0
    # time, seconds per step
    step_s: float = 0.0
    compute_s: float = 0.0
    tp_comm_s: float = 0.0
    pp_comm_s: float = 0.0
    cp_comm_s: float = 0.0
    ep_comm_s: float = 0.0
    dp_comm_s: float = 0.0
    bubble_s: float = 0.0
    recompute_s: float = 0.0
    optimizer_s: float = 0.0
    mfu: float = 0.0
    hfu: float = 0.0
    tokens_per_s_per_gpu: float = 0.0


@lru_cache(maxsize=4096)
def stage_params(arch: Arch, pp: int) -> float:
    """Parameters of the largest pipeline stage (layers plus the embedding and/or output table)."""
    return cast(float, fs.pipeline_stage_params.raw(
        layers=arch.layers, pp=pp, layer_params=arch.layer_params, embedding_params=arch.embedding_params,
        tied_embeddings=arch.tied_embeddings))


# the memory model's defaults (the default recipe and xlcalc.recipes.MEMORY_DEFAULTS: constants), read once
_MEMORY_DEFAULTS = sm.defaults()


def memory_base(arch: Arch, st: Settings) -> dict[str, Any]:
    """The inputs of the stage memory model that depend on the architecture and settings only (a search builds
    them once and passes them to :func:`memory`)."""
    return {
        **_MEMORY_DEFAULTS,
        **{k: getattr(arch, k) for k in ("params_b", "layers", "hidden", "heads", "kv_heads", "head_dim", "gated_ffn",
                                         "vocab", "tied_embeddings")},
        **{k: getattr(st, k) for k in ("flash_attention", "bytes_weights", "bytes_grads", "bytes_optimizer",
                                       "overhead_gb", "cuda_context_gb", "allocator_reserve_frac", "grads_freed",
                                       "logits_buffer_bytes", "optimizer_step_bytes", "autocast_copy_bytes")},
        "ffn_hidden": max(1, round(arch.ffn_hidden)), "expert_params_b": arch.expert_params / 1e9}


def memory(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int, microbatches: int,
           compiled: bool = True, base: dict[str, Any] | None = None) -> Prediction:
    """Memory per GPU of the heavier pipeline stage, by the stage memory model (xlcalc.stage_memory); ``compiled``:
    its steps run as one generated plain function (``xlcalc.stage_memory.evaluate``), else one by one; ``base``:
    :func:`memory_base`, built once by a caller that evaluates many configurations."""
    values = {  # the stage memory model's inputs for this configuration
        **(base if base is not None else memory_base(arch, st)),
        # seq_len arrives as one GPU's part of the sequence (seq_len // cp); the model takes the whole and splits it by cp
        "seq_len": seq_len * cfg.cp, "micro_batch": cfg.micro_batch, "microbatches": microbatches,
        "tp": cfg.tp, "pp": cfg.pp, "dp": cfg.dp, "zero_stage": cfg.zero_stage, "seq_parallel": cfg.seq_parallel,
        "recompute": cfg.recompute, "virtual_stages": cfg.virtual_stages, "cp": cfg.cp,
        "first_stage_layers": cfg.stage_layers[0] if cfg.stage_layers and cfg.pp > 1 else 0,
        "last_stage_layers": cfg.stage_layers[-1] if cfg.stage_layers and cfg.pp > 1 else 0,
        "ep": cfg.ep, "expert_tp": cfg.etp, "optimizer_offload": cfg.offload,
    }
    env = sm.compiled_steps(values) if compiled else sm.evaluate(values, validated=True)
    stage = "First" if env["Mem_First_Total_GB"] >= env["Mem_Last_Total_GB"] else "Last"
    total = env["Mem_Total_GB"] * st.memory_margin
    # the fit answer every face gives: fits only with the margin (CUDA context + allocator reserve) inside the card
    margin = fm.fit_margin_gb.raw(total_gb=total, cuda_context_gb=values["cuda_context_gb"],
                                  allocator_reserve_frac=values["allocator_reserve_frac"])
    verdict = fm.fit_verdict.raw(total_gb=total, memory_gb=hw.memory_gb, margin_gb=margin)
    return Prediction(
        config=cfg, microbatches=microbatches, weights_gb=env[f"Mem_{stage}_Weights_GB"],
        grads_gb=env[f"Mem_{stage}_Grads_GB"], optimizer_gb=env[f"Mem_{stage}_Optimizer_GB"],
        zero3_buffer_gb=env[f"Mem_{stage}_Gathered_GB"] + env[f"Mem_{stage}_FP8_GB"],
        activations_gb=env[f"Mem_{stage}_Activations_GB"] + env["Mem_Recompute_GB"] + env[f"Mem_{stage}_Logits_GB"],
        overhead_gb=values["overhead_gb"] + values["comm_buffer_gb"], memory_gb=total,
        fits=verdict == "fits", verdict=verdict, margin_gb=margin)


def stage_layers(arch: Arch, cfg: Config) -> tuple[int, ...] | tuple[float, ...]:
    """Layers of each pipeline stage: the pinned list, else L/p each."""
    return cfg.stage_layers if cfg.stage_layers is not None else (arch.layers / cfg.pp,) * cfg.pp


@lru_cache(maxsize=65536)
def _matmul_times(hidden: int, heads: int, kv_heads: int, head_dim: int, ffn_hidden: float, vocab: int,
                  gated_ffn: bool, tokens: int, tp: int, recompute: str, peak: float, mm_peak: float, eff: float,
                  sm_count: Optional[int]) -> tuple[float, float]:
    """(matmul time of one layer, of the logit layer) for some tokens on one GPU; only full recomputation changes
    them (a second forward), so selective and no recomputation share one entry of the cache."""
    shape = dict(hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim, ffn_hidden=ffn_hidden,
                 vocab=vocab, gated_ffn=gated_ffn, tp=tp, recompute=recompute)

    def mm(n: int, pk: float) -> Any:  # STAGE_MATMUL_TIME_S: wave-quantized where the SM count is known
        return fmb.stage_matmul_time_s.raw(layers_per_stage=n, tokens=tokens, **shape, peak_tflops=pk,
                                           matmul_efficiency=eff, sm_count=sm_count or 1,
                                           wave_quantization=bool(sm_count))
    logits = mm(0, peak)
    return mm(1, mm_peak) - (logits if mm_peak == peak else mm(0, mm_peak)), logits


@lru_cache(maxsize=65536)
def _per_layer(hidden: int, heads: int, kv_heads: int, head_dim: int, ffn_hidden: float, vocab: int, gated_ffn: bool,
               tokens: int, seq_len: int, tp: int, seq_parallel: bool, recompute: str, peak: float, mm_peak: float,
               eff: float, sm_count: Optional[int], hbm_tb_s: float, flash: bool, attention_efficiency: float,
               elementwise_factor: float, attention_factor: float = 1.0,
               fp8_cast_bytes: float = 0.0, fp8_forward_fused: bool = False,
               projection: tuple[int, int, int] | None = None, loss_bytes: float = 16.0,
               dropout: bool = True, attention_speed: float = 1.0) -> tuple[float, float, float]:
    """(compute time of one layer, its attention part, the logit layer's compute) for one micro-batch on one GPU.

    Every term of a stage's compute is linear in its layers, so a stage of n layers takes n x layer (+ logit
    layer on the last stage); evaluated once per shape and cached across the search. ``projection``: (heads, kv
    heads, head size) of the attention projections when they differ from the attention core's (MLA).
    """
    ph, pkv, pdh = projection or (heads, kv_heads, head_dim)
    layer_mm, logits = _matmul_times(hidden, ph, pkv, pdh, ffn_hidden, vocab, gated_ffn, tokens, tp,
                                     recompute if recompute in ("full", "op_selective") else "none", peak, mm_peak,
                                     eff, sm_count)
    # LAYER_ATTENTION_TIME_S: attention_factor < 1, a FlashAttention-2-class kernel on a newer GPU than it was
    # written for (on the kernel's rate and the GEMM-rate floor); attention_speed < 1, a slower kernel than
    # FlashAttention-2 on the same GPU (the kernel's rate only); unfused (no FlashAttention): QK^T and AV at their
    # roofline, softmax, mask and dropout over the s x s scores at HBM speed
    att = fmb.layer_attention_time_s.raw(
        tokens=tokens, seq_len=seq_len, heads=heads, head_dim=head_dim, peak_tflops=peak, matmul_efficiency=eff,
        attention_efficiency=attention_efficiency, hbm_tb_s=hbm_tb_s, flash_attention=flash, tp=tp,
        recompute=recompute, attention_factor=attention_factor, attention_kernel_speed=attention_speed)
    ew = dict(tokens=tokens, hidden=hidden, ffn_hidden=ffn_hidden, hbm_tb_s=hbm_tb_s, gated_ffn=gated_ffn, tp=tp,
              seq_parallel=seq_parallel, recompute=recompute, elementwise_factor=elementwise_factor, dropout=dropout)
    ew_layer = fs.elementwise_time_s.fast(layers_per_stage=1, vocab=0, **ew)
    ew_logits = fs.elementwise_time_s.fast(layers_per_stage=0, vocab=vocab, loss_bytes=loss_bytes, **ew)
    if fp8_cast_bytes:  # FP8 run: the casts of the block GEMMs' operands, at HBM speed
        ew_layer += fs.fp8_cast_bytes_per_token.fast(
            hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim, ffn_hidden=ffn_hidden,
            gated_ffn=gated_ffn, tp=tp, seq_parallel=seq_parallel, recompute=recompute,
            fp8_cast_bytes=fp8_cast_bytes, fp8_forward_fused=fp8_forward_fused) * tokens / (hbm_tb_s * 1e12)
    return layer_mm + att + ew_layer, att, logits + ew_logits


def _layer_times(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int, tokens: int, rc: str,
                 sm_count: Optional[int]) -> tuple[float, float, float]:
    """:func:`_per_layer` of this architecture, GPU, settings and layout for ``tokens`` on one GPU, recomputation
    ``rc`` and wave quantization on ``sm_count`` SMs (None: none)."""
    peak = _compute_peak(hw, st)
    # FP8 (Transformer Engine recipe): the blocks' linear layers at the FP8 peak; attention, logits, norms in bf16
    mm_peak = (hw.fp8_tflops or hw.peak_tflops) * peak / hw.peak_tflops * st.fp8_efficiency_ratio if cfg.fp8 else peak
    return _per_layer(
        arch.hidden, arch.heads, arch.kv_heads, arch.head_dim, arch.ffn_hidden, arch.vocab, arch.gated_ffn, tokens,
        seq_len, cfg.tp, cfg.seq_parallel, rc, peak, mm_peak, hw.matmul_efficiency, sm_count, hw.hbm_tb_s,
        st.flash_attention, st.attention_efficiency, st.elementwise_factor, hw.attention_factor,
        st.fp8_cast_bytes if cfg.fp8 else 0.0, st.fp8_forward_casts_fused, arch.projection_shape, st.loss_bytes,
        st.dropout, st.attention_kernel_speed)


def _compute_mb(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int,
                rc: str) -> tuple[float, float, float]:
    """Per micro-batch on one GPU: (one layer's compute, its attention part, the logit layer's compute)."""
    tokens = seq_len * cfg.micro_batch // cfg.cp
    layer_s, att_s, logits_s = _layer_times(arch, hw, st, cfg, seq_len, tokens, rc, hw.sm_count)
    if arch.moe_layers:
        # token permutation for the experts, averaged over the layers as the FFN is (each TP rank its share)
        layer_s += fs.moe_permute_time_s.fast(layers_per_stage=arch.moe_layers / arch.layers,
                                              tokens=tokens / cfg.tp, hidden=arch.hidden,
                                              topk=arch.experts_active, hbm_tb_s=hw.hbm_tb_s, recompute=rc,
                                              elementwise_factor=st.elementwise_factor)
    return layer_s, att_s, logits_s


def _compute_peak(hw: Hardware, st: Settings) -> float:
    """The bf16 peak the compute kernels get: all SMs, or those communication kernels leave (Settings.comm_sms)."""
    if not st.comm_sms:
        return hw.peak_tflops
    sms = hw.sm_count or st.sm_count
    if not sms:
        raise CatalogError(f"{hw.name}: comm_sms needs the GPU's SM count (give sm_count)")
    if st.comm_sms >= sms:
        raise InputError("comm_sms", st.comm_sms, f"fewer than the GPU's {sms} SMs")
    return hw.peak_tflops * (sms - st.comm_sms) / sms


def _slowest_stage(layers: Sequence[float], layer_s: float, logits_s: float, p: int) -> tuple[float, float, bool]:
    """(compute of the slowest stage per micro-batch, its layers, whether it is the last stage)."""
    compute_mb = layers[-1] * layer_s + logits_s
    if p > 1 and max(layers[:-1]) * layer_s > compute_mb:
        return max(layers[:-1]) * layer_s, max(layers[:-1]), False
    return compute_mb, layers[-1], True


def sequence_compute_bound(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int) -> float:
    """Compute of one sequence on the slowest stage with no tile or wave quantization (every matmul at the plain
    efficiency): a bound below the compute of any micro-batch, b sequences taking at least b times this."""
    layer_s, _, logits_s = _layer_times(arch, hw, st, cfg, seq_len, seq_len // cfg.cp, cfg.recompute, None)
    return _slowest_stage(stage_layers(arch, cfg), layer_s, logits_s, cfg.pp)[0]


def step_lower_bound(cfg: Config, microbatches: int, microbatch_s: float) -> float:
    """A step can be no shorter than its slowest stage's compute and exposed TP communication over the
    micro-batches plus the bubble (STEP_TIME_S without the other communication or the optimizer): the search's
    bound for leaving a configuration out, from a bound ``microbatch_s`` on one micro-batch
    (:func:`microbatch_lower_bound`, or the cheaper, looser b x :func:`sequence_compute_bound`)."""
    return cast(float, fs.step_time_s.fast(microbatches=microbatches, microbatch_s=microbatch_s, pp=cfg.pp,
                                           virtual_stages=cfg.virtual_stages, comm_s=0, compute_s=0))


def microbatch_lower_bound(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int) -> float:
    """The slowest stage's compute of one micro-batch and its exposed TP communication (the part of
    :func:`step_lower_bound` that does not depend on the number of micro-batches or the interleaving)."""
    layer_s, _, logits_s = _compute_mb(arch, hw, st, cfg, seq_len, cfg.recompute)
    microbatch_s, layers_slow, _ = _slowest_stage(stage_layers(arch, cfg), layer_s, logits_s, cfg.pp)
    return microbatch_s + _tp_comm_s(arch, hw, st, cfg, seq_len, layers_slow)


def _tp_comm_s(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int, layers: float) -> float:
    """Exposed tensor-parallel communication of ``layers`` layers per micro-batch, inside the NVLink domain."""
    if cfg.tp == 1:
        return 0.0
    return cast(float, fcomm.tp_comm_time_s.fast(
        layers_per_stage=layers, seq_len=seq_len // cfg.cp, micro_batch=cfg.micro_batch, hidden=arch.hidden,
        tp=cfg.tp, scaleup_gb_s=hw.scaleup_gb_s, link_efficiency=st.link_efficiency, recompute=cfg.recompute,
        tp_overlap=st.tp_overlap))


@lru_cache(maxsize=1024)
def flops_per_token(arch: Arch, seq_len: int, recompute: str = "none") -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) per trained token of an architecture: MODEL_FLOPS_PER_TOKEN and
    HARDWARE_FLOPS_PER_TOKEN, MLA's projections by their own parameters, an MoE's active experts only."""
    kw = dict(layers=arch.layers, hidden=arch.hidden, heads=arch.heads, kv_heads=arch.kv_heads,
              head_dim=arch.head_dim, ffn_hidden=arch.ffn_hidden, vocab=arch.vocab, seq_len=seq_len,
              gated_ffn=arch.gated_ffn)
    model, hardware = fs.model_flops_per_token.raw(**kw), fs.hardware_flops_per_token.raw(**kw, recompute=recompute)
    if arch.projection_shape != (arch.heads, arch.kv_heads, arch.head_dim):
        # MLA: the projections' matmuls by their own shape (forward + backward, + a forward with full recompute)
        ph, pkv, pdh = arch.projection_shape
        shape = dict(hidden=arch.hidden, ffn_hidden=arch.ffn_hidden, gated_ffn=arch.gated_ffn)
        delta = arch.layers * (fs.layer_matmul_flops.raw(heads=ph, kv_heads=pkv, head_dim=pdh, **shape)
                               - fs.layer_matmul_flops.raw(heads=arch.heads, kv_heads=arch.kv_heads,
                                                           head_dim=arch.head_dim, **shape))
        model += 3 * delta
        hardware += (4 if recompute == "full" else 3.5 if recompute == "op_selective" else 3) * delta
    return model, hardware


def timing(pred: Prediction, arch: Arch, hw: Hardware, st: Settings, seq_len: int, global_batch: int) -> Prediction:
    """``pred`` with the step time, its breakdown by part, MFU, HFU and throughput of its configuration filled in.

    The slowest pipeline stage sets the pace: each stage's layers (uneven stages allowed), the last stage
    also the logit layer. Groups are placed in Megatron-LM's rank order tp-cp-dp-pp, so a group whose
    members share an NVLink domain is priced on NVLink, the rest on the NIC (COLLECTIVE_TIME_S).
    """
    cfg = pred.config
    t, p, d, z, b, v, c = cfg.tp, cfg.pp, cfg.dp, cfg.zero_stage, cfg.micro_batch, cfg.virtual_stages, cfg.cp
    m, rc = pred.microbatches, cfg.recompute
    tokens_mb = seq_len * b // c
    layer_s, att_layer_s, logits_s = _compute_mb(arch, hw, st, cfg, seq_len, rc)
    # the slowest stage: the heaviest of the layers-only stages, or the last stage with the logit layer
    compute_mb, layers_slow, last = _slowest_stage(stage_layers(arch, cfg), layer_s, logits_s, p)
    t_att = layers_slow * att_layer_s
    recompute_mb = 0.0
    if rc != "none":
        plain_layer, _, plain_logits = _compute_mb(arch, hw, st, cfg, seq_len, "none")
        recompute_mb = max(0.0, compute_mb - layers_slow * plain_layer - (plain_logits if last else 0.0))
    domain = hw.nvlink_domain
    scaleout = hw.scaleout_gb_s or float("inf")  # None only when the whole cluster is one domain
    t_tp = _tp_comm_s(arch, hw, st, cfg, seq_len, layers_slow)
    # context parallelism: KV ring over t*c consecutive ranks, hidden behind the attention
    t_cp = 0.0
    if c > 1:
        bw = fcomm.group_bandwidth_gb_s.fast(span_gpus=t * c, gpus_per_node=domain, scaleup_gb_s=hw.scaleup_gb_s,
                                            scaleout_gb_s=scaleout)
        t_cp = fcomm.cp_comm_time_s.fast(layers_per_stage=layers_slow, tokens=seq_len * b, kv_heads=arch.kv_heads,
                                        head_dim=arch.head_dim, cp=c, bandwidth_gb_s=bw,
                                        link_efficiency=st.link_efficiency, window_s=t_att, tp=t,
                                        cp_overlap=st.cp_overlap)
    # pipeline point-to-point: activation forward and gradient backward per micro-batch and virtual stage;
    # neighbouring stages are t*c*d ranks apart
    t_p2p = 0.0
    if p > 1:
        bw = fcomm.group_bandwidth_gb_s.fast(span_gpus=t * c * d * p, gpus_per_node=domain,
                                            scaleup_gb_s=hw.scaleup_gb_s, scaleout_gb_s=scaleout)
        t_p2p = fcomm.pipeline_p2p_time_s.fast(tokens=tokens_mb, hidden=arch.hidden, bandwidth_gb_s=bw,
                                              link_efficiency=st.link_efficiency, tp=t, virtual_stages=v)
        t_p2p *= 1 - st.pp_overlap
    # expert parallelism: dispatch and combine all-to-all of the stage's MoE layers over ep ranks expert-TP apart
    # (Megatron-Core's expert rank order etp-ep-edp over the stage's TP x CP x DP GPUs), tokens split over TP
    # (sequence parallel), NVLink inside a domain
    t_ep = 0.0
    e, et = cfg.ep, cfg.expert_tp
    if e > 1 and arch.moe_layers:
        g = fcomm.ranks_per_domain.fast(ranks=e, stride_gpus=et, nvlink_domain=domain)
        t_ep = fcomm.ep_alltoall_time_s.fast(
            layers_per_stage=layers_slow * arch.moe_layers / arch.layers, tokens=tokens_mb / t, hidden=arch.hidden,
            topk=arch.experts_active, ep=e, ranks_per_domain=g, scaleup_gb_s=hw.scaleup_gb_s, scaleout_gb_s=scaleout,
            link_efficiency=st.link_efficiency, window_s=compute_mb, a2a_bytes=st.a2a_bytes,
            max_nodes_per_token=st.max_nodes_per_token, recompute=rc, ep_overlap=st.ep_overlap)
    mb_s = compute_mb + t_tp + t_cp + t_p2p + t_ep
    # data parallelism (gradients reduced over dp x cp ranks, t apart), hierarchical; routed experts are split over
    # ep x expert-TP of the stage's t x c x d GPUs and reduced over the rest (the expert data-parallel group,
    # ep x expert-TP apart); a stage's routed-expert parameters are its share of the layers' (0 for a dense model)
    psi_expert = arch.expert_params / p / et / e
    edp = t * c * d // (e * et)
    psi_dense = (stage_params(arch, p) - arch.expert_params / p) / t

    def dp_s(params: float, ranks: int, stride: int) -> float:  # a group of ranks this many GPUs apart
        g = fcomm.ranks_per_domain.fast(ranks=ranks, stride_gpus=stride, nvlink_domain=domain)
        return cast(float, fcomm.dp_comm_time_hierarchical_s.fast(
            params_per_gpu=params, dp=ranks, ranks_per_domain=g, microbatch_s=mb_s, scaleup_gb_s=hw.scaleup_gb_s,
            scaleout_gb_s=scaleout, link_efficiency=st.link_efficiency, zero_stage=z, microbatches=m,
            grad_bytes=st.grad_bytes, bytes_weights=st.gather_bytes or st.bytes_weights, overlap_frac=st.dp_overlap))

    t_dp = dp_s(psi_dense if e > 1 else psi_dense + psi_expert, d * c, t) if d * c > 1 else 0.0
    if e > 1 and edp > 1 and psi_expert > 0:
        t_dp += dp_s(psi_expert, edp, e * et)
    # the optimizer's shard: ZeRO splits each GPU's states over its data-parallel group (experts: expert DP); offloaded,
    # Adam runs in host memory and the updated weights return over PCIe
    def optimizer_s(params_b: float, shards: int) -> float:
        if cfg.offload:
            return cast(float, fs.offloaded_optimizer_step_s.fast(
                params_per_gpu_b=params_b, host_memory_gb_s=st.host_memory_gb_s, pcie_gb_s=st.pcie_gb_s,
                zero_stage=z, dp=shards, bytes_per_param_step=st.bytes_per_param_step, bytes_weights=st.bytes_weights))
        return cast(float, fs.optimizer_step_s.fast(params_per_gpu_b=params_b, hbm_tb_s=hw.hbm_tb_s, zero_stage=z,
                                                    dp=shards, bytes_per_param_step=st.bytes_per_param_step))

    t_opt = optimizer_s(psi_dense / 1e9, d)
    if psi_expert > 0:
        t_opt += optimizer_s(psi_expert / 1e9, max(1, edp // c))
    step = fs.step_time_s.fast(microbatches=m, microbatch_s=mb_s, pp=p, virtual_stages=v, comm_s=t_dp, compute_s=t_opt)
    n, tokens, peak = cfg.n_gpus, global_batch * seq_len, hw.peak_tflops
    mfpt, hfpt = flops_per_token(arch, seq_len, rc)
    return replace(
        pred, step_s=step, compute_s=m * (compute_mb - recompute_mb), recompute_s=m * recompute_mb,
        tp_comm_s=m * t_tp, cp_comm_s=m * t_cp, ep_comm_s=m * t_ep, pp_comm_s=m * t_p2p, dp_comm_s=t_dp,
        optimizer_s=t_opt, bubble_s=fs.bubble_time_s.fast(pp=p, microbatches=m, microbatch_s=mb_s, virtual_stages=v),
        mfu=fs.mfu_from_step.fast(flops_per_token=mfpt, tokens=tokens, step_s=step, n_gpus=n, peak_tflops=peak),
        hfu=fs.mfu_from_step.fast(flops_per_token=hfpt, tokens=tokens, step_s=step, n_gpus=n, peak_tflops=peak),
        tokens_per_s_per_gpu=fs.tokens_per_s_per_gpu.fast(tokens=tokens, step_s=step, n_gpus=n))


def microbatches_per_step(cfg: Config, global_batch: int) -> int:
    """Micro-batches each data-parallel replica runs per step (MICROBATCHES_PER_STEP), rounded to a whole number."""
    return int(round(fmb.microbatches_per_step.fast(global_batch=global_batch, dp=cfg.dp, micro_batch=cfg.micro_batch)))


def evaluate(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int, global_batch: int) -> Prediction:
    """Memory and step time of one configuration (global_batch in sequences)."""
    with numeric():
        pred = memory(arch, hw, st, cfg, seq_len // cfg.cp, microbatches_per_step(cfg, global_batch))
        return timing(pred, arch, hw, st, seq_len, global_batch)


"""Step-time model of one parallel configuration, built from the registry's formulas.

:class:`Settings` holds every constant of the model as a documented input; :class:`Hardware`
and :class:`Arch` are the resolved GPU and architecture; :func:`evaluate` predicts memory and
step time of one :class:`Config`. The equations live in :mod:`xlcalc.formulas` (``steptime``,
``memory``, ``parallel``, ``compute``); here they are only called, with ``.raw`` because the
inputs were validated once at the boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from .. import catalog
from ..errors import CatalogError, InputError
from ..formulas import memory as fm
from ..formulas import steptime as fs
from ..inputs import check_value

__all__ = ["Settings", "Hardware", "Arch", "Config", "Prediction", "evaluate", "resolve_hardware", "arch_from_model",
           "arch_from_flags", "stage_params"]


class Settings(BaseModel):
    """Every constant of the step-time and memory model, with its default and where it comes from."""

    model_config = ConfigDict(extra="forbid")

    matmul_efficiency: Optional[float] = Field(
        default=None, gt=0, le=1,
        description="Share of peak the GPU's matmuls reach in a training step. None: the GPU's catalog "
                    "training_matmul_efficiency (fitted to published runs, docs/validation.md: A100 80GB 0.686, "
                    "H100 SXM 0.753), else its microbenchmark matmul_efficiency (ml-engineering MAMF table).")
    attention_efficiency: float = Field(
        default=0.35, gt=0, le=1,
        description="Share of peak reached by the attention core (scores and weighted sum), on the FLOPs it computes "
                    "(fused: the causal half). Shah et al. 2024 (FlashAttention-3): FlashAttention-2 reaches 35% of peak on H100.")
    flash_attention: bool = Field(default=True, description="Fused attention: no s x s activations, causal half computed.")
    link_efficiency: float = Field(
        default=0.8, gt=0, le=1,
        description="Achieved collective bus bandwidth / link bandwidth (NCCL ring on NVLink or InfiniBand: 0.7-0.9).")
    tp_overlap: float = Field(default=0.0, ge=0, le=1, description="Share of TP communication hidden behind compute (0: Megatron default, no overlap).")
    dp_overlap: float = Field(
        default=0.5, ge=0, le=1,
        description="Share of one micro-batch's compute (ZeRO 0-2) or of the whole step's compute (ZeRO-3) that "
                    "data-parallel communication hides behind: gradients appear only as the backward pass proceeds and "
                    "the collective competes with compute for the GPU.")
    wave_quantization: bool = Field(
        default=True,
        description="Charge each matmul for its whole waves of output tiles (tile and wave quantization, NVIDIA "
                    "Matrix Multiplication Background guide §3); needs the GPU's SM count. False: every matmul at "
                    "the matmul efficiency.")
    sm_count: Optional[int] = Field(
        default=None, ge=1,
        description="Streaming multiprocessors per GPU for wave quantization. None: the known count of the GPU "
                    "(A100/A800 108, H100 SXM 132), else no wave quantization.")
    elementwise_factor: float = Field(default=1.0, ge=0, description="Multiplier on the counted HBM traffic of norms, residuals, dropout, activation.")
    grad_bytes: float = Field(default=4, gt=0, description="Bytes per gradient element in the data-parallel reduction (Megatron bf16 reduces fp32 grads).")
    bytes_weights: float = Field(default=2, ge=0, description="Bytes per parameter: weights (bf16).")
    bytes_grads: float = Field(default=4, ge=0, description="Bytes per parameter: gradients (fp32 main grads, Megatron recipe).")
    bytes_optimizer: float = Field(default=12, ge=0, description="Bytes per parameter: fp32 master weights + Adam m, v.")
    bytes_per_param_step: float = Field(default=30, ge=0, description="HBM bytes per parameter the Adam step reads and writes.")
    overhead_gb: float = Field(default=4.0, ge=0, description="Other memory per GPU: CUDA context, NCCL buffers, fragmentation (GB).")
    hbm_tb_s: Optional[float] = Field(default=None, gt=0, description="Override the GPU's HBM bandwidth (TB/s).")
    scaleup_gb_s: Optional[float] = Field(default=None, gt=0, description="Override the GPU's scale-up bandwidth per direction (GB/s).")
    scaleout_gb_s: Optional[float] = Field(default=None, gt=0, description="Override the GPU's scale-out bandwidth per direction (GB/s).")
    peak_tflops: Optional[float] = Field(default=None, gt=0, description="Override the GPU's dense bf16 (else fp16) peak TFLOP/s.")
    memory_gb: Optional[float] = Field(default=None, gt=0, description="Override the GPU's memory (GB).")
    gpus_per_node: Optional[int] = Field(default=None, ge=1, description="Override GPUs per node (TP stays inside a node).")
    usd_per_gpu_hour: Optional[float] = Field(default=None, ge=0, description="Price per GPU-hour; None: the price catalog's, if any.")


# Streaming multiprocessors, from the vendors' architecture documents. A GPU not listed gets no wave
# quantization unless Settings.sm_count gives its count.
SM_COUNT = {
    "a100-80gb": 108,   # NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs
    "a100-40gb": 108,   # same
    "a800": 108,        # A100 silicon: 312 TFLOPS = 108 SMs x 4 tensor cores x 512 FLOP/clock x 1.41 GHz
    "h100-sxm": 132,    # NVIDIA H100 Tensor Core GPU Architecture whitepaper: H100 SXM5 132 SMs
}


@dataclass(frozen=True)
class Hardware:
    name: str
    peak_tflops: float
    memory_gb: float
    hbm_tb_s: float
    scaleup_gb_s: float
    scaleout_gb_s: float
    gpus_per_node: int
    matmul_efficiency: float
    usd_per_gpu_hour: Optional[float]
    sm_count: Optional[int] = None
    matmul_efficiency_basis: str = ""  # where matmul_efficiency came from, for the explanation


def _need(value, gpu_name: str, what: str, flag: str, example: str):
    if value is None:
        raise CatalogError(
            f"{gpu_name}: the GPU catalog has no {what}; give it with {flag} (for example {example})"
        )
    return value


def resolve_hardware(gpu: str | catalog.GPU, settings: Settings) -> Hardware:
    """The GPU's figures, with the settings' overrides; a missing figure is an error naming the flag."""
    row = gpu if isinstance(gpu, catalog.GPU) else catalog.get_gpu(gpu)
    peak = settings.peak_tflops or row.bf16_tflops or getattr(row, "fp16_tflops", None)
    price = settings.usd_per_gpu_hour
    if price is None:
        try:
            p = catalog.price_for(row.id)
            price = p.usd_per_gpu_hour if p else None
        except CatalogError:
            price = None
    return Hardware(
        name=row.name,
        peak_tflops=_need(peak, row.name, "dense bf16/fp16 TFLOPS", "--peak-tflops", "312"),
        memory_gb=_need(settings.memory_gb or row.memory_gb, row.name, "memory size", "--memory-gb", "80"),
        hbm_tb_s=_need(settings.hbm_tb_s or row.hbm_tb_s, row.name, "HBM bandwidth", "--hbm-tb-s", "2.0 for A100/A800 80GB"),
        scaleup_gb_s=_need(settings.scaleup_gb_s or row.scaleup_gb_s, row.name, "scale-up (NVLink) bandwidth",
                           "--scaleup-gb-s", "300 for A100 NVLink 600 GB/s, 200 for A800 400 GB/s"),
        scaleout_gb_s=_need(settings.scaleout_gb_s or row.scaleout_gb_s, row.name, "scale-out (InfiniBand) bandwidth",
                            "--scaleout-gb-s", "25 for one 200 Gb/s HDR port per GPU, 50 for 400 Gb/s NDR"),
        gpus_per_node=settings.gpus_per_node or row.gpus_per_node,
        matmul_efficiency=_need(settings.matmul_efficiency or row.training_matmul_efficiency or row.matmul_efficiency,
                                row.name, "matmul efficiency", "--matmul-efficiency", "0.8"),
        matmul_efficiency_basis=(
            "given" if settings.matmul_efficiency else
            "catalog, fitted to published training runs" if row.training_matmul_efficiency else
            "catalog, single-GPU microbenchmark" if row.matmul_efficiency else ""),
        usd_per_gpu_hour=price,
        sm_count=(settings.sm_count or SM_COUNT.get(row.id)) if settings.wave_quantization else None,
    )


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


@dataclass(frozen=True)
class Config:
    tp: int
    pp: int
    dp: int
    zero_stage: int
    seq_parallel: bool
    recompute: str
    micro_batch: int
    virtual_stages: int = 1


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
    # time, seconds per step
    step_s: float = 0.0
    compute_s: float = 0.0
    tp_comm_s: float = 0.0
    pp_comm_s: float = 0.0
    dp_comm_s: float = 0.0
    bubble_s: float = 0.0
    optimizer_s: float = 0.0
    mfu: float = 0.0
    hfu: float = 0.0
    tokens_per_s_per_gpu: float = 0.0


def stage_params(arch: Arch, pp: int) -> float:
    """Parameters of the largest pipeline stage (layers plus the embedding and/or output table)."""
    return fs.pipeline_stage_params.raw(layers=arch.layers, pp=pp, layer_params=arch.layer_params,
                                        embedding_params=arch.embedding_params, tied_embeddings=arch.tied_embeddings)


def memory(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int, microbatches: int) -> Prediction:
    """Memory per GPU of the heaviest pipeline stage."""
    t, p, d, z = cfg.tp, cfg.pp, cfg.dp, cfg.zero_stage
    psi_b = stage_params(arch, p) / 1e9  # the heaviest stage's parameters; the formulas divide by tp (pp = 1 here)
    w = fm.mem_weights_gb.raw(params_b=psi_b, zero_stage=z, dp=d, tp=t, pp=1, bytes_weights=st.bytes_weights)
    g = fm.mem_grads_gb.raw(params_b=psi_b, zero_stage=z, dp=d, tp=t, pp=1, bytes_grads=st.bytes_grads)
    o = fm.mem_optimizer_gb.raw(params_b=psi_b, zero_stage=z, dp=d, tp=t, pp=1, bytes_optimizer=st.bytes_optimizer)
    buffer = fm.mem_zero3_buffer_gb.raw(largest_layer_params_b=arch.largest_layer_params / t / 1e9) if z >= 3 else 0.0
    layer = fm.act_layer_bytes_general.raw(
        seq_len=seq_len, micro_batch=cfg.micro_batch, hidden=arch.hidden, heads=arch.heads, kv_heads=arch.kv_heads,
        head_dim=arch.head_dim, ffn_hidden=arch.ffn_hidden, gated_ffn=arch.gated_ffn, tp=t,
        seq_parallel=cfg.seq_parallel, recompute=cfg.recompute, flash_attention=st.flash_attention)
    inflight = fm.act_inflight_factor.raw(pp=p, virtual_stages=cfg.virtual_stages, microbatches=microbatches)
    logits = fs.logits_memory_bytes.raw(seq_len=seq_len, micro_batch=cfg.micro_batch, vocab=arch.vocab, tp=t)
    act = fs.stage_activations_gb.raw(layers=arch.layers, layer_act_bytes=layer, inflight_factor=inflight,
                                      logits_bytes=logits, pp=p)
    total = fm.mem_total_gb.raw(static_gb=w + g + o + buffer, activations_gb=act, overhead_gb=st.overhead_gb)
    return Prediction(
        config=cfg, microbatches=microbatches, weights_gb=w, grads_gb=g, optimizer_gb=o, zero3_buffer_gb=buffer,
        activations_gb=act, overhead_gb=st.overhead_gb, memory_gb=total,
        fits=bool(fm.fits_in_gpu.raw(total_gb=total, memory_gb=hw.memory_gb)),
    )


def timing(pred: Prediction, arch: Arch, hw: Hardware, st: Settings, seq_len: int, global_batch: int) -> Prediction:
    """Fill in the step time, its breakdown, MFU, HFU and throughput of a configuration."""
    cfg = pred.config
    t, p, d, z, b, v = cfg.tp, cfg.pp, cfg.dp, cfg.zero_stage, cfg.micro_batch, cfg.virtual_stages
    m = pred.microbatches
    rc = cfg.recompute
    tokens_mb = seq_len * b
    layers_stage = arch.layers / p
    peak = hw.peak_tflops
    shape = dict(hidden=arch.hidden, heads=arch.heads, kv_heads=arch.kv_heads, head_dim=arch.head_dim,
                 ffn_hidden=arch.ffn_hidden, vocab=arch.vocab, gated_ffn=arch.gated_ffn)
    if hw.sm_count:
        # every linear layer of the stage: forward (twice with full recompute), input and weight gradient,
        # each charged for its whole waves of output tiles
        t_mm = fs.stage_linear_time_s.raw(layers_per_stage=layers_stage, tokens=tokens_mb, **shape, peak_tflops=peak,
                                          matmul_efficiency=hw.matmul_efficiency, sm_count=hw.sm_count, tp=t,
                                          recompute=rc)
    else:
        mm_flops = fs.stage_matmul_flops.raw(layers_per_stage=layers_stage, tokens=tokens_mb, **shape, tp=t,
                                             recompute=rc)
        t_mm = fs.compute_time_s.raw(flops=mm_flops, peak_tflops=peak, matmul_efficiency=hw.matmul_efficiency)
    att_flops = fs.stage_attention_flops.raw(layers_per_stage=layers_stage, tokens=tokens_mb, seq_len=seq_len,
                                             heads=arch.heads, head_dim=arch.head_dim, tp=t, recompute=rc)
    if st.flash_attention:
        t_att = fs.flash_attention_time_s.raw(flops=att_flops, peak_tflops=peak,
                                              attention_efficiency=st.attention_efficiency)
    else:
        # QK^T and AV as batched matmuls at their roofline; softmax, mask and dropout over the s x s scores
        # at HBM speed (no FlashAttention)
        t_att = fs.stage_unfused_attention_time_s.raw(
            flops=att_flops, layers_per_stage=layers_stage, tokens=tokens_mb, seq_len=seq_len, heads=arch.heads,
            peak_tflops=peak, matmul_efficiency=hw.matmul_efficiency, hbm_tb_s=hw.hbm_tb_s, tp=t, recompute=rc)
    t_ew = fs.elementwise_time_s.raw(layers_per_stage=layers_stage, tokens=tokens_mb, hidden=arch.hidden,
                                     ffn_hidden=arch.ffn_hidden, vocab=arch.vocab, hbm_tb_s=hw.hbm_tb_s,
                                     gated_ffn=arch.gated_ffn, tp=t, seq_parallel=cfg.seq_parallel, recompute=rc,
                                     elementwise_factor=st.elementwise_factor)
    compute_mb = t_mm + t_att + t_ew
    # tensor parallelism, inside a node
    t_tp = 0.0
    if t > 1:
        t_tp = fs.tp_comm_time_s.raw(layers_per_stage=layers_stage, seq_len=seq_len, micro_batch=b, hidden=arch.hidden,
                                     tp=t, scaleup_gb_s=hw.scaleup_gb_s, link_efficiency=st.link_efficiency,
                                     recompute=rc, tp_overlap=st.tp_overlap)
    links = dict(gpus_per_node=hw.gpus_per_node, scaleup_gb_s=hw.scaleup_gb_s, scaleout_gb_s=hw.scaleout_gb_s)
    # pipeline point-to-point: activation forward and gradient backward per micro-batch and virtual stage
    t_p2p = 0.0
    if p > 1:
        t_p2p = fs.pipeline_p2p_time_s.raw(tokens=tokens_mb, hidden=arch.hidden,
                                           bandwidth_gb_s=fs.group_bandwidth_gb_s.raw(span_gpus=t * p, **links),
                                           link_efficiency=st.link_efficiency, tp=t, virtual_stages=v)
    mb_s = compute_mb + t_tp + t_p2p
    # data parallelism
    psi = stage_params(arch, p) / t
    t_dp = 0.0
    if d > 1:
        t_dp = fs.dp_comm_time_s.raw(params_per_gpu=psi, dp=d, microbatch_s=mb_s,
                                     bandwidth_gb_s=fs.group_bandwidth_gb_s.raw(span_gpus=t * p * d, **links),
                                     link_efficiency=st.link_efficiency, zero_stage=z, microbatches=m,
                                     grad_bytes=st.grad_bytes, bytes_weights=st.bytes_weights,
                                     overlap_frac=st.dp_overlap)
    t_opt = fs.optimizer_step_s.raw(params_per_gpu_b=psi / 1e9, hbm_tb_s=hw.hbm_tb_s, zero_stage=z, dp=d,
                                    bytes_per_param_step=st.bytes_per_param_step)
    step = fs.step_time_s.raw(microbatches=m, microbatch_s=mb_s, pp=p, virtual_stages=v, comm_s=t_dp, compute_s=t_opt)
    n = t * p * d
    tokens = global_batch * seq_len
    mfpt = fs.model_flops_per_token.raw(layers=arch.layers, hidden=arch.hidden, heads=arch.heads, kv_heads=arch.kv_heads,
                                        head_dim=arch.head_dim, ffn_hidden=arch.ffn_hidden, vocab=arch.vocab,
                                        seq_len=seq_len, gated_ffn=arch.gated_ffn)
    hfpt = fs.hardware_flops_per_token.raw(layers=arch.layers, hidden=arch.hidden, heads=arch.heads,
                                           kv_heads=arch.kv_heads, head_dim=arch.head_dim, ffn_hidden=arch.ffn_hidden,
                                           vocab=arch.vocab, seq_len=seq_len, gated_ffn=arch.gated_ffn, recompute=rc)
    bubble = fs.bubble_time_s.raw(pp=p, microbatches=m, microbatch_s=mb_s, virtual_stages=v)
    pred.step_s = step
    pred.compute_s = m * compute_mb
    pred.tp_comm_s = m * t_tp
    pred.pp_comm_s = m * t_p2p
    pred.bubble_s = bubble
    pred.dp_comm_s = t_dp
    pred.optimizer_s = t_opt
    pred.mfu = fs.mfu_from_step.raw(flops_per_token=mfpt, tokens=tokens, step_s=step, n_gpus=n, peak_tflops=peak)
    pred.hfu = fs.mfu_from_step.raw(flops_per_token=hfpt, tokens=tokens, step_s=step, n_gpus=n, peak_tflops=peak)
    pred.tokens_per_s_per_gpu = fs.tokens_per_s_per_gpu.raw(tokens=tokens, step_s=step, n_gpus=n)
    return pred


def evaluate(arch: Arch, hw: Hardware, st: Settings, cfg: Config, seq_len: int, global_batch: int) -> Prediction:
    """Memory and step time of one configuration (global_batch in sequences)."""
    per_replica = global_batch / cfg.dp
    microbatches = int(round(per_replica / cfg.micro_batch))
    pred = memory(arch, hw, st, cfg, seq_len, microbatches)
    return timing(pred, arch, hw, st, seq_len, global_batch)


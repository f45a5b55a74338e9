"""The planner's settings by what they are: the stack's facts, the recipe's memory inputs, overrides of the GPU's
figures and the price (xlcalc.planner.Settings joins them).
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from ..recipes import DEFAULT_RECIPE, MEMORY_DEFAULTS, default_bytes

_BYTES = default_bytes()

__all__ = ["StackFacts", "MemoryRecipe", "HardwareOverrides", "PriceInputs", "KINDS"]


class _Kind(BaseModel):
    """One kind of setting: a name that is none of its fields is refused."""

    model_config = ConfigDict(extra="forbid")


class StackFacts(_Kind):
    """What a software stack does that the step time must know: kernel efficiencies, attention, loss and elementwise
    traffic, overlaps, collective bytes. A stack profile (xlcalc.planner.stacks) sets these, each fact with its source."""

    matmul_efficiency: Optional[float] = Field(
        default=None, gt=0, le=1,
        description="Share of peak the GPU's matmuls reach in a training step. None: the stack profile's, fitted to "
                    "its published runs (docs/validation.md); at stack 'planner' the GPU's catalog "
                    "training_matmul_efficiency (fitted to published runs, docs/validation.md: A100 80GB 0.686, "
                    "H100 SXM 0.753), else its microbenchmark matmul_efficiency (ml-engineering MAMF table).")
    matmul_efficiency_of_mamf: bool = Field(
        default=False,
        description="Read matmul_efficiency as a share of the GPU's maximum achievable matmul FLOPS (its catalog "
                    "matmul_efficiency, measured: ml-engineering MAMF table, A100 SXM 85.9%, H100 SXM 80.1% of peak) "
                    "instead of a share of peak: the software stack's derate on top of what the GPU itself sustains "
                    "under its clocks and power cap.")
    attention_efficiency: float = Field(
        default=0.35, gt=0, le=1,
        description="Share of peak reached by the attention core (scores and weighted sum), on the FLOPs it computes "
                    "(fused: the causal half). Shah et al. 2024 (FlashAttention-3): FlashAttention-2 reaches 35% of peak on H100.")
    attention_by_generation: bool = Field(
        default=False,
        description="The attention kernel is FlashAttention-2 class (written for Ampere): on a Hopper GPU it reaches "
                    "0.70 of its A100 share of peak (FLASH_ATTENTION_2_SHARE: 50% on A100, Dao 2023; 35% on H100, "
                    "Shah et al. 2024), so the attention core takes 1/0.70 as long per FLOP. False: one share on every GPU.")
    attention_kernel_speed: float = Field(
        default=1.0, gt=0, le=1,
        description="Speed of the stack's attention kernel relative to FlashAttention-2 on the same GPU (the "
                    "attention core takes 1/speed as long). 1: FlashAttention-2 or a faster kernel. FlashAttention "
                    "in Triton (MPT's attn_impl 'triton'): Dao 2023 §4.1, FlashAttention-2 is 1.3-1.5x faster in "
                    "the forward pass and about 2x in the backward pass, whose FLOPs are 2.5x the forward's: "
                    "3.5 / (1.4 + 2.5 x 2) = 0.55 (TRITON_FLASH_ATTENTION_SPEED).")
    flash_attention: bool = Field(default=True, description="Fused attention: no s x s activations, causal half computed.")
    fp8_cast_bytes: float = Field(
        default=4.0, ge=0,
        description="HBM bytes per element of every FP8 GEMM operand cast from bf16 (activation inputs forward, "
                    "output gradients backward): 4 for an unfused Transformer Engine cast-transpose (read 2 bytes, "
                    "write the FP8 tensor and its transpose, 1 byte each); 0 when the cast is fused into the kernel "
                    "that produces the operand. Counted as non-matmul traffic of FP8 runs (FP8_CAST_BYTES_PER_TOKEN). "
                    "Default: Megatron-Core with Transformer Engine (4 bytes, forward casts fused).")
    fp8_forward_casts_fused: bool = Field(
        default=True,
        description="The norms and the MLP activation write their outputs directly in FP8 (Transformer Engine "
                    "LayerNormLinear / LayerNormMLP, as Megatron-Core uses them): of the forward GEMM operands only "
                    "the attention output is cast separately; the backward output gradients are cast either way.")
    fp8_efficiency_ratio: float = Field(
        default=0.883, gt=0, le=1,
        description="Share of the FP8 peak the FP8 matmuls reach, relative to the bf16 matmul efficiency: ml-engineering "
                    "MAMF table, H100 SXM fp8 70.9% / bf16 80.3% = 0.883.")
    loss_bytes: float = Field(
        default=16.0, ge=0,
        description="HBM bytes per logit the loss moves (ELEMENTWISE_TIME_S): 16 for a cross-entropy over fp32 logits "
                    "(forward read 4 + write 4, backward read 4 + write 4); 6 for a fused cross-entropy kernel on bf16 "
                    "logits (flash-attn's xentropy: forward read 2, backward read 2 + write the gradient in place 2), "
                    "llm-foundry's default loss_fn 'fused_crossentropy' (llmfoundry/models/mpt/modeling_mpt.py, 2023).")
    dropout: bool = Field(
        default=True,
        description="The model trains with dropout after attention and MLP (p > 0): two dropout kernels per layer in "
                    "the counted non-matmul traffic (ELEMENTWISE_BYTES_PER_TOKEN). False: p = 0, where PyTorch's "
                    "dropout returns its input and launches no kernel (MPT: resid_pdrop 0.0 by default).")
    elementwise_factor: float = Field(default=1.0, ge=0, description="Multiplier on the counted HBM traffic of norms, residuals, dropout, activation.")
    link_efficiency: float = Field(
        default=0.8, gt=0, le=1,
        description="Achieved collective bus bandwidth / link bandwidth (NCCL ring on NVLink or InfiniBand: 0.7-0.9).")
    tp_overlap: float = Field(default=0.0, ge=0, le=1, description="Share of TP communication hidden behind compute (0: Megatron default, no overlap; async TP / TP comm overlap hides most of it).")
    pp_overlap: float = Field(default=0.0, ge=0, le=1, description="Share of pipeline send/receive hidden behind compute (Megatron --overlap-p2p-communication with interleaving).")
    cp_overlap: float = Field(default=1.0, ge=0, le=1, description="Share of the attention compute that hides the context-parallel KV exchange (Megatron ring attention overlaps the next chunk's KV with this chunk's attention).")
    ep_overlap: float = Field(
        default=0.0, ge=0, le=1,
        description="Share of a stage's compute that hides the expert-parallel all-to-all (0: Megatron's default "
                    "dispatcher, no overlap; DeepSeek-V3's DualPipe overlaps the forward of one micro-batch with "
                    "the backward of another and hides it: 1).")
    dp_overlap: float = Field(
        default=0.5, ge=0, le=1,
        description="Share of one micro-batch's compute (ZeRO 0-2) or of the whole step's compute (ZeRO-3) that "
                    "data-parallel communication hides behind: gradients appear only as the backward pass proceeds and "
                    "the collective competes with compute for the GPU.")
    a2a_bytes: float = Field(
        default=2.0, gt=0, le=4,
        description="Bytes per element of the tokens the all-to-all sends (bf16: 2; DeepSeek-V3 dispatches in FP8 "
                    "and combines in bf16: 1.5 on average).")
    max_nodes_per_token: int = Field(
        default=0, ge=0,
        description="Node-limited routing: NVLink domains one token's experts may span, each reached once over the "
                    "NIC and forwarded on NVLink (DeepSeek-V3: 4). 0: no limit, every remote expert copy crosses.")
    comm_sms: int = Field(
        default=0, ge=0,
        description="Streaming multiprocessors kept busy by communication kernels that overlap compute (DeepSeek-V3 "
                    "Technical Report §3.2.2: 20 of the H800's 132 SMs run the all-to-all); compute runs on the rest. "
                    "0: communication takes no SMs from compute.")
    gather_bytes: Optional[float] = Field(
        default=None, gt=0,
        description="Bytes per parameter element of the ZeRO / FSDP weight all-gathers. None: bytes_weights (the "
                    "stored weights are gathered as they are). PyTorch FSDP with mixed precision casts each sharded "
                    "fp32 parameter to param_dtype before the all-gather (MixedPrecision / MixedPrecisionPolicy "
                    "param_dtype=bfloat16: 2), while its optimizer keeps fp32 shards.")
    grad_bytes: float = Field(default=4, gt=0, description="Bytes per gradient element in the data-parallel reduction (Megatron bf16 reduces fp32 grads).")
    bytes_per_param_step: float = Field(default=30, ge=0, description="HBM bytes per parameter the Adam step reads and writes.")


class MemoryRecipe(_Kind):
    """What the memory model takes from the training recipe: bytes per parameter, loss buffers, optimizer temporaries,
    autocast copies, gradients freed, the flat allowance and the fit's margin. A framework profile (xlcalc.frameworks)
    sets these."""

    bytes_weights: float = Field(default=_BYTES["bytes_weights"], ge=0,
                                 description=f"Bytes per parameter: weights (recipe {DEFAULT_RECIPE}).")
    bytes_grads: float = Field(default=_BYTES["bytes_grads"], ge=0,
                               description=f"Bytes per parameter: gradients (recipe {DEFAULT_RECIPE}).")
    bytes_optimizer: float = Field(default=_BYTES["bytes_optimizer"], ge=0,
                                   description=f"Bytes per parameter: optimizer states (recipe {DEFAULT_RECIPE}).")
    logits_buffer_bytes: float = Field(default=MEMORY_DEFAULTS["logits_buffer_bytes"], ge=0,
                                       description="Bytes per logit the loss holds at its peak (memory; "
                                                   "xlcalc.recipes.MEMORY_DEFAULTS).")
    optimizer_step_bytes: float = Field(default=MEMORY_DEFAULTS["optimizer_step_bytes"], ge=0,
                                        description="Bytes per parameter the optimizer step allocates (memory).")
    autocast_copy_bytes: float = Field(default=MEMORY_DEFAULTS["autocast_copy_bytes"], ge=0,
                                       description="Bytes per weight of autocast's copies saved for backward (memory).")
    grads_freed: bool = Field(default=MEMORY_DEFAULTS["grads_freed"],
                              description="Gradients set to None between steps (memory: the later of activations "
                                          "and gradients, not their sum).")
    overhead_gb: float = Field(default=MEMORY_DEFAULTS["overhead_gb"], ge=0,
                               description="Other memory per GPU: NCCL buffers, library workspaces (GB).")
    cuda_context_gb: float = Field(default=MEMORY_DEFAULTS["cuda_context_gb"], ge=0,
                                   description="CUDA context per GPU, in the fit's margin (GB).")
    allocator_reserve_frac: float = Field(
        default=MEMORY_DEFAULTS["allocator_reserve_frac"], ge=0, le=1,
        description="Caching allocator reserve as a share of the predicted memory, in the fit's margin.")
    memory_margin: float = Field(
        default=1.0, ge=0.2, le=5,
        description="Measured / predicted peak memory per GPU of a calibrated run (xlcalc calibrate --peak-memory-gb): "
                    "the predicted memory of every configuration is multiplied by it before the fit check. 1: the "
                    "memory model as it is.")


class HardwareOverrides(_Kind):
    """Overrides of the GPU catalog's figures (xlcalc.planner.hardware.resolve_hardware: None takes the catalog's)."""

    peak_tflops: Optional[float] = Field(default=None, gt=0, description="Override the GPU's dense bf16 (else fp16) peak TFLOP/s.")
    memory_gb: Optional[float] = Field(default=None, gt=0, description="Override the GPU's memory (GB).")
    hbm_tb_s: Optional[float] = Field(default=None, gt=0, description="Override the GPU's HBM bandwidth (TB/s).")
    scaleup_gb_s: Optional[float] = Field(default=None, gt=0, description="Override the GPU's scale-up bandwidth per direction (GB/s).")
    scaleout_gb_s: Optional[float] = Field(default=None, gt=0, description="Override the GPU's scale-out bandwidth per direction (GB/s).")
    pcie_gb_s: Optional[float] = Field(
        default=None, gt=0, description="Host link (PCIe) bandwidth of one GPU per direction (GB/s), for an offloaded "
                                        "optimizer: the GPU datasheet's PCIe figure halved (H100 SXM, PCIe Gen5 x16: "
                                        "128 GB/s both ways, 64 each). None: asked for when the optimizer is offloaded.")
    host_memory_gb_s: Optional[float] = Field(
        default=None, gt=0, description="CPU memory bandwidth per GPU (GB/s) the offloaded Adam step streams its "
                                        "states through: the server's DRAM bandwidth / its GPUs. None: asked for when "
                                        "the optimizer is offloaded.")
    gpus_per_node: Optional[int] = Field(default=None, ge=1, description="Override GPUs per node.")
    nvlink_domain: Optional[int] = Field(default=None, ge=1, description="Override the GPUs sharing one NVLink domain (TP stays inside it; groups inside it never use the NIC).")
    sm_count: Optional[int] = Field(
        default=None, ge=1,
        description="Streaming multiprocessors per GPU for wave quantization. None: the known count of the GPU "
                    "(A100/A800 108, H100 SXM 132), else no wave quantization.")
    wave_quantization: bool = Field(
        default=True,
        description="Charge each matmul for its whole waves of output tiles (tile and wave quantization, NVIDIA "
                    "Matrix Multiplication Background guide §3); needs the GPU's SM count. False: every matmul at "
                    "the matmul efficiency.")


class PriceInputs(_Kind):
    """The price of a GPU-hour (None: the price catalog's)."""

    usd_per_gpu_hour: Optional[float] = Field(default=None, ge=0, description="Price per GPU-hour; None: the price catalog's, if any.")


# each kind of setting, by the name its group has in help and docs
KINDS: dict[str, type[BaseModel]] = {"stack facts": StackFacts, "memory recipe": MemoryRecipe,
                                     "GPU overrides": HardwareOverrides, "price": PriceInputs}

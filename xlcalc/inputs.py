"""Every input a formula can take, defined once: unit, meaning, allowed values, Excel name.

A formula's parameter *is* one of these names, so ``params_b`` means the same
thing (and is checked the same way) in every formula, UDF and workbook cell.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from .errors import InputError
from .frameworks import DEFAULT_FRAMEWORK as _DEFAULT_FRAMEWORK
from .frameworks import FRAMEWORK_ALIASES as _FRAMEWORK_ALIASES
from .frameworks import FRAMEWORKS as _FRAMEWORKS
from .frameworks import PRECISION_ALIASES as _PRECISION_ALIASES
from .frameworks import PRECISIONS as _PRECISIONS
from .lora_targets import TARGET_SETS as _TARGET_SETS
from .lora_targets import target_set as _target_set
from .recipes import RECIPES as _RECIPES
from .recipes import SHARDING as _SHARDING


@dataclass(frozen=True)
class InputSpec:
    name: str
    unit: str
    doc: str
    kind: str = "float"  # float | int | bool | choice | name (a row of a catalog: its id or an alias, any case)
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # (a name users know a choice by, the choice), any case
    reads: Callable[[str], str] | None = None  # the choice a text users type means, beyond the aliases (or an error)
    excel_name: str = ""
    number_format: str = "General"
    example: Any = None  # a typical value (docs, generated tests)
    limit_reason: str = ""  # why the upper bound is where it is (shown when a value is above it)
    floor_reason: str = ""  # why the lower bound is where it is (shown when a value is below it)

    @cached_property  # (a workbook's checks ask for it hundreds of times)
    def allowed(self) -> str:
        """What is allowed, in words."""
        if self.kind == "bool":
            return "TRUE or FALSE"
        if self.kind == "choice":
            known = "; or a name it is known by: " + ", ".join(f"{a} ({c})" for a, c in self.aliases)
            return "one of " + ", ".join(f'"{c}"' for c in self.choices) + (known if self.aliases else "")
        if self.kind == "name":
            return f"a name: {self.doc}"
        noun = "a whole number" if self.kind == "int" else "a number"
        bounds = ((">", self.gt), (">=", self.ge), ("<", self.lt), ("<=", self.le))
        parts = [f"{op} {fmt_bound(bound)}" for op, bound in bounds if bound is not None]
        return noun + (" " + " and ".join(parts) if parts else "")

    @property
    def is_fraction(self) -> bool:
        """A share from 0 to 1 (a value such as 5 is most likely a percentage)."""
        low = self.ge if self.ge is not None else self.gt
        return self.kind == "float" and self.le == 1 and low is not None and 0 <= low < 1

    def help(self) -> str:
        return f"{self.doc} [{self.unit}]" if self.unit else self.doc


def fmt_bound(x: float) -> str:
    """A bound as a person reads it: 100,000 or 1e+13 or 0.5."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e9:
        return f"{int(x):,}"
    if x.is_integer() or abs(x) >= 1e9:
        return f"{x:.0e}".replace("e+0", "e+")
    return f"{x:g}"



_SPECS: dict[str, InputSpec] = {}


def _add(name: str, unit: str, doc: str, excel_name: str = "", **kw: Any) -> None:
    title = "_".join(p.capitalize() for p in name.split("_"))  # params_b: Params_B
    _SPECS[name] = InputSpec(name=name, unit=unit, doc=doc, excel_name=excel_name or title, **kw)


POS: dict[str, Any] = {"gt": 0}
NONNEG: dict[str, Any] = {"ge": 0}
COUNT: dict[str, Any] = {"kind": "int", "ge": 1}
FRACTION: dict[str, Any] = {"ge": 0, "le": 1}

# --- model and data ------------------------------------------------------------
_add("params_b", "billion parameters", "Model parameters, in billions (70 = 70e9)", example=70, **POS)
_add("active_params_b", "billion parameters", "Parameters each token uses, in billions: a mixture of experts' active parameters, the N of 6*N*D (0 = all parameters, a dense model)", example=0, **NONNEG)
_add("tokens_t", "trillion tokens", "Training tokens, in trillions (2 = 2e12)", example=2, **POS)
_add("trainable_params_b", "billion parameters", "Trainable (e.g. LoRA adapter) parameters, in billions", example=0.1, **NONNEG)
_add("tokens_per_param", "tokens/parameter", "Training tokens per parameter (Chinchilla: 20)", example=20, **POS)
_add("compute_flops", "FLOPs", "Training compute budget, in FLOPs", example=5.76e23, **POS)
_add("flops_per_token", "FLOPs/token", "Training FLOPs per token", example=4.2e11, **POS)
_add("seq_len", "tokens", "Sequence length", example=4096, **COUNT)
_add("micro_batch", "sequences", "Micro-batch size per GPU", example=1, **COUNT)
_add("global_batch", "sequences", "Global batch size per iteration", example=1024, **COUNT)
_add("hidden", "", "Hidden size h", example=8192, **COUNT)
_add("layers", "", "Transformer layers L", example=80, **COUNT)
_add("heads", "", "Attention heads a", example=64, **COUNT)
_add("head_dim", "", "Dimension of one attention head", example=128, **COUNT)
_add("head_dim_given", "", "Dimension of one attention head where the model gives its own (0 = hidden / heads)", example=0, kind="int", ge=0)
_add("vocab", "tokens", "Vocabulary size V", example=32000, **COUNT)
_add("nonembed_params_b", "billion parameters", "Non-embedding parameters, in billions", example=70, **POS)

# --- hardware --------------------------------------------------------------------
_add("peak_tflops", "TFLOP/s per GPU", "Dense peak TFLOP/s of one GPU at the training precision", "Peak_TFLOPS", example=312, **POS)
_add("achieved_tflops", "TFLOP/s per GPU", "Achieved (measured) TFLOP/s per GPU, counting the FLOPs the hardware did", example=153, **POS)
_add("n_gpus", "GPUs", "Number of GPUs", "N_GPUs", example=1024, **COUNT)
_add("mfu", "fraction", "Model FLOPs utilisation, a fraction of peak (0.4 = 40%)", "MFU", example=0.4, gt=0, le=1, number_format="0.0%")
_add("memory_gb", "GB", "Memory of one GPU, GB (1e9 bytes)", "GPU_Memory_GB", example=80, **POS)
_add("hbm_tb_s", "TB/s", "Memory (HBM) bandwidth of one GPU, TB/s", example=3.35, **POS)
_add("link_gb_s", "GB/s", "Link bandwidth between two chips, GB/s (1e9 bytes/s)", example=45, **POS)
_add("bandwidth_gb_s", "GB/s", "Bandwidth, GB/s (1e9 bytes/s)", example=900, **POS)
_add("gpus_per_node", "GPUs", "GPUs per server node", "GPUs_per_Node", example=8, **COUNT)

# --- time --------------------------------------------------------------------------
_add("days", "days", "Wall-clock days", example=90, **POS)
_add("gpu_hours", "GPU-hours", "GPU-hours", example=1.72e6, **POS)
_add("flops", "FLOPs", "Floating-point operations", example=1e12, **POS)
_add("bytes", "bytes", "Bytes moved", example=1e9, **POS)
_add("intensity", "FLOP/byte", "Arithmetic intensity, FLOPs per byte", example=100, **POS)
_add("rows", "", "Rows B of the left matrix [B,D]", example=256, **COUNT)
_add("inner", "", "Shared dimension D of [B,D]x[D,F]", example=8192, **COUNT)
_add("cols", "", "Columns F of the right matrix [D,F]", example=32768, **COUNT)
_add("bytes_per_element", "bytes", "Bytes per element (bf16 = 2)", example=2, **POS)
_add("size_bytes", "bytes", "Size of the buffer being reduced or gathered, bytes", example=1e9, **POS)
_add("ranks", "GPUs", "Number of ranks in the collective", example=8, **COUNT)

# --- parallelism -----------------------------------------------------------------
_add("tp", "GPUs", "Tensor-parallel size t", "TP_Size", example=8, **COUNT)
_add("pp", "GPUs", "Pipeline-parallel size p", "PP_Size", example=1, **COUNT)
_add("dp", "GPUs", "Data-parallel size d (ZeRO shards over it)", "DP_Size", example=1, **COUNT)
_add("zero_stage", "", "ZeRO stage: 0 none, 1 optimizer, 2 +gradients, 3 +weights", "ZeRO_Stage", example=0, kind="int", ge=0, le=3)
_add("seq_parallel", "", "Sequence parallelism on (TRUE/FALSE)", example=False, kind="bool")
_add("recompute", "", 'Activation recomputation: "none", "selective" (Megatron: the attention core), "op_selective" (PyTorch per-op, torchtitan\'s policy) or "full"', example="none", kind="choice", choices=("none", "selective", "op_selective", "full"))
_add("full_recompute", "", "Full activation recomputation (TRUE/FALSE)", example=False, kind="bool")
_add("virtual_stages", "", "Interleaved virtual pipeline stages per GPU v (1 = plain 1F1B)", example=1, **COUNT)
_add("microbatches", "", "Micro-batches per iteration per pipeline m", example=32, **COUNT)
_add("replica_gpus", "GPUs", "GPUs in one model replica (TP x PP)", example=16, **COUNT)
_add("gpus_needed", "GPUs", "GPUs needed before rounding (may be fractional)", example=865.6, **POS)
_add("spare_frac", "fraction", "Spare GPUs for failures and maintenance, a fraction (0.05 = 5%)", example=0.05, ge=0, le=10, number_format="0%")

# --- memory ------------------------------------------------------------------------
_add("bytes_weights", "bytes/param", "Bytes per parameter for weights (bf16: 2)", example=2, **NONNEG)
_add("bytes_grads", "bytes/param", "Bytes per parameter for gradients (bf16: 2, fp32: 4)", example=4, **NONNEG)
_add("bytes_optimizer", "bytes/param", "Bytes per parameter for optimizer states (Adam fp32 m+v: 8, +master: 12)", example=8, **NONNEG)
_add("bytes_trainable", "bytes/param", "Bytes per trainable parameter (weights+grads+optimizer)", example=14, **NONNEG)
_add("static_gb", "GB", "Model-state memory per GPU, GB", example=30, **NONNEG)
_add("activations_gb", "GB", "Activation memory per GPU, GB", example=10, **NONNEG)
_add("act_gb_per_sample", "GB", "Activation memory per GPU for a micro-batch of 1, GB", example=5, **POS)
_add("overhead_gb", "GB", "Other memory per GPU (NCCL buffers, library workspaces; the fit adds the CUDA context and allocator reserve as its margin), GB", "Overhead_GB", example=4, **NONNEG)
_add("total_gb", "GB", "Total memory needed per GPU, GB", example=70, **NONNEG)
_add("cuda_context_gb", "GB", "CUDA context per GPU (driver, loaded kernels), held beside the tensors, GB", "CUDA_Context_GB", example=0.4, **NONNEG)
_add("allocator_reserve_frac", "fraction", "Caching allocator reserve (reserved - allocated: rounding, fragmentation) as a share of the predicted memory", example=0.05, **FRACTION)
_add("margin_gb", "GB", "Margin the fit answer adds to the predicted memory per GPU, GB", example=4, **NONNEG)
_add("largest_layer_params_b", "billion parameters", "Parameters of the largest layer, in billions (ZeRO-3 gathers it whole)", example=0.032, **NONNEG)

# --- cost ------------------------------------------------------------------------------
_add("usd_per_gpu_hour", "USD/GPU-hour", "Price of one GPU-hour", "USD_per_GPU_Hour", example=2.0, number_format='"$"#,##0.00', **NONNEG)
_add("capex_usd_per_gpu", "USD/GPU", "Purchase price per GPU incl. its share of server and network", "Capex_USD_per_GPU", example=30000, number_format='"$"#,##0', **NONNEG)
_add("depreciation_years", "years", "Depreciation life of the hardware", example=3, **POS)
_add("kw_per_gpu", "kW", "Power per GPU incl. its share of the server, kW", "KW_per_GPU", example=1.0, **NONNEG)
_add("pue", "", "Power usage effectiveness of the data centre (>= 1)", "PUE", example=1.3, ge=1, le=5)
_add("usd_per_kwh", "USD/kWh", "Electricity price", "USD_per_kWh", example=0.1, number_format='"$"#,##0.000', **NONNEG)
_add("compute_usd", "USD", "Compute cost of one clean training run", example=5e6, number_format='"$"#,##0', **NONNEG)
_add("failure_frac", "fraction", "Failures, restarts and lost work, a fraction of compute (0.15 = 15%)", example=0.15, ge=0, le=10, number_format="0%")
_add("experiments_frac", "fraction", "Experiments and ablations, a fraction of compute", example=0.3, ge=0, le=100, number_format="0%")
_add("data_usd", "USD", "Data: purchase, crawling, labelling, cleaning", "Data_USD", example=5e5, number_format='"$"#,##0', **NONNEG)
_add("people_usd", "USD", "People for the duration of the project", "People_USD", example=2e6, number_format='"$"#,##0', **NONNEG)
_add("other_usd", "USD", "Other lines: storage, network, facilities", "Other_USD", example=2e5, number_format='"$"#,##0', **NONNEG)
_add("total_usd", "USD", "A total cost in USD", example=1e7, number_format='"$"#,##0', **NONNEG)
_add("budget_usd", "USD", "Budget in USD", "Budget_USD", example=1e7, number_format='"$"#,##0', **POS)

# --- money: own vs rent, goodput, budget-first planning ------------------------------
_add("capex_usd_per_server", "USD/server", "Purchase price of one server without its GPUs (CPUs, memory, NICs, chassis)", "Capex_USD_per_Server", example=50000, number_format='"$"#,##0', **NONNEG)
_add("kw_per_server", "kW", "Power of one server without its GPUs (CPUs, fans, NICs), kW", "KW_per_Server", example=2.0, **NONNEG)
_add("utilisation", "fraction", "Share of the hardware's hours that are busy with paid work (1 = always busy)", example=0.7, ge=0.01, le=1, number_format="0%",
     floor_reason="the lower bound is 1%: below it the owned GPUs stand idle over 99% of their life and the run bears "
                  "over 100x their depreciation (utilisation 1e-12 would price a month at $5e16); such hardware is "
                  "rented, not owned")
_add("kw_per_rack", "kW", "Power one rack can feed and cool, kW (seed 001: 20-40 kW)", "KW_per_Rack", example=40, **POS)
_add("usd_per_rack_month", "USD/rack-month", "Hosting (colocation, space, cooling, operations) per rack and month", "USD_per_Rack_Month", example=0, number_format='"$"#,##0', **NONNEG)
_add("gpu_mtbf_h", "hours", "Mean time between job-stopping failures of one GPU (with its share of the server and network), hours", "GPU_MTBF_H", example=50677, **POS)
_add("node_mtbf_h", "hours", "Mean time between job-stopping failures of one server node, hours", "Node_MTBF_H", example=6335, **POS)
_add("save_s", "seconds", "Time the job stalls to save one checkpoint, seconds", "Ckpt_Save_S", example=60, **POS)
_add("restart_s", "seconds", "Time from a failure until training runs again (detect, reschedule, load the checkpoint), seconds", example=600, **NONNEG)
_add("goodput", "fraction", "Goodput: the share of wall-clock time that makes training progress", example=0.95, gt=0, le=1, number_format="0.0%")
_add("interruptions", "", "Unexpected job interruptions counted over a period", example=419, **POS)
_add("months", "months", "Months (of 365/12 days)", example=12, **POS)
_add("use_typed_tax", "", "Use the typed failure share instead of the goodput estimate (TRUE/FALSE)", example=False, kind="bool")
_add("base_value", "", "The base-case value of an input a range moves", example=0.4, **POS)
_add("range_factor", "ratio", "Multiplier of the base value at the low or high end of a range (0.75 = 25% lower)", example=0.75, gt=0, le=100)
_add("base_usd", "USD", "The base case's cost, USD", example=1e7, number_format='"$"#,##0', **NONNEG)
_add("data_frac", "fraction", "Data as a share of compute (added to any amount)", example=0.05, ge=0, le=100, number_format="0%")
_add("people_frac", "fraction", "People as a share of compute (added to any amount)", example=0.1, ge=0, le=100, number_format="0%")
_add("experiments_usd", "USD", "Experiments, ablations and failed runs as an amount (added to any share)", "Experiments_USD_Amount", example=5e5, number_format='"$"#,##0', **NONNEG)
_add("failures_usd", "USD", "Failures, restarts and checkpoints, USD", example=1e5, number_format='"$"#,##0', **NONNEG)
_add("share_frac", "fraction", "A budget line as a share of compute (0.1 = 10%)", example=0.1, ge=0, le=100, number_format="0%")
_add("amount_usd", "USD", "A budget line as an amount", example=1e6, number_format='"$"#,##0', **NONNEG)


# --- step-time model (planner) ------------------------------------------------------
_add("kv_heads", "", "Key/value heads (GQA; = heads for multi-head attention)", "KV_Heads", example=8, **COUNT)
_add("ffn_hidden", "", "Inner size of the feed-forward block F (GPT: 4h)", "FFN_Hidden", example=28672, **COUNT)
_add("gated_ffn", "", "Gated feed-forward (SwiGLU/GeGLU: three matrices instead of two) (TRUE/FALSE)", "Gated_FFN", example=True, kind="bool")
_add("flash_attention", "", "Fused (Flash) attention: no s x s tensors stored, causal half computed (TRUE/FALSE)", example=True, kind="bool")
_add("matmul_efficiency", "fraction", "Share of peak the matmuls reach in training (catalog: fitted to published runs, else measured MAMF / peak)", example=0.8, gt=0, le=1, number_format="0.0%")
_add("attention_efficiency", "fraction", "Achievable share of peak in the fused attention kernel", example=0.5, gt=0, le=1, number_format="0.0%")
_add("link_efficiency", "fraction", "Achievable share of a link's bandwidth in collectives (bus bandwidth / link bandwidth)", example=0.8, gt=0, le=1, number_format="0%")
_add("overlap_frac", "fraction", "Share of a communication that can hide behind its overlap window", example=0.5, **FRACTION)
_add("scaleup_gb_s", "GB/s", "Scale-up (NVLink) bandwidth per GPU, one direction, GB/s", "Scaleup_GB_s", example=450, **POS)
_add("pcie_gb_s", "GB/s", "Host link (PCIe) bandwidth of one GPU, one direction, GB/s (PCIe Gen5 x16: 64)", "PCIe_GB_s", example=64, **POS)
_add("host_memory_gb_s", "GB/s", "CPU memory bandwidth available to one GPU's offloaded optimizer, GB/s (a server's DRAM bandwidth / its GPUs)", "Host_Memory_GB_s", example=75, **POS)
_add("scaleout_gb_s", "GB/s", "Scale-out (InfiniBand/RoCE) bandwidth per GPU, one direction, GB/s", "Scaleout_GB_s", example=50, **POS)
_add("tokens", "tokens", "Tokens processed (e.g. per micro-batch or per step)", example=4096, **POS)
_add("global_batch_tokens", "tokens", "Global batch: tokens per optimizer step, rounded to whole sequences, a whole "
     "number of micro-batches per data-parallel group (not given: a catalog model's published batch, else none)", example=4194304, **POS)
_add("layers_per_stage", "", "Transformer layers on one pipeline stage (L/p)", example=20, **POS)
_add("compute_s", "seconds", "Compute time", example=1.0, **NONNEG)
_add("comm_s", "seconds", "Communication time", example=0.1, **NONNEG)
_add("window_s", "seconds", "Compute time a communication can overlap with", example=0.5, **NONNEG)
_add("microbatch_s", "seconds", "Time of one micro-batch (forward + backward) on one pipeline stage", example=0.5, **NONNEG)
_add("step_s", "seconds", "Time of one training step (iteration)", example=10, **POS)
_add("bytes_per_param_step", "bytes/param", "HBM bytes read + written per parameter by the optimizer step (Adam fp32: 30)", example=30, **NONNEG)
_add("elementwise_factor", "", "Multiplier on the counted HBM traffic of non-matmul kernels (norms, residuals, activations); 0 = ignore", example=1, **NONNEG)
_add("dropout", "", "Dropout on (keeps a 1-byte mask per element it drops from) (TRUE/FALSE)", example=False, kind="bool")
_add("loss_bytes", "bytes", "HBM bytes per logit moved by the loss (fp32 logits, unfused: 16; fused cross-entropy on bf16 logits: 6)", example=16, **NONNEG)
_add("fp8_cast_bytes", "bytes", "HBM bytes per element of each FP8 GEMM operand cast from bf16 (Transformer Engine cast-transpose: read 2, write 1 + 1 transposed = 4)", example=4, **NONNEG)
_add("fp8_forward_fused", "", "The norms and the MLP activation write FP8 directly, so only the attention output is cast in the forward pass (Transformer Engine LayerNormLinear/LayerNormMLP) (TRUE/FALSE)", example=False, kind="bool")
_add("grad_bytes", "bytes/param", "Bytes per gradient element in the data-parallel reduction (Megatron bf16: fp32 = 4)", example=4, **POS)
_add("tokens_per_s", "tokens/s per GPU", "Training throughput per GPU, tokens per second", example=3000, **POS)
_add("params_per_gpu_b", "billion parameters", "Parameters held by one GPU before ZeRO sharding, in billions", example=1.0, **POS)
_add("gemm_rows", "", "Rows of a matmul's output (tokens, or a weight's input size for the weight gradient)", example=2048, **COUNT)
_add("gemm_cols", "", "Columns of a matmul's output", example=4608, **COUNT)
_add("sm_count", "SMs", "Streaming multiprocessors of one GPU (A100: 108, H100 SXM: 132)", "SM_Count", example=108, **COUNT)
_add("tile_rows", "", "Rows of the output tile one thread block computes (cuBLAS largest: 256)", example=256, **COUNT)
_add("tile_cols", "", "Columns of the output tile one thread block computes (cuBLAS largest: 128)", example=128, **COUNT)
_add("in_features", "", "Input size of a linear layer on one GPU (after tensor-parallel splitting)", example=12288, **COUNT)
_add("out_features", "", "Output size of a linear layer on one GPU (after tensor-parallel splitting)", example=4608, **COUNT)
_add("forward_passes", "", "Forward passes of a layer per step (2 with full recomputation)", example=1, **COUNT)
_add("gemm_bytes", "bytes", "HBM bytes the attention matmuls read and write (s x s scores)", example=1e9, **NONNEG)
_add("softmax_bytes", "bytes", "HBM bytes of softmax, mask and dropout over the s x s scores", example=1e9, **NONNEG)
_add("tp_overlap", "fraction", "Share of tensor-parallel communication hidden behind compute (0: Megatron default)", example=0, **FRACTION)
_add("span_gpus", "GPUs", "Consecutive GPUs a communicating group spans (pipeline: t*p, data-parallel: t*p*d)", example=16, **COUNT)
_add("params_per_gpu", "parameters", "Parameters held by one GPU before ZeRO sharding (a count, not billions)", example=1e9, **POS)
_add("layer_act_bytes", "bytes", "Activation bytes one layer stores for one micro-batch on one GPU", example=1e9, **NONNEG)
_add("inflight_factor", "ratio", "Micro-batches' activations in flight on the first pipeline stage, in stage-sized units (ACT_INFLIGHT_FACTOR)", example=1, **NONNEG)
_add("logits_bytes", "bytes", "Bytes of the output layer's logits for one micro-batch on one GPU", example=1e9, **NONNEG)
_add("layer_params", "parameters", "Parameters of one transformer layer (a count, not billions)", example=2e8, **POS)
_add("embedding_params", "parameters", "Parameters of one vocab x hidden table, plus learned positions (a count)", example=5e8, **NONNEG)
_add("tied_embeddings", "", "Input embedding and output layer share one table (TRUE/FALSE)", example=False, kind="bool")
_add("biases", "", "Linear layers and norms carry biases (GPT-2/3, OPT, BLOOM) (TRUE/FALSE)", example=False, kind="bool")
_add("relative_positions", "", "Transformer-XL relative positions (Gopher, Chinchilla) (TRUE/FALSE)", example=False, kind="bool")
_add("position_rows", "", "Rows of a learned position table (0: none, e.g. rotary positions)", example=0, kind="int", ge=0)
_add("cp", "GPUs", "Context-parallel size (the sequence is split over cp GPUs)", "CP_Size", example=1, **COUNT)
_add("nvlink_domain", "GPUs", "GPUs sharing one scale-up (NVLink) fabric: 8 on DGX/HGX, 72 on GB200 NVL72", "NVLink_Domain", example=8, **COUNT)
_add("stride_gpus", "GPUs", "Rank distance between neighbouring members of a communicating group (DP: t*c; PP: t*c*d)", example=8, **COUNT)
_add("ranks_per_domain", "GPUs", "Members of a communicating group inside one scale-up domain", example=1, **COUNT)
_add("passes", "", "Ring passes of a collective: 2 for all-reduce, 1 for all-gather or reduce-scatter", example=2, **NONNEG)
_add("cp_overlap", "fraction", "Share of the attention compute that hides the context-parallel KV exchange (Megatron ring attention: 1)", example=1, **FRACTION)
_add("wave_quantization", "", "Charge each matmul for whole waves of output tiles over the GPU's SMs (needs its SM count; FALSE: every matmul at the matmul efficiency) (TRUE/FALSE)", example=True, kind="bool")
_add("attention_factor", "fraction", "Share of its A100 share of peak a FlashAttention-2-class kernel reaches on this GPU (1: the same; Hopper 0.70 when the stack's kernel is written for Ampere)", example=1, gt=0, le=1, number_format="0%")
_add("attention_kernel_speed", "fraction", "Speed of the stack's attention kernel relative to FlashAttention-2 on the same GPU (1: FlashAttention-2 or faster; FlashAttention in Triton: 0.55)", example=1, gt=0, le=1, number_format="0%")
_add("pp_overlap", "fraction", "Share of the pipeline's send/receive hidden behind compute (Megatron --overlap-p2p-communication)", "PP_Overlap", example=0, **FRACTION)
_add("dp_overlap", "fraction", "Share of the overlap window (one micro-batch; ZeRO-3: the step) that data-parallel communication hides behind", "DP_Overlap", example=0.5, **FRACTION)
_add("last_layers", "layers", "Layers on the last pipeline stage (it also runs the logit layer and the loss)", example=10, **POS)
_add("other_layers", "layers", "Most layers on any pipeline stage but the last", example=10, **POS)
_add("layer_s", "seconds", "Time of one layer (matmuls, attention, elementwise) for one micro-batch on one GPU", example=0.01, **NONNEG)
_add("layer_matmul_s", "seconds", "Matmul time of one layer for one micro-batch on one GPU", example=0.01, **NONNEG)
_add("layer_attention_s", "seconds", "Attention-core time of one layer for one micro-batch on one GPU", example=0.002, **NONNEG)
_add("layer_elementwise_s", "seconds", "Non-matmul (norms, residuals, dropout, activation) time of one layer for one micro-batch on one GPU", example=0.002, **NONNEG)
_add("logits_s", "seconds", "Time of the logit layer and the loss for one micro-batch on one GPU", example=0.01, **NONNEG)
_add("tp_comm_s", "seconds", "Exposed tensor-parallel communication of one stage and micro-batch", example=0, **NONNEG)
_add("cp_comm_s", "seconds", "Exposed context-parallel communication of one stage and micro-batch", example=0, **NONNEG)
_add("pp_comm_s", "seconds", "Exposed pipeline send/receive time of one micro-batch", example=0, **NONNEG)

# --- fine-tuning ------------------------------------------------------------------------
_add("lora_rank", "", "LoRA rank r of each adapter (B is d x r, A is r x k)", "LoRA_Rank", example=16, kind="int", ge=1, le=65536)
_add("job", "", 'Training job: "full" (every weight trained, as pre-training), "lora" (frozen 16-bit base + low-rank adapters) or "qlora" (frozen 4-bit NF4 base + adapters)', example="lora", kind="choice", choices=("full", "lora", "qlora"))
_add("lora_targets", "", 'Matrices that get LoRA adapters: "qv" (LoRA paper), "qkv", "attention" (q, k, v, o) or "all_linear" (QLoRA: attention and FFN)', "LoRA_Targets", example="all_linear", kind="choice", choices=tuple(_TARGET_SETS.values()), reads=_target_set)
_add("quant_block", "parameters", "Block size of the 4-bit quantisation: parameters sharing one constant (QLoRA: 64)", example=64, kind="int", ge=1, le=1048576)
_add("double_quant", "", "Double quantisation: the block constants themselves stored in 8 bit (TRUE/FALSE)", example=True, kind="bool")
_add("embed_params_b", "billion parameters", "Embedding and output-layer parameters, in billions (kept in 16 bit under QLoRA)", example=1.05, **NONNEG)

# --- activations of one layer (today's blocks: GQA/MLA, SwiGLU, RMSNorm, MoE) -------------
_add("norm_type", "", 'Normalisation: "rmsnorm" (keeps 4 bytes per token) or "layernorm" (8)', example="rmsnorm", kind="choice", choices=("rmsnorm", "layernorm"))
_add("linear_input_bytes", "bytes", "Bytes per element of the tensors kept as inputs of linear layers (bf16: 2; FP8 as Transformer Engine keeps them: 1)", example=2, gt=0, le=4)
_add("q_lora_rank", "", "MLA: rank of the query down-projection (0 = queries projected directly)", "Q_LoRA_Rank", example=1536, kind="int", ge=0)
_add("kv_lora_rank", "", "MLA: rank of the joint key/value down-projection (0 = not MLA: GQA/MHA)", "KV_LoRA_Rank", example=512, kind="int", ge=0)
_add("qk_rope_head_dim", "", "MLA: rotary part of each query/key head", "QK_Rope_Head_Dim", example=64, kind="int", ge=0)
_add("qk_nope_head_dim", "", "MLA: non-rotary part of each query/key head", "QK_Nope_Head_Dim", example=128, kind="int", ge=0)
_add("v_head_dim", "", "MLA: dimension of each value head", example=128, kind="int", ge=0)
_add("experts", "", "Routed experts of a mixture-of-experts layer (0 = dense feed-forward)", example=8, kind="int", ge=0)
_add("topk", "", "Experts each token is routed to (top-k)", "TopK", example=2, **COUNT)
_add("capacity_factor", "ratio", "Expert capacity factor: buffer rows per expert = factor x tokens x k / experts (1 = dropless on average)", example=1.0, gt=0, le=64)
_add("expert_ffn_hidden", "", "Inner size of one routed expert's feed-forward", "Expert_FFN_Hidden", example=14336, kind="int", ge=0)
_add("shared_ffn_hidden", "", "Inner size of the shared experts' feed-forward, all shared experts together (0 = none)", "Shared_FFN_Hidden", example=0, kind="int", ge=0)
_add("ep", "GPUs", "Expert-parallel size (experts split over ep GPUs, tokens exchanged all-to-all)", "EP_Size", example=1, **COUNT)
_add("a2a_bytes", "bytes", "Bytes per element of the tokens an expert-parallel all-to-all sends (bf16: 2; FP8 dispatch with bf16 combine, DeepSeek-V3: 1.5)", "A2A_Bytes", example=2, gt=0, le=4)
_add("max_nodes_per_token", "", "Node-limited routing: scale-up domains a token's experts may span, each reached once over the NIC (DeepSeek-V3: 4; 0 = no limit)", "Max_Nodes_per_Token", example=0, kind="int", ge=0)
_add("ep_overlap", "fraction", "Share of the stage's compute that hides the expert-parallel all-to-all (0: none; DeepSeek-V3 DualPipe, Megatron --overlap-moe-expert-parallel-comm: up to 1)", "EP_Overlap", example=0, **FRACTION)
_add("expert_tp", "GPUs", "Expert tensor-parallel size: GPUs each expert's feed-forward is split over (0 = TP, Megatron-Core's default; 1 = whole experts, EP then spans the TP GPUs too)", "Expert_TP", example=0, kind="int", ge=0)
_add("expert_params_b", "billion parameters", "Routed-expert parameters of the whole model, in billions (the part expert parallelism splits over EP GPUs; 0 = dense)", example=0, **NONNEG)
_add("etp", "GPUs", "Expert tensor-parallel size (each expert's feed-forward split over etp GPUs)", "ETP_Size", example=1, **COUNT)

# --- stage memory model and layout (xlcalc.stage_memory, xlcalc.layout) ----------------
_add("dp_shard", "GPUs", "GPUs the ZeRO/FSDP states are sharded over (HSDP: the shard group); 0 = the whole DP x CP group",
     "DP_Shard", example=0, kind="int", ge=0)
_add("first_stage_layers", "", "Layers on the first pipeline stage (0 = an even split L/p)",
     example=0, kind="int", ge=0)
_add("last_stage_layers", "", "Layers on the last pipeline stage (0 = an even split L/p)", example=0, kind="int", ge=0)
_add("stage", "", 'Pipeline stage: "first" (input embedding, most micro-batches in flight) or "last" (output layer, '
     'logits and loss)', example="first", kind="choice", choices=("first", "last"))
_add("optimizer_offload", "", "Optimizer states offloaded to CPU memory (TRUE/FALSE)", example=False, kind="bool")
_add("grads_freed", "", "Gradients freed between steps (PyTorch zero_grad(set_to_none=True), one micro-batch per "
     "step, no pipeline): the peak is the larger of activations and gradients, not their sum (TRUE/FALSE)", example=False, kind="bool")
_add("bytes_fp8", "bytes/param", "Bytes per parameter of FP8 weight copies (0 without FP8; 1 = one FP8 copy, "
     "2 = with its transpose)", "Bytes_FP8", example=0, **NONNEG)
_add("prefetch_layers", "layers", "Layers whose ZeRO-3/FSDP parameters are gathered ahead (prefetch) besides the "
     "one computing", example=0, kind="int", ge=0)
_add("comm_buffer_gb", "GB", "Communication buckets per GPU (e.g. PyTorch DDP bucket_cap_mb = 25: 0.025), GB",
     "Comm_Buffer_GB", example=0, **NONNEG)
_add("logits_buffer_bytes", "bytes/logit", "Bytes per logit the last stage holds for the loss (Megatron fused "
     "vocab-parallel cross-entropy: 4, fp32 logits; unfused PyTorch loss on upcast logits, its backward: 4 fp32 "
     "log-softmax + 4 its gradient + 4 the input gradient = 12; the same compiled: 2 + 2 = 4)", example=4, **NONNEG)
_add("optimizer_step_bytes", "bytes/param", "Bytes per trained parameter the optimizer step allocates while it runs "
     "(PyTorch's foreach AdamW, its default on GPUs: one tensor of each parameter's size, 2 for bf16 and 4 for fp32 "
     "parameters; a fused step, PyTorch's fused=True or Megatron-Core's: 0)", example=0, **NONNEG)
_add("autocast_copy_bytes", "bytes/param", "Bytes per weight of the 16-bit copies torch.autocast makes of fp32 weights "
     "for the matmuls and autograd keeps for the backward (2 under autocast to bf16 or fp16 with fp32 weights; 0 when "
     "the weights are 16-bit or cast by FSDP's or Megatron's mixed precision)", example=0, **NONNEG)
_add("framework", "", "Training framework whose memory defaults apply to the recipe bytes, logits buffer, optimizer "
     "step, autocast copies and grads freed left empty: " + ", ".join(f'"{f}"' for f in _FRAMEWORKS)
     + f' (default "{_DEFAULT_FRAMEWORK}"; xlcalc.frameworks)', example=_DEFAULT_FRAMEWORK,
     kind="choice", choices=tuple(_FRAMEWORKS), aliases=tuple(_FRAMEWORK_ALIASES.items()))
_add("precision", "", 'Training precision with the framework: "bf16" pure bf16, "amp" bf16 with fp32 master weights, '
     '"fp32", or "default" (the framework\'s usual one)', example="default", kind="choice",
     choices=("default", *_PRECISIONS), aliases=tuple(_PRECISION_ALIASES.items()))
_add("output_copy_bytes", "bytes", "Bytes per vocabulary row of the output layer's autocast weight copy "
     "(autocast copy bytes x hidden; 0 without autocast)", example=0, **NONNEG)
_add("cluster_gpus", "GPUs", "GPUs in the cluster for the layout check (0 = not given: DP is given directly)",
     example=0, kind="int", ge=0)
_add("batch_sequences", "sequences", "Global batch in sequences for the layout check (0 = not given)", example=0,
     kind="int", ge=0)
_add("stage_layers", "", "Transformer layers on one pipeline stage", example=20, **NONNEG)
_add("stage_params_b", "billion parameters", "Parameters held by one pipeline stage before TP/ZeRO splitting, billions",
     example=17.5, **NONNEG)
_add("layer_params_b", "billion parameters", "Parameters of one transformer layer, billions", example=0.86, **NONNEG)
_add("inflight_microbatches", "micro-batches", "Micro-batches whose activations a stage holds at its peak",
     example=4, **NONNEG)
_add("stored_act_bytes", "bytes", "Activation bytes one layer keeps for one micro-batch under the recompute mode",
     example=1e9, **NONNEG)
_add("full_act_bytes", "bytes", "Activation bytes of one layer for one micro-batch without recomputation", example=1e9,
     **NONNEG)
_add("weights_gb", "GB", "Weight memory per GPU, GB", example=10, **NONNEG)
_add("grads_gb", "GB", "Gradient memory per GPU, GB", example=10, **NONNEG)
_add("optimizer_gb", "GB", "Optimizer-state memory per GPU, GB", example=10, **NONNEG)
_add("fp8_gb", "GB", "FP8 weight copies per GPU, GB", example=0, **NONNEG)
_add("gathered_gb", "GB", "Gathered ZeRO-3/FSDP parameters and prefetch per GPU, GB", example=0, **NONNEG)
_add("recompute_gb", "GB", "Recompute working set per GPU (one layer re-materialised in its backward), GB", example=0,
     **NONNEG)
_add("logits_gb", "GB", "Logits and loss buffers per GPU, GB", example=1, **NONNEG)
_add("step_gb", "GB", "Temporaries of the optimizer step per GPU, GB", example=0, **NONNEG)
_add("first_part_gb", "GB", "One part of the first pipeline stage's memory per GPU, GB", example=10, **NONNEG)
_add("last_part_gb", "GB", "The same part of the last pipeline stage's memory per GPU, GB", example=10, **NONNEG)
_add("first_stage_gb", "GB", "Memory per GPU of the first pipeline stage, GB", example=60, **NONNEG)
_add("last_stage_gb", "GB", "Memory per GPU of the last pipeline stage, GB", example=60, **NONNEG)


# --- what a command or a worksheet function is told besides the formulas' inputs -------------------------------
# (the inputs that pick a row of a catalog, a recipe or a way of pricing; every documented flag of every command
# is one of these specs, a planner setting or a command option, xlcalc.cli.flags.OPTIONS)
_add("model", "", 'Model from the model catalog (xlcalc catalog models), its id or an alias, any case, e.g. '
     '"llama2-70b": fills the architecture', example="llama2-70b", kind="name")
_add("gpu", "", 'GPU from the GPU catalog (xlcalc catalog gpus), its id or an alias, any case, e.g. "H100": fills '
     'peak TFLOP/s, memory, GPUs per node and the catalog prices', example="h100", kind="name")
_add("recipe", "", "Precision recipe: bytes per parameter of weights, gradients and optimizer states "
     "(xlcalc.recipes: " + ", ".join(f"{r.id} {r.weights:g}+{r.grads:g}+{r.optimizer:g}" for r in _RECIPES.values())
     + ")", example="megatron", kind="choice", choices=tuple(_RECIPES))
# the rental tiers of the price catalog (xlcalc.catalog.PRICE_TIERS reads them here)
_add("price_tier", "", "Rental tier of the GPU's catalog price: on-demand, reserved for 1 or 3 years, spot "
     "(pre-emptible), capacity block (a short reservation booked ahead, e.g. AWS EC2 Capacity Blocks) or assumed (a "
     "rate a report assumed)", example="on-demand", kind="choice",
     choices=("on-demand", "reserved-1y", "reserved-3y", "spot", "capacity-block", "assumed"))
_add("own", "", "Price a GPU-hour as owned hardware (depreciation at the utilisation, plus energy) instead of the "
     "rental rate (TRUE/FALSE)", example=False, kind="bool")
_add("sharding", "", "ZeRO/FSDP sharding by name, for its ZeRO stage (xlcalc.recipes.SHARDING): fsdp_full_shard = "
     "ZeRO-3, fsdp_grad_op = ZeRO-2, hsdp = ZeRO-3 inside the dp_shard GPUs", example="fsdp_full_shard",
     kind="choice", choices=tuple(_SHARDING))
_add("quant", "", 'Storage of the frozen base: "nf4" 4-bit NormalFloat with double-quantised constants (QLoRA), '
     '"none" 16-bit', example="none", kind="choice", choices=("none", "nf4"))
_add("fp8", "", "FP8 linear layers (Transformer Engine recipe, the GPU's FP8 peak), the rest in bf16 (TRUE/FALSE)",
     example=False, kind="bool")
_add("max_micro_batch", "sequences", "Largest micro-batch the planner searches (left out: as far as memory allows)",
     example=8, **COUNT)
_add("peak_memory_gb", "GB", "Measured peak memory of one GPU in a run (torch.cuda.max_memory_reserved), GB",
     example=70, **POS)
_add("over_days", "days", "Days of the run the unexpected interruptions were counted over", example=54, **POS)
_add("over_gpus", "GPUs", "GPUs of the run the unexpected interruptions were counted over", example=16384, **COUNT)


# --- upper bounds: a value above one of these is a typing mistake, not a plan ----------------------------
# Each bound sits far above the largest value any published run or product has, with the reason stated;
# a value past it gets the reason in its message. Fractions (shares of 0 to 1) are capped at 1, so a
# percentage typed as a whole number (5 for 5%) is refused with a hint instead of meaning 500%.
_REASONS = {
    "params": "100 trillion parameters, over 60x the largest published model (Switch Transformer C, 1.6T)",
    "tokens": "1,000 trillion tokens, over 3x Epoch AI's estimate of all public human text (~300T tokens)",
    "gpus": "10 million GPUs, 50x the largest announced training clusters (~200,000 GPUs)",
    "width": "about 50x the widest published model (hidden 20,480, Megatron-Turing NLG 530B)",
    "depth": "about 80x the deepest published LLM (126 layers, Llama 3.1 405B)",
    "heads": "far above any published model (128 heads, Llama 3.1 405B)",
    "seq": "10x the longest published context window (10M tokens, Llama 4 Scout)",
    "vocab": "about 40x the largest published vocabulary (256,000, Gemma)",
    "batch": "far above any published global batch (Llama 3.1: 16M tokens = 4,096 sequences of 4,096)",
    "microbatch": "a micro-batch no GPU memory holds",
    "usd": "$10 trillion, about 20x the largest announced AI infrastructure programme ($500B)",
    "usd_rate": "over 50x the highest rate in the price catalog ($12.29/GPU-hour)",
    "usd_gpu": "over 20x the catalog's highest purchase price per GPU ($30,000), server share included",
    "usd_server": "100x a fully equipped 8-GPU server without its GPUs",
    "usd_kwh": "over 20x the highest retail electricity prices (about $0.40/kWh)",
    "usd_rack": "over 100x typical colocation prices per rack and month",
    "days": "about 270,000 years, beyond even one GPU training the largest model for the most tokens",
    "years": "100 years of depreciation",
    "months": "100 years",
    "hours": "10 million years between failures",
    "seconds": "about 11 days stalled for one checkpoint or restart",
    "gb": "about 400x the largest GPU memory in the catalog (256 GB)",
    "gb_part": "an exabyte per GPU, beyond any model within the params_b bound on one GPU",
    "usd_total": "a million times world GDP: beyond any run within the other inputs' bounds",
    "tflops": "about 70x the highest dense peak of any GPU (about 15 PFLOP/s at FP4)",
    "tb_s": "over 100x the fastest HBM (8 TB/s)",
    "gb_s": "over 1,000x the fastest link per GPU (NVLink 5: 900 GB/s one way)",
    "kw_gpu": "about 50x the power of one of today's GPUs with its server share (about 2 kW)",
    "kw_server": "about 50x the power of a server without its GPUs",
    "kw_rack": "10 MW in one rack, about 80x the densest racks (GB200 NVL72: about 130 kW)",
    "bytes_param": "8x fp64: no number format stores more per parameter",
    "count": "far above any published model or cluster",
    "flops": "over 1,000x the compute any params_b and tokens_t within their bounds need (6ND)",
    "tokens_param": "over 1,000x the most over-trained published models (a few thousand tokens per parameter)",
    "ratio": "a multiplier no range or buffer needs",
}
_LIMITS: dict[str, tuple[float, str]] = {
    **dict.fromkeys(("params_b", "trainable_params_b", "nonembed_params_b", "embed_params_b",
                     "largest_layer_params_b", "params_per_gpu_b", "stage_params_b", "layer_params_b",
                     "active_params_b", "expert_params_b"), (1e5, "params")),
    **dict.fromkeys(("params_per_gpu", "layer_params", "embedding_params"), (1e14, "params")),
    "tokens_t": (1e3, "tokens"), "tokens_per_param": (1e6, "tokens_param"), "compute_flops": (1e33, "flops"),
    "flops": (1e33, "flops"), "flops_per_token": (1e18, "flops"), "seq_len": (1e8, "seq"), "tokens": (1e15, "tokens"),
    "position_rows": (1e8, "seq"),  # a learned position table: a row per position of the context
    "global_batch_tokens": (1e15, "tokens"), "micro_batch": (1e6, "microbatch"), "max_micro_batch": (1e6, "microbatch"),
    **dict.fromkeys(("global_batch", "batch_sequences", "microbatches", "inflight_microbatches"), (1e8, "batch")),
    **dict.fromkeys(("hidden", "head_dim", "head_dim_given", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
                     "qk_nope_head_dim", "v_head_dim"), (1e6, "width")),
    **dict.fromkeys(("ffn_hidden", "expert_ffn_hidden", "shared_ffn_hidden", "in_features", "out_features", "inner"),
                    (1e7, "width")),
    **dict.fromkeys(("rows", "cols", "gemm_rows", "gemm_cols", "interruptions"), (1e9, "count")),
    **dict.fromkeys(("layers", "stage_layers", "layers_per_stage", "first_stage_layers", "last_stage_layers",
                     "prefetch_layers", "last_layers", "other_layers", "virtual_stages"), (1e4, "depth")),
    "forward_passes": (1e3, "count"), "heads": (1e5, "heads"), "kv_heads": (1e5, "heads"), "vocab": (1e7, "vocab"),
    **dict.fromkeys(("experts", "topk", "sm_count", "tile_rows", "tile_cols"), (1e6, "count")),
    **dict.fromkeys(("n_gpus", "over_gpus", "tp", "pp", "dp", "cp", "ep", "etp", "expert_tp", "max_nodes_per_token",
                     "dp_shard", "cluster_gpus", "replica_gpus", "ranks", "span_gpus", "stride_gpus",
                     "ranks_per_domain", "nvlink_domain"), (1e7, "gpus")),
    "gpus_per_node": (1e5, "gpus"), "peak_tflops": (1e6, "tflops"), "achieved_tflops": (1e6, "tflops"),
    "hbm_tb_s": (1e3, "tb_s"),
    **dict.fromkeys(("link_gb_s", "bandwidth_gb_s", "scaleup_gb_s", "scaleout_gb_s", "pcie_gb_s", "host_memory_gb_s"),
                    (1e6, "gb_s")),
    "memory_gb": (1e5, "gb"), "peak_memory_gb": (1e5, "gb"),
    **dict.fromkeys(("static_gb", "activations_gb", "act_gb_per_sample", "overhead_gb", "cuda_context_gb",
                     "margin_gb", "total_gb", "comm_buffer_gb", "weights_gb", "grads_gb", "optimizer_gb", "fp8_gb",
                     "gathered_gb", "recompute_gb", "logits_gb", "first_part_gb", "last_part_gb", "first_stage_gb",
                     "last_stage_gb", "step_gb"), (1e9, "gb_part")),
    **dict.fromkeys(("bytes_weights", "bytes_grads", "bytes_optimizer", "bytes_trainable", "bytes_fp8",
                     "bytes_per_element", "grad_bytes", "logits_buffer_bytes", "optimizer_step_bytes",
                     "autocast_copy_bytes", "fp8_cast_bytes", "loss_bytes"), (64, "bytes_param")),
    "bytes_per_param_step": (640, "bytes_param"),
    "output_copy_bytes": (64 * 1e6, "bytes_param"),  # 64 bytes x the widest hidden
    "days": (1e8, "days"), "over_days": (1e8, "days"), "months": (1200, "months"), "depreciation_years": (100, "years"),
    "gpu_mtbf_h": (1e11, "hours"), "node_mtbf_h": (1e11, "hours"), "save_s": (1e6, "seconds"),
    "restart_s": (1e6, "seconds"), "usd_per_gpu_hour": (1e3, "usd_rate"), "capex_usd_per_gpu": (1e6, "usd_gpu"),
    "capex_usd_per_server": (1e7, "usd_server"), "usd_per_kwh": (10, "usd_kwh"),
    "usd_per_rack_month": (1e7, "usd_rack"), "kw_per_gpu": (100, "kw_gpu"), "kw_per_server": (1000, "kw_server"),
    "kw_per_rack": (1e4, "kw_rack"),
    **dict.fromkeys(("compute_usd", "total_usd", "base_usd", "failures_usd"), (1e20, "usd_total")),
    **dict.fromkeys(("data_usd", "people_usd", "other_usd", "budget_usd", "experiments_usd", "amount_usd"),
                    (1e13, "usd")),
    "capacity_factor": (64, "ratio"), "range_factor": (100, "ratio"), "inflight_factor": (1e6, "ratio"),
    "elementwise_factor": (1e3, "ratio"), "passes": (1e3, "ratio"),
}
# Left without an upper bound: results of other formulas that a worksheet function also takes (GPU-hours, GPUs
# needed, bytes, seconds, throughput); they are as large as the bounded inputs they come from make them.
# Shares of 0 to 1 (they were allowed up to 10 or 100): a budget line larger than compute is given as an amount.
_FRACTIONS = ("spare_frac", "failure_frac", "experiments_frac", "data_frac", "people_frac", "share_frac")

for _name in _FRACTIONS:
    _SPECS[_name] = replace(_SPECS[_name], le=1)
for _name, (_bound, _why) in _LIMITS.items():
    if _name in _SPECS:
        _SPECS[_name] = replace(_SPECS[_name], le=_bound, limit_reason=_REASONS[_why])


def result_bound(name: str, what: str = "") -> tuple[float, str]:
    """A formula's ``at_most`` from input ``name``'s upper bound: a result is refused where the same quantity typed
    as an input would be (e.g. days), with the bound's reason."""
    s = spec(name)
    assert s.le is not None
    return s.le, f"the bound is {what or 'the one of the ' + name + ' input'}: {s.limit_reason}"


def _stack_spec() -> InputSpec:
    """The software stack: one of the stack profiles, which xlcalc.planner.stacks declares (their ids are its
    STACKS, the default its DEFAULT_STACK). Made when first asked for: the planner's modules check their inputs with
    this module's specs, so the planner cannot be read while this module loads."""
    from .planner.stacks import DEFAULT_STACK, STACKS

    return InputSpec(name="stack", unit="", excel_name="Stack", kind="choice", choices=tuple(STACKS),
                     example=DEFAULT_STACK,
                     doc="Software stack the step time is predicted for (xlcalc plan --stack): a profile of "
                         "xlcalc.planner.stacks, whose documented facts and fitted matmul efficiency the step-time "
                         f"model takes (default {DEFAULT_STACK}: plain PyTorch FSDP without compilation)")


# specs whose allowed values a module that imports this one declares: made on first use
_LATE = {"stack": _stack_spec}


def spec(name: str) -> InputSpec:
    try:
        return _SPECS[name]
    except KeyError:
        if name in _LATE:
            return _SPECS.setdefault(name, _LATE[name]())
        raise KeyError(f"no input spec named {name!r}") from None


def all_specs() -> dict[str, InputSpec]:
    for name in _LATE:
        spec(name)
    return dict(_SPECS)


__all__ = ["InputSpec", "InputError", "spec", "all_specs", "result_bound", "fmt_bound"]

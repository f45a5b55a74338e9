"""A training scenario: the inputs of a plan, validated.

This module and :mod:`xlcalc.outputs` are the one description of the planning workbook's model:

* :class:`Scenario` — the validated inputs (pydantic), one field per named input cell;
* :data:`INPUTS` — field -> (input spec, defined name);
* :data:`xlcalc.outputs.OUTPUTS` — the named results, each *one registered formula* applied to
  expressions over other names (e.g. ``dp = N_GPUs/(TP_Size*PP_Size)``).

``evaluate(scenario)`` computes the outputs in Python; the workbook builder writes
the very same outputs as Excel formulas (``xlcalc.outputs.output_excel``), so the two cannot drift.
"""

from __future__ import annotations

import contextlib
import re
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import catalog
from .errors import InputError, UnknownNameError
from .formulas.cost import FAILURE_FRAC
from .formulas.steptime import HEAD_DIM_FROM_SHAPE
from .frameworks import get_profile
from .inputs import spec
from .layout import check_layout
from .model_inputs import model_inputs
from .outputs import MESSAGE_OUTPUTS, OUTPUTS, RANGES
from .planner.defaults import default_global_batch_tokens, default_tokens_t
from .planner.stacks import DEFAULT_STACK, stack_id
from .recipes import DEFAULT_SEQ_LEN, DEFAULT_VOCAB, MEMORY_DEFAULTS, default_bytes, get_recipe, recipe_bytes
from .untrusted import check_text, check_value, read_limited
from .validate import from_pydantic, validate_one

_BYTES = default_bytes()


@dataclass(frozen=True)
class InputCell:
    field: str       # Scenario field
    spec_name: str   # the input spec that validates it
    name: str        # defined name in the workbook
    label: str       # what a person reads next to the cell
    group: str       # Inputs-sheet section


def _in(field: str, name: str, label: str, group: str, spec_name: str | None = None) -> InputCell:
    return InputCell(field, spec_name or field, name, label, group)


STEP_GROUP = "Step time"  # the inputs of the step time alone, on the StepTime sheet

INPUTS: tuple[InputCell, ...] = (
    _in("params_b", "Params_B", "Parameters (billions)", "Model and data"),
    _in("active_params_b", "Active_Params_B", "Active parameters per token, MoE (billions; 0 = all)", "Model and data"),
    _in("tokens_t", "Tokens_T", "Training tokens (trillions)", "Model and data"),
    _in("seq_len", "Seq_Len", "Sequence length (tokens)", "Model and data"),
    _in("hidden", "Hidden", "Hidden size h", "Model and data"),
    _in("layers", "Layers", "Layers L", "Model and data"),
    _in("heads", "Heads", "Attention heads a", "Model and data"),
    _in("peak_tflops", "Peak_TFLOPS", "Peak dense TFLOP/s per GPU", "Cluster"),
    _in("gpu_memory_gb", "GPU_Memory_GB", "GPU memory (GB)", "Cluster", "memory_gb"),
    _in("n_gpus", "N_GPUs", "Number of GPUs", "Cluster"),
    _in("gpus_per_node", "GPUs_per_Node", "GPUs per node", "Cluster"),
    _in("mfu", "MFU", "MFU (model FLOPs utilisation)", "Cluster"),
    _in("tp", "TP_Size", "Tensor parallel (TP)", "Parallelism and memory"),
    _in("pp", "PP_Size", "Pipeline parallel (PP)", "Parallelism and memory"),
    _in("zero_stage", "ZeRO_Stage", "ZeRO stage (0-3)", "Parallelism and memory"),
    _in("seq_parallel", "Seq_Parallel", "Sequence parallel (TRUE/FALSE)", "Parallelism and memory"),
    _in("recompute", "Recompute", "Recompute (none/selective/full)", "Parallelism and memory"),
    _in("micro_batch", "Micro_Batch", "Micro-batch size", "Parallelism and memory"),
    _in("bytes_weights", "Bytes_Weights", "Bytes/param: weights", "Parallelism and memory"),
    _in("bytes_grads", "Bytes_Grads", "Bytes/param: gradients", "Parallelism and memory"),
    _in("bytes_optimizer", "Bytes_Optimizer", "Bytes/param: optimizer states", "Parallelism and memory"),
    _in("overhead_gb", "Overhead_GB", "Other memory per GPU (GB)", "Parallelism and memory"),
    _in("cuda_context_gb", "CUDA_Context_GB", "CUDA context per GPU, in the fit's margin (GB)", "Parallelism and memory"),
    _in("allocator_reserve_frac", "Allocator_Reserve_Frac", "Allocator reserve, share of the prediction, in the fit's margin",
        "Parallelism and memory"),
    _in("kv_heads", "KV_Heads", "Key/value heads (GQA; = heads for MHA)", "Stage memory"),
    _in("head_dim_given", "Head_Dim_Given", "Head dimension the model gives (0 = hidden / heads)", "Stage memory"),
    _in("ffn_hidden", "FFN_Hidden", "FFN inner size F", "Stage memory"),
    _in("gated_ffn", "Gated_FFN", "Gated FFN (SwiGLU) (TRUE/FALSE)", "Stage memory"),
    _in("vocab", "Vocab", "Vocabulary size V", "Stage memory"),
    _in("tied_embeddings", "Tied_Embeddings", "Tied input/output embeddings (TRUE/FALSE)", "Stage memory"),
    _in("flash_attention", "Flash_Attention", "Fused (Flash) attention (TRUE/FALSE)", "Stage memory"),
    _in("cp", "CP_Size", "Context parallel (CP)", "Stage memory"),
    _in("virtual_stages", "Virtual_Stages", "Interleaved virtual stages per GPU (1 = 1F1B)", "Stage memory"),
    _in("first_stage_layers", "First_Stage_Layers", "Layers on the first stage (0 = even split)", "Stage memory"),
    _in("last_stage_layers", "Last_Stage_Layers", "Layers on the last stage (0 = even split)", "Stage memory"),
    _in("dp_shard", "DP_Shard", "ZeRO/FSDP shard group (0 = all of DP; HSDP: the group)", "Stage memory"),
    _in("optimizer_offload", "Optimizer_Offload", "Optimizer states offloaded to CPU (TRUE/FALSE)", "Stage memory"),
    _in("grads_freed", "Grads_Freed", "Gradients freed between steps (TRUE/FALSE)", "Stage memory"),
    _in("bytes_fp8", "Bytes_FP8", "Bytes/param: FP8 weight copies (0 = none)", "Stage memory"),
    _in("prefetch_layers", "Prefetch_Layers", "ZeRO-3/FSDP layers prefetched", "Stage memory"),
    _in("comm_buffer_gb", "Comm_Buffer_GB", "Communication buckets per GPU (GB)", "Stage memory"),
    _in("logits_buffer_bytes", "Logits_Buffer_Bytes", "Bytes per logit held for the loss", "Stage memory"),
    _in("optimizer_step_bytes", "Optimizer_Step_Bytes", "Bytes/param the optimizer step allocates (0 = fused)",
        "Stage memory"),
    _in("autocast_copy_bytes", "Autocast_Copy_Bytes", "Bytes/param: autocast's 16-bit weight copies (0 = none)",
        "Stage memory"),
    # -- fine-tuning (job = full: every weight trained, as pre-training; the FineTuning sheet)
    _in("job", "Job", "Job: full, lora or qlora", "Fine-tuning"),
    _in("lora_rank", "LoRA_Rank", "LoRA rank r", "Fine-tuning"),
    _in("lora_targets", "LoRA_Targets", "Matrices with adapters (qv, qkv, attention, all_linear)", "Fine-tuning"),
    _in("deadline_days", "Deadline_Days", "Deadline (days)", "Deadline", "days"),
    _in("spare_frac", "Spare_Frac", "Spare GPUs (share)", "Deadline"),
    _in("usd_per_gpu_hour", "USD_per_GPU_Hour", "Price per GPU-hour (USD)", "Prices and budget"),
    _in("kw_per_gpu", "KW_per_GPU", "Power per GPU incl. server share (kW)", "Prices and budget"),
    _in("pue", "PUE", "Data-centre PUE", "Prices and budget"),
    _in("usd_per_kwh", "USD_per_kWh", "Electricity (USD/kWh; 0 = in the GPU price)", "Prices and budget"),
    _in("failure_frac", "Failure_Frac", "Failures and restarts (share of compute)", "Prices and budget"),
    _in("experiments_frac", "Experiments_Frac", "Experiments and ablations (share of compute)", "Prices and budget"),
    _in("experiments_usd", "Experiments_USD_Amount", "Experiments and failed runs (USD, added to the share)",
        "Prices and budget"),
    _in("data_frac", "Data_Frac", "Data (share of compute)", "Prices and budget"),
    _in("data_usd", "Data_USD", "Data (USD, added to the share)", "Prices and budget"),
    _in("people_frac", "People_Frac", "People (share of compute)", "Prices and budget"),
    _in("people_usd", "People_USD", "People (USD, added to the share)", "Prices and budget"),
    _in("other_usd", "Other_USD", "Storage, network, other (USD)", "Prices and budget"),
    _in("budget_usd", "Budget_USD", "Approved budget (USD)", "Prices and budget"),
    # -- money: owning the hardware (beside renting) --
    _in("capex_usd_per_gpu", "Capex_USD_per_GPU", "Purchase price per GPU (USD)", "Owning the hardware"),
    _in("capex_usd_per_server", "Capex_USD_per_Server", "Server without GPUs (USD per server)", "Owning the hardware"),
    _in("depreciation_years", "Depreciation_Years", "Depreciation (years)", "Owning the hardware"),
    _in("utilisation", "Utilisation", "Utilisation of owned hardware (share of hours busy)", "Owning the hardware"),
    _in("kw_per_server", "KW_per_Server", "Server power without GPUs (kW)", "Owning the hardware"),
    _in("own_usd_per_kwh", "Own_USD_per_kWh", "Electricity for owned hardware (USD/kWh)", "Owning the hardware",
        "usd_per_kwh"),
    _in("kw_per_rack", "KW_per_Rack", "Power per rack (kW)", "Owning the hardware"),
    _in("usd_per_rack_month", "USD_per_Rack_Month", "Hosting per rack and month (USD)", "Owning the hardware"),
    # -- money: failures, checkpoints and goodput (replace the typed failure share) --
    _in("gpu_mtbf_h", "GPU_MTBF_H", "MTBF per GPU (hours)", "Failures and checkpoints"),
    _in("ckpt_save_s", "Ckpt_Save_S", "Checkpoint save stall (seconds)", "Failures and checkpoints", "save_s"),
    _in("restart_s", "Restart_S", "Restart after a failure (seconds)", "Failures and checkpoints"),
    _in("use_typed_tax", "Use_Typed_Tax", "Use the typed failure share instead (TRUE/FALSE)",
        "Failures and checkpoints"),
    # -- money: low/high multipliers of the inputs that move the answer most (ranges, tornado) --
    _in("mfu_low_x", "MFU_Low_X", "MFU: low end (x base)", "Ranges (low and high multipliers)", "range_factor"),
    _in("mfu_high_x", "MFU_High_X", "MFU: high end (x base, at most 1)", "Ranges (low and high multipliers)",
        "range_factor"),
    _in("price_low_x", "Price_Low_X", "Price per GPU-hour: low end (x base)", "Ranges (low and high multipliers)",
        "range_factor"),
    _in("price_high_x", "Price_High_X", "Price per GPU-hour: high end (x base)", "Ranges (low and high multipliers)",
        "range_factor"),
    _in("tokens_low_x", "Tokens_Low_X", "Tokens: low end (x base)", "Ranges (low and high multipliers)",
        "range_factor"),
    _in("tokens_high_x", "Tokens_High_X", "Tokens: high end (x base)", "Ranges (low and high multipliers)",
        "range_factor"),
    _in("mtbf_low_x", "MTBF_Low_X", "GPU MTBF (goodput): low end (x base)", "Ranges (low and high multipliers)",
        "range_factor"),
    _in("mtbf_high_x", "MTBF_High_X", "GPU MTBF (goodput): high end (x base)", "Ranges (low and high multipliers)",
        "range_factor"),
    # -- the step time (the StepTime sheet): the software stack and the global batch, as xlcalc plan takes them
    _in("stack", "Stack", "Software stack (as xlcalc plan --stack)", STEP_GROUP),
    _in("global_batch_tokens", "Global_Batch_Tokens", "Global batch (tokens per step)", STEP_GROUP),
)

INPUT_BY_FIELD = {c.field: c for c in INPUTS}
INPUT_BY_NAME = {c.name: c for c in INPUTS}


def check_field(name: str, value: Any) -> Any:
    """``value`` of input ``name`` (a scenario field, checked by its field's spec; else the spec of that name),
    validated and normalised; an :class:`InputError` naming ``name`` itself (``deadline_days``, never its spec's
    ``days``), as the user typed its flag."""
    cell = INPUT_BY_FIELD.get(name)
    return validate_one(spec(cell.spec_name if cell else name), value, name=name)


class Scenario(BaseModel):
    """Every input of a plan. The model, data and cluster defaults are seed 002's 70B-on-A800 case (MHA, F = 4h as
    its activation formula), with the default precision recipe (xlcalc.recipes.DEFAULT_RECIPE); the layout defaults
    (TP, PP, ZeRO stage, sequence parallelism, recompute, micro-batch) are the memory model's, one GPU's
    (xlcalc.recipes.MEMORY_DEFAULTS): what a plan gives is what is computed, and a layout is the user's or the
    planner's (``xlcalc plan``) choice."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    name: str = Field(default="Untitled scenario", max_length=200)
    notes: str = Field(default="", max_length=2000)
    model: Optional[str] = Field(default=None, description="model preset id (fills the architecture)")
    gpu: Optional[str] = Field(default=None, description="GPU id (fills peak TFLOPS and memory)")
    recipe: Optional[str] = Field(default=None, description="precision recipe id (fills the bytes per parameter)")
    # the framework and precision trained with (xlcalc.frameworks: fill the recipe bytes, logits buffer, optimizer
    # step, autocast copies and grads freed; a recipe wins for the bytes; neither given: today's defaults)
    framework: Optional[str] = Field(default=None, description=spec("framework").doc)
    precision: Optional[str] = Field(default=None, description=spec("precision").doc)

    params_b: float = 70
    active_params_b: float = 0  # a mixture of experts' active parameters: the N of 6*N*D (0 = params_b)
    tokens_t: float = 2
    # the one default sequence length of every face (xlcalc.recipes.DEFAULT_SEQ_LEN): 4,096 tokens, Llama 2's
    seq_len: int = DEFAULT_SEQ_LEN
    hidden: int = 8192
    layers: int = 80
    heads: int = 64
    peak_tflops: float = 312
    gpu_memory_gb: float = 80
    n_gpus: int = 1024
    gpus_per_node: int = 8
    mfu: float = 0.4
    # the layout: the memory model's defaults, one GPU (xlcalc.recipes.MEMORY_DEFAULTS, the one declaration)
    tp: int = MEMORY_DEFAULTS["tp"]
    pp: int = MEMORY_DEFAULTS["pp"]
    zero_stage: int = MEMORY_DEFAULTS["zero_stage"]
    seq_parallel: bool = MEMORY_DEFAULTS["seq_parallel"]
    recompute: str = MEMORY_DEFAULTS["recompute"]
    micro_batch: int = MEMORY_DEFAULTS["micro_batch"]
    # bytes per parameter and the stage memory model's other defaults: xlcalc.recipes (one place for every face)
    bytes_weights: float = _BYTES["bytes_weights"]
    bytes_grads: float = _BYTES["bytes_grads"]
    bytes_optimizer: float = _BYTES["bytes_optimizer"]
    overhead_gb: float = MEMORY_DEFAULTS["overhead_gb"]
    cuda_context_gb: float = MEMORY_DEFAULTS["cuda_context_gb"]
    allocator_reserve_frac: float = MEMORY_DEFAULTS["allocator_reserve_frac"]
    kv_heads: int = 64
    head_dim_given: int = HEAD_DIM_FROM_SHAPE  # the model's own head dimension where it is not hidden / heads (Gemma, MLA)
    ffn_hidden: int = 32768
    gated_ffn: bool = MEMORY_DEFAULTS["gated_ffn"]
    vocab: int = DEFAULT_VOCAB  # Llama 1/2's (xlcalc.recipes.DEFAULT_VOCAB)
    tied_embeddings: bool = MEMORY_DEFAULTS["tied_embeddings"]
    flash_attention: bool = MEMORY_DEFAULTS["flash_attention"]
    cp: int = MEMORY_DEFAULTS["cp"]
    virtual_stages: int = MEMORY_DEFAULTS["virtual_stages"]
    first_stage_layers: int = MEMORY_DEFAULTS["first_stage_layers"]
    last_stage_layers: int = MEMORY_DEFAULTS["last_stage_layers"]
    dp_shard: int = MEMORY_DEFAULTS["dp_shard"]
    optimizer_offload: bool = MEMORY_DEFAULTS["optimizer_offload"]
    grads_freed: bool = MEMORY_DEFAULTS["grads_freed"]
    bytes_fp8: float = MEMORY_DEFAULTS["bytes_fp8"]
    prefetch_layers: int = MEMORY_DEFAULTS["prefetch_layers"]
    comm_buffer_gb: float = MEMORY_DEFAULTS["comm_buffer_gb"]
    logits_buffer_bytes: float = MEMORY_DEFAULTS["logits_buffer_bytes"]
    optimizer_step_bytes: float = MEMORY_DEFAULTS["optimizer_step_bytes"]
    autocast_copy_bytes: float = MEMORY_DEFAULTS["autocast_copy_bytes"]
    job: str = MEMORY_DEFAULTS["job"]
    lora_rank: int = MEMORY_DEFAULTS["lora_rank"]
    lora_targets: str = MEMORY_DEFAULTS["lora_targets"]
    # the step time's (xlcalc.scenario_step, the StepTime sheet), as plan's: the stack every face assumes when none
    # is named (xlcalc.planner.stacks.DEFAULT_STACK); the global batch in tokens per step, None: not given, and
    # Scenario.build fills a catalog model's published one (xlcalc.planner.defaults.default_global_batch_tokens,
    # plan's one rule); no face assumes a batch for any other model
    stack: str = DEFAULT_STACK
    global_batch_tokens: Optional[float] = None
    deadline_days: float = 90
    spare_frac: float = 0.05
    usd_per_gpu_hour: float = 2.0
    kw_per_gpu: float = 1.0
    pue: float = 1.3
    usd_per_kwh: float = 0.0
    failure_frac: float = FAILURE_FRAC  # xlcalc.formulas.cost: 15%, the middle of seed 000's 10-20%
    experiments_frac: float = 0.0
    experiments_usd: float = 0
    data_frac: float = 0
    data_usd: float = 0
    people_frac: float = 0
    people_usd: float = 0
    other_usd: float = 0
    budget_usd: float = 10_000_000
    # Owning: the chosen GPU's purchase price from the price catalog, else typed (no default: left empty, the
    # owning results say what to type); seed 001 §5.1 (3-year depreciation); seed 001 §7.2 (20-40 kW per rack);
    # electricity: US industrial average prices run about 7-9 cents/kWh in most states (EIA Electric Power
    # Monthly, Table 5.6.B, 2024). Utilisation 1: the hardware is busy whenever it is not idle for this run.
    capex_usd_per_gpu: Optional[float] = None
    capex_usd_per_server: float = 0
    depreciation_years: float = 3
    utilisation: float = 1.0
    kw_per_server: float = 0
    own_usd_per_kwh: float = 0.08
    kw_per_rack: float = 40
    usd_per_rack_month: float = 0
    # Failures: the per-GPU MTBF that Llama 3's 419 unexpected interruptions in 54 days on 16,384 GPUs imply
    # (16,384 x 54 x 24 / 419 GPU-hours); checkpoint and restart times are example values - give your own.
    gpu_mtbf_h: float = 50_677
    ckpt_save_s: float = 60
    restart_s: float = 600
    use_typed_tax: bool = False
    # Ranges: illustrative spans (MFU x0.75-1.25 is seed 000's 30-50% around 40%); type your own.
    mfu_low_x: float = 0.75
    mfu_high_x: float = 1.25
    price_low_x: float = 0.5
    price_high_x: float = 1.5
    tokens_low_x: float = 0.8
    tokens_high_x: float = 1.2
    mtbf_low_x: float = 0.5
    mtbf_high_x: float = 2.0
    price_tier: Optional[str] = Field(default=None, description="rental tier of usd_per_gpu_hour when it came "
                                      "from the price catalog")
    price_id: Optional[str] = Field(default=None, description="price catalog row usd_per_gpu_hour came from")
    price_typed: bool = Field(default=False, description="usd_per_gpu_hour was given (Scenario.build), so the answer "
                              "states it as typed, even where it equals the example default")

    @model_validator(mode="before")
    @classmethod
    def _check_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        # text a workbook stores: no control characters (a notes line break is fine)
        InputError.each(lambda f: check_text(f, data[f], "\t\n" if f == "notes" else ""),
                        [f for f in ("name", "notes") if isinstance(data.get(f), str)])
        if data.get("recipe") is not None:
            data["recipe"] = get_recipe(str(data["recipe"])).id if str(data["recipe"]).strip() else None
        if isinstance(data.get("stack"), str):  # a stack's name (an alias, any case): its profile's id; a name that is
            with contextlib.suppress(InputError):  # no profile's stays as typed, for the spec to name the ones allowed
                data["stack"] = stack_id(data["stack"])
        if data.get("framework") is not None or data.get("precision") is not None:
            # the names as xlcalc.frameworks spells them (a precision left out: the framework's usual one; a framework
            # left out: the default one); a blank or unknown name is an InputError listing the known ones
            if blank := [InputError(k, data[k], f"a {k} name of xlcalc.frameworks, or left out")
                         for k in ("framework", "precision") if isinstance(data.get(k), str) and not data[k].strip()]:
                raise InputError.all(blank)
            p = get_profile(data.get("framework"), data.get("precision"))
            data.update(framework=p.framework, precision=p.precision)
        # architecture left out: multi-head attention (kv heads = heads) and F = 4h, as seed 002's formulas
        if data.get("kv_heads") is None and data.get("heads") is not None:
            data["kv_heads"] = data["heads"]
        if data.get("ffn_hidden") is None and data.get("hidden") is not None:
            hidden = data["hidden"]
            data["ffn_hidden"] = 4 * hidden if isinstance(hidden, (int, float)) and not isinstance(hidden, bool) else None
            if data["ffn_hidden"] is None:
                data.pop("ffn_hidden")
        data.update(InputError.each(  # every input that is not allowed, at once
            lambda f: validate_one(spec(INPUT_BY_FIELD[f].spec_name), data[f], name=f),
            [f for f, value in data.items() if f in INPUT_BY_FIELD and value is not None]))
        return data

    @model_validator(mode="after")
    def _check_parallelism(self) -> "Scenario":
        if self.active_params_b > self.params_b:
            raise InputError("active_params_b", self.active_params_b,
                             f"at most params_b = {self.params_b:g} (the active parameters are a part of all of them)")
        check_layout(**self.layout_values())  # the one layout check (xlcalc.layout), as the workbook's Layout_Check
        if inverted := [InputError(lo, getattr(self, lo), f"at most {hi} = {getattr(self, hi):g}",
                                   "a range's low end multiplier may not exceed its high end's: swap them")
                        for _field, _name, lo, hi, _f in RANGES if getattr(self, lo) > getattr(self, hi)]:
            raise InputError.all(inverted)
        return self

    def layout_values(self) -> dict[str, Any]:
        """The inputs of the layout check."""
        fields = ("hidden", "heads", "layers", "seq_len", "kv_heads", "first_stage_layers", "last_stage_layers", "tp",
                  "pp", "cp", "dp_shard", "micro_batch", "virtual_stages")
        return {**{k: getattr(self, k) for k in fields}, "cluster_gpus": self.n_gpus}

    @classmethod
    def build(cls, **values: Any) -> "Scenario":
        """Make a scenario, filling architecture, GPU and byte fields from presets first.

        Explicit values win over presets. A user mistake raises :class:`InputError`.
        """
        merged: dict[str, Any] = {}
        blank = [InputError(k, values[k], f"a {k} name from the catalog (xlcalc catalog), or left out")
                 for k in ("model", "gpu", "recipe", "framework", "precision", "price_tier")
                 if isinstance(values.get(k), str) and not values[k].strip()]
        if blank:  # an empty name is a mistake, not "the default"
            raise InputError.all(blank)
        # the failure share is goodput's unless use_typed_tax says otherwise: a typed share alone would be ignored
        ignored = [] if values.get("failure_frac") is None or values.get("use_typed_tax") is not None else [
            InputError("failure_frac", values["failure_frac"], "given with use_typed_tax TRUE (CLI --use-typed-tax), "
                       "or left out", "without it the failure share is goodput's, from gpu_mtbf_h, ckpt_save_s and "
                       "restart_s, and the typed share would be ignored")]
        named = values.get("model")
        m = named if isinstance(named, catalog.Model) else catalog.get_model(named) if named else None
        if m is not None:  # tokens left out: the model's published ones, else 20 per parameter, as plan takes them
            merged["tokens_t"] = default_tokens_t(m, m.params_b, m.name)[0]
            merged.update(architecture(m), seq_len=m.seq_len)
        if isinstance(named, catalog.Model):
            # a model with no catalog row (e.g. from a Hugging Face config.json): its figures are typed in; its
            # file gives no training sequence length, so it has the one default (xlcalc.recipes.DEFAULT_SEQ_LEN)
            values = {**values, "model": None}
        elif m is not None:
            merged["global_batch_tokens"] = default_global_batch_tokens(m)  # published, else None: as plan
        if values.get("gpu"):
            g = catalog.get_gpu(values["gpu"])
            if g.half_tflops is not None:
                merged["peak_tflops"] = g.half_tflops
            elif values.get("peak_tflops") is None:
                g.peak_tflops()  # raises: no published peak, give peak_tflops explicitly
            if g.capacity_gb:  # what the card exposes to CUDA where a source gives it, else the nominal GB
                merged["gpu_memory_gb"] = g.capacity_gb
            if g.gpus_per_node:
                merged["gpus_per_node"] = g.gpus_per_node
        if values.get("framework") or values.get("precision"):  # the framework's memory inputs; a recipe wins
            merged.update(get_profile(values.get("framework"), values.get("precision")).values())
        if values.get("recipe"):
            merged.update(recipe_bytes(str(values["recipe"])))
        prices = _catalog_prices(values)
        merged.update(prices)
        merged.update({k: v for k, v in values.items() if v is not None and k not in prices})
        if values.get("usd_per_gpu_hour") is not None and not merged.get("price_id"):
            merged["price_typed"] = True
        for key, find in (("model", catalog.get_model), ("gpu", catalog.get_gpu), ("recipe", get_recipe)):
            if values.get(key):  # the catalog's id of the name given
                merged[key] = find(str(values[key])).id
        try:
            scenario = cls.model_validate(merged)
        except InputError as exc:  # every mistake at once; a share that is itself not allowed is named once
            raise InputError.all([*exc.problems, *(e for e in ignored if e.name not in exc.name.split(", "))]) from None
        if ignored:
            raise ignored[0]
        return scenario

    @classmethod
    def model_validate(cls, obj: Any, **kw: Any) -> "Scenario":  # type: ignore[override]
        try:
            return super().model_validate(obj, **kw)
        except ValidationError as exc:
            # every field pydantic refused, in the one message format (each input checked by its spec)
            raise from_pydantic(exc, {c.field: c.spec_name for c in INPUTS}) from None

    def cell_values(self) -> dict[str, Any]:
        """Input values by defined name."""
        return {c.name: getattr(self, c.field) for c in INPUTS}


def _catalog_prices(values: dict[str, Any]) -> dict[str, Any]:
    """Rental rate (and tier) and purchase price from the price catalog for the chosen GPU.

    A typed usd_per_gpu_hour wins (no tier); a price_tier the catalog has no rate for is an error
    naming the GPU and the tier.
    """
    out: dict[str, Any] = {}
    tier, gpu = values.get("price_tier"), values.get("gpu")
    if gpu and values.get("capex_usd_per_gpu") is None and (buy := catalog.purchase_price(gpu)) is not None:
        out["capex_usd_per_gpu"] = buy.capex_usd_per_gpu  # whatever the rental price, owning is the GPU's
    if values.get("usd_per_gpu_hour") is not None:
        if tier or values.get("price_id"):  # a saved scenario keeps its tier while the price is still the tier's
            row = next((p for p in catalog.prices() if p.id == values.get("price_id")), None)
            if row is None or row.usd_per_gpu_hour != values["usd_per_gpu_hour"] or row.tier != tier or (
                    gpu and row.gpu != catalog.get_gpu(gpu).id):
                out.update(price_tier=None, price_id=None)
        return out
    if tier and not gpu:
        raise InputError("price_tier", tier, "used with a GPU (gpu = ...) whose catalog prices it picks from")
    if gpu:
        row = catalog.rental_price(gpu, tier) if tier else catalog.price_for(gpu)  # (a tier's row has its rate)
        if row is not None and row.usd_per_gpu_hour is not None:
            out.update(usd_per_gpu_hour=row.usd_per_gpu_hour, price_tier=row.tier, price_id=row.id)
    return out


def rental_rate(gpu: str | None = None, price_tier: str | None = None,
                usd_per_gpu_hour: float | None = None) -> tuple[float, str]:
    """The rental price of one GPU-hour a scenario with these inputs uses, and the words that state it
    (:func:`price_note`): typed, else the GPU's catalog rate (its default, or ``price_tier``'s), else the one
    declared default (``Scenario.usd_per_gpu_hour``), stated as an example. Every face that prices renting
    (``estimate``, ``cost``, the workbook) takes it from here.

    A tier with a typed price, a tier without a GPU, or a tier the GPU has no rate for is an :class:`InputError`.
    """
    if usd_per_gpu_hour is not None:
        if price_tier:
            raise InputError("price_tier", price_tier, "left out when --usd-per-gpu-hour is given",
                             "a tier picks a catalog price; a typed price has none")
        usd_per_gpu_hour = check_field("usd_per_gpu_hour", usd_per_gpu_hour)
    gid = catalog.get_gpu(gpu).id if gpu else None
    found = _catalog_prices({"gpu": gid, "price_tier": price_tier, "usd_per_gpu_hour": usd_per_gpu_hour})
    rate = usd_per_gpu_hour if usd_per_gpu_hour is not None else found.get(
        "usd_per_gpu_hour", Scenario.model_fields["usd_per_gpu_hour"].default)
    return rate, _price_words(rate, gid, found.get("price_id"), typed=usd_per_gpu_hour is not None)


def price_note(scenario: "Scenario") -> str:
    """Which rental price a scenario used, in words."""
    return _price_words(scenario.usd_per_gpu_hour, scenario.gpu, scenario.price_id, scenario.price_typed)


def _price_words(v: float, gpu: str | None, price_id: str | None, typed: bool) -> str:
    rate = f"${v:,.3f}" if round(v, 3) != round(v, 2) else f"${v:,.2f}"
    if price_id:
        row = next(p for p in catalog.prices() if p.id == price_id)
        return f"{rate}/GPU-hour, {row.tier} tier, price catalog {row.id} ({row.date or 'undated'})"
    if not typed and v == Scenario.model_fields["usd_per_gpu_hour"].default:
        tiers = [p.tier for p in catalog.prices() if p.gpu == gpu and p.tier] if gpu else []
        why = (f"the price catalog has no default rental rate for {gpu}, only {', '.join(tiers)}" if tiers
               else f"the price catalog has no rental rate for {gpu}" if gpu else "no GPU chosen")
        hint = "give --price-tier or --usd-per-gpu-hour" if tiers else "give --usd-per-gpu-hour"
        return f"{rate}/GPU-hour, example default ({why}; {hint})"
    return f"{rate}/GPU-hour, typed (no tier)"


def architecture(m: catalog.Model) -> dict[str, Any]:
    """The scenario's architecture fields from a model (catalog row or config.json)."""
    arch = model_inputs(m)
    return dict(params_b=round(m.params_b, 3), active_params_b=round(m.active_params_b, 3) if m.experts else 0,
                hidden=m.hidden, layers=m.layers, heads=m.heads,
                head_dim_given=(HEAD_DIM_FROM_SHAPE if arch["head_dim"] * m.heads == m.hidden
                                else arch["head_dim"]),
                kv_heads=arch["kv_heads"], ffn_hidden=arch["ffn_hidden"], gated_ffn=arch["gated_ffn"],
                vocab=arch["vocab"], tied_embeddings=arch["tied_embeddings"])


def evaluate(scenario: Scenario) -> dict[str, Any]:
    """All named results of a scenario, computed by the engine's formulas."""
    env: dict[str, Any] = scenario.cell_values()
    unpriced = {"Capex_USD_per_GPU"} if scenario.capex_usd_per_gpu is None else set()
    for out in OUTPUTS:
        if unpriced & {v for a in out.args.values() for v in a.variables()}:
            # owning with no purchase price: the owning results say what to type (as the workbook's cells do)
            env[out.name] = str(catalog.missing_capex(scenario.gpu))
            unpriced.add(out.name)
            continue
        args = {k: v.evaluate(env) for k, v in out.args.items()}
        try:
            env[out.name] = out.formula(**args)
        except InputError as exc:
            if out.name not in MESSAGE_OUTPUTS:
                raise
            env[out.name] = str(exc)
    return {o.name: env[o.name] for o in OUTPUTS}


MAX_SCENARIO_BYTES = 1_000_000


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario preset (TOML: the fields of :class:`Scenario`, presets filled first).

    The file is untrusted input: a regular file of at most ``MAX_SCENARIO_BYTES``, every key a field of
    :class:`Scenario`, every value of the field's TOML type (``seq_parallel = "false"`` is an error, not true;
    ``layers = 80.5`` or ``80.0`` is not a whole number), no NaN, infinity, huge number or control character;
    each mistake names its key.
    """
    raw = read_limited(path, "scenario", MAX_SCENARIO_BYTES, "scenario TOML file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError("scenario", str(path), "a UTF-8 TOML file of scenario fields", str(exc)) from None
    except RecursionError:
        raise InputError("scenario", str(path), "a TOML file of scenario fields", "nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts
        m = re.search(r"^\s*([^=\n]+?)\s*=\s*[+-]?[0-9_]{400,}", raw.decode("utf-8", "replace"), re.M)
        raise InputError(m.group(1) if m else "scenario", "a number of thousands of digits",
                         "a number below 1e18") from None
    fields = Scenario.model_fields

    def check(key: str) -> None:  # one key and its value, as untrusted input
        value = data[key]
        check_text("scenario key", key, "")
        if key not in fields:
            raise UnknownNameError("scenario field", key, sorted(fields))
        if key == "notes" and isinstance(value, str):
            check_text(key, value, "\t\n")  # notes may hold line breaks
        else:
            check_value(key, value)
        _check_type(key, value, fields[key].annotation)

    InputError.each(check, data)
    return Scenario.build(**data)


_TOML_KINDS = {bool: "true or false (a TOML boolean, not text)", int: "a whole number (a TOML integer)",
               float: "a number", str: "text (a TOML string)"}


def _check_type(key: str, value: Any, annotation: Any) -> None:
    kind = next((a for a in typing.get_args(annotation) if a is not type(None)), annotation)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {bool: isinstance(value, bool), int: number and isinstance(value, int), float: number, str: isinstance(value, str)}
    if not ok.get(kind, True):
        raise InputError(key, value if isinstance(value, (str, int, float)) else type(value).__name__, _TOML_KINDS[kind])

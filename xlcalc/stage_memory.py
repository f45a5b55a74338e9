"""One model of a pipeline stage's memory per GPU, for every face.

The model is a list of named steps (:func:`memory_steps`), each *one registered formula* of
:mod:`xlcalc.formulas.memory` applied to expressions over input names and earlier steps:

* ``xlcalc memory``, ``xlcalc plan`` and Python evaluate the steps with numbers (:func:`evaluate`,
  :func:`stage_memory`);
* ``xlcalc estimate`` and the workbook take the same steps as named outputs of the scenario
  (:mod:`xlcalc.scenario`), each written as an Excel formula over defined names;
* the worksheet functions are the registered formulas themselves (``MEM_STAGE_TOTAL_GB``,
  ``MEM_WEIGHTS_GB``, ...), and the layout check is ``LAYOUT_MESSAGE``.

The first and the last pipeline stage differ (the first holds the input embedding and the most
micro-batches in flight, the last the output layer and the logits), so every part is given per stage;
the memory a layout needs is the heavier stage's. Every term is an explicit input with its default in
:mod:`xlcalc.recipes` (``DEFAULT_RECIPE``, ``MEMORY_DEFAULTS``).

Parts of a stage (GB = 1e9 bytes per GPU):

========================  =====================================================================
weights                   stage params / TP (/ shard group under ZeRO-3, FSDP full shard, HSDP)
gradients                 ... (/ shard group under ZeRO-2 and 3, FSDP grad-op shard)
optimizer                 ... (/ shard group under ZeRO-1, 2, 3); 0 when offloaded to the CPU
fp8_copies                FP8 weight copies (bytes_fp8 per parameter), sharded as the weights
gathered_params           ZeRO-3/FSDP: the layer gathered whole, and the prefetched layers; pipelined (PyTorch
                          FSDP2 + pipelining): the whole stage gathered and its gradients unsharded
activations               stage layers x per-layer bytes (one call: LAYER_ACTIVATION_BYTES) x in flight
recompute_working         one layer's activations re-materialised during its backward
logits                    logits and loss buffers (last stage; every stage when PP = 1)
comm_buffers              communication buckets
other                     a flat allowance (``overhead_gb``): NCCL buffers, library workspaces; the CUDA context
                          and the allocator reserve are the fit answer's margin (FIT_MARGIN_GB)
========================  =====================================================================

Fine-tuning (``job``; the marked *fine-tuning* lines of :func:`memory_steps`, formulas in
:mod:`xlcalc.formulas.finetune`): ``full`` is pre-training's model exactly. ``lora`` and ``qlora`` freeze the
base — 16-bit weights, or NF4 with its block constants on the decoder's linear layers (embeddings and output
layer stay 16-bit) — and train LoRA adapters (``lora_rank`` on ``lora_targets``): the recipe's bytes of weights,
gradients and optimizer states apply to the adapters only; ZeRO-3/FSDP shard the frozen base as well. The
activations drop what a frozen matrix without an adapter keeps only for its weight gradient
(ACT_FROZEN_SAVING_BYTES). A paged optimizer (bitsandbytes' paged AdamW) allocates its states in CUDA unified
memory: they count here as GPU memory, since they leave the GPU only when it runs out; states held on the
CPU are ``optimizer_offload``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, cast

from . import registry
from . import stage_memory_code as _code
from .errors import InputError
from .expr.functions import eq, if_
from .expr.nodes import Expr, Num, Var, wrap
from .formulas import activations as fa
from .formulas import finetune as ff
from .formulas import memory as fm
from .formulas import steptime as fs
from .frameworks import DEFAULT_FRAMEWORK, PROFILE_INPUTS, udf_defaults
from .inputs import spec
from .layout import LAYOUT_DEFAULTS, LAYOUT_INPUTS, check_layout
from .recipes import MEMORY_DEFAULTS, SHARDING, default_bytes, recipe_label
from .registry import Formula, formula
from .validate import check_value

__all__ = ["Step", "PARTS", "STAGES", "MODEL_INPUTS", "SHARDING", "memory_steps", "evaluate", "stage_memory",
           "StageMemory", "defaults"]

STAGES = ("First", "Last")

# (key, label) of each part, in the order the tables list them
PARTS: tuple[tuple[str, str], ...] = (
    ("weights", "Weights"),
    ("gradients", "Gradients"),
    ("optimizer", "Optimizer states"),
    ("fp8_copies", "FP8 weight copies"),
    ("gathered_params", "Gathered ZeRO-3/FSDP parameters"),
    ("activations", "Activations (in-flight micro-batches)"),
    ("recompute_working", "Recompute working set"),
    ("logits", "Logits and loss buffers"),
    ("comm_buffers", "Communication buckets"),
    ("other", "Other (NCCL, workspaces)"),
)


# Every input of the model (input-spec names); those not in ``defaults()`` must be given.
MODEL_INPUTS = (
    "params_b", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "gated_ffn", "vocab", "tied_embeddings",
    "seq_len", "micro_batch", "microbatches", "tp", "pp", "cp", "dp", "dp_shard", "zero_stage", "seq_parallel",
    "recompute", "virtual_stages", "first_stage_layers", "last_stage_layers", "flash_attention",
    "bytes_weights", "bytes_grads", "bytes_optimizer", "bytes_fp8", "optimizer_offload", "grads_freed", "prefetch_layers",
    "comm_buffer_gb", "logits_buffer_bytes", "overhead_gb", "optimizer_step_bytes",
    "autocast_copy_bytes",
    # what the card holds beyond the tensors: the fit answer's margin (used only with a capacity)
    "cuda_context_gb", "allocator_reserve_frac",
    # layout-only inputs (0 = not given)
    "cluster_gpus", "batch_sequences", "experts", "ep",
    # fine-tuning (job = full: pre-training's model states)
    "job", "lora_rank", "lora_targets", "quant_block", "double_quant",
    # mixture of experts: routed-expert parameters, split over ep GPUs (0 = dense)
    "expert_params_b", "expert_tp",
)


def defaults() -> dict[str, Any]:
    """The model's defaults: the default recipe's bytes and MEMORY_DEFAULTS (xlcalc.recipes)."""
    not_given = {k: LAYOUT_DEFAULTS[k] for k in ("cluster_gpus", "batch_sequences", "experts", "ep")}  # the layout's
    return {**default_bytes(), **MEMORY_DEFAULTS, **not_given, "expert_params_b": 0, "expert_tp": 0}


@dataclass(frozen=True)
class Step:
    name: str                       # defined name in the workbook; key of evaluate()'s result
    formula: Formula
    args: dict[str, Expr]
    label: str
    part: str | None = None         # a PARTS key when the step is one part of a stage
    of: str | None = None           # the stage: "First" | "Last" | None (shared)
    guarded: bool = True            # shows the layout message instead of a number when the layout is not whole

    def expr(self) -> Expr:
        return cast(Expr, self.formula(**self.args))


def sources(inputs: tuple[str, ...], src: Mapping[str, Any] | None) -> dict[str, Expr]:
    """A chain's inputs as expressions: ``src`` (input-spec name -> expression or value) over each input's defined
    name."""
    return {**{k: Var(spec(k).excel_name) for k in inputs}, **{k: wrap(v) for k, v in (src or {}).items()}}


def memory_steps(src: Mapping[str, Any] | None = None, capacity: Any = None, layout_dp: Any = None) -> tuple[Step, ...]:
    """The model's steps over ``src`` (input-spec name -> expression; default: each input's defined name).

    ``capacity`` (an expression, e.g. ``Var("GPU_Memory_GB")``) adds the fit and the largest micro-batch;
    ``layout_dp`` replaces DP in the layout check (a workbook whose DP cell shows the check's message).
    """
    s = sources(MODEL_INPUTS, src)
    steps: list[Step] = []

    def add(name: str, formula: Formula, label: str, part: str | None = None, of: str | None = None,
            guarded: bool = True, **args: Any) -> Var:
        # every parameter explicit (the defaults too): the workbook writes a step from its arguments alone
        args = {**formula.defaults, **args}
        steps.append(Step(name, formula, {k: wrap(v) for k, v in args.items()}, label, part, of, guarded))
        return Var(name)

    def named(*keys: str) -> dict[str, Any]:  # inputs passed on under their own names
        return {k: s[k] for k in keys}

    layout_args = named(*LAYOUT_INPUTS)
    if layout_dp is not None:
        layout_args["dp"] = wrap(layout_dp)
    add("Layout_Check", fm.layout_message, "Layout check (OK: every piece whole)", guarded=False, **layout_args)
    layer_b = add("Layer_Params_B", fm.layer_params_b, "Parameters of one layer (billions)",
                  **named("params_b", "layers", "hidden", "vocab", "tied_embeddings"))
    # --- fine-tuning: the adapters of the whole model and the parameters that are trained --------------------
    adapter_shape = named("hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "lora_rank", "lora_targets",
                          "gated_ffn", "job")
    add("Adapter_Params_B", ff.adapter_params_b, "LoRA adapter parameters of the model (billions; 0 = full job)",
        layers=s["layers"], **adapter_shape)
    add("Trainable_Params_B", ff.ft_trainable_params_b, "Trained parameters (billions: all, or the adapters)",
        params_b=s["params_b"], trainable_params_b=Var("Adapter_Params_B"), job=s["job"])

    def layer_activations(name: str, label: str, recompute: Any) -> Var:
        # THE call of the per-layer activation bytes: the tensor-by-tensor count of xlcalc.formulas.activations
        # (checked against PyTorch's saved tensors, docs/activations.md); whole sequence and CP given, the
        # formula splits the tokens by CP
        return add(name, fa.layer_activation_bytes, label, recompute=recompute,
                   **named("seq_len", "micro_batch", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden",
                           "gated_ffn", "flash_attention", "tp", "seq_parallel", "cp"))

    act = layer_activations("Layer_Act_Bytes", "Activation bytes one layer keeps per micro-batch", s["recompute"])
    act_none = layer_activations("Layer_Act_Bytes_No_Recompute", "Activation bytes of one layer without recompute",
                                 "none")
    # --- fine-tuning: what a frozen base does not keep (0 for a full job) -------------------------------------
    frozen = dict(seq_len=s["seq_len"] / s["cp"],
                  **named("micro_batch", "hidden", "ffn_hidden", "tp", "seq_parallel", "job", "lora_targets"))
    kept = act - add("Layer_Act_Frozen_Saving", ff.act_frozen_saving_bytes,
                     "Activation bytes a frozen base drops (one layer)", recompute=s["recompute"], **frozen)
    kept_none = act_none - add("Layer_Act_Frozen_Saving_No_Recompute", ff.act_frozen_saving_bytes,
                               "Activation bytes a frozen base drops, no recompute", recompute="none", **frozen)
    # --- torch.autocast with fp32 weights: the 16-bit weight copies each layer keeps for its backward ---------
    copies: dict[str, Any] = dict(layer_params_b=layer_b, tp=s["tp"], autocast_copy_bytes=s["autocast_copy_bytes"])
    kept = kept + add("Layer_Autocast_Copy_Bytes", fm.act_autocast_copy_bytes,
                      "Autocast weight copies one layer keeps (bytes)", recompute=s["recompute"], **copies)
    kept_none = kept_none + add("Layer_Autocast_Copy_Bytes_No_Recompute", fm.act_autocast_copy_bytes,
                                "Autocast weight copies of one layer, no recompute (bytes)", recompute="none", **copies)
    recompute = add("Mem_Recompute_GB", fm.mem_recompute_working_gb, "Recompute working set", part="recompute_working",
                    full_act_bytes=kept_none, stored_act_bytes=kept)
    # ZeRO / FSDP shard over the data-parallel GPUs of a stage, context-parallel ones included: Megatron's
    # distributed optimizer uses the DP x CP group (get_data_parallel_group(with_context_parallel=True)),
    # torchtitan's FSDP2 the dp_shard x cp mesh
    shard = if_(s["dp_shard"] > 0, s["dp_shard"], s["dp"] * s["cp"])
    # a dense model (expert_params_b the constant 0, as in the workbook): no expert terms in the formulas
    dense = isinstance(s["expert_params_b"], Num) and s["expert_params_b"].value == 0
    expert_args = named("layers", "expert_params_b", "ep", "tp", "expert_tp")
    if not dense:
        layer_held = add("Layer_Params_Held_B", expert_held_params_b, "Parameters of one layer one GPU gathers "
                         "under ZeRO-3 (billions)", stage_params_b=layer_b, stage_layers=1, **expert_args)
    totals: dict[str, Var] = {}
    states: dict[str, Expr] = {}
    acts: dict[str, Expr] = {}
    for st in STAGES:
        stage = st.lower()
        n = add(f"Stage_Layers_{st}", fm.stage_layers, f"Layers on the {stage} stage", of=st,
                **named("layers", "pp"), stage=stage, **named("first_stage_layers", "last_stage_layers"))
        params = add(f"Stage_Params_B_{st}", fm.stage_params_b, f"Parameters of the {stage} stage (billions)",
                     of=st, stage_layers=n, layer_params_b=layer_b, **named("hidden", "vocab", "pp", "tied_embeddings"))
        # expert parallelism: the stage's routed experts split over ep GPUs, their ZeRO/FSDP shard group the
        # other dp x cp / ep GPUs (Megatron's expert data-parallel group). Held on one GPU: dense + experts/ep;
        # sharded: (dense + experts) / shard either way. One (params, group) pair gives both.
        if dense:
            held, group = params, shard
        else:
            held = add(f"Stage_Params_Held_B_{st}", expert_held_params_b,
                       f"Parameters one GPU of the {stage} stage holds, in units of the TP split (billions)", of=st,
                       stage_params_b=params, stage_layers=n, **expert_args)
            group = add(f"Shard_Group_{st}", expert_shard_group, f"ZeRO/FSDP shard group of the {stage} stage, "
                        "experts and the rest together", of=st, dp=shard, params_b=held, stage_params_b=params)
        # --- fine-tuning: adapters on the stage; gradients and optimizer states of the trained parameters only --
        adapters = add(f"Stage_Adapter_Params_B_{st}", ff.adapter_params_b,
                       f"LoRA adapter parameters of the {stage} stage (billions)", of=st, layers=n, **adapter_shape)
        trained = add(f"Stage_Trainable_B_{st}", ff.ft_trainable_params_b,
                      f"Trained parameters of the {stage} stage (billions)", of=st, params_b=held,
                      trainable_params_b=adapters, job=s["job"])
        w = add(f"Mem_{st}_Weights_GB", ff.mem_ft_weights_gb, "Weights", "weights", st,
                params_b=held, embed_params_b=params - n * layer_b, trainable_params_b=adapters,
                **named("job", "zero_stage"), dp=group, **named("tp", "bytes_weights", "quant_block", "double_quant"))
        common = dict(params_b=trained, zero_stage=s["zero_stage"], dp=group, tp=s["tp"], pp=1)
        g = add(f"Mem_{st}_Grads_GB", fm.mem_grads_gb, "Gradients", "gradients", st,
                bytes_grads=s["bytes_grads"], **common)
        o = add(f"Mem_{st}_Optimizer_GB", fm.mem_optimizer_gb, "Optimizer states", "optimizer", st,
                bytes_optimizer=if_(s["optimizer_offload"], 0, s["bytes_optimizer"]), **common)
        step = add(f"Mem_{st}_Optimizer_Step_GB", fm.mem_optimizer_step_gb,
                   f"Optimizer step temporaries, {stage} stage (GB)", of=st,
                   optimizer_step_bytes=s["optimizer_step_bytes"], **common)
        f8 = add(f"Mem_{st}_FP8_GB", fm.mem_weights_gb, "FP8 weight copies", "fp8_copies", st,
                 bytes_weights=s["bytes_fp8"], **dict(common, params_b=held))
        # fine-tuning: a frozen layer is gathered without gradients (16 bit: 2 of the 4 bytes; NF4: its bytes);
        # under PP the frozen stage stays gathered in 16 bit or NF4, and only the adapters' gradients accumulate
        nf4 = ff.nf4_bytes_per_param(s["quant_block"], s["double_quant"])
        gathered_share = if_(eq(s["job"], "full"), 1, if_(eq(s["job"], "qlora"), nf4 / 4, 0.5))
        gat = add(f"Mem_{st}_Gathered_GB", fm.mem_gathered_params_gb, "Gathered ZeRO-3/FSDP parameters",
                  "gathered_params", st, layer_params_b=(layer_b if dense else layer_held) * gathered_share,
                  **named("tp", "zero_stage", "prefetch_layers", "pp"),
                  stage_params_b=held * if_(eq(s["job"], "qlora"), nf4 / 2, 1),
                  bytes_grads=if_(eq(s["job"], "full"), s["bytes_grads"], 0))
        fl = add(f"Inflight_{st}", fm.stage_inflight_microbatches, f"Micro-batches in flight on the {stage} stage",
                 of=st, pp=s["pp"], stage=stage, **named("virtual_stages", "microbatches"))
        a = add(f"Mem_{st}_Activations_GB", fm.mem_stage_act_gb, "Activations", "activations", st,
                stage_layers=n, stored_act_bytes=kept, inflight_microbatches=fl)
        lg = add(f"Mem_{st}_Logits_GB", fm.mem_logits_gb, "Logits and loss buffers", "logits", st,
                 **named("seq_len", "micro_batch", "vocab", "tp", "cp", "logits_buffer_bytes", "pp"), stage=stage,
                 output_copy_bytes=s["autocast_copy_bytes"] * s["hidden"])
        totals[st] = add(f"Mem_{st}_Total_GB", fm.mem_stage_total_gb, f"Total, {stage} stage", "total", st,
                         weights_gb=w, grads_gb=g, optimizer_gb=o, fp8_gb=f8, gathered_gb=gat, activations_gb=a,
                         recompute_gb=recompute, logits_gb=lg,
                         **named("comm_buffer_gb", "overhead_gb", "grads_freed", "pp"), step_gb=step)
        states[st] = w + g + o + f8 + gat
        acts[st] = a + recompute + lg
    peak: dict[str, Any] = dict(first_stage_gb=totals["First"], last_stage_gb=totals["Last"])
    add("Mem_Static_GB", fm.peak_stage_part_gb, "Model states per GPU, heavier stage (GB)",
        first_part_gb=states["First"], last_part_gb=states["Last"], **peak)
    add("Mem_Activations_GB", fm.peak_stage_part_gb, "Activations, recompute and logits per GPU, heavier stage (GB)",
        first_part_gb=acts["First"], last_part_gb=acts["Last"], **peak)
    total = add("Mem_Total_GB", fm.mem_peak_gb, "Memory per GPU, heavier stage (GB)", **peak)
    if capacity is not None:
        margin = add("Fit_Margin_GB", fm.fit_margin_gb, "Margin: CUDA context + allocator reserve (GB)",
                     total_gb=total, **named("cuda_context_gb", "allocator_reserve_frac"))
        add("Fit_Verdict", fm.fit_verdict, "Fit: fits / tight / does not fit", total_gb=total, memory_gb=capacity,
            margin_gb=margin)
        add("Fits_GPU", fm.fits_in_gpu, "Fits in one GPU with the margin?", total_gb=total, memory_gb=capacity,
            margin_gb=margin)
        fit_cap = add("Fit_Capacity_GB", fm.fit_capacity_gb, "Largest memory per GPU that fits with the margin (GB)",
                      memory_gb=capacity, **named("cuda_context_gb", "allocator_reserve_frac"))
        add("Max_Micro_Batch", fm.max_micro_batch, "Largest micro-batch that fits (heavier stage)",
            memory_gb=fit_cap, static_gb=Var("Mem_Static_GB"), overhead_gb=s["overhead_gb"] + s["comm_buffer_gb"],
            act_gb_per_sample=Var("Mem_Activations_GB") / s["micro_batch"])
    return tuple(steps)


@formula(
    udf="EXPERT_HELD_PARAMS_B", unit="billion parameters", category="memory",
    equation="stage params - stage layers/L * expert params * (1 - TP/(EP*ETP)), ETP = expert TP (0: = TP); "
             "the memory model then divides by TP",
    source="expert parallelism (Lepikhin et al. 2020, GShard; Megatron-Core MoE: EP x expert-TP x expert-DP = TP x CP x "
           "DP): each GPU holds 1/(EP*ETP) of every MoE layer's routed experts and 1/TP of the rest; routed experts "
           "spread evenly over the layers",
)
def expert_held_params_b(stage_params_b: Any, stage_layers: Any, layers: Any, expert_params_b: Any = 0, ep: Any = 1,
                         tp: Any = 1, expert_tp: Any = 0) -> Any:
    """Parameters of a stage one GPU holds before ZeRO, in units of the TP split: the routed experts / (EP x ETP)."""
    etp = if_(expert_tp > 0, expert_tp, tp)
    return stage_params_b - stage_layers / layers * expert_params_b * (1 - tp / (ep * etp))


@formula(
    udf="EXPERT_SHARD_GROUP", unit="GPUs", category="memory",
    equation="DP (the shard GPUs) * held params / stage params",
    source="ZeRO/FSDP sharding with expert parallelism: the dense part shards over the DP x CP GPUs, the routed "
           "experts over DP x CP / EP (x TP / ETP), so every GPU keeps (dense + experts) / (TP x shard) of each "
           "sharded state; this is the group that, applied to the held parameters, gives that share",
)
def expert_shard_group(dp: Any, params_b: Any, stage_params_b: Any) -> Any:
    """The effective ZeRO/FSDP group of a stage whose routed experts are split over EP (``dp``: its shard GPUs,
    ``params_b``: the parameters one GPU holds, EXPERT_HELD_PARAMS_B)."""
    return dp * params_b / stage_params_b


# --- evaluating the steps with numbers -----------------------------------------------------------

_Getter = Callable[[dict[str, Any]], Any]
_CompiledStep = tuple[str, Callable[..., Any], list[tuple[str, _Getter]]]
# the variants of the model as functions of xlcalc.stage_memory_code (scripts/make_memory_code.py):
# name -> (capacity given, MoE terms)
VARIANTS = {"dense": (False, False), "dense_fit": (True, False), "moe": (False, True), "moe_fit": (True, True)}
_CODE: dict[tuple[bool, bool], Callable[[dict[str, Any]], dict[str, Any]]] = {
    (capacity, moe): getattr(_code, name) for name, (capacity, moe) in VARIANTS.items()}
_EXCEL_NAME = {k: spec(k).excel_name for k in (*MODEL_INPUTS, "memory_gb")}


def _getter(e: Expr) -> _Getter:
    if isinstance(e, Var):
        name = e.name
        return lambda env: env[name]
    if isinstance(e, Num):
        value = e.value
        return lambda env: value
    return e.evaluate


@cache
def _compiled(capacity: bool, moe: bool = True) -> list[_CompiledStep]:
    """The steps as (name, function, argument getters); ``moe=False``: the dense model's steps (no expert terms)."""
    with registry.symbolic():
        steps = memory_steps(None if moe else {"expert_params_b": 0},
                             capacity=Var("GPU_Memory_GB") if capacity else None)
    # the layout check runs once in resolve(), as check_layout (the same constraints as Layout_Check)
    return [(st.name, st.formula.func, [(k, _getter(e)) for k, e in st.args.items()])
            for st in steps if st.name != "Layout_Check"]


def resolve(values: Mapping[str, Any]) -> dict[str, Any]:
    """Validated inputs of the model: defaults filled, the sharding name applied, the layout checked.

    Raises :class:`InputError` naming every missing input at once, a bad value, or the layout constraint broken.
    """
    v = {k: x for k, x in values.items() if x is not None}
    if (sharding := v.pop("sharding", None)) is not None:
        key = str(sharding).strip().lower()
        if key not in SHARDING:
            raise InputError("sharding", sharding, "one of " + ", ".join(SHARDING))
        if "zero_stage" in v and v["zero_stage"] != SHARDING[key]:
            raise InputError("zero_stage", v["zero_stage"], f"{SHARDING[key]} with sharding = {key!r} (or left out)")
        v["zero_stage"] = SHARDING[key]
        if key == "hsdp" and not v.get("dp_shard"):
            raise InputError("dp_shard", v.get("dp_shard"), "the GPUs of one HSDP shard group (a divisor of DP)",
                             "HSDP shards inside a group and replicates across groups")
    if v.get("kv_heads") is None and "heads" in v:
        v["kv_heads"] = v["heads"]
    if v.get("ffn_hidden") is None and "hidden" in v:
        v["ffn_hidden"] = 4 * v["hidden"]
    merged = {**defaults(), **v}
    if missing := [k for k in MODEL_INPUTS if k not in merged and k != "head_dim"]:
        raise InputError(", ".join(missing), None, "given (the memory model needs them)",
                         f"missing: {', '.join(missing)}")
    if unknown := sorted(set(merged) - set(MODEL_INPUTS) - {"memory_gb"}):
        raise TypeError(f"the memory model has no input {', '.join(unknown)}")
    head_dim = merged.pop("head_dim", None)
    clean = {k: check_value(k, x) for k, x in merged.items()}
    if clean["cluster_gpus"]:
        replica = clean["tp"] * clean["pp"] * clean["cp"]
        derived = clean["cluster_gpus"] // replica or 1
        if "dp" in v and clean["dp"] != derived and clean["cluster_gpus"] % replica == 0:  # a contradiction
            raise InputError("dp", v["dp"], f"{derived} (GPUs / (TP x PP x CP) = {clean['cluster_gpus']} / {replica}), "
                             "or left out", "with the cluster's GPUs given, the data-parallel size follows from them")
        clean["dp"] = derived
    check_layout(**{k: clean[k] for k in LAYOUT_INPUTS})
    # the head size: given (MLA, Gemma-style models), else hidden/heads (whole: the layout check saw to it)
    clean["head_dim"] = check_value("head_dim", head_dim if head_dim is not None else clean["hidden"] // clean["heads"])
    return clean


def compiled_steps(values: dict[str, Any]) -> dict[str, Any]:
    """Every step by name (not the inputs) for validated inputs by input name, by the compiled model
    (:mod:`xlcalc.stage_memory_code`): :func:`evaluate` with ``compiled=True`` without the inputs copied under their
    defined names (the planner's search)."""
    return _CODE[values.get("memory_gb") is not None, bool(values.get("expert_params_b"))](values)


def evaluate(values: Mapping[str, Any], *, validated: bool = False, compiled: bool = False) -> dict[str, Any]:
    """Every step of the model by name, for numbers (``memory_gb`` adds the fit and the largest micro-batch).

    ``validated=True`` skips :func:`resolve` (the planner's inner loop checks its inputs once). ``compiled=True``
    runs the same steps as one plain function of :mod:`xlcalc.stage_memory_code`, generated from them by
    scripts/make_memory_code.py (the planner's search; tests/test_memory_code.py checks that both give the same
    numbers); else each step's formula is called in turn.
    """
    clean = dict(values) if validated else resolve(values)
    capacity = clean.get("memory_gb") is not None
    env: dict[str, Any] = {_EXCEL_NAME[k]: x for k, x in clean.items()}
    moe = bool(clean.get("expert_params_b"))
    if compiled:
        env.update(_CODE[capacity, moe](clean))
        return env
    with registry.numeric():  # inputs validated: formulas nested in these bodies take the fast path
        for name, func, getters in _compiled(capacity, moe):
            env[name] = func(**{k: g(env) for k, g in getters})
    return env


@dataclass
class StageMemory:
    """A memory answer explained: each part per stage, the totals, the heavier stage against the capacity."""

    inputs: dict[str, Any]
    recipe: str
    parts_gb: dict[str, dict[str, float]]      # stage ("first"/"last") -> part -> GB
    totals_gb: dict[str, float]                # stage -> GB
    stage_layers: dict[str, float]
    memory_gb: float                           # the heavier stage
    peak_stage: str
    static_gb: float
    activations_gb: float
    capacity_gb: float | None = None
    fits: bool | None = None
    max_micro_batch: int | None = None
    values: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        out = {
            "recipe": self.recipe, "inputs": self.inputs,
            "stages": {st: {"layers": self.stage_layers[st], "parts_gb": self.parts_gb[st],
                            "total_gb": self.totals_gb[st]} for st in self.parts_gb},
            "peak_stage": self.peak_stage, "total_gb": self.memory_gb, "static_gb": self.static_gb,
            "activations_gb": self.activations_gb,
            # fine-tuning: the parameters that are trained (all of them for a full job) and the adapters
            "trainable_params_b": self.values.get("Trainable_Params_B"),
            "adapter_params_b": self.values.get("Adapter_Params_B"),
            # the optimizer step's temporaries of the heavier stage (not a part: they live only at the step, in place
            # of the activations; MEM_STAGE_TOTAL_GB)
            "optimizer_step_gb": self.values.get(f"Mem_{self.peak_stage.title()}_Optimizer_Step_GB"),
        }
        if self.capacity_gb is not None:
            out.update(capacity_gb=self.capacity_gb, fits=self.fits, max_micro_batch=self.max_micro_batch,
                       headroom_gb=self.capacity_gb - self.memory_gb, fit=self.fit_answer())
        return out

    def fit_answer(self) -> dict[str, Any]:
        """The fit answer (FIT_VERDICT over the steps' values): the verdict, the margin and its terms, the
        prediction + margin, the capacity, the two largest parts of the heavier stage."""
        v = self.values
        ctx = v.get("CUDA_Context_GB", MEMORY_DEFAULTS["cuda_context_gb"])
        row = self.parts_gb[self.peak_stage]
        return {
            "verdict": v["Fit_Verdict"], "margin_gb": v["Fit_Margin_GB"], "cuda_context_gb": ctx,
            "allocator_reserve_frac": v.get("Allocator_Reserve_Frac", MEMORY_DEFAULTS["allocator_reserve_frac"]),
            "allocator_reserve_gb": v["Fit_Margin_GB"] - ctx,
            "upper_gb": self.memory_gb + v["Fit_Margin_GB"], "capacity_gb": self.capacity_gb,
            "largest_parts_gb": {k: row[k] for k in sorted(row, key=lambda k: -row[k])[:2]},  # largest first
        }


def explain(env: Mapping[str, Any], inputs: Mapping[str, Any]) -> StageMemory:
    """A :class:`StageMemory` from :func:`evaluate`'s result."""
    names = {st.part: st.name for st in memory_steps() if st.part and st.of == "First"}
    shared = {"comm_buffers": "Comm_Buffer_GB", "other": "Overhead_GB", "recompute_working": "Mem_Recompute_GB"}
    parts = {st.lower(): {key: env[shared.get(key) or names[key].replace("_First_", f"_{st}_")]
                          for key, _label in PARTS} for st in STAGES}
    totals = {st.lower(): env[f"Mem_{st}_Total_GB"] for st in STAGES}
    return StageMemory(
        inputs=dict(inputs), recipe=recipe_label(inputs["bytes_weights"], inputs["bytes_grads"],
                                                 inputs["bytes_optimizer"]),
        parts_gb=parts, totals_gb=totals, stage_layers={st.lower(): env[f"Stage_Layers_{st}"] for st in STAGES},
        memory_gb=env["Mem_Total_GB"], peak_stage="first" if totals["first"] >= totals["last"] else "last",
        static_gb=env["Mem_Static_GB"], activations_gb=env["Mem_Activations_GB"],
        capacity_gb=env.get("GPU_Memory_GB"), fits=env.get("Fits_GPU"),
        max_micro_batch=int(env["Max_Micro_Batch"]) if "Max_Micro_Batch" in env else None, values=dict(env),
    )


def stage_memory(**values: Any) -> StageMemory:
    """The memory answer for some inputs (input-spec names; ``memory_gb`` for the fit; ``sharding`` by name)."""
    clean = resolve(values)
    return explain(evaluate(clean, validated=True), clean)


# --- the composed model as one worksheet function ---------------------------------------------------

_D = defaults()


def _compose(values: dict[str, Any], result: str) -> Any:
    """One step of the model for numbers (validated) or, with expressions, as one inlined expression."""
    v = {**_D, **values}
    v["head_dim"] = fs.head_dim_of(v["hidden"], v["heads"], v.pop("head_dim_given"))  # the model's own, else h / a
    if not any(isinstance(x, Expr) for x in v.values()):
        return evaluate(v, validated=True)[result]
    env: dict[str, Expr] = {}
    for st in memory_steps({k: v[k] for k in MODEL_INPUTS}):
        if st.name != "Layout_Check":
            env[st.name] = st.formula.expr.substitute({k: a.substitute(env) for k, a in st.args.items()})
    return env[result]


@formula(
    udf="MEM_PER_GPU_GB", question=True, unit="GB per GPU", category="memory",
    check=lambda **v: check_layout(**{k: v[k] for k in LAYOUT_INPUTS if k in v}),  # the layout inputs it has
    equation="MAX over the first and last pipeline stage of weights + gradients + optimizer + FP8 copies + gathered "
             "parameters + activations + recompute working set + logits + buckets + other; the optimizer step's "
             "temporaries in place of activations, recompute and logits where larger (xlcalc.stage_memory)",
    source="the stage memory model: ZeRO (Rajbhandari et al. 2019), Korthikanti et al. 2022, Narayanan et al. 2021",
    # framework and precision fill the recipe bytes, logits buffer, optimizer step, autocast copies and grads freed
    # left out (xlcalc.frameworks); each of those given wins
    dynamic_defaults=udf_defaults, dynamic_params=PROFILE_INPUTS,
    dynamic_from=("framework", "precision"),
)
def mem_per_gpu_gb(params_b, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len,  # type: ignore[no-untyped-def]  # a formula body (see pyproject.toml)
                   micro_batch=_D["micro_batch"], tp=_D["tp"], pp=_D["pp"], cp=_D["cp"], dp=_D["dp"],
                   zero_stage=_D["zero_stage"], seq_parallel=_D["seq_parallel"], recompute=_D["recompute"],
                   gated_ffn=_D["gated_ffn"],
                   tied_embeddings=_D["tied_embeddings"], flash_attention=_D["flash_attention"],
                   virtual_stages=_D["virtual_stages"], microbatches=_D["microbatches"],
                   first_stage_layers=_D["first_stage_layers"], last_stage_layers=_D["last_stage_layers"],
                   dp_shard=_D["dp_shard"], bytes_weights=_D["bytes_weights"], bytes_grads=_D["bytes_grads"],
                   bytes_optimizer=_D["bytes_optimizer"], optimizer_offload=_D["optimizer_offload"],
                   bytes_fp8=_D["bytes_fp8"], prefetch_layers=_D["prefetch_layers"],
                   comm_buffer_gb=_D["comm_buffer_gb"], logits_buffer_bytes=_D["logits_buffer_bytes"],
                   overhead_gb=_D["overhead_gb"], grads_freed=_D["grads_freed"], job=_D["job"],
                   optimizer_step_bytes=_D["optimizer_step_bytes"], autocast_copy_bytes=_D["autocast_copy_bytes"],
                   lora_rank=_D["lora_rank"], lora_targets=_D["lora_targets"], quant_block=_D["quant_block"],
                   double_quant=_D["double_quant"], framework=DEFAULT_FRAMEWORK, precision="default",
                   head_dim_given=fs.HEAD_DIM_FROM_SHAPE):
    """Memory per GPU of a training layout: the heavier of its first and last pipeline stage (the whole model)."""
    values = dict(locals())
    del values["framework"], values["precision"]  # they acted through the defaults of the inputs they set
    return _compose(values, "Mem_Total_GB")

"""``xlcalc memory``: memory per GPU by part and pipeline stage, against the GPU's memory."""

from __future__ import annotations

import argparse

from .. import catalog
from ..errors import CatalogError, InputError
from ..formulas.microbatch import microbatches_per_step
from ..frameworks import (
    DEFAULT_FRAMEWORK,
    DEFAULT_PRECISION,
    FRAMEWORK_ALIASES,
    FRAMEWORKS,
    PRECISION_ALIASES,
    PRECISIONS,
    framework_label,
    profile_values,
)
from ..inputs import spec
from ..layout import stage_split
from ..lora_targets import target_set
from ..model_inputs import model_inputs
from ..recipes import DEFAULT_RECIPE, DEFAULT_SEQ_LEN, MEMORY_DEFAULTS, RECIPES, recipe_bytes
from ..stage_memory import PARTS, resolve, stage_memory
from ..validate import validate_all
from .flags import add_command, add_switch, shown, switch_value
from .fmt import cli_value, dump_json, number, table
from .models import add_config_flag, config_model

# flag -> input name (values validated by the model, every input spec's rule)
_NUMBER_FLAGS = (
    ("params-b", "parameters, billions (default: from --model)"),
    ("layers", "layers L (default: from --model)"),
    ("hidden", "hidden size h (default: from --model)"),
    ("heads", "attention heads a (default: from --model)"),
    ("kv-heads", "key/value heads (default: from --model, else = heads)"),
    ("head-dim", "head size (default: from --model, else hidden/heads)"),
    ("ffn-hidden", "FFN inner size F (default: from --model, else 4h)"),
    ("vocab", "vocabulary size V (default: from --model)"),
    ("seq-len", f"sequence length (default: a catalog model's pre-training one, else {DEFAULT_SEQ_LEN})"),
    ("micro-batch", f"micro-batch size, sequences (default {MEMORY_DEFAULTS['micro_batch']})"),
    ("tp", f"tensor-parallel size (default {MEMORY_DEFAULTS['tp']})"),
    ("pp", f"pipeline-parallel size (default {MEMORY_DEFAULTS['pp']})"),
    ("cp", f"context-parallel size (default {MEMORY_DEFAULTS['cp']})"),
    ("dp", f"data-parallel size; ZeRO/FSDP shard over it (default {MEMORY_DEFAULTS['dp']}, or from --n-gpus)"),
    ("n-gpus", "GPUs in all: DP = GPUs/(TP x PP x CP), checked whole"),
    ("dp-shard", "GPUs one ZeRO/FSDP shard group spans (HSDP; default: all of DP)"),
    ("zero-stage", f"ZeRO stage 0-3 (default {MEMORY_DEFAULTS['zero_stage']}; or --sharding)"),
    ("ep", "expert-parallel size (checked against the model's experts)"),
    ("virtual-stages", f"interleaved virtual stages per GPU (default {MEMORY_DEFAULTS['virtual_stages']}: plain 1F1B)"),
    ("microbatches", "micro-batches per step per pipeline (default: enough to fill the pipeline)"),
    ("global-batch", "global batch in sequences: checked against DP x micro-batch, sets --microbatches"),
    ("first-stage-layers", "layers on the first pipeline stage (uneven split; default even)"),
    ("last-stage-layers", "layers on the last pipeline stage (uneven split; default even)"),
    ("bytes-weights", "override the recipe: bytes/param for weights"),
    ("bytes-grads", "override the recipe: bytes/param for gradients"),
    ("bytes-optimizer", "override the recipe: bytes/param for optimizer states"),
    ("bytes-fp8", f"bytes/param of FP8 weight copies (default {MEMORY_DEFAULTS['bytes_fp8']:g})"),
    ("prefetch-layers", f"ZeRO-3/FSDP layers prefetched (default {MEMORY_DEFAULTS['prefetch_layers']})"),
    ("comm-buffer-gb", f"communication buckets per GPU, GB (default {MEMORY_DEFAULTS['comm_buffer_gb']:g})"),
    ("logits-buffer-bytes", f"bytes per logit held for the loss (default {MEMORY_DEFAULTS['logits_buffer_bytes']:g};"
                            " unfused PyTorch loss: 12, compiled: 4)"),
    ("optimizer-step-bytes", "bytes/param the optimizer step allocates (default "
                             f"{MEMORY_DEFAULTS['optimizer_step_bytes']:g}: fused; PyTorch foreach AdamW: 2 bf16, 4 fp32)"),
    ("autocast-copy-bytes", "bytes/param of the 16-bit weight copies torch.autocast keeps for the backward (default "
                            f"{MEMORY_DEFAULTS['autocast_copy_bytes']:g}; fp32 weights under autocast: 2)"),
    ("overhead-gb", f"other memory: NCCL, workspaces, GB (default {MEMORY_DEFAULTS['overhead_gb']:g})"),
    ("cuda-context-gb", f"CUDA context, GB, in the fit's margin (default {MEMORY_DEFAULTS['cuda_context_gb']:g})"),
    ("allocator-reserve-frac", "caching allocator reserve as a share of the prediction, in the fit's margin "
     f"(default {MEMORY_DEFAULTS['allocator_reserve_frac']:g}; lower with expandable_segments)"),
    ("memory-gb", "GPU memory to check against, GB (default: from --gpu)"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "memory", "memory per GPU by part and pipeline stage; does it fit",
        "Memory per GPU of the first and the last pipeline stage, by part (weights, gradients, optimizer, "
        "FP8 copies, gathered ZeRO-3/FSDP parameters, activations, recompute working set, logits, buckets, "
        "other), under TP/PP/CP/DP, ZeRO/FSDP/HSDP and activation recomputation — the same model as "
        "estimate, plan, the worksheet functions and the workbook. Give the model by --model or by its "
        "architecture. A layout that does not split into whole pieces is an error naming the constraint.")
    p.add_argument("--model", help="model preset id, e.g. llama3.1-8b (see: xlcalc catalog models)")
    for flag, text in _NUMBER_FLAGS:
        p.add_argument("--" + flag, help=text)
    p.add_argument("--sharding", choices=sorted(spec("sharding").choices),
                   help="ZeRO/FSDP by name: fsdp_full_shard = ZeRO-3, fsdp_grad_op = ZeRO-2, hsdp = ZeRO-3 "
                        "inside --dp-shard GPUs")
    p.add_argument("--layers-per-stage", metavar="LIST",
                   help="layers of each pipeline stage, comma-separated, e.g. 27,27,26 for 80 layers on PP 3 "
                        "(sets --pp; the middle stages hold equal layers)")
    # TRUE/FALSE inputs take both forms (--seq-parallel, --seq-parallel false, --no-seq-parallel): xlcalc.cli.flags
    add_switch(p, "seq_parallel", "sequence parallelism", default=MEMORY_DEFAULTS["seq_parallel"])
    p.add_argument("--recompute", help="none, selective (Megatron), op_selective (PyTorch per-op SAC) or full "
                                       f"(default {MEMORY_DEFAULTS['recompute']})")
    add_switch(p, "flash_attention", "fused (Flash) attention; FALSE: attention stores the s x s scores",
               default=MEMORY_DEFAULTS["flash_attention"])
    add_switch(p, "gated_ffn", "gated FFN (SwiGLU) (default: from --model, else "
               f"{shown(MEMORY_DEFAULTS['gated_ffn'])})")
    add_switch(p, "tied_embeddings", "input and output share one table (default: from --model, else "
               f"{shown(MEMORY_DEFAULTS['tied_embeddings'])})")
    add_switch(p, "optimizer_offload", "optimizer states in CPU memory", default=MEMORY_DEFAULTS["optimizer_offload"])
    add_switch(p, "grads_freed", "gradients set to None between steps (PyTorch zero_grad default; one micro-batch, no "
               "pipeline): peak = larger of activations and gradients, not their sum (default: the framework's; "
               f"{shown(MEMORY_DEFAULTS['grads_freed'])} for {DEFAULT_FRAMEWORK})")
    p.add_argument("--recipe", choices=sorted(RECIPES),
                   help=f"bytes per parameter: zero 2+2+12, megatron 2+4+12, seed002 2+4+8, fp32 4+4+8, "
                        f"torchtune 2+2+4, qlora 2+2+8 (default {DEFAULT_RECIPE})")
    add_framework_flags(p)
    p.add_argument("--gpu", help="GPU to check the fit against, e.g. h100-sxm")
    add_finetune_flags(p)
    add_config_flag(p)
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def values_from_args(args: argparse.Namespace) -> dict:
    """The stage memory model's inputs from the flags (a model preset first, explicit flags win)."""
    model = config_model(args) or (catalog.get_model(args.model) if args.model else None)
    v: dict = model_inputs(model) if model is not None else {}
    v.setdefault("seq_len", DEFAULT_SEQ_LEN)  # no model (a config.json model has it already)
    # the memory inputs of --framework/--precision, with --recipe over them (the byte flags and --grads-freed /
    # --no-grads-freed over both, below)
    v.update(profile_values(args.framework, args.precision))
    if args.recipe:
        v.update(recipe_bytes(args.recipe))
    typed = {name: cli_value(getattr(args, name)) for name in (flag.replace("-", "_") for flag, _ in _NUMBER_FLAGS)}
    v.update({name: value for name, value in typed.items() if value is not None})
    if args.layers_per_stage is not None:
        if v.get("first_stage_layers") is not None or v.get("last_stage_layers") is not None:
            raise InputError("layers_per_stage", args.layers_per_stage,
                             "left out when --first-stage-layers / --last-stage-layers are given")
        if "layers" not in v:
            raise InputError("layers", None, "given (--model, --config or --layers) with --layers-per-stage")
        v.update(stage_split(args.layers_per_stage, int(float(v["layers"])),
                             int(float(v["pp"])) if v.get("pp") is not None else None))
    # checked as typed (--n-gpus 0 is a mistake; the model's cluster_gpus = 0 would mean "not given")
    validate_all({k: v[k] for k in ("n_gpus", "global_batch") if k in v})
    for flag_name, name in (("n_gpus", "cluster_gpus"), ("global_batch", "batch_sequences")):  # the model's names
        if flag_name in v:
            v[name] = v.pop(flag_name)
    if args.sharding:
        v["sharding"] = args.sharding
    switches = InputError.each(lambda name: switch_value(args, name), (  # every TRUE/FALSE flag that is neither, at once
        "seq_parallel", "optimizer_offload", "grads_freed", "flash_attention", "gated_ffn", "tied_embeddings"))
    for name, value in switches.items():  # left out: one GPU's, else the framework's (above) or the model's
        if value is not None or name in ("seq_parallel", "optimizer_offload", "flash_attention"):
            v[name] = MEMORY_DEFAULTS[name] if value is None else value
    v["recompute"] = MEMORY_DEFAULTS["recompute"] if args.recompute is None else args.recompute
    v.update(finetune_values(args))
    if args.gpu:
        gpu = catalog.get_gpu(args.gpu)
        if v.get("memory_gb") is None:
            if gpu.capacity_gb is None:
                raise CatalogError(f"{gpu.name}: no published memory size in the catalog; give --memory-gb")
            # what the card exposes to CUDA where a source gives it, else the nominal GB (the answer says which)
            v["memory_gb"] = gpu.capacity_gb
    return v


# --- framework and precision ---------------------------------------------------------------------------------

def add_framework_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--framework, --precision: the memory defaults of the software named (xlcalc.frameworks); --recipe, the byte
    flags and --grads-freed TRUE|FALSE win over them."""
    p.add_argument("--framework", metavar="NAME",
                   help="the framework you train with sets the recipe bytes, logits buffer, optimizer step, autocast "
                        f"copies and grads-freed: {', '.join(FRAMEWORKS)}, or a name it is known by ("
                        f"{', '.join(FRAMEWORK_ALIASES)}) (default {DEFAULT_FRAMEWORK}; "
                        "see docs/memory.md, Frameworks)")
    p.add_argument("--precision", metavar="NAME",
                   help=f"{', '.join(PRECISIONS)}: pure bf16, bf16 with fp32 master weights, fp32, or as PyTorch "
                        f"Lightning names them ({', '.join(PRECISION_ALIASES)}) (default: the framework's first; "
                        f"{DEFAULT_PRECISION} for {DEFAULT_FRAMEWORK})")


# the flags that override a framework's memory inputs
_PROFILE_FLAGS = ("recipe", "bytes_weights", "bytes_grads", "bytes_optimizer", "logits_buffer_bytes",
                  "optimizer_step_bytes", "autocast_copy_bytes", "grads_freed")


def framework_words(args: argparse.Namespace) -> str:
    """The framework and precision assumed, in words, and the flags given that override them."""
    words = framework_label(args.framework, args.precision)
    overrides = [f"--{f.replace('_', '-')}" for f in _PROFILE_FLAGS if getattr(args, f, None) not in (None, False)]
    return words + ("; overridden by " + ", ".join(overrides) if overrides else "")


# --- fine-tuning flags (memory and estimate) ---------------------------------------------------------------

# the inputs these flags set (estimate takes them from here, not from its generic input flags)
FINETUNE_FIELDS = ("job", "lora_rank", "lora_targets")


def add_finetune_flags(p: argparse.ArgumentParser) -> None:
    """--job, --lora-rank, --lora-targets and --quant (the same on memory and estimate)."""
    g = p.add_argument_group("fine-tuning (LoRA / QLoRA)")
    g.add_argument("--job", choices=("full", "lora", "qlora"),
                   help="full trains every weight (as pre-training); lora freezes a 16-bit base and trains "
                        "adapters; qlora freezes a 4-bit NF4 base (default full, or lora when --lora-rank is given)")
    g.add_argument("--lora-rank", metavar="R", help="LoRA rank r of each adapter (default 8 with --job lora/qlora)")
    g.add_argument("--lora-targets", metavar="LIST",
                   help="matrices with adapters: q,v | q,k,v | q,k,v,o | q,k,v,o,gate,up,down (or the names qv, "
                        "qkv, attention, all_linear; q_proj, ..., mlp accepted) (default all_linear)")
    g.add_argument("--quant", choices=spec("quant").choices,
                   help="nf4: the frozen base in 4-bit NormalFloat with double-quantised constants (QLoRA; "
                        "implies --job qlora)")


def finetune_values(args: argparse.Namespace) -> dict:
    """The job's inputs from the fine-tuning flags (nothing when none is given: a full job)."""
    job, quant = args.job, args.quant
    rank, targets = cli_value(args.lora_rank), args.lora_targets
    if quant == "nf4":
        if job in ("full", "lora"):
            raise InputError("quant", quant, "left out with --job " + job,
                             "nf4 stores a frozen base: it is --job qlora")
        job = "qlora"
    elif quant == "none" and job == "qlora":
        raise InputError("quant", quant, "nf4 (or left out) with --job qlora", "QLoRA's base is 4-bit NF4")
    if job is None and (rank is not None or targets is not None):
        job = "lora"
    if job == "full" and (rank is not None or targets is not None):
        raise InputError("lora_rank" if rank is not None else "lora_targets", rank if rank is not None else targets,
                         "left out with --job full", "a full fine-tune has no adapters")
    out = {"job": job, "lora_rank": rank, "lora_targets": None if targets is None else target_set(targets)}
    return {k: v for k, v in out.items() if v is not None}


def job_line(out: dict) -> str:
    """The job in words, for the text output of memory and estimate."""
    i = out["inputs"]
    if i["job"] == "full":
        return "job: full (every weight trained: gradients and optimizer states on all parameters)"
    base = "NF4 4-bit (QLoRA)" if i["job"] == "qlora" else "16-bit"
    share = out["trainable_params_b"] / i["params_b"]
    return (f"job: {i['job']}, rank {i['lora_rank']} on {i['lora_targets']}: {number(out['trainable_params_b'] * 1e3)}M "
            f"adapter parameters trained ({share:.2%} of {i['params_b']:g}B); base frozen in {base}")


def run(args: argparse.Namespace) -> int:
    values = values_from_args(args)
    if values.get("batch_sequences") and "microbatches" not in values:
        clean = resolve(values)  # a whole number: the layout check refuses a batch that does not split
        values["microbatches"] = int(microbatches_per_step(clean["batch_sequences"], clean["dp"], clean["micro_batch"]))
    out = stage_memory(**values).to_json()
    out["framework"] = framework_words(args)
    gpu = catalog.get_gpu(args.gpu) if args.gpu else None
    if gpu is not None:
        out["gpu"] = gpu.id
    if "fit" in out:
        out["fit"]["capacity_basis"] = gpu.capacity_basis if gpu is not None and args.memory_gb is None else "given"
    if args.json:
        print(dump_json(out))
        return 0
    i = out["inputs"]
    print(f"{i['params_b']:g}B params, L={i['layers']} h={i['hidden']} a={i['heads']} kv={i['kv_heads']} "
          f"s={i['seq_len']} b={i['micro_batch']}; TP={i['tp']} PP={i['pp']} CP={i['cp']} DP={i['dp']} "
          f"ZeRO-{i['zero_stage']} SP={'on' if i['seq_parallel'] else 'off'} recompute={i['recompute']}")
    print(f"framework: {out['framework']}")
    print(f"recipe: {out['recipe']}; other memory {i['overhead_gb']:g} GB")
    print(job_line(out))
    if i.get("grads_freed") and i.get("pp") == 1:
        print("gradients freed between steps: the total holds the larger of the gradients and activations + "
              "recompute + logits, not both")
    if out.get("optimizer_step_gb"):
        print(f"optimizer step temporaries: {out['optimizer_step_gb']:,.2f} GB at the step, beside the gradients and "
              "in place of the activations (in the total where that moment is the heavier)")
    print("\n" + stage_table(out))
    print(f"\nmemory per GPU: {out['total_gb']:,.2f} GB ({out['peak_stage']} stage)")
    if "fit" in out:
        print(fit_lines(out))
        if out["fit"]["verdict"] != "fits":
            smaller = out["max_micro_batch"]
            print("a layout that fits: " + (f"--micro-batch {number(smaller)} (the largest that fits), or " if
                                            1 <= smaller < i["micro_batch"] else "")
                  + "shard with --tp, --pp, --dp and --zero-stage (or recompute with --recompute), or let "
                  "`xlcalc plan` search for one")
    return 0


_BASIS = {"cuda": "as the card exposes it to CUDA", "nominal": "nominal: no source in the catalog gives what the "
          "card exposes to CUDA", "given": "as given"}


def fit_lines(out: dict) -> str:
    """The fit answer of StageMemory.to_json() in words: verdict, capacity, margin and its terms, two largest parts."""
    f = out["fit"]
    labels = dict(PARTS)
    where = out.get("gpu", "GPU")
    largest = ", ".join(f"{labels[k].lower()} {gb:,.2f} GB" for k, gb in f["largest_parts_gb"].items())
    return (f"fit: {f['verdict'].upper()} on {where}: {out['total_gb']:,.2f} GB predicted, "
            f"{f['upper_gb']:,.2f} GB with the margin, of {f['capacity_gb']:,.2f} GB "
            f"({_BASIS[f.get('capacity_basis', 'given')]})\n"
            f"margin {f['margin_gb']:,.2f} GB = CUDA context {f['cuda_context_gb']:g} GB + allocator reserve "
            f"{f['allocator_reserve_frac']:.0%} of the prediction ({f['allocator_reserve_gb']:,.2f} GB); "
            f"fits needs prediction + margin <= capacity, tight: capacity between the prediction and prediction + "
            f"margin\nlargest terms: {largest}; largest micro-batch that fits with the margin: "
            f"{number(out['max_micro_batch'])}")


def stage_table(out: dict) -> str:
    """The memory by part of the first and last stage (StageMemory.to_json()) as a text table."""
    first, last = out["stages"]["first"], out["stages"]["last"]
    rows = [("layers on the stage", number(first["layers"]), number(last["layers"]))]
    rows += [(label, f"{first['parts_gb'][key]:,.2f}", f"{last['parts_gb'][key]:,.2f}") for key, label in PARTS]
    rows.append(("total", f"{first['total_gb']:,.2f}", f"{last['total_gb']:,.2f}"))
    return table(rows, headers=("per GPU, GB", "first stage", "last stage"))

"""``xlcalc plan``: search TP/PP/DP/ZeRO/SP/recompute/micro-batch, rank by predicted step time, explain."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from ..errors import InputError, missing
from ..frameworks import framework_label, get_profile
from ..inputs import spec
from ..layout import parse_layers_per_stage
from ..planner import Settings, arch_from_flags, explain, plan
from ..planner.architecture import FLAGS_VOCAB
from ..planner.calibrate import load_profile, profile_settings
from ..planner.stacks import PLANNER, STACKS, stack_id
from ..recipes import DEFAULT_SEQ_LEN
from ..validate import from_pydantic
from .flags import add_command, add_input, add_switch, flag, switch_value
from .fmt import cli_value, dump_json, number, price_line, table
from .models import add_config_flag, config_model
from .settings_flags import SETTING_FLAGS, add_settings_flags, switched_settings

# the architecture's flags (and --gated-ffn): plan's and calibrate's model when no --model or --config is given
_ARCH_FLAGS = {"layers": "layers L", "hidden": "hidden size h", "heads": "attention heads a",
               "kv_heads": "key/value heads (GQA; default = heads)", "ffn_hidden": "FFN inner size (default 4h)",
               "vocab": f"vocabulary size (default: the model's, else {FLAGS_VOCAB})"}


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "plan", "parallelism planner: best TP/PP/DP/ZeRO/recompute, predicted step time, MFU, days",
        "Enumerate tensor, pipeline, context, expert (MoE) and data parallelism, ZeRO 0-3, sequence parallelism, "
        "recomputation, micro-batch and interleaving; keep the configurations that fit in GPU memory; rank them by the "
        "predicted step time (then cost) and explain the best ones and the rejected alternatives.")
    g = add_model_and_cluster(p, "cluster and run", "number of GPUs (or give --deadline-days)")
    g.add_argument("--deadline-days", help="size the cluster: fewest GPUs whose best plan meets this deadline")
    add_run_flags(g)
    g.add_argument("--tokens-t", help="training tokens, trillions (default: a catalog model's published "
                                      "pre-training tokens, else 20 per parameter)")
    g = p.add_argument_group("pins (fix a choice instead of searching it)")
    add_layout_flags(g)
    g.add_argument("--max-micro-batch", help="largest micro-batch to search (default: as far as memory allows)")
    g = add_settings_flags(p, "step-time model settings")
    g.add_argument("--profile", metavar="FILE", help="calibration profile written by xlcalc calibrate: plan with "
                                                     "its fitted matmul efficiency, memory margin and settings")
    p.add_argument("--top", default="5", help="plans to show (default 5)")
    p.add_argument("--json", action="store_true", help='print {"plans": [...], "rejected": [...]} for scripts')
    p.set_defaults(func=run)


def add_model_and_cluster(p: Any, title: str, n_gpus_help: str, measured: bool = False) -> argparse._ArgumentGroup:
    """The model (a preset, a config.json or the architecture), then a group ``title`` with the GPU and the number
    of GPUs, returned for the command's own flags (plan, calibrate: ``measured``, the sequence length required)."""
    g = p.add_argument_group("model (a preset or the architecture)")
    g.add_argument("--model", help="model preset id, e.g. llama2-70b")
    add_config_flag(g, seq_len_required=measured)
    for name, text in _ARCH_FLAGS.items():
        g.add_argument(flag(name), help=text)
    add_switch(g, "gated_ffn", "SwiGLU/GeGLU feed-forward (three matrices)")
    g = p.add_argument_group(title)
    g.add_argument("--gpu", required=True, help="GPU name from the catalog, e.g. H100, A800")
    add_input(g, "n_gpus", n_gpus_help, default=None, metavar="N_GPUS")
    return g


def add_run_flags(g: argparse._ArgumentGroup, measured: bool = False) -> None:
    """Sequence length and global batch (plan; calibrate, ``measured``: the run's own, required, no default)."""
    if measured:
        g.add_argument("--seq-len", help="sequence length of the measured run (required)")
        g.add_argument("--global-batch-tokens", help="global batch of the measured run in tokens, rounded to whole "
                                                     "sequences (required)")
        return
    g.add_argument("--seq-len", help="sequence length (default: a catalog model's pre-training sequence length, "
                                      f"else {DEFAULT_SEQ_LEN})")
    g.add_argument("--global-batch-tokens", help="global batch in tokens, rounded to whole sequences (default: a "
                                                 "catalog model's published pre-training batch, where the catalog "
                                                 "has one)")


def add_layout_flags(g: argparse._ArgumentGroup) -> None:
    """The layout pins (plan, calibrate): each fixes a choice the planner searches otherwise."""
    g.add_argument("--tp", help="tensor-parallel size")
    g.add_argument("--pp", help="pipeline-parallel size")
    g.add_argument("--zero-stage", help="ZeRO stage 0-3")
    g.add_argument("--recompute", help="none, selective or full")
    g.add_argument("--micro-batch", help="micro-batch size")
    g.add_argument("--virtual-stages", help="interleaved virtual stages per GPU")
    g.add_argument("--cp", help="context-parallel size (each sequence split over this many GPUs)")
    g.add_argument("--ep", help="expert-parallel size of an MoE (experts split over this many GPUs of TP x CP x DP)")
    g.add_argument("--etp", help="expert tensor-parallel size of an MoE: TP (default) or 1 (whole experts)")
    g.add_argument("--layers-per-stage", help="layers of each pipeline stage, comma-separated (uneven stages, "
                                              "e.g. 7,8,8,...,8,7); sets PP")
    g.add_argument("--fp8", action="store_true", help="FP8 linear layers (Transformer Engine recipe), rest bf16")
    add_switch(g, "optimizer_offload", "optimizer states and the Adam step in CPU memory (ZeRO-Offload; needs "
               "--pcie-gb-s and --host-memory-gb-s)")
    add_switch(g, "seq_parallel", "pin sequence parallelism on (--seq-parallel) or off (--seq-parallel false); "
               "default: searched", default=None)


def layout_pins(args: argparse.Namespace) -> dict:
    """The layout pins as :func:`xlcalc.planner.plan` takes them."""
    return dict(tp=cli_value(args.tp), pp=cli_value(args.pp), zero_stage=cli_value(args.zero_stage),
                recompute=args.recompute, micro_batch=cli_value(args.micro_batch),
                seq_parallel=switch_value(args, "seq_parallel"), virtual_stages=cli_value(args.virtual_stages),
                cp=cli_value(args.cp), ep=cli_value(args.ep), etp=cli_value(args.etp),
                stage_layers=None if args.layers_per_stage is None else parse_layers_per_stage(args.layers_per_stage),
                fp8=args.fp8, optimizer_offload=bool(switch_value(args, "optimizer_offload")))


def settings_from_args(args: argparse.Namespace):
    """The planner's Settings from plan's and calibrate's flags (stack, framework, switches, a saved profile)."""
    values = {name: cli_value(getattr(args, name)) for name in SETTING_FLAGS if getattr(args, name) is not None}
    if args.stack is not None:
        stack_id(args.stack)  # an unknown name: its error lists the known ones
        values["stack"] = args.stack  # as typed: an alias may name its own framework (stacks.ALIAS_FRAMEWORKS)
    if args.framework is not None or args.precision is not None:  # checked here: an unknown name lists the known
        profile = get_profile(args.framework, args.precision)
        values.update(framework=profile.framework, precision=profile.precision)
    if switch_value(args, "flash_attention") is not None:
        values["flash_attention"] = switch_value(args, "flash_attention")
    values.update(switched_settings(args))
    if getattr(args, "profile", None) is not None:
        values = _with_profile(args.profile, values)
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise from_pydantic(exc) from None


def _with_profile(path: str, values: dict) -> dict:
    """The settings of a calibration profile, with those given on the command line; a given one that contradicts
    the profile (its fitted values, its stack, a setting it was calibrated with) is refused, never preferred."""
    fitted = profile_settings(load_profile(path))
    clash = [InputError(k, values[k], f"left out with --profile, or {fitted[k]!r} as the profile has it",
                        f"the profile {path} was calibrated with {k} = {fitted[k]!r}")
             for k in fitted if k in values and values[k] != fitted[k]]
    if "matmul_efficiency_of_mamf" in values:
        clash.append(InputError("efficiency_of_mamf", True, "left out with --profile",
                                "the profile's matmul efficiency is a share of peak"))
    if clash:
        raise InputError.all(clash)
    return {**fitted, **values}


def memory_line(st: Settings, recipe: str) -> str:
    """What the plans' memory assumed: the bytes per parameter, the other memory, and the framework whose memory
    facts (bytes, loss buffers, optimizer-step temporaries, autocast copies, gradients freed) filled the rest: the
    one named, else the stack's own (the framework its runs train with), else the memory model's defaults."""
    head = f"memory: recipe {recipe}, other memory {st.overhead_gb:g} GB per GPU; "
    fw = framework_label(st.framework, st.precision)
    stack = STACKS.get(st.stack)  # None: the planner's own settings
    if {"framework", "precision"} & st.model_fields_set or stack is None or st.framework is None:
        return head + f"framework {fw}"
    whose = (f"stack {stack.id}'s own" if stack.framework is not None and stack.framework[0] == st.framework
             else f"the named software's own (on stack {stack.id})")
    return head + f"framework {fw}, {whose} (`xlcalc memory --framework {st.framework}` holds the same)"


def _profile_line(args: argparse.Namespace) -> str | None:
    """What a --profile plans with, in a line (None without one)."""
    if args.profile is None:
        return None
    p = load_profile(args.profile)
    on = p.calibrated_on
    margin = f", memory x {p.memory_margin:.3g} (measured / predicted)" if p.memory_margin is not None else ""
    return (f"calibrated: matmul efficiency {p.matmul_efficiency:.4g}{margin}, stack {p.stack or PLANNER}; from "
            f"{on.model} on {on.n_gpus} x {on.gpu} ({on.layout}), {on.measured_tokens_per_s_per_gpu:.6g} tokens/s "
            f"per GPU measured, {on.date.isoformat()} ({args.profile})")


def range_lines(result) -> list[str]:
    """The best plan's range (PlanResult.interval) in words, and whether it applies."""
    r = result.interval
    if not result.plans:
        return []
    if r is None:
        return [result.interval_note]
    p = result.plans[0]
    parts = [f"days {number(p.days)} ({r.level:.0%} range {number(r.days_low)}–{number(r.days_high)})",
             f"GPU-hours {number(p.gpu_hours)} ({number(r.gpu_hours_low)}–{number(r.gpu_hours_high)})",
             f"MFU {p.mfu:.1%} ({r.mfu_low:.1%}–{r.mfu_high:.1%})"]
    if p.cost_usd is not None and r.cost_low_usd is not None and r.cost_high_usd is not None:
        parts.append(f"cost {number(p.cost_usd, 'USD')} ({number(r.cost_low_usd, 'USD')}–"
                     f"{number(r.cost_high_usd, 'USD')})")
    return [f"best plan: {', '.join(parts)}; from {r.basis}, {r.out_of_sample_coverage:.0%} of held-out runs inside",
            result.interval_note]


# what plan --json prints, in order: PlanResult's fields, the price line and the --profile line
_JSON_KEYS = ("model", "gpu", "n_gpus", "seq_len", "global_batch", "tokens_t", "matmul_efficiency",
              "matmul_efficiency_basis", "recipe", "plans", "rejected", "evaluated", "feasible", "price",
              "rejected_by_reason", "params_b", "architecture", "assumed", "interval", "interval_note", "stack_spread",
              "profile", "unpinned")

# the planner's names of the inputs it may assume (PlanResult.assumed), as the text output calls them
_ASSUMED_LABELS = {"seq_len": "sequence length", "global_batch_tokens": "global batch", "tokens_t": "training tokens",
                   "stack": "stack profile", "usd_per_gpu_hour": "price"}

def model_and_arch(args: argparse.Namespace) -> tuple:
    """The model (preset id or config.json's) or, without one, the architecture built from the flags."""
    model = config_model(args) or args.model
    given = [f for f in (*_ARCH_FLAGS, "gated_ffn") if getattr(args, f) not in (None, False)]
    if model is not None and given:  # an architecture flag contradicts the preset's: refused, never ignored
        source = f"--config {args.config}" if getattr(args, "config", None) else f"--model {args.model}"
        raise InputError.all(
            InputError(f, getattr(args, f), f"left out with {source}",
                       f"the planner takes the whole architecture from {source}; to plan another architecture give "
                       "--layers, --hidden and --heads (and the rest) without --model")
            for f in given)
    if model is not None:
        return model, None
    if lacking := [f for f in ("layers", "hidden", "heads") if getattr(args, f) is None]:
        raise missing(lacking, lambda n: f"{spec(n).allowed} (or give --model ID or --config PATH)",
                      where=f"{args.command} without --model")
    # vocab and seq_len left out: arch_from_flags' defaults (its one declaration of them)
    optional = {"vocab": cli_value(args.vocab),
                "seq_len": cli_value(args.seq_len) if isinstance(cli_value(args.seq_len), int) else None}
    return None, arch_from_flags(
        layers=cli_value(args.layers), hidden=cli_value(args.hidden), heads=cli_value(args.heads),
        kv_heads=cli_value(args.kv_heads), ffn_hidden=cli_value(args.ffn_hidden),
        gated_ffn=bool(switch_value(args, "gated_ffn")), **{k: v for k, v in optional.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    model, arch = model_and_arch(args)
    top = cli_value(args.top)
    if not isinstance(top, int) or top < 1:
        raise InputError("top", args.top, "a whole number >= 1")
    result = plan(
        model, arch=arch, gpu=args.gpu, n_gpus=cli_value(args.n_gpus), seq_len=cli_value(args.seq_len),
        global_batch_tokens=cli_value(args.global_batch_tokens), tokens_t=cli_value(args.tokens_t),
        deadline_days=cli_value(args.deadline_days), settings=settings_from_args(args), **layout_pins(args),
        max_micro_batch=cli_value(args.max_micro_batch), top=max(top, 10), stack_spread=True, compare_unpinned=True)
    if args.json:  # the result's fields (the plans shown, 20 rejections), the price and the profile, in this order
        d = result.model_dump()
        d.update(plans=d["plans"][:top], rejected=d["rejected"][:20], profile=_profile_line(args),
                 price=price_line(args.gpu, cli_value(args.usd_per_gpu_hour)))
        print(dump_json({k: d[k] for k in _JSON_KEYS}))
        return 0 if result.plans else 1
    rows = [[i, p.tp, p.pp, p.cp, p.ep, p.dp, p.zero_stage, "on" if p.seq_parallel else "off", p.recompute, p.micro_batch,
             p.virtual_stages, number(p.memory_gb), f"{p.mfu:.1%}", f"{p.mfu_6nd:.1%}", number(p.tokens_per_s_per_gpu),
             number(p.days), number(p.cost_usd, "USD") if p.cost_usd is not None else "-"]
            for i, p in enumerate(result.plans[:top], 1)]
    print(table(rows, ["#", "TP", "PP", "CP", "EP", "DP", "ZeRO", "SP", "recompute", "mb", "v", "GB/GPU", "MFU",
                       "MFU 6ND", "tok/s/GPU", "days", "cost"]))
    print(price_line(args.gpu, cli_value(args.usd_per_gpu_hour)))
    print(memory_line(result.settings, result.recipe))
    if args.profile is not None:
        print(_profile_line(args))
    for line in range_lines(result):
        print(line)
    if result.assumed:
        print("Assumed (not given; the flag named sets it):", *(
            f"  {_ASSUMED_LABELS.get(name, name)}: {a.shown} - {a.basis} ({flag(name)})"
            for name, a in result.assumed.items()), sep="\n")
    if result.stack_spread:
        print("\nNo stack named: the best layout on each named stack (--stack ID plans with one):")
        for sid, o in result.stack_spread.items():
            mark = " (assumed)" if sid == result.settings.stack else ""
            print(f"  {sid}{mark}: " + ("no plan fits its memory" if o is None else
                                  f"{number(o.days)} days, MFU {o.mfu:.1%}, {number(o.memory_gb)} GB/GPU"
                                  + ("" if o.same_layout else f" (the layout does not fit its memory; its own best: "
                                                              f"{o.layout})")))
    for line in unpinned_lines(result):
        print(line)
    print("\n" + explain(result, top=min(top, 3)))
    return 0 if result.plans else 1


def unpinned_lines(result) -> list[str]:
    """The planner's own best plan against the pinned layout (PlanResult.unpinned), in words."""
    if (u := result.unpinned) is None:
        return []
    if u.step_saving <= 0.005:
        return ["\nWithout the layout flags given, the best plan is the same layout or no faster "
                f"({u.layout}, {number(u.days)} days)."]
    terms = "; ".join(f"{c.term} {c.pinned_s:.3g} s -> {c.unpinned_s:.3g} s" for c in u.terms[:4])
    r = result.interval
    error = (f" A prediction's {r.level:.0%} range spans MFU x {r.mfu_low / result.plans[0].mfu:.2f} to "
             f"x {r.mfu_high / result.plans[0].mfu:.2f}: a gain inside it is within the model's error."
             if r is not None else "")
    return [f"\nWithout the layout flags given, the best plan is {u.layout}: step {u.step_s:.3g} s against "
            f"{u.pinned_step_s:.3g} s ({u.step_saving:.0%} shorter), {number(u.days)} days against "
            f"{number(u.pinned_days)}, MFU {u.mfu:.1%}, {number(u.memory_gb)} GB per GPU against "
            f"{number(u.pinned_memory_gb)}. Where the step differs: {terms}.{error}"]

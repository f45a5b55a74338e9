"""``xlcalc estimate``: time, GPUs and cost of a training run (the planning workbook's results)."""

from __future__ import annotations

import argparse

from .. import catalog
from ..errors import InputError
from ..inputs import spec
from ..layout import stage_split
from ..model_inputs import model_inputs
from ..money import ranges
from ..outputs import OUTPUT_BY_NAME, OUTPUTS
from ..planner.defaults import default_tokens_t
from ..recipes import DEFAULT_RECIPE
from ..scenario import INPUTS, STEP_GROUP, Scenario, evaluate, price_note
from ..stage_memory import explain, memory_steps
from ..validate import check_value
from .flags import add_command, add_input, add_switch, input_default
from .fmt import cli_value, dump_json, number, table
from .memory import (
    FINETUNE_FIELDS,
    add_finetune_flags,
    add_framework_flags,
    finetune_values,
    fit_lines,
    framework_words,
    job_line,
    stage_table,
)
from .models import add_config_flag, config_model

# The results printed as "rent beside own" after the main table.
OWN_VS_RENT = ("Rent_Cost_USD", "Own_Cost_USD", "Own_USD_per_GPU_Hour", "Breakeven_Utilisation", "Breakeven_Months",
               "Capex_per_GPU_All_In", "Hardware_Capex_USD", "KW_per_GPU_All_In", "Facility_MW", "Racks_Needed")


# the scenario's inputs with a flag of their own: not --job, --lora-rank, --lora-targets (add_finetune_flags, with
# --quant), nor the step time's stack and batch (xlcalc plan's flags: estimate has no step)
_FLAG_INPUTS = tuple(c for c in INPUTS if c.field not in FINETUNE_FIELDS and c.group != STEP_GROUP)


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "estimate", "time, GPUs, memory and cost of a training run (rent beside own)",
        "Estimate FLOPs, days, GPU-hours, GPUs for a deadline, memory per GPU and cost, with renting and "
        "owning side by side and goodput (failures and checkpoints) priced in. "
        "Defaults are seed 002's case (70B, 2T tokens, 1024 A800 at MFU 0.4) on one GPU's layout (TP 1, PP 1, "
        "ZeRO-0, no recompute, as xlcalc memory): give the layout (--tp, --pp, --zero-stage, ...) or let "
        "xlcalc plan choose one. "
        "--model and --gpu fill the architecture, the model's published training tokens (as plan takes them), "
        "the GPU figures and the GPU's catalog price; explicit flags win.")
    p.add_argument("--model", help="model preset id, e.g. llama2-70b (see: xlcalc catalog models)")
    add_config_flag(p)
    p.add_argument("--gpu", help="GPU name, e.g. A800, H100 (see: xlcalc catalog gpus)")
    p.add_argument("--recipe", help=f"bytes per parameter: zero 2+2+12, megatron 2+4+12, seed002 2+4+8, fp32 4+4+8, "
                                    f"torchtune 2+2+4, qlora 2+2+8 (default {DEFAULT_RECIPE})")
    p.add_argument("--price-tier", help="rental tier of the GPU's catalog price: "
                   + ", ".join(spec("price_tier").choices) + " (default: the GPU's default price)")
    add_framework_flags(p)
    add_finetune_flags(p)
    for cell in _FLAG_INPUTS:  # one flag per input, its default (the scenario's) stated once
        if spec(cell.spec_name).kind == "bool":
            add_switch(p, cell.field, cell.label.replace(" (TRUE/FALSE)", ""))
        else:
            add_input(p, cell.field, cell.label)
    p.add_argument("--layers-per-stage", metavar="LIST",
                   help="layers of each pipeline stage, comma-separated, e.g. 27,27,26 for 80 layers on PP 3 (sets "
                        "--pp, --first-stage-layers and --last-stage-layers; the middle stages hold equal layers)")
    p.add_argument("--ranges", action="store_true",
                   help="also print low/base/high days and cost for MFU, price, tokens and GPU MTBF (a tornado)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    values = {c.field: cli_value(getattr(args, c.field)) for c in _FLAG_INPUTS}
    values.update(finetune_values(args))
    if args.price_tier and values.get("usd_per_gpu_hour") is not None:
        raise InputError("price_tier", args.price_tier, "left out when --usd-per-gpu-hour is given",
                         "a tier picks a catalog price; a typed price has none")
    if args.layers_per_stage is not None:
        if values.get("first_stage_layers") is not None or values.get("last_stage_layers") is not None:
            raise InputError("layers_per_stage", args.layers_per_stage,
                             "left out when --first-stage-layers / --last-stage-layers are given")
        # the model's layers: typed (--layers), else the model's (--config, --model), else the scenario's default
        # (the split is checked against them before the layout is, and sets PP: no default PP is in play until the
        # split has given one)
        if values.get("layers") is not None:
            layers = check_value("layers", values["layers"])
        else:
            model = config_model(args) or (catalog.get_model(args.model) if args.model else None)
            layers = model_inputs(model)["layers"] if model is not None else input_default("layers")
        values.update(stage_split(args.layers_per_stage, int(layers),
                                  int(float(values["pp"])) if values.get("pp") is not None else None))
    scenario = Scenario.build(model=config_model(args) or args.model, gpu=args.gpu, recipe=args.recipe, price_tier=args.price_tier,
                              framework=args.framework, precision=args.precision, **values)
    results = evaluate(scenario)
    memory = explain({**scenario.cell_values(), **results}, scenario.model_dump()).to_json()
    memory.pop("inputs")
    rng = ranges(scenario) if args.ranges else None
    nodes = _node_note(scenario, values.get("gpus_per_node") is not None)
    model = config_model(args) or (catalog.get_model(args.model) if args.model else None)
    tokens = None if model is None or values.get("tokens_t") is not None else (
        f"{scenario.tokens_t:g}T, " + default_tokens_t(model, model.params_b, model.name)[1] + " (--tokens-t)")
    budget = _budget_note(scenario, values.get("budget_usd") is not None)
    if args.json:
        data = {"scenario": scenario.model_dump(), "price": price_note(scenario), "recipe": memory["recipe"],
                "framework": framework_words(args), "budget": budget, "results": results, "memory": memory}
        data.update({key: note for key, note in (("nodes", nodes), ("tokens", tokens)) if note})
        if rng is not None:
            data["ranges"] = [r.as_dict() for r in rng]
        print(dump_json(data))
        return 0
    active = f" ({scenario.active_params_b:g}B active: N of 6ND)" if scenario.active_params_b else ""
    print(f"Scenario: {scenario.params_b:g}B params{active}, {scenario.tokens_t:g}T tokens, "
          f"{scenario.n_gpus:,} GPUs at {scenario.peak_tflops:g} TFLOP/s, MFU {scenario.mfu:g}, "
          f"TP={scenario.tp} PP={scenario.pp} CP={scenario.cp} ZeRO-{scenario.zero_stage} "
          f"recompute={scenario.recompute}")
    print(f"Price: {price_note(scenario)}")
    if tokens:
        print(f"Tokens: {tokens}")
    if nodes:
        print(f"Nodes: {nodes}")
    print(f"Memory: recipe {memory['recipe']}; other memory {scenario.overhead_gb:g} GB; sequences of "
          f"{scenario.seq_len:,} tokens, micro-batch {scenario.micro_batch}")
    print(f"Framework: {framework_words(args)}")
    print(job_line({**memory, "inputs": scenario.model_dump()}).replace("job: ", "Job: ", 1))
    print(f"Failures: {_failure_note(scenario, results)}")
    print(f"Budget: {budget}")
    if memory.get("fit", {}).get("verdict") == "does not fit":
        print(layout_advice(args, scenario, memory))
    rows = [(o.label, number(results[o.name], o.unit), o.unit) for o in OUTPUTS
            if o.name not in OWN_VS_RENT and o.name not in _MEMORY_DETAIL]
    print("\n" + table(rows, headers=("result", "value", "unit"), align="lrl"))
    print("\n" + stage_table(memory))
    if "fit" in memory:  # the fit answer in words, as xlcalc memory gives it
        gpu = catalog.get_gpu(scenario.gpu) if scenario.gpu else None
        basis = gpu.capacity_basis if gpu is not None and gpu.capacity_gb == scenario.gpu_memory_gb else "given"
        fit = {**memory, "gpu": gpu.id if gpu else "GPU", "fit": {**memory["fit"], "capacity_basis": basis}}
        print("\n" + fit_lines(fit))
    print(f"\nRent beside own (the clean run of {number(results['Train_Days'])} days on {scenario.n_gpus:,} "
          f"GPUs; own: {capex_used(scenario)}, {scenario.depreciation_years:g}-year "
          f"depreciation, utilisation {scenario.utilisation:.0%}, {number(scenario.own_usd_per_kwh, 'USD')}/kWh)")
    if scenario.capex_usd_per_gpu is None:  # renting is priced; owning says what to type
        print(f"Rent: {number(results['Rent_Cost_USD'], 'USD')}. Own: not priced - {catalog.missing_capex(scenario.gpu)}")
    else:
        rows = [(OUTPUT_BY_NAME[n].label, number(results[n], OUTPUT_BY_NAME[n].unit), OUTPUT_BY_NAME[n].unit)
                for n in OWN_VS_RENT]
        print(table(rows, headers=("", "value", "unit"), align="lrl"))
    if rng is not None:
        print("\n" + ranges_table(rng))
    return 0


# the flags that set the layout (left out: one GPU's, xlcalc.recipes.MEMORY_DEFAULTS through the scenario's fields)
_LAYOUT_FLAGS = ("tp", "pp", "zero_stage", "seq_parallel", "recompute", "micro_batch", "cp", "layers_per_stage")


def layout_advice(args: argparse.Namespace, scenario: Scenario, memory: dict) -> str:
    """What to do when the layout does not fit the GPU: the flags that set a layout, or the planner."""
    f = memory["fit"]
    given = [n for n in _LAYOUT_FLAGS if getattr(args, n, None) is not None]
    layout = (f"TP {scenario.tp}, PP {scenario.pp}, ZeRO-{scenario.zero_stage}, recompute {scenario.recompute}"
              + ("" if given else ": one GPU's layout, the default when no layout flag is given"))
    return (f"Layout: DOES NOT FIT - {memory['total_gb']:,.2f} GB per GPU predicted, {f['upper_gb']:,.2f} GB with "
            f"the margin, of {f['capacity_gb']:,.2f} GB ({layout}).\n"
            "  Give a layout that fits with --tp, --pp, --zero-stage (and --recompute, --seq-parallel, --micro-batch), "
            "or let `xlcalc plan` search for one; the days, GPU-hours and cost below assume the run fits.")


def capex_used(scenario: Scenario) -> str:
    """The purchase price a scenario used, in words: the catalog's row (id, date) or typed."""
    if scenario.capex_usd_per_gpu is None:
        return "no purchase price"
    buy = catalog.purchase_price(scenario.gpu) if scenario.gpu else None
    if buy is not None and buy.capex_usd_per_gpu == scenario.capex_usd_per_gpu:
        return catalog.capex_note(buy)
    return f"{number(scenario.capex_usd_per_gpu, 'USD')} per GPU, typed"


# memory steps shown in the per-stage table instead of the results table
_MEMORY_DETAIL = {st.name for st in memory_steps() if st.name not in
                  ("Mem_Static_GB", "Mem_Activations_GB", "Mem_Total_GB", "Fit_Margin_GB", "Fit_Verdict", "Fits_GPU",
                   "Max_Micro_Batch", "Trainable_Params_B")}


def _node_note(sc: Scenario, typed: bool) -> str | None:
    """The GPUs per node a GPU without a published figure was planned with (the whole-node rounding), in words;
    None where the catalog or the user gave it."""
    gpu = catalog.get_gpu(sc.gpu) if sc.gpu else None
    if typed or gpu is None or gpu.gpus_per_node is not None:
        return None
    return (f"{sc.gpus_per_node} GPUs per node, the default: the GPU catalog publishes none for {gpu.id} "
            "(give --gpus-per-node; it rounds the GPUs to provision to whole nodes)")


def _budget_note(sc: Scenario, typed: bool) -> str:
    """The budget that "Budget left" is counted against, in words: typed, or the example default (not the user's)."""
    if typed:
        return f"{number(sc.budget_usd, 'USD')}, typed"
    return (f"{number(sc.budget_usd, 'USD')}, not given: an example budget, not yours (give --budget-usd for the "
            "budget left of your run)")


def _failure_note(sc: Scenario, results: dict) -> str:
    if sc.use_typed_tax:
        return f"typed share {sc.failure_frac:.1%} of compute (--use-typed-tax)"
    return (f"goodput {results['Goodput']:.1%} from a per-GPU MTBF of {sc.gpu_mtbf_h:,.0f} h, "
            f"{sc.ckpt_save_s:g} s checkpoint saves, {sc.restart_s:g} s restarts -> "
            f"{results['Failure_Frac_Used']:.1%} extra compute")


def ranges_table(rows) -> str:
    """Low/base/high table, largest cost swing first."""
    body = []
    for r in rows:  # one input at a time (low, base, high), or all of them at once (its days and cost only)
        unit = {"usd_per_gpu_hour": "USD", "mfu": "fraction"}.get(r.factor, "")
        ends = ("", "", "") if r.factor == "all" else (number(r.low, unit), number(r.base, unit), number(r.high, unit))
        sep = " - " if r.factor == "all" else " / "
        body.append((r.label, *ends, f"{number(r.days_low)}{sep}{number(r.days_high)}",
                     f"{number(r.cost_low, 'USD')}{sep}{number(r.cost_high, 'USD')}"))
    return ("Ranges (one input at a time, low and high ends from --mfu-low-x ... --mtbf-high-x)\n"
            + table(body, headers=("input", "low", "base", "high", "days low / high", "cost low / high")))

"""``xlcalc estimate``: time, GPUs and cost of a training run (the planning workbook's results)."""

from __future__ import annotations

import argparse

from ..scenario import INPUTS, OUTPUTS, Scenario, evaluate
from .fmt import cli_value, dump_json, number, table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate",
        help="time, GPUs, memory and cost of a training run",
        description=(
            "Estimate FLOPs, days, GPU-hours, GPUs for a deadline, memory per GPU and cost. "
            "Defaults are seed 002's case (70B, 2T tokens, 1024 A800 at MFU 0.4). "
            "--model and --gpu fill the architecture and the GPU figures from the catalogs; "
            "explicit flags win."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("--model", help="model preset id, e.g. llama2-70b (see: xlcalc catalog models)")
    p.add_argument("--gpu", help="GPU name, e.g. A800, H100 (see: xlcalc catalog gpus)")
    p.add_argument("--recipe", help="bytes per parameter: zero 2+2+12, megatron 2+4+12, seed002 2+4+8, fp32 4+4+8")
    defaults = Scenario()
    for cell in INPUTS:
        flag = "--" + cell.field.replace("_", "-")
        p.add_argument(flag, dest=cell.field, default=None, metavar="X",
                       help=f"{cell.label} (default {getattr(defaults, cell.field)})")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    values = {c.field: cli_value(getattr(args, c.field)) for c in INPUTS}
    scenario = Scenario.build(model=args.model, gpu=args.gpu, recipe=args.recipe, **values)
    results = evaluate(scenario)
    if args.json:
        print(dump_json({"scenario": scenario.model_dump(), "results": results}))
        return 0
    print(f"Scenario: {scenario.params_b:g}B params, {scenario.tokens_t:g}T tokens, "
          f"{scenario.n_gpus} GPUs at {scenario.peak_tflops:g} TFLOP/s, MFU {scenario.mfu:g}, "
          f"TP={scenario.tp} PP={scenario.pp} ZeRO-{scenario.zero_stage} recompute={scenario.recompute}")
    print()
    rows = [(o.label, number(results[o.name], o.unit), o.unit) for o in OUTPUTS]
    print(table(rows, headers=("result", "value", "unit"), align="lrl"))
    return 0

"""``xlcalc memory``: memory per GPU with its breakdown, and whether it fits."""

from __future__ import annotations

import argparse

from .. import catalog
from ..formulas import memory as mem
from ..recipes import RECIPES, get_recipe
from ..validate import validate_one
from ..inputs import spec
from .fmt import cli_value, dump_json, number, table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "memory",
        help="memory per GPU: weights, gradients, optimizer, activations, overhead; does it fit",
        description=(
            "Memory per GPU under TP/PP/DP, ZeRO and activation recomputation "
            "(ZeRO paper; Korthikanti et al. 2022). Give the model by --model or by its architecture."
        ),
        allow_abbrev=False,
    )
    p.add_argument("--model", help="model preset id, e.g. llama2-70b")
    p.add_argument("--params-b", help="parameters, billions (default: from --model)")
    p.add_argument("--layers", help="layers L (default: from --model)")
    p.add_argument("--hidden", help="hidden size h (default: from --model)")
    p.add_argument("--heads", help="attention heads a (default: from --model)")
    p.add_argument("--seq-len", help="sequence length (default: the model's, else 2048)")
    p.add_argument("--micro-batch", default="1", help="micro-batch size (default 1)")
    p.add_argument("--tp", default="1", help="tensor-parallel size (default 1)")
    p.add_argument("--pp", default="1", help="pipeline-parallel size (default 1)")
    p.add_argument("--dp", default="1", help="data-parallel size, ZeRO shards over it (default 1)")
    p.add_argument("--zero-stage", default="0", help="ZeRO stage 0-3 (default 0)")
    p.add_argument("--seq-parallel", action="store_true", help="sequence parallelism on")
    p.add_argument("--recompute", default="none", help="none, selective or full (default none)")
    p.add_argument("--recipe", default="zero", choices=sorted(RECIPES),
                   help="bytes per parameter: zero 2+2+12, megatron 2+4+12, seed002 2+4+8, fp32 4+4+8 (default zero)")
    p.add_argument("--bytes-weights", help="override the recipe: bytes/param for weights")
    p.add_argument("--bytes-grads", help="override the recipe: bytes/param for gradients")
    p.add_argument("--bytes-optimizer", help="override the recipe: bytes/param for optimizer states")
    p.add_argument("--overhead-gb", default="0", help="CUDA context, NCCL buffers, fragmentation, GB (default 0)")
    p.add_argument("--gpu", help="GPU to check the fit against, e.g. A800")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def _arch(args: argparse.Namespace) -> dict:
    arch: dict = {}
    if args.model:
        m = catalog.get_model(args.model)
        arch = dict(params_b=m.params_b, layers=m.layers, hidden=m.hidden, heads=m.heads, seq_len=m.seq_len)
    for key in ("params_b", "layers", "hidden", "heads", "seq_len"):
        given = cli_value(getattr(args, key))
        if given is not None:
            arch[key] = given
    arch.setdefault("seq_len", 2048)
    for key in ("params_b", "layers", "hidden", "heads"):
        if key not in arch:
            from ..errors import InputError

            raise InputError(key, None, spec(key).allowed, "give --model or --" + key.replace("_", "-"))
    return arch


def compute(args: argparse.Namespace) -> dict:
    arch = _arch(args)
    recipe = get_recipe(args.recipe)
    bw = cli_value(args.bytes_weights) if args.bytes_weights is not None else recipe.weights
    bg = cli_value(args.bytes_grads) if args.bytes_grads is not None else recipe.grads
    bo = cli_value(args.bytes_optimizer) if args.bytes_optimizer is not None else recipe.optimizer
    par = dict(zero_stage=cli_value(args.zero_stage), dp=cli_value(args.dp), tp=cli_value(args.tp), pp=cli_value(args.pp))
    p = arch["params_b"]
    weights = mem.mem_weights_gb(p, bytes_weights=bw, **par)
    grads = mem.mem_grads_gb(p, bytes_grads=bg, **par)
    optimizer = mem.mem_optimizer_gb(p, bytes_optimizer=bo, **par)
    static = mem.mem_static_gb(p, bytes_weights=bw, bytes_grads=bg, bytes_optimizer=bo, **par)
    act_args = dict(seq_len=arch["seq_len"], hidden=arch["hidden"], layers=arch["layers"], heads=arch["heads"],
                    tp=par["tp"], seq_parallel=args.seq_parallel, recompute=args.recompute)
    activations = mem.mem_act_gb(micro_batch=cli_value(args.micro_batch), **act_args)
    overhead = validate_one(spec("overhead_gb"), cli_value(args.overhead_gb))
    total = mem.mem_total_gb(static, activations, overhead)
    out = {
        "inputs": {**arch, **par, "micro_batch": cli_value(args.micro_batch), "seq_parallel": args.seq_parallel,
                   "recompute": args.recompute, "bytes_weights": bw, "bytes_grads": bg, "bytes_optimizer": bo},
        "breakdown_gb": {"weights": weights, "gradients": grads, "optimizer": optimizer,
                         "activations": activations, "overhead": overhead},
        "static_gb": static,
        "total_gb": total,
    }
    if args.gpu:
        gpu = catalog.get_gpu(args.gpu)
        if gpu.memory_gb is None:
            from ..errors import CatalogError

            raise CatalogError(f"{gpu.name}: no published memory size in the catalog")
        out["gpu"] = gpu.id
        out["gpu_memory_gb"] = gpu.memory_gb
        out["fits"] = mem.fits_in_gpu(total, gpu.memory_gb)
        out["max_micro_batch"] = mem.max_micro_batch(
            gpu.memory_gb, static, overhead, mem.mem_act_gb(micro_batch=1, **act_args))
    return out


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print(dump_json(out))
        return 0
    i = out["inputs"]
    print(f"{i['params_b']:g}B params, L={i['layers']} h={i['hidden']} a={i['heads']} s={i['seq_len']} "
          f"b={i['micro_batch']}; TP={i['tp']} PP={i['pp']} DP={i['dp']} ZeRO-{i['zero_stage']} "
          f"SP={'on' if i['seq_parallel'] else 'off'} recompute={i['recompute']}; "
          f"bytes/param {i['bytes_weights']:g}+{i['bytes_grads']:g}+{i['bytes_optimizer']:g}")
    print()
    rows = [(k, f"{v:,.2f}") for k, v in out["breakdown_gb"].items()]
    rows.append(("total", f"{out['total_gb']:,.2f}"))
    print(table(rows, headers=("per GPU", "GB")))
    if "fits" in out:
        verdict = "fits" if out["fits"] else "does NOT fit"
        print()
        print(f"{out['gpu']}: {out['total_gb']:.1f} GB of {out['gpu_memory_gb']:g} GB -> {verdict}; "
              f"largest micro-batch that fits: {number(out['max_micro_batch'])}")
    return 0

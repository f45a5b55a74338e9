"""``xlcalc goodput``: failures and checkpoints -> cluster MTBF, Young's interval, goodput, extra days and dollars."""

from __future__ import annotations

import argparse

from ..errors import InputError, missing
from ..formulas import goodput
from ..money import goodput_rows
from ..validate import check_value
from .flags import add_command, add_input, checked, flag, given, input_default
from .fmt import cli_value, number, print_rows


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "goodput", "goodput from GPU MTBF, checkpoint save and restart times (replaces the typed failure share)",
        "A synchronous job stops when any GPU fails: cluster MTBF M = GPU MTBF / GPUs. Checkpoint every "
        "tau = SQRT(2 delta M) hours (Young), delta the save stall; goodput = 1 - delta/tau - (tau/2 + R)/M with R "
        "the restart time. Give the MTBF per GPU, per node (--node-mtbf-h), or as interruptions counted over a "
        "run (--interruptions, --over-days, --over-gpus). Default MTBF: Llama 3's 419 unexpected "
        "interruptions in 54 days on 16,384 GPUs. The save and restart defaults are examples: give yours.")
    add_input(p, "n_gpus", "GPUs in the job")
    p.add_argument("--gpu-mtbf-h", metavar="X", help="MTBF per GPU, hours")
    p.add_argument("--node-mtbf-h", metavar="X", help="MTBF per node, hours (with --gpus-per-node)")
    add_input(p, "gpus_per_node", "GPUs per node (for --node-mtbf-h)")
    p.add_argument("--interruptions", metavar="X", help="unexpected interruptions counted over a run")
    p.add_argument("--over-days", metavar="X", help="days of that run")
    p.add_argument("--over-gpus", metavar="X", help="GPUs of that run")
    add_input(p, "ckpt_save_s", "checkpoint save stall, seconds (an example: give yours)", aliases=("--save-s",))
    add_input(p, "restart_s", "restart after a failure, seconds (an example: give yours)")
    p.add_argument("--days", metavar="X", help="days of a clean run: also show the extra days")
    p.add_argument("--compute-usd", metavar="X", help="cost of a clean run, USD: also show the extra dollars")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def mtbf_from_args(args: argparse.Namespace) -> tuple[float, str]:
    """Per-GPU MTBF and where it came from; several sources at once is an error naming them."""
    sources = [f for f in ("gpu_mtbf_h", "node_mtbf_h", "interruptions") if getattr(args, f) is not None]
    if len(sources) > 1:
        raise InputError(sources[1], getattr(args, sources[1]), f"left out when {flag(sources[0])} is given",
                         "give the MTBF one way")
    if args.gpu_mtbf_h is not None:
        return cli_value(args.gpu_mtbf_h), "typed"
    if args.node_mtbf_h is not None:
        m = goodput.gpu_mtbf_from_node_h(cli_value(args.node_mtbf_h), given(args, "gpus_per_node"))
        return m, f"node MTBF {number(cli_value(args.node_mtbf_h))} h x {given(args, 'gpus_per_node')} GPUs per node"
    if args.interruptions is None:  # the input's one default, as estimate and the workbook take it
        return input_default("gpu_mtbf_h"), ("Llama 3 paper §3.3.4: 419 unexpected interruptions in 54 days on "
                                             "16,384 GPUs (16,384 x 54 x 24 / 419 GPU-hours, to the hour)")
    if lacking := [f for f in ("over_days", "over_gpus") if getattr(args, f) is None]:
        raise missing(lacking, lambda n: "given with --interruptions (" + {
            "over_days": "the days", "over_gpus": "the GPUs"}[n] + " of the run they were counted over)")
    counted = InputError.each(lambda f: check_value(f, cli_value(getattr(args, f))), ["over_days", "over_gpus"])
    source = (f"{number(cli_value(args.interruptions))} interruptions in {number(counted['over_days'])} days on "
              f"{number(counted['over_gpus'])} GPUs")
    return goodput.gpu_mtbf_observed_h(counted["over_gpus"], counted["over_days"], cli_value(args.interruptions)), \
        source


def _gpus_per_node(args: argparse.Namespace) -> None:
    """--gpus-per-node converts a node MTBF; without --node-mtbf-h it would change nothing, so it is refused."""
    if args.gpus_per_node is not None and args.node_mtbf_h is None:
        raise InputError("gpus_per_node", args.gpus_per_node, "left out unless --node-mtbf-h is given",
                         "it converts a per-node MTBF to a per-GPU one; the cluster MTBF is GPU MTBF / --n-gpus")


def run(args: argparse.Namespace) -> int:
    checks = {  # every input that is missing or not allowed, at once, each named by its flag's input
        "mtbf": lambda: mtbf_from_args(args),
        "gpus_per_node": lambda: _gpus_per_node(args),
        "n_gpus": lambda: checked(args, "n_gpus"),
        "ckpt_save_s": lambda: checked(args, "ckpt_save_s"),
        "restart_s": lambda: checked(args, "restart_s"),
        "days": lambda: checked(args, "days", None),
        "compute_usd": lambda: checked(args, "compute_usd", None),
    }
    got = InputError.each(lambda key: checks[key](), checks)
    (mtbf, source), n, save_s, restart_s = got["mtbf"], got["n_gpus"], got["ckpt_save_s"], got["restart_s"]
    rows = goodput_rows(n, mtbf, save_s, restart_s, days=got["days"], compute_usd=got["compute_usd"])
    return print_rows(args.json, {"gpu_mtbf_h": mtbf, "mtbf_source": source, "n_gpus": n, "save_s": save_s,
                                  "restart_s": restart_s},
                      [f"Goodput of {number(n)} GPUs: per-GPU MTBF {number(mtbf)} h ({source}), {number(save_s)} s "
                       f"checkpoint saves, {number(restart_s)} s restarts"], rows)

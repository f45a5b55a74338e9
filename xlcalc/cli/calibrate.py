"""``xlcalc calibrate``: fit the step-time model's matmul efficiency (and a memory margin) to one measured run
and save it as a profile for ``xlcalc plan --profile``."""

from __future__ import annotations

import argparse

from ..errors import missing
from ..inputs import spec
from ..planner.calibrate import calibrate, save_profile
from .flags import add_command, add_input, flag
from .fmt import cli_value, dump_json, number
from .plan import (
    add_layout_flags,
    add_model_and_cluster,
    add_run_flags,
    layout_pins,
    model_and_arch,
    settings_from_args,
)
from .settings_flags import add_settings_flags

# the inputs that pin the measured run: without them there is no run to calibrate on
_REQUIRED = ("n_gpus", "seq_len", "global_batch_tokens", "tp", "pp", "micro_batch", "recompute")


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "calibrate", "fit the planner's matmul efficiency (and memory margin) to one measured run; save a profile",
        "Give one measured training step (tokens/s per GPU or seconds per step, optionally the peak memory "
        "per GPU) of one layout on your stack: calibrate finds the matmul share of peak at which the planner's "
        "step-time model predicts exactly that step for that layout (and, with the peak memory, the margin "
        "measured / predicted) and saves them as a profile. xlcalc plan --profile FILE then predicts other "
        "layouts and cluster sizes with it.")
    g = add_model_and_cluster(p, "the measured run", "number of GPUs of the run (required)", measured=True)
    add_run_flags(g, measured=True)
    add_input(g, "tokens_per_s", "measured training throughput, tokens/s per GPU (or give --step-s)", default=None)
    add_input(g, "step_s", "measured seconds per training step (or give --tokens-per-s)", default=None)
    g.add_argument("--peak-memory-gb", metavar="X", help="measured peak memory per GPU, GB (torch.cuda."
                                                         "max_memory_reserved / 1e9); fits a memory margin")
    g = p.add_argument_group("the run's layout (--tp, --pp, --micro-batch and --recompute required; what is left "
                             "out is the planner's best choice)")
    add_layout_flags(g)
    add_settings_flags(p, "step-time model settings (the stack and every setting but the matmul efficiency, which is "
                          "fitted)")
    p.add_argument("--out", metavar="FILE", required=True, help="the profile to write (JSON, replaced atomically)")
    p.add_argument("--json", action="store_true", help="print the profile and the calibrated plan as JSON")
    p.set_defaults(func=run, profile=None)


def _what(name: str) -> str:
    """What a missing input of the measured run may be."""
    if name == "tokens_per_s":
        return "the measured tokens/s per GPU (--tokens-per-s; or --step-s, seconds per step)"
    return f"{spec(name).allowed}, as in the measured run ({flag(name)})"


def run(args: argparse.Namespace) -> int:
    lacking = [n for n in _REQUIRED if getattr(args, n) is None]
    if args.tokens_per_s is None and args.step_s is None:
        lacking.append("tokens_per_s")
    if lacking:
        raise missing(lacking, _what, where="calibrate")
    model, arch = model_and_arch(args)
    settings = settings_from_args(args)
    profile, best = calibrate(
        model, arch=arch, gpu=args.gpu, n_gpus=cli_value(args.n_gpus), seq_len=cli_value(args.seq_len),
        global_batch_tokens=cli_value(args.global_batch_tokens), settings=settings,
        tokens_per_s=cli_value(args.tokens_per_s), step_s=cli_value(args.step_s),
        peak_memory_gb=cli_value(args.peak_memory_gb), **layout_pins(args))
    save_profile(profile, args.out)
    if args.json:
        print(dump_json({"profile": profile.model_dump(mode="json", by_alias=True), "out": args.out,
                         "plan": best.model_dump()}))
        return 0
    on = profile.calibrated_on
    print(f"calibrated on: {on.model}, {on.n_gpus} x {on.gpu}, {on.layout}")
    print(f"measured: {number(on.measured_tokens_per_s_per_gpu)} tokens/s per GPU ({on.measured_step_s:.4g} s per step)")
    print(f"fitted matmul efficiency: {profile.matmul_efficiency:.4g} of peak (stack {profile.stack or 'none'}"
          f"{'' if settings.stack_named else ', the default; --stack names yours'}; MFU {best.mfu:.1%})")
    if profile.memory_margin is not None:
        print(f"memory margin: {profile.memory_margin:.4g} (measured {on.measured_peak_memory_gb:g} GB / predicted "
              f"{on.predicted_memory_gb:.4g} GB per GPU)")
    print(f"profile written: {args.out} (use: xlcalc plan --profile {args.out} ...)")
    return 0

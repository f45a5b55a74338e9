"""``xlcalc budget``: budget-first planning — what a budget buys in GPUs, days, GPU-hours and model size."""

from __future__ import annotations

import argparse

from .. import catalog
from ..errors import InputError
from ..formulas import ownership
from ..money import TOKENS_PER_PARAM, budget_plan, seed001_tiers
from ..validate import check_value
from .cost import resolve_price
from .flags import add_command, add_input, checked, tier_choices
from .fmt import cli_value, dump_json, money, number, print_rows, table


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "budget", "budget-first plan: GPUs, days, GPU-hours, the largest compute-optimal model",
        "What a budget buys: GPU-hours (budget / price), GPUs for --deadline-days, model FLOPs "
        "(GPU-hours x peak x MFU) and the largest compute-optimal model with its tokens (C = 6ND, --tokens-per-param, "
        "Chinchilla 20); "
        "with --params-b the tokens the budget buys for that model. --gpu fills peak TFLOP/s and the catalog "
        "price; --own prices a GPU-hour as owned hardware instead (depreciation at --utilisation + energy).")
    p.add_argument("--budget-usd", metavar="X", help="budget, USD (e.g. 1e6); required unless --seed001-tiers")
    p.add_argument("--gpu", help="GPU name, e.g. H100 (fills peak TFLOP/s and the rental rate)")
    p.add_argument("--price-tier", help=tier_choices())
    p.add_argument("--usd-per-gpu-hour", metavar="X", help="rental rate, USD/GPU-hour (default: the GPU's catalog rate)")
    p.add_argument("--peak-tflops", metavar="X", help="dense peak TFLOP/s per GPU (default: the GPU's)")
    add_input(p, "mfu", "model FLOPs utilisation (seed 000: 0.3-0.5)")
    add_input(p, "deadline_days", "deadline: days the GPUs run", aliases=("--days",))
    p.add_argument("--tokens-per-param", metavar="X",
                   help=f"tokens per parameter (default {TOKENS_PER_PARAM:g}, Chinchilla)")
    p.add_argument("--params-b", metavar="X", help="a model size, billions: also show the tokens the budget buys for it")
    g = p.add_argument_group("owning instead of renting (--own)")
    g.add_argument("--own", action="store_true", help="price a GPU-hour as owned hardware")
    g.add_argument("--capex-usd-per-gpu", metavar="X", help="purchase price per GPU (default: the GPU's catalog price)")
    add_input(g, "depreciation_years", "depreciation life (seed 001: 3)")
    add_input(g, "utilisation", "share of hours the owned GPUs are busy")
    add_input(g, "kw_per_gpu", "power per GPU incl. server share, kW")
    add_input(g, "pue", "data-centre PUE")
    add_input(g, "own_usd_per_kwh", "electricity for the owned hardware, USD/kWh", aliases=("--usd-per-kwh",))
    p.add_argument("--seed001-tiers", action="store_true",
                   help="instead: seed 001's three budget tiers beside what the engine derives for them")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def _own_rate(args: argparse.Namespace) -> tuple[float, str]:
    capex = cli_value(args.capex_usd_per_gpu)
    if capex is None:
        capex = catalog.capex_for(args.gpu).capex_usd_per_gpu
    owned = ("depreciation_years", "kw_per_gpu", "pue", "own_usd_per_kwh", "utilisation")
    got = InputError.each(lambda name: check_value("capex_usd_per_gpu", capex) if name == "capex_usd_per_gpu"
                          else checked(args, name), ("capex_usd_per_gpu", *owned))
    inputs = {("usd_per_kwh" if name == "own_usd_per_kwh" else name): value for name, value in got.items()}
    rate = ownership.own_usd_per_gpu_hour(**inputs)
    return rate, (f"Price: {money(rate, cents=True)}/busy GPU-hour owned ({money(capex)} per GPU over "
                  f"{inputs['depreciation_years']:g} years at {inputs['utilisation']:.0%} utilisation + energy)")


def _rent_rate(args: argparse.Namespace) -> tuple[float, str]:
    """The rental rate, as estimate and cost take it, but never the example default: every number a budget plan
    gives is the budget over this price, so a GPU without a catalog rate (or no GPU) needs the rate typed."""
    typed = cli_value(args.usd_per_gpu_hour)
    if typed is None:
        if args.gpu is None:
            if args.price_tier:  # resolve_price names the tier without a GPU
                return resolve_price(None, args.price_tier, None)
            raise InputError("usd_per_gpu_hour", None, "given (or --gpu NAME to take the GPU's catalog rate)")
        catalog.rental_price(args.gpu, args.price_tier)  # no catalog rate: the error names the GPU and the tiers
    return resolve_price(args.gpu, args.price_tier, typed)


def _price(args: argparse.Namespace) -> tuple[float, str]:
    """The price of a GPU-hour and the sentence that states it: owned (--own) or rented."""
    if not args.own:
        return _rent_rate(args)
    # a rental price is no input of an owned GPU-hour: given with --own it would be ignored, so it is refused
    rent = [InputError(name, getattr(args, name), "left out with --own",
                       "an owned GPU-hour is priced from --capex-usd-per-gpu, depreciation, utilisation and energy; "
                       "leave --own out to plan at a rental rate")
            for name in ("price_tier", "usd_per_gpu_hour") if getattr(args, name) is not None]
    try:
        own = _own_rate(args)
    except InputError as exc:
        rent.append(exc)
    if rent:
        raise InputError.all(rent)
    return own


def _peak(gpu: str | None, typed) -> float:
    if typed is not None:
        return check_value("peak_tflops", typed)
    if gpu is None:
        raise InputError("peak_tflops", None, "given (or --gpu NAME to take the GPU's)")
    return catalog.get_gpu(gpu).peak_tflops()


def _budget(typed) -> float:
    if typed is None:
        raise InputError("budget_usd", None, "given: --budget-usd X (e.g. 1e6)")
    return check_value("budget_usd", typed)


def run(args: argparse.Namespace) -> int:
    if args.seed001_tiers:  # the tiers fix budget, GPU and price: a flag that would set one is refused, not ignored
        unused = [InputError(name, value, "left out with --seed001-tiers",
                             "the tiers are seed 001's budgets and GPUs at each GPU's catalog rate; only --mfu applies")
                  for name, value in vars(args).items()  # the flags of one budget's plan: all but these
                  if name not in ("command", "func", "mfu", "json", "seed001_tiers") and value not in (None, False)]
        if unused:
            raise InputError.all(unused)
        tiers = seed001_tiers(checked(args, "mfu"))
        print(dump_json(tiers) if args.json else tiers_table(tiers))
        return 0
    checks = {  # every input that is missing or not allowed, at once
        "budget_usd": lambda: _budget(cli_value(args.budget_usd)),
        "price": lambda: _price(args),
        "peak_tflops": lambda: _peak(args.gpu, cli_value(args.peak_tflops)),
        "mfu": lambda: checked(args, "mfu"),
        "deadline_days": lambda: checked(args, "deadline_days"),
        "tokens_per_param": lambda: checked(args, "tokens_per_param", TOKENS_PER_PARAM),
        "params_b": lambda: checked(args, "params_b", None),
    }
    got = InputError.each(lambda key: checks[key](), checks)
    price, note = got["price"]
    rows = budget_plan(budget_usd=got["budget_usd"], usd_per_gpu_hour=price, peak_tflops=got["peak_tflops"],
                       mfu=got["mfu"], days=got["deadline_days"], tokens_per_param=got["tokens_per_param"],
                       params_b=got["params_b"])
    inputs = {k: value for k, value in got.items() if k != "price"}  # what was assumed beside what it gives
    gpu = catalog.get_gpu(args.gpu).id if args.gpu else None
    return print_rows(args.json, {"inputs": {**inputs, "usd_per_gpu_hour": price, "gpu": gpu}, "price": note}, [
        f"Budget {money(got['budget_usd'])}, {number(got['deadline_days'])} days, MFU "
        f"{number(got['mfu'], 'fraction')}, " + (f"{gpu} at " if gpu else "") + f"{got['peak_tflops']:,g} TFLOP/s "
        "peak" + ("" if args.peak_tflops is None else " (typed)"), note], rows)


def tiers_table(rows: list[dict]) -> str:
    body = [(money(r["budget_usd"]), f"{r['gpus']} x {r['gpu']}", r["months"], r["model"],
             f"{money(r['usd_per_gpu_hour'], cents=True)} ({r['price_id']})", number(r["gpu_hours"]),
             f"{r['months_on_seed_gpus']:.1f}", f"{r['params_b']:.0f}B / {r['tokens_t']:.1f}T")
            for r in rows]
    return table(body, headers=("budget", "seed: GPUs", "seed: months", "seed: model", "price used", "GPU-hours",
                                "months on those GPUs", "compute-optimal N / D"), align="llll")

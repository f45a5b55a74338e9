"""``xlcalc cost``: own vs rent for one run — rent, all-in own cost, break-even utilisation and months."""

from __future__ import annotations

import argparse

from .. import catalog
from ..errors import InputError
from ..money import own_vs_rent
from ..validate import check_value
from .flags import DECLARED, OneDefaultFormatter, add_command, add_input, given, tier_choices
from .fmt import cli_value, dump_json, money, number, price_line, table

# Seed 001 §5.1's CostCalculator example: 128 A100-80GB for 30 days, $15,000 per card, 3-year depreciation,
# 0.4 kW per GPU; its cloud rate $10 per A100-hour. Its electricity line has no price: we price it per kWh.
# The command's defaults are every command's (xlcalc.cli.flags): the example is
# ``xlcalc cost --n-gpus 128 --kw-per-gpu 0.4 --pue 1`` (30 days, the seed's rate and price without --gpu).
SEED001 = {"n_gpus": 128, "days": 30, "capex_usd_per_gpu": 15000, "depreciation_years": 3, "kw_per_gpu": 0.4,
           "pue": 1.0, "usd_per_kwh": 0.08, "usd_per_gpu_hour": 10.0}

# (input, help, default: the scenario's where it has the input, else the one given here)
FLAGS = (
    ("n_gpus", "GPUs", DECLARED),
    ("days", "days of the run", SEED001["days"]),
    ("capex_usd_per_gpu", "purchase price per GPU, USD (default: the --gpu's catalog price, an error when it has "
     "none; without --gpu seed 001's $15,000)", None),
    ("capex_usd_per_server", "server without its GPUs, USD per server", DECLARED),
    ("gpus_per_node", "GPUs per server (default: the GPU's, else 8)", None),
    ("depreciation_years", "depreciation life, years", DECLARED),
    ("utilisation", "share of the owned hardware's hours that are busy (0-1]", DECLARED),
    ("kw_per_gpu", "power per GPU incl. server share, kW (seed 001: 0.4)", DECLARED),
    ("kw_per_server", "server power without its GPUs, kW", DECLARED),
    ("pue", "data-centre PUE (>= 1; seed 001: 1)", DECLARED),
    ("own_usd_per_kwh", "electricity for the owned hardware, USD/kWh (example: about 7-9 cents for US industry, "
     "EIA 2024)", DECLARED),
    ("kw_per_rack", "power per rack, kW (seed 001: 20-40)", DECLARED),
    ("usd_per_rack_month", "hosting per rack and month, USD", DECLARED),
)
# the money function's parameter of a flag whose input is named otherwise
_PARAM = {"own_usd_per_kwh": "usd_per_kwh"}


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "cost", "own vs rent: rent, own (depreciation, energy, hosting), break-even utilisation and months",
        "Own vs rent for one run. Seed 001's example (128 A100 for 30 days at $15,000 per card, "
        "3-year straight-line depreciation, 0.4 kW per GPU; its $10/GPU-hour cloud rate), with the electricity "
        "priced per kWh, is: xlcalc cost --n-gpus 128 --kw-per-gpu 0.4 --pue 1. --gpu takes the rental rate (its "
        "default tier, or --price-tier) and the purchase "
        "price from the price catalog.", OneDefaultFormatter)
    p.add_argument("--gpu", help="GPU name, e.g. H100 (see: xlcalc catalog prices)")
    p.add_argument("--price-tier", help=tier_choices())
    p.add_argument("--usd-per-gpu-hour", metavar="X",
                   help="rental rate, USD/GPU-hour (default: the GPU's catalog rate, else seed 001's $10)")
    for name, text, default in FLAGS:
        add_input(p, name, text, default=default, aliases=("--usd-per-kwh",) if name == "own_usd_per_kwh" else ())
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def resolve_price(gpu: str | None, tier: str | None, typed) -> tuple[float, str]:
    """Rental rate and the sentence that says where it came from."""
    if typed is not None:
        if tier:
            raise InputError("price_tier", tier, "left out when --usd-per-gpu-hour is given",
                             "a tier picks a catalog price; a typed price has none")
        return check_value("usd_per_gpu_hour", typed), price_line(None, check_value("usd_per_gpu_hour", typed))
    if gpu is None:
        if tier:
            raise InputError("price_tier", tier, "used with --gpu (the GPU whose catalog prices it picks from)")
        return SEED001["usd_per_gpu_hour"], (f"Price: {money(SEED001['usd_per_gpu_hour'], cents=True)}/GPU-hour, "
                                             "seed 001's A100 cloud rate (give --gpu or --usd-per-gpu-hour)")
    row = catalog.rental_price(gpu, tier)
    assert row.usd_per_gpu_hour is not None  # rental_price returns a row with a rate
    return row.usd_per_gpu_hour, price_line(gpu, None, tier)


def resolve_capex(gpu: str | None, values: dict) -> str:
    """Fill values["capex_usd_per_gpu"] when not typed; return the sentence that says where it came from.

    Typed wins; else the chosen GPU's catalog purchase price; else (no --gpu: seed 001's example) the seed's
    $15,000 per A100, stated. A GPU the catalog has no purchase price for is an error naming the input.
    """
    if values["capex_usd_per_gpu"] is not None:
        return f"Capex: {money(values['capex_usd_per_gpu'])} per GPU, typed"
    if gpu is None:
        values["capex_usd_per_gpu"] = SEED001["capex_usd_per_gpu"]
        return (f"Capex: {money(SEED001['capex_usd_per_gpu'])} per GPU, seed 001's A100 example "
                "(give --gpu or --capex-usd-per-gpu)")
    buy = catalog.capex_for(gpu)
    values["capex_usd_per_gpu"] = buy.capex_usd_per_gpu
    return "Capex: " + catalog.capex_note(buy)


def run(args: argparse.Namespace) -> int:
    values = {_PARAM.get(name, name): given(args, name, default) for name, _, default in FLAGS}
    # a missing rental rate and a missing purchase price are reported at once
    resolved = InputError.each(lambda resolve: resolve(), (
        lambda: resolve_price(args.gpu, args.price_tier, cli_value(args.usd_per_gpu_hour)),
        lambda: resolve_capex(args.gpu, values)))
    (price, note), capex_note = resolved.values()
    if values["gpus_per_node"] is None:
        values["gpus_per_node"] = (catalog.get_gpu(args.gpu).gpus_per_node if args.gpu else None) or 8
    rows = own_vs_rent(usd_per_gpu_hour=price, **values)
    if args.json:
        print(dump_json({"inputs": {**values, "usd_per_gpu_hour": price}, "price": note, "capex": capex_note,
                         "rows": [r.as_dict() for r in rows]}))
        return 0
    print(f"Own vs rent: {number(values['n_gpus'])} GPUs for {number(values['days'])} days")
    print(note)
    print(capex_note)
    print(f"Own: {money(values['capex_usd_per_gpu'])} per GPU + {money(values['capex_usd_per_server'])} per server "
          f"of {values['gpus_per_node']}, {number(values['depreciation_years'])}-year depreciation, utilisation "
          f"{number(values['utilisation'], 'fraction')}, {number(values['kw_per_gpu'])} kW per GPU x PUE "
          f"{number(values['pue'])} at {money(values['usd_per_kwh'], cents=True)}/kWh, "
          f"{money(values['usd_per_rack_month'])} per rack-month")
    print()
    print(table([(r.label, number(r.value, r.unit), r.unit, r.udf) for r in rows],
                headers=("", "value", "unit", "worksheet function"), align="lrll"))
    return 0

"""``xlcalc cost``: own vs rent for one run — rent, all-in own cost, break-even utilisation and months."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

from .. import catalog
from ..errors import InputError
from ..money import own_vs_rent
from ..scenario import rental_rate
from ..validate import check_value
from .flags import DECLARED, add_command, add_input, checked, given, input_default, tier_choices
from .fmt import cli_value, money, number, print_rows

# Seed 001 §5.1's CostCalculator example: 128 A100-80GB for 30 days, $15,000 per card, 3-year depreciation,
# 0.4 kW per GPU; its cloud rate $10 per A100-hour. Its electricity line has no price: we price it per kWh.
# The command's defaults are every command's (xlcalc.cli.flags; the rental rate's is xlcalc.scenario.rental_rate's,
# as estimate prices it): the example types the seed's rate and price,
# ``xlcalc cost --n-gpus 128 --kw-per-gpu 0.4 --pue 1 --usd-per-gpu-hour 10 --capex-usd-per-gpu 15000`` (30 days).
SEED001_DAYS = 30

# (input, help, default: the scenario's where it has the input, else the one given here)
FLAGS = (
    ("n_gpus", "GPUs", DECLARED),
    ("days", "days of the run", SEED001_DAYS),
    ("capex_usd_per_gpu", "purchase price per GPU, USD (default: the --gpu's catalog price; an error when there is "
     "none)", None),
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
        "Own vs rent for one run. --gpu takes the rental rate (its default tier, or --price-tier) and the purchase "
        "price from the price catalog; a rate the catalog lacks is estimate's example default, stated. Seed 001's "
        "example (128 A100 for 30 days at $15,000 per card, 3-year straight-line depreciation, 0.4 kW per GPU; "
        "its $10/GPU-hour cloud rate), with the electricity priced per kWh, is: xlcalc cost --n-gpus 128 "
        "--kw-per-gpu 0.4 --pue 1 --usd-per-gpu-hour 10 --capex-usd-per-gpu 15000.")
    p.add_argument("--gpu", help="GPU name, e.g. H100 (see: xlcalc catalog prices)")
    p.add_argument("--price-tier", help=tier_choices())
    p.add_argument("--usd-per-gpu-hour", metavar="X",
                   help="rental rate, USD/GPU-hour (default: the GPU's catalog rate, else estimate's example "
                        f"${input_default('usd_per_gpu_hour'):g}, stated)")
    for name, text, default in FLAGS:
        add_input(p, name, text, default=default, aliases=("--usd-per-kwh",) if name == "own_usd_per_kwh" else ())
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def resolve_price(gpu: str | None, tier: str | None, typed) -> tuple[float, str]:
    """Rental rate and the sentence that says where it came from: the scenario's (estimate's) rule."""
    rate, words = rental_rate(gpu, tier, typed)
    return rate, f"Price: {words}"


def resolve_capex(gpu: str | None, values: dict) -> str:
    """Fill values["capex_usd_per_gpu"] when not typed; return the sentence that says where it came from.

    Typed wins; else the chosen GPU's catalog purchase price. No purchase price (no --gpu, or a GPU the catalog
    has none for) is an error naming the input, never a default (as estimate says in place of its own rows).
    """
    if values["capex_usd_per_gpu"] is not None:
        values["capex_usd_per_gpu"] = check_value("capex_usd_per_gpu", values["capex_usd_per_gpu"])
        return f"Capex: {money(values['capex_usd_per_gpu'])} per GPU, typed"
    buy = catalog.capex_for(gpu)
    values["capex_usd_per_gpu"] = buy.capex_usd_per_gpu
    return "Capex: " + catalog.capex_note(buy)


def run(args: argparse.Namespace) -> int:
    values = {_PARAM.get(name, name): given(args, name, default) for name, _, default in FLAGS}
    # every input that is missing or not allowed, at once: the rental rate, the purchase price and each flag
    checks: dict[str, Callable[[], Any]] = {
        name: partial(checked, args, name, default) for name, _, default in FLAGS if name != "capex_usd_per_gpu"}
    checks["price"] = lambda: resolve_price(args.gpu, args.price_tier, cli_value(args.usd_per_gpu_hour))
    checks["capex"] = lambda: resolve_capex(args.gpu, values)
    got = InputError.each(lambda key: checks[key](), checks)
    (price, note), capex_note = got.pop("price"), got.pop("capex")
    values.update({_PARAM.get(name, name): value for name, value in got.items()})
    if values["gpus_per_node"] is None:
        values["gpus_per_node"] = (catalog.get_gpu(args.gpu).gpus_per_node if args.gpu else None) or 8
    rows = own_vs_rent(usd_per_gpu_hour=price, **values)
    data = {"inputs": {**values, "usd_per_gpu_hour": price}, "price": note, "capex": capex_note}
    return print_rows(args.json, data, [
        f"Own vs rent: {number(values['n_gpus'])} GPUs for {number(values['days'])} days", note, capex_note,
        f"Own: {money(values['capex_usd_per_gpu'])} per GPU + {money(values['capex_usd_per_server'])} per server "
        f"of {values['gpus_per_node']}, {number(values['depreciation_years'])}-year depreciation, utilisation "
        f"{number(values['utilisation'], 'fraction')}, {number(values['kw_per_gpu'])} kW per GPU x PUE "
        f"{number(values['pue'])} at {money(values['usd_per_kwh'], cents=True)}/kWh, "
        f"{money(values['usd_per_rack_month'])} per rack-month"], rows)

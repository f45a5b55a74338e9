"""``xlcalc catalog``: list and show the GPU, model and price catalogs."""

from __future__ import annotations

import argparse
from typing import Any

from .. import catalog
from ..errors import CatalogError, InputError
from ..hf_config import model_from_hf_config
from .flags import add_command
from .fmt import dump_json, money, table


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "catalog", "list or show GPUs, models and prices",
        "List a catalog (gpus, models, prices) or show one entry with its source.")
    p.add_argument("kind", choices=("gpus", "models", "prices"), help="which catalog")
    p.add_argument("name", nargs="?", help="show one entry (case-insensitive, aliases allowed)")
    p.add_argument("--config", metavar="PATH",
                   help="models only: show the model a Hugging Face config.json describes, with its derived counts")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=run)


def _dump(row) -> dict:
    """A catalog row with the values derived from it, under the names GPU_SPEC and MODEL_SPEC take."""
    data = row.model_dump()
    data.update({k: catalog.looked_up(row, k) for k in data})
    if isinstance(row, catalog.GPU):
        data.update({k: getattr(row, k) for k in catalog.GPU_DERIVED_FIELDS})
    if isinstance(row, catalog.Model):
        data.update({k: getattr(row, k) for k in catalog.MODEL_DERIVED_FIELDS})
        data["params_b_derived"] = row.params_b  # the names of earlier versions
        data["active_params_b_derived"] = row.active_params_b
    return data


def run(args: argparse.Namespace) -> int:
    if args.config is not None:
        if args.kind != "models" or args.name:
            raise InputError("config", args.config, "given with 'xlcalc catalog models' and no NAME")
        _show(_dump(model_from_hf_config(args.config)), args.json)
        return 0
    rows: tuple[Any, ...] = {"gpus": catalog.gpus, "models": catalog.models, "prices": catalog.prices}[args.kind]()
    gpu, key = None, (args.name or "").strip().lower()
    if args.kind == "prices" and args.name and all(p.id != key for p in rows):  # `catalog prices h100`: its prices
        try:
            gpu = catalog.get_gpu(args.name)
        except CatalogError:
            raise CatalogError(f"unknown price {args.name!r}; valid prices (or a GPU name, for its prices): "
                               f"{', '.join(p.id for p in rows)}") from None
        rows = tuple(p for p in rows if p.gpu == gpu.id)
        if not rows and not args.json:
            print(f"The price catalog holds no price of {gpu.id}: give yours with --usd-per-gpu-hour "
                  "(and --capex-usd-per-gpu to own).")
            return 0
    elif args.name:
        find = {"gpus": catalog.get_gpu, "models": catalog.get_model,
                "prices": lambda _: next(p for p in rows if p.id == key)}[args.kind]
        _show(_dump(find(args.name)), args.json)
        return 0
    if args.json:
        print(dump_json([_dump(r) for r in rows]))
        return 0
    if args.kind == "gpus":
        headers: tuple[str, ...] = ("id", "name", "BF16 TFLOPS", "FP8 TFLOPS", "memory GB", "HBM TB/s", "TDP W")
        body: list[tuple[Any, ...]] = [(g.id, g.name, _n(g.bf16_tflops), _n(g.fp8_tflops), _n(g.memory_gb), _n(g.hbm_tb_s), _n(g.tdp_w))
                for g in rows]
    elif args.kind == "models":
        headers = ("id", "name", "layers", "hidden", "heads", "kv", "params B (derived)", "published B")
        body = [(m.id, m.name, m.layers, m.hidden, m.heads, m.kv, f"{m.params_b:.2f}",
                 "" if m.published_params_b is None else f"{m.published_params_b:,.2f}")
                for m in rows]
    else:
        headers = ("id", "gpu", "tier", "USD/GPU-hour", "capex USD/GPU", "date")
        body = [(p.id, p.gpu, p.tier or "", _usd(p.usd_per_gpu_hour, cents=True), _usd(p.capex_usd_per_gpu), p.date)
                for p in rows]
    print(table(body, headers=headers, align="lll" if args.kind == "prices" else "ll"))
    of = f" of {gpu.id}" if gpu is not None else ""
    print(f"\n{len(rows)} {args.kind}{of}. Show one with its source: xlcalc catalog {args.kind} NAME")
    return 0


def _show(row: dict, as_json: bool) -> None:
    if as_json:
        print(dump_json(row))
        return
    print(table([(k, "" if v is None else (", ".join(v) if isinstance(v, (list, tuple)) else _n(v) if isinstance(v, float) else str(v)))
                 for k, v in row.items()], headers=("field", "value"), align="ll"))


def _n(v) -> str:
    return "" if v is None else f"{v:,.10g}"


def _usd(v, cents: bool = False) -> str:
    return "" if v is None else money(v, cents=cents)

"""Catalog sheets (GPUs, Models) and the References sheet, from xlcalc.catalog and the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import catalog
from ..recipes import RECIPE_FIELDS, RECIPES
from ..registry import all_formulas
from .model import Book, coord

FIRST = 4  # first data row of a catalog sheet (title, note, header above)

GPU_COLUMNS = (
    ("id", "id", 16), ("name", "name", 30), ("vendor", "vendor", 12),
    ("half_tflops", "training peak TFLOP/s (BF16, else FP16)", 14), ("bf16_tflops", "dense BF16 TFLOP/s", 12),
    ("fp16_tflops", "dense FP16 TFLOP/s", 12), ("fp8_tflops", "dense FP8 TFLOP/s", 12),
    ("memory_gb", "memory GB (nominal)", 11),
    ("capacity_gb", "memory GB the fit uses (as exposed to CUDA where a source gives it, else nominal)", 14),
    ("hbm_tb_s", "HBM TB/s", 10), ("gpus_per_node", "GPUs per node", 10),
    ("tdp_w", "TDP W", 9), ("source", "source", 90),
)
MODEL_COLUMNS = (
    ("id", "id", 16), ("name", "name", 26), ("params_b", "params B (from architecture)", 14),
    ("active_params_b", "active params B (MoE; 0 = dense)", 12),
    ("published_params_b", "params B (published)", 12), ("layers", "layers L", 9), ("hidden", "hidden h", 9),
    ("heads", "heads a", 9), ("kv_heads", "KV heads", 9), ("ffn_hidden", "FFN hidden", 10),
    ("vocab", "vocab", 9), ("seq_len", "seq len", 9), ("source", "source", 90),
)

RECIPE_COLUMNS = (
    ("id", "id", 14), ("weights", "bytes/param: weights", 12), ("grads", "bytes/param: gradients", 12),
    ("optimizer", "bytes/param: optimizer states", 14), ("source", "source", 90),
)

# Scenario field -> catalog column it is looked up from
RECIPE_DERIVED = dict(RECIPE_FIELDS)
GPU_DERIVED = {"peak_tflops": "half_tflops", "gpu_memory_gb": "capacity_gb", "gpus_per_node": "gpus_per_node"}
MODEL_DERIVED = {"params_b": "params_b", "active_params_b": "active_params_b", "layers": "layers", "hidden": "hidden", "heads": "heads", "seq_len": "seq_len",
                 "kv_heads": "kv_heads", "ffn_hidden": "ffn_hidden", "vocab": "vocab"}


@dataclass(frozen=True)
class Table:
    sheet: str
    columns: tuple[str, ...]
    first_row: int
    last_row: int

    def col(self, field: str) -> str:
        return coord(self.columns.index(field) + 1, 1)[:-1]


def model_params_b(m: catalog.Model) -> float:
    """Parameter count as the Scenario preset fills it (xlcalc.scenario.Scenario.build)."""
    return round(m.params_b, 3)


def _row_value(row, field: str):
    if field == "params_b":
        return model_params_b(row)
    if field == "active_params_b":  # as the Scenario preset fills it: 0 for a dense model
        return round(row.active_params_b, 3) if row.experts else 0
    if field == "kv_heads":
        return row.kv_heads or row.heads
    return getattr(row, field)


def _table(book: Book, sheet: str, title: str, note: str, columns, rows) -> Table:
    book.put(sheet, "A1", title, "title")
    book.put(sheet, "A2", note, "note")
    for j, (_, header, width) in enumerate(columns, start=1):
        book.put(sheet, coord(j, 3), header, "header")
        book.widths.setdefault(sheet, {})[coord(j, 1)[:-1]] = width
    for i, row in enumerate(rows):
        for j, (field, _, _) in enumerate(columns, start=1):
            value = _row_value(row, field)
            kind = "text" if field in ("source", "name") else ("label" if field == "id" else "input")
            book.put(sheet, coord(j, FIRST + i), value, kind)
    book.freeze[sheet] = "B4"
    return Table(sheet, tuple(c[0] for c in columns), FIRST, FIRST + max(len(rows), 1) - 1)


def gpu_sheet(book: Book) -> Table:
    return _table(
        book, "GPUs", "GPU catalog",
        "Dense TFLOP/s (no 2:4 sparsity); GB = 1e9 bytes. An empty cell: no published figure. "
        "Yellow cells may be edited; the Inputs sheet looks GPUs up here by id.",
        GPU_COLUMNS, catalog.gpus(),
    )


def model_sheet(book: Book) -> Table:
    return _table(
        book, "Models", "Model catalog",
        "Parameter counts are derived from the architecture (embeddings, attention, FFN, norms). "
        "The Inputs sheet looks presets up here by id.",
        MODEL_COLUMNS, catalog.models(),
    )


def recipe_sheet(book: Book) -> Table:
    return _table(
        book, "Recipes", "Precision recipes: bytes per parameter of the model states",
        "Weights, gradients and optimizer states (with any fp32 master copy) in bytes per parameter. "
        "Yellow cells may be edited; the Inputs sheet looks the precision recipe up here by id.",
        RECIPE_COLUMNS, list(RECIPES.values()),
    )


PRICE_COLUMNS = (
    ("key", "key (GPU|tier)", 24), ("gpu", "GPU id", 14), ("tier", "tier", 15),
    ("usd_per_gpu_hour", "USD per GPU-hour", 12), ("date", "date", 22), ("id", "price id", 28),
    ("source", "source", 80), ("notes", "notes", 60),
)
TIER_MEANINGS = {
    "on-demand": "pay as you go, no commitment",
    "reserved-1y": "committed for one year (reserved instance, savings plan, committed-use discount)",
    "reserved-3y": "committed for three years",
    "spot": "pre-emptible spare capacity: can be taken back at short notice",
    "capacity-block": "a short reservation booked ahead (e.g. AWS EC2 Capacity Blocks)",
    "assumed": "a rate a published report assumed, not a provider quote",
}


@dataclass(frozen=True)
class PriceTable(Table):
    """The Prices sheet: rental rates keyed by GPU|tier, and the list of tiers the dropdown offers."""

    tier_first: int = 0
    tier_last: int = 0
    capex_first: int = 0  # the purchase-price table: GPU id in A, USD per GPU in B, date C, price id D, source E
    capex_last: int = 0


def price_key(gpu: str, tier: str) -> str:
    """The key of a rental rate on the Prices sheet (what the look-up matches: GPU_Type&"|"&Price_Tier)."""
    return f"{gpu}|{tier}"


def price_sheet(book: Book) -> PriceTable:
    """Rental rates per GPU and tier from the price catalog (xlcalc/data/prices.toml), each with date and source.

    A GPU and tier the catalog has no rate for has no row: the Inputs sheet's look-up then says so.
    """
    s = "Prices"
    rows: list[Any] = [p for p in catalog.prices() if p.usd_per_gpu_hour is not None and p.tier is not None]
    book.put(s, "A1", "Rental prices per GPU-hour, by GPU and tier", "title")
    book.put(s, "A2", "From the price catalog, each with its date and source. Inputs looks USD_per_GPU_Hour up here by "
             "GPU_Type and Price_Tier; a pair with no row has no sourced price. Type your own quote over "
             "USD_per_GPU_Hour on Inputs, or over a yellow rate here.", "note")
    for j, (_, header, width) in enumerate(PRICE_COLUMNS, start=1):
        book.put(s, coord(j, 3), header, "header")
        book.widths.setdefault(s, {})[coord(j, 1)[:-1]] = width
    for i, p in enumerate(rows):
        values = {"key": price_key(p.gpu, p.tier), "gpu": p.gpu, "tier": p.tier,
                  "usd_per_gpu_hour": p.usd_per_gpu_hour, "date": p.date or "undated", "id": p.id,
                  "source": p.source, "notes": p.notes}
        for j, (field, _, _) in enumerate(PRICE_COLUMNS, start=1):
            kind = "input" if field == "usd_per_gpu_hour" else "text" if field in ("source", "notes") else "label"
            fmt = '"$"#,##0.000' if field == "usd_per_gpu_hour" else None
            book.put(s, coord(j, FIRST + i), values[field], kind, fmt)
    last = FIRST + max(len(rows), 1) - 1
    head = last + 2
    book.put(s, f"A{head}", "Price tiers (the Price_Tier dropdown on Inputs)", "group")
    book.put(s, f"A{head + 1}", "tier", "header")
    book.put(s, f"B{head + 1}", "what it is", "header")
    book.merges.append((s, f"B{head + 1}:D{head + 1}"))
    for k, tier in enumerate(catalog.PRICE_TIERS):
        book.put(s, f"A{head + 2 + k}", tier, "label")
        book.put(s, f"B{head + 2 + k}", TIER_MEANINGS[tier], "text")
        book.merges.append((s, f"B{head + 2 + k}:D{head + 2 + k}"))
    buy_head = head + 3 + len(catalog.PRICE_TIERS)
    buys = [p for p in catalog.prices() if p.capex_usd_per_gpu is not None]
    book.put(s, f"A{buy_head}", "Purchase prices per GPU (Capex_USD_per_GPU on Inputs, looked up by GPU_Type; a GPU "
             "with no row has no sourced price: type yours over Capex_USD_per_GPU)", "group")
    for j, header in enumerate(("GPU id", "USD per GPU", "date", "price id", "source"), start=1):
        book.put(s, coord(j, buy_head + 1), header, "header")
    seen: set[str] = set()
    buy_first = buy_head + 2
    for p in buys:
        if p.gpu in seen:  # the first row of a GPU is the one the look-up (and catalog.purchase_price) takes
            continue
        seen.add(p.gpu)
        r = buy_first + len(seen) - 1
        book.put(s, f"A{r}", p.gpu, "label")
        book.put(s, f"B{r}", p.capex_usd_per_gpu, "input", '"$"#,##0')
        book.put(s, f"C{r}", p.date or "undated", "label")
        book.put(s, f"D{r}", p.id, "label")
        book.put(s, f"E{r}", p.source, "text")
    book.freeze[s] = "B4"
    return PriceTable(s, tuple(c[0] for c in PRICE_COLUMNS), FIRST, last, head + 2,
                      head + 1 + len(catalog.PRICE_TIERS), buy_first, buy_first + max(len(seen), 1) - 1)


def references_sheet(book: Book) -> None:
    s = "References"
    book.put(s, "A1", "Formulas and sources", "title")
    book.put(s, "A2", "Every formula the workbook uses is one of these, rendered from xlcalc's registry "
             "(the same definitions as the Python library and the Excel functions).", "note")
    headers = ("formula", "Excel function (add-in)", "what it computes", "unit", "equation", "source")
    for j, h in enumerate(headers, start=1):
        book.put(s, coord(j, 3), h, "header")
    for i, f in enumerate(sorted(all_formulas(), key=lambda f: (f.category, f.name)), start=4):
        for j, value in enumerate((f.name, f.udf_name, f.summary, f.unit, f.equation, f.source), start=1):
            book.put(s, coord(j, i), value, "text")
    book.freeze[s] = "A4"

"""Catalog sheets (GPUs, Models) and the References sheet, from xlcalc.catalog and the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import catalog
from ..expr.functions import eq, if_
from ..expr.nodes import Expr, IfError, Var
from ..frameworks import DEFAULT_FRAMEWORK, FRAMEWORK_NAMES, FRAMEWORKS, PRECISIONS, PROFILE_FIELDS, get_profile
from ..planner.hardware import SM_COUNT, attention_factor, catalog_matmul_efficiency
from ..recipes import MEMORY_DEFAULTS, RECIPE_FIELDS, RECIPES
from ..registry import all_formulas
from .model import Book, Concat, Lookup, LookupOr, coord
from .rendering import BOOL_FORMAT

FIRST = 4  # first data row of a catalog sheet (title, note, header above)

GPU_COLUMNS = (
    ("id", "id", 16), ("name", "name", 30), ("vendor", "vendor", 12),
    ("half_tflops", "training peak TFLOP/s (BF16, else FP16)", 14), ("bf16_tflops", "dense BF16 TFLOP/s", 12),
    ("fp16_tflops", "dense FP16 TFLOP/s", 12), ("fp8_tflops", "dense FP8 TFLOP/s", 12),
    ("memory_gb", "memory GB (nominal)", 11),
    ("capacity_gb", "memory GB the fit uses (as exposed to CUDA where a source gives it, else nominal)", 14),
    ("hbm_tb_s", "HBM TB/s", 10), ("gpus_per_node", "GPUs per node", 10),
    ("tdp_w", "TDP W", 9),
    # what the step time (StepTime sheet) reads beside them, as xlcalc plan resolves it
    ("scaleup_gb_s", "scale-up GB/s per direction (NVLink)", 12), ("scaleout_gb_s", "scale-out GB/s (NIC)", 11),
    ("nvlink_domain", "GPUs per NVLink domain", 10), ("sm_count", "SMs (wave quantization)", 10),
    ("step_matmul_efficiency", "matmul efficiency when the stack gives none", 13),
    ("attention_generation_factor", "FlashAttention-2 share vs its A100 share", 13),
    ("source", "source", 90),
)
MODEL_COLUMNS = (
    ("id", "id", 16), ("name", "name", 26), ("params_b", "params B (from architecture)", 14),
    ("active_params_b", "active params B (MoE; 0 = dense)", 12),
    ("published_params_b", "params B (published)", 12), ("layers", "layers L", 9), ("hidden", "hidden h", 9),
    ("heads", "heads a", 9), ("kv_heads", "KV heads", 9), ("ffn_hidden", "FFN hidden", 10),
    ("vocab", "vocab", 9), ("seq_len", "seq len", 9),
    # what the step time (StepTime sheet) counts beside the shape, as xlcalc plan does
    ("biases", "biases", 8), ("relative_positions", "relative positions (Transformer-XL)", 10),
    ("position_rows", "learned position rows (0: none)", 10), ("source", "source", 90),
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


# the columns worked out from a catalog row rather than read off it
_WORKED_OUT = {"params_b": lambda row: round(row.params_b, 3),  # as the Scenario preset fills it (Scenario.build)
               "active_params_b": lambda row: round(row.active_params_b, 3) if row.experts else 0,  # 0: dense
               "sm_count": lambda row: SM_COUNT.get(row.id),
               "step_matmul_efficiency": catalog_matmul_efficiency,
               "attention_generation_factor": lambda row: attention_factor(row.id, True)}


def _row_value(row, field: str):
    return _WORKED_OUT[field](row) if field in _WORKED_OUT else catalog.looked_up(row, field)


def _head(book: Book, sheet: str, title: str, note: str, columns: Any) -> None:
    """A catalog sheet's title, note and column headings (row 3), each column as wide as ``columns`` says."""
    book.titled(sheet, title, note)
    for j, (_, header, width) in enumerate(columns, start=1):
        book.put(sheet, coord(j, 3), header, "header")
        book.widths.setdefault(sheet, {})[coord(j, 1)[:-1]] = width


# a catalog sheet: its title, note, columns and the catalog's rows
CATALOG_SHEETS: dict[str, tuple[Any, ...]] = {
    "GPUs": ("GPU catalog", "Dense TFLOP/s (no 2:4 sparsity); GB = 1e9 bytes. An empty cell: no published figure. "
             "Yellow cells may be edited; the Inputs sheet looks GPUs up here by id.", GPU_COLUMNS, catalog.gpus),
    "Models": ("Model catalog", "Parameter counts are derived from the architecture (embeddings, attention, FFN, "
               "norms). The Inputs sheet looks presets up here by id.", MODEL_COLUMNS, catalog.models),
    "Recipes": ("Precision recipes: bytes per parameter of the model states", "Weights, gradients and optimizer "
                "states (with any fp32 master copy) in bytes per parameter. Yellow cells may be edited; the Inputs "
                "sheet looks the precision recipe up here by id.", RECIPE_COLUMNS, lambda: list(RECIPES.values())),
}


def catalog_sheet(book: Book, sheet: str) -> Table:
    """The catalog sheet ``sheet`` of CATALOG_SHEETS: one row per catalog entry, one column per field."""
    title, note, columns, entries = CATALOG_SHEETS[sheet]
    rows = entries()
    _head(book, sheet, title, note, columns)
    for i, row in enumerate(rows):
        for j, (field, _, _) in enumerate(columns, start=1):
            value = _row_value(row, field)
            kind = "text" if field in ("source", "name") else ("label" if field == "id" else "input")
            book.put(sheet, coord(j, FIRST + i), value, kind, BOOL_FORMAT if isinstance(value, bool) else None)
    book.freeze[sheet] = "B4"
    return Table(sheet, tuple(c[0] for c in columns), FIRST, FIRST + max(len(rows), 1) - 1)


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


def price_sheet(book: Book) -> PriceTable:
    """Rental rates per GPU and tier from the price catalog (xlcalc/data/prices.toml), each with date and source.

    A GPU and tier the catalog has no rate for has no row: the Inputs sheet's look-up then says so.
    """
    s = "Prices"
    rows: list[Any] = [p for p in catalog.prices() if p.usd_per_gpu_hour is not None and p.tier is not None]
    _head(book, s, "Rental prices per GPU-hour, by GPU and tier", "From the price catalog, each with its date and "
          "source. Inputs looks USD_per_GPU_Hour up here by GPU_Type and Price_Tier; a pair with no row has no sourced "
          "price. Type your own quote over USD_per_GPU_Hour on Inputs, or over a yellow rate here.", PRICE_COLUMNS)
    for i, p in enumerate(rows):
        for j, (field, _, _) in enumerate(PRICE_COLUMNS, start=1):
            # the key the look-up matches: GPU_Type&"|"&Price_Tier
            value = f"{p.gpu}|{p.tier}" if field == "key" else p.date or "undated" if field == "date" \
                else getattr(p, field)
            kind = "input" if field == "usd_per_gpu_hour" else "text" if field in ("source", "notes") else "label"
            fmt = '"$"#,##0.000' if field == "usd_per_gpu_hour" else None
            book.put(s, coord(j, FIRST + i), value, kind, fmt)
    last = FIRST + max(len(rows), 1) - 1
    head = last + 2
    book.put(s, f"A{head}", "Price tiers (the Price_Tier dropdown on Inputs)", "group")
    book.row(s, head + 1, ("tier", "what it is"), "header")
    book.merges.append((s, f"B{head + 1}:D{head + 1}"))
    for r, tier in enumerate(catalog.PRICE_TIERS, start=head + 2):
        book.put(s, f"A{r}", tier, "label")
        book.put(s, f"B{r}", TIER_MEANINGS[tier], "text")
        book.merges.append((s, f"B{r}:D{r}"))
    buy_head = head + 3 + len(catalog.PRICE_TIERS)
    buys: dict[str, Any] = {}  # a GPU's first purchase price: the one the look-up (and catalog.purchase_price) takes
    for p in catalog.prices():
        if p.capex_usd_per_gpu is not None:
            buys.setdefault(p.gpu, p)
    book.put(s, f"A{buy_head}", "Purchase prices per GPU (Capex_USD_per_GPU on Inputs, looked up by GPU_Type; a GPU "
             "with no row has no sourced price: type yours over Capex_USD_per_GPU)", "group")
    book.row(s, buy_head + 1, ("GPU id", "USD per GPU", "date", "price id", "source"), "header")
    buy_first = buy_head + 2
    for r, p in enumerate(buys.values(), start=buy_first):
        book.put(s, f"A{r}", p.gpu, "label")
        book.put(s, f"B{r}", p.capex_usd_per_gpu, "input", '"$"#,##0')
        book.row(s, r, (p.date or "undated", p.id), col="C")
        book.put(s, f"E{r}", p.source, "text")
    book.freeze[s] = "B4"
    return PriceTable(s, tuple(c[0] for c in PRICE_COLUMNS), FIRST, last, head + 2,
                      head + 1 + len(catalog.PRICE_TIERS), buy_first, buy_first + max(len(buys), 1) - 1)


# Scenario fields a framework and precision fill besides the recipe's bytes (xlcalc.frameworks.PROFILE_FIELDS)
FRAMEWORK_DERIVED = PROFILE_FIELDS[1:]
FRAMEWORK_SHEET = "Frameworks"
FRAMEWORK_MISSING = (": not on the Frameworks sheet \u2014 pick a Framework and one of the precisions it offers "
                     "there")


@dataclass(frozen=True)
class FrameworkTable:
    """The Frameworks sheet: the frameworks (the Framework dropdown, A:D), the precisions (the Precision dropdown,
    A:B) and the memory facts of each framework at each precision it offers, one row per fact: key
    ``framework|precision|input`` (A), framework, precision, input, value (E, empty where no source gives it),
    source (F)."""

    sheet: str
    first_row: int
    last_row: int
    precision_first: int
    precision_last: int
    fact_first: int
    fact_last: int

    def framework(self) -> Expr:
        """The framework in effect: Framework, or the default one where only Precision is picked (as the CLI)."""
        return if_(eq(Var("Framework"), ""), DEFAULT_FRAMEWORK, Var("Framework"))

    def precision(self) -> Expr:
        """The precision in effect: Precision, or the framework's usual one (column C) where it is left empty."""
        usual = Lookup(self.framework(), self.sheet, "A", "C", self.first_row, self.last_row)
        return if_(eq(Var("Precision"), ""), usual, Var("Precision"))

    def key(self, field: str, precision: Expr | None = None) -> Expr:
        return Concat(self.framework(), "|", precision if precision is not None else self.precision(), "|" + field)

    def neither(self) -> Expr:
        """TRUE while neither a framework nor a precision is picked: the typed numbers (today's defaults) stand."""
        return eq(Concat(Var("Framework"), Var("Precision")), "")

    def missing(self) -> Expr:
        """"<framework> at <precision>: not on the Frameworks sheet - ..." (what a look-up shows for a pair the sheet
        does not hold)."""
        return Concat(self.framework(), " at ", if_(eq(Var("Precision"), ""), "its usual precision", Var("Precision")),
                      FRAMEWORK_MISSING)

    def fact(self, field: str) -> Expr:
        """A memory input of the picked framework and precision; its neutral default (xlcalc.recipes.MEMORY_DEFAULTS)
        where the sheet leaves it empty (no source gives it), as ``xlcalc memory --framework`` takes it."""
        return IfError(LookupOr(self.key(field), self.sheet, "A", "E", self.fact_first, self.fact_last,
                                MEMORY_DEFAULTS[field]), self.missing())

    def recipe_bytes(self, field: str, recipes: Table) -> Expr:
        """Bytes per parameter (weights, gradients or optimizer states) of the picked framework's recipe, looked up
        on the Recipes sheet by the recipe id the Frameworks sheet gives."""
        recipe = Lookup(self.key("recipe"), self.sheet, "A", "E", self.fact_first, self.fact_last)
        column = RECIPE_FIELDS[field]
        return IfError(Lookup(recipe, recipes.sheet, recipes.col("id"), recipes.col(column), recipes.first_row,
                              recipes.last_row), self.missing())

    def pair(self, precision: Expr) -> Expr:
        """The row of the framework in effect at ``precision`` (an error where the sheet has none)."""
        return Lookup(self.key("recipe", precision), self.sheet, "A", "B", self.fact_first, self.fact_last)

    def offered(self) -> Expr:
        """The precisions the framework in effect offers, in words (column D)."""
        return Lookup(self.framework(), self.sheet, "A", "D", self.first_row, self.last_row)


def framework_sheet(book: Book) -> FrameworkTable:
    """The frameworks and precisions of xlcalc.frameworks, and each profile's memory facts with their sources."""
    s = FRAMEWORK_SHEET
    book.titled(s, "Frameworks and precisions: the memory inputs of the software you train with",
                "Picking a Framework (and a Precision) on Inputs fills the bytes per parameter (from the recipe "
                "it names, unless Recipe_Id is picked), Logits_Buffer_Bytes, Optimizer_Step_Bytes, Autocast_Copy_Bytes "
                "and Grads_Freed from the rows below; a number typed over one of them wins. An empty value: no source "
                "gives it, the memory model's neutral default applies. Both left empty: the typed numbers "
                f"({DEFAULT_FRAMEWORK} at its usual precision's values by default).")
    for j, (header, width) in enumerate((("framework (the Framework dropdown)", 44), ("what it is", 30),
                                         ("usual precision (Precision left empty)", 14), ("precisions offered", 22),
                                         ("value", 12), ("source", 220)), start=1):
        book.widths.setdefault(s, {})[coord(j, 1)[:-1]] = width
        if j <= 4:
            book.put(s, coord(j, 3), header, "header")
    for r, fw in enumerate(FRAMEWORKS, start=FIRST):
        book.put(s, f"A{r}", fw, "label")
        book.put(s, f"B{r}", FRAMEWORK_NAMES[fw], "text")
        book.row(s, r, (get_profile(fw).precision, ", ".join(FRAMEWORKS[fw])), col="C")
    last = FIRST + len(FRAMEWORKS) - 1
    head = last + 2
    book.put(s, f"A{head}", "Precisions (the Precision dropdown on Inputs)", "group")
    book.row(s, head + 1, ("precision", "what it is"), "header")
    for k, (pr, words) in enumerate(PRECISIONS.items()):
        book.put(s, f"A{head + 2 + k}", pr, "label")
        book.put(s, f"B{head + 2 + k}", words, "text")
    p_first, p_last = head + 2, head + 1 + len(PRECISIONS)
    head = p_last + 2
    book.put(s, f"A{head}", "Memory inputs by framework and precision (what Inputs looks up), each with its source",
             "group")
    book.row(s, head + 1, ("key (framework|precision|input)", "framework", "precision", "input", "value", "source"),
             "header")
    r = f_first = head + 2
    for profiles in FRAMEWORKS.values():
        for p in profiles.values():
            for field in PROFILE_FIELDS:
                book.row(s, r, (f"{p.framework}|{p.precision}|{field}", p.framework, p.precision, field))
                if field in p.facts:
                    value, source = p.facts[field]
                    book.put(s, f"E{r}", value, "input", '"TRUE";"TRUE";"FALSE"' if isinstance(value, bool) else None)
                    book.put(s, f"F{r}", source, "text")
                else:
                    neutral = MEMORY_DEFAULTS[field]
                    shown = ("TRUE" if neutral else "FALSE") if isinstance(neutral, bool) else f"{neutral:g}"
                    book.put(s, f"E{r}", None, "input")
                    book.put(s, f"F{r}", f"No source gives {p.framework}'s {field}: left empty, the memory model's "
                             f"neutral default ({shown}) applies", "text")
                r += 1
    book.freeze[s] = "B4"
    return FrameworkTable(s, FIRST, last, p_first, p_last, f_first, r - 1)


def references_sheet(book: Book) -> None:
    s = "References"
    book.titled(s, "Formulas and sources", "Every formula the workbook uses is one of these, rendered from xlcalc's "
                "registry (the same definitions as the Python library and the Excel functions).")
    book.row(s, 3, ("formula", "Excel function (add-in)", "what it computes", "unit", "equation", "source"), "header")
    for i, f in enumerate(sorted(all_formulas(), key=lambda f: (f.category, f.name)), start=4):
        book.row(s, i, (f.name, f.udf_name, f.summary, f.unit, f.equation, f.source), "text")
    book.freeze[s] = "A4"

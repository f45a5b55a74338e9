"""Worksheet functions that are not one registry formula (hand-written): catalog look-ups
and functions that spill a table.

    GPU_SPEC(gpu, field)     MODEL_SPEC(model, field)     one catalog value
    GPU_LIST()               MODEL_LIST()                 the catalogs: header row + one row each
    PLAN(model, gpu, ...)                                 the planner's best layouts, spilled
    LAYOUT_STEP_S, LAYOUT_MFU, LAYOUT_TOKENS_PER_S_PER_GPU   one given layout's step, as PLAN has it
    BUDGET_PLAN(budget_usd, usd_per_gpu_hour, ...)        what a budget buys: GPUs, GPU-hours, model, tokens

To add one more (e.g. a table that spills rows): write it below as an ordinary function with
the xlwings decorators, exactly like PLAN (``@func(category=CATEGORY)``, one ``@arg(...,
ndim=2, doc=...)`` per argument, ``@ret()``), add its name to ``TABLE_UDFS`` at the end of
this file, and run ``python scripts/make_udfs.py``: that imports it into ``udfs/xlcalc_udfs.py``
and into the xlwings Lite ``main.py``. A table is a list of rows (a header row first); xlwings
and Excel spill it as it is. Use ``one_cell`` for arguments that must be a single cell and
``InputError`` for anything the user must change.
"""

from __future__ import annotations

from typing import Any

from xlwings import arg, func, ret

from xlcalc import catalog
from xlcalc.errors import CatalogError, InputError
from xlcalc.inputs import spec
from xlcalc.planner import Settings, layout_prediction, plan, plan_table
from xlcalc.planner.defaults import default_global_batch_tokens
from xlcalc.planner.stacks import ALIASES, DEFAULT_STACK, PLANNER, STACKS, stack_choices, stack_id
from xlcalc.price_text import price_line
from xlcalc.recipes import MEMORY_DEFAULTS
from xlcalc.validate import check_value
from xlcalc_udf_runtime import CATEGORY, as_grid, broadcast, is_empty

# -- helpers ------------------------------------------------------------------------------------

def text(name: str, value: Any, allowed: str) -> str:
    """A text argument, required."""
    if is_empty(value):
        raise InputError(name, None, allowed, "the input is required; the cell is empty")
    if not isinstance(value, str):
        raise InputError(name, value, allowed)
    return value.strip()


def one_cell(name: str, value: Any) -> Any:
    """An argument that must be one cell: arrives as [[x]] (ndim=2). Empty -> None."""
    if (grid := as_grid(name, value)) is not None:
        if len(grid) != 1 or len(grid[0]) != 1:
            raise InputError(name, f"a {len(grid)}x{len(grid[0])} range", "a single cell")
        value = grid[0][0]
    return None if is_empty(value) else value


def _field(value: Any, fields: tuple[str, ...]) -> str:
    allowed = "one of " + ", ".join(fields)
    key = text("field", value, allowed).lower()
    if key not in fields:
        raise InputError("field", value, allowed)
    return key


def _spec_value(row: Any, field: str) -> Any:
    if (value := catalog.looked_up(row, field)) is None:
        raise ValueError(f"{row.name}: the catalog has no published {field} (left empty, never guessed)")
    return value


def _listing(rows: tuple, fields: tuple[str, ...]) -> list[list[Any]]:
    return [list(fields)] + [[catalog.looked_up(r, k) for k in fields] for r in rows]


def _gpu_one(cell: dict[str, Any]) -> Any:
    row = catalog.get_gpu(text("gpu", cell["gpu"], "a GPU name from GPU_LIST()"))
    return _spec_value(row, _field(cell["field"], catalog.GPU_FIELDS))


def _model_one(cell: dict[str, Any]) -> Any:
    row = catalog.get_model(text("model", cell["model"], "a model name from MODEL_LIST()"))
    return _spec_value(row, _field(cell["field"], catalog.MODEL_FIELDS))


# -- catalog look-ups ---------------------------------------------------------------------------

@func(category=CATEGORY)
@arg("gpu", ndim=2, doc="GPU name or alias, e.g. \"H100\" (see GPU_LIST())")
@arg("field", ndim=2, doc="Catalog field: " + ", ".join(catalog.GPU_FIELDS))
@ret()
def GPU_SPEC(gpu, field):
    """One value from the GPU catalog, e.g. GPU_SPEC("H100","bf16_tflops") (dense TFLOP/s) or GPU_SPEC("A800","memory_gb") (GB = 1e9 bytes). Names and aliases are case-insensitive; GPU_LIST() shows every GPU and field."""  # noqa: E501
    return broadcast(_gpu_one, {"gpu": gpu, "field": field})


@func(category=CATEGORY)
@arg("model", ndim=2, doc="Model name or alias (see MODEL_LIST())")
@arg("field", ndim=2, doc="Catalog field: " + ", ".join(catalog.MODEL_FIELDS))
@ret()
def MODEL_SPEC(model, field):
    """One value from the model catalog, e.g. MODEL_SPEC("llama-2-70b","layers"); params_b is derived from the architecture (billions). Names and aliases are case-insensitive; MODEL_LIST() shows every model and field."""  # noqa: E501
    return broadcast(_model_one, {"model": model, "field": field})


@func(category=CATEGORY)
@ret()
def GPU_LIST():
    """The GPU catalog as a spilled table: a header row of field names, then one row per GPU (dense TFLOP/s, GB = 1e9 bytes, sources). Empty cell = not published."""  # noqa: E501
    return _listing(catalog.gpus(), catalog.GPU_FIELDS)


@func(category=CATEGORY)
@ret()
def MODEL_LIST():
    """The model catalog as a spilled table: a header row of field names, then one row per model (architecture, parameters in billions derived from it, sources). Empty cell = not published."""  # noqa: E501
    return _listing(catalog.models(), catalog.MODEL_FIELDS)


# -- planner ------------------------------------------------------------------------------------

@func(category=CATEGORY)
@arg("model", ndim=2, doc="Model name from MODEL_LIST(), e.g. \"llama2-70b\"")
@arg("gpu", ndim=2, doc="GPU name from GPU_LIST(), e.g. \"H100\"")
@arg("n_gpus", ndim=2, doc="Number of GPUs in the cluster")
@arg("seq_len", ndim=2, doc="Sequence length (tokens); empty: the model's pre-training sequence length (model catalog), as xlcalc plan")
@arg("global_batch_tokens", ndim=2, doc="Tokens per optimizer step (global batch), e.g. 4194304; empty: the model's published pre-training batch where the model catalog has one, as xlcalc plan")
@arg("tokens_t", ndim=2, doc="Training tokens, trillions (empty: the model's published pre-training tokens, else 20 "
                              "per parameter)")
@arg("scaleout_gb_s", ndim=2, doc="Scale-out (InfiniBand) bandwidth per GPU, GB/s, where the catalog has none (e.g. 50)")
@arg("top", ndim=2, doc="How many plans to list (default 5)")
@arg("stack", ndim=2, doc="Software stack profile, one of " + ", ".join(STACKS) + ", a name it is known by ("
                          + ", ".join(ALIASES) + ") or " + PLANNER + " (the planner's own settings); empty: "
                          + DEFAULT_STACK + ", the default, and the assumed rows say so")
@ret()
def PLAN(model, gpu, n_gpus, seq_len=None, global_batch_tokens=None, tokens_t=None, scaleout_gb_s=None, top=5, stack=None):
    """Best parallel layouts (TP, PP, CP, EP, DP, ZeRO, recompute, micro-batch) that fit in GPU memory, fastest first, with memory per GPU, step time, predicted MFU, tokens/s per GPU, days, GPU-hours and cost, as xlcalc plan's table; spills a table, then a row per input assumed, then the best plan's range (range rows: MFU, days, GPU-hours and cost bounds from the validation's held-out errors)."""  # noqa: E501
    v = {k: one_cell(k, a) for k, a in locals().items()}  # the arguments by name
    model_name = text("model", v["model"], "a model name from MODEL_LIST()")
    gpu_name = text("gpu", v["gpu"], "a GPU name from GPU_LIST()")
    count = v["top"] if v["top"] is not None else 5
    if isinstance(count, bool) or not isinstance(count, (int, float)) or not 1 <= count <= 100 \
            or count != int(count):  # the range first: int() of an infinity or NaN would raise
        raise InputError("top", count, "a whole number from 1 to 100")
    count = int(count)
    given: dict = {}
    if v["scaleout_gb_s"] is not None:
        given["scaleout_gb_s"] = check_value("bandwidth_gb_s", v["scaleout_gb_s"], "scaleout_gb_s")
    if v["stack"] is not None:
        given["stack"] = text("stack", v["stack"], stack_choices())
        stack_id(given["stack"])  # an unknown name: its error lists the known ones; the name as typed is planned
        # with (an alias may name its own framework, as `xlcalc plan --stack` takes it)
    settings = Settings(**given)
    result = plan(model_name, gpu=gpu_name, n_gpus=check_value("n_gpus", v["n_gpus"]),
                  seq_len=_or_default("seq_len", v), global_batch_tokens=_or_default("global_batch_tokens", v),
                  tokens_t=v["tokens_t"], settings=settings, top=count)
    if not result.plans:
        why = result.rejected[0].reason if result.rejected else "no configuration fits in GPU memory"
        raise ValueError(f"no plan fits: {why}")
    return plan_table(result, count)


# -- one layout's step: the planner with every layout choice pinned ----------------------------------

_LAYOUT_ARGS = ("model", "gpu", "n_gpus", "seq_len", "global_batch_tokens", "tp", "pp", "zero_stage", "recompute",
                "micro_batch", "cp", "virtual_stages", "seq_parallel", "ep", "stack")
_LAYOUT_REQUIRED = {"model": "a model name from MODEL_LIST()", "gpu": "a GPU name from GPU_LIST()",
                    "n_gpus": "a number of GPUs"}


def _published_batch(model: Any) -> bool:
    """Whether the model a cell names has a published pre-training batch in the model catalog (plan's default)."""
    try:
        return isinstance(model, str) and default_global_batch_tokens(model) is not None
    except (InputError, CatalogError):
        return False  # an unknown model: plan names it


def _or_default(name: str, cells: dict[str, Any]) -> Any:
    """A run input's cell checked, or None where it is empty: plan's default for the model (its catalog's
    pre-training sequence length and published batch), which the spilled table lists as assumed."""
    return None if cells[name] is None else check_value(name, cells[name])


def _choice_doc(name: str) -> str:
    value = MEMORY_DEFAULTS[name]
    shown = str(value).upper() if isinstance(value, bool) else f'"{value}"' if isinstance(value, str) else value
    return spec(name).help()[:200] + f"; empty: one GPU's default, {shown}"


def _layout_plan(cells: dict[str, Any]) -> Any:
    """The planner's plan of the one layout the cells give (xlcalc.planner.layout_prediction); ``cells``: a layout
    function's arguments by name (its ``locals()``)."""
    v = {k: one_cell(k, cells[k]) for k in _LAYOUT_ARGS}
    lacking = [InputError(k, None, allowed, "the input is required; the cell is empty")
               for k, allowed in _LAYOUT_REQUIRED.items() if v[k] is None]
    if v["global_batch_tokens"] is None and not _published_batch(v["model"]):  # named with the other empty cells
        lacking.append(InputError("global_batch_tokens", None, "a number of tokens per step, e.g. 4194304",
                                  "the input is required (the model catalog has no published batch of this model); "
                                  "the cell is empty"))
    if lacking:
        raise InputError.all(lacking)
    return layout_prediction(
        text("model", v["model"], _LAYOUT_REQUIRED["model"]), gpu=text("gpu", v["gpu"], _LAYOUT_REQUIRED["gpu"]),
        n_gpus=check_value("n_gpus", v["n_gpus"]), seq_len=_or_default("seq_len", v),
        global_batch_tokens=_or_default("global_batch_tokens", v),
        stack=None if v["stack"] is None else text("stack", v["stack"], stack_choices()),
        **{k: v[k] for k in _LAYOUT_ARGS[5:-1]})


def _layout_args(fn: Any) -> Any:
    """The arguments every layout function takes, one ``@arg`` each: PLAN's run, then the layout's choices."""
    docs = {"model": "Model name from MODEL_LIST(), e.g. \"llama3.1-8b\"",
            "gpu": "GPU name from GPU_LIST(), e.g. \"H100\"", "n_gpus": "Number of GPUs in the cluster",
            "seq_len": "Sequence length (tokens); empty: the model's pre-training sequence length (model catalog), as xlcalc plan",
            "global_batch_tokens": "Tokens per optimizer step (global batch), e.g. 4194304; empty: the model's published pre-training batch where the model catalog has one, as xlcalc plan",
            "ep": "Expert-parallel size of a mixture of experts (required for one; empty for a dense model)",
            "stack": "Software stack profile, one of " + ", ".join(STACKS) + " or a name it is known by; empty: "
                     + DEFAULT_STACK + ", the default, as PLAN"}
    for name in reversed(_LAYOUT_ARGS):
        fn = arg(name, ndim=2, doc=docs.get(name) or _choice_doc(name))(fn)
    return fn


@func(category=CATEGORY)
@_layout_args
@ret()
def LAYOUT_STEP_S(model, gpu, n_gpus, seq_len=None, global_batch_tokens=None, tp=None, pp=None, zero_stage=None,
                  recompute=None, micro_batch=None, cp=None, virtual_stages=None, seq_parallel=None, ep=None,
                  stack=None):
    """Predicted seconds per optimizer step of one given layout (TP, PP, ZeRO, recompute, micro-batch, CP, ...), as PLAN and xlcalc plan give it for that layout pinned; empty layout cells: one GPU's defaults. An error says why a layout does not divide or fit."""  # noqa: E501
    return _layout_plan(locals()).step_s


@func(category=CATEGORY)
@_layout_args
@ret()
def LAYOUT_MFU(model, gpu, n_gpus, seq_len=None, global_batch_tokens=None, tp=None, pp=None, zero_stage=None, recompute=None,
               micro_batch=None, cp=None, virtual_stages=None, seq_parallel=None, ep=None, stack=None):
    """Predicted model FLOPs utilisation (a fraction of the GPUs' dense peak; attention and logits counted) of one given layout, as PLAN and xlcalc plan give it for that layout pinned: model FLOPs per step / (step time x GPUs x peak)."""  # noqa: E501
    return _layout_plan(locals()).mfu


@func(category=CATEGORY)
@_layout_args
@ret()
def LAYOUT_TOKENS_PER_S_PER_GPU(model, gpu, n_gpus, seq_len=None, global_batch_tokens=None, tp=None, pp=None,
                                zero_stage=None, recompute=None, micro_batch=None, cp=None, virtual_stages=None,
                                seq_parallel=None, ep=None, stack=None):
    """Predicted training throughput of one given layout, tokens per second per GPU (global batch tokens / step time / GPUs), as PLAN and xlcalc plan give it for that layout pinned."""  # noqa: E501
    return _layout_plan(locals()).tokens_per_s_per_gpu


LAYOUT_UDFS: tuple[str, ...] = ("LAYOUT_STEP_S", "LAYOUT_MFU", "LAYOUT_TOKENS_PER_S_PER_GPU")


# -- money ----------------------------------------------------------------------------------------

@func(category=CATEGORY)
@arg("budget_usd", ndim=2, doc="Budget for compute, USD [USD]")
@arg("usd_per_gpu_hour", ndim=2, doc="Price of one GPU-hour [USD/GPU-hour]")
@arg("peak_tflops", ndim=2, doc="Dense peak TFLOP/s of one GPU at the training precision [TFLOP/s per GPU]")
@arg("mfu", ndim=2, doc="Model FLOPs utilisation, a fraction of peak (0.4 = 40%)")
@arg("days", ndim=2, doc="Wall-clock days the run may take [days]")
@ret()
def BUDGET_PLAN(budget_usd, usd_per_gpu_hour, peak_tflops, mfu, days):
    """What a compute budget buys in a deadline: GPUs, GPU-hours, the compute-optimal model (billions of parameters) and its tokens (trillions) at 20 tokens per parameter and C = 6ND; spills [label, value, unit] rows."""  # noqa: E501
    v = {k: one_cell(k, a) for k, a in locals().items()}  # the arguments by name
    if missing := [k for k, x in v.items() if x is None]:
        raise InputError(", ".join(missing), None, "given (every input of BUDGET_PLAN is required)")
    from xlcalc.money import budget_plan_table  # (the money rows import the scenario: only when asked for)
    return budget_plan_table(**v)


# an argument whose input spec (xlcalc.inputs) has a longer name: GPU_PRICE's tier is the price_tier input
ARG_SPECS: dict[str, str] = {"tier": "price_tier"}


def _tier(value: Any) -> str | None:
    return None if is_empty(value) else text("tier", value, "a price tier: " + ", ".join(spec("price_tier").choices))


def _price_one(cell: dict[str, Any]) -> float:
    gpu = text("gpu", cell["gpu"], "a GPU name from GPU_LIST()")
    return catalog.rental_price(gpu, _tier(cell["tier"])).usd_per_gpu_hour


def _price_note_one(cell: dict[str, Any]) -> str:
    gpu = text("gpu", cell["gpu"], "a GPU name from GPU_LIST()")
    row = catalog.rental_price(gpu, _tier(cell["tier"]))  # raises the error naming the GPU and the tier
    return price_line(gpu, None, row.tier).removeprefix("Price: ")


@func(category=CATEGORY)
@arg("gpu", ndim=2, doc="GPU name or alias, e.g. \"H100\" (see GPU_LIST())")
@arg("tier", ndim=2, doc="Price tier: on-demand, reserved-1y, reserved-3y, spot, capacity-block or assumed; "
                         "empty = the GPU's default rate")
@ret()
def GPU_PRICE(gpu, tier=None):
    """Rental price of one GPU-hour from the price catalog at a tier, USD, e.g. GPU_PRICE("H100","spot"). A tier the catalog has no sourced price for is an error naming the GPU and the tier (never a guess); GPU_PRICE_NOTE says which row was used."""  # noqa: E501
    return broadcast(_price_one, {"gpu": gpu, "tier": tier})


@func(category=CATEGORY)
@arg("gpu", ndim=2, doc="GPU name or alias, e.g. \"H100\" (see GPU_LIST())")
@arg("tier", ndim=2, doc="Price tier: on-demand, reserved-1y, reserved-3y, spot, capacity-block or assumed; "
                         "empty = the GPU's default rate")
@ret()
def GPU_PRICE_NOTE(gpu, tier=None):
    """The price GPU_PRICE uses, in words, as the CLI and the workbook state it: "$4.916/GPU-hour, capacity-block tier, price catalog <row> (<date>)"."""  # noqa: E501
    return broadcast(_price_note_one, {"gpu": gpu, "tier": tier})


MONEY_UDFS: tuple[str, ...] = ("BUDGET_PLAN", "GPU_PRICE", "GPU_PRICE_NOTE")


# -- the list the generator reads (scripts/make_udfs.py) -------------------------------------------

CATALOG_UDFS: tuple[str, ...] = ("GPU_SPEC", "MODEL_SPEC", "GPU_LIST", "MODEL_LIST")
PLANNER_UDFS: tuple[str, ...] = ("PLAN",)
TABLE_UDFS: tuple[str, ...] = CATALOG_UDFS + PLANNER_UDFS + LAYOUT_UDFS + MONEY_UDFS
"""Every worksheet function of this file, in the order the generator imports them."""

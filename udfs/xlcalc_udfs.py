"""xlcalc as Excel worksheet functions, through xlwings.

Type ``=TRAIN_DAYS(70,2,312,1024,0.4)`` into a cell (76.08 days), point the
arguments at your own cells, or give a whole column of scenarios as one range
and the result spills, one row per scenario.

Every formula of the xlcalc registry becomes one worksheet function here,
automatically: name = the formula's ``udf_name``, arguments = its parameters in
order (those with a default are optional), description = ``udf_help``, argument
help = the input's description and unit. Nothing is computed in this file: each
function calls the registry formula, which validates its inputs. This file only
handles what Excel hands over:

* numbers arrive as floats (``1024.0`` GPUs is fine, ``2.5`` GPUs is rejected);
* an empty cell arrives as None and means the input's default (an error if the
  input has none); ``""`` counts as empty too;
* TRUE/FALSE arrive as booleans; text options are case-insensitive ("Selective");
* a range arrives as a list of lists: scalars are broadcast against it and the
  result is a list of lists of the same shape (a row of GPU counts against a
  column of model sizes gives a table). A bad row inside a range gives the text
  ``#VALUE! row 3, column 1: <message>`` in that cell and real numbers elsewhere;
  the same bad input given alone raises the error (the cell shows the message).

The same file works in both routes:

* classic xlwings add-in (Windows, free/BSD): name ``xlcalc_udfs`` under "UDF
  Modules" and click "Import Functions";
* xlwings Lite (Windows, Mac, Excel on the web, Python in the browser): paste it
  as ``main.py`` (``templates/lite/main.py`` is a copy).

Catalog look-ups: ``GPU_SPEC(gpu, field)``, ``MODEL_SPEC(model, field)``,
``GPU_LIST()`` and ``MODEL_LIST()`` (the last two spill a header row + one row
per catalog entry).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from xlwings import arg, func, ret

import xlcalc
from xlcalc import catalog
from xlcalc.errors import InputError
from xlcalc.inputs import spec

CATEGORY = "xlcalc"
ERROR_PREFIX = "#VALUE!"

__all__: list[str] = []  # filled below: every worksheet function of this module


# -- Excel realities: one cell -------------------------------------------------------

def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def _cell_values(formula: Any, values: dict[str, Any]) -> dict[str, Any]:
    """Empty cells -> the input's default; a required input left empty is an error."""
    out = {}
    for name, value in values.items():
        if _is_empty(value):
            if name not in formula.defaults:
                raise InputError(name, None, spec(name).allowed, "the input is required; the cell is empty")
            value = formula.defaults[name]
        out[name] = value
    return out


def _compute(formula: Any, values: dict[str, Any]) -> Any:
    """One scenario: the registry formula validates and computes."""
    try:
        result = formula(**_cell_values(formula, values))
    except ArithmeticError as exc:  # e.g. float overflow on absurd inputs
        raise ValueError(f"{formula.udf_name}: these inputs give no finite result ({exc})") from None
    if isinstance(result, float) and not math.isfinite(result):  # the registry already refuses these
        raise ValueError(f"{formula.udf_name}: these inputs give no finite result")
    return result


# -- Excel realities: ranges -----------------------------------------------------------

def _as_grid(name: str, value: Any) -> list[list[Any]] | None:
    """A range as a list of rows, or None for a single value. A flat list is a column."""
    if not isinstance(value, (list, tuple)):
        return None
    if len(value) == 0:
        raise ValueError(f"{name}: the range is empty")
    if all(isinstance(row, (list, tuple)) for row in value):
        rows = [list(row) for row in value]
        width = len(rows[0])
        if width == 0 or any(len(row) != width for row in rows):
            raise ValueError(f"{name}: the range must be rectangular")
        return rows
    if any(isinstance(item, (list, tuple)) for item in value):
        raise ValueError(f"{name}: the range must be a list of values or a list of rows")
    return [[item] for item in value]


def _shape(grids: dict[str, list[list[Any]]]) -> tuple[int, int]:
    rows = max(len(g) for g in grids.values())
    cols = max(len(g[0]) for g in grids.values())
    for name, g in grids.items():
        if len(g) not in (1, rows) or len(g[0]) not in (1, cols):
            shapes = ", ".join(f"{n} {len(x)}x{len(x[0])}" for n, x in grids.items())
            raise ValueError(
                f"{name}: ranges must have the same size, or one row / one column to repeat ({shapes})"
            )
    return rows, cols


def _error_text(exc: Exception, i: int, j: int) -> str:
    return f"{ERROR_PREFIX} row {i + 1}, column {j + 1}: {exc}"


def _broadcast(one: Callable[[dict[str, Any]], Any], values: dict[str, Any]) -> Any:
    """Call ``one`` per cell. All single values: one result (errors raise).
    Any range: a list of lists of the broadcast shape (a 1x1 range gives a single value)."""
    grids = {}
    for name, value in values.items():
        grid = _as_grid(name, value)
        if grid is not None:
            grids[name] = grid
    if not grids:
        return one(values)
    rows, cols = _shape(grids)
    if rows == cols == 1:
        return one({n: (grids[n][0][0] if n in grids else v) for n, v in values.items()})
    out = []
    for i in range(rows):
        line = []
        for j in range(cols):
            cell = {}
            for name, value in values.items():
                g = grids.get(name)
                cell[name] = value if g is None else g[i if len(g) > 1 else 0][j if len(g[0]) > 1 else 0]
            try:
                line.append(one(cell))
            except ValueError as exc:  # InputError and CatalogError are ValueErrors
                line.append(_error_text(exc, i, j))
        out.append(line)
    return out


# -- worksheet functions from the registry --------------------------------------------

def _evaluate_formula(formula: Any, args: tuple) -> Any:
    return _broadcast(lambda cell: _compute(formula, cell), dict(zip(formula.params, args)))


def _decorate(fn: Callable[..., Any], arg_docs: dict[str, str]) -> Callable[..., Any]:
    """Apply xlwings' decorators, as if written above the def:
    @func(category=...), then @arg(name, ndim=2, doc=...) per argument, then @ret().

    ``ndim=2`` makes every argument arrive as a list of rows (a single cell as
    [[x]]) so the shape of a range is known; results are a value or a list of
    lists, which dynamic-array Excel and xlwings Lite spill as they are."""
    fn = ret()(fn)
    for name in reversed(list(arg_docs)):
        fn = arg(name, ndim=2, doc=arg_docs[name][:255])(fn)
    return func(category=CATEGORY)(fn)


def _define(name: str, params: tuple[str, ...], defaults: dict[str, Any], doc: str,
            body: Callable[[tuple], Any], arg_docs: dict[str, str]) -> Callable[..., Any]:
    """A real Python function ``name(params...)`` (xlwings reads its signature and
    docstring) whose body is ``body(args_tuple)``."""
    sig = ", ".join(f"{p}=_defaults[{p!r}]" if p in defaults else p for p in params)
    packed = "(" + "".join(f"{p}, " for p in params) + ")"
    source = f"def {name}({sig}):\n    return _body({packed})\n"
    namespace: dict[str, Any] = {"_body": body, "_defaults": dict(defaults)}
    exec(compile(source, f"<xlcalc worksheet function {name}>", "exec"), namespace)  # noqa: S102
    fn = namespace[name]
    fn.__doc__ = doc
    fn.__module__ = __name__
    fn.__qualname__ = name
    fn = _decorate(fn, arg_docs)
    globals()[name] = fn
    __all__.append(name)
    return fn


def _define_formula(formula: Any) -> Callable[..., Any]:
    return _define(
        formula.udf_name, formula.params, formula.defaults, formula.udf_help,
        lambda args: _evaluate_formula(formula, args),
        {p: spec(p).help() for p in formula.params},
    )


FORMULA_UDFS: tuple[str, ...] = tuple(_define_formula(f).__name__ for f in xlcalc.all_formulas())


# -- catalog look-ups ------------------------------------------------------------------

def _text(name: str, value: Any, allowed: str) -> str:
    if _is_empty(value):
        raise InputError(name, None, allowed, "the input is required; the cell is empty")
    if not isinstance(value, str):
        raise InputError(name, value, allowed)
    return value.strip()


def _field(value: Any, fields: tuple[str, ...]) -> str:
    allowed = "one of " + ", ".join(fields)
    key = _text("field", value, allowed).lower()
    if key not in fields:
        raise InputError("field", value, allowed)
    return key


def _spec_value(row: Any, field: str) -> Any:
    value = getattr(row, field)
    if value is None:
        raise ValueError(f"{row.name}: the catalog has no published {field} (left empty, never guessed)")
    return value


def _gpu_one(cell: dict[str, Any]) -> Any:
    row = catalog.get_gpu(_text("gpu", cell["gpu"], "a GPU name from GPU_LIST()"))
    return _spec_value(row, _field(cell["field"], catalog.GPU_FIELDS))


def _model_one(cell: dict[str, Any]) -> Any:
    row = catalog.get_model(_text("model", cell["model"], "a model name from MODEL_LIST()"))
    return _spec_value(row, _field(cell["field"], catalog.MODEL_FIELDS))


def _listing(rows: tuple, fields: tuple[str, ...]) -> list[list[Any]]:
    return [list(fields)] + [[getattr(r, k) for k in fields] for r in rows]


_define(
    "GPU_SPEC", ("gpu", "field"), {},
    "One value from the GPU catalog, e.g. GPU_SPEC(\"H100\",\"bf16_tflops\") (dense TFLOP/s) or "
    "GPU_SPEC(\"A800\",\"memory_gb\") (GB = 1e9 bytes). Names and aliases are case-insensitive; "
    "GPU_LIST() shows every GPU and field.",
    lambda args: _broadcast(_gpu_one, dict(zip(("gpu", "field"), args))),
    {"gpu": "GPU name or alias, e.g. \"H100\" (see GPU_LIST())",
     "field": "Catalog field: " + ", ".join(catalog.GPU_FIELDS)},
)

_define(
    "MODEL_SPEC", ("model", "field"), {},
    "One value from the model catalog, e.g. MODEL_SPEC(\"llama-2-70b\",\"layers\"); params_b is "
    "derived from the architecture (billions). Names and aliases are case-insensitive; "
    "MODEL_LIST() shows every model and field.",
    lambda args: _broadcast(_model_one, dict(zip(("model", "field"), args))),
    {"model": "Model name or alias (see MODEL_LIST())",
     "field": "Catalog field: " + ", ".join(catalog.MODEL_FIELDS)},
)

_define(
    "GPU_LIST", (), {},
    "The GPU catalog as a spilled table: a header row of field names, then one row per GPU "
    "(dense TFLOP/s, GB = 1e9 bytes, sources). Empty cell = not published.",
    lambda args: _listing(catalog.gpus(), catalog.GPU_FIELDS),
    {},
)

_define(
    "MODEL_LIST", (), {},
    "The model catalog as a spilled table: a header row of field names, then one row per model "
    "(architecture, parameters in billions derived from it, sources). Empty cell = not published.",
    lambda args: _listing(catalog.models(), catalog.MODEL_FIELDS),
    {},
)

CATALOG_UDFS: tuple[str, ...] = ("GPU_SPEC", "MODEL_SPEC", "GPU_LIST", "MODEL_LIST")

# -- planner ----------------------------------------------------------------------------

def _one_cell(name: str, value: Any) -> Any:
    """A planner argument is one cell: arrives as [[x]] (ndim=2)."""
    grid = _as_grid(name, value)
    if grid is None:
        return value
    if len(grid) != 1 or len(grid[0]) != 1:
        raise InputError(name, f"a {len(grid)}x{len(grid[0]) if grid else 0} range", "a single cell")
    return grid[0][0]


_PLAN_PARAMS = ("model", "gpu", "n_gpus", "seq_len", "global_batch_tokens", "tokens_t", "scaleout_gb_s", "top")


def _plan(args: tuple) -> list[list[Any]]:
    from xlcalc.inputs import check_value
    from xlcalc.planner import Settings, plan, plan_table

    v = {k: _one_cell(k, a) for k, a in zip(_PLAN_PARAMS, args)}
    v = {k: (None if _is_empty(x) else x) for k, x in v.items()}
    model = _text("model", v["model"], "a model name from MODEL_LIST()")
    gpu = _text("gpu", v["gpu"], "a GPU name from GPU_LIST()")
    top = v["top"] if v["top"] is not None else 5
    if isinstance(top, bool) or not isinstance(top, (int, float)) or top != int(top) or not 1 <= top <= 100:
        raise InputError("top", top, "a whole number from 1 to 100")
    top = int(top)
    settings = Settings(scaleout_gb_s=check_value("bandwidth_gb_s", v["scaleout_gb_s"])) \
        if v["scaleout_gb_s"] is not None else Settings()
    if v["global_batch_tokens"] is None:
        raise InputError("global_batch_tokens", None, "a number of tokens per step, e.g. 4194304")
    result = plan(model, gpu=gpu, n_gpus=check_value("n_gpus", v["n_gpus"]),
                  seq_len=check_value("seq_len", v["seq_len"]),
                  global_batch_tokens=check_value("tokens", v["global_batch_tokens"]),
                  tokens_t=v["tokens_t"], settings=settings, top=top)
    if not result.plans:
        why = result.rejected[0].reason if result.rejected else "no configuration fits in GPU memory"
        raise ValueError(f"no plan fits: {why}")
    return plan_table(result, top)


_define(
    "PLAN", _PLAN_PARAMS, {"tokens_t": None, "scaleout_gb_s": None, "top": 5},
    "Best parallel layouts (TP, PP, DP, ZeRO, recompute, micro-batch) that fit in GPU memory, fastest first, "
    "with memory per GPU, step time, predicted MFU, tokens/s per GPU, days and cost; spills a table.",
    _plan,
    {"model": "Model name from MODEL_LIST(), e.g. \"llama2-70b\"",
     "gpu": "GPU name from GPU_LIST(), e.g. \"H100\"",
     "n_gpus": "Number of GPUs in the cluster",
     "seq_len": "Sequence length (tokens)",
     "global_batch_tokens": "Tokens per optimizer step (global batch), e.g. 4194304",
     "tokens_t": "Training tokens, trillions (empty: 20 tokens per parameter)",
     "scaleout_gb_s": "Scale-out (InfiniBand) bandwidth per GPU, GB/s, where the catalog has none (e.g. 50)",
     "top": "How many plans to list (default 5)"},
)

PLANNER_UDFS: tuple[str, ...] = ("PLAN",)

UDF_NAMES: tuple[str, ...] = FORMULA_UDFS + CATALOG_UDFS + PLANNER_UDFS

"""Layouts checked once, for every face: does a parallel layout split the model and the batch into whole pieces?

Each :data:`CONSTRAINTS` entry names the input it blames, when it applies, the condition, and the words
of the message. The same table gives

* :func:`check_layout` — Python, the CLI and the planner: raises :class:`~xlcalc.errors.InputError` for
  the first violated constraint;
* :func:`layout_message` — the same message as text (:data:`LAYOUT_OK` when the layout is whole), written with the
  helpers of :mod:`xlcalc.expr` so that the registered formula ``LAYOUT_MESSAGE`` renders it for the
  workbook (``IF`` and ``&``) and the worksheet functions.

A violation is never a number and never "does not fit in memory": it is this message.

Inputs (input-spec names): ``hidden, heads, kv_heads, layers, pp, first_stage_layers, last_stage_layers,
tp, cp, dp, cluster_gpus, dp_shard, experts, ep, seq_len, micro_batch, batch_sequences, virtual_stages``. ``cluster_gpus``
(0 = not given) checks GPUs = TP x PP x CP x DP and sets DP; ``batch_sequences`` (0 = not given) checks
the global batch against DP x micro-batch; ``first_stage_layers`` / ``last_stage_layers`` (0 = even)
describe an uneven pipeline split whose middle stages share the remaining layers evenly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .expr.excel import as_text
from .expr.functions import and_, ceiling, concat, eq, floor_int, if_, max_, not_, or_, round_
from .expr.nodes import is_expr
from .recipes import MEMORY_DEFAULTS

__all__ = ["LAYOUT_OK", "CONSTRAINTS", "LAYOUT_INPUTS", "LAYOUT_DEFAULTS", "check_layout", "check_replicas", "check_stages", "layout_message", "stage_layer_counts",
           "LAYOUT_STEPS", "data_parallel", "parse_layers_per_stage", "stage_split", "preset_stage_ends", "layout_blamed"]

LAYOUT_OK = "OK"  # the message of a layout that splits into whole pieces

# Inputs of the check with the value meaning "not given / no constraint": a layout input's is its one default
# (xlcalc.recipes.MEMORY_DEFAULTS: one GPU, an even split); the rest are 0 = not given (kv_heads: = heads), EP 1.
_M = MEMORY_DEFAULTS
LAYOUT_DEFAULTS: dict[str, Any] = {
    "kv_heads": 0, "first_stage_layers": _M["first_stage_layers"], "last_stage_layers": _M["last_stage_layers"],
    "tp": _M["tp"], "pp": _M["pp"], "cp": _M["cp"], "dp": _M["dp"], "cluster_gpus": 0, "dp_shard": _M["dp_shard"],
    "experts": 0, "ep": 1, "micro_batch": _M["micro_batch"], "batch_sequences": 0,
    "virtual_stages": _M["virtual_stages"],
}
LAYOUT_INPUTS = ("hidden", "heads", "layers", "seq_len", *LAYOUT_DEFAULTS)

V = Mapping[str, Any]


def _divides(divisor: Any, n: Any) -> Any:
    """n is a whole multiple of divisor (INT(ROUND(n/divisor, 9))*divisor = n)."""
    return eq(floor_int(n / divisor) * divisor, n)


def data_parallel(v: V) -> Any:
    """DP: given, or GPUs / (TP x PP x CP) when the cluster size is given."""
    return if_(v["cluster_gpus"] > 0, v["cluster_gpus"] / (v["tp"] * v["pp"] * v["cp"]), v["dp"])


def _given_ends(v: V) -> Any:
    """End stages whose layers are given (0, 1 or 2)."""
    if "given_ends" in v:
        return v["given_ends"]
    return if_(v["first_stage_layers"] > 0, 1, 0) + if_(v["last_stage_layers"] > 0, 1, 0)


def _middle_stages(v: V) -> Any:
    """Stages that share the layers not given to an end stage explicitly."""
    if "middle_stages" in v:
        return v["middle_stages"]
    return v["pp"] - _given_ends(v)


def _rest_layers(v: V) -> Any:
    """Layers not given to an end stage explicitly."""
    if "rest_layers" in v:
        return v["rest_layers"]
    return v["layers"] - v["first_stage_layers"] - v["last_stage_layers"]


def _middle_stage_layers(v: V) -> Any:
    """Layers of a middle stage: L/p, or the rest layers shared evenly by the middle stages of an uneven split."""
    if "middle_stage_layers" in v:
        return v["middle_stage_layers"]
    shared = _rest_layers(v) / max_(_middle_stages(v), 1)
    return if_(and_(v["pp"] > 1, _given_ends(v) > 0), shared, v["layers"] / v["pp"])


# Steps of the check that its constraints use several times, each declared once above. A caller may give any of them
# in the values (numbers or expressions: the workbook's Parallelism row gives the cells that hold them, each computed
# by the function here over the steps before it), else each is computed where it is used.
LAYOUT_STEPS: dict[str, Callable[[V], Any]] = {
    "given_ends": _given_ends, "middle_stages": _middle_stages, "rest_layers": _rest_layers,
    "middle_stage_layers": _middle_stage_layers,
}


def stage_layer_counts(v: V) -> tuple[Any, Any, Any]:
    """(first, middle, last) stage layers: even L/p, or the given end stages and the rest shared evenly."""
    middle = _middle_stage_layers(v)
    first = if_(eq(v["pp"], 1), v["layers"], if_(v["first_stage_layers"] > 0, v["first_stage_layers"], middle))
    last = if_(eq(v["pp"], 1), v["layers"], if_(v["last_stage_layers"] > 0, v["last_stage_layers"], middle))
    return first, middle, last


def preset_stage_ends(layers: Any, pp: Any) -> tuple[Any, Any]:
    """(first_stage_layers, last_stage_layers) a catalog model gets on ``pp`` pipeline stages: (0, 0), an even
    split, when ``pp`` divides ``layers``; otherwise every middle stage holds ceil(L/p) layers and the first and the
    last stage share the rest, the last one the fewer (it also holds the output layer and the loss); where that
    leaves the ends under 2 layers (70 layers on 16 stages), every middle stage holds floor(L/p) and the ends more
    (7, 4 x 14, 7).

    Where Meta's Llama 3 split applies this is that split (Dubey et al. 2024, §3.3.2: 126 layers on 16 stages,
    one layer fewer on the first and the last: 7, 8 x 14, 7; the planner's ``uneven_stages``): L + 2 = k*p gives
    k - 1, k x (p - 2), k - 1 and L + 1 = k*p gives k, ..., k, k - 1. Elsewhere (61 layers on 4 stages: 15, 16, 16,
    14) it is the split of the same shape. (0, 0) for more stages than layers: the layout check then names PP.
    Numbers or expressions (the workbook's look-up of a model preset's split).
    """
    up = ceiling(layers / pp, 1)
    middle = if_(layers - (pp - 2) * up < 2, floor_int(layers / pp), up)  # no such split: the ends hold more
    rest = layers - (pp - 2) * middle
    whole = or_(eq(pp, 1), _divides(pp, layers), middle < 1)
    return if_(whole, 0, ceiling(rest / 2, 1)), if_(whole, 0, floor_int(rest / 2))


def _r2(x: Any) -> Any:
    return round_(x, 2)


@dataclass(frozen=True)
class Constraint:
    key: str                              # a short id (tests, docs)
    name: str                             # the input the message blames
    violated: Callable[[V], Any]          # true when the layout breaks the constraint
    allowed: Callable[[V], tuple[Any, ...]]  # words and values: what the input must be
    detail: Callable[[V], tuple[Any, ...]]   # why, with the offending arithmetic


CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint("heads_hidden", "heads", lambda v: not_(_divides(v["heads"], v["hidden"])),
               lambda v: ("a divisor of hidden = ", v["hidden"]),
               lambda v: ("the head size hidden/heads = ", _r2(v["hidden"] / v["heads"]), " is not a whole number")),
    Constraint("kv_heads", "kv_heads",
               lambda v: and_(v["kv_heads"] > 0, not_(_divides(max_(v["kv_heads"], 1), v["heads"]))),
               lambda v: ("a divisor of heads = ", v["heads"]),
               lambda v: ("each key/value head serves a whole group of query heads",)),
    Constraint("tp_heads", "tp", lambda v: not_(_divides(v["tp"], v["heads"])),
               lambda v: ("a divisor of heads = ", v["heads"]),
               lambda v: ("tensor parallelism splits whole attention heads: heads/TP = ", _r2(v["heads"] / v["tp"]))),
    Constraint("tp_kv_heads", "tp", lambda v: and_(v["kv_heads"] > 0, not_(_divides(v["tp"], max_(v["kv_heads"], 1)))),
               lambda v: ("a divisor of kv_heads = ", v["kv_heads"]),
               lambda v: ("tensor parallelism splits whole key/value heads: kv_heads/TP = ",
                          _r2(v["kv_heads"] / v["tp"]))),
    Constraint("pp_layers", "pp", lambda v: and_(eq(_given_ends(v), 0), not_(_divides(v["pp"], v["layers"]))),
               lambda v: ("a divisor of layers = ", v["layers"]),
               lambda v: ("every pipeline stage holds whole layers: layers/PP = ", _r2(v["layers"] / v["pp"]),
                          "; or give an uneven split: layers_per_stage, or first_stage_layers and last_stage_layers")),
    Constraint("uneven_split", "pp",
               lambda v: and_(v["pp"] > 1, _given_ends(v) > 0, or_(
                   and_(eq(_middle_stages(v), 0), not_(eq(_rest_layers(v), 0))),
                   and_(_middle_stages(v) > 0, or_(_rest_layers(v) < _middle_stages(v), not_(
                       _divides(max_(_middle_stages(v), 1), max_(_rest_layers(v), 1))))))),
               lambda v: ("a stage count whose middle stages share the layers left by first_stage_layers = ",
                          v["first_stage_layers"], " and last_stage_layers = ", v["last_stage_layers"], " evenly"),
               lambda v: (v["layers"], " layers - ", v["first_stage_layers"] + v["last_stage_layers"], " = ",
                          _rest_layers(v), " layers over ", _middle_stages(v), " other stages")),
    Constraint("virtual_stages_pp", "virtual_stages", lambda v: and_(v["virtual_stages"] > 1, eq(v["pp"], 1)),
               lambda v: ("1 with pp = 1",),
               lambda v: ("an interleaved schedule splits pipeline stages into chunks: one stage has nothing to "
                          "interleave",)),
    Constraint("virtual_stages_layers", "virtual_stages",
               lambda v: and_(v["virtual_stages"] > 1, v["pp"] > 1,
                              not_(_divides(v["virtual_stages"], max_(_middle_stage_layers(v), 1)))),
               lambda v: ("a divisor of the layers of a middle pipeline stage = ", _r2(_middle_stage_layers(v))),
               lambda v: ("an interleaved schedule splits every stage into virtual_stages chunks of whole layers: ",
                          _r2(_middle_stage_layers(v)), "/virtual_stages = ",
                          _r2(_middle_stage_layers(v) / v["virtual_stages"]))),
    Constraint("cp_seq", "cp", lambda v: not_(_divides(v["cp"], v["seq_len"])),
               lambda v: ("a divisor of seq_len = ", v["seq_len"]),
               lambda v: ("context parallelism splits the sequence into whole pieces: seq_len/CP = ",
                          _r2(v["seq_len"] / v["cp"]))),
    Constraint("gpus_replicas", "n_gpus",
               lambda v: and_(v["cluster_gpus"] > 0,
                              not_(_divides(v["tp"] * v["pp"] * v["cp"], max_(v["cluster_gpus"], 1)))),
               lambda v: ("a multiple of TP x PP x CP = ", v["tp"] * v["pp"] * v["cp"]),
               lambda v: ("data parallelism needs whole model replicas: GPUs/(TP x PP x CP) = ",
                          _r2(v["cluster_gpus"] / (v["tp"] * v["pp"] * v["cp"])))),
    Constraint("dp_shard", "dp_shard",
               lambda v: and_(v["dp_shard"] > 0, not_(_divides(max_(v["dp_shard"], 1), data_parallel(v)))),
               lambda v: ("a divisor of DP = ", _r2(data_parallel(v))),
               lambda v: ("ZeRO/FSDP shards the states over whole groups of the data-parallel ranks",)),
    Constraint("experts_ep", "ep", lambda v: and_(v["experts"] > 0, not_(_divides(v["ep"], max_(v["experts"], 1)))),
               lambda v: ("a divisor of experts = ", v["experts"]),
               lambda v: ("expert parallelism gives every GPU whole experts: experts/EP = ",
                          _r2(v["experts"] / v["ep"]))),
    Constraint("ep_dp", "ep",
               lambda v: and_(v["ep"] > 1, not_(_divides(v["ep"], max_(data_parallel(v) * v["cp"] * v["tp"], 1)))),
               lambda v: ("a divisor of TP x CP x DP = ", _r2(data_parallel(v) * v["cp"] * v["tp"])),
               lambda v: ("the expert-parallel group is carved out of the tensor-, context- and data-parallel GPUs "
                          "of a stage (Megatron-Core: EP x expert-TP x expert-DP = TP x CP x DP)",)),
    Constraint("batch_dp", "global_batch",
               lambda v: and_(v["batch_sequences"] > 0,
                              not_(_divides(data_parallel(v) * v["micro_batch"], max_(v["batch_sequences"], 1)))),
               lambda v: ("a multiple of DP x micro-batch = ", _r2(data_parallel(v)), " x ", v["micro_batch"], " = ",
                          _r2(data_parallel(v) * v["micro_batch"])),
               lambda v: ("every data-parallel rank runs whole micro-batches",)),
)


def _value_of(c: Constraint, v: V) -> Any:
    return {"n_gpus": v["cluster_gpus"], "global_batch": v["batch_sequences"]}.get(c.name, v.get(c.name))


def _complete(values: V) -> dict[str, Any]:
    v = {**LAYOUT_DEFAULTS, **{k: x for k, x in values.items() if x is not None}}
    if missing := [k for k in LAYOUT_INPUTS if k not in v]:
        raise TypeError(f"layout check needs {', '.join(missing)}")
    return v


def layout_message(values: V) -> Any:
    """The message of the first violated constraint, LAYOUT_OK for a whole layout (numbers or an expression)."""
    v = _complete(values)
    out: Any = LAYOUT_OK
    for c in reversed(CONSTRAINTS):
        text = concat(c.name, " = ", _value_of(c, v), " is not allowed: ", c.name, " must be ", *c.allowed(v),
                      " (", *c.detail(v), ")")
        out = if_(c.violated(v), text, out)
    return out


def layout_blamed(values: V, where: Mapping[str, Any], none: Any = "") -> Any:
    """``where[name]`` of the input the first violated constraint blames (its ``name``, as in the message), ``none``
    for a whole layout, "" for an input ``where`` does not list (numbers or an expression)."""
    v = _complete(values)
    out: Any = none
    for c in reversed(CONSTRAINTS):
        out = if_(c.violated(v), where.get(c.name, ""), out)
    return out


def check_replicas(n_gpus: int, tp: int = _M["tp"], pp: int = _M["pp"], cp: int = _M["cp"]) -> None:
    """The GPUs-by-TP x PP x CP constraint alone (for DATA_PARALLEL_SIZE)."""
    _raise_if(next(c for c in CONSTRAINTS if c.key == "gpus_replicas"),
              {**LAYOUT_DEFAULTS, "tp": tp, "pp": pp, "cp": cp, "cluster_gpus": n_gpus})


def check_stages(layers: int, pp: int = _M["pp"], first_stage_layers: int = _M["first_stage_layers"],
                 last_stage_layers: int = _M["last_stage_layers"]) -> None:
    """The pipeline-split constraints alone (for STAGE_LAYERS): whole layers on every stage."""
    v = {**LAYOUT_DEFAULTS, "layers": layers, "pp": pp, "first_stage_layers": first_stage_layers,
         "last_stage_layers": last_stage_layers}
    for c in CONSTRAINTS:
        if c.key in ("pp_layers", "uneven_split"):
            _raise_if(c, v)


def _raise_if(c: Constraint, v: V) -> None:
    if c.violated(v):
        raise InputError(c.name, _value_of(c, v), "".join(as_text(p) for p in c.allowed(v)),
                         "".join(as_text(p) for p in c.detail(v)))


def check_layout(**values: Any) -> None:
    """Raise :class:`InputError` naming the first constraint a layout breaks (inputs as in :data:`LAYOUT_INPUTS`)."""
    v = _complete(values)
    if any(is_expr(x) for x in v.values()):
        raise TypeError("check_layout takes numbers; layout_message builds the expression")
    for c in CONSTRAINTS:
        _raise_if(c, v)


def parse_layers_per_stage(text: Any) -> list[int]:
    """``"27,27,26"`` (or a list) as layers per pipeline stage: whole numbers >= 1, one per stage."""
    parts = [s for x in (text.split(",") if isinstance(text, str) else text) if (s := str(x).strip())]
    if not parts or not all(re.fullmatch(r"[0-9]{1,6}", x) and int(x) > 0 for x in parts):
        raise InputError("layers_per_stage", text, "whole numbers >= 1 separated by commas, one per pipeline stage")
    return [int(x) for x in parts]


def stage_split(layers_per_stage: Any, layers: int, pp: int | None = None) -> dict[str, int]:
    """An explicit pipeline split as the layout inputs every face takes: ``pp``, ``first_stage_layers`` and
    ``last_stage_layers`` (0 and 0 for an even split).

    The split must add up to the model's layers, have ``pp`` stages when PP is given too, and hold equal layers on
    its middle stages: the stage model (and this check) describe a pipeline by its first, its last and its middle
    stages (27, 27, 26 and 7, 8 x 14, 7 are such splits; 20, 30, 10, 20 is not). Raises :class:`InputError`.
    """
    stages = parse_layers_per_stage(layers_per_stage)
    text = ",".join(map(str, stages))
    if sum(stages) != layers:
        raise InputError("layers_per_stage", text, f"layers per stage adding up to the model's {layers} layers",
                         " + ".join(map(str, stages)) + f" = {sum(stages)}")
    if pp is not None and pp != len(stages):
        raise InputError("pp", pp, f"the number of stages given in layers_per_stage ({len(stages)}: {text})")
    if len(set(stages[1:-1])) > 1:
        raise InputError("layers_per_stage", text, "a split whose middle stages hold equal layers",
                         "the memory model describes a pipeline by its first, its last and its middle stages")
    ends = (0, 0) if len(set(stages)) == 1 else (stages[0], stages[-1])  # an even split: no ends of their own
    return {"pp": len(stages), "first_stage_layers": ends[0], "last_stage_layers": ends[1]}

"""The ONE adapter between a run's query and the planner's step-time model.

Only this module knows the planner's API. :func:`capabilities` reads from it what the model can express
(FP8, context parallelism, expert parallelism, uneven stages), so the validation grows with the planner.
"""

from __future__ import annotations

import inspect
from copy import copy
from dataclasses import dataclass, field
from typing import Any, Optional

from ..planner import Settings, plan
from ..planner import steptime as pst
from ..planner.stacks import PLANNER
from ..planner.steptime import arch_from_model
from ..registry import numeric
from .runs import Query

# Matmul efficiencies at which every run is predicted once; calibration interpolates between them.
GRID_STEP = 0.05
GRID = [round(0.30 + GRID_STEP * i, 2) for i in range(15)]  # 0.30 ... 1.00
REFERENCE_EFFICIENCY = 0.70  # efficiency at which the planner chooses what a source leaves unstated
# Non-matmul time factors (Settings.elementwise_factor: the counted HBM traffic of norms, activations, residuals
# and the loss x this factor at peak bandwidth, i.e. bytes moved / bytes counted over achieved / peak bandwidth)
# at which every run is predicted; the calibration picks one, shared by all stacks, on the other sources.
FACTOR_GRID = [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0]
# predict() copies one checked Settings to each grid point without checking it again: the grids must pass the checks
assert all(0 < e <= 1 for e in GRID) and all(f >= 0 for f in FACTOR_GRID)


LACKS = "the step-time model has no "  # how every reason of unsupported() begins


def capabilities() -> frozenset[str]:
    """What the planner's step-time model can express, read from its API (grows as the planner does)."""
    return frozenset(inspect.signature(plan).parameters).intersection(("fp8", "cp", "ep", "stage_layers"))


def unsupported(q: Query, caps: frozenset[str]) -> Optional[str]:
    """Why the model in this version cannot predict ``q``, or None."""
    needs = []
    if q.precision == "fp8" and "fp8" not in caps:
        needs.append("FP8 matmuls")
    if q.precision == "fp4":
        needs.append("FP4 (NVFP4) matmuls")
    if q.cp > 1 and "cp" not in caps:
        needs.append("context parallelism")
    if q.moe and "ep" not in caps:
        needs.append("MoE expert parallelism (all-to-all, expert-sharded gradients)")
    if q.stage_layers and "stage_layers" not in caps:
        needs.append(f"uneven pipeline stages ({q.model.layers} layers on PP{q.pp})")
    return (LACKS + ", no ".join(needs)) if needs else None


@dataclass
class Curve:
    """A run's predicted tokens/s per GPU at each efficiency of GRID, and the configuration predicted."""

    tokens_s: list[float]           # at non-matmul factor 1
    config: str
    fits: bool                      # the planner's memory model lets the configuration fit
    by_factor: dict = field(default_factory=dict)  # non-matmul factor of FACTOR_GRID -> tokens/s at each of GRID

    def at(self, factor: float) -> list[float]:
        return self.by_factor.get(factor, self.tokens_s)


def _settings(q: Query, eff: float, factor: float = 1.0) -> Settings:
    """The run's settings: its pinned facts over the planner's own settings (stack 'planner': a query's settings
    are its profile's facts as the validation states them, never a default stack's), unless it names a stack."""
    return Settings(**{"stack": PLANNER, **dict(q.settings), "matmul_efficiency": eff, "elementwise_factor": factor})


def predict(q: Query, caps: frozenset[str] | None = None) -> Curve:
    """THE adapter: the planner's prediction of run ``q`` at every matmul efficiency of :data:`GRID`.

    What the source states is pinned; what it leaves unstated (micro-batch, recompute, ZeRO stage,
    sequence parallelism, interleaving) is the planner's best choice at :data:`REFERENCE_EFFICIENCY`. When
    the planner's memory model lets no configuration fit (the run did run), the pinned configuration is
    evaluated with the most frugal unstated choices and flagged. Raises InputError/CatalogError when the
    planner refuses the query.
    """
    label, fits, by_factor = _predict(q, caps, FACTOR_GRID)
    return Curve(tokens_s=by_factor[1.0], config=label, fits=fits, by_factor=by_factor)


def predict_at(q: Query, caps: frozenset[str] | None, factor: float) -> list[float]:
    """``predict(q, caps).at(factor)``, the planner's tokens/s at every efficiency of :data:`GRID`, computed at that
    non-matmul factor only."""
    return _predict(q, caps, [factor])[2][factor]


def _predict(q: Query, caps: frozenset[str] | None, factors: list[float]) -> tuple[str, bool, dict[float, list[float]]]:
    """:func:`predict`'s configuration label, whether it fits, and tokens/s per GPU at each efficiency of GRID by
    non-matmul factor, at ``factors``."""
    caps = capabilities() if caps is None else caps
    arch = arch_from_model(q.model)
    pins: dict[str, Any] = dict(tp=q.tp, pp=q.pp, zero_stage=q.zero_stage, recompute=q.recompute, micro_batch=q.micro_batch,
                seq_parallel=q.seq_parallel, virtual_stages=q.virtual_stages)
    extra: dict[str, Any] = {k: v for k, v in dict(cp=q.cp, fp8=q.precision == "fp8", ep=q.ep).items() if k in caps}
    if "stage_layers" in caps and q.stage_layers:
        extra["stage_layers"] = list(q.stage_layers)
    if "ep" in caps and q.etp:
        extra["etp"] = q.etp
    res = plan(arch=arch, gpu=q.gpu, n_gpus=q.n_gpus, seq_len=q.seq_len, global_batch_tokens=q.global_batch * q.seq_len,
               tokens_t=1, top=1, settings=_settings(q, REFERENCE_EFFICIENCY), **pins, **extra)
    fields: dict[str, Any] = dict(tp=q.tp, pp=q.pp, dp=q.dp)
    if res.plans:
        best = res.plans[0]
        fields.update(zero_stage=best.zero_stage, seq_parallel=best.seq_parallel, recompute=best.recompute,
                      micro_batch=best.micro_batch, virtual_stages=best.virtual_stages)
        label, fits = best.label(), True
    else:
        fields.update(zero_stage=q.zero_stage if q.zero_stage is not None else (1 if q.dp > 1 else 0),
                      seq_parallel=q.seq_parallel if q.seq_parallel is not None else q.tp > 1,
                      recompute=q.recompute or "full", micro_batch=q.micro_batch or 1,
                      virtual_stages=q.virtual_stages or 1)
        label, fits = None, False
    config_params = inspect.signature(pst.Config).parameters
    for k, v in extra.items():
        if k in config_params:
            fields[k] = tuple(v) if k == "stage_layers" else v
    cfg = pst.Config(**fields)
    if label is None:
        label = (f"TP={cfg.tp}, PP={cfg.pp}, DP={cfg.dp}, ZeRO-{cfg.zero_stage}{', SP' if cfg.seq_parallel else ''}, "
                 f"recompute {cfg.recompute}, micro-batch {cfg.micro_batch}"
                 + (f", v={cfg.virtual_stages}" if cfg.virtual_stages > 1 else ""))
    # _settings(q, eff, factor) at every point of the grid, the stack's and the run's facts merged and checked once:
    # only the two grid fields differ, and both grids lie within their fields' bounds (checked below the grids)
    base = _settings(q, REFERENCE_EFFICIENCY)
    hardware = {eff: pst.resolve_hardware(q.gpu, base.model_copy(update={"matmul_efficiency": eff}), n_gpus=q.n_gpus)
                for eff in GRID}  # reads no factor
    # pst.evaluate at every point of the grid: its memory part reads neither grid field (nor the hardware's
    # efficiency), so it is computed once and each point's step time filled into a copy of it
    with numeric():
        memory = pst.memory(arch, hardware[REFERENCE_EFFICIENCY], base, cfg, q.seq_len // cfg.cp,
                            pst.microbatches_per_step(cfg, q.global_batch))

    def tokens_s(eff: float, factor: float) -> float:
        st = base.model_copy(update={"matmul_efficiency": eff, "elementwise_factor": factor})
        with numeric():
            return pst.timing(copy(memory), arch, hardware[eff], st, q.seq_len, q.global_batch).tokens_per_s_per_gpu

    return label, fits, {factor: [tokens_s(eff, factor) for eff in GRID] for factor in factors}

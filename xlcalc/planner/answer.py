"""The planner's answer: a plan (one configuration with its predicted memory and time), a configuration left out
and why, an input assumed, a layout on another stack, the whole result, and the result as a spillable table."""

from __future__ import annotations

from itertools import groupby
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from .compare import PlanComparison
from .ranges import PredictionRange
from .settings import Settings

__all__ = ["Assumed", "Plan", "PlanResult", "Rejection", "StackOutcome", "PLAN_COLUMNS", "RANGE_ROWS", "plan_table"]


class Plan(BaseModel):
    """One configuration with its predicted memory and time."""

    model_config = ConfigDict(frozen=True)

    tp: int
    pp: int
    dp: int
    zero_stage: int
    seq_parallel: bool
    recompute: str
    micro_batch: int
    virtual_stages: int
    microbatches: int
    cp: int = 1
    stage_layers: Optional[list[int]] = Field(default=None, description="layers of each pipeline stage when uneven")
    fp8: bool = False
    ep: int = Field(default=1, description="expert parallelism: each MoE layer's experts split over ep GPUs")
    etp: int = Field(default=0, description="expert tensor parallelism (0: = TP; 1: whole experts, EP spans TP)")
    optimizer_offload: bool = Field(default=False, description="optimizer states and step in CPU memory")
    memory_gb: float
    fits: bool
    weights_gb: float
    grads_gb: float
    optimizer_gb: float
    zero3_buffer_gb: float
    activations_gb: float
    overhead_gb: float
    step_s: float
    compute_s: float
    tp_comm_s: float
    pp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float = Field(default=0.0, description="exposed expert-parallel all-to-all per step, seconds")
    dp_comm_s: float
    bubble_s: float
    recompute_s: float
    optimizer_s: float
    mfu: float = Field(description="model FLOPs utilisation, attention and logits counted (Megatron/PaLM convention)")
    mfu_6nd: float = Field(description="MFU in the 6*N*D convention of estimate, TRAIN_DAYS and the workbook "
                                       "(N: active parameters of an MoE): TRAIN_DAYS(N, tokens_t, peak, GPUs, "
                                       "mfu_6nd) = days")
    hfu: float
    tokens_per_s_per_gpu: float
    days: float
    gpu_hours: float
    cost_usd: Optional[float]

    def layout_pins(self, moe: bool) -> dict[str, Any]:
        """This plan's layout as :func:`xlcalc.planner.plan` pins it (the expert TP only for an MoE)."""
        pins = self.model_dump(include={"tp", "pp", "cp", "ep", "zero_stage", "recompute", "micro_batch",
                                        "seq_parallel", "virtual_stages"})
        return {**pins, "etp": self.etp or self.tp} if moe else pins

    def label(self) -> str:
        sp = ", SP" if self.seq_parallel else ""
        v = f", v={self.virtual_stages}" if self.virtual_stages > 1 else ""
        cp = f", CP={self.cp}" if self.cp > 1 else ""
        runs = [(n, len(list(same))) for n, same in groupby(self.stage_layers or ())]  # 126 layers: 7, 8 x 14, 7
        stages = f" (stages {', '.join(str(n) if k == 1 else f'{n} x {k}' for n, k in runs)})" if runs else ""
        fp8 = ", FP8" if self.fp8 else ""
        fp8 += ", optimizer offloaded" if self.optimizer_offload else ""
        ep = f", EP={self.ep}" if self.ep > 1 else ""
        ep += f", ETP={self.etp}" if self.etp and self.etp != self.tp else ""
        return (f"TP={self.tp}, PP={self.pp}{stages}{cp}, DP={self.dp}{ep}, ZeRO-{self.zero_stage}{sp}, "
                f"recompute {self.recompute}, micro-batch {self.micro_batch}{v}{fp8}")


class Rejection(BaseModel):
    """A configuration left out, and why."""

    tp: int
    pp: int
    zero_stage: int
    seq_parallel: bool
    recompute: str
    micro_batch: int
    memory_gb: float
    reason: str
    cp: int = 1
    ep: int = 1


class Assumed(BaseModel):
    """An input the caller left out: the value the plan used for it and where that value comes from."""

    model_config = ConfigDict(frozen=True)

    value: Any = Field(description="the value used (None: none, e.g. no price)")
    shown: str = Field(description="the value as a reader sees it, with its unit")
    basis: str = Field(description="where the value comes from")


class StackOutcome(BaseModel):
    """One layout's step on one named stack profile (PlanResult.stack_spread)."""

    model_config = ConfigDict(frozen=True)

    days: float
    step_s: float
    mfu: float
    memory_gb: float
    same_layout: bool = Field(default=True, description="the best plan's layout; False: it does not fit this "
                                                         "stack's memory and the stack's own best plan is given")
    layout: str = Field(default="", description="the layout evaluated (Plan.label)")


class PlanResult(BaseModel):
    model: str
    gpu: str
    n_gpus: int
    seq_len: int
    global_batch: int
    tokens_t: float
    gpu_memory_gb: float
    matmul_efficiency: float = Field(description="share of peak the step-time model gives the matmuls")
    matmul_efficiency_basis: str = Field(description="where that share came from: given, or which catalog figure")
    settings: Settings
    params_b: float = Field(description="parameters N of the 6*N*D convention (active parameters for MoE)")
    architecture: dict[str, Any] = Field(
        default_factory=dict, description="the architecture planned: layers, hidden, heads, kv_heads, vocab, "
                                          "experts, experts_active, total_params_b, active_params_b")
    recipe: str = Field(default="", description="bytes per parameter the memory model used (xlcalc.recipes)")
    moe: bool = Field(default=False, description="a mixture of experts: params_b and mfu_6nd count active parameters")
    plans: list[Plan]
    rejected: list[Rejection]
    evaluated: int
    feasible: int
    rejected_by_reason: dict[str, int] = Field(default_factory=dict,
                                               description="configurations left out, counted by reason")
    assumed: dict[str, Assumed] = Field(
        default_factory=dict,
        description="every input left out that the plan depends on (seq_len, global_batch_tokens, tokens_t, stack, "
                    "usd_per_gpu_hour), with the value used and its origin")
    interval: Optional[PredictionRange] = Field(
        default=None, description="the best plan's range of MFU, days, GPU-hours and cost from the validation's "
                                  "held-out errors (None: no plan, or a given matmul efficiency whose error is not "
                                  "measured; interval_note says which)")
    interval_note: str = Field(default="", description="whether the validation's range applies to this plan")
    stack_spread: dict[str, Optional[StackOutcome]] = Field(
        default_factory=dict,
        description="with no stack named (the default stack assumed): the best plan's layout evaluated on each named "
                    "stack profile (the assumed one: the best plan itself), or where it "
                    "does not fit that stack's memory the stack's own best plan (None: no plan fits), so the "
                    "assumption's weight can be seen")
    unpinned: Optional[PlanComparison] = Field(
        default=None, description="with layout pins and compare_unpinned: the planner's best plan without the pins "
                                  "against the best with them, term by term (None: no pins, or no plan either way)")


PLAN_COLUMNS = ("rank", "tp", "pp", "cp", "ep", "dp", "zero_stage", "seq_parallel", "recompute", "micro_batch",
                "virtual_stages", "memory_gb", "step_s", "mfu", "tokens_per_s_per_gpu", "days", "gpu_hours", "cost_usd")
"""PLAN's columns: a plan's whole layout (TP x PP x CP x DP = the GPUs; EP within them), in the order of xlcalc
plan's table, then its memory, step, days, GPU-hours and cost."""


def plan_table(result: PlanResult, top: int = 5) -> list[list[Any]]:
    """Header row plus one row per plan (best first), then one row per input the plan assumed ("assumed", its
    name, the value used, where it comes from; PlanResult.assumed), then the best plan's range ("range", a bound's
    name, its value, where it comes from; PlanResult.interval), or one row saying why it has none: a table a
    worksheet function can spill."""
    rows: list[list[Any]] = [list(PLAN_COLUMNS)]
    pad = [""] * (len(PLAN_COLUMNS) - 4)
    rows += [[i] + [getattr(p, k) for k in PLAN_COLUMNS[1:]] for i, p in enumerate(result.plans[:top], 1)]
    rows += [["assumed", name, a.value if a.value is not None else a.shown, a.basis] + pad
             for name, a in result.assumed.items()]
    if (r := result.interval) is not None:
        basis = f"{r.level:.0%} range from {r.basis}; {result.interval_note}"
        bounds = [name for name in RANGE_ROWS if getattr(r, name) is not None]
        # the basis once, on the first bound's row; the others say they share it (a sheet shows one note, not eight)
        rows += [["range", name, getattr(r, name), basis if i == 0 else f"{r.level:.0%} range, as {bounds[0]}'s"]
                 + pad for i, name in enumerate(bounds)]
    elif result.plans:
        rows.append(["range", "none", "", result.interval_note] + pad)
    return rows


RANGE_ROWS = ("mfu_low", "mfu_high", "days_low", "days_high", "gpu_hours_low", "gpu_hours_high", "cost_low_usd",
              "cost_high_usd")

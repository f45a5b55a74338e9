"""Why one plan is faster than another: their step times term by term.

``plan`` with a pinned layout (a published run's, say) also searches without the pins
(``plan(..., compare_unpinned=True)``); where the planner's own best plan is faster, :func:`compare_plans` says by how
much and which terms of the step make the difference, so a user can judge whether to believe it (a pipeline bubble
the model counts, a recompute it drops, communication it hides).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["STEP_TERMS", "StepTermChange", "PlanComparison", "compare_plans"]

# The terms whose sum is a plan's step time (Plan.step_s), as a reader names them, and the Plan field of each
STEP_TERMS: tuple[tuple[str, str], ...] = (
    ("compute", "compute_s"), ("recompute", "recompute_s"), ("TP communication", "tp_comm_s"),
    ("CP communication", "cp_comm_s"), ("PP communication", "pp_comm_s"), ("EP all-to-all", "ep_comm_s"),
    ("DP communication", "dp_comm_s"), ("pipeline bubble", "bubble_s"), ("optimizer step", "optimizer_s"))


class StepTermChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    term: str
    pinned_s: float = Field(description="seconds of this term in the pinned layout's step")
    unpinned_s: float = Field(description="seconds of this term in the planner's own best plan's step")


class PlanComparison(BaseModel):
    """The planner's best plan without the caller's layout pins, against the best plan with them."""

    model_config = ConfigDict(frozen=True)

    layout: str = Field(description="the unpinned best plan (Plan.label)")
    days: float
    step_s: float
    mfu: float
    memory_gb: float
    pinned_days: float
    pinned_step_s: float
    pinned_memory_gb: float
    step_saving: float = Field(description="1 - unpinned step / pinned step (0: the pinned layout is the best)")
    terms: list[StepTermChange] = Field(description="the step's terms, the largest difference first; terms that "
                                                    "differ by less than 1% of the pinned step are left out")


def compare_plans(pinned: Any, unpinned: Any) -> PlanComparison:
    """The step of ``unpinned`` against ``pinned`` (two :class:`xlcalc.planner.Plan` of the same run: same model,
    GPUs, batch and tokens, so the same work per step): step = sum of :data:`STEP_TERMS`."""
    changes = [StepTermChange(term=name, pinned_s=getattr(pinned, f), unpinned_s=getattr(unpinned, f))
               for name, f in STEP_TERMS]
    changes = sorted((c for c in changes if abs(c.unpinned_s - c.pinned_s) >= 0.01 * pinned.step_s),
                     key=lambda c: -abs(c.unpinned_s - c.pinned_s))
    return PlanComparison(layout=unpinned.label(), days=unpinned.days, step_s=unpinned.step_s, mfu=unpinned.mfu,
                          memory_gb=unpinned.memory_gb, pinned_days=pinned.days, pinned_step_s=pinned.step_s,
                          pinned_memory_gb=pinned.memory_gb, step_saving=1 - unpinned.step_s / pinned.step_s,
                          terms=changes)

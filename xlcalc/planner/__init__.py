"""Parallelism planner: search TP/PP/DP/ZeRO/SP/recompute/micro-batch, predict step time and MFU, explain.

    >>> from xlcalc.planner import plan
    >>> result = plan("llama2-70b", gpu="h100", n_gpus=1024, seq_len=4096, global_batch_tokens=4 * 2**20)
    >>> best = result.plans[0]          # fastest plan that fits
"""

from .answer import Plan, PlanResult, Rejection, plan_table  # noqa: F401
from .search import plan, search  # noqa: F401
from .pinned import layout_prediction  # noqa: F401
from .settings import Settings  # noqa: F401
from .steptime import Arch, Config, Hardware, Prediction, arch_from_flags, arch_from_model, evaluate  # noqa: F401
from .explain import explain  # noqa: F401

__all__ = ["Plan", "PlanResult", "Rejection", "plan", "plan_table", "search", "Arch", "Config", "Hardware",
           "Prediction", "Settings", "layout_prediction", "arch_from_flags", "arch_from_model", "evaluate", "explain"]

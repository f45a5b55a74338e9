"""One given layout's predicted step: the planner's answer with every layout choice pinned.

    >>> from xlcalc.planner import layout_prediction
    >>> p = layout_prediction("llama3.1-8b", gpu="H100", n_gpus=8, seq_len=8192, global_batch_tokens=2**20,
    ...                       zero_stage=3)
    >>> p.step_s, p.mfu, p.tokens_per_s_per_gpu     # seconds per optimizer step, fraction of peak, tokens/s

The numbers are those ``xlcalc plan`` (and ``plan``) gives for the same run with every layout flag pinned: this
function is :func:`xlcalc.planner.plan` with the layout fixed, so that a face asking "what is the step time of
this layout" asks the one step-time model, not a copy of it. A choice left out is the memory model's one-GPU
default (:data:`xlcalc.recipes.MEMORY_DEFAULTS`: TP 1, PP 1, CP 1, ZeRO-0, no sequence parallelism, no
recomputation, micro-batch 1, no interleaving), never searched.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import catalog
from ..errors import InputError
from ..recipes import MEMORY_DEFAULTS
from ..validate import check_value
from .answer import Plan
from .defaults import resolve_model
from .search import plan
from .settings import Settings
from .stacks import stack_choices, stack_id
from .steptime import Arch

__all__ = ["layout_prediction"]


def layout_prediction(model: str | catalog.Model | None = None, *, arch: Arch | None = None, gpu: str,
                      n_gpus: int, seq_len: Optional[int], global_batch_tokens: Optional[float],
                      tp: Optional[int] = None, pp: Optional[int] = None, cp: Optional[int] = None,
                      zero_stage: Optional[int] = None, seq_parallel: Optional[bool] = None,
                      recompute: Optional[str] = None, micro_batch: Optional[int] = None,
                      virtual_stages: Optional[int] = None, ep: Optional[int] = None, etp: Optional[int] = None,
                      stage_layers: Optional[list[int]] = None, fp8: bool = False, optimizer_offload: bool = False,
                      tokens_t: Optional[float] = None, stack: Optional[str] = None,
                      settings: Optional[Settings] = None) -> Plan:
    """The predicted memory, step time (``step_s``, seconds per optimizer step), MFU (``mfu``, a fraction of peak)
    and throughput (``tokens_per_s_per_gpu``) of one layout of a training run: the :class:`Plan` that
    ``plan(..., tp=, pp=, cp=, zero_stage=, seq_parallel=, recompute=, micro_batch=, virtual_stages=)`` ranks for
    it, with the same numbers.

    ``model`` (catalog id or :class:`catalog.Model`) or ``arch``; ``stack`` names the software-stack profile
    (None: the planner's default stack, as ``plan``) or ``settings`` carries it with the rest of the model's
    settings. A mixture of experts needs ``ep`` (its expert-parallel size); ``etp`` left out is TP (the experts
    split as the dense layers). ``tokens_t`` only sets the plan's days, GPU-hours and cost (None: as ``plan``);
    ``seq_len`` and ``global_batch_tokens`` None are ``plan``'s rule (a catalog model's pre-training sequence length
    and published batch; the batch of a model without one is missing).

    Raises :class:`InputError` for a layout that does not divide the run (GPUs not a multiple of TP x PP x CP,
    a batch of no whole micro-batches per replica, ...) or that does not fit in GPU memory, saying why in the
    planner's words.
    """
    if settings is not None and stack is not None:
        raise InputError("stack", stack, "left out when settings are given (Settings(stack=...) names it)")
    if stack is not None:  # a name checked here: an unknown one's error lists the known ones
        if not isinstance(stack, str):
            raise InputError("stack", stack, stack_choices())
        stack_id(stack)
    # a stack as typed: an alias may name its own framework (stacks.ALIAS_FRAMEWORKS)
    st = settings if settings is not None else (Settings() if stack is None else Settings(stack=stack))
    given: dict[str, Any] = dict(tp=tp, pp=pp, cp=cp, zero_stage=zero_stage, seq_parallel=seq_parallel,
                                 recompute=recompute, micro_batch=micro_batch, virtual_stages=virtual_stages)
    # each choice checked here (a worksheet's 2.0 is TP 2), left out: the one-GPU default
    pins = {k: MEMORY_DEFAULTS[k] if v is None else check_value(k, v) for k, v in given.items()}
    if stage_layers is not None and pp is None:
        pins["pp"] = len(stage_layers)
    # the routed experts of the model (0: dense); an unknown name raises the planner's own error; neither given: 0,
    # and plan names it with every other input missing
    moe = 0 if model is None and arch is None else resolve_model(model, arch).experts
    if moe and ep is None:
        raise InputError("ep", None, f"the expert-parallel size, a divisor of experts = {moe}",
                         "a mixture of experts' layout needs it")
    ep, etp = (None if x is None else check_value(n, x) for n, x in (("ep", ep), ("etp", etp)))
    # an MoE's expert TP left out is TP; given for a dense model, plan refuses them, naming why
    pins.update(ep=ep, etp=pins["tp"] if moe and etp is None else etp)
    result = plan(model, arch=arch, gpu=gpu, n_gpus=n_gpus, seq_len=seq_len, global_batch_tokens=global_batch_tokens,
                  tokens_t=tokens_t, settings=st, stage_layers=stage_layers, fp8=fp8,
                  optimizer_offload=optimizer_offload, top=1, **pins)
    if result.plans:
        return result.plans[0]
    raise _no_plan(result, pins)


def _no_plan(result: Any, pins: dict[str, Any]) -> InputError:
    """Why the pinned layout has no plan, in the planner's words: the memory it needs against the GPU's, or the
    reasons the search left it out."""
    p = pins
    parts = [f"TP{p['tp']} PP{p['pp']}", f"CP{p['cp']}" if p["cp"] > 1 else "", f"ZeRO-{p['zero_stage']}",
             "SP" if p["seq_parallel"] else "", p["recompute"], f"mb{p['micro_batch']}",
             f"v{p['virtual_stages']}" if p["virtual_stages"] > 1 else ""]
    shown = " ".join(x for x in parts if x)
    if result.rejected:
        return InputError("layout", shown, f"a layout that fits in the {result.gpu}'s {result.gpu_memory_gb:.3g} GB",
                          result.rejected[0].reason)
    dp_cp = result.n_gpus // (p["tp"] * p["pp"])
    reasons = "; ".join(result.rejected_by_reason) or (
        f"ZeRO-{p['zero_stage']} shards over the data-parallel GPUs and DP x CP = {dp_cp} here: give ZeRO-0 "
        "or more GPUs" if p["zero_stage"] and dp_cp == 1 else "no configuration of these choices is searched")
    gpus = f"{result.n_gpus} GPU" + ("s" if result.n_gpus != 1 else "")
    return InputError("layout", shown, f"a layout the planner can run on {gpus}", reasons)

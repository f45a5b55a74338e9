"""Calibrate the step-time model from one measured run: fit the stack's matmul efficiency, save it as a profile.

:func:`calibrate` takes a measured step (tokens/s per GPU, or seconds per step; optionally the peak memory per GPU)
of one pinned layout, finds the matmul share of peak at which the planner predicts exactly that throughput for
that layout (the planner's own step-time model, every other setting as given), and, with a measured peak memory,
the memory margin (measured / predicted). :class:`Profile` holds the result and what it was calibrated on;
:func:`save_profile` writes it atomically and :func:`load_profile` reads it back, refusing anything that is not
such a profile, field by field. ``xlcalc plan --profile FILE`` plans other layouts and cluster sizes with it.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..atomic import write_text
from ..errors import InputError
from ..untrusted import check_value as check_untrusted
from ..untrusted import read_limited
from ..validate import check_value
from .answer import Plan, PlanResult
from .search import plan
from .settings import Settings
from .stacks import PLANNER, STACKS

__all__ = ["Profile", "CalibratedOn", "calibrate", "fit_efficiency", "save_profile", "load_profile",
           "profile_settings", "EFFICIENCY_RANGE", "MAX_PROFILE_BYTES", "SCHEMA"]

SCHEMA = "xlcalc-calibration-profile"
VERSION = 1
# the matmul shares of peak a calibration may find: below 5% of peak no training step runs its matmuls (the
# measurement or the layout is wrong), above 100% none can
EFFICIENCY_RANGE = (0.05, 1.0)
MAX_PROFILE_BYTES = 16_384
MAX_TEXT = 200  # characters of a name in a profile
# the settings a profile may carry: every step-time setting but the two it fits
_FITTED = ("matmul_efficiency", "memory_margin")
_Scalar = Union[bool, int, float, str]


class CalibratedOn(BaseModel):
    """The measured run a profile was fitted to."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(max_length=MAX_TEXT, description="the model (catalog id, config.json name or architecture)")
    gpu: str = Field(max_length=MAX_TEXT, description="the GPU, as the catalog names it")
    n_gpus: int = Field(ge=1, le=10**7)
    seq_len: int = Field(ge=1, le=10**8)
    global_batch: int = Field(ge=1, le=10**9, description="sequences per step")
    layout: str = Field(max_length=MAX_TEXT, description="the layout predicted (the planner's label)")
    tp: int = Field(ge=1)
    pp: int = Field(ge=1)
    dp: int = Field(ge=1)
    cp: int = Field(ge=1)
    ep: int = Field(ge=1)
    zero_stage: int = Field(ge=0, le=3)
    seq_parallel: bool
    recompute: str = Field(max_length=20)
    micro_batch: int = Field(ge=1)
    virtual_stages: int = Field(ge=1)
    fp8: bool
    measured_tokens_per_s_per_gpu: float = Field(gt=0, allow_inf_nan=False)
    measured_step_s: float = Field(gt=0, allow_inf_nan=False)
    measured_peak_memory_gb: Optional[float] = Field(default=None, gt=0, allow_inf_nan=False)
    predicted_memory_gb: float = Field(gt=0, allow_inf_nan=False, description="the planner's memory per GPU")
    date: datetime.date


class Profile(BaseModel):
    """A calibration: the fitted matmul efficiency (and memory margin), the settings it holds with, its run."""

    model_config = ConfigDict(extra="forbid")

    schema_name: Literal["xlcalc-calibration-profile"] = Field(alias="schema")
    version: Literal[1]
    stack: Optional[str] = Field(default=None, max_length=40, description="the software-stack profile calibrated")
    matmul_efficiency: float = Field(ge=EFFICIENCY_RANGE[0], le=EFFICIENCY_RANGE[1], allow_inf_nan=False,
                                     description="fitted share of peak the matmuls reach")
    memory_margin: Optional[float] = Field(default=None, ge=0.2, le=5, allow_inf_nan=False,
                                           description="measured / predicted peak memory per GPU")
    settings: dict[str, _Scalar] = Field(default_factory=dict, max_length=40,
                                         description="the other step-time settings given at calibration")
    calibrated_on: CalibratedOn


def profile_settings(profile: Profile) -> dict[str, Any]:
    """The Settings values a profile plans with: its stack, its other settings, its fitted values."""
    # the stack calibrated, always named: a profile written before the default stack (stack null) was calibrated
    # at the planner's own settings
    values: dict[str, Any] = {**profile.settings, "stack": profile.stack if profile.stack is not None else PLANNER,
                              "matmul_efficiency": profile.matmul_efficiency}
    if profile.memory_margin is not None:
        values["memory_margin"] = profile.memory_margin
    return values


def fit_efficiency(predict_at: Callable[[float], float], measured: float, *, name: str = "tokens_per_s",
                   shown: Callable[[float], float] = lambda t: t, unit: str = "tokens/s per GPU") -> float:
    """The matmul efficiency in :data:`EFFICIENCY_RANGE` at which ``predict_at`` (predicted tokens/s per GPU,
    rising with the efficiency) gives ``measured``, by bisection; an InputError naming ``name`` when the measured
    value lies outside what the range allows (``shown`` converts tokens/s per GPU to that input's unit)."""
    lo, hi = EFFICIENCY_RANGE
    fast, slow = predict_at(hi), predict_at(lo)
    step = unit == "s"  # a step time falls as the throughput rises
    if measured > fast * (1 + 1e-9):
        raise InputError(name, shown(measured), f"{'at least' if step else 'at most'} {shown(fast):.6g} {unit}",
                         "faster than the step-time model allows this layout with its matmuls at 100% of peak: "
                         "check the measured value, the layout, the GPU and the stack")
    if measured < slow * (1 - 1e-9):
        raise InputError(name, shown(measured), f"{'at most' if step else 'at least'} {shown(slow):.6g} {unit}",
                         f"slower than the step-time model predicts with its matmuls at {lo:.0%} of peak: check the "
                         "measured value and the layout (a run that slow is bound by something the model does not "
                         "have, such as data loading or a straggler)")
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if predict_at(mid) > measured else (mid, hi)
    return round((lo + hi) / 2, 6)


def calibrate(model: Any = None, *, arch: Any = None, gpu: str, n_gpus: int, seq_len: int,
              global_batch_tokens: float, settings: Optional[Settings] = None,
              tokens_per_s: Optional[float] = None, step_s: Optional[float] = None,
              peak_memory_gb: Optional[float] = None, today: Optional[datetime.date] = None,
              **pins: Any) -> tuple[Profile, Plan]:
    """Fit the matmul efficiency (and memory margin) to one measured run of a pinned layout.

    ``pins`` are :func:`xlcalc.planner.plan`'s layout pins (tp, pp, cp, ep, etp, zero_stage, recompute, micro_batch,
    seq_parallel, virtual_stages, stage_layers, fp8, optimizer_offload); what is left out is the planner's best
    choice at the settings' efficiency. Give the measured throughput as ``tokens_per_s`` (per GPU) or ``step_s``
    (one of them). Returns the profile and the planner's plan of the layout at the fitted efficiency.
    """
    st = settings or Settings()
    given = st.model_dump(exclude_unset=True)
    problems = [InputError(k, given[k], "left out of a calibration",
                           f"calibrate fits {k}; plan with the profile it saves (plan --profile)")
                for k in _FITTED if given.get(k) is not None]
    if getattr(st, "matmul_efficiency_of_mamf", False):
        problems.append(InputError("efficiency_of_mamf", True, "left out of a calibration",
                                   "calibrate fits the matmul efficiency as a share of peak"))
    if tokens_per_s is None and step_s is None:
        problems.append(InputError("tokens_per_s", None, "the measured tokens/s per GPU (or give step_s, "
                                   "the measured seconds per step)", "the measured value is required"))
    if tokens_per_s is not None and step_s is not None:
        problems.append(InputError("step_s", step_s, "left out when tokens_per_s is given",
                                   "give one measured value: tokens/s per GPU or seconds per step"))
    if problems:
        raise InputError.all(problems)
    base = dict(model=model, arch=arch, gpu=gpu, n_gpus=n_gpus, seq_len=seq_len,
                global_batch_tokens=global_batch_tokens, tokens_t=1, top=1)
    first = plan(**base, settings=st, **pins)
    if not first.plans:
        why = "; ".join(r.reason for r in first.rejected[:3]) or "no configuration of the layout"
        raise InputError("layout", first.model, "a layout the planner's memory model lets fit",
                         f"nothing to calibrate: {why}")
    pinned = dict(pins, **first.plans[0].layout_pins(first.moe))

    def to_step_s(t: float) -> float:  # tokens/s per GPU -> seconds per step
        return first.global_batch * first.seq_len / (t * first.n_gpus)

    # the measured value in tokens/s per GPU (fit_efficiency's unit), and how a step time is named and shown
    how: dict[str, Any] = {} if step_s is None else dict(name="step_s", shown=to_step_s, unit="s")
    measured = (float(check_value("tokens_per_s", tokens_per_s)) if step_s is None
                else to_step_s(float(check_value("step_s", step_s))))
    values = {k: v for k, v in given.items() if k not in _FITTED}

    def run_at(eff: float) -> PlanResult:
        return plan(**base, settings=Settings(**values, matmul_efficiency=eff), **pinned)

    def predict_at(eff: float) -> float:
        res = run_at(eff)
        return res.plans[0].tokens_per_s_per_gpu if res.plans else 0.0

    eff = fit_efficiency(predict_at, measured, **how)
    best = run_at(eff).plans[0]
    margin = None
    if peak_memory_gb is not None:
        peak = float(check_value("peak_memory_gb", peak_memory_gb))
        if peak > first.gpu_memory_gb:
            raise InputError("peak_memory_gb", peak_memory_gb, f"at most the GPU's {first.gpu_memory_gb:g} GB",
                             f"a {first.gpu} holds no more")
        margin = round(peak / best.memory_gb, 6)
        if not 0.2 <= margin <= 5:
            raise InputError("peak_memory_gb", peak_memory_gb,
                             f"between 0.2 and 5 times the predicted {best.memory_gb:.4g} GB per GPU",
                             "a measured peak that far from the memory model is another layout or another "
                             "measurement (allocated vs reserved, one rank vs all)")
    facts = STACKS[st.stack].settings if st.stack in STACKS else {}
    stored = {k: v for k, v in values.items()
              if k != "stack" and isinstance(v, (bool, int, float, str)) and not (k in facts and facts[k] == v)}
    on = CalibratedOn(
        **best.model_dump(include=set(CalibratedOn.model_fields)),  # the layout: TP, PP, DP, CP, EP, ZeRO, ...
        model=first.model, gpu=first.gpu, n_gpus=first.n_gpus, seq_len=first.seq_len, global_batch=first.global_batch,
        layout=best.label(), measured_tokens_per_s_per_gpu=measured, measured_step_s=to_step_s(measured),
        measured_peak_memory_gb=peak_memory_gb, predicted_memory_gb=best.memory_gb,
        date=today or datetime.datetime.now(datetime.UTC).date())
    return Profile(schema=SCHEMA, version=VERSION, stack=st.stack, matmul_efficiency=eff, memory_margin=margin,
                   settings=stored, calibrated_on=on), best


def save_profile(profile: Profile, path: str | Path) -> None:
    """Write ``profile`` as JSON to ``path``, atomically (a temporary file renamed over it)."""
    write_text(path, json.dumps(profile.model_dump(mode="json", by_alias=True), indent=2) + "\n", name="out")


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a number a profile holds")


def load_profile(path: str | Path, name: str = "profile") -> Profile:
    """The profile in ``path``; an InputError naming the file and, for bad content, the field."""
    raw = read_limited(path, name, MAX_PROFILE_BYTES, "calibration profile written by xlcalc calibrate (JSON)")
    what = "a calibration profile written by xlcalc calibrate (JSON)"
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(name, str(path), what, f"it is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError(name, str(path), what, f"its schema is {found!r}, not {SCHEMA!r}")
    check_untrusted("", data)
    try:
        profile = Profile.model_validate(data)
        Settings(**profile_settings(profile))
    except ValidationError as exc:
        raise InputError.all(
            InputError(f"{name} {'.'.join(str(x) for x in err.get('loc') or ()) or 'profile'}",
                       err.get("input") if err.get("type") != "missing" else None,
                       err.get("msg", "a valid value").removeprefix("Input should be ").removeprefix("Value error, "),
                       f"in {path}")
            for err in exc.errors()) from None
    return profile

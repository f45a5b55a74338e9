"""Named software-stack profiles: what a training stack does that the step-time model must know.

Each :class:`Stack` is a set of :class:`xlcalc.planner.Settings` values, every one a documented fact about the
software with its source, plus the stack's matmul efficiency fitted to its published runs. ``xlcalc plan
--stack ID`` plans with them; the validation (:mod:`xlcalc.validation`) predicts each source's runs with its
stack's facts and fits the efficiency leave-one-source-out. A value no source gives is not set (the planner's
default applies), never guessed.

The profiles are data: one TOML file per stack in ``xlcalc/data/stacks/`` (``<id>.toml``: its settings, each named
by the sourced fact that states it, its fitted efficiency, its runs and its framework) and ``names.toml`` (the
profiles in the order the faces list them, the names users know them by, software with no profile), read and
checked by :mod:`xlcalc.planner.stack_files`. This module builds :data:`STACKS` from them and answers which profile
a name means.

A plan that names no stack plans with :data:`DEFAULT_STACK`, declared once here for every face (``xlcalc plan``,
``xlcalc calibrate``, ``PLAN()``, :class:`xlcalc.planner.Settings`). The principle that picks it, fixed before any
score was looked at: the default is the stack a user who names none most likely runs, plain PyTorch without
compilation, so ``fsdp-eager`` (PyTorch FSDP eager: torchtitan's ``compile = False`` default, Hugging Face
Trainer's ``torch_compile = False`` default); it is never chosen by comparing validation scores, and it is not the
fastest profile. :data:`PLANNER` names the planner's own settings (every Settings field at its own default, the GPU
catalog's efficiency) for the validation's baseline and whoever asks for them. The names users know a stack by are
:data:`ALIASES`, each with the source that says which profile that software is; software with no profile is in
:data:`NO_PROFILE` and refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import CatalogError, InputError
from ..frameworks import profile_values
from ..stack_names import name_key
from .stack_files import load_stack_files

__all__ = ["Stack", "STACKS", "NONMATMUL_FACTOR", "TRITON_FLASH_ATTENTION_SPEED", "get_stack", "DEFAULT_STACK",
           "PLANNER", "ALIASES", "ALIAS_FRAMEWORKS", "NO_PROFILE", "stack_id", "stack_choices", "stack_framework"]


@dataclass(frozen=True)
class Stack:
    id: str
    name: str
    settings: dict[str, Any]                        # Settings fields the stack pins
    facts: tuple[tuple[str, str], ...]              # (what the stack does, where that is stated)
    # matmul share of peak fitted to all of the stack's published runs at NONMATMUL_FACTOR (docs/validation.md,
    # "efficiency fitted on all its runs"; a test checks it against scripts/make_validation.py); None: the GPU
    # catalog's default
    matmul_efficiency: Optional[float] = None
    sources: tuple[str, ...] = field(default=())    # source_id of throughput_runs.json measured on this stack
    # the training framework whose memory facts (xlcalc.frameworks: recipe bytes, logits held for the loss,
    # optimizer-step temporaries, autocast copies, gradients freed) the stack's runs hold, and why: a plan on the
    # stack with no --framework holds these, so `xlcalc memory --framework <it>` gives the plan's GB per GPU
    framework: Optional[tuple[str, str]] = None

    def __post_init__(self) -> None:
        # the framework's memory inputs (recipe bytes, logits held for the loss, optimizer-step temporaries, autocast
        # copies, gradients freed) join the settings as xlcalc.frameworks declares them, not restated here
        if self.framework is not None:
            object.__setattr__(self, "settings", {**profile_values(self.framework[0]), **self.settings})


# The non-matmul time factor fitted with the stacks' efficiencies on all the published runs (one for every stack;
# docs/validation.md, a test checks it): the counted HBM traffic of norms, activations, residuals and the loss
# takes this many times its time at peak bandwidth (bytes moved / bytes counted over achieved / peak bandwidth).
# Each profile's file states it as its fitted elementwise_factor (a test checks they equal this).
NONMATMUL_FACTOR = 4.0
# FlashAttention in Triton against FlashAttention-2 on the same GPU (Dao 2023 §4.1: FlashAttention-2 is "around
# 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around 2x faster in the backward pass"; the
# backward has 2.5x the forward's FLOPs, Dao 2023 §4.1): one forward at 1/1.4 and one backward at 1/2 the speed,
# 3.5 / (1.4 + 2.5 x 2) = 0.55 of FlashAttention-2's speed over a training step (llm-foundry.toml's
# attention_kernel_speed; a test checks they are equal)
TRITON_FLASH_ATTENTION_SPEED = 3.5 / (1.4 + 2.5 * 2)

# The planner's own settings: no profile's facts, every Settings field at its own default, the GPU catalog's
# matmul efficiency (the validation's baseline of what the model does with nothing pinned)
PLANNER = "planner"

# The profiles and the names users know them by, read from xlcalc/data/stacks/ (xlcalc.planner.stack_files)
_FILES = load_stack_files(reserved={PLANNER: "the planner's own settings"})
STACKS: dict[str, Stack] = {spec["id"]: Stack(**spec) for spec in _FILES.profiles}
# Names users know a stack by -> (profile id, the source that says which stack that software is)
ALIASES: dict[str, tuple[str, str]] = _FILES.aliases
# Names whose framework differs from their stack's (alias -> xlcalc.frameworks id): the Hugging Face Trainer runs the
# fsdp-eager stack but holds transformers' memory (fp32 weights under autocast, its eager loss)
ALIAS_FRAMEWORKS: dict[str, str] = _FILES.alias_frameworks
# Software users name that has no profile here, with why (refused, never mapped to a guess)
NO_PROFILE: dict[str, str] = _FILES.no_profile


# The stack a plan assumes when none is named (see the module docstring for the principle, fixed before scoring):
# the one a user who names nothing most likely runs, plain PyTorch without compilation
DEFAULT_STACK = "fsdp-eager"
DEFAULT_STACK_BASIS = ("the default: plain PyTorch FSDP without compilation, the stack a user who names none most "
                       "likely runs (torchtitan and Hugging Face Trainer compile nothing unless asked), not the "
                       "fastest profile")
if DEFAULT_STACK not in STACKS:
    raise CatalogError(f"DEFAULT_STACK {DEFAULT_STACK!r} is not a stack profile of xlcalc/data/stacks "
                       f"({', '.join(STACKS)})")


def stack_framework(name: str) -> Optional[str]:
    """The framework (xlcalc.frameworks id) whose memory facts a plan on the named stack holds when no framework is
    given: the alias's own (ALIAS_FRAMEWORKS), else the profile's (Stack.framework); None: the memory model's
    defaults (the planner's settings, megatron-2021)."""
    key = name_key(name)
    if key in ALIAS_FRAMEWORKS:
        return ALIAS_FRAMEWORKS[key]
    stack = STACKS.get(ALIASES[key][0] if key in ALIASES else key)
    return stack.framework[0] if stack is not None and stack.framework is not None else None


def stack_choices() -> str:
    """Every name a stack input takes, in words (the refusal of an unknown name lists them)."""
    aliases = ", ".join(f"{a} ({sid})" for a, (sid, _) in ALIASES.items())
    return (f"a stack profile: {', '.join(STACKS)}, or {PLANNER} (the planner's own settings); or a name it is "
            f"known by: {aliases} (default {DEFAULT_STACK})")


def stack_id(name: str) -> str:
    """The profile id (or :data:`PLANNER`) a stack name means: an id, an alias, case and spaces ignored; an
    InputError naming the stack and listing the ids and aliases otherwise (software with no profile: why)."""
    key = name_key(name)
    if key in STACKS or key == PLANNER:
        return key
    if key in ALIASES:
        return ALIASES[key][0]
    if key in NO_PROFILE:
        raise InputError("stack", name, stack_choices(), NO_PROFILE[key] + "; name the closest profile, or "
                                                          f"{PLANNER} for the planner's own settings")
    raise InputError("stack", name, stack_choices())


def get_stack(stack_id_or_alias: str) -> Stack:
    """The named stack profile (an id or an alias); an InputError lists the known ones."""
    sid = stack_id(stack_id_or_alias)
    if sid == PLANNER:
        raise InputError("stack", stack_id_or_alias, "a named stack profile: " + ", ".join(STACKS))
    return STACKS[sid]

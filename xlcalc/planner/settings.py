"""The planner's settings: every constant of the step-time and memory model, with its default and where it comes
from; a named software-stack profile (xlcalc.planner.stacks) fills those not given."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field, field_validator, model_validator

from ..errors import InputError
from ..frameworks import get_profile
from .settings_kinds import HardwareOverrides, MemoryRecipe, PriceInputs, StackFacts
from .stacks import DEFAULT_STACK, PLANNER, STACKS, stack_choices, stack_framework, stack_id

__all__ = ["Settings"]


class Settings(StackFacts, MemoryRecipe, HardwareOverrides, PriceInputs):
    """Every constant of the step-time and memory model, with its default and where it comes from, by kind
    (xlcalc.planner.settings_kinds): the stack's facts, the recipe's memory inputs, overrides of the GPU's figures, the
    price; and the stack, framework and precision whose profiles fill them."""

    stack: str = Field(
        default=DEFAULT_STACK,
        description="Software-stack profile (xlcalc.planner.stacks: megatron, megatron-2021, llm-foundry, fsdp-eager, "
                    "fsdp-compiled, or a name it is known by, ALIASES): its documented facts fill every field not "
                    "given, and its matmul efficiency fitted to its published runs is the default. Not given: "
                    "DEFAULT_STACK (fsdp-eager, plain PyTorch FSDP without compilation). 'planner' (or None): no "
                    "profile, the planner's own default for every field and the GPU catalog's efficiency.")

    framework: Optional[str] = Field(
        default=None,
        description="Training framework whose memory facts (xlcalc.frameworks: recipe bytes, logits held for the "
                    "loss, optimizer-step temporaries, autocast copies, gradients freed) fill the memory fields not "
                    "given, over a stack's. None (and no precision): the memory model's defaults.")
    precision: Optional[str] = Field(default=None, description="The framework's precision (xlcalc.frameworks "
                                                               "PRECISIONS); None: the framework's usual one.")

    @field_validator("stack", mode="before")
    @classmethod
    def _known_stack(cls, v: Any) -> str:
        if v is None:  # None as before the default stack: no profile
            return PLANNER
        if not isinstance(v, str):
            raise ValueError(stack_choices())
        try:
            return stack_id(v)
        except InputError as e:
            raise ValueError(e.allowed + (f" ({e.detail})" if e.detail else "")) from None

    @model_validator(mode="wrap")
    @classmethod
    def _stack_facts(cls, data: Any, handler: Any) -> Any:
        """A stack's facts (the default stack's when none is named), then a framework's memory facts, fill the fields
        the caller did not give; the fields the caller gave stay the model's fields_set (``stack_named``)."""
        if not isinstance(data, dict):
            return handler(data)
        given = {k for k, v in data.items() if not (k in ("framework", "precision") and v is None)}
        name = data.get("stack", DEFAULT_STACK)
        try:
            sid = stack_id(name) if isinstance(name, str) else None
        except InputError:
            sid = None  # the field validator reports it
        filled: dict[str, Any] = dict(STACKS[sid].settings) if sid in STACKS else {}
        if data.get("framework") is not None or data.get("precision") is not None:
            profile = get_profile(data.get("framework"), data.get("precision"))  # an unknown name: InputError
            filled.update(profile.values())
            data = {**data, "framework": profile.framework, "precision": profile.precision}
        elif sid in STACKS and stack_framework(name) is not None:
            # no framework named: the stack's own (Stack.framework), so the plan holds the memory its runs hold
            profile = get_profile(stack_framework(name))
            filled.update(profile.values(), framework=profile.framework, precision=profile.precision)
            data = {k: v for k, v in data.items() if k not in ("framework", "precision")}
        model = handler({**filled, **data})
        object.__setattr__(model, "__pydantic_fields_set__", given & set(cls.model_fields))
        return model

    @property
    def stack_named(self) -> bool:
        """The caller named the stack (False: DEFAULT_STACK was assumed)."""
        return "stack" in self.model_fields_set

    def part(self, kind: type[BaseModel]) -> BaseModel:
        """This kind's settings (a class of xlcalc.planner.settings_kinds.KINDS) as their own model."""
        return kind.model_construct(**{k: getattr(self, k) for k in kind.model_fields})

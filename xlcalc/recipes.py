"""Byte recipes for model states: bytes per parameter of weights, gradients and optimizer states."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recipe:
    id: str
    weights: float
    grads: float
    optimizer: float
    source: str

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer


RECIPES: dict[str, Recipe] = {
    r.id: r
    for r in (
        Recipe("zero", 2, 2, 12, "Rajbhandari et al. 2019 (ZeRO): fp16 weights and grads, fp32 master + Adam m, v (K = 12)"),
        Recipe("megatron", 2, 4, 12, "Megatron-LM docs (dist_optimizer.md): bf16 weights, fp32 main grads, fp32 master + m + v"),
        Recipe("seed002", 2, 4, 8, "seed 002 §7.1.2: fp16 weights, fp32 grads, Adam m + v, no master copy (14 B)"),
        Recipe("fp32", 4, 4, 8, "plain fp32 Adam: fp32 weights and grads, m + v"),
    )
}


# Scenario field -> recipe attribute it is filled from (xlcalc.scenario.Scenario.build, the workbook's look-ups)
RECIPE_FIELDS = {"bytes_weights": "weights", "bytes_grads": "grads", "bytes_optimizer": "optimizer"}


def get_recipe(name: str) -> Recipe:
    try:
        return RECIPES[name.strip().lower()]
    except KeyError:
        from .errors import InputError

        raise InputError("recipe", name, "one of " + ", ".join(RECIPES)) from None

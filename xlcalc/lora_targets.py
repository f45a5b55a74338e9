"""The LoRA target sets and the names users type them by, read the same on every face.

A target set is one of the choices of the ``lora_targets`` input ("qv", "qkv", "attention", "all_linear"); users also
type the matrices as a comma list ("q,v", "q,k,v,o"), with Hugging Face or torchtune module names ("q_proj,v_proj",
"wq,wv") or "mlp" for the feed-forward's three. :func:`target_set` reads any of these as the set's name, for
``--lora-targets``, the worksheet functions and the workbook alike (the input's check, :mod:`xlcalc.validate`).
"""

from __future__ import annotations

from .errors import InputError

__all__ = ["TARGET_SETS", "target_set"]

# adapter target sets by the matrices they adapt
TARGET_SETS = {frozenset("qv"): "qv", frozenset("qkv"): "qkv", frozenset("qkvo"): "attention",
               frozenset(("q", "k", "v", "o", "gate", "up", "down")): "all_linear"}
_MATRIX_ALIASES = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "output_proj": "o", "wq": "q",
                   "wk": "k", "wv": "v", "wo": "o", "gate_proj": "gate", "up_proj": "up", "down_proj": "down",
                   "w1": "gate", "w3": "up", "w2": "down", "fc1": "up", "fc2": "down"}
# the sets by name, as the input's spec states what it allows (every refusal starts with it)
_ONE_OF = "one of " + ", ".join(f'"{c}"' for c in TARGET_SETS.values())
_TARGET_NAMES = {**{n: n for n in TARGET_SETS.values()}, "all-linear": "all_linear", "all": "all_linear"}


def target_set(text: str) -> str:
    """The target set name of a typed value (a set's name or a comma list of matrices); an InputError naming
    lora_targets where the text is neither."""
    key = text.strip().lower()
    if key in _TARGET_NAMES:
        return _TARGET_NAMES[key]
    matrices: set[str] = set()
    for part in filter(None, key.replace(" ", "").split(",")):  # (empty parts of "q,,v" left out)
        if part == "mlp":
            matrices.update(("gate", "up", "down"))
            continue
        name = _MATRIX_ALIASES.get(part, part)
        if name not in ("q", "k", "v", "o", "gate", "up", "down"):
            raise InputError("lora_targets", text, _ONE_OF + ", or matrices among q, k, v, o, gate, up, down (or mlp) "
                             "as a comma list", f"{part!r} is not a matrix of a layer")
        matrices.add(name)
    if (found := TARGET_SETS.get(frozenset(matrices))) is None:
        raise InputError("lora_targets", text, _ONE_OF + ", or one of these sets' matrices as a comma list: q,v | q,k,v | "
                         "q,k,v,o | q,k,v,o,gate,up,down", "the memory model counts these adapter sets")
    return found

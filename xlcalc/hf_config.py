"""Models from a Hugging Face ``config.json``: the architecture a user already has, as a catalog model.

``model_from_hf_config(path_or_dict)`` reads the keys that fix the parameter count and the memory of a
decoder-only transformer (Llama, Mistral, Mixtral, Qwen2/Qwen2-MoE, Qwen3/Qwen3-MoE, Gemma/Gemma 2,
DeepSeek-V2/V3) and returns a :class:`xlcalc.catalog.Model`, so every face that takes ``--model``
takes a config too. Key names follow the ``transformers`` configuration classes of each family
(``LlamaConfig``, ``MixtralConfig``, ``Qwen2MoeConfig``, ``DeepseekV3Config``, ...). A key the family
needs and the file lacks is an error naming every missing key at once; a layout the catalog cannot
describe (an MoE layer pattern other than "the first k layers dense") is refused, never approximated.

What is not counted, each well under 0.1 % of the total: Qwen2's q/k/v biases, the Qwen2-MoE shared-expert
gate (one vector per layer), Gemma 2's extra pre/post-FFN norms.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .catalog import Model
from .errors import InputError
from .recipes import DEFAULT_SEQ_LEN
from .untrusted import MAX_DEPTH, check_text, check_value, read_limited

__all__ = ["FAMILIES", "read_hf_config", "model_from_hf_config"]

MAX_CONFIG_BYTES = 1_000_000

# model_type -> (kind, tie_word_embeddings when the file does not say: the transformers class default)
FAMILIES: dict[str, tuple[str, bool]] = {
    "llama": ("dense", False),
    "mistral": ("dense", False),
    "qwen2": ("dense", False),
    "qwen3": ("dense", False),
    "gemma": ("dense", True),
    "gemma2": ("dense", True),
    "mixtral": ("mixtral", False),
    "qwen2_moe": ("qwen_moe", False),
    "qwen3_moe": ("qwen_moe", False),
    "deepseek_v2": ("deepseek", False),
    "deepseek_v3": ("deepseek", False),
}

_COMMON = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
_NEEDS = {
    "dense": ("intermediate_size",),
    "mixtral": ("intermediate_size", "num_local_experts", "num_experts_per_tok"),
    "qwen_moe": ("num_experts", "num_experts_per_tok", "moe_intermediate_size"),
    "deepseek": ("intermediate_size", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
                 "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"),
}


class _HugeNumber(str):
    """A JSON integer of more digits than any setting has (kept as text, so the key can be named)."""


def read_hf_config(path: str | Path) -> dict[str, Any]:
    """The JSON object of a ``config.json`` file (a clear :class:`InputError` for a missing, huge, special or
    broken file: the size is checked before anything is read, a FIFO or device is never opened for reading)."""
    raw = read_limited(path, "config", MAX_CONFIG_BYTES, "config.json file")
    try:
        data = json.loads(raw.decode("utf-8"), parse_int=lambda t: int(t) if len(t) <= 30 else _HugeNumber(t),
                          parse_constant=float)  # NaN, Infinity: refused by key
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError("config", str(path), "a UTF-8 JSON file", str(exc)) from None
    except (RecursionError, ValueError) as exc:
        raise InputError("config", str(path), "a JSON file of model settings",
                         "nested too deeply" if isinstance(exc, RecursionError) else str(exc)) from None
    if not isinstance(data, dict):
        raise InputError("config", str(path), "a JSON object of model settings (a Hugging Face config.json)")
    return data


def _check_nested(key: str, v: Any, depth: int) -> None:
    if isinstance(v, _HugeNumber):
        raise InputError(key, f"a number of {len(v.lstrip('-'))} digits", "a number of at most 30 digits")
    if isinstance(v, (dict, list)) and depth >= MAX_DEPTH:
        raise InputError(key, "(nested)", f"a value nested at most {MAX_DEPTH} levels deep")
    if isinstance(v, dict):
        for k2, v2 in v.items():
            check_text(f"{key}.{k2}", str(k2))
            _check_nested(f"{key}.{k2}", v2, depth + 1)
    elif isinstance(v, list):
        for i, v2 in enumerate(v):
            _check_nested(f"{key}[{i}]", v2, depth + 1)
    else:
        check_value(key, v)


def _file_title(label: str, model_type: str) -> str:
    """A model's name from where its config.json lies, when the file names none: the file's own name, or for a
    file called config.json its folder's (a Hugging Face cache's models--org--name/snapshots/<commit>/: org/name;
    a downloaded repository: its folder), else the model type."""
    path = Path(label)
    if path.stem.lower() != "config":
        return path.stem
    for folder in list(path.absolute().parents)[:3]:
        if folder.name == "snapshots" or re.fullmatch(r"[0-9a-f]{40}", folder.name):
            continue
        if folder.name.startswith("models--"):
            return folder.name[len("models--"):].replace("--", "/")
        if folder.name:
            return folder.name
        break
    return f"{model_type} config.json"


def _int(cfg: Mapping[str, Any], key: str, where: str, minimum: int = 1) -> int:
    """A JSON integer (not 4096.0, not "4096", not true) >= ``minimum``."""
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise InputError(f"{where}: {key}", v, f"a whole number >= {minimum} (a JSON integer)")
    return v


def _opt_int(cfg: Mapping[str, Any], key: str, where: str, default: int, minimum: int = 0) -> int:
    """An optional integer key: absent or null gives ``default``."""
    return default if cfg.get(key) is None else _int(cfg, key, where, minimum)


def _opt(cfg: Mapping[str, Any], key: str, where: str, kind: type, what: str, default: Any = None) -> Any:
    """An optional key of one JSON type (a string "false" is not a boolean)."""
    if (v := cfg.get(key)) is None:
        return default
    if not isinstance(v, kind) or kind is not bool and isinstance(v, bool):
        raise InputError(f"{where}: {key}", v, what)
    return v


def _dense_prefix(cfg: Mapping[str, Any], layers: int, where: str) -> int:
    """Leading dense layers of a Qwen-MoE config (``mlp_only_layers`` + ``decoder_sparse_step``)."""
    step = _opt_int(cfg, "decoder_sparse_step", where, 1, 1)
    only = _opt(cfg, "mlp_only_layers", where, list, "a list of layer numbers", [])
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in only):
        raise InputError(f"{where}: mlp_only_layers", only, f"a list of layer numbers from 0 to {layers - 1}")
    dense = sorted(only)
    if step != 1:
        raise InputError(f"{where}: decoder_sparse_step", step,
                         "1 (every layer MoE); other sparse steps are not modelled")
    if dense != list(range(len(dense))):  # (so at most num_hidden_layers of them: each is below it)
        raise InputError(f"{where}: mlp_only_layers", dense,
                         "the first k layers (dense layers elsewhere are not modelled)")
    return len(dense)


def model_from_hf_config(config: str | Path | Mapping[str, Any], *, name: str | None = None) -> Model:
    """A catalog :class:`~xlcalc.catalog.Model` from a Hugging Face ``config.json`` (a path or its dict).

    Equations are those of :meth:`Model.derived_params`; only the mapping of keys is here:
    layers = num_hidden_layers, h = hidden_size, a = num_attention_heads, kv = num_key_value_heads
    (default a), d_head = head_dim (DeepSeek: qk_nope_head_dim), f = intermediate_size, V = vocab_size,
    tied = tie_word_embeddings; all these families use a gated (SwiGLU/GeGLU) FFN. MoE: Mixtral
    (num_local_experts, top-k, expert size f, every layer MoE), Qwen-MoE (num_experts, top-k,
    moe_intermediate_size; the shared expert of shared_expert_intermediate_size counted as that many
    experts' worth), DeepSeek (n_routed_experts, n_shared_experts, moe_intermediate_size,
    first_k_dense_replace, MLA ranks; the aux-loss-free routing bias of DeepSeek-V3, or of a V2 config whose
    topk_method is "noaux_tc").
    The config gives the context window (max_position_embeddings: the longest sequence its positions allow,
    e.g. 131,072 for Llama 3.1 8B, trained at 8,192), not the training sequence length, so the model takes the
    one default sequence length of every face, xlcalc.recipes.DEFAULT_SEQ_LEN (4,096): ``xlcalc memory`` and
    ``estimate`` use it unless --seq-len is given; ``plan`` asks for --seq-len. The window does not cap it either:
    transformers' LlamaConfig, whose defaults it documents as Llama 2 7B's, says 2048 for a model trained at 4,096
    (tests/data/hf_configs/llama-2-7b.json); the notes state the window beside the length taken.
    """
    if isinstance(config, (str, Path)):
        label = str(config)
        cfg: Mapping[str, Any] = read_hf_config(config)
    elif isinstance(config, Mapping):
        label = name or "config"
        cfg = config
    else:
        raise InputError("config", type(config).__name__, "a path to config.json or its JSON object")
    where = Path(label).name if isinstance(config, (str, Path)) else label
    for k, v in cfg.items():  # every key and value: no NaN, infinity, huge number, control character or deep nesting
        check_text(f"{where}: {k}", str(k))
        _check_nested(f"{where}: {k}", v, 1)
    mtype = cfg.get("model_type")
    if not isinstance(mtype, str) or mtype not in FAMILIES:
        raise InputError(f"{where}: model_type", mtype, "one of " + ", ".join(sorted(FAMILIES)))
    kind, tied_default = FAMILIES[mtype]
    if missing := [k for k in (*_COMMON, *_NEEDS[kind]) if cfg.get(k) is None]:
        raise InputError(f"{where}: " + ", ".join(missing), None, f"given: a {mtype} config.json needs every one of them")

    def need(key: str) -> int:  # a key the family needs: a JSON integer >= 1
        return _int(cfg, key, where)

    def opt(key: str, default: int, minimum: int = 0) -> int:  # an optional integer key
        return _opt_int(cfg, key, where, default, minimum)

    layers, hidden, heads = need("num_hidden_layers"), need("hidden_size"), need("num_attention_heads")
    fields: dict[str, Any] = dict(
        layers=layers, hidden=hidden, heads=heads,
        kv_heads=need("num_key_value_heads") if cfg.get("num_key_value_heads") is not None else None,
        vocab=need("vocab_size"), gated_ffn=True,
        tied_embeddings=_opt(cfg, "tie_word_embeddings", where, bool, "true or false (a JSON boolean, not text)",
                             tied_default))
    if cfg.get("head_dim") is not None and kind != "deepseek":
        fields["head_dim"] = need("head_dim")
    if kind == "dense":
        fields["ffn_hidden"] = need("intermediate_size")
    elif kind == "mixtral":
        fields.update(ffn_hidden=need("intermediate_size"), experts=need("num_local_experts"),
                      experts_active=need("num_experts_per_tok"), moe_ffn_hidden=need("intermediate_size"))
    elif kind == "qwen_moe":
        moe = need("moe_intermediate_size")
        shared = opt("shared_expert_intermediate_size", 0)
        if shared % moe:
            raise InputError(f"{where}: shared_expert_intermediate_size", shared,
                             f"a multiple of moe_intermediate_size = {moe}")
        fields.update(ffn_hidden=opt("intermediate_size", moe, 1), experts=need("num_experts"),
                      experts_active=need("num_experts_per_tok"), moe_ffn_hidden=moe, shared_experts=shared // moe,
                      dense_layers=_dense_prefix(cfg, layers, where))
    else:  # deepseek
        if (freq := opt("moe_layer_freq", 1, 1)) != 1:
            raise InputError(f"{where}: moe_layer_freq", freq, "1 (every layer after the first k is MoE)")
        fields.update(
            ffn_hidden=need("intermediate_size"), experts=need("n_routed_experts"),
            experts_active=need("num_experts_per_tok"), moe_ffn_hidden=need("moe_intermediate_size"),
            shared_experts=opt("n_shared_experts", 0), dense_layers=opt("first_k_dense_replace", 0),
            router_bias=_opt(cfg, "topk_method", where, str, "a routing method name (text)") == "noaux_tc"
            or mtype == "deepseek_v3",
            q_lora_rank=opt("q_lora_rank", 0) or None, kv_lora_rank=need("kv_lora_rank"),
            qk_rope_head_dim=need("qk_rope_head_dim"), head_dim=need("qk_nope_head_dim"), v_head_dim=need("v_head_dim"))
    title = name or _opt(cfg, "_name_or_path", where, str, "a model name (text)", "") or _file_title(label, mtype)
    notes = f"from config.json (model_type {mtype})"
    if cfg.get("max_position_embeddings") is not None:
        window = _int(cfg, "max_position_embeddings", where)
        notes += (f"; context window {window} tokens, not the training sequence length (give it; else "
                  f"{DEFAULT_SEQ_LEN})")
    slug = re.sub(r"[^a-z0-9.\-]+", "-", title.strip().lower()).strip("-.") or "hf-config"
    try:
        return Model(id=slug, name=title, source=f"Hugging Face config.json: {where}", notes=notes, **fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"{where}", err.get("input"), "a consistent architecture", err.get("msg", "")) from None

"""Training frameworks and precisions: the memory defaults of the software a user names, declared once.

A user says what they run — ``--framework transformers --precision amp`` on ``xlcalc memory``, the
``framework`` and ``precision`` arguments of ``MEM_PER_GPU_GB`` — instead of bytes per parameter, bytes per
logit held for the loss, the optimizer step's temporaries, autocast's weight copies and whether gradients are
freed between steps. Each :class:`Profile` holds those five memory inputs for one framework at one precision,
every value with the source that states it (repository, file, what it does). A fact no source gives is left
out of ``facts`` and takes the neutral default of :data:`xlcalc.recipes.MEMORY_DEFAULTS`; :func:`neutral`
names those. An explicit input (a byte flag, ``--recipe``, ``--grads-freed``) wins over the profile.

The default when neither is given is :data:`DEFAULT_FRAMEWORK` at :data:`DEFAULT_PRECISION` — Megatron-Core
with bf16 mixed precision, whose values are the model's defaults (:data:`xlcalc.recipes.DEFAULT_RECIPE`,
``MEMORY_DEFAULTS``; a test checks that they agree).

Precisions: ``bf16`` — pure bf16 (weights, gradients and optimizer states in bf16, no fp32 master copy);
``amp`` — bf16 compute with fp32 master weights (Megatron's and DeepSpeed's mixed precision, FSDP's
``MixedPrecisionPolicy``, fp32 weights under ``torch.autocast``); ``fp32`` — everything in fp32. FP8 is not
offered: the memory model's FP8 term (``bytes_fp8``) has no per-framework source here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import CatalogError, InputError
from .recipes import MEMORY_DEFAULTS, RECIPE_FIELDS, recipe_bytes
from .stack_names import framework_names, name_key, unprofiled_names

__all__ = ["Profile", "FRAMEWORKS", "PRECISIONS", "PROFILE_FIELDS", "PROFILE_INPUTS", "udf_defaults",
           "DEFAULT_FRAMEWORK", "DEFAULT_PRECISION", "FRAMEWORK_ALIASES", "PRECISION_ALIASES", "framework_id",
           "framework_choices", "get_profile", "profile_values", "neutral", "framework_label"]

PRECISIONS: dict[str, str] = {
    "bf16": "pure bf16: weights, gradients and optimizer states in bf16, no fp32 master copy",
    "amp": "bf16 mixed precision: bf16 compute, fp32 master weights",
    "fp32": "fp32 weights, gradients and optimizer states",
}

# The names PyTorch Lightning gives the precisions (Trainer(precision=...), which NeMo's trainer.precision takes too):
# "bf16-mixed" computes in bf16 over fp32 weights, "bf16-true" holds the weights, activations and gradients in bf16,
# "32-true" everything in fp32 (Lightning docs, N-Bit Precision; NVIDIA NeMo docs, Mixed Precision Training,
# Precision Modes). Lightning's older "bf16" meant bf16-mixed; here bf16 is pure bf16, so the answer names it.
PRECISION_ALIASES: dict[str, str] = {"bf16-mixed": "amp", "bf16-true": "bf16", "32-true": "fp32"}

# the memory inputs a profile sets (the recipe's three byte counts by its id)
PROFILE_FIELDS = ("recipe", "logits_buffer_bytes", "optimizer_step_bytes", "autocast_copy_bytes", "grads_freed")
# the stage memory model's inputs a profile sets, by input name (Profile.values)
PROFILE_INPUTS = (*RECIPE_FIELDS, *PROFILE_FIELDS[1:])


@dataclass(frozen=True)
class Profile:
    framework: str
    precision: str
    # input -> (value, source); an input missing here takes its neutral default (MEMORY_DEFAULTS / DEFAULT_RECIPE)
    facts: dict[str, tuple[Any, str]]

    def values(self) -> dict[str, Any]:
        """The stage memory model's inputs the profile sets: the recipe's bytes and the four other inputs, each
        from its fact or the neutral default."""
        return {**recipe_bytes(self.facts["recipe"][0]),
                **{n: self.facts[n][0] if n in self.facts else MEMORY_DEFAULTS[n] for n in PROFILE_FIELDS[1:]}}


# --- the sources, one per fact ------------------------------------------------------------------------------------

_ZERO_GRAD = ("PyTorch torch/optim/optimizer.py and torch/nn/modules/module.py: zero_grad(set_to_none=True) is the "
              "default since PyTorch 2.0, so the gradients are freed between steps")
_HF_LOSS = ("transformers src/transformers/loss/loss_utils.py ForCausalLMLoss: logits = logits.float() before "
            "F.cross_entropy (eager): 4 fp32 log-softmax saved + 4 its gradient + 4 the input gradient = 12 bytes "
            "per logit")
_HF_OPTIM = ("transformers src/transformers/training_args.py: optim defaults to 'adamw_torch_fused' with "
             "torch >= 2.8 (torch.optim.AdamW(fused=True)): the step allocates nothing beyond its states")
_TITAN_LOSS = ("torchtitan torchtitan/components/loss.py cross_entropy_loss: F.cross_entropy(pred.flatten(0, 1)"
               ".float(), ...), compiled only with training.compile (default false): eager loss on upcast logits, "
               "12 bytes per logit")
_TITAN_COMPILED_LOSS = ("torchtitan torchtitan/train.py from bbb1b616e (2025-04-02): with training.compile the loss is "
                        "torch.compile'd with the model; torchtitan/config/job_config.py Compile.components defaults to "
                        "['model', 'loss'] from 08b8b244f (2025-08-20; CompileConfig in torchtitan/config/configs.py and "
                        "BaseLoss._maybe_compile in torchtitan/components/loss.py now): the compiled cross-entropy saves "
                        "the bf16 logits and gives a bf16 gradient, 2 + 2 = 4 bytes per logit (counted and measured on "
                        "CPU by tests/test_memory_loss_torch.py). Before bbb1b616e compile left the loss eager (12); a "
                        "config that wraps the loss in ChunkedLossWrapper (786e26f8e, 2026-04-27) holds less")
_TITAN_OPTIM = ("torchtitan torchtitan/config/job_config.py Optimizer.implementation = 'fused' (torch.optim.AdamW("
                "fused=True)): no step temporaries")
_TITAN_MP = ("torchtitan torchtitan/models/llama3/infra/parallelize.py apply_fsdp: MixedPrecisionPolicy(param_dtype="
             "mixed_precision_param = bfloat16, reduce_dtype = float32) over fp32 sharded parameters: fp32 weights "
             "and gradients, AdamW m, v in fp32 (4 + 4 + 8), FSDP casts the gathered copies (no autocast copies)")
_TUNE_DTYPE = ("torchtune recipes/configs/*/*_full*.yaml dtype: bf16 and recipes/full_finetune_*.py: the model, its "
               "gradients and AdamW m, v in bf16, no fp32 master copy (2 + 2 + 4)")
_TUNE_OPTIM = ("torchtune recipes/configs/llama3_1/8B_full.yaml: optimizer torch.optim.AdamW with fused: True (foreach: "
               "False, the for-loop step, in earlier versions): no step temporaries the size of the model")
_TUNE_LOSS = ("torchtune recipes/configs (162 of 197 configs, llama3_1/8B_full.yaml and llama3_2/3B_full.yaml among "
              "them, since 9c06c8bda, 2025-04-30): loss torchtune.modules.loss.LinearCrossEntropyLoss with compile: "
              "False; torchtune/modules/loss/cross_entropy_loss.py: the output layer and F.cross_entropy(logits.float()) "
              "one chunk at a time (num_output_chunks = 8): every chunk's fp32 log-softmax output saved (4) and, in a "
              "chunk's backward, its gradient and the input's (4/8 + 4/8): 5 bytes per logit (counted and measured on "
              "CPU by tests/test_memory_loss_torch.py)")
_TUNE_COMPILED_LOSS = ("torchtune recipes/full_finetune_single_device.py: with compile: True, training.compile_loss -> "
                       "LinearCrossEntropyLoss.apply_compile_strategy compiles compute_cross_entropy, the chunk's "
                       "output layer and loss in one graph: the bf16 logits of every chunk saved (2), the chunk's "
                       "gradient written into its saved logits' buffer: 2 bytes per logit (counted and measured on CPU "
                       "by tests/test_memory_loss_torch.py)")
_TUNE_ZERO = ("torchtune recipes/full_finetune_single_device.py: self._optimizer.zero_grad(set_to_none=True) after "
              "each step: gradients freed between steps")
_MEG_RECIPE = ("Megatron-LM docs/source/api-guide/dist_optimizer.md: bf16 parameters, fp32 main gradients "
               "(--accumulate-allreduce-grads-in-fp32), fp32 main parameters + Adam m, v (2 + 4 + 12)")
_MEG_FP32 = ("Megatron-LM megatron/training/arguments.py: without --bf16 / --fp16 the model, its main gradients "
             "and Adam m, v are fp32 (4 + 4 + 8)")
_MEG_LOSS = ("Megatron-Core megatron/core/tensor_parallel/cross_entropy.py vocab_parallel_cross_entropy: the fp32 "
             "logits' softmax is saved and turned into the gradient in place: 4 bytes per logit")
_MEG_GRADS = ("Megatron-Core megatron/core/distributed/param_and_grad_buffer.py: a contiguous gradient buffer that "
              "lives across steps (zero_grad_buffer zeroes it): gradients not freed")
_MEG_OPTIM = ("Megatron-Core megatron/core/optimizer/__init__.py: Adam is Transformer Engine's / Apex's FusedAdam: "
              "no step temporaries")
_MEG_CAST = ("Megatron-Core megatron/core/transformer/module.py Float16Module: the model itself is bf16 (fp32 main copies live in the optimizer): no "
             "autocast weight copies")
_DS_RECIPE = ("DeepSpeed docs (ZeRO, bf16: {enabled: true}) and Rajbhandari et al. 2019 §3: 16-bit weights and "
              "gradients, fp32 master weights + Adam m, v (2 + 2 + 12, K = 12)")
_DS_OPTIM = ("DeepSpeed deepspeed/ops/adam/fused_adam.py: the Adam its config builds on GPUs is FusedAdam: no step "
             "temporaries")
_FOUNDRY_MP = ("Composer composer/trainer/mosaic_fsdp_utils.py get_mixed_precision, mixed_precision 'DEFAULT' (the "
               "llm-foundry FSDP configs): param_dtype = the precision (bf16), reduce_dtype left None, over fp32 "
               "sharded parameters: fp32 weights and gradients, AdamW m, v in fp32 (4 + 4 + 8); FSDP casts the "
               "gathered copies (no autocast copies)")
_AUTOCAST = ("PyTorch torch.autocast(bf16) over fp32 weights (transformers Trainer with bf16=True and an fp32 model: "
             "src/transformers/trainer.py autocast_smart_context_manager): each matmul's bf16 copy of its weight is "
             "saved for the backward: 2 bytes per weight")
_NO_AUTOCAST_COPY = ("PyTorch torch/amp/autocast_mode.py: autocast casts fp32 operands only, so 16-bit weights are not "
                     "copied; without autocast (fp32) nothing is cast")


def _p(framework: str, precision: str, **facts: tuple[Any, str]) -> Profile:
    return Profile(framework, precision, dict(facts))


# the facts the profiles of one framework share
_MEG = dict(logits_buffer_bytes=(4.0, _MEG_LOSS), optimizer_step_bytes=(0.0, _MEG_OPTIM),
            autocast_copy_bytes=(0.0, _MEG_CAST), grads_freed=(False, _MEG_GRADS))
_HF = dict(logits_buffer_bytes=(12.0, _HF_LOSS), optimizer_step_bytes=(0.0, _HF_OPTIM))
_TITAN = dict(optimizer_step_bytes=(0.0, _TITAN_OPTIM), autocast_copy_bytes=(0.0, _TITAN_MP),
              grads_freed=(True, _ZERO_GRAD))
_TUNE = dict(optimizer_step_bytes=(0.0, _TUNE_OPTIM), autocast_copy_bytes=(0.0, _NO_AUTOCAST_COPY),
             grads_freed=(True, _TUNE_ZERO))

_PROFILES = (
    _p("megatron", "amp", recipe=("megatron", _MEG_RECIPE), **_MEG),
    _p("megatron", "fp32", recipe=("fp32", _MEG_FP32), **_MEG),
    _p("transformers", "amp", recipe=("fp32", "transformers src/transformers/trainer.py with bf16=True keeps the "
                                      "model's fp32 weights and their fp32 gradients; torch.optim.AdamW m, v in fp32 (4 + 4 + 8)"),
       **_HF, autocast_copy_bytes=(2.0, _AUTOCAST), grads_freed=(True, _ZERO_GRAD)),
    _p("transformers", "bf16", recipe=("torchtune", "transformers src/transformers/modeling_utils.py from_pretrained("
                                       "torch_dtype=torch.bfloat16): bf16 weights and gradients, torch.optim.AdamW m, v in the parameters' dtype "
                                       "(2 + 2 + 4)"),
       **_HF, autocast_copy_bytes=(0.0, _NO_AUTOCAST_COPY), grads_freed=(True, _ZERO_GRAD)),
    _p("transformers", "fp32", recipe=("fp32", "transformers src/transformers/training_args.py bf16 = fp16 = False: "
                                       "fp32 weights, gradients and AdamW m, v (4 + 4 + 8)"),
       **_HF, autocast_copy_bytes=(0.0, _NO_AUTOCAST_COPY), grads_freed=(True, _ZERO_GRAD)),
    _p("torchtitan", "amp", recipe=("fp32", _TITAN_MP), logits_buffer_bytes=(12.0, _TITAN_LOSS), **_TITAN),
    _p("torchtitan-compile", "amp", recipe=("fp32", _TITAN_MP), logits_buffer_bytes=(4.0, _TITAN_COMPILED_LOSS),
       **_TITAN),
    _p("torchtune", "bf16", recipe=("torchtune", _TUNE_DTYPE), logits_buffer_bytes=(5.0, _TUNE_LOSS), **_TUNE),
    _p("torchtune-compile", "bf16", recipe=("torchtune", _TUNE_DTYPE), logits_buffer_bytes=(2.0, _TUNE_COMPILED_LOSS),
       **_TUNE),
    _p("deepspeed", "amp", recipe=("zero", _DS_RECIPE), optimizer_step_bytes=(0.0, _DS_OPTIM),
       autocast_copy_bytes=(0.0, "DeepSpeed deepspeed/runtime/engine.py _configure_distributed_model: "
                                 "with bf16 enabled the model is cast to bf16: no autocast weight copies")),
    _p("llm-foundry", "amp", recipe=("fp32", _FOUNDRY_MP), autocast_copy_bytes=(0.0, _FOUNDRY_MP)),
)

# framework -> precision -> profile; the first precision listed is the framework's default
FRAMEWORKS: dict[str, dict[str, Profile]] = {}
for _prof in _PROFILES:
    FRAMEWORKS.setdefault(_prof.framework, {})[_prof.precision] = _prof

FRAMEWORK_NAMES: dict[str, str] = {
    "megatron": "Megatron-LM / Megatron-Core (NeMo)",
    "transformers": "Hugging Face transformers Trainer (PyTorch, eager loss)",
    "torchtitan": "torchtitan (PyTorch FSDP2, eager; also with only the model compiled: before 2025-04-02, or "
                  "compile.components = ['model'])",
    "torchtitan-compile": "torchtitan with compile enabled (model and loss compiled, torchtitan since 2025-04-02)",
    "torchtune": "torchtune (PyTorch, full fine-tuning recipes)",
    "torchtune-compile": "torchtune with compile: True (model and loss compiled)",
    "deepspeed": "DeepSpeed ZeRO",
    "llm-foundry": "llm-foundry / Composer (PyTorch FSDP)",
}

# Names users know a framework by (xlcalc/data/stacks/names.toml, each with the source that says which software it
# is): the memory framework of the stack a name means, or the alias's own (hf-trainer: transformers) -> its id
FRAMEWORK_ALIASES: dict[str, str] = {n: f for n, f in framework_names().items() if n not in FRAMEWORKS}
if any(f not in FRAMEWORKS for f in FRAMEWORK_ALIASES.values()):
    raise CatalogError("xlcalc/data/stacks: a name means a framework xlcalc.frameworks does not have: "
                       + ", ".join(f"{n} -> {f}" for n, f in FRAMEWORK_ALIASES.items() if f not in FRAMEWORKS))

# software with no profile of its own (names.toml [[no_profile]]; a framework id among them is a framework here):
# a refusal of the name says why
_UNPROFILED: dict[str, str] = {n: why for n, why in unprofiled_names().items() if n not in FRAMEWORKS}

# the answer when neither is given: today's defaults (DEFAULT_RECIPE and MEMORY_DEFAULTS)
DEFAULT_FRAMEWORK = "megatron"
DEFAULT_PRECISION = "amp"


def _name(text: Any) -> str:
    return str(text).strip().lower()


def framework_id(name: Any) -> str:
    """The framework id a name means: an id, or a name it is known by (:data:`FRAMEWORK_ALIASES`), case, spaces and
    underscores ignored; anything else comes back as typed (lower case), for the caller to refuse."""
    key = name_key(name)
    return key if key in FRAMEWORKS else FRAMEWORK_ALIASES.get(key, _name(name))


def framework_choices() -> str:
    """Every name a framework input takes, in words (the refusal of an unknown one lists them)."""
    return ("one of " + ", ".join(FRAMEWORKS) + "; or a name it is known by: "
            + ", ".join(f"{a} ({f})" for a, f in FRAMEWORK_ALIASES.items()))


def get_profile(framework: str | None = None, precision: str | None = None) -> Profile:
    """The profile of a framework at a precision (None: the default framework; the framework's default precision).
    Unknown names raise one :class:`InputError` naming each bad input, its value and the known ones."""
    errors = []
    fw = framework_id(framework) if framework not in (None, "") else DEFAULT_FRAMEWORK
    pr = _name(precision) if precision not in (None, "") and _name(precision) != "default" else None
    pr = PRECISION_ALIASES.get(name_key(pr), pr) if pr is not None else None
    if fw not in FRAMEWORKS:
        errors.append(InputError("framework", framework, framework_choices(), _UNPROFILED.get(name_key(framework), "")))
    if pr is not None and pr not in PRECISIONS:
        errors.append(InputError("precision", precision, "one of " + ", ".join(PRECISIONS)
                                 + " (or default: the framework's usual one); or as PyTorch Lightning names them: "
                                 + ", ".join(f"{a} ({p})" for a, p in PRECISION_ALIASES.items())))
    if errors:
        raise InputError.all(errors)
    known = FRAMEWORKS[fw]
    if pr is None:
        pr = DEFAULT_PRECISION if fw == DEFAULT_FRAMEWORK else next(iter(known))
    if pr not in known:
        raise InputError("precision", precision, f"one of {', '.join(known)} with framework {fw}",
                         f"no source here gives {fw}'s memory at {pr}")
    return known[pr]


def profile_values(framework: str | None = None, precision: str | None = None) -> dict[str, Any]:
    """The memory inputs a framework and precision set (see :meth:`Profile.values`)."""
    return get_profile(framework, precision).values()


def udf_defaults(given: Any) -> dict[str, Any]:
    """MEM_PER_GPU_GB's defaults from its framework and precision arguments (the registry's dynamic defaults)."""
    fw, pr = given.get("framework"), given.get("precision")
    fw = fw if isinstance(fw, str) and fw.strip() else None
    pr = pr if isinstance(pr, str) and pr.strip() else None
    known_pr = (*PRECISIONS, *PRECISION_ALIASES, "default")
    if (fw is not None and framework_id(fw) not in FRAMEWORKS) or (pr is not None and name_key(pr) not in known_pr):
        return {}  # an unknown name: the inputs' validation refuses it, beside every other input not allowed
    return profile_values(fw, pr)


def neutral(profile: Profile) -> tuple[str, ...]:
    """The inputs of ``profile`` that no source gives: they take the neutral default."""
    return tuple(name for name in PROFILE_FIELDS if name not in profile.facts)


def framework_label(framework: str | None, precision: str | None) -> str:
    """The framework and precision a face assumed, in words (``assumed``: neither was given)."""
    p = get_profile(framework, precision)
    given = framework not in (None, "") or precision not in (None, "")
    named = "" if framework in (None, "") or name_key(framework) == p.framework else f" (as {str(framework).strip()})"
    as_pr = (f" (as {str(precision).strip()})" if precision not in (None, "")
             and name_key(precision) not in (p.precision, "default") else "")
    text = f"{p.framework}{named} at {p.precision}{as_pr} ({PRECISIONS[p.precision]})"
    if gaps := neutral(p):
        text += "; no source gives " + ", ".join(gaps) + ": neutral defaults"
    return text if given else text + "; the default (--framework, --precision)"

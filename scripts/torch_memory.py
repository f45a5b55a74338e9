"""PyTorch's own memory accounting of real model code, against the stage memory model, on CPU without a GPU.

Each configuration builds a transformers model (Llama, Qwen2, Mistral, Mixtral, Gemma) from its configuration
with random weights, scaled down in layers and width so that the whole set runs in seconds, and trains it one
step — forward with the model's own loss (``labels=``), backward, ``optimizer.step()``,
``optimizer.zero_grad()`` — under ``torch._subclasses.FakeTensorMode`` (tensors with shapes and dtypes, no
data, no memory) and PyTorch's ``torch.distributed._tools.mem_tracker.MemTracker``, which counts every live
tensor storage by category (parameters, buffers, gradients, optimizer states, activations, temporaries) and
keeps the snapshot at the peak of the total. The optimizer states exist before the tracked step (one step on
zero gradients), as in the steady state of training. Recipes: pure bf16 with AdamW (fused or foreach); fp32
weights under ``torch.autocast(bf16)``; activation checkpointing (``gradient_checkpointing_enable``); peft LoRA
on a frozen bf16 base.

The same configuration goes through the stage memory model (``xlcalc.stage_memory``) as a user gives it to
``xlcalc memory --config config.json``: the model read from the configuration (``xlcalc.hf_config``), the byte
recipe, recompute mode, job and loss of the stack, ``overhead_gb`` 0 (the tracker counts live tensors only) and
gradients freed by ``zero_grad()``. Per category the tracker's peak snapshot is set beside the model's parts.

    python scripts/torch_memory.py --measure          # measurements as JSON on stdout (needs torch, transformers, peft)
    python scripts/torch_memory.py                    # measure and rewrite the section of docs/memory.md
    python scripts/torch_memory.py --check            # exit 1 if that section is out of date

tests/test_memory_harness_torch.py runs ``--measure`` in one child process and checks the comparison and the doc.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.docsplice import splice, write_or_check

DOC = ROOT / "docs" / "memory.md"
BEGIN = "<!-- torch_memory.py: begin -->"
END = "<!-- torch_memory.py: end -->"

# --- the configurations ---------------------------------------------------------------------------------------

# scaled-down shapes of each family (the transformers configuration keys); vocabularies and widths large enough
# that the allocator's 512-byte rounding is negligible, layers few
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": dict(model_type="llama", hidden_size=1024, intermediate_size=2816, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=4, vocab_size=32000, tie_word_embeddings=False),
    "qwen2": dict(model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=2,
                  num_attention_heads=14, num_key_value_heads=2, vocab_size=32768, tie_word_embeddings=False),
    "mistral": dict(model_type="mistral", hidden_size=1024, intermediate_size=3584, num_hidden_layers=2,
                    num_attention_heads=8, num_key_value_heads=2, vocab_size=32768, tie_word_embeddings=False),
    "mixtral": dict(model_type="mixtral", hidden_size=512, intermediate_size=1792, num_hidden_layers=2,
                    num_attention_heads=8, num_key_value_heads=2, vocab_size=32000, num_local_experts=4,
                    num_experts_per_tok=2, tie_word_embeddings=False),
    "gemma": dict(model_type="gemma", hidden_size=1024, intermediate_size=4096, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=1, head_dim=256, vocab_size=32000,
                  tie_word_embeddings=True),
}


@dataclass(frozen=True)
class Config:
    name: str
    family: str
    precision: str = "bf16"          # "bf16": bf16 weights and AdamW states; "autocast": fp32 weights, autocast bf16
    optimizer: str = "fused"         # AdamW implementation: "fused" or "foreach"
    checkpointing: bool = False      # gradient_checkpointing_enable(): each decoder layer recomputed in the backward
    lora_rank: int = 0               # > 0: peft LoRA on a frozen base
    lora_targets: str = "attention"  # xlcalc's names: "qv", "attention" (q, k, v, o), "all_linear"
    seq_len: int = 512
    micro_batch: int = 2
    layers: int = 0                  # 0: the family's


def _configs() -> tuple[Config, ...]:
    out: list[Config] = []
    for fam in FAMILIES:
        # Mixtral's experts are 3-D parameters run by torch._grouped_mm, which takes bf16 only (autocast does not
        # cast for it) and which peft's module names do not reach: no autocast, LoRA on attention only
        moe = fam == "mixtral"
        out += [
            Config(f"{fam}-bf16-fused", fam),
            Config(f"{fam}-bf16-foreach", fam, optimizer="foreach"),
            Config(f"{fam}-bf16-checkpointing", fam, checkpointing=True),
            Config(f"{fam}-lora-attention", fam, lora_rank=16),
            Config(f"{fam}-lora-{'attention' if moe else 'all-linear'}-checkpointing", fam, lora_rank=8,
                   lora_targets="attention" if moe else "all_linear", checkpointing=True),
        ]
        if not moe:
            out.append(Config(f"{fam}-autocast-fused", fam, precision="autocast"))
    out += [
        Config("llama-bf16-fused-seq1024-mb1", "llama", seq_len=1024, micro_batch=1),
        Config("llama-bf16-fused-4layers", "llama", layers=4),
        Config("llama-autocast-foreach-checkpointing", "llama", precision="autocast", optimizer="foreach",
               checkpointing=True),
        Config("llama-lora-qv-seq256-mb4", "llama", lora_rank=32, lora_targets="qv", seq_len=256, micro_batch=4),
        Config("qwen2-autocast-foreach", "qwen2", precision="autocast", optimizer="foreach"),
    ]
    return tuple(out)


CONFIGS = _configs()
BY_NAME = {c.name: c for c in CONFIGS}

# peft target_modules for xlcalc's LoRA targets (the module names of these families)
_PEFT_TARGETS = {"qv": ["q_proj", "v_proj"], "attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
                 "all_linear": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}


def hf_config(c: Config) -> dict[str, Any]:
    """The configuration's config.json keys."""
    layers = {"num_hidden_layers": c.layers} if c.layers else {}
    return {**FAMILIES[c.family], **layers, "max_position_embeddings": max(4096, c.seq_len)}


# --- PyTorch's measurement --------------------------------------------------------------------------------------

CATEGORIES = ("Parameter", "Buffer", "Gradient", "Optstate", "Activation", "Temp", "Other")


def _tracker() -> Any:
    """PyTorch's MemTracker, made to skip the gradient hooks of frozen parameters (a frozen LoRA base): it hooks
    every parameter of every module it enters, and a tensor that does not require a gradient takes no hook. Only
    the global peak is kept (the per-module peaks, which MemTracker updates for every module at every operation,
    are not used here and cost most of the run's time); the counting of storages is MemTracker's own."""
    from copy import deepcopy

    from torch.distributed._tools.mem_tracker import _TOTAL_KEY, MemTracker, _MemRefType

    class Tracker(MemTracker):
        def _update_peak_stats(self, peak_state: Any) -> None:
            for dev, dev_snap in self._curr_mem_snap.items():
                if self._peak_mem.get(dev, 0) < dev_snap[_TOTAL_KEY]:
                    self._peak_mem[dev] = dev_snap[_TOTAL_KEY]
                    self._peak_mem_snap[dev] = deepcopy(dev_snap)

        def _track_module_params_and_buffers(self, module: Any, install_grad_hooks: bool = True) -> tuple[int, int]:
            frozen = [p for p in module.parameters() if not p.requires_grad]
            if not (install_grad_hooks and frozen):
                return super()._track_module_params_and_buffers(module, install_grad_hooks)
            param_memory = sum(w.mem_consumed for p in frozen
                               for w in self._update_and_maybe_create_winfos(p, _MemRefType.PARAM))
            for p in module.parameters():
                if p.requires_grad and self._param_to_grad_hook_handles.get(p) is None:
                    self._update_and_maybe_create_winfos(p, _MemRefType.PARAM)
                    param_memory += p.untyped_storage().nbytes()
                    def hook(g: Any) -> None:
                        self._update_and_maybe_create_winfos(g, _MemRefType.GRAD)
                    self._param_to_grad_hook_handles[p] = (p.register_hook(hook),
                                                           p.register_post_accumulate_grad_hook(lambda q: hook(q.grad)))
            buffer_memory = sum(sum(w.mem_consumed for w in self._update_and_maybe_create_winfos(b, _MemRefType.BUFFER))
                                for b in module.buffers())
            return param_memory, buffer_memory

    return Tracker()


def measure(c: Config) -> dict[str, Any]:
    """One training step of the configuration under FakeTensorMode and MemTracker: the peak snapshot by category
    (bytes), the parameter counts, and the snapshot after the forward."""
    import torch
    import transformers
    from torch._subclasses.fake_tensor import FakeTensorMode

    cfg_dict = hf_config(c)
    cfg = transformers.AutoConfig.for_model(cfg_dict.pop("model_type"), **cfg_dict)
    cfg._attn_implementation = "sdpa"
    weight_dtype = torch.bfloat16 if c.precision == "bf16" else torch.float32
    # the model is built on the meta device (shapes only), LoRA adapters included (peft leaves meta parameters
    # where they are: under FakeTensorMode it would move each adapter with Module.to, which cannot swap fake
    # parameters), then given fake storage on the CPU inside FakeTensorMode
    saved = torch.get_default_dtype()
    torch.set_default_dtype(weight_dtype)
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(cfg)
            if c.lora_rank:
                import peft
                model = peft.get_peft_model(model, peft.LoraConfig(r=c.lora_rank, lora_alpha=2 * c.lora_rank,
                                                                   target_modules=_PEFT_TARGETS[c.lora_targets],
                                                                   lora_dropout=0.0))
    finally:
        torch.set_default_dtype(saved)
    if c.checkpointing:
        model.gradient_checkpointing_enable()
    with FakeTensorMode(allow_non_fake_inputs=True):
        model.to_empty(device="cpu")
        model.tie_weights()          # to_empty gives each module its own tensor: tied embeddings tied again
        model.train()
        trained = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(trained, lr=1e-4, fused=c.optimizer == "fused", foreach=c.optimizer == "foreach")
        for p in trained:            # the optimizer states of the steady state, made by one step on zero gradients
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad()              # set_to_none=True, PyTorch's default since 2.0
        ids = torch.randint(0, cfg.vocab_size, (c.micro_batch, c.seq_len))
        tracker = _tracker()
        tracker.track_external(model, opt)
        with tracker:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=c.precision == "autocast"):
                # transformers' loss (ForCausalLMLoss); the output and its logits dropped, as Trainer.compute_loss does
                loss = model(input_ids=ids, labels=ids).loss
            forward = tracker.get_tracker_snapshot("current")
            loss.backward()
            opt.step()
            opt.zero_grad()
            del loss
        peak = tracker.get_tracker_snapshot("peak")

    def by_category(snap: dict[Any, dict[Any, int]]) -> dict[str, int]:
        (dev_snap,) = snap.values()
        row = {str(getattr(k, "value", k)): int(v) for k, v in dev_snap.items()}
        return {k: row.get(k, 0) for k in (*CATEGORIES, "Total")}

    return dict(config=asdict(c), params=sum(p.numel() for p in model.parameters()),
                trainable_params=sum(p.numel() for p in trained), peak=by_category(peak),
                after_forward=by_category(forward))


def measure_all(names: list[str] | None = None) -> list[dict[str, Any]]:
    return [measure(c) for c in CONFIGS if not names or c.name in names]


# --- the stage memory model's prediction ----------------------------------------------------------------------

# bytes per logit transformers' loss holds at its peak, counted tensor by tensor (ForCausalLMLoss,
# transformers/loss/loss_utils.py: logits = logits.float(), then F.cross_entropy): the fp32 log-softmax output
# that cross_entropy saves (4), in the backward the gradient of the log-softmax output (4) and of its input (4);
# the bf16 logits are not saved (the cast and the output layer do not keep them) and the training loop keeps
# only the loss. PyTorch eager cross-entropy on upcast logits, as tests/test_memory_loss_torch.py measures it.
TRANSFORMERS_LOSS_BYTES = 12.0


def stage_inputs(c: Config) -> dict[str, Any]:
    """The stage memory model's inputs for a configuration, as a user gives them to ``xlcalc memory``."""
    from xlcalc.hf_config import model_from_hf_config
    from xlcalc.model_inputs import model_inputs
    from xlcalc.recipes import get_recipe

    v = model_inputs(model_from_hf_config(hf_config(c), name=c.name))
    # bf16: weights, grads and AdamW's m, v in the parameters' dtype (torchtune's recipe); fp32 weights under
    # autocast, and LoRA adapters (peft keeps them in fp32: autocast_adapter_dtype=True): 4 + 4 + 8
    recipe = get_recipe("torchtune" if c.precision == "bf16" and not c.lora_rank else "fp32")
    v.update(seq_len=c.seq_len, micro_batch=c.micro_batch, bytes_weights=recipe.weights, bytes_grads=recipe.grads,
             bytes_optimizer=recipe.optimizer, recompute="full" if c.checkpointing else "none",
             logits_buffer_bytes=TRANSFORMERS_LOSS_BYTES, overhead_gb=0, grads_freed=True,
             # foreach AdamW's step: one tensor the size and dtype of each trained parameter (MEM_OPTIMIZER_STEP_GB)
             optimizer_step_bytes=recipe.weights if c.optimizer == "foreach" else 0,
             # fp32 weights under torch.autocast(bf16): the bf16 weight copies kept for the backward
             autocast_copy_bytes=2 if c.precision == "autocast" else 0)
    if c.lora_rank:
        v.update(job="lora", lora_rank=c.lora_rank, lora_targets=c.lora_targets)
    return v


def stage_values(c: Config) -> dict[str, Any]:
    """Every step of the stage model for the configuration, by defined name."""
    from xlcalc.stage_memory import stage_memory

    return stage_memory(**stage_inputs(c)).values


def predict(c: Config) -> dict[str, float]:
    """The stage model's parts (bytes) at its peak moment, and its total.

    With gradients freed by ``zero_grad()`` the model's peak is the larger of two moments (``MEM_STAGE_TOTAL_GB``):
    the start of the backward (activations, recompute working set and loss buffers; no gradients) or the
    optimizer step (all gradients and the step's temporaries, no activations). The parts of the other moment are
    0 here, as they are in PyTorch's peak snapshot.
    """
    from xlcalc.stage_memory import stage_memory

    r = stage_memory(**stage_inputs(c))
    parts = {k: v * 1e9 for k, v in r.parts_gb["last"].items()}
    step = r.values["Mem_Last_Optimizer_Step_GB"] * 1e9
    acts = ("activations", "recompute_working", "logits")
    if sum(parts[k] for k in acts) >= parts["gradients"] + step:
        parts["gradients"] = 0.0
    else:           # the optimizer step: MemTracker counts what the step allocates as optimizer states
        parts.update({k: 0.0 for k in acts})
        parts["optimizer"] += step
    return dict(parts, total=r.memory_gb * 1e9)


# --- the comparison ---------------------------------------------------------------------------------------------

# (label, PyTorch's categories at its peak, the model's parts at its peak moment)
COMPARED = (
    ("weights", ("Parameter", "Buffer"), ("weights",)),
    ("gradients", ("Gradient",), ("gradients",)),
    ("optimizer states", ("Optstate",), ("optimizer",)),
    ("activations, loss and temporaries", ("Activation", "Temp"), ("activations", "recompute_working", "logits")),
    ("total", ("Total",), ("total",)),
)


@dataclass
class Row:
    name: str
    measured: dict[str, float]
    predicted: dict[str, float]

    def error(self, label: str) -> float:
        """Predicted / measured - 1; a category that is under 1% of PyTorch's peak (0 bytes: the peak is another
        moment) is judged against the measured total instead."""
        base = max(self.measured[label], 0.01 * self.measured["total"])
        return (self.predicted[label] - self.measured[label]) / base


def compare(measured: list[dict[str, Any]]) -> list[Row]:
    rows = []
    for m in measured:
        name = m["config"]["name"]
        p = predict(BY_NAME[name])
        rows.append(Row(name, {label: float(sum(m["peak"][k] for k in cats)) for label, cats, _ in COMPARED},
                        {label: float(sum(p[k] for k in parts)) for label, _, parts in COMPARED}))
    return rows


def summary(rows: list[Row]) -> dict[str, dict[str, float]]:
    """Per compared category: median and worst absolute error, median signed error."""
    errs = {label: [r.error(label) for r in rows] for label, _, _ in COMPARED}
    return {label: dict(median=statistics.median(map(abs, e)), worst=max(map(abs, e)), signed=statistics.median(e))
            for label, e in errs.items()}


# --- the doc ------------------------------------------------------------------------------------------------------

def _mb(x: float) -> str:
    return f"{x / 1e6:,.1f}"


def _recipe(c: Config) -> str:
    """The recipe a configuration's row of the by-recipe table stands under."""
    if c.precision == "autocast":
        return "fp32 weights under autocast (bf16)"
    return ("LoRA" if c.lora_rank else "bf16") + (", checkpointing" if c.checkpointing else "")


def render(measured: list[dict[str, Any]]) -> str:
    import peft
    import torch
    import transformers

    rows = compare(measured)
    s = summary(rows)
    lines = [
        f"Generated by `python scripts/torch_memory.py` (checked by `tests/test_memory_harness_torch.py`) with "
        f"torch {torch.__version__.split('+')[0]}, transformers {transformers.__version__} and peft "
        f"{peft.__version__}: {len(rows)} configurations of 5 families, each one training step under "
        "`FakeTensorMode` and `MemTracker` on CPU; PyTorch's peak allocated bytes by category beside the stage "
        "model's parts for the same configuration (MB = 1e6 bytes).",
        "",
        "Error = model / PyTorch - 1 per category at the peak (a category PyTorch's peak holds none of is judged "
        "against the peak total where it is under 1% of it).",
        "",
        "| category | median error | worst error | median signed |",
        "|---|---|---|---|",
    ]
    lines += [f"| {label} | {x['median']:.1%} | {x['worst']:.1%} | {x['signed']:+.1%} |" for label, x in s.items()]
    lines += ["", "By recipe (signed: model / PyTorch - 1):", "",
              "| recipe | configurations | activations, loss, temporaries: median signed | worst | total: median "
              "signed | worst |", "|---|---|---|---|---|---|"]
    for group in dict.fromkeys(map(_recipe, CONFIGS)):
        rs = [r for r in rows if _recipe(BY_NAME[r.name]) == group]
        act = [r.error("activations, loss and temporaries") for r in rs]
        tot = [r.error("total") for r in rs]
        lines.append(f"| {group} | {len(rs)} | {statistics.median(act):+.1%} | {max(act, key=abs):+.1%} | "
                     f"{statistics.median(tot):+.1%} | {max(tot, key=abs):+.1%} |")
    lines += ["", "Per configuration, PyTorch / model in MB at each one's peak (a part the peak moment does not hold is "
              "0: with gradients freed, the start of the backward holds no gradients and the optimizer step no "
              "activations):", "",
              "| configuration | weights | gradients | optimizer states | activations, loss, temporaries | total | "
              "total error |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{_mb(r.measured[k])} / {_mb(r.predicted[k])}" for k, _, _ in COMPARED]
        lines.append(f"| {r.name} | " + " | ".join(cells) + f" | {r.error('total'):+.1%} |")
    return "\n".join(lines) + "\n"


def _splice(text: str, body: str) -> str | None:
    return splice(text, BEGIN, END, body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", action="store_true", help="print the measurements as JSON and stop")
    parser.add_argument("--check", action="store_true", help="fail if docs/memory.md is out of date")
    parser.add_argument("--from-json", help="render from measurements saved by --measure instead of measuring")
    parser.add_argument("--only", nargs="*", help="configurations by name (--measure)")
    args = parser.parse_args(argv)
    if args.measure:
        json.dump(measure_all(args.only), sys.stdout)
        return 0
    measured = json.loads(Path(args.from_json).read_text()) if args.from_json else measure_all()
    return write_or_check(DOC, render(measured), BEGIN, END, "torch_memory.py", check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())

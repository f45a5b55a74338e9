"""A scenario's step time: the planner's prediction of the scenario's layout on its stack and global batch.

    >>> from xlcalc.scenario import Scenario
    >>> from xlcalc.scenario_step import step_prediction
    >>> sc = Scenario.build(model="llama3.1-70b", gpu="h100-sxm", n_gpus=128, seq_len=8192, tp=8, pp=4,
    ...                     zero_stage=1, seq_parallel=True, recompute="selective", stack="megatron")
    >>> p = step_prediction(sc)
    >>> p.step_s, p.mfu, p.tokens_per_s_per_gpu     # seconds per optimizer step, fraction of peak, tokens/s

The one step-time model (:func:`xlcalc.planner.layout_prediction`, ``xlcalc plan`` with every layout choice pinned)
asked for the scenario's run: its model (the catalog's, else — or where a number was typed over the catalog's
layers, widths, heads or vocabulary — the architecture of its fields with the catalog model's biases and position
terms, as the sheet computes it), GPU (the catalog's
bandwidths and SMs, with the scenario's peak TFLOP/s, memory and GPUs per node as the workbook's Inputs hold them),
layout (its first and last pipeline stage's layers too), software stack (``stack``) and global batch (``global_batch_tokens``; None: plan's rule, a catalog model's
published batch, else the input is missing). The workbook's StepTime sheet computes the same step from the same
cells (its Stack and Global_Batch_Tokens are these two inputs).
"""

from __future__ import annotations

from .catalog import get_model
from .errors import InputError
from .layout import stage_layer_counts
from .planner import Plan, Settings, arch_from_flags, arch_from_model, layout_prediction
from .scenario import Scenario, architecture

__all__ = ["step_prediction", "typed_over"]

# the architecture the step time reads from a scenario's own fields (the StepTime sheet's cells)
STEP_ARCHITECTURE = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "gated_ffn", "head_dim_given",
                     "tied_embeddings")


def typed_over(sc: Scenario) -> bool:
    """Whether a number was typed over the scenario's catalog model in the architecture the step time reads (the
    workbook's Layers, Hidden, ... cells hold what was typed, not the preset's): then the step is the architecture
    of the scenario's fields with the preset's biases, relative positions and learned position table, as the StepTime
    sheet computes it, not the catalog model's. A mixture of experts is always its catalog model's (its experts are
    no field of the scenario)."""
    if not sc.model:
        return True  # no catalog model: the fields are the architecture
    m = get_model(sc.model)
    preset = architecture(m)
    return not m.experts and any(getattr(sc, k) != preset[k] for k in STEP_ARCHITECTURE)


def step_prediction(scenario: Scenario) -> Plan:
    """The predicted step of ``scenario``'s layout: ``step_s`` (seconds per optimizer step), ``mfu`` (a fraction of
    peak), ``tokens_per_s_per_gpu``, ``days`` (for ``tokens_t``) and the plan's other fields, on ``scenario.stack``
    with ``scenario.global_batch_tokens``.

    Raises :class:`InputError` for a scenario without a GPU from the catalog (the step time takes its bandwidths),
    without a global batch (and no published one), or whose layout the planner cannot run, in the planner's words.
    """
    sc = scenario
    if not sc.gpu:
        raise InputError("gpu", None, "a GPU id from the catalog (xlcalc catalog gpus)",
                         "the step time takes the GPU's HBM and link bandwidths and SMs from its catalog row")
    model = None if typed_over(sc) else sc.model
    arch = None if model else arch_from_flags(sc.layers, sc.hidden, sc.heads, sc.kv_heads, sc.ffn_hidden, sc.vocab,
                                              sc.gated_ffn, sc.seq_len, sc.head_dim_given or None, sc.tied_embeddings)
    if arch and sc.model:  # typed over a preset: the typed shape keeps the preset's biases and position terms
        typed = {k: getattr(arch, k) for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "gated_ffn", "vocab",
                                               "tied_embeddings")}
        arch = arch_from_model(get_model(sc.model).model_copy(update={**typed, "ffn_hidden": sc.ffn_hidden}))
    stage_layers = None  # the split the scenario gives (its first and last stage's layers), as the sheet takes it
    if sc.pp > 1 and (sc.first_stage_layers or sc.last_stage_layers):
        first, middle, last = stage_layer_counts(sc.layout_values())
        stage_layers = [int(first), *[int(middle)] * (sc.pp - 2), int(last)]
    settings = Settings(stack=sc.stack, peak_tflops=sc.peak_tflops, memory_gb=sc.gpu_memory_gb,
                        gpus_per_node=sc.gpus_per_node)
    # the scenario's run and layout by name (global_batch_tokens None: plan's rule)
    run = {k: getattr(sc, k) for k in ("gpu", "n_gpus", "seq_len", "global_batch_tokens", "tp", "pp", "cp", "zero_stage",
                                       "seq_parallel", "recompute", "micro_batch", "virtual_stages", "tokens_t")}
    return layout_prediction(model, arch=arch, stage_layers=stage_layers, settings=settings, **run)

"""What a plan assumes for the inputs left out: a catalog model's published pre-training sequence length and
batch (another model's: the default sequence length), the architecture of a model named, and one error naming every input still missing."""

from __future__ import annotations

from typing import Any

from .. import catalog
from ..errors import CatalogError, InputError, missing
from ..formulas import compute as fc
from ..recipes import DEFAULT_SEQ_LEN
from .answer import Assumed
from .steptime import Arch, arch_from_model

__all__ = ["catalog_model", "default_global_batch_tokens", "default_tokens_t", "resolve_model", "run_defaults"]


def catalog_model(model: Any) -> catalog.Model | None:
    """The model catalog's entry when ``model`` is one (an id, or the catalog's own record), else None."""
    if isinstance(model, str):
        return catalog.get_model(model)
    if isinstance(model, catalog.Model):
        try:
            entry = catalog.get_model(model.id)
        except (InputError, CatalogError):  # a model of a config.json: not in the catalog
            return None
        return entry if entry == model else None
    return None


def default_global_batch_tokens(model: Any) -> float | None:
    """The global batch (tokens per step) a run has when none is given: a catalog model's published pre-training
    batch; None for a model the catalog has no batch of, or one not in the catalog (no face assumes a batch for a
    model it does not know). The one rule: plan's (run_defaults) and the scenario's (xlcalc.scenario.Scenario.build,
    so the workbook's Global_Batch_Tokens)."""
    entry = catalog_model(model)
    return float(entry.global_batch_tokens) if entry is not None and entry.global_batch_tokens else None


def default_tokens_t(model: Any, params_b: float, name: str) -> tuple[float, str]:
    """(training tokens in trillions, where they come from) when none are given: a catalog model's published
    pre-training tokens, else 20 per parameter (Chinchilla, compute-optimal). The one rule: plan's and the
    scenario's (xlcalc.scenario.Scenario.build with a model, so estimate's)."""
    if (entry := catalog_model(model)) is not None and entry.pretrain_tokens_t:
        return entry.pretrain_tokens_t, f"published, {entry.pretrain_tokens_source}"
    per_param = fc.chinchilla_tokens_t.defaults["tokens_per_param"]
    return (fc.chinchilla_tokens_t.raw(params_b=params_b, tokens_per_param=per_param),
            f"{per_param:g} per parameter x {params_b:,.3g} B parameters, compute-optimal "
            f"({fc.chinchilla_tokens_t.source}); no published token count for {name}")


def run_defaults(model: Any, arch: Arch | None, gpu: Any, seq_len: Any, global_batch_tokens: Any,
                 also_lacking: dict[str, str]) -> tuple[Any, Any, dict[str, Assumed]]:
    """(seq_len, global_batch_tokens, what was assumed): a catalog model's published pre-training sequence length
    and global batch where not given (another model's sequence length: DEFAULT_SEQ_LEN, the one memory and estimate
    take; its batch has no default); every input still missing (the model and GPU too, and ``also_lacking``:
    name -> what it must be) raises one InputError naming each."""
    entry = catalog_model(model) if arch is None else None
    assumed: dict[str, Assumed] = {}
    if seq_len is None and (model is not None or arch is not None):  # a catalog model, a config.json or an arch
        seq_len = entry.seq_len if entry is not None else DEFAULT_SEQ_LEN
        assumed["seq_len"] = Assumed(value=seq_len, shown=f"{seq_len} tokens", basis=(
            f"{entry.name}'s pre-training sequence length, model catalog" if entry is not None
            else "the default sequence length of a model outside the catalog, as memory and estimate take it"))
    if global_batch_tokens is None and entry is not None and default_global_batch_tokens(entry) is not None:
        global_batch_tokens = default_global_batch_tokens(entry)
        assumed["global_batch_tokens"] = Assumed(
            value=global_batch_tokens, shown=f"{global_batch_tokens:,.0f} tokens "
                                            f"({global_batch_tokens / entry.seq_len:,.0f} sequences)",
            basis=f"{entry.name}'s published pre-training batch, model catalog")
    if lacking := [n for n, v in (("model", model if arch is None else arch), ("gpu", gpu),
                                  ("global_batch_tokens", global_batch_tokens)) if v is None] + list(also_lacking):
        why = {"model": "a model id from the catalog or an architecture (layers, hidden, heads)",
               "gpu": "a GPU name from the catalog, e.g. H100, A800",
               "global_batch_tokens": "tokens per step, at least one sequence (CLI --global-batch-tokens); "
                                      + (f"the model catalog has no published batch of {entry.name} in whole "
                                         "sequences" if entry is not None else "only a catalog model has a default"),
               **also_lacking}
        raise missing(lacking, lambda n: why[n], where="plan")
    return seq_len, global_batch_tokens, assumed


def resolve_model(model: Any, arch: Arch | None) -> Arch:
    """``arch``, else the architecture of ``model`` (a catalog id or model; its callers check that one is given)."""
    if arch is not None:
        return arch
    return arch_from_model(model if isinstance(model, catalog.Model) else catalog.get_model(model))

"""Published measured runs as prediction queries, every measurement on one basis.

:func:`to_query` turns a record of ``xlcalc/data/reference/throughput_runs.json`` into a :class:`Query`
(architecture, GPU, GPU count, the layout the source pins, precision, the measured tokens/s per GPU and where it
comes from) or a :class:`Skip` with the reason; :func:`deduplicate` keeps the newest release of each
Megatron-Bridge recipe (model x GPU type x GPU count x precision recipe).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Optional, cast

from .. import catalog
from ..errors import CatalogError
from ..formulas.steptime import mfu_from_step
from ..planner.stacks import STACKS
from ..planner.steptime import arch_from_model, flops_per_token
from .facts import PROFILE_FACT_KEYS, SOURCE_FACT_KEYS

# package data, read through importlib.resources
RUNS_JSON: Traversable = files("xlcalc") / "data" / "reference" / "throughput_runs.json"
# Software-stack profiles (xlcalc.planner.stacks): one fitted matmul efficiency each; the stack's documented facts
# are its Settings.
PROFILES = {src: stack.id for stack in STACKS.values() for src in stack.sources}
PROFILE_TEXT = {stack.id: stack.name for stack in STACKS.values()}
PROFILE_SETTINGS: dict[str, dict[str, Any]] = {stack.id: dict(stack.settings) for stack in STACKS.values()}

# Settings a source documents for its own runs (not fitted): DeepSeek-V3 Technical Report §3.2.1-3.2.2 and §3.3 --
# DualPipe overlaps the all-to-all with computation (ep_overlap 1), node-limited routing sends each token to at most
# 4 nodes, 20 of the H800's 132 SMs run the communication, dispatch in FP8 and combine in BF16 (1.5 bytes on average).
SOURCE_SETTINGS = {"deepseek-v3-report": dict(ep_overlap=1.0, max_nodes_per_token=4, comm_sms=20, a2a_bytes=1.5)}

# Sources whose Megatron-LM predates sequence parallelism, which Korthikanti et al. 2022 introduced (Megatron-LM's
# --sequence-parallel arrived with it): where their layout does not say, the TP ranks hold the norms, dropouts and
# residuals of the whole sequence (seq_parallel False) instead of the planner's default (on with TP > 1).
NO_SEQUENCE_PARALLEL = {"narayanan2021", "megatron-lm-readme-a100"}

# Scale-out bandwidth per GPU of the vendors' reference systems, used only where the GPU catalog has none.
# DGX A100: eight 200 Gb/s HDR HCAs per 8 GPUs = 25 GB/s per GPU (also Narayanan et al. 2021 §5; llm-foundry's
# A100 nodes: 1600 Gb/s RoCE per 8 GPUs). DGX H100 / HGX H200: one 400 Gb/s NDR port per GPU = 50 GB/s.
SCALEOUT_GB_S = {"a100-80gb": 25, "a100-40gb": 25, "h100-sxm": 50, "h200": 50, "h800": 50, "b200": 50}

# GPUs the runs name without a catalog id: the catalog GPU whose figures stand in, and why.
GPU_STAND_IN = {
    "Ampere GPU (model not stated; A100-class)": (
        "a100-80gb", "MegaScale's 'NVIDIA Ampere GPUs' (the stated figures imply the 312 TFLOP/s A100 peak); A100 80GB figures"),
    "H100 (96GB HBM2e, 500 W, Grand Teton)": (
        "h100-sxm", "torchtitan's Grand Teton H100 (96 GB, 500 W, peak not published); H100 SXM figures and peak, 96 GB"),
}
# memory and HBM bandwidth the source states for such a GPU (torchtitan's doc: "96GB HBM2e with 2.4 TB/sec")
GPU_STATED = {"H100 (96GB HBM2e, 500 W, Grand Teton)": dict(memory_gb=96.0, hbm_tb_s=2.4)}

# GPUs whose figures no source gives: their runs are predicted with a stand-in's figures and scored apart, out of
# the headline and out of every calibration, until a source gives the part's peak, clocks or MAMF.
SCORED_APART = {
    "H100 (96GB HBM2e, 500 W, Grand Teton)": (
        "torchtitan's benchmark doc: 'the actual peak TFLOPs number is between SXM and NVL, and we don't know its "
        "exact value'; 96 GB HBM2e at 2.4 TB/s and a 500 W power limit, against the H100 SXM's 80 GB HBM3 at "
        "3.35 TB/s and 700 W: neither the peak nor the sustained GEMM rate (MAMF) of this part is published"),
}

# Activation recomputation a source's own training code sets where its results table does not state it.
# Megatron-Bridge: Megatron-Core recomputes nothing by default (TransformerConfig.recompute_granularity None), the
# recipes clear it (cfg.model.recompute_granularity = None, e.g. recipes/llama, recipes/gpt_oss,
# scripts/performance/configs/qwen/qwen3_llm_pretrain.py), and the performance scripts turn it on only for a
# workload config that names recompute_num_layers (full, by block) or recompute_modules (selective by module)
# (scripts/performance/utils/overrides.py _set_recompute_overrides). The workload configs
# (scripts/performance/configs/*/*_workload_base_configs.py, Megatron-Bridge commit c8327cf^, the last that holds
# them) name neither for Llama 3 8B and 70B, Llama 3.1 405B and Qwen3-30B-A3B / 235B-A22B on any GPU, and for
# GPT-OSS-120B only the 'layernorm' and 'moe_act' modules, which recompute no matmul (charged as no recomputation).
# Kept unstated (the planner's choice): Llama 3 8B on H100 FP8-CS (recompute_num_layers=5) and DeepSeek-V3 / Kimi K2
# (their configs recompute the MLA up-projections and MLPs by module, which the step-time model has no name for).
# Some dense configs offload activations to CPU memory instead (cpu_offloading_num_layers), which the memory model
# does not count: such a run is evaluated at its layout anyway and flagged "does not fit".
RECIPE_RECOMPUTE: dict[str, dict[str, str]] = {
    "megatron-bridge-perf-summary": {"Llama 3 8B": "none", "Llama 3 70B": "none", "Llama 3.1 405B": "none",
                                     "Qwen3-30B-A3B": "none", "Qwen3-235B-A22B": "none", "GPT-OSS 120B": "none"},
}
RECIPE_RECOMPUTE_EXCEPT = {("megatron-bridge-perf-summary", "Llama 3 8B", "H100 SXM")}
# Single Megatron-Bridge configs of the models above that are left to the planner, keyed as A2A_OVERLAP_CONFIGS:
# DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V1/V2 (TP1 PP2 EP32) set recompute_modules=[] (no recomputation).
RECIPE_RECOMPUTE_CONFIGS = {("DeepSeek-V3", "GB300", "fp8-mx", 1, 2, 32): "none"}


def _recipe_recompute(rec: dict) -> Optional[str]:
    """Recompute as the source's training code sets it (RECIPE_RECOMPUTE), None where it is not known."""
    src, name = rec["source_id"], rec["model"]["name"]
    if src == "megatron-bridge-perf-summary" and _config_key(rec) in RECIPE_RECOMPUTE_CONFIGS:
        return RECIPE_RECOMPUTE_CONFIGS[_config_key(rec)]
    if (src, name, rec["gpu"]) in RECIPE_RECOMPUTE_EXCEPT:
        return None
    return RECIPE_RECOMPUTE.get(src, {}).get(name)


# Megatron-Bridge workload configs that set moe_a2a_overlap=True (scripts/performance/configs/*_workload_base_configs.py,
# commit c8327cf^): Megatron-Core's EP all-to-all overlap hides the dispatch / combine of one micro-batch behind the
# computation of another (Settings.ep_overlap = 1, as DeepSeek-V3's DualPipe). Keyed by (model, GPU as the runs name it,
# precision recipe, TP, PP, EP): a run is taken to be that config only when its layout is the config's.
A2A_OVERLAP_CONFIGS = {
    ("DeepSeek-V3", "B200", "fp8-mx", 1, 8, 32), ("DeepSeek-V3", "B300", "fp8-mx", 1, 8, 8),
    ("DeepSeek-V3", "GB200", "fp8-mx", 1, 4, 64), ("DeepSeek-V3", "GB300", "fp8-mx", 1, 2, 32),
    ("Qwen3-235B-A22B", "GB200", "fp8-mx", 1, 8, 32), ("Qwen3-235B-A22B", "GB300", "fp8-mx", 1, 4, 32),
    ("Qwen3-235B-A22B", "H100 SXM", "bf16", 2, 8, 32), ("Qwen3-235B-A22B", "H100 SXM", "fp8-cs", 2, 8, 32),
    ("Qwen3-30B-A3B", "B300", "fp8-mx", 1, 1, 8), ("Qwen3-30B-A3B", "GB200", "fp8-mx", 1, 1, 8),
    ("Qwen3-30B-A3B", "GB300", "fp8-mx", 1, 1, 8),
    ("GPT-OSS 120B", "GB200", "bf16", 1, 1, 64), ("GPT-OSS 120B", "GB200", "fp8-mx", 1, 1, 64),
    ("GPT-OSS 120B", "GB300", "fp8-mx", 1, 1, 16),
}


def _precision_recipe(rec: dict) -> str:
    """bf16, fp8-mx (MXFP8), fp8-cs (current scaling; Megatron-Bridge's H100 'FP8' rows), fp4 ..."""
    prec = rec["precision"]
    if prec.get("matmul") != "fp8":
        return str(prec.get("matmul"))
    return "fp8-mx" if "MXFP8" in str(prec.get("fp8_recipe")) else "fp8-cs"


def _config_key(rec: dict) -> tuple:
    """(model, GPU as the run names it, precision recipe, TP, PP, EP): which workload config a run is."""
    lay = rec["layout"]
    return (rec["model"]["name"], rec["gpu"], _precision_recipe(rec), lay["tp"], lay["pp"], lay.get("ep") or 1)


def _recipe_settings(rec: dict) -> dict[str, Any]:
    """Settings a run's own training config pins (A2A_OVERLAP_CONFIGS), or its row states: the Megatron-Core MoE
    model zoo's '+1f1b overlap' (its Notes cell) is the same EP all-to-all overlap with another micro-batch."""
    overlap = ("1f1b overlap" in rec["quote"] if rec["source_id"] == "megatron-moe-modelzoo"
               else rec["source_id"] == "megatron-bridge-perf-summary" and _config_key(rec) in A2A_OVERLAP_CONFIGS)
    return dict(ep_overlap=1.0) if overlap else {}


SHARDING_ZERO = {"fsdp_full_shard": 3, "zero3": 3, "megatron_fsdp": 3, "fsdp_grad_op": 2, "zero1": 1, "none": 0}
RECOMPUTE = {"none": "none", "full": "full", "megatron_selective": "selective", "selective_op": "op_selective",
             "selective_other": "selective"}


@dataclass(frozen=True)
class Query:
    """One measured run as a prediction query, with its measurement on the common basis."""

    id: str
    source_id: str
    profile: str
    gpu: str                        # catalog id whose figures the prediction uses
    gpu_label: str                  # the GPU as the source names it
    n_gpus: int
    tp: int
    pp: int
    cp: int
    ep: int
    dp: int
    virtual_stages: Optional[int]
    micro_batch: Optional[int]
    global_batch: int               # sequences
    seq_len: int
    recompute: Optional[str]        # planner's name, None: not stated
    zero_stage: Optional[int]       # None: not stated
    seq_parallel: Optional[bool]
    precision: str                  # "bf16", "fp8" or "fp4" (the GEMMs)
    moe: bool
    model: catalog.Model = field(repr=False)
    params_b: float
    flops_per_token: float          # model FLOPs per token (planner's count)
    peak_tflops: float              # dense BF16 peak of the catalog GPU
    measured_tokens_s: float        # tokens/s per GPU
    basis: str                      # where measured_tokens_s comes from
    settings: tuple = ()            # extra Settings of the profile and system, as (name, value) pairs
    stage_layers: Optional[tuple[int, ...]] = None
    etp: Optional[int] = None       # expert tensor-parallel size the source states (MoE), None: not stated
    facts: tuple[str, ...] = ()     # facts of xlcalc.validation.facts.FACTS that apply to the run

    @property
    def measured_mfu(self) -> float:
        return mfu_from_step.raw(flops_per_token=self.flops_per_token, tokens=self.measured_tokens_s, step_s=1,
                                 n_gpus=1, peak_tflops=self.peak_tflops)

    def layout(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}", f"CP{self.cp}" if self.cp > 1 else "",
                 f"EP{self.ep}" if self.ep > 1 else "", f"DP{self.dp}"]
        return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class Skip:
    id: str
    source_id: str
    reason: str


def load_runs(path: Traversable | str = RUNS_JSON) -> list[dict]:
    return json.loads((Path(path) if isinstance(path, str) else path).read_text(encoding="utf-8"))


def _model(rec: dict) -> catalog.Model:
    m = rec["model"]
    if m.get("catalog_id"):
        try:
            return catalog.get_model(m["catalog_id"])
        except CatalogError:
            pass
    moe = m.get("moe") or {}
    return catalog.Model(
        id=rec["id"], name=m["name"], source=m.get("arch_source") or rec["source"], layers=m["layers"],
        hidden=m["hidden"], heads=m["heads"], kv_heads=m.get("kv_heads"), head_dim=m.get("head_dim"),
        ffn_hidden=m["ffn_hidden"], gated_ffn=bool(m.get("gated_ffn")), vocab=m["vocab"],
        tied_embeddings=bool(m.get("tied_embeddings")), seq_len=rec["layout"]["seq_len"],
        biases=bool(m.get("biases")), learned_positions=bool(m.get("learned_positions")),
        experts=moe.get("experts", 0), experts_active=moe.get("experts_active", 0),
        shared_experts=moe.get("shared_experts", 0), moe_ffn_hidden=moe.get("moe_ffn_hidden"),
        dense_layers=moe.get("dense_layers", 0), published_params_b=m.get("params_b"),
        published_active_params_b=moe.get("active_params_b"),
    )


def _gpu(rec: dict) -> tuple[str, catalog.GPU]:
    """(catalog id, row) of the run's GPU; a CatalogError names what is missing."""
    gid = rec.get("gpu_catalog_id") or GPU_STAND_IN.get(rec["gpu"], (None,))[0]  # the record's id, or a stand-in's
    if gid:
        return gid, catalog.get_gpu(gid)
    row = catalog.get_gpu(rec["gpu"])  # a GPU the catalog has gained since the record was written
    return row.id, row


def _precision(rec: dict) -> str:
    mm = (rec["precision"].get("matmul") or "").lower()
    # bf16, fp16 and "fp16/bf16": the same 16-bit tensor-core peak
    return next((p for p in ("fp8", "fp4") if mm.startswith(p)), "bf16")


def _measured_tokens_s(rec: dict, arch, seq_len: int, recompute: Optional[str]) -> tuple[Optional[float], str]:
    """Tokens/s per GPU and where it comes from (stated, derived by the record, or from the stated TFLOP/s)."""
    me = rec["measured"]
    derived = me.get("derived") or {}
    if me.get("tokens_per_s_per_gpu"):
        return me["tokens_per_s_per_gpu"], "tokens/s stated"
    if derived.get("tokens_per_s_per_gpu"):
        return derived["tokens_per_s_per_gpu"], "tokens/s derived in the record"
    if step := me.get("iteration_time_s") or me.get("step_time_s"):
        lay = rec["layout"]
        return (lay["global_batch_sequences"] * lay["seq_len"] / step / rec["n_gpus"],
                "global batch x sequence / stated step time / GPUs")
    conv = me.get("flops_convention", "")
    tflops = me.get("tflops_per_gpu") or derived.get("tflops_per_gpu")
    if conv.startswith("hardware"):
        if tflops is None:
            return None, "no TFLOP/s"
        hf = flops_per_token(arch, seq_len, recompute or "full")[1]
        return tflops * 1e12 / hf, "hardware TFLOP/s / our hardware FLOPs per token (recompute counted)"
    if conv.startswith("model"):
        if tflops is None and me.get("mfu"):
            row = _gpu(rec)[1]
            tflops = me["mfu"] * cast(float, row.bf16_tflops or row.fp16_tflops)  # to_query skips a GPU with neither
            basis = "stated MFU x stated peak / our model FLOPs per token"
        else:
            basis = "model TFLOP/s / our model FLOPs per token"
        if tflops is None:
            return None, "no TFLOP/s"
        return tflops * 1e12 / flops_per_token(arch, seq_len)[0], basis
    return None, f"no throughput in a known convention ({conv})"


def _without(settings: dict[str, Any], keys_of: dict[str, tuple[str, ...]], off: frozenset[str],
             applied: list[str]) -> dict[str, Any]:
    """``settings`` without the keys of the facts in ``off``; the facts that set a key are added to ``applied``."""
    out = dict(settings)
    for fact, keys in keys_of.items():
        if any(k in out for k in keys):
            applied.append(fact)
            if fact in off:
                for k in keys:
                    out.pop(k, None)
    return out


def to_query(rec: dict, off: frozenset[str] = frozenset()) -> Query | Skip:
    """A predictable record as a query; a Skip with the reason otherwise.

    ``off``: facts of :data:`xlcalc.validation.facts.FACTS` left out (their neutral state); the measurement is
    the same with or without them. :attr:`Query.facts` names the facts that apply to the run.
    """
    rid, src = rec["id"], rec["source_id"]
    if not rec.get("predictable"):
        return Skip(rid, src, "record not predictable (" + (rec.get("notes") or "")[:80].rstrip() + "...)")
    lay = rec["layout"]
    try:
        gid, row = _gpu(rec)
    except CatalogError:
        return Skip(rid, src, f"GPU {rec['gpu']!r} is not in the GPU catalog")
    peak = row.bf16_tflops or row.fp16_tflops
    if not peak:
        return Skip(rid, src, f"the GPU catalog has no dense bf16/fp16 peak for {row.name}")
    if rec["model"].get("vocab") is None:
        return Skip(rid, src, "vocabulary not stated")
    try:
        model = _model(rec)
    except (ValueError, CatalogError) as e:
        return Skip(rid, src, f"architecture not expressible: {e}")
    arch = arch_from_model(model)
    seq = lay["seq_len"]
    applied: list[str] = []
    recompute = RECOMPUTE.get(rec["recompute"]) if rec.get("recompute") else _recipe_recompute(rec)
    tokens, basis = _measured_tokens_s(rec, arch, seq, recompute)
    if not rec.get("recompute") and recompute is not None:
        applied.append("recipe-recompute")
        if "recipe-recompute" in off:
            recompute = None
    if tokens is None:
        return Skip(rid, src, basis)
    if (profile := PROFILES.get(src)) is None:
        return Skip(rid, src, f"no software-stack profile for source {src}")
    extra: dict[str, Any] = {
        **_without(PROFILE_SETTINGS.get(profile, {}), PROFILE_FACT_KEYS, off, applied),
        **_without({**SOURCE_SETTINGS.get(src, {}), **_recipe_settings(rec)}, SOURCE_FACT_KEYS, off, applied)}
    if not row.scaleout_gb_s and gid in SCALEOUT_GB_S:
        extra["scaleout_gb_s"] = SCALEOUT_GB_S[gid]
    extra.update(GPU_STATED.get(rec["gpu"], {}))
    # narayanan2021's PTD-P: tensor + pipeline + plain data parallelism (ZeRO only as the §5.2 baseline)
    zero = 0 if src == "narayanan2021" and lay.get("sharding") is None else SHARDING_ZERO.get(lay.get("sharding"))
    tp, pp, cp = lay["tp"], lay["pp"], lay.get("cp") or 1
    dp = rec["n_gpus"] // (tp * pp * cp)
    stages = _uneven(arch.layers, pp) if pp > 1 and arch.layers % pp else None
    return Query(
        id=rid, source_id=src, profile=profile, gpu=gid, gpu_label=rec["gpu"], n_gpus=rec["n_gpus"], tp=tp, pp=pp,
        cp=cp, ep=lay.get("ep") or 1, dp=dp, virtual_stages=lay.get("virtual_stages"),
        micro_batch=lay.get("micro_batch"), global_batch=lay["global_batch_sequences"], seq_len=seq,
        recompute=recompute, zero_stage=zero,
        seq_parallel=False if src in NO_SEQUENCE_PARALLEL and lay.get("sequence_parallel") is None
        else lay.get("sequence_parallel"),
        precision=_precision(rec), moe=bool(model.experts), model=model, params_b=model.params_b,
        flops_per_token=flops_per_token(arch, seq)[0], peak_tflops=peak, measured_tokens_s=float(tokens), basis=basis,
        settings=tuple(sorted(extra.items())), stage_layers=stages,
        etp=lay.get("expert_tp") if model.experts else None, facts=tuple(sorted(set(applied))),
    )


def _uneven(layers: int, pp: int) -> tuple[int, ...]:
    """``layers`` not a multiple of ``pp``: middle stages even, the first and the last stage short (Llama 3: 126 layers
    on PP16 = 7, 8 x 14, 7; DeepSeek-V3's 61 on PP4 = 15, 16, 16, 14), as Megatron-Core's
    num_layers_in_first/last_pipeline_stage and the layout check describe an uneven split."""
    base = layers // pp
    big = base + 1
    mid = big if layers - (pp - 2) * big >= 2 else base
    ends = layers - (pp - 2) * mid  # what the first and last stage hold together (the first one the more)
    return (ends - ends // 2,) + (mid,) * (pp - 2) + (ends // 2,)


def release(rid: str) -> tuple:
    try:
        return tuple(int(x) for x in rid.split("-")[1].split("."))
    except (IndexError, ValueError):
        return ()


def _recipe(q: Query, rec: dict) -> tuple:
    """What makes two Megatron-Bridge rows the same recipe: what a user asks of today's release -- one model on one GPU
    type and GPU count at one precision recipe (BF16, FP8 current scaling, MXFP8, ...). The layout, micro-batch and
    global batch are the release's answer to that question, not part of it: a newer release that re-tunes them
    replaces the older row, as it replaces the older software."""
    prec = rec["precision"]
    return (rec["model"]["name"], rec["gpu"], q.n_gpus, prec.get("matmul"), prec.get("fp8_recipe"))


def _recipe_and_layout(q: Query, rec: dict) -> tuple:
    """The earlier, narrower rule: a row is the same recipe only with the same layout, micro-batch and global batch
    (everything but the release), so one model x GPU x count x precision measured with re-tuned layouts in several
    releases is scored once per layout. Kept to show the figures under both rules."""
    lay = rec["layout"]
    return _recipe(q, rec) + (q.global_batch, q.micro_batch, q.seq_len, q.tp, q.pp, q.cp, q.virtual_stages, q.ep,
                              lay.get("sharding"), lay.get("fsdp_group"))


# Sources that publish the same recipes measured again in release after release (run ids carry the release).
RELEASED_SOURCES = frozenset({"megatron-bridge-perf-summary"})
DEDUP_RULES = {"recipe": _recipe, "recipe+layout": _recipe_and_layout}
DEDUP_RULE = "recipe"


def deduplicate(queries: list[Query], records: dict[str, dict],
                rule: str = DEDUP_RULE) -> tuple[list[Query], list[Skip]]:
    """Recipes measured again in later releases (:data:`RELEASED_SOURCES`): keep the newest release of each recipe,
    every row of it (:data:`DEDUP_RULES`: ``recipe`` = model x GPU type x GPU count x precision recipe, the default;
    ``recipe+layout`` = the same and the layout and batch)."""
    def key(q: Query) -> tuple:
        return DEDUP_RULES[rule](q, records[q.id]) if q.source_id in RELEASED_SOURCES else ("run", q.id)

    newest: dict[tuple, Query] = {}
    for q in queries:
        k = key(q)
        if k not in newest or release(q.id) > release(newest[k].id):
            newest[k] = q
    kept = [q for q in queries if release(q.id) == release(newest[key(q)].id)]
    kept_ids = {q.id for q in kept}
    dropped = [Skip(q.id, q.source_id, f"same recipe measured again in a newer release: {newest[key(q)].id}")
               for q in queries if q.id not in kept_ids]
    return kept, dropped

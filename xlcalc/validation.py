"""Leave-one-source-out validation of the step-time model on published measured training runs.

The runs are ``xlcalc/data/reference/throughput_runs.json`` (described in ``throughput_runs.md`` beside it).
The pipeline, in the order :func:`validate` runs it:

1. :func:`load_runs` reads the records; :func:`to_query` turns a predictable one into a :class:`Query`
   (architecture, GPU, GPU count, the layout the source pins, precision, the measured throughput on one
   basis) or a :class:`Skip` that says why it cannot be predicted. Megatron-Bridge re-measures the same
   recipes release after release: :func:`deduplicate` keeps the newest release of each recipe.
2. :func:`predict` is the ONE adapter between a query and the planner's step-time model: it predicts the
   run's tokens/s per GPU at each matmul efficiency of :data:`GRID` (the model's free constant).
   Features the model in this version cannot express (FP8, context parallelism, expert parallelism,
   uneven pipeline stages) are detected from the planner's API by :func:`capabilities`; a run that needs
   one is skipped with that reason until the planner gains it.
3. :func:`loso` calibrates leave-one-source-out: for every source, the free constants are fitted on the
   other sources only, and that source's runs are predicted; the constant-MFU baselines are computed on
   exactly the runs scored.
4. :func:`render` writes ``docs/validation.md``.

One basis for every measurement: model FLOPs per token as the planner counts them (6N of the matmuls, the
attention core and the output layer; ``xlcalc.formulas.steptime.model_flops_per_token``) at the dense BF16
peak of the catalog GPU, so an MFU error is a tokens/s error. Each run says where its tokens/s came from
(:attr:`Query.basis`).

Free constants (few, physically meaningful, never one per run): the share of peak the matmuls reach in a
training step, one value per software-stack profile (:data:`PROFILES`). A held-out source whose profile
no other source shares gets the value fitted to all other sources pooled.
"""

from __future__ import annotations

import inspect
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import catalog
from .errors import CatalogError, InputError
from .formulas import steptime as fs
from .planner import Settings, plan
from .planner import steptime as pst
from .planner.steptime import arch_from_model

RUNS_JSON = Path(__file__).resolve().parent / "data" / "reference" / "throughput_runs.json"
TOLERANCE = 0.15
# Matmul efficiencies at which every run is predicted once; calibration interpolates between them.
GRID_STEP = 0.05
GRID = [round(0.30 + GRID_STEP * i, 2) for i in range(15)]  # 0.30 ... 1.00
REFERENCE_EFFICIENCY = 0.70  # efficiency at which the planner chooses what a source leaves unstated

# Software-stack profiles: one fitted matmul efficiency each.
PROFILES = {
    "megatron-bridge-perf-summary": "megatron",
    "megatron-moe-modelzoo": "megatron",
    "nemo-perf-summary-24.07": "megatron",
    "megatron-lm-readme-h100": "megatron",
    "megascale2024": "megatron",           # Megatron-LM rows and MegaScale (a Megatron-LM derivative)
    "llama3-paper": "megatron",            # Meta's 4D stack: TP/PP/CP + FSDP, Megatron-style schedules
    "deepseek-v3-report": "megatron",      # HAI-LLM: PP/EP + ZeRO-1, Megatron-style 3D layout
    "narayanan2021": "megatron-2021",
    "korthikanti2022": "megatron-2021",
    "megatron-lm-readme-a100": "megatron-2021",
    "llm-foundry-benchmarks": "fsdp-eager",
    "torchtitan-benchmarks": "fsdp-compiled",
}
PROFILE_TEXT = {
    "megatron": "Megatron-Core / NeMo / Megatron-Bridge and Megatron-style 3D/4D stacks (2023-2026)",
    "megatron-2021": "Megatron-LM of 2021-22 on A100 (no FlashAttention, fp16 gradients reduced after the backward pass)",
    "fsdp-eager": "PyTorch FSDP without compilation (Composer / llm-foundry)",
    "fsdp-compiled": "PyTorch FSDP2 with torch.compile (torchtitan)",
}

# Settings the documented software of a profile implies (everything else: the planner's defaults).
# Megatron-LM 2021-22 (megatron/training.py train_step): the data-parallel all-reduce runs after the whole
# forward-backward schedule (dp_overlap 0); --fp16 without --accumulate-allreduce-grads-in-fp32 reduces fp16
# gradients (grad_bytes 2); no FlashAttention (2022).
PROFILE_SETTINGS = {
    "megatron-2021": dict(dp_overlap=0.0, grad_bytes=2, flash_attention=False),
}

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
GPU_MEMORY_GB = {"H100 (96GB HBM2e, 500 W, Grand Teton)": 96.0}

SHARDING_ZERO = {"fsdp_full_shard": 3, "zero3": 3, "megatron_fsdp": 3, "fsdp_grad_op": 2, "zero1": 1, "none": 0}
RECOMPUTE = {"none": "none", "full": "full", "megatron_selective": "selective", "selective_op": "selective",
             "selective_other": "selective"}


# --------------------------------------------------------------------------------------------------------
# runs -> queries

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

    @property
    def measured_mfu(self) -> float:
        return self.measured_tokens_s * self.flops_per_token / (self.peak_tflops * 1e12)

    def layout(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}"]
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        parts.append(f"DP{self.dp}")
        return " ".join(parts)


@dataclass(frozen=True)
class Skip:
    id: str
    source_id: str
    reason: str


def load_runs(path: Path | str = RUNS_JSON) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


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
    gid = rec.get("gpu_catalog_id")
    if gid:
        return gid, catalog.get_gpu(gid)
    if rec["gpu"] in GPU_STAND_IN:
        gid = GPU_STAND_IN[rec["gpu"]][0]
        return gid, catalog.get_gpu(gid)
    row = catalog.get_gpu(rec["gpu"])  # a GPU the catalog has gained since the record was written
    return row.id, row


def _precision(rec: dict) -> str:
    mm = (rec["precision"].get("matmul") or "").lower()
    if mm.startswith("fp8"):
        return "fp8"
    if mm.startswith("fp4"):
        return "fp4"
    return "bf16"  # bf16, fp16 and "fp16/bf16": the same 16-bit tensor-core peak


def _measured_tokens_s(rec: dict, arch, seq_len: int, recompute: Optional[str]) -> tuple[Optional[float], str]:
    """Tokens/s per GPU and where it comes from (stated, derived by the record, or from the stated TFLOP/s)."""
    me = rec["measured"]
    derived = me.get("derived") or {}
    if me.get("tokens_per_s_per_gpu"):
        return me["tokens_per_s_per_gpu"], "tokens/s stated"
    if derived.get("tokens_per_s_per_gpu"):
        return derived["tokens_per_s_per_gpu"], "tokens/s derived in the record"
    step = me.get("iteration_time_s") or me.get("step_time_s")
    if step:
        lay = rec["layout"]
        return (lay["global_batch_sequences"] * lay["seq_len"] / step / rec["n_gpus"],
                "global batch x sequence / stated step time / GPUs")
    conv = me.get("flops_convention", "")
    tflops = me.get("tflops_per_gpu") or derived.get("tflops_per_gpu")
    shape = dict(layers=arch.layers, hidden=arch.hidden, heads=arch.heads, kv_heads=arch.kv_heads,
                 head_dim=arch.head_dim, ffn_hidden=arch.ffn_hidden, vocab=arch.vocab, seq_len=seq_len,
                 gated_ffn=arch.gated_ffn)
    if conv.startswith("hardware"):
        if tflops is None:
            return None, "no TFLOP/s"
        hf = fs.hardware_flops_per_token.raw(**shape, recompute=recompute or "full")
        return tflops * 1e12 / hf, "hardware TFLOP/s / our hardware FLOPs per token (recompute counted)"
    if conv.startswith("model"):
        if tflops is None and me.get("mfu"):
            tflops = me["mfu"] * _peak_of_record(rec)
            basis = "stated MFU x stated peak / our model FLOPs per token"
        else:
            basis = "model TFLOP/s / our model FLOPs per token"
        if tflops is None:
            return None, "no TFLOP/s"
        return tflops * 1e12 / fs.model_flops_per_token.raw(**shape), basis
    return None, f"no throughput in a known convention ({conv})"


def _peak_of_record(rec: dict) -> float:
    _, row = _gpu(rec)
    return row.bf16_tflops or row.fp16_tflops


def to_query(rec: dict) -> Query | Skip:
    """A predictable record as a query; a Skip with the reason otherwise."""
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
    recompute = RECOMPUTE.get(rec.get("recompute")) if rec.get("recompute") else None
    tokens, basis = _measured_tokens_s(rec, arch, seq, recompute)
    if tokens is None:
        return Skip(rid, src, basis)
    profile = PROFILES.get(src)
    if profile is None:
        return Skip(rid, src, f"no software-stack profile for source {src}")
    extra = dict(PROFILE_SETTINGS.get(profile, {}))
    if not row.scaleout_gb_s and gid in SCALEOUT_GB_S:
        extra["scaleout_gb_s"] = SCALEOUT_GB_S[gid]
    if rec["gpu"] in GPU_MEMORY_GB:
        extra["memory_gb"] = GPU_MEMORY_GB[rec["gpu"]]
    if src == "narayanan2021" and lay.get("sharding") is None:
        zero = 0  # PTD-P: tensor + pipeline + plain data parallelism (ZeRO only as the §5.2 baseline)
    else:
        zero = SHARDING_ZERO.get(lay.get("sharding"))
    tp, pp, cp = lay["tp"], lay["pp"], lay.get("cp") or 1
    dp = rec["n_gpus"] // (tp * pp * cp)
    mfpt = fs.model_flops_per_token.raw(layers=arch.layers, hidden=arch.hidden, heads=arch.heads,
                                        kv_heads=arch.kv_heads, head_dim=arch.head_dim, ffn_hidden=arch.ffn_hidden,
                                        vocab=arch.vocab, seq_len=seq, gated_ffn=arch.gated_ffn)
    stages = None
    if pp > 1 and arch.layers % pp:
        stages = _uneven(arch.layers, pp)
    return Query(
        id=rid, source_id=src, profile=profile, gpu=gid, gpu_label=rec["gpu"], n_gpus=rec["n_gpus"], tp=tp, pp=pp,
        cp=cp, ep=lay.get("ep") or 1, dp=dp, virtual_stages=lay.get("virtual_stages"),
        micro_batch=lay.get("micro_batch"), global_batch=lay["global_batch_sequences"], seq_len=seq,
        recompute=recompute, zero_stage=zero, seq_parallel=lay.get("sequence_parallel"),
        precision=_precision(rec), moe=bool(model.experts), model=model, params_b=model.params_b,
        flops_per_token=mfpt, peak_tflops=peak, measured_tokens_s=float(tokens), basis=basis,
        settings=tuple(sorted(extra.items())), stage_layers=stages,
    )


def _uneven(layers: int, pp: int) -> tuple[int, ...]:
    """Stages as even as possible, the first and last one short (Llama 3: 126 layers on PP16 = 7, 8 x 14, 7)."""
    base, rem = divmod(layers, pp)
    if rem == 0:
        return (base,) * pp
    big = base + 1
    short = pp * big - layers  # stages one layer short, taken from both ends
    out = [big] * pp
    for i in range(short):
        out[i // 2 if i % 2 == 0 else pp - 1 - i // 2] -= 1
    return tuple(out)


def _release(rid: str) -> tuple:
    parts = rid.split("-")
    try:
        return tuple(int(x) for x in parts[1].split("."))
    except (IndexError, ValueError):
        return ()


def _recipe(q: Query, rec: dict) -> tuple:
    """What makes two Megatron-Bridge rows the same recipe (everything but the release)."""
    lay, prec = rec["layout"], rec["precision"]
    return (rec["model"]["name"], rec["gpu"], q.n_gpus, prec.get("matmul"), prec.get("fp8_recipe"), q.global_batch,
            q.micro_batch, q.seq_len, q.tp, q.pp, q.cp, q.virtual_stages, q.ep, lay.get("sharding"),
            lay.get("fsdp_group"))


def deduplicate(queries: list[Query], records: dict[str, dict]) -> tuple[list[Query], list[Skip]]:
    """Megatron-Bridge recipes measured again in later releases: keep the newest release of each recipe."""
    def key(q: Query) -> tuple:
        return _recipe(q, records[q.id]) if q.source_id == "megatron-bridge-perf-summary" else ("run", q.id)

    newest: dict[tuple, Query] = {}
    for q in queries:
        k = key(q)
        if k not in newest or _release(q.id) > _release(newest[k].id):
            newest[k] = q
    kept_ids = {q.id for q in newest.values()}
    kept = [q for q in queries if q.id in kept_ids]
    dropped = [Skip(q.id, q.source_id, f"same recipe measured again in a newer release: {newest[key(q)].id}")
               for q in queries if q.id not in kept_ids]
    return kept, dropped


# --------------------------------------------------------------------------------------------------------
# the adapter: the only code that knows the planner's API

def capabilities() -> frozenset[str]:
    """What the planner's step-time model can express, read from its API (grows as the planner does)."""
    params = inspect.signature(plan).parameters
    return frozenset(k for k in ("fp8", "cp", "ep", "stage_layers") if k in params)


def unsupported(q: Query, caps: frozenset[str]) -> Optional[str]:
    """Why the model in this version cannot predict ``q``, or None."""
    needs = []
    if q.precision == "fp8" and "fp8" not in caps:
        needs.append("FP8 matmuls")
    if q.precision == "fp4":
        needs.append("FP4 (NVFP4) matmuls")
    if q.cp > 1 and "cp" not in caps:
        needs.append("context parallelism")
    if q.moe and "ep" not in caps:
        needs.append("MoE expert parallelism (all-to-all, expert-sharded gradients)")
    if q.stage_layers and "stage_layers" not in caps:
        needs.append(f"uneven pipeline stages ({q.model.layers} layers on PP{q.pp})")
    return ("the step-time model has no " + ", no ".join(needs)) if needs else None


@dataclass
class Curve:
    """A run's predicted tokens/s per GPU at each efficiency of GRID, and the configuration predicted."""

    tokens_s: list[float]
    config: str
    fits: bool                      # the planner's memory model lets the configuration fit


def _settings(q: Query, eff: float) -> Settings:
    return Settings(matmul_efficiency=eff, **dict(q.settings))


def predict(q: Query, caps: frozenset[str] | None = None) -> Curve:
    """THE adapter: the planner's prediction of run ``q`` at every matmul efficiency of :data:`GRID`.

    What the source states is pinned; what it leaves unstated (micro-batch, recompute, ZeRO stage,
    sequence parallelism, interleaving) is the planner's best choice at :data:`REFERENCE_EFFICIENCY`. When
    the planner's memory model lets no configuration fit (the run did run), the pinned configuration is
    evaluated with the most frugal unstated choices and flagged. Raises InputError/CatalogError when the
    planner refuses the query.
    """
    caps = capabilities() if caps is None else caps
    arch = arch_from_model(q.model)
    pins = dict(tp=q.tp, pp=q.pp, zero_stage=q.zero_stage, recompute=q.recompute, micro_batch=q.micro_batch,
                seq_parallel=q.seq_parallel, virtual_stages=q.virtual_stages)
    extra = {}
    if "cp" in caps:
        extra["cp"] = q.cp
    if "fp8" in caps:
        extra["fp8"] = q.precision == "fp8"
    if "stage_layers" in caps and q.stage_layers:
        extra["stage_layers"] = list(q.stage_layers)
    if "ep" in caps:
        extra["ep"] = q.ep
    kw = dict(arch=arch, gpu=q.gpu, n_gpus=q.n_gpus, seq_len=q.seq_len,
              global_batch_tokens=q.global_batch * q.seq_len, tokens_t=1, top=1)
    res = plan(**kw, settings=_settings(q, REFERENCE_EFFICIENCY), **pins, **extra)
    fields = dict(tp=q.tp, pp=q.pp, dp=q.dp)
    if res.plans:
        best = res.plans[0]
        fields.update(zero_stage=best.zero_stage, seq_parallel=best.seq_parallel, recompute=best.recompute,
                      micro_batch=best.micro_batch, virtual_stages=best.virtual_stages)
        label, fits = best.label(), True
    else:
        fields.update(zero_stage=q.zero_stage if q.zero_stage is not None else (1 if q.dp > 1 else 0),
                      seq_parallel=q.seq_parallel if q.seq_parallel is not None else q.tp > 1,
                      recompute=q.recompute or "full", micro_batch=q.micro_batch or 1,
                      virtual_stages=q.virtual_stages or 1)
        label, fits = None, False
    cfg_fields = {k: v for k, v in fields.items()}
    config_params = inspect.signature(pst.Config).parameters
    for k, v in extra.items():
        if k in config_params:
            cfg_fields[k] = tuple(v) if k == "stage_layers" else v
    cfg = pst.Config(**cfg_fields)
    if label is None:
        label = (f"TP={cfg.tp}, PP={cfg.pp}, DP={cfg.dp}, ZeRO-{cfg.zero_stage}{', SP' if cfg.seq_parallel else ''}, "
                 f"recompute {cfg.recompute}, micro-batch {cfg.micro_batch}"
                 + (f", v={cfg.virtual_stages}" if cfg.virtual_stages > 1 else ""))
    out = []
    for eff in GRID:
        st = _settings(q, eff)
        hw = _resolve(q, st)
        pred = pst.evaluate(arch, hw, st, cfg, q.seq_len, q.global_batch)
        out.append(pred.tokens_per_s_per_gpu)
    return Curve(tokens_s=out, config=label, fits=fits)


def _resolve(q: Query, st: Settings):
    params = inspect.signature(pst.resolve_hardware).parameters
    if "n_gpus" in params:
        return pst.resolve_hardware(q.gpu, st, n_gpus=q.n_gpus)
    return pst.resolve_hardware(q.gpu, st)


# --------------------------------------------------------------------------------------------------------
# calibration and scoring

def _log_error_at(curve: list[float], eff: float) -> float:
    """log(predicted / measured) at ``eff``, linear between the grid points."""
    i = min(max(int((eff - GRID[0]) / GRID_STEP + 1e-9), 0), len(GRID) - 2)
    frac = (eff - GRID[i]) / GRID_STEP
    return curve[i] + (curve[i + 1] - curve[i]) * frac


def _weights(ids: list[str], source_of: dict[str, str]) -> list[float]:
    """Each source weighs 1 in total, whatever its number of runs."""
    counts: dict[str, int] = {}
    for i in ids:
        counts[source_of[i]] = counts.get(source_of[i], 0) + 1
    return [1 / counts[source_of[i]] for i in ids]


def fit_efficiency(curves: list[list[float]], weights: list[float] | None = None) -> float:
    """The efficiency at which the weighted mean log(predicted / measured) is 0 (bisection on GRID's range).

    Predicted throughput rises with the efficiency, so the mean log error does too.
    """
    w = weights or [1.0] * len(curves)
    total = sum(w)
    lo, hi = GRID[0], GRID[-1]
    for _ in range(40):
        mid = (lo + hi) / 2
        if sum(wi * _log_error_at(c, mid) for wi, c in zip(w, curves)) / total > 0:
            hi = mid
        else:
            lo = mid
    return round((lo + hi) / 2, 3)


def fit_constant_mfu(mfus: list[float], weights: list[float] | None = None) -> float:
    """The constant MFU with weighted mean log error 0: the weighted geometric mean of the measured MFUs."""
    w = weights or [1.0] * len(mfus)
    return round(math.exp(sum(wi * math.log(m) for wi, m in zip(w, mfus)) / sum(w)), 4)


def best_constant(mfus: list[float]) -> float:
    """The hindsight-best constant MFU on these runs: most within the tolerance, then smallest median error."""
    best, key = None, None
    for k in range(1, 1000):
        c = k / 1000
        errs = [abs(c / m - 1) for m in mfus]
        score = (sum(e <= TOLERANCE for e in errs), -statistics.median(errs))
        if key is None or score > key:
            best, key = c, score
    return best


def summary(errors: list[float]) -> dict:
    a = [abs(e) for e in errors]
    return dict(n=len(errors), median=statistics.median(a) if a else float("nan"),
                within=sum(x <= TOLERANCE for x in a) / len(a) if a else float("nan"),
                bias=statistics.median(errors) if errors else float("nan"))


@dataclass
class Scored:
    query: Query
    curve: Curve
    profile_used: str               # the profile whose efficiency predicted it, or "pooled"
    efficiency: float
    predicted_tokens_s: float
    error: float
    constant: float                 # constant MFU fitted on the other sources
    constant_error: float

    @property
    def predicted_mfu(self) -> float:
        return self.predicted_tokens_s * self.query.flops_per_token / (self.query.peak_tflops * 1e12)


def loso(queries: list[Query], curves: dict[str, Curve]) -> dict:
    """Leave-one-source-out: each source predicted with constants fitted on the other sources only.

    Returns ``scored`` (one :class:`Scored` per run), ``calibration`` (source -> the ids each fit used,
    the profile used, the efficiency and the constant MFU) and ``fitted`` (profile -> efficiency on all runs).
    """
    source_of = {q.id: q.source_id for q in queries}
    logc = {q.id: [math.log(t / q.measured_tokens_s) for t in curves[q.id].tokens_s] for q in queries}
    sources = list(dict.fromkeys(q.source_id for q in queries))
    scored: list[Scored] = []
    calibration = {}
    for s in sources:
        train = [q for q in queries if q.source_id != s]
        profile = PROFILES[s]
        same = [q for q in train if q.profile == profile]
        used, label = (same, profile) if same else (train, "pooled")
        ids = [q.id for q in used]
        eff = fit_efficiency([logc[i] for i in ids], _weights(ids, source_of))
        tids = [q.id for q in train]
        const = fit_constant_mfu([q.measured_mfu for q in train], _weights(tids, source_of))
        calibration[s] = dict(efficiency_ids=ids, constant_ids=tids, profile_used=label, efficiency=eff,
                              constant=const)
        for q in queries:
            if q.source_id != s:
                continue
            pred = q.measured_tokens_s * math.exp(_log_error_at(logc[q.id], eff))
            scored.append(Scored(q, curves[q.id], label, eff, pred, pred / q.measured_tokens_s - 1, const,
                                 const / q.measured_mfu - 1))
    fitted = {}
    for p in dict.fromkeys(q.profile for q in queries):
        ids = [q.id for q in queries if q.profile == p]
        fitted[p] = fit_efficiency([logc[i] for i in ids], _weights(ids, source_of))
    in_sample = [math.exp(_log_error_at(logc[s.query.id], fitted[s.query.profile])) - 1 for s in scored]
    return dict(scored=scored, calibration=calibration, fitted=fitted, in_sample=in_sample)


def validate(records: list[dict] | None = None, ids: set[str] | None = None) -> dict:
    """The whole validation: queries, skips, curves, leave-one-source-out scores. ``ids`` limits the runs."""
    records = load_runs() if records is None else records
    if ids is not None:
        records = [r for r in records if r["id"] in ids]
    by_id = {r["id"]: r for r in records}
    caps = capabilities()
    queries, skipped = [], []
    for r in records:
        q = to_query(r)
        if isinstance(q, Skip):
            skipped.append(q)
            continue
        why = unsupported(q, caps)
        if why:
            skipped.append(Skip(q.id, q.source_id, why))
        else:
            queries.append(q)
    queries, dups = deduplicate(queries, by_id)
    skipped += dups
    curves, ok = {}, []
    for q in queries:
        try:
            curves[q.id] = predict(q, caps)
            ok.append(q)
        except (InputError, CatalogError) as e:
            skipped.append(Skip(q.id, q.source_id, f"the planner refuses it: {e}"))
    result = loso(ok, curves) if ok else dict(scored=[], calibration={}, fitted={}, in_sample=[])
    result.update(records=len(records), skipped=skipped, capabilities=sorted(caps))
    return result


def headline(v: dict) -> dict:
    """The figures the docs quote: model and both constant baselines on the scored runs."""
    sc = v["scored"]
    mfus = [s.query.measured_mfu for s in sc]
    hind = best_constant(mfus) if mfus else float("nan")
    model = summary([s.error for s in sc])
    const = summary([s.constant_error for s in sc])
    hindsight = summary([hind / m - 1 for m in mfus])
    return dict(
        runs=len(sc), sources=len({s.query.source_id for s in sc}), gpus=sorted({s.query.gpu for s in sc}),
        fp8=sum(s.query.precision == "fp8" for s in sc), moe=sum(s.query.moe for s in sc),
        model=model, constant=const, hindsight=hindsight, hindsight_mfu=hind,
        source_weighted_within=statistics.mean(
            summary([s.error for s in sc if s.query.source_id == src])["within"]
            for src in dict.fromkeys(s.query.source_id for s in sc)) if sc else float("nan"),
    )


# --------------------------------------------------------------------------------------------------------
# the document

def _pct(x: float) -> str:
    return "–" if x != x else f"{x:.0%}"


def _row_stats(group: list[Scored]) -> list[str]:
    m = summary([s.error for s in group])
    c = summary([s.constant_error for s in group])
    mfus = [s.query.measured_mfu for s in group]
    hind = best_constant(mfus)
    h = summary([hind / x - 1 for x in mfus])
    return [str(m["n"]), f"{m['median']:.1%}", _pct(m["within"]), f"{m['bias']:+.1%}",
            f"{c['median']:.1%}", _pct(c["within"]), f"{hind:.3f}", f"{h['median']:.1%}", _pct(h["within"])]


STAT_HEAD = ("runs | model: median error | model: within 15% | model: median signed | constant (fitted on other "
             "sources): median error | within 15% | hindsight constant | its median error | within 15%")


def _table(title_col: str, groups: dict[str, list[Scored]], extra_cols=None) -> list[str]:
    extra_cols = extra_cols or {}
    head = f"| {title_col} | " + (" | ".join(extra_cols.get('_head', [])) + " | " if extra_cols else "") + STAT_HEAD + " |"
    ncols = head.count("|") - 1
    lines = [head, "|---" + "|---:" * (ncols - 1) + "|"]
    for name, group in groups.items():
        extra = extra_cols.get(name, [])
        lines.append("| " + " | ".join([name, *extra, *_row_stats(group)]) + " |")
    return lines


def _seq_band(q: Query) -> str:
    return "≤ 2k" if q.seq_len <= 2048 else "4k" if q.seq_len <= 4096 else "8k" if q.seq_len <= 8192 else "16k-32k" \
        if q.seq_len <= 32768 else "> 32k"


def _size_band(q: Query) -> str:
    p = q.params_b
    return "< 3B" if p < 3 else "3-15B" if p < 15 else "15-100B" if p < 100 else "≥ 100B"


_BANDS = ["≤ 2k", "4k", "8k", "16k-32k", "> 32k", "< 3B", "3-15B", "15-100B", "≥ 100B", "none", "selective", "full",
          "not stated"]


def _order(value: str):
    return (_BANDS.index(value), "") if value in _BANDS else (len(_BANDS), value)


# the groups of the diagnosis table: (label, the query's group)
_DIAGNOSIS = [
    ("precision", lambda q: q.precision),
    ("sequence", _seq_band),
    ("model", _size_band),
    ("recompute", lambda q: q.recompute or "not stated"),
    ("profile", lambda q: q.profile),
    ("profile x GPU", lambda q: f"{q.profile} on {q.gpu_label}"),
]


def _bucket(groups: dict, key: str, s: Scored) -> None:
    groups.setdefault(key, []).append(s)


def headline_sentence(v: dict) -> str:
    """The README's sentence of figures (the script prints it; a test checks README.md quotes it)."""
    h = headline(v)
    return (f"Leave-one-source-out over {h['runs']} published measured runs from {h['sources']} sources "
            f"(GPU figures of {', '.join(_gpu_name(g) for g in h['gpus'])}): predicted MFU has a median error of "
            f"{h['model']['median']:.1%} and is within 15% for {h['model']['within']:.0%} of the runs; one constant "
            f"MFU fitted on the other sources gives {h['constant']['median']:.1%} and {h['constant']['within']:.0%}, "
            f"the best constant in hindsight ({h['hindsight_mfu']:.3f}) {h['hindsight']['median']:.1%} and "
            f"{h['hindsight']['within']:.0%}.")


def _gpu_name(gid: str) -> str:
    return catalog.get_gpu(gid).name.replace("NVIDIA ", "")


def missing_features(v: dict) -> list[str]:
    """What the skipped runs need that this version lacks: model features, then catalog GPUs."""
    lacks = "the step-time model has no "
    out: dict[str, None] = {}
    for k in v["skipped"]:
        for r in _reason_groups(k.reason):
            if r.startswith(lacks):
                out[r[len(lacks):].split(" (")[0]] = None
    if any("not in the GPU catalog" in k.reason or "the GPU catalog has no" in k.reason for k in v["skipped"]):
        out["GPUs or GPU figures missing from the catalog"] = None
    return list(out)


def _reason_groups(reason: str) -> list[str]:
    """The summary lines a skip reason counts under."""
    lacks = "the step-time model has no "
    if reason.startswith(lacks):
        parts = reason[len(lacks):].split(", no ")
        return [lacks + (part.split(" (")[0] if part.startswith("uneven") else part).strip() for part in parts]
    if reason.startswith("record not predictable"):
        return ["record not predictable (configuration or architecture not stated; see the record's notes)"]
    if reason.startswith("same recipe"):
        return ["same recipe measured again in a newer release"]
    if reason.startswith("the planner refuses it"):
        return [reason.split(";")[0].split(" (")[0]]
    return [reason]


def render(v: dict) -> str:
    sc: list[Scored] = v["scored"]
    h = headline(v)
    targets = [
        ("≥ 150 runs scored", h["runs"] >= 150, f"{h['runs']}"),
        ("≥ 5 sources", h["sources"] >= 5, f"{h['sources']}"),
        ("FP8 runs among them", h["fp8"] > 0, f"{h['fp8']}"),
        ("MoE runs among them", h["moe"] > 0, f"{h['moe']}"),
        ("median MFU error ≤ 10%", h["model"]["median"] <= 0.10, f"{h['model']['median']:.1%}"),
        ("≥ 75% within 15%", h["model"]["within"] >= 0.75, f"{h['model']['within']:.0%}"),
        ("≥ 15 points more within 15% than the best constant", h["model"]["within"] - h["hindsight"]["within"] >= 0.15,
         f"{(h['model']['within'] - h['hindsight']['within']) * 100:+.0f} points"),
    ]
    L = [
        "# Validation: predicted vs measured throughput, leave one source out",
        "",
        "Generated by `python scripts/make_validation.py` from `xlcalc/data/reference/throughput_runs.json`; "
        "do not edit.",
        "",
        "Every published run with a configuration complete enough to predict is turned into a prediction query:",
        "architecture, GPU, GPU count, the layout the source states (TP, PP, CP, EP, DP, interleaving,",
        "micro-batch, global batch, sequence length, recompute, sharding, precision). What a source leaves",
        f"unstated is the planner's best choice at a matmul efficiency of {REFERENCE_EFFICIENCY} (if its memory model",
        "fits none, the stated layout is evaluated anyway with the most frugal unstated choices: the run did run,",
        "and the table says so). Each source is predicted with the model's free constants",
        "fitted on the **other** sources only (leave one source out), and beside every figure stand two",
        "constant-MFU baselines on exactly the same runs: the constant fitted on the other sources, and the",
        "best constant in hindsight (the one that puts most of the scored runs within 15%).",
        "",
        "**One basis.** Measured and predicted throughput are compared as MFU on the planner's model FLOPs per",
        "token (6N of the matmuls, attention core and output layer) at the dense BF16 peak of the catalog GPU,",
        "so an MFU error equals the tokens/s error. Each run's tokens/s is the one the source states, or it is",
        "derived from the source's TFLOP/s with our FLOP count (the run table's *basis* column); sources that",
        "count hardware FLOPs (Narayanan et al. 2021, the 2021 Megatron-LM README) are converted with our",
        "hardware FLOP count (recomputed forward included).",
        "",
        "**Free constants.** One: the share of peak the matmuls reach in a training step, fitted per",
        "software-stack profile (weighted so every source counts once, whatever its number of runs). A source",
        "whose profile no other source shares is predicted with the value fitted to all other sources pooled.",
        "Every other constant is a default of `xlcalc.planner.Settings`; the profiles' documented software",
        "facts are pinned (below).",
        "",
        "| profile | stack | sources | efficiency fitted on all its runs |",
        "|---|---|---|---:|",
    ]
    for p, eff in v["fitted"].items():
        srcs = sorted({s.query.source_id for s in sc if s.query.profile == p})
        L.append(f"| {p} | {PROFILE_TEXT[p]} | {', '.join(srcs)} | {eff:.3f} |")
    L += [
        "",
        "Pinned software facts: Megatron-LM 2021-22 (profile `megatron-2021`) all-reduces gradients after the",
        "whole forward-backward schedule (`dp_overlap = 0`), in fp16 (`grad_bytes = 2`), without FlashAttention;",
        "Narayanan et al. 2021 use plain data parallelism (ZeRO-0). Scale-out bandwidth where the catalog has",
        "none: the vendors' reference systems (DGX A100 25 GB/s, DGX H100 / HGX H200 50 GB/s per GPU).",
        "GPUs a source does not name exactly: " + "; ".join(f"{k}: {v[1]}" for k, v in GPU_STAND_IN.items()) + ".",
        "Megatron-Bridge measures the same recipes in release after release: only the newest release of each",
        "recipe is scored.",
        "",
        f"Step-time model features this version expresses (read from the planner's API): "
        f"{', '.join(v['capabilities']) or 'none of FP8, CP, EP, uneven stages'}. Runs that need a feature it",
        "lacks are listed at the end with the reason, not scored.",
        "",
        "## Headline",
        "",
        headline_sentence(v),
        "",
        "| target (issue 11) | met | value |",
        "|---|---|---:|",
        *[f"| {t} | {'yes' if ok else 'no'} | {val} |" for t, ok, val in targets],
        "",
        f"Source-weighted (each source counts once): {h['source_weighted_within']:.0%} of a source's runs within 15% "
        "on average.",
        "",
        f"Not a prediction, for diagnosis: with each profile's efficiency fitted on all its runs (the scored ones "
        f"included) the model's median error is {summary(v['in_sample'])['median']:.1%}, "
        f"{summary(v['in_sample'])['within']:.0%} within 15%; the gap to the leave-one-source-out figures is the cost "
        "of transferring a calibration between sources, the rest is error in the model's shape.",
        "",
        "## Per source",
        "",
    ]
    by_src: dict[str, list[Scored]] = {}
    for s in sc:
        _bucket(by_src, s.query.source_id, s)
    cal = v["calibration"]
    extra = {"_head": ["calibrated on", "efficiency"]}
    for src in by_src:
        c = cal[src]
        extra[src] = [f"{c['profile_used']} ({len(c['efficiency_ids'])} runs of other sources)", f"{c['efficiency']:.3f}"]
    L += _table("source", by_src, extra)
    L += ["", "## Per GPU", ""]
    by_gpu: dict[str, list[Scored]] = {}
    for s in sc:
        _bucket(by_gpu, s.query.gpu_label, s)
    L += _table("GPU (as the source names it)", by_gpu)
    L += ["", "## By precision, sequence length, model size and stack", "",
          "Where the model fails, to guide its next version. The *hindsight constant* of a row is the best",
          "constant for that row's runs alone (a stronger baseline than one constant for all).", ""]
    groups: dict[str, list[Scored]] = {}
    for label, key in _DIAGNOSIS:
        for s in sorted(sc, key=lambda s: _order(key(s.query))):
            _bucket(groups, f"{label} {key(s.query)}", s)
    for s in sc:
        _bucket(groups, "memory model: fits" if s.curve.fits else "memory model: does not fit (run evaluated anyway)", s)
    L += _table("group", groups)
    worst = sorted(((summary([s.error for s in g])["bias"], name, len(g)) for name, g in groups.items()
                    if len(g) >= 5 and not name.startswith("memory")), key=lambda x: -abs(x[0]))[:5]
    L += ["", "Largest median signed errors (groups of at least 5 runs): "
          + "; ".join(f"{name} {bias:+.0%} ({n} runs)" for bias, name, n in worst) + "."]
    L += ["", "## Every scored run", "",
          "Measured and predicted MFU on the common basis; *constant* is the constant MFU fitted on the other "
          "sources.", "",
          "| run | source | GPU | GPUs | layout | seq | precision | basis | measured MFU | predicted MFU | error | "
          "constant | its error | configuration predicted |",
          "|---|---|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|---|"]
    for s in sc:
        q = s.query
        cfg = s.curve.config + ("" if s.curve.fits else " (memory model: does not fit)")
        L.append(f"| {q.id} | {q.source_id} | {q.gpu_label} | {q.n_gpus} | {q.layout()} | {q.seq_len} | {q.precision} | "
                 f"{q.basis} | {q.measured_mfu:.3f} | {s.predicted_mfu:.3f} | {s.error:+.1%} | {s.constant:.3f} | "
                 f"{s.constant_error:+.1%} | {cfg} |")
    skipped: list[Skip] = v["skipped"]
    L += ["", f"## Not scored ({len(skipped)} of {v['records']} records)", ""]
    reasons: dict[str, int] = {}
    for k in skipped:
        for r in _reason_groups(k.reason):
            reasons[r] = reasons.get(r, 0) + 1
    L += ["A record can need more than one missing feature, so the counts may add up to more than the records.", "",
          "| reason | records |", "|---|---:|",
          *[f"| {r} | {n} |" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0]))]]
    L += ["", "| record | source | reason |", "|---|---|---|",
          *[f"| {k.id} | {k.source_id} | {k.reason} |" for k in skipped], ""]
    return "\n".join(L)

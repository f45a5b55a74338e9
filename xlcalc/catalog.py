"""Catalogs as data: GPUs, model architectures and price defaults.

Each catalog is one TOML file in ``xlcalc/data/``, validated by pydantic on load;
every row carries its ``source``. A value nobody published stays empty (None),
never guessed. Look-ups are case-insensitive and accept aliases ("H100" is the
H100 SXM); an unknown name lists the valid ones.
"""

from __future__ import annotations

import difflib
import tomllib
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import CatalogError, InputError
from .formulas.steptime import dense_layer_params, input_embedding_params
from .inputs import spec
from .recipes import DEFAULT_SEQ_LEN, MEMORY_DEFAULTS

DATA: Traversable = files(__package__ or "xlcalc") / "data"  # package data, read through importlib.resources


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    name: str
    aliases: tuple[str, ...] = ()
    source: str = Field(min_length=3)
    notes: str = ""


class GPU(_Row):
    """One accelerator. TFLOPS are dense (no 2:4 sparsity); GB = 1e9 bytes."""

    vendor: str
    bf16_tflops: Optional[float] = Field(default=None, gt=0, description="dense BF16 tensor peak, TFLOP/s")
    fp16_tflops: Optional[float] = Field(default=None, gt=0, description="dense FP16 tensor peak, TFLOP/s")
    fp8_tflops: Optional[float] = Field(default=None, gt=0, description="dense FP8 tensor peak, TFLOP/s")
    memory_gb: Optional[float] = Field(default=None, gt=0, description="nominal memory, GB (the datasheet's figure)")
    cuda_memory_bytes: Optional[int] = Field(
        default=None, gt=0,
        description="memory the card exposes to CUDA, bytes: torch.cuda.get_device_properties(i).total_memory "
                    "(cudaDeviceProp.totalGlobalMem, deviceQuery's 'Total amount of global memory', the 'total "
                    "capacity' of PyTorch's out-of-memory message); empty where no source prints it")
    cuda_memory_source: Optional[str] = Field(
        default=None, min_length=3, description="where cuda_memory_bytes was printed (address and quote)")
    hbm_tb_s: Optional[float] = Field(default=None, gt=0)
    scaleup_gb_s: Optional[float] = Field(default=None, gt=0, description="per-GPU scale-up (NVLink/ICI) bandwidth, GB/s, one direction")
    scaleout_gb_s: Optional[float] = Field(default=None, gt=0, description="per-GPU scale-out (InfiniBand/RoCE) bandwidth, GB/s")
    tdp_w: Optional[float] = Field(default=None, gt=0)
    gpus_per_node: Optional[int] = Field(default=None, ge=1, description="accelerators per server node, where published")
    nvlink_domain: Optional[int] = Field(
        default=None, ge=1,
        description="GPUs sharing one scale-up (NVLink/Infinity Fabric) fabric in the vendor's reference system: "
                    "8 on a DGX/HGX board, 72 on GB200 NVL72, 2 for bridged PCIe cards")
    matmul_efficiency_from: Optional[str] = Field(
        default=None,
        description="id of the GPU (same compute die) whose measured matmul efficiency this GPU uses when no "
                    "microbenchmark of its own is published")
    matmul_efficiency: Optional[float] = Field(
        default=None, gt=0, le=1, description="maximum achievable share of peak in bf16 GEMMs, single-GPU microbenchmark")
    training_matmul_efficiency: Optional[float] = Field(
        default=None, gt=0, le=1,
        description="share of peak at which the step-time model reproduces published training runs on this GPU "
                    "(fitted by scripts/make_validation.py; docs/validation.md)")

    @model_validator(mode="after")
    def _cuda_memory_sourced(self) -> "GPU":
        if (self.cuda_memory_bytes is None) != (self.cuda_memory_source is None):
            raise ValueError(f"{self.id}: cuda_memory_bytes and cuda_memory_source go together (a value names its source)")
        return self

    @property
    def capacity_gb(self) -> Optional[float]:
        """The memory a fit is checked against, GB: what the card exposes to CUDA where a source gives it
        (:attr:`cuda_memory_bytes`), else the nominal :attr:`memory_gb` (see :attr:`capacity_basis`)."""
        return self.cuda_memory_bytes / 1e9 if self.cuda_memory_bytes is not None else self.memory_gb

    @property
    def capacity_basis(self) -> str:
        """Which figure :attr:`capacity_gb` is: "cuda" (exposed to CUDA, sourced) or "nominal" (the datasheet's GB)."""
        return "cuda" if self.cuda_memory_bytes is not None else "nominal"

    @property
    def half_tflops(self) -> Optional[float]:
        """Dense 16-bit tensor peak that mixed-precision training runs at: BF16 where published, else FP16.

        V100 has no BF16; for the A800 and the Ascend 910B seed 002 gives the FP16 peak only.
        """
        return self.bf16_tflops if self.bf16_tflops is not None else self.fp16_tflops

    def peak_tflops(self, precision: Literal["half", "bf16", "fp16", "fp8"] = "half") -> float:
        """Dense peak TFLOP/s at ``precision``; "half" = :attr:`half_tflops`.

        A peak nobody published raises :class:`CatalogError` instead of being guessed.
        """
        fields = {"half": "half_tflops", "bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops"}
        if precision not in fields:
            raise CatalogError(f"precision {precision!r} is not one of: {', '.join(fields)}")
        value: float | None = getattr(self, fields[precision])
        if value is None:
            what = "16-bit (BF16 or FP16)" if precision == "half" else precision.upper()
            raise CatalogError(f"{self.name}: no published dense {what} TFLOPS in the catalog; give peak_tflops "
                               "explicitly")
        return value


class Model(_Row):
    """A transformer architecture. The parameter count is derived from it, not typed in."""

    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: Optional[int] = Field(default=None, ge=1, description="KV heads (GQA/MQA); None = heads")
    head_dim: Optional[int] = Field(default=None, ge=1, description="None = hidden / heads")
    ffn_hidden: int = Field(ge=1, description="FFN inner size of a dense layer")
    gated_ffn: bool = Field(default=MEMORY_DEFAULTS["gated_ffn"], description="SwiGLU/GeGLU: three FFN matrices instead of two")
    vocab: int = Field(ge=1)
    tied_embeddings: bool = MEMORY_DEFAULTS["tied_embeddings"]
    seq_len: int = Field(
        default=DEFAULT_SEQ_LEN, ge=1,
        description="pre-training sequence length: a catalog row's is published (load() refuses a row without one); a "
                    "model read from a config.json, which gives only its context window, takes the one default "
                    "(xlcalc.recipes.DEFAULT_SEQ_LEN)")
    global_batch_tokens: Optional[float] = Field(
        default=None, gt=0, description="pre-training global batch in tokens where the source gives it in whole "
                                        "sequences (the batch after any ramp-up); None: not published, or only as a "
                                        "rounded token count (e.g. Llama 2's '4M tokens'): a face that needs it asks")
    pretrain_tokens_t: Optional[float] = Field(
        default=None, gt=0, description="pre-training tokens as published, trillions (None: not published, e.g. a "
                                        "model read from a config.json): the planner's default run length")
    pretrain_tokens_source: Optional[str] = Field(
        default=None, min_length=3, description="where pretrain_tokens_t is published (required with it)")
    biases: bool = Field(default=False, description="linear layers carry biases (GPT-2/3, BLOOM, OPT)")
    learned_positions: bool = Field(default=False, description="a learned position-embedding table of (seq_len + position_offset) x hidden")
    position_offset: int = Field(default=0, ge=0, description="extra rows of the learned position table (OPT: 2)")
    relative_positions: bool = Field(
        default=False,
        description="Transformer-XL relative positions (Gopher/Chinchilla): per layer a hidden x hidden "
        "position projection and two per-head bias vectors",
    )
    embedding_norm: bool = Field(default=False, description="a LayerNorm right after the token embedding (BLOOM)")
    # Mixture of experts (DeepSeek-V3 style): the first `dense_layers` are dense, the rest MoE.
    experts: int = Field(default=0, ge=0, description="routed experts per MoE layer (0 = dense model)")
    experts_active: int = Field(default=0, ge=0, description="routed experts each token uses")
    shared_experts: int = Field(default=0, ge=0)
    moe_ffn_hidden: Optional[int] = Field(default=None, ge=1)
    dense_layers: int = Field(default=0, ge=0, description="leading dense layers of an MoE model")
    router_bias: bool = Field(default=False, description="a per-expert routing bias (DeepSeek-V3 aux-loss-free balancing)")
    # Multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: Optional[int] = Field(default=None, ge=1)
    kv_lora_rank: Optional[int] = Field(default=None, ge=1)
    qk_rope_head_dim: Optional[int] = Field(default=None, ge=1)
    v_head_dim: Optional[int] = Field(default=None, ge=1)
    published_params_b: Optional[float] = Field(
        default=None, gt=0, description="total parameters as published, billions (None: not published, e.g. a model read from a config.json)")
    published_active_params_b: Optional[float] = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> "Model":
        if self.heads % self.kv:
            raise ValueError(f"kv_heads = {self.kv} must divide heads = {self.heads}")
        if self.experts and (not self.experts_active or not self.moe_ffn_hidden):
            raise ValueError("an MoE model needs experts_active and moe_ffn_hidden")
        if self.experts_active > self.experts:
            raise ValueError(f"experts_active = {self.experts_active} exceeds experts = {self.experts}")
        if self.dense_layers > self.layers:
            raise ValueError(f"dense_layers = {self.dense_layers} exceeds layers = {self.layers}")
        if self.head_dim is None and self.hidden % self.heads:
            raise ValueError(f"hidden = {self.hidden} is not a multiple of heads = {self.heads}; give head_dim")
        if (self.published_active_params_b and self.published_params_b
                and self.published_active_params_b > self.published_params_b):
            raise ValueError("published_active_params_b exceeds published_params_b")
        if (self.pretrain_tokens_t is None) != (self.pretrain_tokens_source is None):
            raise ValueError("pretrain_tokens_t and pretrain_tokens_source go together (a value names its source)")
        return self

    # -- derived counts -------------------------------------------------------
    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def dh(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def attention_head_dim(self) -> int:
        """The head size the attention core's activations and time are charged with: ``dh``, or for MLA
        (DeepSeek-V2/V3) the mean of the query/key heads (nope + rope) and the value heads. One definition for
        ``xlcalc memory`` (the stage memory model's ``head_dim``) and the planner."""
        if not self.kv_lora_rank:
            return self.dh
        return round((self.dh + (self.qk_rope_head_dim or 0) + (self.v_head_dim or self.dh)) / 2)

    def attention_params(self) -> int:
        h, b = self.hidden, int(self.biases)
        if self.kv_lora_rank:  # multi-head latent attention
            qk_nope = self.dh
            rope = self.qk_rope_head_dim or 0
            v = self.v_head_dim or self.dh
            q_rank = self.q_lora_rank or 0
            q = (h * q_rank + q_rank + q_rank * self.heads * (qk_nope + rope)) if q_rank else h * self.heads * (qk_nope + rope)
            kv = h * (self.kv_lora_rank + rope) + self.kv_lora_rank + self.kv_lora_rank * self.heads * (qk_nope + v)
            return q + kv + self.heads * v * h
        q = h * self.heads * self.dh + b * self.heads * self.dh
        kv = 2 * (h * self.kv * self.dh + b * self.kv * self.dh)
        o = self.heads * self.dh * h + b * h
        rel = (h * self.heads * self.dh + 2 * self.heads * self.dh) if self.relative_positions else 0
        return q + kv + o + rel

    def ffn_params(self, inner: int) -> int:
        mats = 3 if self.gated_ffn else 2
        bias = (inner + self.hidden) if self.biases and not self.gated_ffn else 0
        return mats * self.hidden * inner + bias

    def layer_params(self, moe: bool, active: bool = False) -> int:
        """Parameters of one layer. A dense layer without MLA is the registered DENSE_LAYER_PARAMS (the count the
        step-time chain and the StepTime sheet take), with this model's biases and relative-position terms."""
        norms = 2 * self.hidden * (2 if self.biases else 1)
        if not moe and not self.kv_lora_rank:
            return int(dense_layer_params(self.hidden, self.heads, self.kv, self.dh, self.ffn_hidden, self.gated_ffn,
                                          self.biases, self.relative_positions))
        if not moe:
            return self.attention_params() + self.ffn_params(self.ffn_hidden) + norms
        assert self.moe_ffn_hidden
        routed = self.experts_active if active else self.experts
        experts = (routed + self.shared_experts) * self.ffn_params(self.moe_ffn_hidden)
        router = self.experts * self.hidden + (self.experts if self.router_bias else 0)
        return self.attention_params() + experts + router + norms

    @property
    def position_rows(self) -> int:
        """Rows of the learned position table: seq_len + position_offset, 0 without one."""
        return (self.seq_len + self.position_offset) if self.learned_positions else 0

    def input_embedding_params(self) -> int:
        """The input embedding (the registered INPUT_EMBEDDING_PARAMS): the token table V*h and a learned position
        table of :attr:`position_rows`. One count for the parameter total and the planner's first pipeline stage."""
        return int(input_embedding_params(self.vocab, self.hidden, self.position_rows))

    def embedding_params(self) -> int:
        emb = self.input_embedding_params() + (0 if self.tied_embeddings else self.vocab * self.hidden)
        norm = self.hidden * (2 if self.biases else 1)
        if self.embedding_norm:
            emb += norm
        return emb + norm  # final norm

    def derived_params(self, active: bool = False) -> int:
        """Parameter count from the architecture (all experts, or with ``active`` those a token uses).

        total = embeddings (V·h, twice if untied; + learned positions (s + offset)·h; + norms)
              + dense layers · (attention + FFN + 2 norms)
              + MoE layers · (attention + (routed + shared experts) · expert FFN + router + 2 norms)
        attention = q, k, v (GQA: kv_heads·d_head wide), o (+ biases), + Transformer-XL position
        projection h·h and two bias vectors for relative positions, or the MLA low-rank form
        (DeepSeek-V2/V3: q and kv down/up projections with their norms, decoupled RoPE key).
        FFN = 2·h·f (3·h·f gated) + biases. Sources: the papers and configs named in models.toml.
        """
        moe_layers = self.layers - self.dense_layers if self.experts else 0
        dense = self.layers - moe_layers
        total = self.embedding_params() + dense * self.layer_params(False)
        if moe_layers:
            total += moe_layers * self.layer_params(True, active)
        return total

    @property
    def params_b(self) -> float:
        """Total parameters derived from the architecture, billions."""
        return self.derived_params() / 1e9

    @property
    def active_params_b(self) -> float:
        """Parameters each token uses (= params_b for a dense model), billions."""
        return self.derived_params(active=True) / 1e9

    @property
    def nonembed_params_b(self) -> float:
        return (self.derived_params(active=True) - self.embedding_params()) / 1e9


PRICE_TIERS = spec("price_tier").choices
"""Rental tiers (the price_tier input's choices, xlcalc.inputs): on-demand, reserved for 1 or 3 years, spot
(pre-emptible), capacity block (a short reservation booked ahead, e.g. AWS EC2 Capacity Blocks) and "assumed" (a rate
a report assumed)."""


class Price(_Row):
    """A price row for one GPU: a rental rate of one tier, a purchase price, or both; dated and sourced."""

    gpu: str = Field(description="id of the GPU row this price is for")
    tier: Optional[Literal[PRICE_TIERS]] = Field(  # type: ignore[valid-type]
        default=None, description="rental tier of usd_per_gpu_hour (required when it is given)")
    usd_per_gpu_hour: Optional[float] = Field(default=None, ge=0)
    capex_usd_per_gpu: Optional[float] = Field(default=None, ge=0)
    capex_usd_per_server: Optional[float] = Field(
        default=None, ge=0, description="purchase price of a whole server with its GPUs, where a source gives one")
    gpus_per_server: Optional[int] = Field(default=None, ge=1)
    default: bool = Field(default=False, description="the GPU's default price when no tier is asked for")
    date: str = ""

    @model_validator(mode="after")
    def _tier_with_rate(self) -> "Price":
        if self.usd_per_gpu_hour is not None and self.tier is None:
            raise ValueError("a rental rate (usd_per_gpu_hour) needs its tier: " + ", ".join(PRICE_TIERS))
        if self.usd_per_gpu_hour is None and self.tier is not None:
            raise ValueError(f"tier = {self.tier!r} without a usd_per_gpu_hour")
        if (self.capex_usd_per_server is None) != (self.gpus_per_server is None):
            raise ValueError("capex_usd_per_server and gpus_per_server go together")
        return self


class _Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _GPUFile(_Catalog):
    gpu: list[GPU]


class _ModelFile(_Catalog):
    model: list[Model]


class _PriceFile(_Catalog):
    price: list[Price]


_KINDS: dict[str, tuple[str, type[_Catalog], str]] = {"gpus": ("gpus.toml", _GPUFile, "gpu"), "models": ("models.toml", _ModelFile, "model"),
          "prices": ("prices.toml", _PriceFile, "price")}


def load(kind: str, path: str | Path | None = None) -> tuple[Any, ...]:
    """Read and validate one catalog file: ``kind`` is "gpus", "models" or "prices".

    ``path`` defaults to the packaged file in ``xlcalc/data/``. Any problem (missing file, TOML
    syntax, a wrong field or value, a duplicate name) raises :class:`CatalogError` naming the file.
    """
    if kind not in _KINDS:
        raise CatalogError(f"unknown catalog kind {kind!r}; valid kinds: {', '.join(_KINDS)}")
    filename, schema, key = _KINDS[kind]
    source: Traversable = Path(path) if path is not None else DATA / filename
    label = filename if path is None else str(path)
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"catalog {label} cannot be read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"catalog {label} is not valid TOML: {exc}") from exc
    try:
        rows = getattr(schema.model_validate(raw), key)
    except ValidationError as exc:
        problems = "; ".join(_describe(raw, key, e) for e in exc.errors())
        raise CatalogError(f"catalog {label} is not valid: {problems}") from exc
    if kind == "models":  # a row's sequence length is data: published, never the default a config.json model takes
        lacking = [f"[[{key}]] #{i + 1} ({r.get('id', 'no id')}) seq_len: missing"
                   for i, r in enumerate(raw.get(key) or []) if "seq_len" not in r]
        if lacking:
            raise CatalogError(f"catalog {label} is not valid: {'; '.join(lacking)} (the published pre-training "
                               "sequence length; a catalog row takes no default)")
    seen: dict[str, str] = {}
    for row in rows:
        for name in (row.id, row.name, *row.aliases):
            k = _norm(name)
            if k in seen and seen[k] != row.id:
                raise CatalogError(f"catalog {label}: {name!r} names both {seen[k]} and {row.id}")
            seen[k] = row.id
    return tuple(rows)


def _describe(raw: dict[str, Any], key: str, err: Any) -> str:
    """One validation error as "row <id>: field = value: message"."""
    loc = list(err.get("loc", ()))
    where = ".".join(str(p) for p in loc) or key
    if len(loc) >= 2 and loc[0] == key and isinstance(loc[1], int):
        rows = raw.get(key) or []
        row = rows[loc[1]] if loc[1] < len(rows) and isinstance(rows[loc[1]], dict) else {}
        field = ".".join(str(p) for p in loc[2:]) or "row"
        where = f"[[{key}]] #{loc[1] + 1} ({row.get('id', 'no id')}) {field}"
    value = f" = {err['input']!r}" if err.get("type") != "missing" and not isinstance(err.get("input"), dict) else ""
    return f"{where}{value}: {err.get('msg', 'invalid')}"


def _norm(label: str) -> str:
    return "".join(ch for ch in label.lower() if ch.isalnum() or ch == ".")


@cache
def gpus() -> tuple[GPU, ...]:
    """The GPU catalog (``xlcalc/data/gpus.toml``)."""
    return load("gpus")


@cache
def models() -> tuple[Model, ...]:
    """The model catalog (``xlcalc/data/models.toml``)."""
    return load("models")


@cache
def prices() -> tuple[Price, ...]:
    """The prices (``xlcalc/data/prices.toml``): at most one rate per GPU and tier, one default per GPU."""
    rows = load("prices")
    seen: set[tuple[str, str]] = set()
    defaults: set[str] = set()
    for p in rows:
        if p.tier is not None:
            if (p.gpu, p.tier) in seen:
                raise CatalogError(f"catalog prices.toml: two {p.tier} rates for {p.gpu}")
            seen.add((p.gpu, p.tier))
        if p.default:
            if p.gpu in defaults:
                raise CatalogError(f"catalog prices.toml: two default prices for {p.gpu}")
            defaults.add(p.gpu)
    return rows


_R = TypeVar("_R", bound=_Row)


# (the catalog tuple, its normalised names -> row), one per catalog tuple: the cached catalogs are looked up
# thousands of times per plan or validation, a linear scan normalising every name each time dominated them
_INDEXES: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}


def _index(rows: tuple[_R, ...]) -> dict[str, _R]:
    """Every normalised id, name and alias of ``rows`` -> its row (the first row that has it, as a scan finds)."""
    hit = _INDEXES.get(id(rows))
    if hit is not None and hit[0] is rows:
        return hit[1]
    index: dict[str, _R] = {}
    for row in rows:
        for name in (row.id, row.name, *row.aliases):
            index.setdefault(_norm(name), row)
    for row in rows:  # a GPU named as people write it, after its maker: "NVIDIA H100", "AMD MI300X" (after every
        vendor = getattr(row, "vendor", None)  # plain name, so that none of those is ever shadowed)
        if isinstance(vendor, str) and vendor:
            for name in (row.id, *row.aliases):
                index.setdefault(_norm(vendor) + _norm(name), row)
    if len(_INDEXES) > 32:  # catalogs reloaded many times (tests): keep the index table small
        _INDEXES.clear()
    _INDEXES[id(rows)] = (rows, index)
    return index


def _find(rows: tuple[_R, ...], label: str, what: str) -> _R:
    index = _index(rows)
    row = index.get(_norm(str(label)))
    if row is not None:
        return row
    # the rows whose id, name or alias is close to the label (llama3-8b -> llama3.1-8b)
    close = dict.fromkeys(index[k].id for k in difflib.get_close_matches(_norm(str(label)), index, n=3, cutoff=0.75))
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise CatalogError(f"unknown {what} {label!r}{hint}; valid {what}s: {', '.join(r.id for r in rows)}")


def get_gpu(label: str) -> GPU:
    return _find(gpus(), label, "GPU")


def get_model(label: str) -> Model:
    return _find(models(), label, "model")


def price_for(gpu_label: str) -> Price | None:
    """The default price row for a GPU (any of its names), or None when no source gives one.

    The default is the row marked ``default = true``, else the GPU's first row.
    """
    gpu = get_gpu(gpu_label)
    rows = [p for p in prices() if p.gpu == gpu.id]
    return next((p for p in rows if p.default), rows[0] if rows else None)


def rental_price(gpu_label: str, tier: str | None = None) -> Price:
    """The rental price row of a GPU at a tier (None: the GPU's default rental rate).

    A tier the catalog has no price for raises :class:`~xlcalc.errors.InputError` naming the GPU and the
    tier, and the tiers it does have; the price is never guessed.
    """
    gpu = get_gpu(gpu_label)
    rows = [p for p in prices() if p.gpu == gpu.id and p.usd_per_gpu_hour is not None]
    have = ", ".join(f'"{p.tier}"' for p in rows) or "none"
    if tier is None:  # the default row (price_for), as a scenario takes it: a tier is never picked silently
        default = price_for(gpu.id)
        if default is not None and default.usd_per_gpu_hour is not None:
            return default
        typed = "type your rate: CLI --usd-per-gpu-hour, cell USD_per_GPU_Hour, a formula's usd_per_gpu_hour argument"
        if rows:
            raise InputError("usd_per_gpu_hour", None, f"given: the price catalog has no default rental rate for "
                             f"{gpu.id}", f"pick a price tier ({gpu.id} has {have}) or {typed}")
        raise InputError("usd_per_gpu_hour", None, f"given: the price catalog has no rental rate for {gpu.id}", typed)
    key = str(tier).strip().lower()
    if key not in PRICE_TIERS:
        raise InputError("price_tier", tier, "one of " + ", ".join(f'"{t}"' for t in PRICE_TIERS))
    for p in rows:
        if p.tier == key:
            return p
    raise InputError("price_tier", tier, f"a tier the price catalog has a {gpu.id} rate for: {have}",
                     f"no sourced {key} price for {gpu.id}; give usd_per_gpu_hour instead")


def purchase_price(gpu_label: str) -> Price | None:
    """The price row with a purchase price (capex) for a GPU, or None when no source gives one."""
    gpu = get_gpu(gpu_label)
    return next((p for p in prices() if p.gpu == gpu.id and p.capex_usd_per_gpu is not None), None)


def missing_capex(gpu_label: str | None) -> InputError:
    """The one sentence every face gives when owning is asked for and no purchase price is known.

    It names the input (Python ``capex_usd_per_gpu``, CLI ``--capex-usd-per-gpu``, cell ``Capex_USD_per_GPU``),
    the GPU, and what to do.
    """
    return InputError("capex_usd_per_gpu", None, "a purchase price per GPU in USD",
                      missing_capex_detail(get_gpu(gpu_label).id if gpu_label else None))


def missing_capex_detail(gpu_id: str | None) -> str:
    """The detail of :func:`missing_capex` for a GPU id (the workbook builds it around its GPU_Type cell)."""
    where = (f"the price catalog has no purchase price for {gpu_id}" if gpu_id is not None
             else "no GPU was chosen to look a purchase price up for")
    return (f"{where}: type your quote in capex_usd_per_gpu (CLI --capex-usd-per-gpu, cell Capex_USD_per_GPU) "
            "to price owning")


def capex_for(gpu_label: str | None) -> Price:
    """The catalog's purchase-price row for the chosen GPU, or :func:`missing_capex`'s error."""
    buy = purchase_price(gpu_label) if gpu_label else None
    if buy is None or buy.capex_usd_per_gpu is None:
        raise missing_capex(gpu_label)
    return buy


def capex_note(buy: Price) -> str:
    """Where a purchase price came from, in words (as the rental price is stated)."""
    return f"${buy.capex_usd_per_gpu:,.0f} per GPU, price catalog {buy.id} ({buy.date or 'undated'})"


GPU_DERIVED_FIELDS = ("half_tflops", "capacity_gb")
"""A GPU's values derived from its row: the training peak and the memory a fit is checked against."""
MODEL_DERIVED_FIELDS = ("params_b", "active_params_b")
"""A model's values derived from its architecture: the parameter counts, billions."""
GPU_FIELDS = tuple(k for k in GPU.model_fields if k not in ("aliases",)) + GPU_DERIVED_FIELDS
MODEL_FIELDS = tuple(k for k in Model.model_fields if k not in ("aliases",)) + MODEL_DERIVED_FIELDS
"""Every field a catalog look-up gives (GPU_SPEC, MODEL_SPEC, GPU_LIST, MODEL_LIST, ``xlcalc catalog --json``)."""

_EMPTY_MEANS = {"kv_heads": "kv", "head_dim": "dh"}  # Model: None = heads (multi-head attention), None = hidden / heads


def looked_up(row: GPU | Model, field: str) -> Any:
    """The value a catalog look-up gives for ``field`` of ``row`` (GPU_SPEC, MODEL_SPEC, their lists, ``xlcalc catalog``
    and the workbook's catalog sheets): the row's value; a model's kv_heads or head_dim left empty is the value the
    schema gives it (its heads; hidden / heads), which every model computation uses, not an unpublished figure."""
    if isinstance(row, Model) and field in _EMPTY_MEANS:
        return getattr(row, _EMPTY_MEANS[field])
    return getattr(row, field)

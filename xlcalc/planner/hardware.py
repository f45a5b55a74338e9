"""The hardware a plan runs on: one GPU's figures from the catalog, with the user's overrides.

:func:`resolve_hardware` reads the GPU catalog (``xlcalc/data/gpus.toml``) and returns a
:class:`Hardware`. Every figure the step-time model needs and the catalog leaves empty is
collected, and ONE error lists them all with the flag that supplies each. The scale-out (NIC)
bandwidth is needed only when the cluster is larger than one scale-up (NVLink) domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Optional, cast

from .. import catalog
from ..errors import CatalogError
from .kernels import FLASH_ATTENTION_2_SHARE
from .stacks import STACKS

__all__ = ["Hardware", "resolve_hardware", "SM_COUNT", "attention_factor", "catalog_matmul_efficiency"]

# Streaming multiprocessors, from the vendors' architecture documents. A GPU not listed gets no wave
# quantization unless Settings.sm_count gives its count.
SM_COUNT = {
    "a100-80gb": 108,   # NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs
    "a100-40gb": 108,   # same
    "a800": 108,        # A100 silicon: 312 TFLOPS = 108 SMs x 4 tensor cores x 512 FLOP/clock x 1.41 GHz
    "h100-sxm": 132,    # NVIDIA H100 Tensor Core GPU Architecture whitepaper: H100 SXM5 132 SMs
    "h800": 132,        # published.json hw-h800 (DeepSeek-V3 report: 132 SMs)
}

def attention_factor(gpu_id: str, by_generation: bool) -> float:
    """The attention kernel's share of peak on this GPU relative to A100 (1.0 when off or the GPU is not listed)."""
    share = FLASH_ATTENTION_2_SHARE.get(gpu_id)
    return share / FLASH_ATTENTION_2_SHARE["a100-80gb"] if by_generation and share is not None else 1.0


@dataclass(frozen=True)
class Hardware:
    name: str
    peak_tflops: float
    memory_gb: float
    hbm_tb_s: float
    scaleup_gb_s: float
    scaleout_gb_s: Optional[float]   # None: the cluster fits in one scale-up domain, no NIC traffic
    gpus_per_node: int
    matmul_efficiency: float
    usd_per_gpu_hour: Optional[float]
    price_basis: str = ""              # where usd_per_gpu_hour came from: "given", or the price catalog's row
    sm_count: Optional[int] = None
    matmul_efficiency_basis: str = ""  # where matmul_efficiency came from, for the explanation
    nvlink_domain: int = 8             # GPUs sharing one scale-up fabric (TP, and groups inside it, stay there)
    fp8_tflops: Optional[float] = None
    attention_factor: float = 1.0      # attention kernel's share of peak relative to A100 (FLASH_ATTENTION_2_SHARE)


# what the step-time model needs: (attribute, description, flag, example)
_NEEDS = {
    "peak_tflops": ("dense bf16/fp16 TFLOPS", "--peak-tflops", "312"),
    "memory_gb": ("memory size", "--memory-gb", "80"),
    "hbm_tb_s": ("HBM bandwidth", "--hbm-tb-s", "2.0"),
    "scaleup_gb_s": ("scale-up (NVLink) bandwidth per GPU and direction", "--scaleup-gb-s", "450"),
    "scaleout_gb_s": ("scale-out (NIC) bandwidth per GPU", "--scaleout-gb-s", "50 for one 400 Gb/s port per GPU"),
    "gpus_per_node": ("GPUs per node", "--gpus-per-node", "8"),
    "matmul_efficiency": ("matmul efficiency", "--matmul-efficiency", "0.8"),
}


def _efficiency(row: catalog.GPU, settings: Any) -> tuple[Optional[float], str]:
    if settings.matmul_efficiency and getattr(settings, "matmul_efficiency_of_mamf", False):
        # the GPU's measured maximum achievable matmul FLOPS as a share of peak (its own, or its die's)
        mamf = row.matmul_efficiency or (catalog.get_gpu(row.matmul_efficiency_from).matmul_efficiency
                                         if row.matmul_efficiency_from else None)
        if mamf:
            return (settings.matmul_efficiency * mamf,
                    f"given as a share ({settings.matmul_efficiency:g}) of the GPU's MAMF ({mamf:g})")
        return settings.matmul_efficiency, "given (the GPU has no measured MAMF to take a share of)"
    if settings.matmul_efficiency:
        return settings.matmul_efficiency, "given"
    stack = STACKS.get(getattr(settings, "stack", None) or "")
    if stack is not None and stack.matmul_efficiency:
        return stack.matmul_efficiency, f"stack {stack.id}, fitted to its published runs (docs/validation.md)"
    if row.training_matmul_efficiency:
        return row.training_matmul_efficiency, "catalog, fitted to published training runs"
    if row.matmul_efficiency:
        return row.matmul_efficiency, "catalog, single-GPU microbenchmark"
    if row.matmul_efficiency_from:
        ref = catalog.get_gpu(row.matmul_efficiency_from)
        if ref.training_matmul_efficiency:
            return ref.training_matmul_efficiency, f"catalog, {ref.name} (same die), fitted to published training runs"
        if ref.matmul_efficiency:
            return ref.matmul_efficiency, f"catalog, {ref.name} (same die), single-GPU microbenchmark"
    return None, ""


def catalog_matmul_efficiency(row: catalog.GPU) -> Optional[float]:
    """The matmul efficiency the planner takes for a GPU when neither the settings nor the stack give one."""
    return _efficiency(row, SimpleNamespace(matmul_efficiency=None, stack=None))[0]


def resolve_hardware(gpu: str | catalog.GPU, settings: Any, n_gpus: Optional[int] = None) -> Hardware:
    """The GPU's figures with the settings' overrides.

    ``n_gpus`` (None: unknown, e.g. a deadline search) decides whether the scale-out bandwidth is needed:
    a cluster inside one scale-up domain never uses the NIC. Every missing figure is named in one error.
    """
    row = gpu if isinstance(gpu, catalog.GPU) else catalog.get_gpu(gpu)
    price = settings.usd_per_gpu_hour
    price_basis = "given"
    if price is None:
        try:
            p = catalog.price_for(row.id)
            price = p.usd_per_gpu_hour if p else None
        except CatalogError:
            p, price = None, None
        price_basis = (f"price catalog {p.id}, {p.tier} tier, {p.date or 'undated'}" if price is not None and p
                       else f"the price catalog has no rental rate for {row.id}: no cost (give usd_per_gpu_hour)")
    eff, basis = _efficiency(row, settings)
    node = settings.gpus_per_node or row.gpus_per_node or row.nvlink_domain
    domain = settings.nvlink_domain or row.nvlink_domain or node
    values: dict[str, Any] = dict(
        peak_tflops=settings.peak_tflops or row.half_tflops,
        memory_gb=settings.memory_gb or row.capacity_gb,  # as exposed to CUDA where a source gives it
        hbm_tb_s=settings.hbm_tb_s or row.hbm_tb_s, scaleup_gb_s=settings.scaleup_gb_s or row.scaleup_gb_s,
        scaleout_gb_s=settings.scaleout_gb_s or row.scaleout_gb_s, gpus_per_node=node, matmul_efficiency=eff)
    if n_gpus is not None and domain is not None and n_gpus <= domain and values["scaleout_gb_s"] is None:
        values.pop("scaleout_gb_s")
    if n_gpus == 1 and values["scaleup_gb_s"] is None:
        values["scaleup_gb_s"] = float("inf")  # one GPU talks to nobody
    if missing := [k for k, v in values.items() if v is None]:
        parts = [f"{_NEEDS[k][0]} ({_NEEDS[k][1]}, e.g. {_NEEDS[k][2]})" for k in missing]
        raise CatalogError(f"{row.name}: the GPU catalog has no " + "; no ".join(parts)
                           + ". Give " + ("it" if len(missing) == 1 else "each") + " with the flag named (xlcalc plan; "
                           "the worksheet functions PLAN and LAYOUT_* take none of them but PLAN's scaleout_gb_s).")
    return Hardware(  # the figures checked above, by name (no scale-out inside one domain)
        name=row.name, **{"scaleout_gb_s": None, **values}, matmul_efficiency_basis=basis,
        usd_per_gpu_hour=price, price_basis=price_basis,
        sm_count=(settings.sm_count or SM_COUNT.get(row.id)) if settings.wave_quantization else None,
        nvlink_domain=cast(int, domain), fp8_tflops=row.fp8_tflops,  # domain falls back on the node, checked above
        attention_factor=attention_factor(row.id, getattr(settings, "attention_by_generation", False)))

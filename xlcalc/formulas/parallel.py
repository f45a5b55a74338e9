"""Parallelism: pipeline bubble and collective-communication volumes."""

from __future__ import annotations

from ..recipes import MEMORY_DEFAULTS as _D  # every input's default, declared once: the signatures read it
from ..registry import REGISTRY, formula


@formula(
    udf="PIPELINE_BUBBLE", unit="ratio to ideal time", category="parallel",
    equation="bubble / ideal = (p-1)/(v*m)",
    source="Narayanan et al. 2021 §2.2 (1F1B and interleaved schedules)",
)
def pipeline_bubble(pp, microbatches, virtual_stages=_D["virtual_stages"]):
    """Pipeline bubble time relative to the ideal (bubble-free) iteration time."""
    return (pp - 1) / (virtual_stages * microbatches)


@formula(
    udf="PIPELINE_BUBBLE_SHARE", unit="fraction of iteration", category="parallel",
    equation="(p-1)/(v*m + p-1)",
    source="Narayanan et al. 2021 §2.2",
)
def pipeline_bubble_share(pp, microbatches, virtual_stages=_D["virtual_stages"]):
    """Share of each iteration that the pipeline spends idle."""
    return (pp - 1) / (virtual_stages * microbatches + pp - 1)


@formula(
    udf="ALLREDUCE_BYTES", unit="bytes per rank", category="parallel",
    equation="2*S*(n-1)/n",
    source="NCCL tests PERFORMANCE.md (ring all-reduce bus bandwidth)",
)
def allreduce_bytes(size_bytes, ranks):
    """Bytes each rank sends in a ring all-reduce of a buffer of S bytes."""
    return 2 * size_bytes * (ranks - 1) / ranks


@formula(
    udf="ALLGATHER_BYTES", unit="bytes per rank", category="parallel",
    equation="S*(n-1)/n (all-gather or reduce-scatter)",
    source="NCCL tests PERFORMANCE.md",
)
def allgather_bytes(size_bytes, ranks):
    """Bytes each rank sends in a ring all-gather or reduce-scatter of S bytes in total."""
    return size_bytes * (ranks - 1) / ranks


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

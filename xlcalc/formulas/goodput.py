"""Goodput: how much of the wall-clock time of a large run makes progress, from failures and checkpoints.

A synchronous job stops whenever any of its GPUs fails, so the cluster's mean time between
failures is the per-GPU MTBF divided by the GPU count. The job saves a checkpoint every tau
hours (each save stalls it delta hours); after a failure it loses, on average, half an interval
of work plus the restart time R. Young's first-order optimum interval is tau = SQRT(2 delta M),
and the share of time that makes progress is

    goodput = 1 - delta/tau - (tau/2 + R)/M   (= 1 - SQRT(2 delta / M) - R/M at Young's tau).

Sources: J. W. Young, "A first order approximation to the optimum checkpoint interval",
Comm. ACM 17(9), 1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval
for restart dumps", FGCS 22(3), 2006; issue 12.
"""

from __future__ import annotations

import math

from ..errors import InputError
from ..expr.functions import if_, sqrt
from ..registry import REGISTRY, formula


@formula(udf="CLUSTER_MTBF_H", unit="hours", category="goodput",
         equation="M = GPU MTBF / GPUs", source="issue 12 (a synchronous job stops when any GPU fails)")
def cluster_mtbf_h(gpu_mtbf_h, n_gpus):
    """Mean time between job-stopping failures of the whole cluster."""
    return gpu_mtbf_h / n_gpus


@formula(udf="GPU_MTBF_FROM_NODE_H", unit="hours", category="goodput",
         equation="node MTBF * GPUs per node", source="issue 12 (per-node MTBF)")
def gpu_mtbf_from_node_h(node_mtbf_h, gpus_per_node):
    """Per-GPU MTBF equivalent to a per-node MTBF (same cluster MTBF)."""
    return node_mtbf_h * gpus_per_node


@formula(udf="GPU_MTBF_OBSERVED_H", unit="hours", category="goodput",
         equation="GPUs * days * 24 / interruptions",
         source="Llama 3 paper §3.3.4: 419 unexpected interruptions in 54 days on 16,384 GPUs")
def gpu_mtbf_observed_h(n_gpus, days, interruptions):
    """Per-GPU MTBF implied by the interruptions a run counted (GPU-hours per interruption)."""
    return n_gpus * days * 24 / interruptions


@formula(udf="CHECKPOINT_INTERVAL_H", unit="hours", category="goodput",
         equation="tau = SQRT(2 * delta * M), delta = save_s/3600, M = GPU MTBF / GPUs",
         source="Young 1974 (first-order optimum checkpoint interval); issue 12")
def checkpoint_interval_h(save_s, n_gpus, gpu_mtbf_h):
    """Optimal time between checkpoints (Young's first-order optimum)."""
    return sqrt(2 * (save_s / 3600) * cluster_mtbf_h(gpu_mtbf_h, n_gpus))


_NO_PROGRESS = ("no progress: failures come faster than checkpoints and restarts (raise GPU_MTBF_H, "
                "lower Ckpt_Save_S or Restart_S, or use fewer GPUs)")


def _min_cluster_mtbf_h(d: float, r: float) -> float:
    """Smallest cluster MTBF with goodput > 0, d and r save and restart hours: 1 - SQRT(2d/M) - r/M = 0 for M."""
    if r == 0:
        return 2 * d
    x = (-math.sqrt(2 * d) + math.sqrt(2 * d + 4 * r)) / (2 * r)  # x = 1/SQRT(M)
    return 1 / (x * x)


def _progress(n_gpus, gpu_mtbf_h, save_s, restart_s, **_):
    m = gpu_mtbf_h / n_gpus
    d, r = save_s / 3600, restart_s / 3600
    tau = math.sqrt(2 * d * m)
    g = 1 - d / tau - (tau / 2 + r) / m
    if g <= 0:
        need = _min_cluster_mtbf_h(d, r) * n_gpus
        raise InputError(
            "gpu_mtbf_h", gpu_mtbf_h,
            f"more than {need:,.0f} hours for {n_gpus:,} GPUs with {save_s:g} s checkpoint saves and {restart_s:g} s "
            "restarts",
            f"goodput would be {g:.3f}: failures every {m * 60:.1f} minutes come faster than checkpoints "
            "and restarts, so the job cannot make progress",
        )


@formula(udf="GOODPUT", unit="fraction", category="goodput",
         equation="1 - delta/tau - (tau/2 + R)/M at tau = SQRT(2 delta M); delta = save_s/3600, R = restart_s/3600, "
                  "M = GPU MTBF / GPUs",
         source="Young 1974; Daly 2006; issue 12", check=_progress)
def goodput_fraction(n_gpus, gpu_mtbf_h, save_s, restart_s):
    """Goodput: share of wall-clock time that makes progress, after checkpoint stalls and lost work."""
    tau = checkpoint_interval_h(save_s, n_gpus, gpu_mtbf_h)
    m = cluster_mtbf_h(gpu_mtbf_h, n_gpus)
    g = 1 - (save_s / 3600) / tau - (tau / 2 + restart_s / 3600) / m
    return if_(g > 0, g, _NO_PROGRESS)  # Python raises before this (the check); a cell shows the sentence


@formula(udf="FAILURE_FRAC_FROM_GOODPUT", unit="fraction", category="goodput",
         equation="1 / goodput - 1", source="issue 12 (goodput replaces the typed failure share)")
def failure_frac_from_goodput(goodput):
    """Extra compute, as a share of a clean run, that failures and checkpoints cost."""
    return 1 / goodput - 1


@formula(udf="GOODPUT_EXTRA_DAYS", unit="days", category="goodput",
         equation="days * (1 / goodput - 1)", source="issue 12")
def goodput_extra_days(days, goodput):
    """Extra wall-clock days a clean run of `days` needs at a goodput below 1."""
    return days * failure_frac_from_goodput(goodput)


@formula(udf="GOODPUT_EXTRA_USD", unit="USD", category="goodput",
         equation="compute USD * (1 / goodput - 1)", source="issue 12")
def goodput_extra_usd(compute_usd, goodput):
    """Extra dollars a clean run costing compute_usd needs at a goodput below 1."""
    return compute_usd * failure_frac_from_goodput(goodput)


@formula(udf="FAILURE_FRAC_USED", unit="fraction", category="goodput",
         equation="IF(use typed tax, typed failure share, 1 / goodput - 1)",
         source="issue 12 (goodput replaces the typed tax, which stays as an override); seed 000 (failures 10-20%)")
def failure_frac_used(use_typed_tax, failure_frac, goodput):
    """The failure share a plan uses: the goodput estimate, or the typed share when asked for."""
    return if_(use_typed_tax, failure_frac, failure_frac_from_goodput(goodput))


@formula(udf="DAYS_WITH_FAILURES", question=True, unit="days", category="goodput",
         equation="days * (1 + failure share)", source="issue 12")
def days_with_failures(days, failure_frac):
    """Wall-clock days of a clean run of `days` once failures, restarts and checkpoints are paid for."""
    return days * (1 + failure_frac)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above

"""Benchmark: plan Llama 3.1 405B on 16,384 H100 (every combination). Prints the wall time; not a test.

    python bench/bench_planner.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xlcalc.planner import Settings, plan  # noqa: E402


def main() -> None:
    settings = Settings(scaleout_gb_s=50)  # DGX H100: one 400 Gb/s NDR port per GPU
    kwargs = dict(gpu="h100", n_gpus=16384, seq_len=8192, global_batch_tokens=16 * 2**20, tokens_t=15.6,
                  settings=settings)
    plan("llama3.1-405b", **kwargs)  # warm-up: imports, catalog load
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        result = plan("llama3.1-405b", **kwargs)
        times.append(time.perf_counter() - t0)
    best = result.plans[0]
    print(f"configurations evaluated: {result.evaluated}, fitting: {result.feasible}")
    print(f"best of 5: {min(times):.3f} s, median {sorted(times)[2]:.3f} s")
    print(f"top plan: {best.label()}: {best.memory_gb:.1f} GB, MFU {best.mfu:.1%}, {best.days:.1f} days")
    # a GPU count with many divisors makes the search larger: 405B on 12,288 GPUs (PP 1, 2, 3, 6, ...)
    kwargs["n_gpus"] = 12288
    kwargs["global_batch_tokens"] = 12 * 2**20
    t0 = time.perf_counter()
    result = plan("llama3.1-405b", **kwargs)
    print(f"12,288 GPUs: {result.evaluated} configurations, {result.feasible} fit, {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()

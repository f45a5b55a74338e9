"""Benchmark the planner as ratios measured in the same run (a benchmark, not a test).

    pip install llm-analysis          # the established calculator we compare one evaluation with
    python bench/bench_planner.py [--repeat 5]

1. One configuration, side by side in this process: ``xlcalc.planner.evaluate`` (memory and step time of one
   layout) against ``llm_analysis.analysis.LLMAnalysis(...).training(...)`` (llm-analysis 0.2.x), both for GPT-3
   175B on A100 80GB, TP 8, PP 16, DP 8, micro-batch 1, full recomputation, seq 2048, 1536 sequences. The
   step-time model's caches (per-layer times, GEMM wave efficiencies) are cleared before every xlcalc evaluation, so each one computes everything.
2. The full search (``xlcalc.planner.plan``) for Llama 2 70B on 1,024 H100 and Llama 3.1 405B on 16,384 H100,
   this tree against the code of BASELINE (extracted with ``git archive`` into a temporary directory). Each
   search runs in its own subprocess, the two trees alternating; the best of ``--repeat`` runs is kept. This tree
   searches a richer space (micro-batch as far as memory allows, uneven stages, context parallelism), so it
   evaluates more configurations than the baseline; both counts are printed. Each process first plans another
   case (Llama 2 7B on 8 GPUs) so that imports and catalog loading are not timed.

Prints one table of seconds and ratios; docs/planner.md and README quote the figures of a run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE_SHORT = "00e0d8f"  # main before issue 11: fixed search space, flat collectives, micro-batch <= 8

# the searches: kwargs of xlcalc.planner.plan; scale-out 50 GB/s = DGX H100 (one 400 Gb/s port per GPU), given
# explicitly because the baseline's catalog has no scale-out figure
SEARCHES = {
    "70B on 1,024 H100": dict(model="llama2-70b", gpu="h100", n_gpus=1024, seq_len=4096,
                              global_batch_tokens=4 * 2**20, tokens_t=2),
    "405B on 16,384 H100": dict(model="llama3.1-405b", gpu="h100", n_gpus=16384, seq_len=8192,
                                global_batch_tokens=16 * 2**20, tokens_t=15.6),
}

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from xlcalc.planner import Settings, plan
kw = json.loads(sys.argv[2])
model = kw.pop("model")
kw["settings"] = Settings(scaleout_gb_s=50)
# warm-up (imports, catalog files) on another case, so that the search itself is timed
plan("llama2-7b", gpu=kw["gpu"], n_gpus=8, seq_len=2048, global_batch_tokens=2**20, settings=kw["settings"])
t0 = time.perf_counter()
res = plan(model, **kw)
dt = time.perf_counter() - t0
best = res.plans[0] if res.plans else None
print(json.dumps({"s": dt, "evaluated": res.evaluated, "best": best.label() if best else None,
                  "mfu": best.mfu if best else None}))
"""


def _one_config(repeat: int) -> tuple[float, float]:
    """Seconds per evaluation of one configuration: (xlcalc, llm-analysis), best of ``repeat`` batches."""
    import logging

    logging.disable(logging.CRITICAL)  # llm-analysis logs every call
    from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
    from llm_analysis.config import ModelConfig, ParallelismConfig, get_gpu_config_by_name

    sys.path.insert(0, str(ROOT))
    from xlcalc.formulas.steptime import gemm_wave_efficiency
    from xlcalc.planner import Config, Settings, arch_from_flags, evaluate
    from xlcalc.planner.hardware import resolve_hardware
    from xlcalc.planner.steptime import _matmul_times, _per_layer

    gpu = get_gpu_config_by_name("a100-sxm-80gb")
    mc = ModelConfig(name="gpt3-175b", max_seq_len=2048, num_layers=96, n_head=96, hidden_dim=12288,
                     vocab_size=51200, ffn_embed_dim=49152)
    pc = ParallelismConfig(tp_size=8, pp_size=16, dp_size=8)

    def theirs():
        la = LLMAnalysis(mc, gpu, parallelism_config=pc, flops_efficiency=0.6, hbm_memory_efficiency=0.9)
        return la.training(batch_size_per_gpu=1, global_batch_size=1536, seq_len=2048, total_num_tokens=300e9,
                           activation_recomputation=ActivationRecomputation.FULL, ds_zero=DSZeRO.NONE)

    st = Settings()
    arch = arch_from_flags(96, 12288, 96, vocab=51200)
    hw = resolve_hardware("a100-80gb", st)
    cfg = Config(tp=8, pp=16, dp=8, zero_stage=0, seq_parallel=False, recompute="full", micro_batch=1)

    def ours():
        _per_layer.cache_clear()
        _matmul_times.cache_clear()
        gemm_wave_efficiency.cache_clear()
        return evaluate(arch, hw, st, cfg, 2048, 1536)

    n = 200
    best = {"xlcalc": float("inf"), "llm-analysis": float("inf")}
    for _ in range(repeat):
        for name, fn in (("xlcalc", ours), ("llm-analysis", theirs)):
            fn()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / n)
    return best["xlcalc"], best["llm-analysis"]


def _search(root: Path, kwargs: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), json.dumps(kwargs)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each measurement; the best is kept")
    args = ap.parse_args()

    ours, theirs = _one_config(args.repeat)
    print("One configuration (GPT-3 175B, 1024 x A100, TP 8 PP 16 DP 8), same process:")
    print(f"  xlcalc evaluate        {ours * 1e3:8.3f} ms")
    print(f"  llm-analysis training  {theirs * 1e3:8.3f} ms")
    print(f"  ratio xlcalc / llm-analysis: {ours / theirs:.2f}")
    print()

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", BASELINE_SHORT], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        print(f"Full search, this tree vs {BASELINE_SHORT} (best of {args.repeat}, each in its own process):")
        print(f"  {'search':22} {'baseline s':>10} {'configs':>8} {'this tree s':>11} {'configs':>8} {'ratio':>6}")
        for name, kwargs in SEARCHES.items():
            old = new = None
            for _ in range(args.repeat):
                o = _search(base, kwargs)
                n = _search(ROOT, kwargs)
                old = o if old is None or o["s"] < old["s"] else old
                new = n if new is None or n["s"] < new["s"] else new
            print(f"  {name:22} {old['s']:10.3f} {old['evaluated']:8,} {new['s']:11.3f} {new['evaluated']:8,} "
                  f"{new['s'] / old['s']:6.2f}")
            print(f"    baseline best: {old['best']} (MFU {old['mfu']:.1%})")
            print(f"    this tree best: {new['best']} (MFU {new['mfu']:.1%})")


if __name__ == "__main__":
    main()

"""Benchmark the planner as ratios measured in the same run (a benchmark, not a test).

    pip install llm-analysis          # the established calculator we compare one evaluation with
    python bench/bench_planner.py [--passes 11] [--write | --check]

1. One configuration, side by side in this process: ``xlcalc.planner.evaluate`` (memory and step time of one
   layout) against ``llm_analysis.analysis.LLMAnalysis(...).training(...)`` (llm-analysis 0.2.x), both for GPT-3
   175B on A100 80GB, TP 8, PP 16, DP 8, micro-batch 1, full recomputation, seq 2048, 1536 sequences. The
   step-time model's caches (per-layer times, GEMM wave efficiencies) are cleared before every xlcalc evaluation,
   so each one computes everything. Each pass times 200 evaluations of each, the two alternating.
2. The full search (``xlcalc.planner.plan``) for Llama 2 70B on 1,024 H100 and Llama 3.1 405B on 16,384 H100,
   this tree against the code of BASELINE (extracted with ``git archive`` into a temporary directory). Each
   search runs in its own process (its caches start empty), the two trees alternating and taking turns to go
   first. This tree searches a richer space (micro-batch as far as memory allows, uneven stages, context
   parallelism), so it evaluates more configurations than the baseline; both counts are printed. Each process
   first plans another case (Llama 2 7B on 8 GPUs) so that imports and catalog loading are not timed.

Times are CPU time (time.process_time: a busy machine's other processes do not add to it) in interleaved passes,
reported as the median over the passes with min-max and the wall-clock median beside; a ratio is the ratio of
the CPU medians (min-max: within one pass). Targets: each ratio at most 1 (xlcalc no slower). ``--write`` puts
the figures, dated and with the machine's load, into docs/planner.md and the README; ``--check`` runs again and
fails unless those blocks have this script's format and the fresh run's target statements (bench/benchdoc.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import benchdoc

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
w0, c0 = time.perf_counter(), time.process_time()
res = plan(model, **kw)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
best = res.plans[0] if res.plans else None
print(json.dumps({"cpu": cpu, "wall": wall, "evaluated": res.evaluated, "best": best.label() if best else None,
                  "mfu": best.mfu if best else None}))
"""


def _one_config(passes: int) -> dict[str, benchdoc.Timing]:
    """CPU and wall seconds per evaluation of one configuration: xlcalc and llm-analysis, interleaved passes."""
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

    ours(), theirs()  # imports and first-call work not timed
    return benchdoc.interleaved({"xlcalc": (ours, 200), "llm-analysis": (theirs, 200)}, passes)


def _search(root: Path, kwargs: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), json.dumps(kwargs)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _searches(passes: int) -> dict[str, tuple[benchdoc.Timing, benchdoc.Timing, dict, dict]]:
    """Per search: (baseline timing, this tree's timing, a baseline result, a result of this tree)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", BASELINE_SHORT], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        for name, kwargs in SEARCHES.items():
            timing, last = {"old": benchdoc.Timing(), "new": benchdoc.Timing()}, {}
            for k in range(passes):
                for which in (("old", "new") if k % 2 == 0 else ("new", "old")):
                    last[which] = r = _search(base if which == "old" else ROOT, kwargs)
                    timing[which].cpu.append(r["cpu"])
                    timing[which].wall.append(r["wall"])
            out[name] = (timing["old"], timing["new"], last["old"], last["new"])
    return out


def render(one: dict[str, benchdoc.Timing], searches, passes: int, load_before: str, load_after: str,
           ) -> tuple[str, str, bool]:
    """(the block of docs/planner.md, the README's, all targets met)."""
    ours, theirs = one["xlcalc"], one["llm-analysis"]
    r1 = benchdoc.ratio(ours, theirs)
    ok = r1[0] <= 1.0
    lines = [
        f"Written by `python bench/bench_planner.py --write` on {benchdoc.today()}: {benchdoc.machine()}, "
        f"{passes} interleaved passes; load average (1 / 5 / 15 min) {load_before} at the start, {load_after} at "
        f"the end. Times: CPU time, median over the passes (min-max), and the wall-clock median; ratios: of the "
        f"CPU medians (min-max: within one pass).",
        "",
        "- **One configuration** (GPT-3 175B on A100, TP 8, PP 16, DP 8), 200 evaluations per pass in one process: "
        f"xlcalc's `evaluate` {ours.ms(3)} against llm-analysis's `training` {theirs.ms(3)}, ratio "
        f"{r1[0]:.2f} ({r1[1]:.2f}-{r1[2]:.2f}); target (no slower): {benchdoc.verdict(r1[0] <= 1.0)}.",
        f"- **The full search** against the code of {BASELINE_SHORT}, each search in its own process after a warm-up:",
        "",
        "| search | baseline | configurations | this tree | configurations | ratio | target (no slower) |",
        "|---|---|---|---|---|---|---|",
    ]
    readme_parts = []
    for name, (old, new, o, n) in searches.items():
        r = benchdoc.ratio(new, old)
        ok &= r[0] <= 1.0
        lines.append(f"| {name} | {old.ms(1)} | {o['evaluated']:,} | {new.ms(1)} | {n['evaluated']:,} "
                     f"| {r[0]:.2f} ({r[1]:.2f}-{r[2]:.2f}) | {benchdoc.verdict(r[0] <= 1.0)} |")
        readme_parts.append(f"{name} {r[0]:.2f}x ({benchdoc.verdict(r[0] <= 1.0)})")
    lines += ["", *(f"- {name}: baseline's best {o['best']} (MFU {o['mfu']:.1%}); this tree's best {n['best']} "
                    f"(MFU {n['mfu']:.1%})" for name, (_, _, o, n) in searches.items())]
    readme = (
        f"- `bench/bench_planner.py` ({benchdoc.today()}, load average {load_before.split(' / ')[0]}; CPU medians "
        f"of {passes} interleaved passes): one configuration evaluated in {r1[0]:.2f}x the time llm-analysis "
        f"takes (target no slower: {benchdoc.verdict(r1[0] <= 1.0)}); the full search against the code of "
        f"{BASELINE_SHORT}, each in its own process: " + "; ".join(readme_parts)
        + " (this tree searches a larger space: uneven stages, CP, interleaving). Figures and method: "
        "[docs/planner.md](docs/planner.md#speed).")
    return "\n".join(lines), readme, ok


def main() -> int:
    args = benchdoc.arguments(__doc__.splitlines()[0])
    before = benchdoc.load()
    doc, readme, ok = render(_one_config(args.passes), _searches(args.passes), args.passes, before, benchdoc.load())
    return benchdoc.report("bench_planner.py", {"docs/planner.md": doc, "README.md": readme}, ok, args)


if __name__ == "__main__":
    sys.exit(main())

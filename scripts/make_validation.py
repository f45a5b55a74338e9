"""Generate docs/validation.md: predicted vs measured MFU/HFU for the measured runs in published.json.

    python scripts/make_validation.py [path/to/published.json]

Each run's stated choices (TP, PP, GPUs, batch, recomputation, sequence parallelism) are pinned; what the
source does not state (micro-batch, interleaving, ZeRO stage) is left to the planner, whose best plan is
compared. Runs that report hardware FLOPs (with recomputation) are compared with the predicted HFU,
runs that report model FLOPs with the predicted MFU.

Every run is predicted twice: at the GPU's microbenchmark matmul efficiency (first principles) and at an
efficiency calibrated on the other sources' runs on the same GPU (held out). The script also prints the
efficiency fitted to all runs of each GPU, the catalog's ``training_matmul_efficiency`` (a test keeps them equal).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xlcalc import catalog  # noqa: E402
from xlcalc.planner import Settings, arch_from_flags, plan  # noqa: E402

DEFAULT_JSON = ROOT / "xlcalc" / "data" / "reference" / "published.json"
TOLERANCE = 0.15
# Matmul efficiencies at which every run is predicted once; calibration interpolates between them.
GRID_STEP = 0.05
GRID = [round(0.55 + GRID_STEP * i, 2) for i in range(10)]  # 0.55 ... 1.00

# Hardware figures the catalog leaves empty, with their sources.
H100 = dict(scaleout_gb_s=50)  # DGX H100: 8 x 400 Gb/s NDR InfiniBand per 8 GPUs (hw-h800 also gives 50 GB/s IB)
A100 = dict(scaleout_gb_s=25)
# Narayanan et al. 2021 §5: eight 200 Gb/s HDR InfiniBand HCAs per 8-GPU server = 25 GB/s per GPU. HBM (2.039 TB/s)
# and NVLink (300 GB/s per direction) come from the catalog (NVIDIA A100 datasheet).

# The Megatron-LM software of 2021-22 the A100 runs used, as its code and launch scripts document it:
# - megatron/training.py train_step: with the default local DDP the gradients are all-reduced by
#   model.allreduce_gradients() after the whole forward-backward schedule returns: no overlap (dp_overlap 0);
# - --fp16 without --accumulate-allreduce-grads-in-fp32: the gradient buffers, and so the all-reduce, are fp16
#   (grad_bytes 2);
# - no FlashAttention (2022): softmax, mask and dropout over the s x s scores as separate kernels.
MEGATRON_2021 = dict(dp_overlap=0.0, grad_bytes=2)
# Narayanan et al. 2021 PTD-P is tensor + pipeline + plain data parallelism; ZeRO appears only as the baseline it
# is compared with (§5.2), so these runs shard no optimizer state (ZeRO stage 0).
PTDP = dict(zero_stage=0)
# NVIDIA/Megatron-LM examples/pretrain_gpt3_175B.sh (the README's 1024-GPU GPT-3 run): --micro-batch-size 1, no
# --num-layers-per-virtual-pipeline-stage (no interleaving), --fp16, --checkpoint-activations (full recompute).
GPT3_SCRIPT = dict(zero_stage=0, micro_batch=1, virtual_stages=1)

# Korthikanti et al. 2022, Table 3 (the configurations behind the Megatron-LM README MFU/HFU table):
# heads, hidden, layers, TP, PP, GPUs, global batch; seq 2048, vocab 51200, SP + selective recompute, DP 1.
KORTHIKANTI = {
    "22b": (64, 6144, 48, 8, 1, 8, 4),
    "175b": (96, 12288, 96, 8, 8, 64, 64),
    "530b": (128, 20480, 105, 8, 35, 280, 280),
    "1t": (160, 25600, 128, 8, 64, 512, 512),
}


# The documents the runs come from; a held-out calibration leaves out the whole document of the run it predicts.
NARAYANAN = "Narayanan et al. 2021 (arXiv 2104.04473)"
MEGATRON_README = "NVIDIA/Megatron-LM README"


def cases(records: list[dict]) -> list[dict]:
    """The measured runs with a configuration complete enough to predict."""
    out = []
    for r in records:
        f, rid = r["fields"], r["id"]
        if rid.startswith("megatron-h100-weak-"):
            out.append(dict(id=rid, group="Megatron-LM H100 weak scaling", source=MEGATRON_README, gpu="h100-sxm", hw=H100, flash=True,
                            layers=f["layers"], hidden=f["hidden"], heads=f["attention_heads"], vocab=f["vocab"],
                            tp=f["tp"], pp=f["pp"], gpus=f["gpus"], batch=f["global_batch_seqs"], seq=f["seq_len"],
                            recompute=None, sp=None, metric="mfu", measured=f["mfu"]))
        elif rid in ("narayanan21-1t-3072", "narayanan21-1.7b-32"):
            out.append(dict(id=rid, group="Narayanan et al. 2021 Table 1", source=NARAYANAN, gpu="a100-80gb", hw=A100, flash=False,
                            layers=f["layers"], hidden=f["hidden"], heads=f["heads"], vocab=51200, tp=f["tp"],
                            pp=f["pp"], gpus=f["gpus"], batch=f["global_batch_seqs"], seq=2048, recompute="full",
                            sp=False, metric="hfu", measured=f["tflops_per_gpu"] / 312,
                            software=MEGATRON_2021, pins=PTDP))
        elif rid.startswith("narayanan21-table2-175b-"):
            out.append(dict(id=rid, group="Narayanan et al. 2021 Table 2", source=NARAYANAN, gpu="a100-80gb", hw=A100, flash=False,
                            layers=96, hidden=12288, heads=96, vocab=51200, tp=8, pp=f["model_parallel_size"] // 8,
                            gpus=f["gpus"], batch=f["global_batch_seqs"], seq=2048, recompute="full", sp=False,
                            metric="hfu", measured=f["tflops_per_gpu"] / 312, software=MEGATRON_2021, pins=PTDP))
        elif rid == "megatron-a100-gpt3-175b-1024gpu":
            out.append(dict(id=rid, group="Megatron-LM A100 README", source=MEGATRON_README, gpu="a100-80gb", hw=A100, flash=False,
                            layers=96, hidden=12288, heads=96, vocab=51200, tp=f["tp"], pp=f["pp"], gpus=f["gpus"],
                            batch=f["global_batch_seqs"], seq=f["seq_len"], recompute="full", sp=False,
                            metric="hfu", measured=f["tflops_per_gpu"] / 312, software=MEGATRON_2021,
                            pins=GPT3_SCRIPT))
        elif rid.startswith("megatron-a100-mfu-hfu-"):
            heads, hidden, layers, tp, pp, gpus, batch = KORTHIKANTI[rid.rsplit("-", 1)[1]]
            out.append(dict(id=rid, group="Megatron-LM A100 MFU/HFU table", source=MEGATRON_README, gpu="a100-80gb", hw=A100, flash=False,
                            layers=layers, hidden=hidden, heads=heads, vocab=51200, tp=tp, pp=pp, gpus=gpus,
                            batch=batch, seq=2048, recompute="selective", sp=True, metric="mfu",
                            measured=f["mfu"], software=MEGATRON_2021))
    return out


def predict(case: dict, matmul_efficiency: float) -> dict:
    """The planner's best plan for a run's pinned configuration at one matmul efficiency."""
    arch = arch_from_flags(case["layers"], case["hidden"], case["heads"], vocab=case["vocab"], seq_len=case["seq"])
    st = Settings(flash_attention=case["flash"], matmul_efficiency=matmul_efficiency, **case["hw"],
                  **case.get("software", {}))
    pins = case.get("pins", {})
    res = plan(arch=arch, gpu=case["gpu"], n_gpus=case["gpus"], seq_len=case["seq"],
               global_batch_tokens=case["batch"] * case["seq"], tokens_t=1, settings=st, tp=case["tp"],
               pp=case["pp"], recompute=case["recompute"], seq_parallel=case["sp"], top=1, **pins)
    if not res.plans:
        return dict(predicted=None, error=None, plan="no configuration fits")
    best = res.plans[0]
    predicted = best.mfu if case["metric"] == "mfu" else best.hfu
    return dict(predicted=predicted, error=predicted / case["measured"] - 1, plan=best.label())


def _log_error_at(curve: list[float], eff: float) -> float:
    """log(predicted / measured) at ``eff``, linear between the grid points of ``curve``."""
    i = min(max(int((eff - GRID[0]) / GRID_STEP), 0), len(GRID) - 2)
    frac = (eff - GRID[i]) / GRID_STEP
    return curve[i] + (curve[i + 1] - curve[i]) * frac


def fit_efficiency(curves: list[list[float]]) -> float:
    """The matmul efficiency at which the runs' mean log(predicted / measured) is 0 (geometric mean ratio 1).

    Predicted MFU rises with the efficiency, so bisection over the grid's range finds it.
    """
    lo, hi = GRID[0], GRID[-1]
    for _ in range(40):
        mid = (lo + hi) / 2
        if sum(_log_error_at(c, mid) for c in curves) / len(curves) > 0:
            hi = mid
        else:
            lo = mid
    return round((lo + hi) / 2, 3)


def training_set(case: dict, all_cases: list[dict]) -> list[dict]:
    """The runs a held-out prediction of ``case`` is calibrated on: same GPU, other source documents.

    A GPU whose runs all come from one document leaves out only the run itself.
    """
    same_gpu = [c for c in all_cases if c["gpu"] == case["gpu"]]
    other_sources = [c for c in same_gpu if c["source"] != case["source"]]
    return other_sources or [c for c in same_gpu if c["id"] != case["id"]]


def validate(records: list[dict]) -> dict:
    """Both comparisons for every measured run, and the efficiency fitted to all runs of each GPU.

    ``results``: per run, the prediction at the GPU's measured matmul efficiency (``mamf_*``) and the
    held-out calibrated prediction (``predicted``, ``error``, ``plan``, ``efficiency``).
    ``fitted``: GPU id -> efficiency fitted to all its runs (the catalog's ``training_matmul_efficiency``).
    """
    cs = cases(records)
    curves = {}
    for c in cs:
        points = [predict(c, e)["predicted"] for e in GRID]
        curves[c["id"]] = [math.log(p / c["measured"]) for p in points]
    results = []
    for c in cs:
        mamf = catalog.get_gpu(c["gpu"]).matmul_efficiency
        first = predict(c, mamf)
        eff = fit_efficiency([curves[t["id"]] for t in training_set(c, cs)])
        held_out = predict(c, eff)
        results.append(dict(c, mamf=mamf, mamf_predicted=first["predicted"], mamf_error=first["error"],
                            efficiency=eff, **held_out))
    fitted = {}
    for gpu in dict.fromkeys(c["gpu"] for c in cs):
        fitted[gpu] = fit_efficiency([curves[c["id"]] for c in cs if c["gpu"] == gpu])
    return dict(results=results, fitted=fitted, independent=independent_check(records))


def independent_check(records: list[dict]) -> dict:
    """LLaMA-65B (Touvron et al. 2023): a run from another document and software stack, in no calibration.

    Its parallel configuration is not published, so the planner chooses it; what the paper states is pinned:
    2048 A100 80GB, sequence 2048, 4M-token batches (2048 sequences), fused memory-efficient attention
    (xformers), sequence parallelism (§2.4). Architecture: dim 8192, 64 heads, 80 layers (Table 2), SwiGLU
    with 2/3 x 4d = 22016 rounded to a multiple of 256 (§2, released params), vocabulary 32000.
    """
    rec = next(r for r in records if r["id"] == "llama1-65b")
    f = rec["fields"]
    arch = arch_from_flags(f["n_layers"], f["d_model"], f["n_heads"], ffn_hidden=22016, vocab=32000,
                           gated_ffn=True, seq_len=2048)
    out = dict(id=rec["id"], gpus=f["gpu_count"], measured=f["throughput_tokens_per_s_per_gpu"])
    for key, eff in (("mamf", catalog.get_gpu("a100-80gb").matmul_efficiency), ("calibrated", None)):
        st = Settings(flash_attention=True, matmul_efficiency=eff, **A100)
        res = plan(arch=arch, gpu="a100-80gb", n_gpus=f["gpu_count"], seq_len=2048,
                   global_batch_tokens=2048 * 2048, tokens_t=f["tokens"] / 1e12, settings=st, seq_parallel=True,
                   top=1)
        best = res.plans[0]
        out[key] = dict(tokens_per_s=best.tokens_per_s_per_gpu, days=best.days, plan=best.label(),
                        error=best.tokens_per_s_per_gpu / out["measured"] - 1, efficiency=res.matmul_efficiency)
    return out


def _spread(results: list[dict], key: str) -> list[str]:
    errs = sorted(r[key] for r in results if r[key] is not None)
    ok = sum(abs(e) <= TOLERANCE for e in errs)
    lines = [
        f"- Runs compared: {len(results)}; within ±{TOLERANCE:.0%}: {ok} ({ok / len(results):.0%}).",
        f"- Error range {errs[0]:+.1%} to {errs[-1]:+.1%}; median {errs[len(errs) // 2]:+.1%}; "
        f"mean absolute {sum(abs(e) for e in errs) / len(errs):.1%}.",
    ]
    groups: dict[str, list[float]] = {}
    for r in results:
        if r[key] is not None:
            groups.setdefault(r["group"], []).append(r[key])
    for g, es in groups.items():
        inside = sum(abs(e) <= TOLERANCE for e in es)
        lines.append(f"- {g}: {inside} of {len(es)} within ±{TOLERANCE:.0%}, mean error {sum(es) / len(es):+.1%}.")
    return lines


def within(results: list[dict], key: str = "error") -> float:
    """Share of the runs predicted within the tolerance."""
    return sum(r[key] is not None and abs(r[key]) <= TOLERANCE for r in results) / len(results)


def render(v: dict) -> str:
    results, fitted, ind = v["results"], v["fitted"], v["independent"]
    mamf = {r["gpu"]: r["mamf"] for r in results}
    held_ok, mamf_ok = within(results), within(results, "mamf_error")
    a100 = [r for r in results if r["gpu"].startswith("a100")]
    h100 = [r for r in results if r["gpu"].startswith("h100")]
    a100_mamf_mean = sum(r["mamf_error"] for r in a100) / len(a100)
    h100_mamf_mean = sum(r["mamf_error"] for r in h100) / len(h100)
    lines = [
        "# Validation: predicted vs measured MFU",
        "",
        "Generated by `python scripts/make_validation.py` from `xlcalc/data/reference/published.json`; do not edit.",
        "",
        "Each measured run's stated choices (TP, PP, GPU count, global batch, sequence length, recomputation and",
        "sequence parallelism where stated) are pinned, and so is what the run's documented software did (below);",
        "the planner chooses only what no source states (micro-batch, interleaving, ZeRO stage of the H100 runs)",
        "and its best plan is compared. Like is compared with like: runs that report **hardware** FLOPs",
        "(Narayanan et al. 2021 and the Megatron A100 README count the recomputed forward pass: 96·B·s·L·h²",
        "instead of 72·B·s·L·h²) are compared with the predicted **HFU**; runs that report **model** FLOPs",
        "(Megatron-LM H100 table, Megatron A100 MFU column) with the predicted **MFU**.",
        "",
        "Pinned from the runs' sources:",
        "",
        "- A100 runs (Megatron-LM 2021-22): the data-parallel all-reduce runs after the whole forward-backward",
        "  schedule (`megatron/training.py` `train_step` calls `allreduce_gradients()` after it returns), so",
        "  `dp_overlap = 0`; `--fp16` without `--accumulate-allreduce-grads-in-fp32` reduces fp16 gradients",
        "  (`grad_bytes = 2`); no FlashAttention (softmax, mask and dropout over the s×s scores are separate kernels).",
        "- Narayanan et al. 2021 (PTD-P): tensor + pipeline + plain data parallelism; ZeRO is only the baseline it",
        "  is compared with (§5.2), so ZeRO stage 0.",
        "- Megatron A100 README GPT-3 run: `examples/pretrain_gpt3_175B.sh` gives micro-batch 1, no interleaving",
        "  (no `--num-layers-per-virtual-pipeline-stage`), `--fp16`, `--checkpoint-activations` (full recompute).",
        "- A100 hardware: HBM 2.039 TB/s and NVLink 300 GB/s per direction (NVIDIA A100 datasheet, in the catalog);",
        "  InfiniBand 25 GB/s per GPU (Narayanan et al. 2021 §5: eight 200 Gb/s HDR HCAs per 8-GPU server).",
        "",
        "## Two predictions of every run",
        "",
        "One number of the step-time model is not derived from the configuration: the share of peak a GPU's",
        "matmuls reach inside a training step, `matmul_efficiency`. Every other constant is the default of",
        "`xlcalc.planner.Settings`. Each run is predicted twice:",
        "",
        "1. **Microbenchmark efficiency** (first principles): the GPU's maximum achievable matmul FLOPS over its",
        "   peak, measured by a single-GPU benchmark (ml-engineering MAMF table: "
        + ", ".join(f"{_short(g)} {e:.3f}" for g, e in mamf.items()) + "). Nothing comes from training runs.",
        "2. **Calibrated, held out**: the efficiency at which the model reproduces *other* published runs on the",
        "   same GPU (the geometric mean of their predicted/measured ratios is 1). A run never takes part in its",
        "   own calibration: the fit leaves out the whole document the run comes from (the A100 runs of",
        f"   {NARAYANAN} are predicted from those of the {MEGATRON_README} and the other way round), and on a",
        "   GPU whose runs all come from one document (H100) it leaves out the run itself — a weaker test, as",
        "   those runs share one software stack; they are within the tolerance from first principles too. This",
        "   is the accuracy to expect for a run the model has not seen.",
        "",
        "The planner's default is the efficiency fitted to all the runs of a GPU (catalog field",
        "`training_matmul_efficiency`: " + ", ".join(f"{_short(g)} {e:.3f}" for g, e in fitted.items())
        + "); a GPU without published runs uses its microbenchmark value, and `--matmul-efficiency` sets your own.",
        "",
        "| record | group | GPUs | TP | PP | metric | measured | microbenchmark: predicted | error "
        "| held-out efficiency | calibrated: predicted | error | planner's configuration (calibrated) |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        def num(x, fmt):
            return format(x, fmt) if x is not None else "-"
        lines.append(
            f"| {r['id']} | {r['group']} | {r['gpus']} | {r['tp']} | {r['pp']} | {r['metric'].upper()} | "
            f"{r['measured']:.3f} | {num(r['mamf_predicted'], '.3f')} | {num(r['mamf_error'], '+.1%')} | "
            f"{r['efficiency']:.3f} | {num(r['predicted'], '.3f')} | {num(r['error'], '+.1%')} | {r['plan']} |")
    lines += [
        "",
        "## Spread",
        "",
        "Calibrated, held out (the planner's expected accuracy):",
        "",
        *_spread(results, "error"),
        "",
        "Microbenchmark efficiency (first principles):",
        "",
        *_spread(results, "mamf_error"),
        "",
        "## A run in no calibration",
        "",
        "LLaMA-65B (Touvron et al. 2023, published.json `llama1-65b`): 380 tokens/s per GPU on 2048 A100 80GB,",
        "seq 2048, 4M-token batches, another software stack (xformers fused attention, sequence parallelism,",
        "its own recomputation); its parallel layout is not published, so the planner chooses it.",
        "",
        "| efficiency | predicted tokens/s per GPU | error | planner's configuration |",
        "|---|---:|---:|---|",
        *[f"| {label} {ind[key]['efficiency']:.3f} | {ind[key]['tokens_per_s']:.0f} | {ind[key]['error']:+.1%} | "
          f"{ind[key]['plan']} |"
          for label, key in (("microbenchmark", "mamf"), ("calibrated (A100 default)", "calibrated"))],
        "",
        f"At the A100 default the planner predicts {ind['calibrated']['days']:.1f} days for the 1.4T tokens; the paper",
        "reports about 21 days (380 tokens/s per GPU).",
        "",
        "## Reading the result",
        "",
        f"- The target, 80% of the runs within ±{TOLERANCE:.0%}: "
        f"{'met' if held_ok >= 0.8 else 'not met'} by the calibrated held-out predictions ({held_ok:.0%}); "
        f"{'met' if mamf_ok >= 0.8 else 'not met'} from first principles alone ({mamf_ok:.0%}).",
        "- With the microbenchmark efficiencies the H100 runs (2024 software: fused attention, overlapped gradient",
        f"  reduction) are predicted with a mean error of {h100_mamf_mean:+.1%}, while the A100 runs of 2021-22 are",
        f"  over-predicted by a nearly uniform {min(r['mamf_error'] for r in a100):+.0%} to "
        f"{max(r['mamf_error'] for r in a100):+.0%} (mean {a100_mamf_mean:+.1%}). The gap is the same across model",
        "  sizes, GPU counts and data-parallel sizes, so it is not communication or the bubble: it sits in the",
        "  per-GPU compute. What the model already counts there, each from a source or a kernel count rather than",
        "  a fit: (1) tile and wave quantization of every matmul (forward, input gradient, weight gradient) on the",
        "  GPU's SMs (NVIDIA Matrix Multiplication Background guide §3: an A100 runs 256x128 output tiles in waves",
        "  of 108); (2) the HBM traffic of unfused attention counted kernel by kernel (softmax, mask, dropout, their",
        "  backward and recomputation); (3) the documented software above (no ZeRO, gradient all-reduce after the",
        "  backward pass, fp16 gradients, the GPT-3 script's micro-batch 1 and plain 1F1B schedule).",
        "- What remains is not identified by any source at hand. The fitted A100 efficiency is "
        f"{fitted['a100-80gb'] / mamf['a100-80gb']:.0%} of its",
        f"  microbenchmark value, the H100's {fitted['h100-sxm'] / mamf['h100-sxm']:.0%}. Candidates the model does not",
        "  count: clocks below boost under the power cap in a full node, gaps between kernels, overlap that is",
        "  less than perfect. One efficiency per GPU absorbs them; that it predicts held-out sources this well",
        "  (the A100 value fitted without a document's runs predicts that document's runs) says the loss is a property",
        "  of the GPU and its software, not of one configuration; LLaMA-65B, from another paper and stack and in",
        f"  no calibration, agrees within {abs(ind['calibrated']['error']):.0%}.",
        "- The calibration reflects the software of the runs behind it (A100: Megatron-LM 2021-22; H100:",
        "  Megatron-Core 2024). On a different stack measure your own matmul efficiency and pass",
        "  `--matmul-efficiency`; the microbenchmark column shows the prediction with the single-GPU maximum.",
        "- The Megatron A100 MFU/HFU configurations come from Korthikanti et al. 2022 Table 3, which",
        "  published.json does not carry; the README states only the model size and DP = 1.",
        "- Not compared: the H100 strong-scaling ranges (no per-point configuration), DeepSeek-V3 (FP8, MoE with",
        "  expert parallelism, not modelled), OPT-175B (\"up to\", FLOP convention unknown).",
        "",
    ]
    return "\n".join(lines)


def _short(gpu: str) -> str:
    return catalog.get_gpu(gpu).name.replace("NVIDIA ", "")


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT_JSON
    records = json.loads(path.read_text(encoding="utf-8"))
    v = validate(records)
    text = render(v)
    out = ROOT / "docs" / "validation.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)
    for gpu, eff in v["fitted"].items():
        row = catalog.get_gpu(gpu)
        same = "matches" if row.training_matmul_efficiency == eff else "DIFFERS FROM"
        print(f"{gpu}: fitted training_matmul_efficiency = {eff:.3f} ({same} the catalog's "
              f"{row.training_matmul_efficiency})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

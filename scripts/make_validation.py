"""Generate docs/validation.md: predicted vs measured MFU/HFU for the measured runs in published.json.

    python scripts/make_validation.py [path/to/published.json]

Each run's stated choices (TP, PP, GPUs, batch, recomputation, sequence parallelism) are pinned; what the
source does not state (micro-batch, interleaving, ZeRO stage) is left to the planner, whose best plan is
compared. Runs that report hardware FLOPs (with recomputation) are compared with the predicted HFU,
runs that report model FLOPs with the predicted MFU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xlcalc.planner import Settings, arch_from_flags, plan  # noqa: E402

DEFAULT_JSON = ROOT.parent / "shared" / "reference" / "published.json"
TOLERANCE = 0.15

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


def cases(records: list[dict]) -> list[dict]:
    """The measured runs with a configuration complete enough to predict."""
    out = []
    for r in records:
        f, rid = r["fields"], r["id"]
        if rid.startswith("megatron-h100-weak-"):
            out.append(dict(id=rid, group="Megatron-LM H100 weak scaling", gpu="h100-sxm", hw=H100, flash=True,
                            layers=f["layers"], hidden=f["hidden"], heads=f["attention_heads"], vocab=f["vocab"],
                            tp=f["tp"], pp=f["pp"], gpus=f["gpus"], batch=f["global_batch_seqs"], seq=f["seq_len"],
                            recompute=None, sp=None, metric="mfu", measured=f["mfu"]))
        elif rid in ("narayanan21-1t-3072", "narayanan21-1.7b-32"):
            out.append(dict(id=rid, group="Narayanan et al. 2021 Table 1", gpu="a100-80gb", hw=A100, flash=False,
                            layers=f["layers"], hidden=f["hidden"], heads=f["heads"], vocab=51200, tp=f["tp"],
                            pp=f["pp"], gpus=f["gpus"], batch=f["global_batch_seqs"], seq=2048, recompute="full",
                            sp=False, metric="hfu", measured=f["tflops_per_gpu"] / 312,
                            software=MEGATRON_2021, pins=PTDP))
        elif rid.startswith("narayanan21-table2-175b-"):
            out.append(dict(id=rid, group="Narayanan et al. 2021 Table 2", gpu="a100-80gb", hw=A100, flash=False,
                            layers=96, hidden=12288, heads=96, vocab=51200, tp=8, pp=f["model_parallel_size"] // 8,
                            gpus=f["gpus"], batch=f["global_batch_seqs"], seq=2048, recompute="full", sp=False,
                            metric="hfu", measured=f["tflops_per_gpu"] / 312, software=MEGATRON_2021, pins=PTDP))
        elif rid == "megatron-a100-gpt3-175b-1024gpu":
            out.append(dict(id=rid, group="Megatron-LM A100 README", gpu="a100-80gb", hw=A100, flash=False,
                            layers=96, hidden=12288, heads=96, vocab=51200, tp=f["tp"], pp=f["pp"], gpus=f["gpus"],
                            batch=f["global_batch_seqs"], seq=f["seq_len"], recompute="full", sp=False,
                            metric="hfu", measured=f["tflops_per_gpu"] / 312, software=MEGATRON_2021,
                            pins=GPT3_SCRIPT))
        elif rid.startswith("megatron-a100-mfu-hfu-"):
            heads, hidden, layers, tp, pp, gpus, batch = KORTHIKANTI[rid.rsplit("-", 1)[1]]
            out.append(dict(id=rid, group="Megatron-LM A100 MFU/HFU table", gpu="a100-80gb", hw=A100, flash=False,
                            layers=layers, hidden=hidden, heads=heads, vocab=51200, tp=tp, pp=pp, gpus=gpus,
                            batch=batch, seq=2048, recompute="selective", sp=True, metric="mfu",
                            measured=f["mfu"], software=MEGATRON_2021))
    return out


def predict(case: dict) -> dict:
    arch = arch_from_flags(case["layers"], case["hidden"], case["heads"], vocab=case["vocab"], seq_len=case["seq"])
    st = Settings(flash_attention=case["flash"], **case["hw"], **case.get("software", {}))
    pins = case.get("pins", {})
    res = plan(arch=arch, gpu=case["gpu"], n_gpus=case["gpus"], seq_len=case["seq"],
               global_batch_tokens=case["batch"] * case["seq"], tokens_t=1, settings=st, tp=case["tp"],
               pp=case["pp"], recompute=case["recompute"], seq_parallel=case["sp"], top=1, **pins)
    if not res.plans:
        return dict(case, predicted=None, error=None, plan="no configuration fits")
    best = res.plans[0]
    predicted = best.mfu if case["metric"] == "mfu" else best.hfu
    return dict(case, predicted=predicted, error=predicted / case["measured"] - 1, plan=best.label())


def rows(records: list[dict]) -> list[dict]:
    return [predict(c) for c in cases(records)]


def render(results: list[dict]) -> str:
    ok = [r for r in results if r["error"] is not None and abs(r["error"]) <= TOLERANCE]
    errs = sorted(r["error"] for r in results if r["error"] is not None)
    lines = [
        "# Validation: predicted vs measured MFU",
        "",
        "Generated by `python scripts/make_validation.py` from `../shared/reference/published.json`; do not edit.",
        "",
        "Each measured run's stated choices (TP, PP, GPU count, global batch, sequence length, recomputation and",
        "sequence parallelism where stated) are pinned, and so is what the run's documented software did (below);",
        "the planner chooses only what no source states (micro-batch, interleaving, ZeRO stage of the H100 runs)",
        "and its best plan is compared. Like is compared with like: runs that report **hardware** FLOPs",
        "(Narayanan et al. 2021 and the Megatron A100 README count the recomputed forward pass: 96·B·s·L·h²",
        "instead of 72·B·s·L·h²) are compared with the predicted **HFU**; runs that report **model** FLOPs",
        "(Megatron-LM H100 table, Megatron A100 MFU column) with the predicted **MFU**.",
        "Model constants are the defaults of `xlcalc.planner.Settings` and the GPU catalog (one matmul efficiency",
        "per GPU from the measured MAMF table: A100 0.859, H100 0.801); nothing is fitted per row.",
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
        "| record | group | GPUs | TP | PP | metric | measured | predicted | error | planner's configuration |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in results:
        pred = f"{r['predicted']:.3f}" if r["predicted"] is not None else "-"
        err = f"{r['error']:+.1%}" if r["error"] is not None else "-"
        lines.append(f"| {r['id']} | {r['group']} | {r['gpus']} | {r['tp']} | {r['pp']} | {r['metric'].upper()} | "
                     f"{r['measured']:.3f} | {pred} | {err} | {r['plan']} |")
    groups: dict[str, list[float]] = {}
    for r in results:
        if r["error"] is not None:
            groups.setdefault(r["group"], []).append(r["error"])
    lines += [
        "",
        "## Spread",
        "",
        f"- Runs compared: {len(results)}; within ±{TOLERANCE:.0%}: {len(ok)} ({len(ok) / len(results):.0%}).",
        f"- Error range {errs[0]:+.1%} to {errs[-1]:+.1%}; median {errs[len(errs) // 2]:+.1%}; "
        f"mean absolute {sum(abs(e) for e in errs) / len(errs):.1%}.",
    ]
    for g, es in groups.items():
        inside = sum(abs(e) <= TOLERANCE for e in es)
        lines.append(f"- {g}: {inside} of {len(es)} within ±{TOLERANCE:.0%}, mean error {sum(es) / len(es):+.1%}.")
    a100 = [r["error"] for r in results if r["gpu"].startswith("a100") and r["error"] is not None]
    a100_mean = sum(a100) / len(a100)
    h100 = [r for r in results if r["gpu"].startswith("h100")]
    h100_ok = sum(r["error"] is not None and abs(r["error"]) <= TOLERANCE for r in h100) / len(h100)
    lines += [
        "",
        "## Reading the result",
        "",
        "- The H100 runs (2024 software: fused attention, overlapped gradient reduction) are predicted within",
        "  the tolerance.",
        "- The A100 runs of 2021-2022 stay over-predicted, by a nearly uniform +10% to +23%. What the model now",
        "  accounts for, each from a source or a kernel count rather than a fit: (1) tile and wave quantization",
        "  of every matmul (forward, input gradient, weight gradient) on the GPU's SMs (NVIDIA Matrix",
        "  Multiplication Background guide §3: an A100 runs 256x128 output tiles in waves of 108), which costs the",
        "  A100's power-of-two transformer shapes about 5-10% and the H100 (132 SMs) less; (2) the HBM traffic",
        "  of unfused attention counted kernel by kernel (softmax, mask, dropout, their backward and",
        "  recomputation: 20-29 bytes per score element instead of 15); (3) the documented software above",
        "  (no ZeRO, gradient all-reduce after the backward pass, fp16 gradients, the GPT-3 script's micro-batch 1",
        "  and plain 1F1B schedule). Together they moved the A100 mean error from +25.9% (before them) to "
        f"{a100_mean:+.1%}.",
        "- The remaining gap is uniform across model sizes, GPU counts and data-parallel sizes, so it is not",
        "  communication or the bubble: it sits in the per-GPU compute. A single A100 matmul efficiency of about",
        "  0.75 of peak on the 2021-22 software (instead of the 0.859 measured with CUDA 12 in 2023) would put all",
        "  19 runs within 15%. No published 2021 A100 GEMM measurement is at hand to support that figure, so it",
        "  is **not** adopted: with an A100 on today's software the catalog value is the better default, and",
        "  `--matmul-efficiency` sets your own measurement. The target of 80% of the runs within 15% is therefore",
        f"  {'met' if len(ok) >= 0.8 * len(results) else 'not met'}: {len(ok) / len(results):.0%} of all runs, "
        f"{h100_ok:.0%} of the H100 runs.",
        "- The Megatron A100 MFU/HFU configurations come from Korthikanti et al. 2022 Table 3, which",
        "  published.json does not carry; the README states only the model size and DP = 1.",
        "- Not compared: the H100 strong-scaling ranges (no per-point configuration), DeepSeek-V3 (FP8, MoE with",
        "  expert parallelism, not modelled), OPT-175B (\"up to\", FLOP convention unknown).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT_JSON
    records = json.loads(path.read_text(encoding="utf-8"))
    text = render(rows(records))
    out = ROOT / "docs" / "validation.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

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
A100 = dict(hbm_tb_s=2.0, scaleup_gb_s=300, scaleout_gb_s=25)
# A100 SXM 80GB HBM 2.0 TB/s (ml-engineering accelerator memory table); NVLink 600 GB/s both directions;
# Narayanan et al. 2021 §5: eight 200 Gb/s HDR InfiniBand HCAs per 8-GPU server = 25 GB/s per GPU.

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
                            sp=False, metric="hfu", measured=f["tflops_per_gpu"] / 312))
        elif rid.startswith("narayanan21-table2-175b-"):
            out.append(dict(id=rid, group="Narayanan et al. 2021 Table 2", gpu="a100-80gb", hw=A100, flash=False,
                            layers=96, hidden=12288, heads=96, vocab=51200, tp=8, pp=f["model_parallel_size"] // 8,
                            gpus=f["gpus"], batch=f["global_batch_seqs"], seq=2048, recompute="full", sp=False,
                            metric="hfu", measured=f["tflops_per_gpu"] / 312))
        elif rid == "megatron-a100-gpt3-175b-1024gpu":
            out.append(dict(id=rid, group="Megatron-LM A100 README", gpu="a100-80gb", hw=A100, flash=False,
                            layers=96, hidden=12288, heads=96, vocab=51200, tp=f["tp"], pp=f["pp"], gpus=f["gpus"],
                            batch=f["global_batch_seqs"], seq=f["seq_len"], recompute="full", sp=False,
                            metric="hfu", measured=f["tflops_per_gpu"] / 312))
        elif rid.startswith("megatron-a100-mfu-hfu-"):
            heads, hidden, layers, tp, pp, gpus, batch = KORTHIKANTI[rid.rsplit("-", 1)[1]]
            out.append(dict(id=rid, group="Megatron-LM A100 MFU/HFU table", gpu="a100-80gb", hw=A100, flash=False,
                            layers=layers, hidden=hidden, heads=heads, vocab=51200, tp=tp, pp=pp, gpus=gpus,
                            batch=batch, seq=2048, recompute="selective", sp=True, metric="mfu",
                            measured=f["mfu"]))
    return out


def predict(case: dict) -> dict:
    arch = arch_from_flags(case["layers"], case["hidden"], case["heads"], vocab=case["vocab"], seq_len=case["seq"])
    st = Settings(flash_attention=case["flash"], **case["hw"])
    res = plan(arch=arch, gpu=case["gpu"], n_gpus=case["gpus"], seq_len=case["seq"],
               global_batch_tokens=case["batch"] * case["seq"], tokens_t=1, settings=st, tp=case["tp"],
               pp=case["pp"], recompute=case["recompute"], seq_parallel=case["sp"], top=1)
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
        "sequence parallelism where stated) are pinned; the planner chooses what the source leaves open",
        "(micro-batch, interleaving, ZeRO stage) and its best plan is compared. Like is compared with like:",
        "runs that report **hardware** FLOPs (Narayanan et al. 2021 and the Megatron A100 README count the",
        "recomputed forward pass: 96·B·s·L·h² instead of 72·B·s·L·h²) are compared with the predicted **HFU**;",
        "runs that report **model** FLOPs (Megatron-LM H100 table, Megatron A100 MFU column) with the predicted **MFU**.",
        "All settings are the defaults of `xlcalc.planner.Settings` (one matmul efficiency per GPU from the",
        "measured MAMF table: A100 0.859, H100 0.801); nothing is fitted per row.",
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
    lines += [
        "",
        "## Reading the result",
        "",
        "- The H100 runs (2024 software: fused attention, overlapped gradient reduction) are predicted within",
        "  the tolerance: the matmul efficiency measured on H100 with a 2023 software stack matches them.",
        "- The A100 runs of 2021-2022 are over-predicted: the model credits every GEMM with the A100's measured",
        "  maximum (0.859 of peak, measured with CUDA 12.1 in 2023), which the 2021 software did not reach. The",
        "  A100 efficiency is not lowered to fit them (no per-row fitting); with an A100 on today's software the",
        "  catalog value is the better default, and `--matmul-efficiency` sets your own measurement.",
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

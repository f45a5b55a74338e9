"""Write the measured tables of docs/activations.md: LAYER_ACTIVATION_BYTES against PyTorch's count.

    python scripts/make_activation_docs.py          # measure (needs torch) and rewrite the table
    python scripts/make_activation_docs.py --check  # exit 1 if the table is not what a new run gives

The rest of docs/activations.md (the derivation) is written by hand; this script replaces only
the text between the two TABLE markers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from scripts.docsplice import replace_or_check

DOC = ROOT / "docs" / "activations.md"
BEGIN, END = "<!-- TABLE BEGIN (scripts/make_activation_docs.py) -->", "<!-- TABLE END -->"


def baseline_bytes(shape, tp, seq, batch, mode):
    """The generalised Korthikanti formula of memory.py (ACT_LAYER_BYTES_GENERAL); it has no MoE, no
    MLA and no per-op selective mode, for which it is asked its "selective" figure."""
    from xlcalc.formulas.memory import act_layer_bytes_general

    if shape.experts or shape.kv_lora_rank:
        return None
    rc = "selective" if mode == "op_selective" else mode
    return act_layer_bytes_general(seq, batch, shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, shape.ffn,
                                   shape.gated, tp, False, rc, shape.flash)


def rows():
    import torch

    import torch_blocks as tb

    torch.set_num_threads(1)
    out = []
    for case, (shape, tp, etp) in tb.CASES.items():
        layer = tb.make_layer(tb.local_shape(shape, tp, etp), max_seq=max(s for s, _ in tb.SIZES))
        out += [(case, tp, etp, seq, batch, mode, tb.kept_bytes(layer, batch, seq, mode),
                 tb.formula_bytes(shape, tp, etp, seq, batch, mode), baseline_bytes(shape, tp, seq, batch, mode))
                for seq, batch in tb.SIZES for mode in tb.MODES]
    return out


PEAK_CASES = ("llama-gqa", "llama-unfused-attention", "moe-top2", "mla-q-lora", "mla-no-q-lora")


def peak_rows():
    import torch_blocks as tb

    seq, batch = tb.SIZES[-1]
    out = []
    for case in PEAK_CASES:
        shape, tp, etp = tb.CASES[case]
        layer = tb.make_layer(tb.local_shape(shape, tp, etp), max_seq=max(s for s, _ in tb.SIZES))
        out.append((case, seq, batch, [tb.backward_peak_bytes(layer, batch, seq, m) for m in tb.MODES]))
    return out


def _pct(pred, measured):
    return f"{100 * (pred / measured - 1):+.1f}%"


def render(data, peaks) -> str:
    import torch

    from torch_blocks import MODES

    lines = [
        BEGIN,
        f"Measured with torch {torch.__version__} on the CPU in bf16 (`python scripts/make_activation_docs.py`).",
        "Bytes are one layer's kept activations on one tensor-parallel rank for one micro-batch.",
        "",
        "| case | tp | etp | s | b | mode | PyTorch bytes | LAYER_ACTIVATION_BYTES | error | ACT_LAYER_BYTES_GENERAL | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst: dict[str, float] = {}
    worst_base: dict[str, float] = {}
    for case, tp, etp, seq, batch, mode, measured, predicted, base in data:
        worst[mode] = max(worst.get(mode, 0.0), abs(predicted / measured - 1))
        if base is not None:
            worst_base[mode] = max(worst_base.get(mode, 0.0), abs(base / measured - 1))
        base_cells = ["—", "—"] if base is None else [f"{base:,.0f}", _pct(base, measured)]
        lines.append(f"| {case} | {tp} | {etp} | {seq} | {batch} | {mode} | {measured:,} | {predicted:,.0f} | "
                     f"{_pct(predicted, measured)} | " + " | ".join(base_cells) + " |")
    lines += ["", "Largest error by mode (all rows; the baseline on the dense GQA/MHA/GPT rows it can express):", "",
              "| mode | LAYER_ACTIVATION_BYTES | ACT_LAYER_BYTES_GENERAL |", "|---|---|---|"]
    for mode in worst:
        base = f"{100 * worst_base[mode]:.1f}%" if mode in worst_base else "—"
        lines.append(f"| {mode} | {100 * worst[mode]:.1f}% | {base} |")
    lines += ["", "Bytes alive at once during the layer's backward (kept, recomputed, gradients; parameters left out).",
              "A recomputing backward first rebuilds what its forward did not keep, so its peak is about that",
              "of no recomputation: the kept bytes plus ACT_RECOMPUTE_WORKING_BYTES (a test holds this to 5%).", "",
              "| case | s | b | " + " | ".join(f"peak, {m}" for m in MODES) + " | " +
              " | ".join(f"{m} vs none" for m in MODES[1:]) + " |",
              "|---|---|---|" + "---|" * (2 * len(MODES) - 1)]
    lines += [*(f"| {case} | {seq} | {batch} | " + " | ".join(f"{v:,}" for v in p) + " | " +
                " | ".join(_pct(v, p[0]) for v in p[1:]) + " |" for case, seq, batch, p in peaks), END]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/activations.md's table is out of date")
    check = ap.parse_args().check
    doc = DOC.read_text(encoding="utf-8")
    head, rest = doc.split(BEGIN, 1)
    new = head + render(rows(), peak_rows()) + rest.split(END, 1)[1]
    return replace_or_check(DOC, doc, new, "make_activation_docs.py", check=check)


if __name__ == "__main__":
    raise SystemExit(main())

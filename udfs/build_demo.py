"""Build the demo workbook: cells that call the xlcalc worksheet functions on input cells.

    python udfs/build_demo.py OUT.xlsx             # a new file (refuses to replace an existing one)
    python udfs/build_demo.py --force              # rebuild the checked-in templates/udf_demo.xlsx
    python udfs/build_demo.py OUT.xlsx --force     # replace OUT.xlsx

It never overwrites a file silently: an existing file is replaced only with --force. The file
is written mode 0644. (The worksheet functions themselves come from scripts/make_udfs.py.)

The workbook needs the functions to be set up (docs/excel.md): until then Excel shows
#NAME? in the formula cells. Every formula is one flat call (no nesting), its arguments
are input cells, ranges or literals, so that tests can evaluate it with the Python UDFs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.formula import ArrayFormula

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from xlcalc import catalog  # noqa: E402
from xlcalc.atomic import write  # noqa: E402

TEMPLATES = ROOT / "templates"
INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")
BOLD = Font(bold=True)

# (label, value, unit, note) in column A..D of sheet "Demo", from row 4 on.
# The case of seed 002 §7.3: a 70B model on 2T tokens, A800 (312 TFLOP/s dense BF16).
INPUTS = [
    ("params_b", 70, "billion parameters", "seed 002 §7.3"),
    ("tokens_t", 2, "trillion tokens", ""),
    ("peak_tflops", 312, "TFLOP/s per GPU", "A800 dense FP16 (seed 002)"),
    ("n_gpus", 1024, "GPUs", ""),
    ("mfu", 0.4, "fraction", ""),
    ("days", 90, "days", "deadline"),
    ("zero_stage", 0, "", "0-3"),
    ("dp", 1, "GPUs", ""),
    ("tp", 8, "GPUs", ""),
    ("pp", 1, "GPUs", ""),
    ("bytes_weights", 2, "bytes/param", "bf16"),
    ("bytes_grads", 4, "bytes/param", "fp32 gradients (seed 002: 14 bytes/param in total)"),
    ("bytes_optimizer", 8, "bytes/param", "Adam m and v, fp32"),
    ("seq_len", 4096, "tokens", ""),
    ("micro_batch", 1, "sequences", ""),
    ("hidden", 8192, "", "Llama-2-70B"),
    ("layers", 80, "", ""),
    ("heads", 64, "", ""),
    ("seq_parallel", True, "", "TRUE/FALSE"),
    ("recompute", "selective", "", '"none", "selective" or "full" (any case)'),
    ("microbatches", 32, "", "per iteration per pipeline"),
    ("usd_per_gpu_hour", 2.0, "USD/GPU-hour", "example rental price"),
    ("gpu", "A800", "", "a name from GPU_LIST()"),
]
FIRST_INPUT_ROW = 4


def _cell(name: str) -> str:
    names = [n for n, *_ in INPUTS]
    return f"B{FIRST_INPUT_ROW + names.index(name)}"


def _args(*names: str) -> str:
    return ",".join(_cell(n) for n in names)


# (label, formula text, unit): one call each, on the input cells above
OUTPUTS = [
    ("Training compute", "=TRAIN_FLOPS(" + _args("params_b", "tokens_t") + ")", "FLOPs"),
    ("Training days", "=TRAIN_DAYS(" + _args("params_b", "tokens_t", "peak_tflops", "n_gpus", "mfu") + ")", "days"),
    ("GPU-hours", "=GPU_HOURS(" + _args("params_b", "tokens_t", "peak_tflops", "mfu") + ")", "GPU-hours"),
    ("GPUs for the deadline", "=GPUS_FOR_DAYS(" + _args("params_b", "tokens_t", "peak_tflops", "mfu", "days") + ")",
     "GPUs (not rounded)"),
    ("Chinchilla tokens", "=CHINCHILLA_TOKENS_T(" + _args("params_b") + ")", "trillion tokens"),
    ("Model states per GPU", "=MEM_STATIC_GB(" + _args(
        "params_b", "zero_stage", "dp", "tp", "pp", "bytes_weights", "bytes_grads", "bytes_optimizer") + ")",
     "GB per GPU"),
    ("Activations per GPU", "=MEM_ACT_GB(" + _args(
        "seq_len", "micro_batch", "hidden", "layers", "heads", "tp", "seq_parallel", "recompute") + ")",
     "GB per GPU"),
    ("Pipeline bubble", "=PIPELINE_BUBBLE(" + _args("pp", "microbatches") + ")", "ratio to ideal time"),
    ("GPU FP16 peak from the catalog", "=GPU_SPEC(" + _cell("gpu") + ',"fp16_tflops")', "TFLOP/s dense"),
    ("GPU memory from the catalog", "=GPU_SPEC(" + _cell("gpu") + ',"memory_gb")', "GB"),
    ("An error, on purpose (MFU 1.5)", "=TRAIN_DAYS(" + _args("params_b", "tokens_t", "peak_tflops", "n_gpus") + ",1.5)",
     "shows the message"),
]

# Sheet "Scenarios": one call over a column spills one result per row.
SCENARIO_PARAMS_B = [7, 13, 34, 70, 180, 405]
SCENARIO_MFU = [0.45, 0.42, 0.4, 0.4, 1.5, 0.38]  # row 5 is not allowed on purpose


def build(path: Path) -> Path:
    wb = Workbook()
    ws = wb.active
    ws.title = "Demo"
    ws["A1"] = "xlcalc worksheet functions: demo"
    ws["A1"].font = Font(bold=True, size=14)
    ws["A2"] = ("Needs the functions set up (docs/excel.md: xlwings add-in with UDF Modules = xlcalc_udfs, "
                "or xlwings Lite with templates/lite/main.py); until then the formula cells show #NAME?. "
                "Yellow cells are inputs.")
    ws["A3"], ws["B3"], ws["C3"], ws["D3"] = "Input", "Value", "Unit", "Note"
    for c in "ABCD":
        ws[f"{c}3"].font = BOLD
    for i, (name, value, unit, note) in enumerate(INPUTS):
        r = FIRST_INPUT_ROW + i
        ws[f"A{r}"], ws[f"B{r}"], ws[f"C{r}"], ws[f"D{r}"] = name, value, unit, note
        ws[f"B{r}"].fill = INPUT_FILL
    top = FIRST_INPUT_ROW + len(INPUTS) + 1
    ws[f"A{top}"], ws[f"B{top}"], ws[f"C{top}"], ws[f"D{top}"] = "Result", "Formula", "Unit", "Formula (after the =)"
    for c in "ABCD":
        ws[f"{c}{top}"].font = BOLD
    for i, (label, text, unit) in enumerate(OUTPUTS):
        r = top + 1 + i
        ws[f"A{r}"], ws[f"B{r}"], ws[f"C{r}"], ws[f"D{r}"] = label, text, unit, text[1:]
    for c, width in zip("ABCD", (30, 16, 20, 70)):
        ws.column_dimensions[c].width = width

    sc = wb.create_sheet("Scenarios")
    sc["A1"] = ("One call over a column of scenarios: the result spills, one row each. "
                "Row 5 has MFU 1.5 (not allowed): that cell shows the message, the others their numbers.")
    sc["A2"], sc["B2"], sc["C2"], sc["D2"] = "params_b", "mfu", "Training days", "GPUs for 90 days"
    for c in "ABCD":
        sc[f"{c}2"].font = BOLD
    n = len(SCENARIO_PARAMS_B)
    for i, (p, m) in enumerate(zip(SCENARIO_PARAMS_B, SCENARIO_MFU)):
        sc[f"A{3 + i}"], sc[f"B{3 + i}"] = p, m
        sc[f"A{3 + i}"].fill = sc[f"B{3 + i}"].fill = INPUT_FILL
    last = 2 + n
    demo = "Demo!"
    sc["C3"] = ArrayFormula(
        f"C3:C{last}",
        f"=TRAIN_DAYS(A3:A{last},{demo}{_cell('tokens_t')},{demo}{_cell('peak_tflops')},"
        f"{demo}{_cell('n_gpus')},B3:B{last})",
    )
    sc["D3"] = ArrayFormula(
        f"D3:D{last}",
        f"=GPUS_FOR_DAYS(A3:A{last},{demo}{_cell('tokens_t')},{demo}{_cell('peak_tflops')},"
        f"B3:B{last},{demo}{_cell('days')})",
    )
    sc.column_dimensions["C"].width = sc.column_dimensions["D"].width = 22

    cat = wb.create_sheet("Catalog")
    cat["A1"] = "GPU_LIST() and MODEL_LIST(): the catalogs, spilled (header row + one row each)"
    rows, cols = len(catalog.gpus()) + 1, len(catalog.GPU_FIELDS)
    cat["A3"] = ArrayFormula(f"A3:{get_column_letter(cols)}{2 + rows}", "=GPU_LIST()")
    start = 2 + rows + 3
    mrows, mcols = len(catalog.models()) + 1, len(catalog.MODEL_FIELDS)
    cat[f"A{start}"] = ArrayFormula(f"A{start}:{get_column_letter(mcols)}{start + mrows - 1}", "=MODEL_LIST()")

    path.parent.mkdir(parents=True, exist_ok=True)
    with write(path) as f:   # the old file or the complete new one, never half a workbook
        wb.save(f)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the xlcalc worksheet-function demo workbook.")
    parser.add_argument("out", nargs="?", type=Path, default=TEMPLATES / "udf_demo.xlsx",
                        help="where to write it (default: templates/udf_demo.xlsx, which needs --force)")
    parser.add_argument("--force", action="store_true", help="replace the file if it exists")
    args = parser.parse_args(argv)
    out = args.out
    if out.exists() and not args.force:
        print(f"build_demo: {out} exists; not replacing it. Add --force to rebuild it, or give another file name.",
              file=sys.stderr)
        return 2
    build(out)  # mode 0644 (xlcalc.atomic.write)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Memory and Time sheets: the stage memory model by part, the layout check, days and GPUs."""

from __future__ import annotations

from typing import Any

from ..expr import Var, eq, if_
from ..layout import LAYOUT_OK
from ..outputs import MEMORY_SOURCES, OUTPUT_BY_NAME
from ..recipes import DEFAULT_RECIPE, MEMORY_DEFAULTS
from ..stage_memory import PARTS, memory_steps
from . import charts
from .messages import CHECK_POINTER, LAYOUT_POINTER, LAYOUT_ROW, longest_layout_message, message_cell
from .rendering import guarded, guarded_output, needs, output_formula, pointing
from .sheets import Ctx, formula_row, output_row, output_rows


def memory_sheet(ctx: Ctx) -> None:
    """Memory per GPU by part and pipeline stage (first and last), against the GPU's memory, and its chart.

    Every cell is a step of the one stage memory model (xlcalc.stage_memory) under its defined name; a layout
    that does not split into whole pieces shows the layout check's message whole in its row (B4, wrapped across
    B:D) and LAYOUT_POINTER, the way to it, in every memory cell.
    """
    s, b = "Memory", ctx.book
    b.titled(s, "Memory per GPU, by part and pipeline stage", "The first stage holds the input embedding and the most "
             "micro-batches in flight, the last the output layer and the logits; the GPU of the heavier stage sets "
             "the memory. GB = 1e9 bytes.")
    layout_row(ctx, s, LAYOUT_ROW)
    output_row(ctx, s, 5, "DP_Size", pointer=LAYOUT_POINTER)
    b.row(s, 7, ("per GPU", "first stage", "last stage", "formula and source"), "header")
    rows: dict[str, int] = {}
    stage_rows: list[tuple[str, Any, Any]] = [("Layers on the stage", "Stage_Layers_First", "Stage_Layers_Last"),
                  ("Parameters of the stage (billions)", "Stage_Params_B_First", "Stage_Params_B_Last")]
    part_names = {st.part: st.name for st in memory_steps(MEMORY_SOURCES, capacity=Var("GPU_Memory_GB"), layout_dp=1)
                  if st.part and st.of == "First"}
    # the parts both stages share: an input, or the first stage's cell read again by the last
    shared = {"comm_buffers": (Var("Comm_Buffer_GB"), Var("Comm_Buffer_GB")),
              "other": (Var("Overhead_GB"), Var("Overhead_GB")),
              "recompute_working": ("Mem_Recompute_GB", Var("Mem_Recompute_GB"))}
    for key, label in PARTS:
        first, last = shared[key] if key in shared else (part_names[key], part_names[key].replace("_First_", "_Last_"))
        stage_rows.append((label, first, last))
    stage_rows.append(("Total per GPU", "Mem_First_Total_GB", "Mem_Last_Total_GB"))
    for row, (label, first, last) in enumerate(stage_rows, start=8):
        b.put(s, f"A{row}", label, "header" if label.startswith("Total") else "label")
        note = ""
        for col, item in (("B", first), ("C", last)):
            if isinstance(item, str):
                out = OUTPUT_BY_NAME[item]
                expr, subs = output_formula(item, None)
                b.put(s, f"{col}{row}", pointing(guarded_output(item, expr), LAYOUT_POINTER,
                                                 checks_pointer=CHECK_POINTER), "output",
                      out.number_format, subs, name=item)
                note = f"{out.formula.udf_name}: {out.formula.equation}. Source: {out.formula.source}"
            else:
                b.put(s, f"{col}{row}", _guarded(item), "formula", "#,##0.00")
                note = note or f"{item.name} from the Inputs sheet"
        b.put(s, f"D{row}", note, "note")
        rows[label] = row
    b.put(s, f"A{row + 2}", "Against the GPU", "group")
    row += 3
    output_row(ctx, s, row, "Mem_Total_GB", pointer=LAYOUT_POINTER)
    formula_row(ctx, s, row + 1, "GPU memory", guarded(Var("GPU_Memory_GB"), {"GPU_Memory_GB"}), "GB",
                "GPU_Memory_GB from the Inputs sheet", "#,##0.00")
    output_rows(ctx, s, row + 2, ("Fit_Margin_GB", "Fit_Verdict", "Fits_GPU", "Fit_Capacity_GB", "Mem_Static_GB",
                                  "Mem_Activations_GB", "Max_Micro_Batch"), LAYOUT_POINTER)
    b.rules.append((s, f"B{row + 4}", "good_if_true"))  # Fits_GPU
    row += 10
    b.put(s, f"A{row}", "Working (one layer, shared by the stages)", "group")
    row = output_rows(ctx, s, row + 1, ("Layer_Params_B", "Layer_Act_Bytes", "Layer_Act_Bytes_No_Recompute",
                                        "Inflight_First", "Inflight_Last", "Mem_First_Optimizer_Step_GB",
                                        "Mem_Last_Optimizer_Step_GB", "Layer_Autocast_Copy_Bytes",
                                        "Layer_Autocast_Copy_Bytes_No_Recompute", "Head_Dim"), LAYOUT_POINTER)
    b.put(s, f"A{row + 1}", f"Defaults (recipe {DEFAULT_RECIPE}, other memory {MEMORY_DEFAULTS['overhead_gb']:g} GB, "
          "logits, buckets): xlcalc.recipes — the same for the CLI, the planner and the worksheet functions.", "note")
    b.freeze[s] = "A8"
    b.charts.append(lambda wb: charts.memory_chart(wb, rows["Weights"], rows[PARTS[-1][1]]))


def _guarded(expr: Any) -> Any:
    """An input shown on the Memory sheet: CHECK_POINTER instead of the number for a failing input check, else
    LAYOUT_POINTER for a broken layout (the precedence of the memory results' guards)."""
    return pointing(guarded(if_(eq(Var("Layout_Check"), LAYOUT_OK), expr, LAYOUT_POINTER), needs(expr)),
                    LAYOUT_POINTER, checks_pointer=CHECK_POINTER)


def layout_row(ctx: Ctx, s: str, row: int) -> None:
    """Layout_Check in B (merged across B:D, wrapped, its row tall enough for the longest message), its formula and
    source in D of the row above."""
    b = ctx.book
    output_row(ctx, s, row, "Layout_Check", label="Layout check (OK = every piece whole)")
    cells = b.sheets[s]
    del cells[f"C{row}"]  # the unit ("text") under the merged message
    cells[f"D{row - 1}"] = cells.pop(f"D{row}")
    b.wrap.discard((s, f"D{row}"))
    b.wrap.add((s, f"D{row - 1}"))
    message_cell(b, s, row, "B", "D", longest_layout_message())


# --- Time ---------------------------------------------------------------------------------

def time_sheet(ctx: Ctx) -> None:
    s, b = "Time", ctx.book
    b.titled(s, "Compute and time", "C = 6ND; days = C / (peak x GPUs x MFU); the deadline rounding follows seed 002 "
             "§7.3: exact GPUs -> whole TP x PP replicas -> + spare -> whole nodes.")
    b.row(s, 4, ("", "value", "unit", "formula and source"), "header")
    output_rows(ctx, s, 5, ("Train_FLOPs", "Train_Days", "GPU_Hours"))
    b.put(s, "A9", "GPUs for a deadline", "group")
    formula_row(ctx, s, 10, "Deadline", guarded(Var("Deadline_Days"), {"Deadline_Days"}), "days", "Deadline_Days from the Inputs sheet", "#,##0.0")
    output_rows(ctx, s, 11, ("GPUs_for_Deadline", "Replicas_for_Deadline", "GPUs_with_Spare", "GPUs_to_Provision"))
    output_row(ctx, s, 15, "Train_Days", {"N_GPUs": "GPUs_to_Provision"},
               label="Days on the GPUs to provision", define=False)
    b.freeze[s] = "A5"

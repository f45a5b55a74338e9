"""The FineTuning sheet: full fine-tuning, LoRA and QLoRA on the scenario's model, GPU and prices.

The job's inputs (Job, LoRA_Rank, LoRA_Targets) live here; every other figure comes from the Inputs sheet and its
presets (model, GPU, recipe). The cells are steps of the one stage memory model (xlcalc.stage_memory, its
fine-tuning part) and the scenario's time and cost, so the Memory, Time and Budget sheets answer for the same job.
"""

from __future__ import annotations

from ..expr.nodes import Var
from ..formulas import compute
from ..formulas import finetune as ff
from ..outputs import bound_text, within_bound
from .messages import LAYOUT_POINTER, message_cell
from .rendering import guarded, needs
from .sheets import Ctx, formula_row, input_row, output_rows

SHEET = "FineTuning"  # a sheet name without quotes in references (defined names are written unquoted)
FIELDS = ("job", "lora_rank", "lora_targets")


def finetune_sheet(ctx: Ctx) -> None:
    s, b, sc = SHEET, ctx.book, ctx.scenario
    b.put(s, "A1", "Fine-tuning: full, LoRA or QLoRA", "title")
    for r, text in enumerate((
            "Job = full trains every weight: pre-training's memory and 6ND. LoRA freezes the base in 16 bit and "
            "trains low-rank adapters;",
            "QLoRA stores the frozen base in 4-bit NF4. The recipe (Inputs sheet) gives the bytes of what is trained: "
            "for a fine-tune pick torchtune or qlora.",
            "Model, GPU, tokens, MFU and price come from the Inputs sheet and its presets; the Memory, Time and "
            "Budget sheets answer for this job."), start=2):
        b.put(s, f"A{r}", text, "note")
    b.row(s, 6, ("input", "value", "unit", "what is allowed"), "header")
    for row, field in enumerate(FIELDS, start=7):
        input_row(ctx, s, row, field, getattr(sc, field))
    row += 2
    b.put(s, f"A{row}", "Parameters", "group")
    row = output_rows(ctx, s, row + 1, ("Adapter_Params_B", "Trainable_Params_B", "Stage_Adapter_Params_B_First",
                                        "Stage_Adapter_Params_B_Last", "Stage_Trainable_B_First",
                                        "Stage_Trainable_B_Last"), LAYOUT_POINTER)
    row += 1
    b.put(s, f"A{row}", "Memory per GPU (the Memory sheet's parts, for this job)", "group")
    row = output_rows(ctx, s, row + 1, ("Layer_Act_Frozen_Saving", "Layer_Act_Frozen_Saving_No_Recompute"),
                      LAYOUT_POINTER)
    for label, name in (("Weights, first stage (frozen base + adapters)", "Mem_First_Weights_GB"),
                        ("Gradients, first stage (trained parameters only)", "Mem_First_Grads_GB"),
                        ("Optimizer states, first stage (trained parameters only)", "Mem_First_Optimizer_GB"),
                        ("Memory per GPU, heavier stage", "Mem_Total_GB"), ("Fits the GPU?", "Fits_GPU")):
        formula_row(ctx, s, row, label, Var(name), "" if name == "Fits_GPU" else "GB", f"{name} from the Memory sheet",
                    "General" if name == "Fits_GPU" else "#,##0.00")
        row += 1
    b.put(s, f"A{row + 1}", "Time and cost", "group")
    row += 2
    flops = ff.ft_flops_per_token(Var("Params_B"), Var("Trainable_Params_B"), Var("Job"))
    formula_row(ctx, s, row, "Model FLOPs per token", guarded(flops, needs(flops)), "FLOPs/token",
                f"{ff.ft_flops_per_token.udf_name}: {ff.ft_flops_per_token.equation}. "
                f"Source: {ff.ft_flops_per_token.source}", "0.00E+00")
    row += 1
    for label, name, unit, fmt in (("Training FLOPs", "Train_FLOPs", "FLOPs", "0.00E+00"),
                                   ("Days", "Train_Days", "days", "#,##0.00"),
                                   ("GPU-hours", "GPU_Hours", "GPU-hours", "#,##0"),
                                   ("Compute cost (GPU-hours x price)", "Compute_Cost_USD", "USD", '"$"#,##0'),
                                   ("Total cost (every line of the Budget sheet)", "Total_Cost_USD", "USD",
                                    '"$"#,##0')):
        # a bounded result past its bound (its cell's short message): the way to Start's input check, which shows it
        formula_row(ctx, s, row, label, guarded(Var(name), {name}), unit, f"{name} from the Time and Budget sheets",
                    fmt)
        row += 1
    full_days = compute.train_days(Var("Params_B"), Var("Tokens_T"), Var("Peak_TFLOPS"), Var("N_GPUs"), Var("MFU"))
    days = compute.train_days.udf_name
    formula_row(ctx, s, row, "Days of a full fine-tune on the same tokens",
                guarded(within_bound(full_days, compute.train_days, days), needs(full_days)), "days",
                f"{days}: {compute.train_days.equation} (6ND), for comparison", "#,##0.00")
    message_cell(b, s, row, "B", "B", len(bound_text(compute.train_days, days)))  # past its bound: its message
    row += 2
    for text in ("Not counted: LoRA dropout's copy of each adapted matrix's input (torchtune and PEFT default to "
                 "none), the rank-r intermediates (2r bytes per token and matrix),",
                 "and QLoRA's dequantised 16-bit copy of the one matrix being multiplied. A paged optimizer's states "
                 "count as GPU memory (they leave the GPU only when it runs out);",
                 "states held on the CPU are Optimizer_Offload (Inputs sheet)."):
        b.put(s, f"A{row}", text, "note")
        row += 1
    b.freeze[s] = "A7"

"""The Stacks and StepTime sheets: the planner's step time of the Inputs sheet's layout, as live formulas.

StepTime writes the step-time chain (:func:`xlcalc.step_steps.step_time_steps`) over the workbook's names: the
model and layout of the Inputs sheet, the GPU's figures from the GPUs sheet (by GPU_Type) and the software stack's
facts from the Stacks sheet (by the Stack dropdown). Each cell is one step, the same registered formula the planner's
search evaluates, so the sheet gives ``xlcalc plan``'s step time and MFU for the same run and stack.
"""

from __future__ import annotations

from typing import Any

from ..expr.functions import and_, eq, if_, round_
from ..expr.nodes import Expr, IfError, Var
from ..formulas import microbatch as fmb
from ..formulas import ranges as franges
from ..formulas import steptime as fs
from ..layout import LAYOUT_OK
from ..planner import Settings
from ..planner.ranges import interval_data, mfu_range_factors
from ..planner.stacks import STACKS
from ..planner.step_chain import stack_facts
from ..stage_memory import Step
from ..step_steps import step_time_steps
from .catalogs import FIRST, Table
from .messages import LAYOUT_POINTER
from .model import Book, Concat, IsNumber, LookupOr, column_range, coord
from .rendering import checked, needs
from .sheets import Ctx, input_row

__all__ = ["STACK_SHEET", "STEP_SHEET", "stack_sheet", "step_time_sheet"]

STACK_SHEET, STEP_SHEET = "Stacks", "StepTime"
# the Stacks sheet's fact columns: the planner's Settings field, the chain input it gives, header, number format
STACK_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("matmul_efficiency", "matmul_efficiency", "matmul efficiency (empty: the GPU's)", "0.0%"),
    ("attention_by_generation", "", "FlashAttention-2 on Hopper at 0.70 of its A100 share", "General"),
    ("attention_efficiency", "attention_efficiency", "attention kernel share of peak", "0.0%"),
    ("attention_kernel_speed", "attention_kernel_speed", "attention kernel speed vs FlashAttention-2", "0.0%"),
    ("flash_attention", "flash_attention", "fused attention", "General"),
    ("elementwise_factor", "elementwise_factor", "elementwise traffic factor", "0.##"),
    ("loss_bytes", "loss_bytes", "loss bytes per logit", "0.##"),
    ("dropout", "dropout", "dropout kernels", "General"),
    ("link_efficiency", "link_efficiency", "link efficiency", "0%"),
    ("tp_overlap", "tp_overlap", "TP comm hidden", "0%"),
    ("pp_overlap", "pp_overlap", "PP send/receive hidden", "0%"),
    ("cp_overlap", "cp_overlap", "CP comm hidden", "0%"),
    ("dp_overlap", "dp_overlap", "DP comm overlap window", "0%"),
    ("grad_bytes", "grad_bytes", "bytes per reduced gradient", "0.##"),
    ("bytes_weights", "bytes_weights", "bytes per gathered weight", "0.##"),
    ("bytes_per_param_step", "bytes_per_param_step", "optimizer step bytes per parameter", "0.##"),
)

def stack_sheet(book: Book) -> Table:
    """One row per software-stack profile (xlcalc.planner.stacks): the facts the step time takes from it, as the
    planner resolves them (the stack's documented facts over the planner's defaults)."""
    s = STACK_SHEET
    book.titled(s, "Software stacks: the facts the step time takes from each (xlcalc.planner.stacks)",
                "Each profile's documented facts over the planner's defaults, as `xlcalc plan --stack` uses them; "
                "the StepTime sheet looks them up by its Stack dropdown. Yellow cells may be edited.")
    columns = ["id", "name"] + [c[0] for c in STACK_COLUMNS] + ["facts"]
    headers = ["id", "name"] + [c[2] for c in STACK_COLUMNS] + ["what the stack does, and where that is stated"]
    for j, header in enumerate(headers, start=1):
        book.put(s, coord(j, 3), header, "header")
        book.widths.setdefault(s, {})[coord(j, 1)[:-1]] = 90 if header.startswith("what") else 13
    for row, stack in enumerate(STACKS.values(), start=FIRST):
        facts = stack_facts(Settings(stack=stack.id))
        book.put(s, coord(1, row), stack.id, "label")
        book.put(s, coord(2, row), stack.name, "text")
        for j, (field, _, _, fmt) in enumerate(STACK_COLUMNS, start=3):
            value = facts.get(field, stack.matmul_efficiency if field == "matmul_efficiency" else None)
            book.put(s, coord(j, row), value, "input", None if fmt == "General" else fmt)
        book.put(s, coord(len(columns), row), "; ".join(f"{what} ({where})" for what, where in stack.facts), "text")
    book.freeze[s] = "B4"
    return Table(s, tuple(columns), FIRST, FIRST + len(STACKS) - 1)


def _fact(table: Table, key: str, field: str, blank: Any, missing: str) -> Expr:
    """Column ``field`` of ``table``'s row whose id is in ``key`` (``blank`` where empty), else "<id><missing>"."""
    return IfError(LookupOr(Var(key), table.sheet, table.col("id"), table.col(field), table.first_row,
                            table.last_row, blank), Concat(Var(key), missing))


MODEL_MISSING = ": not on the Models sheet \u2014 pick a Model_Preset on Inputs"


def _gpu_fact(gpus: Table, field: str, blank: Any) -> Expr:
    return _fact(gpus, "GPU_Type", field, blank, ": not on the GPUs sheet \u2014 pick a GPU on Inputs (GPU_Type) "
                 "for the step time")


def _sources(ctx: Ctx, stacks: Table) -> tuple[dict[str, Any], list[tuple[str, str, Expr, str, str]]]:
    """The chain's inputs over the workbook's names, and the fact rows to place: (name, label, formula, unit,
    number format)."""
    gpus = ctx.gpus
    facts: list[tuple[str, str, Expr, str, str]] = []

    def fact(name: str, label: str, expr: Expr, unit: str = "", fmt: str = "0.####") -> Var:
        facts.append((name, label, expr, unit, fmt))
        return Var(name)

    stack = {field: _fact(stacks, "Stack", field, "", ": not on the Stacks sheet \u2014 pick a stack from the list")
             for field, *_ in STACK_COLUMNS}
    head_dim = Var("Head_Dim")  # the model's own, else hidden / heads (xlcalc.outputs)

    def preset(field: str) -> Expr:  # the picked model's column on the Models sheet; off (0) for a typed architecture
        return if_(eq(Var("Model_Preset"), ""), 0, _fact(ctx.models, "Model_Preset", field, 0, MODEL_MISSING))

    fact("Step_Layer_Params", "Parameters of one layer, from its shape and the preset's biases and relative positions "
         "(as the planner counts them)",
         fs.dense_layer_params(hidden=Var("Hidden"), heads=Var("Heads"), kv_heads=Var("KV_Heads"),
                               head_dim=head_dim, ffn_hidden=Var("FFN_Hidden"), gated_ffn=Var("Gated_FFN"),
                               biases=preset("biases"), relative_positions=preset("relative_positions")),
         "parameters", "#,##0")
    fact("Step_Embedding_Params", "Parameters of the input embedding, with the preset's learned position table",
         fs.input_embedding_params(vocab=Var("Vocab"), hidden=Var("Hidden"), position_rows=preset("position_rows")),
         "parameters", "#,##0")

    def no(what: str, where: str = "type it on the GPUs sheet") -> Expr:
        return Concat(Var("GPU_Type"), f": no published {what} \u2014 {where}")

    gpu_eff = _gpu_fact(gpus, "step_matmul_efficiency", no("matmul efficiency", "pick a stack that gives one"))
    src: dict[str, Any] = {
        "head_dim": head_dim, "layer_params": Var("Step_Layer_Params"),
        "embedding_params": Var("Step_Embedding_Params"), "dp": Var("DP_Size"), "microbatches": Var("Step_Microbatches"),
        "seq_len": Var("Seq_Len"), "micro_batch": Var("Micro_Batch"), "tp": Var("TP_Size"), "pp": Var("PP_Size"),
        "cp": Var("CP_Size"), "zero_stage": Var("ZeRO_Stage"), "peak_tflops": Var("Peak_TFLOPS"),
    }
    src["matmul_efficiency"] = fact("Step_Matmul_Efficiency", "Matmul efficiency (the stack's, else the GPU's)",
                                    if_(eq(stack["matmul_efficiency"], ""), gpu_eff, stack["matmul_efficiency"]),
                                    "fraction", "0.0%")
    src["sm_count"] = fact("Step_SM_Count", "SMs per GPU (0: unknown, no wave quantization)",
                           _gpu_fact(gpus, "sm_count", 0), "SMs", "0")
    src["wave_quantization"] = Var("Step_SM_Count") > 0
    src["hbm_tb_s"] = fact("Step_HBM_TB_s", "HBM bandwidth", _gpu_fact(gpus, "hbm_tb_s", no("HBM bandwidth")), "TB/s", "0.##")
    src["scaleup_gb_s"] = fact("Step_Scaleup_GB_s", "Scale-up bandwidth per direction",
                               _gpu_fact(gpus, "scaleup_gb_s", no("scale-up bandwidth")), "GB/s", "#,##0")
    src["nvlink_domain"] = fact("Step_NVLink_Domain", "GPUs per NVLink domain (empty: per node)",
                                _gpu_fact(gpus, "nvlink_domain", Var("GPUs_per_Node")), "GPUs", "0")
    # no scale-out figure: only a cluster inside one scale-up domain, which never uses the NIC
    inside = if_(Var("N_GPUs") <= Var("Step_NVLink_Domain"), Var("Step_Scaleup_GB_s"),
                 no("scale-out bandwidth for a cluster beyond one NVLink domain"))
    src["scaleout_gb_s"] = fact("Step_Scaleout_GB_s", "Scale-out bandwidth (none: one scale-up domain)",
                                _gpu_fact(gpus, "scaleout_gb_s", inside), "GB/s", "#,##0")
    src["attention_factor"] = fact(
        "Step_Attention_Factor", "Attention kernel's share vs its A100 share (stacks with FlashAttention-2 on Hopper)",
        if_(eq(stack["attention_by_generation"], True), _gpu_fact(gpus, "attention_generation_factor", 1), 1),
        "fraction", "0%")
    for field, chain_input, label, fmt in STACK_COLUMNS:
        if chain_input and chain_input not in src:
            unit = "fraction" if fmt.endswith("%") else "bytes" if "bytes" in label else ""
            src[chain_input] = fact("Step_" + "_".join(p.capitalize() for p in field.split("_")),
                                    label[0].upper() + label[1:] + " (the stack's)", stack[field], unit, fmt)
    return src, facts


def step_time_sheet(ctx: Ctx, stacks: Table) -> None:
    """The step time of the Inputs sheet's layout for the Stack picked here and the global batch typed here (the
    scenario's ``stack`` and ``global_batch_tokens``, read back from these cells)."""
    s, b = STEP_SHEET, ctx.book
    b.titled(s, "Step time and MFU of this layout, by the planner's model",
             "Each green cell is one formula of the planner's step-time model (xlcalc plan gives the same step "
             "time for the same run and stack). The model, layout and GPU come from Inputs, the GPU's figures from "
             "the GPUs sheet, the stack's facts from the Stacks sheet; a layer's and the embedding's parameters from "
             "the shape and the preset's biases and position terms (Models sheet), as the planner counts them (the "
             "Memory sheet takes them from Params_B).")
    b.row(s, 4, ("", "value", "unit", "formula and source"), "header")
    # the scenario's two inputs of the step time alone (xlcalc.scenario.STEP_GROUP), the stack a dropdown of the
    # Stacks sheet's ids
    input_row(ctx, s, 5, "stack", ctx.scenario.stack,
              listed="=" + column_range(stacks.sheet, "A", stacks.first_row, stacks.last_row))
    input_row(ctx, s, 6, "global_batch_tokens", ctx.scenario.global_batch_tokens)
    src, facts = _sources(ctx, stacks)
    steps = step_time_steps(src)
    per_replica = fmb.microbatches_per_step(global_batch=Var("Global_Batch_Tokens") / Var("Seq_Len"),
                                            dp=Var("DP_Size"), micro_batch=Var("Micro_Batch"))
    row = 7
    rows: list[tuple[str, str, Expr, str, str]] = [
        ("Step_Microbatches", "Micro-batches per step (global batch / (seq len x DP x micro-batch))",
         _batch_checked(if_(eq(Var("Layout_Check"), LAYOUT_OK), per_replica, LAYOUT_POINTER)), "", "#,##0.##"),
        *facts]
    microbatches = Var("Step_Microbatches")
    # the first of: a figure the stack or the GPU lacks, a layout that does not split, a batch of no whole micro-batches
    check: Any = if_(and_(microbatches >= 1, eq(microbatches, Var("Step_Microbatches_Whole"))), LAYOUT_OK,
                     Concat("the global batch is ", microbatches, " micro-batches per data-parallel group: give a "
                            "whole number (Global_Batch_Tokens)"))
    check = _batch_checked(if_(eq(Var("Layout_Check"), LAYOUT_OK), check, LAYOUT_POINTER))
    for name in reversed(("Step_Link_Efficiency", "Step_Matmul_Efficiency", "Step_HBM_TB_s", "Step_Scaleup_GB_s",
                          "Step_Scaleout_GB_s")):
        check = if_(IsNumber(Var(name)), check, Var(name))
    throughput: dict[str, Expr] = dict(tokens_t=Var("Tokens_T"), tokens_per_s=Var("Step_Tokens_per_S_per_GPU"))
    timeline = (Step("Step_Train_Days", fs.train_days_at_throughput, {**throughput, "n_gpus": Var("N_GPUs")},
                     "Training days at this step time (Tokens_T on Inputs)"),
                Step("Step_GPU_Hours", fs.gpu_hours_at_throughput, throughput, "GPU-hours at this step time"),
                *_range_steps())
    deps = set().union(*(needs(e) for _, _, e, _, _ in rows), *(needs(st.expr()) for st in (*steps, *timeline)))
    deps -= {n for n, *_ in rows} | {st.name for st in (*steps, *timeline)} | {"Step_Check", "Step_Microbatches_Whole"}
    for name, label, expr, unit, fmt in rows:
        b.put(s, f"A{row}", label)
        b.put(s, f"B{row}", checked(expr, needs(expr) - {n for n, *_ in rows}), "formula", fmt, name=name)
        b.put(s, f"C{row}", unit)
        where = " and ".join(w for n, w in (("Stack", "the Stacks sheet (by Stack)"),
                                            ("GPU_Type", "the GPUs sheet (by GPU_Type)"),
                                            ("Model_Preset", "the Models sheet (by Model_Preset)"))
                             if n in expr.variables())
        where = where or "the Inputs sheet"
        b.put(s, f"D{row}", f"{name}: from {where}", "note")
        row += 1
    b.put(s, f"A{row}", "Micro-batches, rounded (the planner's)")
    b.put(s, f"B{row}", if_(IsNumber(microbatches), round_(microbatches), microbatches), "formula", "#,##0",
          name="Step_Microbatches_Whole")
    row += 1
    for name, label, value, note in _range_factors():
        b.put(s, f"A{row}", label)
        b.put(s, f"B{row}", value, "label", "0.000", name=name)
        b.put(s, f"C{row}", "x")
        b.put(s, f"D{row}", note, "note")
        row += 1
    b.put(s, f"A{row}", "Step-time check (OK: every figure known, the layout whole)")
    b.put(s, f"B{row}", checked(check, deps), "formula", name="Step_Check")
    b.merges.append((s, f"B{row}:D{row}"))
    check_ref = f"see {STEP_SHEET}!B{row}"
    b.row(s, row + 2, ("step", "value", "unit", "formula and source"), "header")
    row += 3
    for st in (*steps, *timeline):
        expr = if_(eq(Var("Step_Check"), LAYOUT_OK), st.expr(), check_ref)
        fmt = "0.0%" if st.formula.unit == "fraction" or "MFU" in st.name else "#,##0" if "Tokens" in st.name or "FLOPs" in st.name \
            or "Hours" in st.name else "#,##0.00" if "Days" in st.name else "0.0000"
        b.put(s, f"A{row}", st.label, "header" if st.name == "Step_Time_S" else "label")
        kind = "output" if st.name in ("Step_Time_S", "Step_MFU", "Step_Train_Days") else "formula"
        b.put(s, f"B{row}", checked(expr, deps), kind, fmt, name=st.name)
        b.put(s, f"C{row}", st.formula.unit)
        b.put(s, f"D{row}", f"{st.name} = {st.formula.udf_name}: {st.formula.equation}. Source: {st.formula.source}",
              "note")
        row += 1
    b.freeze[s] = "A5"


# an empty batch (the scenario gave none and its model has no published one: plan's rule) or one pasted over the
# cell's check
BATCH_REFUSED = ("Global_Batch_Tokens: type your run's global batch in tokens per step (whole sequences); as xlcalc "
                 "plan, only a catalog model with a published batch has one")


def _batch_checked(expr: Any) -> Expr:
    """``expr`` where the global batch typed is a number > 0, else what is allowed (a pasted text or a blank)."""
    batch = Var("Global_Batch_Tokens")
    return if_(IsNumber(batch), if_(batch > 0, expr, BATCH_REFUSED), BATCH_REFUSED)


def _range_factors() -> list[tuple[str, str, float, str]]:
    """The multipliers of the predicted MFU at the ends of the range of held-out errors of the stack profiles (the
    range ``xlcalc plan --stack`` prints: xlcalc.planner.ranges, from xlcalc/data/mfu_interval.json)."""
    d = interval_data()
    where = (f"exp(-{{}}) of log(predicted / measured MFU) over {d['runs']} published runs of {d['sources']} sources, "
             f"each predicted leave-one-source-out ({d['out_of_sample_coverage']:.0%} of them inside the range "
             "out of sample; xlcalc/data/mfu_interval.json, docs/validation.md)")
    low_x, high_x = mfu_range_factors()
    return [("Step_Range_Low_X", f"MFU range, low end (x the prediction; {d['level']:.0%} of held-out runs)",
             low_x, where.format("q90")),
            ("Step_Range_High_X", "MFU range, high end (x the prediction)", high_x, where.format("q10"))]


def _range_steps() -> tuple[Step, ...]:
    """The range of MFU and of the days (days scale as 1 / MFU), as ``xlcalc plan`` gives it for a named stack."""
    def ranged(name: str, label: str, base: str, factor: Expr) -> Step:
        return Step(name, franges.range_value, {"base_value": Var(base), "range_factor": factor}, label)

    low, high = Var("Step_Range_Low_X"), Var("Step_Range_High_X")
    return (ranged("Step_MFU_Low", "MFU, low end of the range", "Step_MFU", low),
            ranged("Step_MFU_High", "MFU, high end of the range", "Step_MFU", high),
            ranged("Step_Days_Low", "Training days, low end (at the high MFU)", "Step_Train_Days", 1 / high),
            ranged("Step_Days_High", "Training days, high end (at the low MFU)", "Step_Train_Days", 1 / low))

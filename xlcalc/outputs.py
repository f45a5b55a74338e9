"""The named results of a scenario: each one registered formula applied to expressions over other defined names.

:data:`OUTPUTS` lists them (e.g. ``DP_Size = N_GPUs/(TP_Size*PP_Size)``); :func:`output_excel` and
:func:`output_expr` give a result's formula over the defined names, so the workbook's cells and
:func:`xlcalc.scenario.evaluate` compute the very same results.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from .expr.functions import eq, if_
from .expr.nodes import Expr, IfError, Var, wrap
from .formulas import budget, compute, cost, finetune, goodput, ownership, steptime
from .formulas import ranges as franges
from .layout import LAYOUT_OK
from .recipes import MEMORY_DEFAULTS
from .registry import Formula
from .stage_memory import memory_steps

# --- the named results ---------------------------------------------------------------

@dataclass(frozen=True)
class OutputCell:
    name: str                 # defined name
    formula: Formula
    args: dict[str, Expr]     # formula parameter -> expression over other names
    label: str
    unit: str
    number_format: str = "#,##0.00"
    guarded: bool = False     # shows the layout message (Layout_Check) instead of a number for a broken layout

    def expr(self) -> Expr:
        """The result as a call of its formula over the names (built once: binding the arguments costs)."""
        return self._call

    @cached_property
    def _call(self) -> Expr:
        return cast(Expr, self.formula(**self.args))


def _o(name: str, formula: Formula, label: str, fmt: str = "#,##0.00", guarded: bool = False,
       **args: Any) -> OutputCell:
    return OutputCell(name, formula, {k: (Var(v) if isinstance(v, str) else wrap(v)) for k, v in args.items()},
                      label, formula.unit, fmt, guarded)


V = Var

# The stage memory model (xlcalc.stage_memory) over the scenario's names: every step a named result.
MEMORY_SOURCES = {"dp": V("DP_Size"), "cluster_gpus": V("N_GPUs"), "head_dim": V("Head_Dim"),
                  "microbatches": MEMORY_DEFAULTS["microbatches"], "batch_sequences": 0, "experts": 0, "ep": 1,
                  "quant_block": MEMORY_DEFAULTS["quant_block"], "double_quant": MEMORY_DEFAULTS["double_quant"],
                  "expert_params_b": 0, "expert_tp": 0}
_MEMORY_OUTPUTS = tuple(
    OutputCell(st.name, st.formula, st.args,
               f"{st.label}, {st.of.lower()} stage (GB)" if st.part and st.of else st.label,
               st.formula.unit, "General" if st.formula.returns in ("bool", "text") else
               ("0.##" if st.name.startswith(("Stage_Layers", "Inflight")) else "#,##0.00"), st.guarded)
    for st in memory_steps(MEMORY_SOURCES, capacity=V("GPU_Memory_GB"), layout_dp=1)  # DP from N_GPUs there
)
# N of 6*N*D: an MoE's active parameters, else all of them (one convention for estimate, plan and the workbook)
N_PARAMS = if_(V("Active_Params_B") > 0, V("Active_Params_B"), V("Params_B"))
_RUN = dict(params_b=N_PARAMS, tokens_t="Tokens_T", trainable_params_b="Trainable_Params_B")  # a job's N, D and N'
_REPLICA = V("TP_Size") * V("PP_Size") * V("CP_Size")  # GPUs in one model replica
_COMPUTE = V("Compute_Cost_USD") + V("Power_Cost_USD")  # what the budget lines' shares are of
OUTPUTS: tuple[OutputCell, ...] = (
    _o("DP_Size", compute.data_parallel_size, "Data parallel (DP = GPUs / (TP x PP x CP))", "0.##", guarded=True,
       n_gpus="N_GPUs", tp="TP_Size", pp="PP_Size", cp="CP_Size"),
    # the model's own head dimension where the scenario gives one, else hidden / heads
    _o("Head_Dim", steptime.head_dim_of, "Dimension of one attention head", "0.##",
       hidden="Hidden", heads="Heads", head_dim_given="Head_Dim_Given"),
    # the memory steps first: the time of a fine-tuning job needs their Trainable_Params_B
    *_MEMORY_OUTPUTS,
    # time: 6ND for a full job (pre-training or full fine-tuning), 4ND + 6N'D for LoRA/QLoRA (frozen base); N of
    # an MoE is its active parameters
    _o("Train_FLOPs", finetune.ft_train_flops, "Training FLOPs (6ND; LoRA/QLoRA 4ND + 6N'D)", "0.00E+00",
       **_RUN, job="Job"),
    _o("Train_Days", finetune.ft_train_days, "Training days", "#,##0.00",
       **_RUN, peak_tflops="Peak_TFLOPS", n_gpus="N_GPUs", mfu="MFU", job="Job"),
    _o("GPU_Hours", finetune.ft_gpu_hours, "GPU-hours", "#,##0",
       **_RUN, peak_tflops="Peak_TFLOPS", mfu="MFU", job="Job"),
    _o("GPUs_for_Deadline", finetune.ft_gpus_for_days, "GPUs for the deadline (exact)", "#,##0.0",
       **_RUN, peak_tflops="Peak_TFLOPS", mfu="MFU", days="Deadline_Days", job="Job"),
    _o("Replicas_for_Deadline", compute.replicas_needed, "Model replicas (TP x PP x CP GPUs each)", "#,##0",
       gpus_needed="GPUs_for_Deadline", replica_gpus=_REPLICA),
    _o("GPUs_with_Spare", compute.gpus_with_spare, "GPUs in whole replicas + spare", "#,##0.0",
       gpus_needed="GPUs_for_Deadline", replica_gpus=_REPLICA, spare_frac="Spare_Frac"),
    _o("GPUs_to_Provision", compute.gpus_whole_nodes, "GPUs to provision (whole nodes)", "#,##0",
       gpus_needed="GPUs_for_Deadline", replica_gpus=_REPLICA, spare_frac="Spare_Frac", gpus_per_node="GPUs_per_Node"),
    _o("Compute_Cost_USD", cost.cloud_cost_usd, "Compute (GPU-hours x price)", '"$"#,##0',
       gpu_hours="GPU_Hours", usd_per_gpu_hour="USD_per_GPU_Hour"),
    _o("Power_Cost_USD", cost.power_cost_usd, "Power (if not in the GPU price)", '"$"#,##0',
       n_gpus="N_GPUs", kw_per_gpu="KW_per_GPU", pue="PUE", days="Train_Days", usd_per_kwh="USD_per_kWh"),
    # -- goodput: failures and checkpoints -> the failure share (the typed share stays as an override)
    _o("Cluster_MTBF_H", goodput.cluster_mtbf_h, "Cluster MTBF (hours between job-stopping failures)", "#,##0.00",
       gpu_mtbf_h="GPU_MTBF_H", n_gpus="N_GPUs"),
    _o("Ckpt_Interval_H", goodput.checkpoint_interval_h, "Checkpoint interval, Young's optimum (hours)", "#,##0.00",
       save_s="Ckpt_Save_S", n_gpus="N_GPUs", gpu_mtbf_h="GPU_MTBF_H"),
    _o("Goodput", goodput.goodput_fraction, "Goodput (share of time making progress)", "0.0%",
       n_gpus="N_GPUs", gpu_mtbf_h="GPU_MTBF_H", save_s="Ckpt_Save_S", restart_s="Restart_S"),
    _o("Failure_Frac_Used", goodput.failure_frac_used, "Failure share used (goodput, or the typed share)", "0.0%",
       use_typed_tax="Use_Typed_Tax", failure_frac="Failure_Frac", goodput="Goodput"),
    _o("Wall_Days", goodput.days_with_failures, "Wall-clock days incl. failures and checkpoints", "#,##0.00",
       days="Train_Days", failure_frac="Failure_Frac_Used"),
    # -- cost categories (seed 003)
    _o("Failures_USD", budget.budget_line_usd, "Failures, restarts, checkpoints", '"$"#,##0',
       compute_usd=_COMPUTE, share_frac="Failure_Frac_Used", amount_usd=0),
    _o("Experiments_USD", budget.budget_line_usd, "Experiments, ablations, failed runs", '"$"#,##0',
       compute_usd=_COMPUTE, share_frac="Experiments_Frac", amount_usd="Experiments_USD_Amount"),
    _o("Data_Line_USD", budget.budget_line_usd, "Data: purchase, crawling, labelling, cleaning", '"$"#,##0',
       compute_usd=_COMPUTE, share_frac="Data_Frac", amount_usd="Data_USD"),
    _o("People_Line_USD", budget.budget_line_usd, "People", '"$"#,##0',
       compute_usd=_COMPUTE, share_frac="People_Frac", amount_usd="People_USD"),
    _o("Total_Cost_USD", budget.budget_total_usd, "Total cost (every line)", '"$"#,##0', compute_usd=_COMPUTE,
       failures_usd="Failures_USD", experiments_usd="Experiments_USD", data_usd="Data_Line_USD",
       people_usd="People_Line_USD", other_usd="Other_USD"),
    _o("USD_per_M_Tokens", cost.usd_per_million_tokens, "Total cost per million tokens", '"$"#,##0.00',
       total_usd="Total_Cost_USD", tokens_t="Tokens_T"),
    _o("Budget_Left_USD", cost.budget_left_usd, "Budget left (negative = over)", '"$"#,##0;[Red]-"$"#,##0',
       budget_usd="Budget_USD", total_usd="Total_Cost_USD"),
    # -- own vs rent (the clean run; failures and other lines come on top of either)
    _o("Rent_Cost_USD", ownership.rent_cost_usd, "Rent: GPUs x price x hours of the clean run", '"$"#,##0',
       n_gpus="N_GPUs", usd_per_gpu_hour="USD_per_GPU_Hour", days="Train_Days"),
    _o("Capex_per_GPU_All_In", ownership.capex_usd_per_gpu_all_in, "Purchase price per GPU incl. server share",
       '"$"#,##0', capex_usd_per_gpu="Capex_USD_per_GPU", capex_usd_per_server="Capex_USD_per_Server",
       gpus_per_node="GPUs_per_Node"),
    _o("KW_per_GPU_All_In", ownership.kw_per_gpu_all_in, "Power per GPU incl. server share (kW)", "#,##0.000",
       kw_per_gpu="KW_per_GPU", kw_per_server="KW_per_Server", gpus_per_node="GPUs_per_Node"),
    _o("Hardware_Capex_USD", ownership.cluster_capex_usd, "Purchase price of the cluster", '"$"#,##0',
       n_gpus="N_GPUs", capex_usd_per_gpu="Capex_per_GPU_All_In"),
    _o("Facility_MW", ownership.facility_mw, "Facility power (MW, incl. PUE)", "#,##0.00",
       n_gpus="N_GPUs", kw_per_gpu="KW_per_GPU_All_In", pue="PUE"),
    _o("Racks_Needed", ownership.racks_needed, "Racks at the stated kW per rack", "#,##0",
       n_gpus="N_GPUs", kw_per_gpu="KW_per_GPU_All_In", kw_per_rack="KW_per_Rack"),
    _o("Own_Cost_USD", ownership.own_total_cost_usd,
       "Own: depreciation and hosting / utilisation + electricity", '"$"#,##0',
       n_gpus="N_GPUs", capex_usd_per_gpu="Capex_per_GPU_All_In", depreciation_years="Depreciation_Years",
       days="Train_Days", kw_per_gpu="KW_per_GPU_All_In", pue="PUE", usd_per_kwh="Own_USD_per_kWh",
       utilisation="Utilisation", kw_per_rack="KW_per_Rack", usd_per_rack_month="USD_per_Rack_Month"),
    _o("Own_USD_per_GPU_Hour", ownership.own_usd_per_gpu_hour, "Own: cost of one busy GPU-hour", '"$"#,##0.000',
       capex_usd_per_gpu="Capex_per_GPU_All_In", depreciation_years="Depreciation_Years",
       kw_per_gpu="KW_per_GPU_All_In", pue="PUE", usd_per_kwh="Own_USD_per_kWh", utilisation="Utilisation"),
    _o("Breakeven_Utilisation", ownership.breakeven_utilisation, "Break-even utilisation (own cheaper above)",
       "0.0%", capex_usd_per_gpu="Capex_per_GPU_All_In", depreciation_years="Depreciation_Years",
       kw_per_gpu="KW_per_GPU_All_In", pue="PUE", usd_per_kwh="Own_USD_per_kWh", usd_per_gpu_hour="USD_per_GPU_Hour"),
    _o("Breakeven_Months", ownership.breakeven_months, "Break-even: months of rent that pay for the GPU",
       "#,##0.0", capex_usd_per_gpu="Capex_per_GPU_All_In", kw_per_gpu="KW_per_GPU_All_In", pue="PUE",
       usd_per_kwh="Own_USD_per_kWh", usd_per_gpu_hour="USD_per_GPU_Hour", utilisation="Utilisation"),
)

# The ranges: scenario field moved -> (its defined name, low and high multiplier fields, range formula).
RANGES: tuple[tuple[str, str, str, str, Formula], ...] = (
    ("usd_per_gpu_hour", "USD_per_GPU_Hour", "price_low_x", "price_high_x", franges.range_value),
    ("mfu", "MFU", "mfu_low_x", "mfu_high_x", franges.range_fraction),
    ("tokens_t", "Tokens_T", "tokens_low_x", "tokens_high_x", franges.range_value),
    ("gpu_mtbf_h", "GPU_MTBF_H", "mtbf_low_x", "mtbf_high_x", franges.range_value),
)

# Results that may be a readable message instead of a number (the inputs make them undefined).
MESSAGE_OUTPUTS = frozenset({"Breakeven_Utilisation", "Breakeven_Months"})  # nothing else depends on them

OUTPUT_BY_NAME = {o.name: o for o in OUTPUTS}
# Results whose formula declares a largest allowed result (Formula.at_most): past it their workbook cell shows a
# message naming the inputs (bound_message), and every cell computed from them shows that message too.
BOUNDED_OUTPUTS = tuple(o.name for o in OUTPUTS if o.formula.at_most is not None)


def output_excel(out: OutputCell) -> str:
    """The Excel formula text of a named result, over the defined names.

    A sub-result that an earlier named output already computes (e.g. 6ND inside
    Train_Days) is written as that output's name, so the workbook reads like the maths.
    """
    subs: dict[Any, str] = {}
    for earlier in OUTPUTS:
        if earlier.name == out.name:
            break
        subs[earlier.expr().key()] = earlier.name
    return output_expr(out).to_excel(lambda n: n, subs)


def output_expr(out: OutputCell) -> Expr:
    """The formula of a named result as one expression over the defined names.

    A bounded result (``Formula.at_most``) past its bound reads :func:`bound_short`, its cell's message (Start's input
    check shows :func:`bound_message` for it, whole). A memory result reads
    ``IF(Layout_Check="OK", <formula>, Layout_Check)``: a broken layout shows the layout check's message in the cell,
    never a number.
    """
    expr = plain_expr(out)
    if out.formula.at_most is not None:
        # past the bound, or past the largest number a spreadsheet holds (#NUM!): the message
        expr = within_bound(expr, out.formula, out.name)
    return if_(eq(Var("Layout_Check"), LAYOUT_OK), expr, Var("Layout_Check")) if out.guarded else expr


def bound_inputs(out: OutputCell) -> list[str]:
    """The defined names a bounded result is computed from, in the order of its formula's parameters."""
    names: list[str] = []
    for arg in out.args.values():
        names += sorted(n for n in arg.variables() if n not in names)
    return names


def bound_message(out: OutputCell) -> str:
    """What Start's input check shows for a bounded result past its bound (``Formula.at_most``): the result, the bound
    and the inputs that produced it (a spreadsheet string constant: at most 255 characters)."""
    assert out.formula.at_most is not None
    unit = "" if out.formula.unit == "fraction" else f" {out.formula.unit}"
    text = (f"{out.name} would be over {_bound_shown(out.formula)}{unit}, its bound: the inputs contradict each other "
            f"\u2014 check {', '.join(bound_inputs(out))}")
    assert len(text) <= 255, text
    return text


def bound_short(out: OutputCell) -> str:
    """What a bounded result's cell, and every cell computed from it, holds past its bound: the result and the bound
    (at most BOUND_SHORT_CHARS characters, whole in a Sensitivity grid point's cell; a Scenarios column's is wider).
    Start's input check shows :func:`bound_message` for it, naming the inputs."""
    return bound_text(out.formula, out.name)


def bound_text(formula: Formula, name: str) -> str:
    """``name`` (a result computed by ``formula``) and the formula's bound, ``Train_Days over 100,000,000``."""
    text = f"{name} over {_bound_shown(formula)}"
    assert len(text) <= BOUND_SHORT_CHARS, text
    return text


def within_bound(expr: Expr, formula: Formula, name: str) -> Expr:
    """``expr`` (``formula``'s result, called ``name``), or past the formula's bound (``Formula.at_most``) or the
    largest number a spreadsheet holds (#NUM!), :func:`bound_text`."""
    assert formula.at_most is not None
    return if_(IfError(expr > formula.at_most[0], True), bound_text(formula, name), expr)


BOUND_SHORT_CHARS = 34


def _bound_shown(formula: Formula) -> str:
    assert formula.at_most is not None
    limit = formula.at_most[0]
    return f"{limit:,.0f}" if limit < 1e9 else f"{limit:.3g}"


def plain_expr(out: OutputCell) -> Expr:
    """The formula of a named result without the layout guard or the bound's message (for results written inside
    another's formula)."""
    return out.formula.expr.substitute(out.args)

"""Readable explanation of a plan: the top plans, their memory and time breakdowns, the rejected alternatives."""

from __future__ import annotations

from .answer import PlanResult


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def explain(result: PlanResult, top: int = 3, rejected: int = 6) -> str:
    a = result.architecture  # the architecture planned, in the numbers its config.json or paper gives
    moe = (f", {a['experts']} routed experts ({a['experts_active']} per token), {a['active_params_b']:,.1f} B active"
           if a["experts"] else "")
    lines = [
        f"{result.model} on {result.n_gpus} x {result.gpu} ({result.gpu_memory_gb:.0f} GB), seq {result.seq_len}, "
        f"global batch {result.global_batch} sequences ({result.global_batch * result.seq_len:,} tokens), "
        f"{result.tokens_t:.3g} T tokens",
        f"{result.model}: {a['layers']} layers, hidden {a['hidden']}, {a['heads']} heads ({a['kv_heads']} KV), "
        f"vocabulary {a['vocab']:,}, {a['total_params_b']:,.1f} B parameters{moe}",
        f"{result.evaluated:,} configurations considered, {result.feasible:,} evaluated in full fit. Matmuls at "
        f"{result.matmul_efficiency:.1%} of peak ({result.matmul_efficiency_basis})."]
    if result.rejected_by_reason:
        lines.append("Left out: " + "; ".join(
            f"{k} {v:,}" for k, v in sorted(result.rejected_by_reason.items(), key=lambda kv: -kv[1])) + ".")
    if not result.plans:
        lines.append("No configuration fits (the reasons are counted above).")
    for i, p in enumerate(result.plans[:top], 1):
        cost = f", ${p.cost_usd:,.0f}" if p.cost_usd is not None else ""
        lines += [
            "", f"#{i}  {p.label()}",
            f"    MFU {p.mfu:.1%} (HFU {p.hfu:.1%}; 6·N·D convention of estimate, N = {result.params_b:,.1f} B"
            f"{' active' if result.moe else ''}: {p.mfu_6nd:.1%}), "
            f"{p.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, {p.days:.1f} days, {p.gpu_hours:,.0f} GPU-hours{cost}",
            f"    memory {p.memory_gb:.1f} GB: weights {p.weights_gb:.1f}, gradients {p.grads_gb:.1f}, "
            f"optimizer {p.optimizer_gb:.1f}, activations {p.activations_gb:.1f}, "
            f"ZeRO-3 buffer {p.zero3_buffer_gb:.1f}, other {p.overhead_gb:.1f}",
            f"    step {p.step_s:.2f} s ({p.microbatches} micro-batches): compute {p.compute_s:.2f} s "
            f"({_pct(p.compute_s, p.step_s)}), recompute {p.recompute_s:.2f} ({_pct(p.recompute_s, p.step_s)}), "
            f"exposed communication: TP {p.tp_comm_s:.2f} ({_pct(p.tp_comm_s, p.step_s)}), "
            f"CP {p.cp_comm_s:.2f}, PP {p.pp_comm_s:.2f}, EP {p.ep_comm_s:.2f} ({_pct(p.ep_comm_s, p.step_s)}), "
            f"DP {p.dp_comm_s:.2f} ({_pct(p.dp_comm_s, p.step_s)}); "
            f"bubble {p.bubble_s:.2f} ({_pct(p.bubble_s, p.step_s)}), optimizer {p.optimizer_s:.3f}"]
    if result.rejected and rejected:
        lines += ["", "Rejected (does not fit, or fits only tightly: prediction + margin over the card):"]
        lines += [f"  - {r.reason}" for r in result.rejected[:rejected]]
    return "\n".join(lines)

"""Search the parallel configurations of a training run, keep those that fit, rank them by time."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, Optional

from .. import catalog
from ..errors import CatalogError, InputError
from ..formulas import compute as fc
from ..formulas import cost as fcost
from ..formulas import steptime as fs
from ..inputs import spec
from ..layout import check_layout, stage_split
from ..recipes import MEMORY_DEFAULTS, recipe_label
from ..registry import numeric
from ..validate import check_value, checked_inputs
from .answer import Assumed, Plan, PlanResult, Rejection, StackOutcome
from .compare import compare_plans
from .defaults import default_tokens_t, resolve_model, run_defaults
from .divisors import divisors
from .ranges import prediction_range, range_note
from .settings import Settings
from .stacks import DEFAULT_STACK_BASIS, PLANNER, STACKS
from .steptime import (
    Arch,
    Config,
    Hardware,
    Prediction,
    memory,
    memory_base,
    microbatch_lower_bound,
    resolve_hardware,
    sequence_compute_bound,
    step_lower_bound,
    timing,
)

__all__ = ["plan", "search", "uneven_stages"]

RECOMPUTE = ("none", "selective", "full")
# the memory model as one plain function (xlcalc.stage_memory_code, generated from its steps); False: the reference
# path, the steps evaluated one by one
COMPILED = True


def _plan_of(pred: Prediction, n: int, tokens_t: float, price: Optional[float], params_b: float,
             peak_tflops: float) -> Plan:
    c = pred.config
    days = fs.train_days_at_throughput.raw(tokens_t=tokens_t, tokens_per_s=pred.tokens_per_s_per_gpu, n_gpus=n)
    hours = fs.gpu_hours_at_throughput.raw(tokens_t=tokens_t, tokens_per_s=pred.tokens_per_s_per_gpu)
    cost = fcost.cloud_cost_usd.raw(gpu_hours=hours, usd_per_gpu_hour=price) if price is not None else None
    # the 6ND convention of estimate and TRAIN_DAYS: the MFU whose days (6*N*D / (peak * GPUs * MFU)) are the plan's
    mfu_6nd = fc.implied_mfu.raw(params_b=params_b, tokens_t=tokens_t, peak_tflops=peak_tflops, gpu_hours=hours)
    # the layout's and the prediction's fields under Plan's names (model_construct takes Plan's fields, in its order,
    # and ignores the rest); computed here from validated inputs: no re-validation
    return Plan.model_construct(**{
        **c._asdict(), **vars(pred), "stage_layers": list(c.stage_layers) if c.stage_layers else None,
        "optimizer_offload": c.offload, "mfu_6nd": mfu_6nd, "days": days, "gpu_hours": hours, "cost_usd": cost})


def uneven_stages(layers: int, pp: int) -> Optional[tuple[int, ...]]:
    """Meta's Llama 3 layout when L is not a multiple of p: the first and the last stage hold one layer fewer
    (126 layers on 16 stages: 7, 8 x 14, 7), or only the last one (L + 1 = k*p). None when neither fits."""
    if pp < 2:
        return None
    if (layers + 2) % pp == 0 and (layers + 2) // pp >= 2:
        k = (layers + 2) // pp
        return (k - 1,) + (k,) * (pp - 2) + (k - 1,)
    if (layers + 1) % pp == 0 and (layers + 1) // pp >= 2:
        k = (layers + 1) // pp
        return (k,) * (pp - 1) + (k - 1,)
    return None


def _stage_options(arch: Arch, pp: Optional[int],
                   stage_layers: Optional[Sequence[int]]) -> list[tuple[int, Optional[tuple[int, ...]]]]:
    """(PP, its stages) to search: the pinned stages, else every PP that splits the layers evenly (stages None) or
    unevenly as Meta's layout does (:func:`uneven_stages`)."""
    if stage_layers is not None:
        return [(len(stage_layers), tuple(stage_layers))]
    options = [(p, None if arch.layers % p == 0 else uneven_stages(arch.layers, p))
               for p in range(1, arch.layers + 1) if pp is None or p == pp]
    return [(p, stages) for p, stages in options if arch.layers % p == 0 or stages is not None]


def search(arch: Arch, hw: Hardware, st: Settings, n_gpus: int, seq_len: int, global_batch: int, *,
           tp: Optional[int] = None, pp: Optional[int] = None, zero_stage: Optional[int] = None,
           recompute: Optional[str] = None, micro_batch: Optional[int] = None, seq_parallel: Optional[bool] = None,
           virtual_stages: Optional[int] = None, cp: Optional[int] = None, ep: Optional[int] = None,
           etp: Optional[int] = None, stage_layers: Optional[Sequence[int]] = None, fp8: bool = False,
           max_micro_batch: Optional[int] = None, max_virtual_stages: int = 8, min_cp_tokens: int = 4096,
           keep: Optional[float] = None, offload: bool = False,
           ) -> tuple[list[Prediction], list[Prediction], int, dict[str, int]]:
    """Evaluate every configuration; return (fitting predictions, non-fitting predictions at micro-batch 1, count,
    rejections counted by reason).

    Micro-batches grow until memory runs out (or ``max_micro_batch``); context parallelism is searched in powers of
    two while each GPU keeps at least ``min_cp_tokens`` tokens of a sequence (a pinned ``cp`` is honoured); expert
    parallelism (MoE) over every divisor of the experts that divides DP x CP (a pinned ``ep`` is honoured).
    With ``keep``, only the ``keep`` fastest plans matter: a configuration whose step cannot be shorter than the
    ``keep``-th best found so far (its compute and bubble alone, STEP_LOWER_BOUND) is counted and left out
    without its memory and communication being evaluated (branch and bound). ``offload``: every configuration keeps
    its optimizer states in CPU memory (a recipe choice, like FP8).
    """
    if virtual_stages is not None:
        # a pinned schedule is honoured beyond the search's own range (NeMo interleaves 10 or 20 chunks per stage)
        max_virtual_stages = max(max_virtual_stages, virtual_stages)
    keep = keep if keep is not None else float("inf")
    reasons: dict[str, int] = {}
    base = memory_base(arch, st)  # the memory model's inputs that no configuration changes
    best: list[float] = []  # the `keep` shortest step times so far, negated (a max-heap)

    def reject(why: str, k: int = 1) -> None:
        reasons[why] = reasons.get(why, 0) + k

    def mem(cfg: Config, microbatches: int) -> Prediction:  # the memory model at one configuration
        return memory(arch, hw, st, cfg, seq_len // cfg.cp, microbatches, compiled=COMPILED, base=base)

    tps = [t for t in divisors(arch.heads) if arch.kv_heads % t == 0 and t <= hw.nvlink_domain and n_gpus % t == 0]
    if tp is not None:
        tps = [t for t in tps if t == tp]
        if not tps:
            reject(f"TP={tp} does not divide the {n_gpus} GPUs")
    cps = [cp] if cp is not None else [1] + [2 ** k for k in range(1, 12)
                                             if seq_len % (2 * 2 ** k) == 0 and seq_len // 2 ** k >= min_cp_tokens]
    stage_opts = _stage_options(arch, pp, stage_layers)
    zeros = [zero_stage] if zero_stage is not None else [0, 1, 2, 3]
    rcs = [recompute] if recompute is not None else list(RECOMPUTE)
    fits: list[Prediction] = []
    misses: list[Prediction] = []
    count = 0
    # the layouts (TP, CP, PP and its stages, DP), most promising first so that the bound below bites early
    layouts = []
    for t in tps:
        for c in cps:
            if seq_len % c:
                reject("sequence length not divisible by CP")
                continue
            for p, layout in stage_opts:
                if n_gpus % (t * c * p):
                    reject("GPUs not divisible by TP x CP x PP")
                    continue
                d = n_gpus // (t * c * p)
                if global_batch % d:
                    reject("global batch not divisible by DP")
                    continue
                per_replica = global_batch // d
                if arch.experts:
                    # (EP, expert TP): experts tensor-split as the dense layers (ETP = TP, EP inside DP x CP), or
                    # whole (ETP = 1, EP over TP x CP x DP); 0 stands for ETP = TP
                    eps = [(x, y) for x in divisors(arch.experts) for y in ((0, 1) if t > 1 and x > 1 else (0,))
                           if (t * c * d) % (x * (y or t)) == 0 and (ep is None or x == ep)
                           and (etp is None or (y or t) == etp)]
                    if not eps:
                        reject("EP x expert-TP does not divide TP x CP x DP")
                        continue
                else:
                    eps = [(1, 0)]
                # the divisors of the per-replica batch (a divisor of the global batch): bounded by their count
                mbs = [b for b in divisors(global_batch) if per_replica % b == 0
                       and (max_micro_batch is None or b <= max_micro_batch)]
                if micro_batch is not None:
                    mbs = [b for b in mbs if b == micro_batch]
                    if not mbs:
                        reject("pinned micro-batch does not divide the per-replica batch")
                        continue
                # the fewest-bubble schedule any micro-batch could reach: interleaving up to max_virtual_stages
                vmax = 1 if p == 1 else max_virtual_stages
                probe = Config(t, p, d, 0, t > 1, "none", 1, vmax, c, layout, fp8)
                bound = step_lower_bound(probe, per_replica, sequence_compute_bound(arch, hw, st, probe, seq_len))
                layouts += [(bound, t, c, p, layout, d, per_replica, mbs, vmax, e, et) for e, et in eps]
    layouts.sort(key=lambda x: x[0])
    # Branch and bound. A layout's (or a recomputation/SP choice's) bound is its compute at the plain matmul
    # efficiency with the fewest-bubble schedule it allows (no recomputation and SP for the layout's bound):
    # every configuration under it takes at least that long, so once `keep` plans are faster it is left out whole.
    for bound, t, c, p, layout, d, per_replica, mbs, vmax, e, et in layouts:
        if len(best) >= keep and bound >= -best[0]:
            reject("layouts that cannot beat the best plans (lower bound), not searched further")
            continue
        sps = [seq_parallel] if seq_parallel is not None else ([False, True] if t > 1 else [False])
        zs = [z for z in zeros if z == 0 or d * c > 1]
        # Memory per ZeRO stage: when a variant does not fit, the leanest variant of its ZeRO stage (full
        # recomputation, SP, the smallest micro-batch, no interleaving: the fewest activations in flight) is tried
        # once; if that does not fit either, no variant of that ZeRO stage does, and the rest are not evaluated.
        lean_rc = next((r for r in ("full", "op_selective", "selective", "none") if r in rcs), rcs[0])
        dead: set[int] = set()
        lean_checked: set[int] = set()
        for sp in sps:
            for rc in rcs:
                group = Config(t, p, d, 0, sp, rc, 1, vmax, c, layout, fp8, e, et, offload)
                per_seq = sequence_compute_bound(arch, hw, st, group, seq_len)
                if len(best) >= keep and step_lower_bound(group, per_replica, per_seq) >= -best[0]:
                    reject("SP/recompute choices that cannot beat the best plans (lower bound), not searched further")
                    continue
                too_big: set[int] = set()  # ZeRO stages whose smaller micro-batch already did not fit
                for b in mbs:
                    m = per_replica // b
                    # b sequences per micro-batch: at least b x per_seq each and a bubble that grows with b, so once
                    # the bound at the fewest-bubble schedule cannot win, no larger micro-batch can
                    if len(best) >= keep and step_lower_bound(group, m, b * per_seq) >= -best[0]:
                        reject("micro-batches that cannot beat the best plans (lower bound), not searched further")
                        break
                    # interleaving: v chunks of equal layers per stage; with uneven stages (first and last one
                    # layer fewer) the L + 2 "layers" (embedding and output counted as one each) split into p x v
                    # chunks, as Llama 3 405B's interleaved schedule
                    chunks = arch.layers // p if layout is None else arch.layers + 2
                    vs = [1] + [v for v in range(2, max_virtual_stages + 1)
                                if p > 1 and m % p == 0 and (chunks % v == 0 if layout is None
                                                             else chunks % (p * v) == 0)]
                    if virtual_stages is not None:
                        vs = [v for v in vs if v == virtual_stages]
                        if not vs:
                            reject("pinned virtual stages do not divide the stage")
                            continue
                    live = [z for z in zs if z not in too_big and z not in dead]
                    if not live:
                        break  # activations grow with the micro-batch: larger ones fit no better
                    # interleaved chunks (v > 1) hold (1 + (p-1)/(p v)) x the micro-batches in flight, fewer as v
                    # grows, and nothing else depends on v: they are tried from the most chunks down, and once one
                    # does not fit, those with fewer chunks fit no better
                    vs = vs[:1] + sorted(vs[1:], reverse=True) if vs[:1] == [1] else sorted(vs, reverse=True)
                    chunks_miss: dict[int, int] = {}  # ZeRO stage -> chunks of an interleaved variant that missed
                    mb_bound = None  # the micro-batch's compute and TP communication: the same for every v
                    for v in vs:
                        # the bound does not depend on the ZeRO stage: one bound for all of them
                        probe = Config(t, p, d, 0, sp, rc, b, v, c, layout, fp8, e, et, offload)
                        if len(best) >= keep:
                            out = step_lower_bound(probe, m, b * per_seq) >= -best[0]
                            if not out:
                                if mb_bound is None:
                                    mb_bound = microbatch_lower_bound(arch, hw, st, probe, seq_len)
                                out = step_lower_bound(probe, m, mb_bound) >= -best[0]
                            if out:
                                count += len(live)
                                reject("cannot beat the best plans (lower bound on its step time)", len(live))
                                continue
                        for z in live:
                            count += 1
                            if z in too_big or z in dead or v < chunks_miss.get(z, 0):
                                # v = 1 holds the fewest activations: neither does v; or more chunks did not fit
                                reject("heavier variants of a configuration that does not fit, not evaluated")
                                continue
                            cfg = Config(t, p, d, z, sp, rc, b, v, c, layout, fp8, e, et, offload)
                            pred = mem(cfg, m)
                            if pred.fits:
                                fits.append(timing(pred, arch, hw, st, seq_len, global_batch))
                                if len(best) < keep:
                                    heapq.heappush(best, -fits[-1].step_s)
                                elif fits[-1].step_s < -best[0]:
                                    heapq.heapreplace(best, -fits[-1].step_s)
                            else:
                                reject("does not fit in GPU memory with the margin (tight or does not fit)")
                                if b == mbs[0] and v == 1:
                                    misses.append(pred)
                                if v == 1:
                                    too_big.add(z)
                                else:
                                    chunks_miss[z] = v
                                if z not in lean_checked:
                                    lean_checked.add(z)
                                    lean = Config(t, p, d, z, sps[-1], lean_rc, mbs[0], 1, c, layout, fp8, e, et, offload)
                                    if lean == cfg or not mem(lean, per_replica // mbs[0]).fits:
                                        dead.add(z)
    # the plainest alternatives (fewest stages, no CP, no ZeRO, no SP, no recomputation) for the explanation of
    # what was rejected, whether or not the bound left them out
    plainest: dict[int, tuple[Any, ...]] = {}
    for _, t, c, p, layout, d, per_replica, mbs, _, e, et in layouts:
        if t not in plainest or (c, p, -e) < (plainest[t][0], plainest[t][1], -plainest[t][6]):
            plainest[t] = (c, p, layout, d, per_replica, mbs, e, et)
    seen = {(q.config.tp, q.config.cp, q.config.pp, q.config.zero_stage, q.config.seq_parallel, q.config.recompute)
            for q in misses}
    for t, (c, p, layout, d, per_replica, mbs, e, et) in plainest.items():
        z, sp, rc = zeros[0], (seq_parallel if seq_parallel is not None else False), rcs[0]
        if (t, c, p, z, sp, rc) in seen:
            continue
        pred = mem(Config(t, p, d, z, sp, rc, mbs[0], 1, c, layout, fp8, e, et, offload), per_replica // mbs[0])
        if not pred.fits:
            misses.append(pred)
    return fits, misses, count, reasons


@checked_inputs(n_gpus="n_gpus", seq_len="seq_len", global_batch_tokens="global_batch_tokens", tokens_t="tokens_t",
                deadline_days="days", tp="tp", pp="pp", zero_stage="zero_stage", recompute="recompute",
                micro_batch="micro_batch", seq_parallel="seq_parallel", virtual_stages="virtual_stages", cp="cp",
                fp8="fp8", top="microbatches", max_micro_batch="max_micro_batch")
def plan(model: str | catalog.Model | None = None, *, arch: Arch | None = None, gpu: str | None = None,
         n_gpus: int | None = None, seq_len: int | None = None, global_batch_tokens: float | None = None,
         tokens_t: float | None = None, deadline_days: float | None = None, settings: Settings | None = None,
         tp: int | None = None, pp: int | None = None, zero_stage: int | None = None, recompute: str | None = None,
         micro_batch: int | None = None, seq_parallel: bool | None = None, virtual_stages: int | None = None,
         cp: int | None = None, ep: int | None = None, etp: int | None = None, stage_layers: list[int] | None = None,
         fp8: bool = False, optimizer_offload: bool = MEMORY_DEFAULTS["optimizer_offload"], top: int = 10,
         max_micro_batch: int | None = None, stack_spread: bool = False, compare_unpinned: bool = False) -> PlanResult:
    """Plan the parallelism of a training run: every configuration that fits, best (fastest, then cheapest) first.

    ``n_gpus`` fixes the cluster; without it, ``deadline_days`` asks for the smallest cluster (whole nodes) whose
    best plan finishes ``tokens_t`` trillion tokens in time. ``global_batch_tokens`` is rounded to whole sequences.
    For a catalog model, ``seq_len`` and ``global_batch_tokens`` default to its published pre-training sequence
    length and batch (``PlanResult.assumed`` says so); a value the catalog does not have is asked for by name.
    ``stage_layers`` pins the layers of each pipeline stage (uneven stages, e.g. Llama 3 405B: 7, 8 x 14, 7);
    ``fp8`` runs the blocks' linear layers in FP8 (the GPU's FP8 peak), the rest in bf16. ``ep`` and ``etp`` pin
    expert parallelism and expert tensor parallelism of an MoE (searched otherwise; ETP is TP or 1).
    ``optimizer_offload`` keeps the optimizer states in CPU memory and runs the Adam step there (ZeRO-Offload); its
    time needs the settings' ``pcie_gb_s`` and ``host_memory_gb_s``. MFU in the 6*N*D convention (``mfu_6nd``) and ``params_b`` count an
    MoE's active parameters. ``stack_spread`` (with no stack named in the settings, so the default stack assumed):
    the best plan's layout is evaluated on every other named stack profile too (``PlanResult.stack_spread``), four
    pinned searches more.
    ``compare_unpinned`` (with any layout pin, e.g. a published run's layout): the search is run again without the
    layout pins and ``PlanResult.unpinned`` compares its best plan with the pinned one term by term.
    """
    st = settings or Settings()
    if n_gpus is not None and deadline_days is not None:  # a contradiction, not a choice: never one ignored
        raise InputError("deadline_days", deadline_days, f"left out when n_gpus = {n_gpus} is given",
                         "deadline_days sizes the cluster (the fewest GPUs whose best plan meets it); with the GPUs "
                         "given there is nothing to size: give one of them")
    # an offloaded optimizer's step needs the server's PCIe and DRAM bandwidth, which no catalog holds
    host = {n: spec(n).allowed + f" (CLI --{n.replace('_', '-')}; {spec(n).doc}; needed by an offloaded optimizer)"
            for n in ("pcie_gb_s", "host_memory_gb_s") if optimizer_offload and getattr(st, n) is None}
    seq_len, global_batch_tokens, assumed = run_defaults(model, arch, gpu, seq_len, global_batch_tokens, host)
    a = resolve_model(model, arch)
    n_checked = check_value("n_gpus", n_gpus) if n_gpus is not None else None
    assert gpu is not None  # _run_defaults named it otherwise
    hw = resolve_hardware(gpu, st, n_gpus=n_checked)
    seq_len = check_value("seq_len", seq_len)
    if global_batch_tokens < seq_len:
        raise InputError("global_batch_tokens", global_batch_tokens, f"at least one sequence (>= seq_len = {seq_len})")
    global_batch = int(round(global_batch_tokens / seq_len))
    if tokens_t is None:
        tokens_t, basis = default_tokens_t(model if arch is None else None, a.params_b, a.name)
        assumed["tokens_t"] = Assumed(value=tokens_t, shown=f"{tokens_t:.3g} T tokens", basis=basis)
    tokens_t = check_value("tokens_t", tokens_t)
    if not st.stack_named:
        assumed["stack"] = Assumed(value=st.stack, shown=f"{st.stack} (the default)",
                                   basis=f"{DEFAULT_STACK_BASIS}; name yours with --stack: " + ", ".join(STACKS)
                                         + f", an alias (nemo, torchtitan, hf-trainer, ...), or {PLANNER} for the "
                                           "planner's own settings")
    if st.usd_per_gpu_hour is None:
        assumed["usd_per_gpu_hour"] = Assumed(
            value=hw.usd_per_gpu_hour, shown="none" if hw.usd_per_gpu_hour is None
            else f"{hw.usd_per_gpu_hour:g} USD per GPU-hour", basis=hw.price_basis)
    typed: dict[str, Any] = dict(tp=tp, pp=pp, zero_stage=zero_stage, recompute=recompute, micro_batch=micro_batch,
                                 seq_parallel=seq_parallel, virtual_stages=virtual_stages, cp=cp, ep=ep, etp=etp)
    pins: dict[str, Any] = {name: None if value is None else check_value(name, value) for name, value in typed.items()}
    if pins["tp"] is not None and (a.heads % pins["tp"] or a.kv_heads % pins["tp"]):
        raise InputError("tp", pins["tp"], f"a divisor of heads = {a.heads} and kv heads = {a.kv_heads}")
    if pins["tp"] is not None and pins["tp"] > hw.nvlink_domain:
        raise InputError("tp", pins["tp"], f"at most the GPUs of one NVLink domain ({hw.nvlink_domain}): "
                                           "TP stays on NVLink")
    if pins["ep"] is not None and pins["ep"] > 1 and not a.experts:
        raise InputError("ep", pins["ep"], f"1 for a dense model ({a.name} has no routed experts)")
    if pins["etp"] is not None and not a.experts:
        raise InputError("etp", pins["etp"], f"left out for a dense model ({a.name} has no routed experts)")
    if pins["ep"] is not None and a.experts and a.experts % pins["ep"]:
        raise InputError("ep", pins["ep"], f"a divisor of experts = {a.experts}",
                         f"expert parallelism gives every GPU whole experts: experts/EP = {a.experts / pins['ep']:g}")
    if pins["cp"] is not None and seq_len % pins["cp"]:
        raise InputError("cp", pins["cp"], f"a divisor of seq_len = {seq_len}")
    if stage_layers is not None:
        stage_layers = [check_value("layers", x) for x in stage_layers]
        # the one check of an explicit split (xlcalc.layout): adds up, PP stages, middle stages equal
        stage_split(stage_layers, a.layers, pins["pp"])
        pins["pp"] = len(stage_layers)
    elif pins["pp"] is not None and a.layers % pins["pp"] and uneven_stages(a.layers, pins["pp"]) is None:
        raise InputError("pp", pins["pp"], f"a divisor of layers = {a.layers}, or a stage count whose first and last "
                                           "stages can hold one layer fewer (L + 2 or L + 1 a multiple of PP); "
                                           "or give layers_per_stage")
    if fp8 and hw.fp8_tflops is None:
        raise CatalogError(f"{hw.name}: the GPU catalog has no FP8 peak; FP8 training needs one")

    architecture = dict(layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads, vocab=a.vocab,
                        experts=a.experts, experts_active=a.experts_active, total_params_b=a.params_b,
                        active_params_b=a.n_params_b)
    shape = dict(hidden=a.heads * a.head_dim, heads=a.heads, layers=a.layers, seq_len=seq_len, kv_heads=a.kv_heads)

    def run(n: int) -> PlanResult:
        if pins["tp"] is not None and pins["pp"] is not None:
            # a pinned layout: GPUs and batch checked whole by the one layout check (xlcalc.layout), with the
            # stages the search will use (given, even, or Meta's uneven split)
            ends = stage_layers or (uneven_stages(a.layers, pins["pp"]) if a.layers % pins["pp"] else None)
            first, last = (ends[0], ends[-1]) if ends and pins["pp"] > 1 else (0, 0)
            check_layout(**shape, tp=pins["tp"], pp=pins["pp"], cp=pins["cp"] or 1, cluster_gpus=n,
                         first_stage_layers=first, last_stage_layers=last, experts=a.experts, ep=pins["ep"] or 1,
                         batch_sequences=global_batch, micro_batch=pins["micro_batch"] or 1)
        with numeric():  # inputs validated above: every formula in the search takes the fast path
            fits, misses, count, reasons = search(a, hw, st, n, seq_len, global_batch,
                                                  max_micro_batch=max_micro_batch, stage_layers=stage_layers,
                                                  fp8=fp8, keep=top, offload=optimizer_offload, **pins)
        fits.sort(key=lambda p: (p.step_s, p.memory_gb))
        plans = [_plan_of(p, n, tokens_t, hw.usd_per_gpu_hour, a.n_params_b, hw.peak_tflops) for p in fits[:top]]
        given_eff = st.matmul_efficiency is not None
        best = plans[0] if plans else None
        return PlanResult(
            interval=None if best is None or given_eff else prediction_range(
                best.mfu, best.days, best.gpu_hours, best.cost_usd, st.stack, st.stack_named),
            interval_note=range_note(given_eff, st.stack, st.stack_named),
            model=a.name, gpu=hw.name, n_gpus=n, seq_len=seq_len, global_batch=global_batch, tokens_t=tokens_t,
            gpu_memory_gb=hw.memory_gb, matmul_efficiency=hw.matmul_efficiency,
            matmul_efficiency_basis=hw.matmul_efficiency_basis, settings=st, params_b=a.n_params_b,
            recipe=recipe_label(st.bytes_weights, st.bytes_grads, st.bytes_optimizer), plans=plans, moe=a.moe,
            rejected=_rejections(misses, hw.memory_gb), evaluated=count, feasible=len(fits),
            rejected_by_reason=reasons, assumed=assumed, architecture=architecture)

    def again(result: PlanResult, **kw: Any) -> PlanResult:
        """This run planned again on ``result``'s cluster for its best plan only, with the settings and pins ``kw``."""
        return plan(model, arch=arch, gpu=gpu, n_gpus=result.n_gpus, seq_len=seq_len, tokens_t=tokens_t, fp8=fp8,
                    global_batch_tokens=global_batch * seq_len, optimizer_offload=optimizer_offload, top=1,
                    max_micro_batch=max_micro_batch, **kw)

    def spread(result: PlanResult) -> PlanResult:
        """With no stack named: the best layout on every named stack (its facts and fitted efficiency); where that
        layout does not fit the stack's memory, the stack's own best plan under the caller's pins."""
        if not stack_spread or st.stack_named or not result.plans:
            return result
        best = result.plans[0]
        given = st.model_dump(exclude_unset=True)
        outcomes: dict[str, Optional[StackOutcome]] = {}
        for sid in STACKS:
            if sid == st.stack:  # the stack assumed: the best plan itself
                same = own = result
            else:
                named = Settings(**{**given, "stack": sid})
                same = again(result, settings=named, stage_layers=best.stage_layers or stage_layers,
                             **best.layout_pins(bool(a.experts)))
                own = same if same.plans else again(result, settings=named, stage_layers=stage_layers, **pins)
            p = own.plans[0] if own.plans else None
            outcomes[sid] = None if p is None else StackOutcome(
                days=p.days, step_s=p.step_s, mfu=p.mfu, memory_gb=p.memory_gb, same_layout=own is same,
                layout=p.label())
        return result.model_copy(update={"stack_spread": outcomes})

    def unpinned(result: PlanResult) -> PlanResult:
        """With layout pins: the best plan without them, term by term against the pinned best."""
        if not compare_unpinned or not result.plans or (all(v is None for v in pins.values()) and stage_layers is None):
            return result
        free = again(result, settings=settings)
        if not free.plans:
            return result
        return result.model_copy(update={"unpinned": compare_plans(result.plans[0], free.plans[0])})

    if n_checked is not None:
        return unpinned(spread(run(n_checked)))
    if deadline_days is None:
        raise InputError("n_gpus", None, "a GPU count, or a deadline in days to size the cluster for")
    deadline = check_value("days", deadline_days)
    sizes = sorted({hw.gpus_per_node * k * f for k in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
                    for f in (1, 1.5) if float(k * f).is_integer()})
    lo, hi, best = 0, len(sizes) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        res = run(int(sizes[mid]))
        if res.plans and res.plans[0].days <= deadline:
            best, hi = res, mid - 1
        else:
            lo = mid + 1
    if best is None:
        raise InputError("days", deadline_days, f"a deadline reachable with up to {int(sizes[-1])} GPUs")
    return unpinned(spread(best))


def _rejections(misses: list[Prediction], cap: float, limit: int = 20) -> list[Rejection]:
    # the plainest alternatives first: fewer pipeline stages, no ZeRO, no SP, no recompute
    order = {r: i for i, r in enumerate(RECOMPUTE)}
    misses = sorted(misses, key=lambda p: (p.config.pp, p.config.zero_stage, p.config.seq_parallel,
                                           order.get(p.config.recompute, len(order)), -p.config.tp))[:limit]
    out = []
    for p in misses:
        c = p.config
        sp = ", SP" if c.seq_parallel else ""
        rc = "no recompute" if c.recompute == "none" else f"{c.recompute} recompute"
        out.append(Rejection.model_construct(  # the layout's fields by name (those Rejection lacks ignored)
            **c._asdict(), memory_gb=p.memory_gb,
            reason=(f"TP={c.tp}, PP={c.pp}{f', CP={c.cp}' if c.cp > 1 else ''}{f', EP={c.ep}' if c.ep > 1 else ''}, "
                    f"ZeRO-{c.zero_stage}{sp}, {rc}: {p.verdict or 'does not fit'} - needs {p.memory_gb:.0f} GB "
                    f"(+ margin {p.margin_gb:.1f}: CUDA context and allocator reserve) of {cap:.0f} "
                    f"(weights {p.weights_gb:.0f}, gradients {p.grads_gb:.0f}, optimizer {p.optimizer_gb:.0f}, "
                    f"activations {p.activations_gb:.0f}, other {p.overhead_gb + p.zero3_buffer_gb:.0f})"),
        ))
    return out

"""docs/validation.md from the validation results."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from operator import attrgetter

from .. import catalog
from ..planner.stacks import DEFAULT_STACK, PLANNER, STACKS
from .adapter import FACTOR_GRID, LACKS, REFERENCE_EFFICIENCY
from .factchoice import bootstrap_sources
from .facts import FACTS
from .intervals import LEVEL, bounds, log_errors, nested_coverage, without_stack
from .runs import GPU_STAND_IN, PROFILE_TEXT, SCORED_APART, Skip
from .scoring import Scored, headline, summary


def _pct(x: float) -> str:
    return "–" if x != x else f"{x:.0%}"


def _row_stats(group: list[Scored]) -> list[str]:
    h = headline({"scored": group})  # the group's own hindsight constant
    m, c, hs = h["model"], h["constant"], h["hindsight"]
    return [str(m["n"]), f"{m['median']:.1%}", _pct(m["within"]), f"{m['bias']:+.1%}", f"{c['median']:.1%}",
            _pct(c["within"]), f"{h['hindsight_mfu']:.3f}", f"{hs['median']:.1%}", _pct(hs["within"])]


STAT_HEAD = ("runs | model: median error | model: within 15% | model: median signed | constant (fitted on other "
             "sources): median error | within 15% | hindsight constant | its median error | within 15%")


def _table(title_col: str, groups: dict[str, list[Scored]], extra_cols: dict | None = None) -> list[str]:
    extra_cols = extra_cols or {}
    head = "| " + " | ".join([title_col, *extra_cols.get("_head", []), STAT_HEAD]) + " |"
    return [head, "|---" + "|---:" * (head.count("|") - 2) + "|",
            *("| " + " | ".join([name, *extra_cols.get(name, []), *_row_stats(group)]) + " |"
              for name, group in groups.items())]


# the bands of the diagnosis table by upper bound: sequence length (at most), parameters in billions (below)
_SEQ_BANDS = ((2048, "≤ 2k"), (4096, "4k"), (8192, "8k"), (32768, "16k-32k"), (math.inf, "> 32k"))
_SIZE_BANDS = ((3, "< 3B"), (15, "3-15B"), (100, "15-100B"), (math.inf, "≥ 100B"))
# the order of the diagnosis groups: the bands and recompute modes as listed, any other value after them by name
_BANDS = [band for _, band in _SEQ_BANDS + _SIZE_BANDS] + ["none", "selective", "full", "not stated"]


def _order(value: str):
    return (_BANDS.index(value), "") if value in _BANDS else (len(_BANDS), value)


# the groups of the diagnosis table: (label, the query's group)
_DIAGNOSIS = [
    ("precision", lambda q: q.precision),
    ("sequence", lambda q: next(band for top, band in _SEQ_BANDS if q.seq_len <= top)),
    ("model", lambda q: next(band for top, band in _SIZE_BANDS if q.params_b < top)),
    ("recompute", lambda q: q.recompute or "not stated"),
    ("profile", lambda q: q.profile),
    ("architecture", lambda q: "MoE" if q.moe else "dense"),
    ("profile x GPU", lambda q: f"{q.profile} on {q.gpu_label}"),
]


def _group(scored: list[Scored], key) -> dict[str, list[Scored]]:
    """``scored`` by ``key(run)``, the groups in the order their first run comes."""
    out: dict[str, list[Scored]] = {}
    for s in scored:
        out.setdefault(key(s), []).append(s)
    return out


_source = attrgetter("query.source_id")  # a scored run's source, a grouping key
_gpu_label = attrgetter("query.gpu_label")  # its GPU as the source names it


def _mw(m: dict, sep: str = " | ") -> str:
    """A :func:`summary`'s median error and share within 15%, as the tables and sentences give them."""
    return f"{m['median']:.1%}{sep}{m['within']:.0%}"


def headline_sentence(v: dict) -> str:
    """The README's sentence of figures (the script prints it; a test checks README.md quotes it)."""
    h = headline(v)
    chosen = stated = ""
    if "stated" in v:
        chosen = " with the discrete facts chosen inside the loop"
        hs, hn = headline(v["stated"]), headline(v["fact_variants"]["neutral"])
        stated = (f"; with every fact as stated (facts set while the errors were in view) "
                  f"{_mw(hs['model'], ' and ')}, with every such fact left out {_mw(hn['model'], ' and ')}")
    return (f"Leave-one-source-out over {h['runs']} published measured runs from {h['sources']} sources "
            f"(GPU figures of {', '.join(catalog.get_gpu(g).name.replace('NVIDIA ', '') for g in h['gpus'])})"
            f"{chosen}: predicted MFU has a median error of {h['model']['median']:.1%} and is within 15% for "
            f"{h['model']['within']:.0%} of the runs"
            f"{stated}; one constant MFU fitted on the other sources gives {_mw(h['constant'], ' and ')}, "
            f"the best constant in hindsight ({h['hindsight_mfu']:.3f}) {_mw(h['hindsight'], ' and ')}.")


def _facts_section(v: dict) -> list[str]:
    """The discrete facts chosen inside the loop: each one's effect, how often the loop keeps it, the bootstrap."""
    if "stated" not in v:
        return []
    cal = v["calibration"]
    sources = list(cal)

    def fig(res: dict) -> str:
        return _mw(summary([s.error for s in res["scored"]]))

    def boot(res: dict) -> str:  # 5th - 95th percentile of the median error and of the share within 15%
        b = bootstrap_sources({src: [s.error for s in g] for src, g in _group(res["scored"], _source).items()})
        return f"{b['median'][0]:.1%} – {b['median'][1]:.1%} | {b['within'][0]:.0%} – {b['within'][1]:.0%}"

    L = [
        "## Discrete facts, chosen inside the loop",
        "",
        "A discrete fact moves predictions as much as a fitted constant. The facts below were each pinned to what",
        "the stack's code or the source states, but they were set while the scored runs' errors were in view, so",
        "the headline treats each like a fitted constant (`xlcalc.validation.factchoice`): for each held-out source,",
        "with the other facts as stated, a fact is kept as stated or left out (the planner's default), whichever",
        "gives the smaller source-weighted mean squared log error on the *other* sources with the constants refitted;",
        "a tie, or a fact that applies to no run of the other sources, leaves it out. Every other pinned setting",
        "(the stack facts above not named here, the layouts, the reference systems) is stated by its stack or",
        "source. Each fact is reported both ways: the headline with it chosen in the loop, and below, the",
        "leave-one-source-out figures with it left out everywhere (the other facts as stated).",
        "",
        "| fact | what it pins | where it is stated | scored runs it applies to | held-out sources keeping it "
        "as stated | left out everywhere: median error | within 15% |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for f in FACTS:
        per = Counter(s.query.source_id for s in v["scored"] if f.id in s.query.facts)
        applies = ", ".join(f"{src} {n}" for src, n in per.items()) or "none"
        kept = sum(cal[s]["choices"].get(f.id) == "as stated" for s in sources)
        L.append(f"| {f.id} | {f.what} | {f.where} | {applies} | {kept} of {len(sources)} | "
                 f"{fig(v['fact_variants'][f.id])} |")
    hc = headline(v)
    L += [
        "",
        "| facts | median error | within 15% | bootstrap over sources, 90%: median error | within 15% |",
        "|---|---:|---:|---:|---:|",
        f"| chosen inside the loop (the headline) | {fig(v)} | {boot(v)} |",
        f"| every fact as stated | {fig(v['stated'])} | {boot(v['stated'])} |",
        f"| every fact left out (neutral) | {fig(v['fact_variants']['neutral'])} | | |",
        *_defaults_row(v),
        f"| one constant MFU fitted on the other sources | {_mw(hc['constant'])} | | |",
        f"| best constant MFU in hindsight ({hc['hindsight_mfu']:.3f}) | {_mw(hc['hindsight'])} | | |",
        "",
        f"The bootstrap draws the {len(sources)} sources with replacement 2,000 times (each drawn source brings all "
        "its held-out errors; nothing is refitted) and gives the 5th and 95th percentiles of the pooled figures.",
        "",
        defaults_sentence(v),
        "",
        "| held-out source | facts left out for it |",
        "|---|---|",
        *[f"| {s} | {', '.join(cal[s]['facts_off']) or 'none'} |" for s in sources],
        "",
    ]
    return L


def _unfitted(v: dict) -> dict[str, dict]:
    """:func:`summary` of the errors of the runs predicted with nothing fitted (``at_defaults``: the default stack,
    ``at_planner``: the planner's own settings), of those ``v`` holds."""
    return {key: summary(list(v[key]["errors"].values())) for key in ("at_defaults", "at_planner")
            if v.get(key) and v[key]["errors"]}


def _defaults_row(v: dict) -> list[str]:
    what = {"at_defaults": f"at the flags a user gives without `--stack` (the default stack {DEFAULT_STACK}: "
                           "its facts, non-matmul factor and fitted efficiency",
            "at_planner": f"at the planner's own settings (`--stack {PLANNER}`: no profile's facts, "
                          "non-matmul factor 1, the catalog's efficiency"}
    return [f"| {what[key]}; nothing fitted here; {m['n']} runs) | {_mw(m)} | | |" for key, m in _unfitted(v).items()]


def _per_source(v: dict, errors: dict[str, float]) -> str:
    by = _group([s for s in v["scored"] if s.query.id in errors], _source)
    return ", ".join(f"{src} {statistics.median(errors[s.query.id] for s in g):+.0%}" for src, g in by.items())


def defaults_sentence(v: dict) -> str:
    """What ``xlcalc plan`` without ``--stack`` gives on the same runs, per source (the README quotes it)."""
    at = _unfitted(v)
    if "at_defaults" not in at:
        return ""
    fitted_on = ", ".join(STACKS[DEFAULT_STACK].sources)
    text = (f"At the flags a user gives without `--stack` (the source's layout and the default stack, {DEFAULT_STACK}: "
            f"plain PyTorch FSDP without compilation, its facts and its efficiency fitted to {fitted_on}'s runs among "
            f"them; the default was fixed before these figures as the stack a user who names none most likely runs, "
            f"not chosen by them; nothing fitted here) the same runs are predicted with a "
            f"median error of {_signed(at['at_defaults'])} (positive: predicted faster than measured); median signed "
            f"per source: {_per_source(v, v['at_defaults']['errors'])}.")
    if "at_planner" in at:
        text += (f" At the planner's own settings (`--stack {PLANNER}`: no profile's facts and the GPU catalog's "
                 f"matmul efficiency, which was fitted to the Megatron-LM README's runs among them): median error "
                 f"{_signed(at['at_planner'])}.")
    return text + " Name the stack (`--stack`): its facts and fitted efficiency are what the figures above measure."


def _signed(m: dict) -> str:
    return f"{m['median']:.1%}, {m['within']:.0%} within 15%, median signed {m['bias']:+.1%}"


def missing_features(v: dict) -> list[str]:
    """What the skipped runs need that this version lacks: model features, then catalog GPUs."""
    out = dict.fromkeys(r[len(LACKS):].split(" (")[0] for k in v["skipped"] for r in _reason_groups(k.reason)
                        if r.startswith(LACKS))
    if any("not in the GPU catalog" in k.reason or "the GPU catalog has no" in k.reason for k in v["skipped"]):
        out["GPUs or GPU figures missing from the catalog"] = None
    return list(out)


def _reason_groups(reason: str) -> list[str]:
    """The summary lines a skip reason counts under."""
    if reason.startswith(LACKS):
        parts = reason[len(LACKS):].split(", no ")
        return [LACKS + (part.split(" (")[0] if part.startswith("uneven") else part).strip() for part in parts]
    if reason.startswith("record not predictable"):
        return ["record not predictable (configuration or architecture not stated; see the record's notes)"]
    if reason.startswith("same recipe"):
        return ["same recipe measured again in a newer release"]
    if reason.startswith("the planner refuses it"):
        return [reason.split(";")[0].split(" (")[0]]
    return [reason]


def _rule_rows(v: dict) -> list[str]:
    """The headline under both data-selection rules (runs.DEDUP_RULES), and Megatron-Bridge's own figures."""
    others = v.get("other_rules") or {}
    if not any(o.get("scored") for o in others.values()):
        return []
    rows = ["Which runs are scored, under each rule (leave one source out each, constants refitted, every fact as "
            "stated):", "",
            "| rule | runs | median error | within 15% | hindsight constant: median error | within 15% | points over "
            "it | Megatron-Bridge runs | their median error | within 15% |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    names = {"recipe+layout": "newest release of each recipe and layout (earlier rule)",
             "every release": "every release (no rule)"}
    for name, res in (("newest release of each model x GPU x count x precision recipe (scored here)", v.get("stated", v)),
                      *((names.get(k, k), o) for k, o in others.items() if o.get("scored"))):
        h = headline(res)
        mb = summary([s.error for s in res["scored"] if s.query.source_id == "megatron-bridge-perf-summary"])
        rows.append(f"| {name} | {h['runs']} | {_mw(h['model'])} | {_mw(h['hindsight'])} | "
                    f"{(h['model']['within'] - h['hindsight']['within']) * 100:+.0f} | {mb['n']} | {_mw(mb)} |")
    return rows + [""]


def _range_section(v: dict) -> list[str]:
    """The range the planner prints with a prediction, and its coverage measured on held-out sources."""
    rows = log_errors(v)
    if len(rows) < 2:
        return []
    q10, q90 = bounds([r["log_error"] for r in rows])
    cov = nested_coverage(rows)
    lvl = f"{LEVEL:.0%}"
    big = max(cov["by_source"], key=lambda k: cov["by_source"][k][1])

    def frac(c: tuple[int, int]) -> str:
        return f"{c[0]} of {c[1]} ({c[0] / c[1]:.0%})"

    return [
        "## Range of a prediction",
        "",
        f"`xlcalc plan` gives its MFU, days, GPU-hours and cost with {lvl} ranges from the errors above: the 10th and",
        "90th percentiles of log(predicted / measured MFU) over every scored run (each run once, all stack profiles",
        f"pooled; too few sources share a profile to give each its own) are {q10:+.3f} and {q90:+.3f}, so the measured",
        f"MFU lies in predicted x {math.exp(-q90):.3f} ... predicted x {math.exp(-q10):.3f}. Days, GPU-hours and cost",
        "scale as 1 / MFU (same tokens, same GPUs) and take the range with it. The pair is stored with the errors",
        "behind it in `xlcalc/data/mfu_interval.json`, which this script writes.",
        "",
        "Coverage measured out of sample: for each source, the percentiles are taken over the *other* sources' errors",
        f"only and that source's runs are checked against them. Overall: {frac((cov['covered'], cov['runs']))} of "
        f"held-out runs inside the {lvl} range (target 75–85%); each source counting once (the mean of its share "
        f"inside), {statistics.mean(c[0] / c[1] for c in cov['by_source'].values()):.0%}. The largest source, "
        f"{big}, holds {cov['by_source'][big][1]} of the {cov['runs']} runs, so the pooled percentiles lean towards "
        "its errors.",
        "",
        "| source | runs inside | 10th / 90th percentile of the other sources |",
        "|---|---:|---|",
        *[f"| {s} | {frac(c)} | {cov['bounds'][s][0]:+.3f} / {cov['bounds'][s][1]:+.3f} |"
          for s, c in cov["by_source"].items()],
        "",
        "| GPU (as the source names it) | runs inside |",
        "|---|---:|",
        *[f"| {g} | {frac(c)} |" for g, c in cov["by_gpu"].items()],
        "",
        "The errors behind the range are the headline's, with the discrete facts chosen inside the loop: wider than",
        "with every fact as stated, they count the error of choosing those facts too. The range measures the model",
        "as `xlcalc plan --stack ID` uses it: a stack profile's facts and efficiency fitted to published runs.",
        *_without_stack_range(v),
        "It gives no range for a plan with a given `--matmul-efficiency` or a `--profile` calibrated on one run: their",
        "error is not measured.",
        "",
    ]


def _without_stack_range(v: dict) -> list[str]:
    return [f"{what} takes its own range, from the errors such plans make on the same runs (their median signed error "
            f"above): percentiles {w['q10_log_error']:+.3f} and {w['q90_log_error']:+.3f}, measured MFU in predicted x "
            f"{math.exp(-w['q90_log_error']):.3f} ... x {math.exp(-w['q10_log_error']):.3f}; measured out of sample as "
            f"above, {w['out_of_sample_coverage']:.0%} of {w['runs']} runs inside (target 75–85%)."
            for key, what in (("at_defaults", f"A plan without `--stack` (the default stack {DEFAULT_STACK} assumed)"),
                              ("at_planner", f"A plan with `--stack {PLANNER}` (the planner's own settings)"))
            if (w := without_stack(v, key)) is not None]


def render(v: dict) -> str:
    sc: list[Scored] = v["scored"]
    h = headline(v)
    targets = [
        ("issue 21: median MFU error ≤ 10%, facts chosen inside the loop", h["model"]["median"] <= 0.10,
         f"{h['model']['median']:.1%}"),
        ("issue 21: ≥ 70% within 15%, facts chosen inside the loop", h["model"]["within"] >= 0.70,
         f"{h['model']['within']:.0%}"),
        ("≥ 150 runs scored", h["runs"] >= 150, f"{h['runs']}"),
        ("≥ 5 sources", h["sources"] >= 5, f"{h['sources']}"),
        ("FP8 runs among them", h["fp8"] > 0, f"{h['fp8']}"),
        ("MoE runs among them", h["moe"] > 0, f"{h['moe']}"),
        ("median MFU error ≤ 10%", h["model"]["median"] <= 0.10, f"{h['model']['median']:.1%}"),
        ("≥ 75% within 15%", h["model"]["within"] >= 0.75, f"{h['model']['within']:.0%}"),
        ("≥ 15 points more within 15% than the best constant", h["model"]["within"] - h["hindsight"]["within"] >= 0.15,
         f"{(h['model']['within'] - h['hindsight']['within']) * 100:+.0f} points"),
    ]
    L = [
        "# Validation: predicted vs measured throughput, leave one source out",
        "",
        "Generated by `python scripts/make_validation.py` from `xlcalc/data/reference/throughput_runs.json`; "
        "do not edit.",
        "",
        "Every published run with a configuration complete enough to predict is turned into a prediction query:",
        "architecture, GPU, GPU count, the layout the source states (TP, PP, CP, EP, DP, interleaving,",
        "micro-batch, global batch, sequence length, recompute, sharding, precision). What a source leaves",
        f"unstated is the planner's best choice at a matmul efficiency of {REFERENCE_EFFICIENCY} (if its memory model",
        "fits none, the stated layout is evaluated anyway with the most frugal unstated choices: the run did run,",
        "and the table says so). Each source is predicted with the model's free constants",
        "fitted on the **other** sources only (leave one source out), and beside every figure stand two",
        "constant-MFU baselines on exactly the same runs: the constant fitted on the other sources, and the",
        "best constant in hindsight (the one that puts most of the scored runs within 15%).",
        "",
        "**One basis.** Measured and predicted throughput are compared as MFU on the planner's model FLOPs per",
        "token (6N of the matmuls, attention core and output layer) at the dense BF16 peak of the catalog GPU,",
        "so an MFU error equals the tokens/s error. Each run's tokens/s is the one the source states, or it is",
        "derived from the source's TFLOP/s with our FLOP count (the run table's *basis* column); sources that",
        "count hardware FLOPs (Narayanan et al. 2021, the 2021 Megatron-LM README) are converted with our",
        "hardware FLOP count (recomputed forward included).",
        "",
        "**Free constants.** Two kinds. The share of peak the matmuls reach in a training step, one per",
        "software-stack profile, fitted so the source-weighted mean log error is zero (every source counts once,",
        "whatever its number of runs); a source whose profile no other source shares is predicted with the value",
        "fitted to all other sources pooled. And one non-matmul time factor shared by every stack",
        "(`Settings.elementwise_factor`: the counted HBM traffic of norms, activations, residuals and the loss takes",
        f"this many times its time at peak bandwidth), chosen from {', '.join(f'{f:g}' for f in FACTOR_GRID)} as the",
        "one whose efficiencies give the smallest source-weighted mean squared log error on the other sources. Both",
        "are fitted leave one source out. Every other constant is a default of `xlcalc.planner.Settings`; the",
        "profiles' documented software facts are pinned (below).",
        "",
        f"Fitted on all runs (not a prediction; `xlcalc plan --stack ID` uses these): non-matmul factor "
        f"{v.get('fitted_factor', 1.0):g}.",
        "",
        "| profile | stack | sources | efficiency fitted on all its runs |",
        "|---|---|---|---:|",
    ]
    for p, eff in v["fitted"].items():
        srcs = sorted({s.query.source_id for s in sc if s.query.profile == p})
        L.append(f"| {p} | {PROFILE_TEXT[p]} | {', '.join(srcs)} | {eff:.3f} |")
    L += [
        "",
        "Pinned software facts (`xlcalc.planner.stacks`, each with where it is stated; `xlcalc plan --stack ID`",
        "plans with the same facts and the efficiency fitted on all the stack's runs):",
        "",
        *[f"- `{st.id}`: " + "; ".join(f"{what} ({where})" for what, where in st.facts) + "."
          for st in STACKS.values()],
        "",
        "Narayanan et al. 2021 use plain data parallelism (ZeRO-0), and neither they nor the 2021 Megatron-LM README "
        "use sequence parallelism (introduced by Korthikanti et al. 2022). Each option's effect on these figures is measured",
        "by `python scripts/stepmodel_experiments.py`. Scale-out bandwidth where the catalog has",
        "none: the vendors' reference systems (DGX A100 25 GB/s, DGX H100 / HGX H200 50 GB/s per GPU).",
        "GPUs a source does not name exactly: " + "; ".join(f"{k}: {v[1]}" for k, v in GPU_STAND_IN.items()) + ".",
        "**Which runs are scored (a data-selection rule, applied to every source that publishes releases: "
        "Megatron-Bridge).**",
        "Megatron-Bridge measures the same recipes in release after release. A recipe is what a user asks of today's",
        "release: one model on one GPU type and GPU count at one precision recipe (BF16, FP8 current scaling,",
        "MXFP8, ...); the layout, micro-batch and global batch are the release's answer to it. Only the newest",
        "release that measures a recipe is scored (every row of it); older releases are listed as not scored. The",
        "earlier, narrower rule (same recipe only with the same layout and batch, so re-tuned layouts of older",
        "releases stay in) and no rule at all (every release scored) are scored beside it below.",
        "Where a source's table does not state the activation recomputation but its training code sets it, the code's",
        "setting is pinned (`xlcalc.validation.runs.RECIPE_RECOMPUTE`, with the files it is read from): Megatron-Bridge's",
        "performance recipes recompute nothing for Llama 3 8B/70B, Llama 3.1 405B, Qwen3-30B-A3B/235B-A22B and",
        "GPT-OSS-120B (elementwise modules only); DeepSeek-V3 and Kimi K2 recompute MLA up-projections and MLPs by",
        "module, which the model has no name for, and stay the planner's choice. Likewise the runs whose layout is",
        "that of a Megatron-Bridge workload config with `moe_a2a_overlap=True` are predicted with the expert-parallel",
        "all-to-all hidden behind another micro-batch's compute (`ep_overlap` 1; `runs.A2A_OVERLAP_CONFIGS`). Both",
        "tables are read from one commit of the configs (c8327cf^, July 2026) and stand for every release.",
        "",
        f"Step-time model features this version expresses (read from the planner's API): "
        f"{', '.join(v['capabilities']) or 'none of FP8, CP, EP, uneven stages'}. Runs that need a feature it",
        "lacks are listed at the end with the reason, not scored.",
        "",
        "## Headline",
        "",
        headline_sentence(v),
        "",
        "| target (issue 11 unless named) | met | value |",
        "|---|---|---:|",
        *[f"| {t} | {'yes' if ok else 'no'} | {val} |" for t, ok, val in targets],
        "",
        f"Source-weighted (each source counts once): {h['source_weighted_within']:.0%} of a source's runs within 15% "
        "on average.",
        "",
        *_facts_section(v),
        *_rule_rows(v),
        f"Not a prediction, for diagnosis: with each profile's efficiency fitted on all its runs (the scored ones "
        f"included, every fact as stated) the model's median error is {summary(v['in_sample'])['median']:.1%}, "
        f"{summary(v['in_sample'])['within']:.0%} within 15%; the gap to the leave-one-source-out figures with every "
        "fact as stated is the cost of transferring a calibration between sources, the rest is error in the model's "
        "shape.",
        "",
        *_range_section(v),
        "## Per source",
        "",
    ]
    by_src = _group(sc, _source)
    cal = v["calibration"]
    extra = {src: [f"{cal[src]['profile_used']} ({len(cal[src]['efficiency_ids'])} runs of other sources)",
                   f"{cal[src]['efficiency']:.3f}", f"{cal[src].get('factor', 1.0):g}"] for src in by_src}
    L += _table("source", by_src, {"_head": ["calibrated on", "efficiency", "non-matmul factor"], **extra})
    L += ["", "## Per GPU", "", *_table("GPU (as the source names it)", _group(sc, _gpu_label))]
    L += ["", "## By precision, sequence length, model size and stack", "",
          "Where the model fails, to guide its next version. The *hindsight constant* of a row is the best",
          "constant for that row's runs alone (a stronger baseline than one constant for all).", ""]
    groups: dict[str, list[Scored]] = {}
    for label, key in _DIAGNOSIS:
        groups |= _group(sorted(sc, key=lambda s: _order(key(s.query))),
                         lambda s, k=key, lb=label: f"{lb} {k(s.query)}")
    groups |= _group(sc, lambda s: "memory model: " + ("fits" if s.curve.fits else
                                                        "does not fit (run evaluated anyway)"))
    L += _table("group", groups)
    worst = sorted(((summary([s.error for s in g])["bias"], name, len(g)) for name, g in groups.items()
                    if len(g) >= 5 and not name.startswith("memory")), key=lambda x: -abs(x[0]))[:5]
    L += ["", "Largest median signed errors (groups of at least 5 runs): "
          + "; ".join(f"{name} {bias:+.0%} ({n} runs)" for bias, name, n in worst) + ".",
          "", "## Every scored run", "",
          "Measured and predicted MFU on the common basis; *constant* is the constant MFU fitted on the other "
          "sources.", "",
          "| run | source | GPU | GPUs | layout | seq | precision | basis | measured MFU | predicted MFU | error | "
          "constant | its error | configuration predicted |",
          "|---|---|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|---|"]
    for s in sc:
        q = s.query
        cfg = s.curve.config + ("" if s.curve.fits else " (memory model: does not fit)")
        L.append(f"| {q.id} | {q.source_id} | {q.gpu_label} | {q.n_gpus} | {q.layout()} | {q.seq_len} | {q.precision} | "
                 f"{q.basis} | {q.measured_mfu:.3f} | {s.predicted_mfu:.3f} | {s.error:+.1%} | {s.constant:.3f} | "
                 f"{s.constant_error:+.1%} | {cfg} |")
    if apart := v.get("apart", []):  # the runs scored apart (SCORED_APART)
        L += ["", f"## Scored apart: GPUs whose figures no source gives ({len(apart)} runs, not in the headline)", "",
              "Predicted with a stand-in GPU's figures and the constants their source gets in the leave-one-source-out",
              "calibration; kept out of the headline and out of every calibration because the MFU basis itself (the",
              "part's peak) is not published:", "",
              *[f"- {gpu}: {why}." for gpu, why in SCORED_APART.items()], "",
              *_table("GPU (as the source names it)", _group(apart, _gpu_label)),
              "", "| run | GPUs | layout | seq | precision | measured MFU (stand-in peak) | predicted MFU | error |",
              "|---|---:|---|---:|---|---:|---:|---:|",
              *[f"| {s.query.id} | {s.query.n_gpus} | {s.query.layout()} | {s.query.seq_len} | {s.query.precision} | "
                f"{s.query.measured_mfu:.3f} | {s.predicted_mfu:.3f} | {s.error:+.1%} |" for s in apart]]
    skipped: list[Skip] = v["skipped"]
    reasons = Counter(r for k in skipped for r in _reason_groups(k.reason))
    L += ["", f"## Not scored ({len(skipped)} of {v['records']} records)", "",
          "A record can need more than one missing feature, so the counts may add up to more than the records.", "",
          "| reason | records |", "|---|---:|",
          *[f"| {r} | {n} |" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0]))],
          "", "| record | source | reason |", "|---|---|---|",
          *[f"| {k.id} | {k.source_id} | {k.reason} |" for k in skipped], ""]
    return "\n".join(L)

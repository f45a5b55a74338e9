"""Calibrated on one run, predicting the others of its source: what ``xlcalc calibrate`` buys on published runs.

For each source with at least :data:`MIN_RUNS` scored runs, every run in turn plays the user's one measured run:
the matmul efficiency at which the step-time model predicts it exactly is fitted (at its stack's non-matmul time
factor, as ``xlcalc plan --stack ID --profile FILE`` plans), and the source's other runs are predicted with it.
The predictions are the validation's own (:func:`xlcalc.validation.adapter.predict`, the same runs and queries),
interpolated between its efficiency grid points as the leave-one-source-out calibration does.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .scoring import TOLERANCE, Scored, fit_efficiency, log_error_at, summary

MIN_RUNS = 5
TARGET_MEDIAN = 0.07  # issue 21: calibrated on one run, the others' median error at most 7%


@dataclass
class SourceCalibration:
    source_id: str
    stack: str
    runs: int
    median_of_choices: float        # median over calibration runs of the others' median |error|
    worst_choice: float             # the largest of those medians
    within: float                   # share of those predictions within TOLERANCE
    efficiencies: tuple[float, float]  # smallest and largest fitted efficiency
    uncalibrated: dict              # summary() of the leave-one-source-out errors of the same runs


def by_source(scored: list[Scored], sources: set[str] | None = None) -> list[SourceCalibration]:
    """One :class:`SourceCalibration` per source with at least :data:`MIN_RUNS` runs in ``scored`` (``sources``: only
    those), in the order the runs come."""
    out = []
    for src in dict.fromkeys(s.query.source_id for s in scored):
        runs = [s for s in scored if s.query.source_id == src]
        if len(runs) < MIN_RUNS or (sources is not None and src not in sources):
            continue
        # each run at its stack's non-matmul factor
        logc = {s.query.id: [math.log(t / s.query.measured_tokens_s)
                             for t in s.curve.at(dict(s.query.settings).get("elementwise_factor", 1.0))] for s in runs}
        medians, errors, effs = [], [], []
        for c in runs:
            eff = fit_efficiency([logc[c.query.id]])
            effs.append(eff)
            errs = [math.exp(log_error_at(logc[o.query.id], eff)) - 1 for o in runs if o is not c]
            medians.append(statistics.median(abs(e) for e in errs))
            errors += errs
        out.append(SourceCalibration(
            source_id=src, stack=runs[0].query.profile, runs=len(runs), median_of_choices=statistics.median(medians),
            worst_choice=max(medians), within=sum(abs(e) <= TOLERANCE for e in errors) / len(errors),
            efficiencies=(min(effs), max(effs)), uncalibrated=summary([s.error for s in runs])))
    return out


def table(rows: list[SourceCalibration]) -> str:
    """The Markdown table of :func:`by_source`, and the overall line."""
    head = ("| source | stack | runs | calibrated: median error (median over calibration runs) | worst calibration "
            "run | within 15% | efficiencies fitted | uncalibrated (leave one source out): median error | within 15% |\n"
            "|---|---|---:|---:|---:|---:|---|---:|---:|")
    return "\n".join([head, *(f"| {r.source_id} | {r.stack} | {r.runs} | {r.median_of_choices:.1%} | "
                              f"{r.worst_choice:.1%} | {r.within:.0%} | "
                              f"{r.efficiencies[0]:.3f}-{r.efficiencies[1]:.3f} | {r.uncalibrated['median']:.1%} | "
                              f"{r.uncalibrated['within']:.0%} |" for r in rows)])


def overall(rows: list[SourceCalibration]) -> str:
    """The sentence the document gives under the table."""
    if not rows:
        return "No source has enough scored runs."
    met = [r for r in rows if r.median_of_choices <= TARGET_MEDIAN]
    meds = statistics.median(r.median_of_choices for r in rows)
    unc = statistics.median(r.uncalibrated["median"] for r in rows)
    return (f"Over the {len(rows)} sources with at least {MIN_RUNS} scored runs, the median of the calibrated median "
            f"errors is {meds:.1%}, against {unc:.1%} uncalibrated. The target (calibrated on one run, the others' "
            f"median error at most {TARGET_MEDIAN:.0%}) is met on {len(met)} of {len(rows)} sources"
            + (": " + ", ".join(r.source_id for r in met) if met and len(met) < len(rows) else "") + ".")

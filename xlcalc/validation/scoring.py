"""Leave-one-source-out calibration of the free constants, constant-MFU baselines, headline figures."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass

from ..formulas.steptime import mfu_from_step
from .adapter import FACTOR_GRID, GRID, GRID_STEP, Curve
from .runs import PROFILES, Query

TOLERANCE = 0.15


def log_error_at(curve: list[float], eff: float) -> float:
    """log(predicted / measured) at ``eff``, linear between the grid points."""
    i = min(max(int((eff - GRID[0]) / GRID_STEP + 1e-9), 0), len(GRID) - 2)
    return curve[i] + (curve[i + 1] - curve[i]) * ((eff - GRID[i]) / GRID_STEP)


def source_weights(ids: list[str], source_of: dict[str, str]) -> list[float]:
    """Each source weighs 1 in total, whatever its number of runs."""
    counts = Counter(source_of[i] for i in ids)
    return [1 / counts[source_of[i]] for i in ids]


def fit_efficiency(curves: list[list[float]], weights: list[float] | None = None) -> float:
    """The efficiency at which the weighted mean log(predicted / measured) is 0 (bisection on GRID's range).

    Predicted throughput rises with the efficiency, so the mean log error does too.
    """
    w = weights or [1.0] * len(curves)
    total = sum(w)
    # the weighted mean of curves that interpolate linearly on one grid is the curve of their weighted means
    mean = [sum(wi * c[k] for wi, c in zip(w, curves)) / total for k in range(len(GRID))]
    lo, hi = GRID[0], GRID[-1]
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if log_error_at(mean, mid) > 0 else (mid, hi)
    return round((lo + hi) / 2, 3)


def fit_constant_mfu(mfus: list[float], weights: list[float] | None = None) -> float:
    """The constant MFU with weighted mean log error 0: the weighted geometric mean of the measured MFUs."""
    w = weights or [1.0] * len(mfus)
    return round(math.exp(sum(wi * math.log(m) for wi, m in zip(w, mfus)) / sum(w)), 4)


def best_constant(mfus: list[float]) -> float:
    """The hindsight-best constant MFU on these runs: most within the tolerance, then smallest median error."""
    def score(c: float) -> tuple[int, float]:
        errs = [abs(c / m - 1) for m in mfus]
        return sum(e <= TOLERANCE for e in errs), -statistics.median(errs)

    return max((k / 1000 for k in range(1, 1000)), key=score)  # the first of equal scores


def summary(errors: list[float]) -> dict:
    a = [abs(e) for e in errors]
    return dict(n=len(errors), median=statistics.median(a) if a else float("nan"),
                within=sum(x <= TOLERANCE for x in a) / len(a) if a else float("nan"),
                bias=statistics.median(errors) if errors else float("nan"))


@dataclass
class Scored:
    query: Query
    curve: Curve
    profile_used: str               # the profile whose efficiency predicted it, or "pooled"
    efficiency: float
    predicted_tokens_s: float
    error: float
    constant: float                 # constant MFU fitted on the other sources
    constant_error: float
    factor: float = 1.0             # non-matmul time factor fitted on the other sources

    @property
    def predicted_mfu(self) -> float:
        return mfu_from_step.raw(flops_per_token=self.query.flops_per_token, tokens=self.predicted_tokens_s, step_s=1,
                                 n_gpus=1, peak_tflops=self.query.peak_tflops)


def _profile_fit(train: list[Query], logc: dict[str, list[float]], source_of: dict[str, str]) -> dict[str, float]:
    """Each profile's efficiency fitted on its runs of ``train``, and the pooled one (key None)."""
    runs: dict = {p: [q.id for q in train if q.profile == p] for p in dict.fromkeys(q.profile for q in train)}
    runs[None] = [q.id for q in train]
    return {p: fit_efficiency([logc[i] for i in ids], source_weights(ids, source_of)) for p, ids in runs.items()}


def fit_factor(train: list[Query], logcs: dict[float, dict[str, list[float]]], source_of: dict[str, str]) -> float:
    """The non-matmul time factor of FACTOR_GRID that, with each profile's efficiency fitted at it, gives the
    smallest source-weighted mean squared log error on ``train``."""
    return factor_and_loss(train, logcs, source_of)[0]


def factor_and_loss(train: list[Query], logcs: dict[float, dict[str, list[float]]],
                    source_of: dict[str, str]) -> tuple[float, float]:
    """:func:`fit_factor`'s factor and its source-weighted mean squared log error on ``train`` (the training loss
    by which a discrete fact is chosen, :mod:`xlcalc.validation.factchoice`)."""
    w = source_weights([q.id for q in train], source_of)
    best, best_loss = FACTOR_GRID[0], float("inf")
    for f in FACTOR_GRID:
        effs = _profile_fit(train, logcs[f], source_of)
        loss = sum(wi * log_error_at(logcs[f][q.id], effs[q.profile]) ** 2 for wi, q in zip(w, train)) / sum(w)
        if loss < best_loss - 1e-12:
            best, best_loss = f, loss
    return best, best_loss


def log_curves(queries: list[Query], curves: dict[str, Curve]) -> dict[float, dict[str, list[float]]]:
    """factor -> run id -> log(predicted / measured) at each efficiency of GRID, for each factor of FACTOR_GRID."""
    return {f: {q.id: [math.log(t / q.measured_tokens_s) for t in curves[q.id].at(f)] for q in queries}
            for f in FACTOR_GRID}


def calibrate(train: list[Query], profile: str, logcs: dict[float, dict[str, list[float]]],
              source_of: dict[str, str]) -> dict:
    """The constants fitted on ``train`` for a run of ``profile``: the non-matmul factor, the efficiency of the
    profile's runs of ``train`` (all of them pooled if it has none there) and the constant MFU, with the ids each
    fit used and the profile used."""
    factor = fit_factor(train, logcs, source_of)
    same = [q for q in train if q.profile == profile]
    used, label = (same, profile) if same else (train, "pooled")
    ids = [q.id for q in used]
    eff = fit_efficiency([logcs[factor][i] for i in ids], source_weights(ids, source_of))
    tids = [q.id for q in train]
    const = fit_constant_mfu([q.measured_mfu for q in train], source_weights(tids, source_of))
    return dict(efficiency_ids=ids, constant_ids=tids, profile_used=label, efficiency=eff, constant=const,
                factor=factor)


def score(q: Query, curve: Curve, cal: dict, logcs: dict[float, dict[str, list[float]]]) -> Scored:
    """Run ``q`` predicted with the constants of ``cal`` (:func:`calibrate`)."""
    pred = q.measured_tokens_s * math.exp(log_error_at(logcs[cal["factor"]][q.id], cal["efficiency"]))
    return Scored(q, curve, cal["profile_used"], cal["efficiency"], pred, pred / q.measured_tokens_s - 1,
                  cal["constant"], cal["constant"] / q.measured_mfu - 1, cal["factor"])


def predict_source(s: str, queries: list[Query], logcs: dict[float, dict[str, list[float]]],
                   curves: dict[str, Curve], source_of: dict[str, str]) -> tuple[dict, list[Scored]]:
    """Source ``s``'s runs of ``queries`` predicted with the constants fitted on the other sources' runs: its
    calibration entry (the ids each fit used, the profile used, the efficiency, the factor, the constant MFU) and
    the scored runs. ``logcs``: factor -> run id -> log(predicted / measured) at each efficiency of GRID."""
    cal = calibrate([q for q in queries if q.source_id != s], PROFILES[s], logcs, source_of)
    return cal, [score(q, curves[q.id], cal, logcs) for q in queries if q.source_id == s]


def loso(queries: list[Query], curves: dict[str, Curve]) -> dict:
    """Leave-one-source-out: each source predicted with constants fitted on the other sources only.

    The constants: one matmul efficiency per software-stack profile, and one non-matmul time factor shared by all
    (FACTOR_GRID), both fitted on the other sources. Returns ``scored`` (one :class:`Scored` per run),
    ``calibration`` (source -> the ids each fit used, the profile used, the efficiency, the factor and the
    constant MFU), ``fitted`` (profile -> efficiency on all runs) and ``fitted_factor`` (the factor on all runs).
    """
    source_of = {q.id: q.source_id for q in queries}
    logcs = log_curves(queries, curves)
    sources = dict.fromkeys(q.source_id for q in queries)
    held = {s: predict_source(s, queries, logcs, curves, source_of) for s in sources}
    calibration = {s: cal for s, (cal, _) in held.items()}
    scored = [run for _, runs in held.values() for run in runs]
    fitted_factor = fit_factor(queries, logcs, source_of) if queries else 1.0
    logc = logcs[fitted_factor]
    fitted = {p: e for p, e in _profile_fit(queries, logc, source_of).items() if p is not None} if queries else {}
    in_sample = [math.exp(log_error_at(logc[s.query.id], fitted[s.query.profile])) - 1 for s in scored]
    return dict(scored=scored, calibration=calibration, fitted=fitted, fitted_factor=fitted_factor, in_sample=in_sample)


def headline(v: dict) -> dict:
    """The figures the docs quote: model and both constant baselines on the scored runs."""
    sc = v["scored"]
    mfus = [s.query.measured_mfu for s in sc]
    hind = best_constant(mfus) if mfus else float("nan")
    return dict(
        runs=len(sc), sources=len({s.query.source_id for s in sc}), gpus=sorted({s.query.gpu for s in sc}),
        fp8=sum(s.query.precision == "fp8" for s in sc), moe=sum(s.query.moe for s in sc),
        model=summary([s.error for s in sc]), constant=summary([s.constant_error for s in sc]),
        hindsight=summary([hind / m - 1 for m in mfus]), hindsight_mfu=hind,
        source_weighted_within=statistics.mean(
            summary([s.error for s in sc if s.query.source_id == src])["within"]
            for src in dict.fromkeys(s.query.source_id for s in sc)) if sc else float("nan"),
    )

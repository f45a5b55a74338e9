"""The whole validation in the order it runs: records -> queries and skips -> curves -> leave-one-source-out scores.

:func:`validate` is what scripts/make_validation.py renders: the headline with the discrete facts chosen inside the
loop (:mod:`.factchoice`), and beside it every fact as stated, each fact left out alone and all left out.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, cast

from ..errors import CatalogError, InputError
from ..planner.stacks import DEFAULT_STACK, PLANNER, STACKS
from .adapter import FACTOR_GRID, Curve, capabilities, predict, predict_at, unsupported
from .factchoice import FactCurves, loso_chosen
from .facts import FACTS
from .runs import DEDUP_RULE, SCORED_APART, Query, Skip, deduplicate, load_runs, to_query
from .scoring import Scored, calibrate, log_curves, log_error_at, loso, score


def validate(records: list[dict] | None = None, ids: set[str] | None = None) -> dict:
    """The whole validation: queries, skips, curves, leave-one-source-out scores. ``ids`` limits the runs."""
    records = load_runs() if records is None else records
    if ids is not None:
        records = [r for r in records if r["id"] in ids]
    by_id = {r["id"]: r for r in records}
    caps = capabilities()
    queries, skipped = [], []
    for r in records:
        q = to_query(r)
        if isinstance(q, Query) and (why := unsupported(q, caps)):
            q = Skip(q.id, q.source_id, why)
        if isinstance(q, Skip):
            skipped.append(q)
        else:
            queries.append(q)
    # every release is predicted once: the default rule's runs, the earlier rule's (recipe+layout) and no rule at all
    wide, _ = deduplicate(queries, by_id, "recipe+layout")
    kept, dups = deduplicate(queries, by_id, DEDUP_RULE)
    skipped += dups
    kept_ids = {q.id for q in kept}
    curves, refused = {}, set()
    for q in queries:
        try:
            curves[q.id] = predict(q, caps)
        except (InputError, CatalogError) as e:
            refused.add(q.id)
            if q.id in kept_ids:
                skipped.append(Skip(q.id, q.source_id, f"the planner refuses it: {e}"))

    def headline_runs(qs: list[Query]) -> list[Query]:
        return [q for q in qs if q.id not in refused and q.gpu_label not in SCORED_APART]

    ok = headline_runs(kept)
    apart = [q for q in kept if q.id not in refused and q.gpu_label in SCORED_APART]
    empty: dict[str, Any] = dict(scored=[], calibration={}, fitted={}, fitted_factor=1.0, in_sample=[])
    stated = loso(ok, curves) if ok else empty
    # the headline: the discrete facts chosen inside the loop (factchoice); beside it every fact as stated, each
    # fact left out alone, and all left out (the neutral model)
    fc = FactCurves(by_id, curves, caps)
    fact_ids = [f.id for f in FACTS]
    result: dict[str, Any] = dict(stated, **loso_chosen(ok, fc, fact_ids)) if ok else dict(empty)

    def scored(qs: list[Query], cs: dict[str, Curve]) -> dict[str, Any]:
        return loso(qs, cs) if qs else dict(scored=[])

    variants = {name: scored([fc.query(q.id, off) for q in ok], {q.id: fc.curve(q.id, off) for q in ok})
                for name, off in [*((f, frozenset({f})) for f in fact_ids), ("neutral", frozenset(fact_ids))]}
    neutral = [fc.query(q.id, frozenset(fact_ids)) for q in ok]  # every fact left out
    result.update(stated=stated, fact_variants=variants, at_defaults=at_defaults(neutral, caps),
                  at_planner=at_defaults(neutral, caps, PLANNER))
    for q in apart:  # a run scored apart takes the facts its source's calibration chose
        if cal := result["calibration"].get(q.source_id):
            curves[q.id] = fc.curve(q.id, frozenset(cal["facts_off"]))
    other_rules = {rule: scored(headline_runs(runs), curves)
                   for rule, runs in (("recipe+layout", wide), ("every release", queries))}
    result.update(records=len(records), skipped=skipped, capabilities=sorted(caps),
                  apart=score_apart(apart, ok, curves, cast(dict, result["calibration"])), other_rules=other_rules)
    return result


def score_apart(apart: list[Query], ok: list[Query], curves: dict[str, Curve], calibration: dict) -> list[Scored]:
    """Runs kept out of the headline and of every calibration (SCORED_APART), each predicted with the constants
    its source gets in the leave-one-source-out calibration, or fitted on all headline runs if the source has
    none there (its profile's runs, else all pooled)."""
    source_of = {q.id: q.source_id for q in ok}
    logcs = log_curves(ok + apart, curves)
    return [score(q, curves[q.id], calibration.get(q.source_id) or calibrate(ok, q.profile, logcs, source_of), logcs)
            for q in apart]


# Settings of a run that describe its machine, not its software: kept when a run is predicted at the defaults
SYSTEM_SETTINGS = ("scaleout_gb_s", "memory_gb", "hbm_tb_s")


def at_defaults(queries: list[Query], caps: frozenset[str], stack: str = DEFAULT_STACK) -> dict[str, Any]:
    """Each run predicted as a user without ``--stack`` gets it: the layout the source states, the default stack's
    facts, its non-matmul factor and its matmul efficiency (``xlcalc plan`` with no ``--stack`` plans with
    DEFAULT_STACK); ``stack`` 'planner': the planner's own settings (non-matmul factor 1) and the GPU catalog's
    matmul efficiency instead. Nothing is fitted here. ``errors``: run id -> predicted / measured - 1; ``skipped``:
    ids with no efficiency (a GPU without a catalog efficiency at the planner's settings)."""
    from ..planner import Settings
    from ..planner.hardware import resolve_hardware

    errors: dict[str, float] = {}
    skipped: list[str] = []
    factor = 1.0 if stack == PLANNER else float(STACKS[stack].settings.get("elementwise_factor", 1.0))
    assert factor in FACTOR_GRID, f"the curves hold no non-matmul factor {factor}"
    for q in queries:
        plain = replace(q, settings=(("stack", stack),) + tuple((k, v) for k, v in q.settings if k in SYSTEM_SETTINGS))
        eff = resolve_hardware(q.gpu, Settings(**dict(plain.settings))).matmul_efficiency
        if eff is None:
            skipped.append(q.id)
            continue
        curve = predict_at(plain, caps, factor)
        errors[q.id] = math.exp(log_error_at([math.log(t / q.measured_tokens_s) for t in curve], eff)) - 1
    return dict(errors=errors, skipped=skipped, stack=stack)

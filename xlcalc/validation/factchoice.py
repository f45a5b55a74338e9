"""Leave one source out with the discrete facts of :data:`xlcalc.validation.facts.FACTS` chosen inside the loop.

For each held-out source, each fact is chosen as a fitted constant is: on the other sources only. With the other
facts as stated, the fact is set as stated or left out (its neutral state), whichever gives the smaller
source-weighted mean squared log error on the other sources' runs, the constants (each profile's matmul efficiency
and the shared non-matmul factor) refitted for each state (:func:`xlcalc.validation.scoring.factor_and_loss`). A
tie, and a fact that applies to no run of the other sources, leaves it out: nothing outside the held-out source
speaks for it. The held-out source is then predicted with the facts so chosen and the constants fitted on the other
sources in that state.
"""

from __future__ import annotations

import random
import statistics

from .adapter import Curve, predict
from .runs import Query, to_query
from .scoring import TOLERANCE, Scored, factor_and_loss, log_curves, predict_source

__all__ = ["FactCurves", "loso_chosen", "bootstrap_sources"]


class FactCurves:
    """Runs' queries and prediction curves in any state of the facts, each computed once per (run, the facts left
    out that apply to it)."""

    def __init__(self, records: dict[str, dict], base: dict[str, Curve], caps: frozenset[str]):
        self._records, self._caps = records, caps
        self._curves: dict[tuple[str, frozenset[str]], Curve] = {(i, frozenset()): c for i, c in base.items()}
        self._queries: dict[tuple[str, frozenset[str]], Query] = {}

    def query(self, rid: str, off: frozenset[str]) -> Query:
        key = self._key(rid, off)
        if key not in self._queries:
            q = to_query(self._records[rid], key[1])
            assert isinstance(q, Query), rid  # the validation kept the record: it gave a query as stated
            self._queries[key] = q
        return self._queries[key]

    def curve(self, rid: str, off: frozenset[str]) -> Curve:
        key = self._key(rid, off)
        if key not in self._curves:
            self._curves[key] = predict(self.query(rid, off), self._caps)
        return self._curves[key]

    def _key(self, rid: str, off: frozenset[str]) -> tuple[str, frozenset[str]]:
        """The run and the facts of ``off`` that apply to it (read from its query as stated)."""
        return rid, (off & frozenset(self.query(rid, frozenset()).facts) if off else off)

    def logcs(self, queries: list[Query], off: frozenset[str]) -> dict[float, dict[str, list[float]]]:
        """factor -> run id -> log(predicted / measured) at each efficiency of GRID, the facts ``off`` left out."""
        return log_curves(queries, {q.id: self.curve(q.id, off) for q in queries})


def loso_chosen(queries: list[Query], fc: FactCurves, facts: list[str]) -> dict:
    """Leave one source out with ``facts`` chosen inside the loop (module docstring).

    Returns ``scored`` and ``calibration`` as :func:`xlcalc.validation.scoring.loso` does, each calibration entry
    with ``facts_off`` (the facts left out for that source) and ``choices`` (fact -> why it was set so).
    """
    source_of = {q.id: q.source_id for q in queries}
    scored: list[Scored] = []
    calibration = {}
    for s in dict.fromkeys(q.source_id for q in queries):
        train = [q for q in queries if q.source_id != s]
        _, stated = factor_and_loss(train, fc.logcs(train, frozenset()), source_of)
        choices = {}
        for f in facts:
            if not any(f in q.facts for q in train):
                choices[f] = "no other source"
            else:
                _, without = factor_and_loss(train, fc.logcs(train, frozenset({f})), source_of)
                choices[f] = "left out" if without <= stated else "as stated"
        state = frozenset(f for f, why in choices.items() if why != "as stated")
        qs = [fc.query(q.id, state) for q in queries]
        curves = {q.id: fc.curve(q.id, state) for q in queries if q.source_id == s}
        cal, held = predict_source(s, qs, fc.logcs(qs, state), curves, source_of)
        calibration[s] = cal | dict(facts_off=sorted(state), choices=choices)
        scored += held
    return dict(scored=scored, calibration=calibration)


def bootstrap_sources(errors_by_source: dict[str, list[float]], draws: int = 2000,
                      seed: int = 0) -> dict[str, tuple[float, float]]:
    """5th and 95th percentiles of the median |error| and of the share within TOLERANCE over ``draws`` resamples
    of the sources with replacement (each drawn source brings all its runs; the errors are the held-out ones, not
    refitted per resample)."""
    rng = random.Random(seed)
    sources = sorted(errors_by_source)
    medians, within = [], []
    for _ in range(draws):
        errs = [abs(e) for s in (rng.choice(sources) for _ in sources) for e in errors_by_source[s]]
        medians.append(statistics.median(errs))
        within.append(sum(e <= TOLERANCE for e in errs) / len(errs))

    def span(xs: list[float]) -> tuple[float, float]:
        xs = sorted(xs)
        return xs[int(0.05 * (len(xs) - 1))], xs[int(0.95 * (len(xs) - 1))]

    return dict(median=span(medians), within=span(within))

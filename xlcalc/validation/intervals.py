"""The range the planner gives with every prediction, from the validation's leave-one-source-out errors.

Each scored run's log error, log(predicted / measured MFU), is a prediction made with constants fitted on the
other sources only. Their 10th and 90th percentiles (``statistics.quantiles(..., n=10, method="inclusive")``,
every run counting once, as the headline counts them; one pooled pair, not one per stack profile) bound the
measured MFU of a new prediction: measured in [predicted x exp(-q90), predicted x exp(-q10)], an 80% range.

That the range covers 80% of runs it was not built from is measured, not assumed (:func:`nested_coverage`): for
each held-out source the percentiles are taken over the OTHER sources' errors only, and the held-out source's
runs are checked against them.

The pair the planner uses lives in ``xlcalc/data/mfu_interval.json`` with the errors it was computed
from and their provenance; ``scripts/make_validation.py`` writes it (atomically) and its ``--check`` refuses a
stale one.
"""

from __future__ import annotations

import json
import math
import statistics

from ..planner.ranges import INTERVAL_JSON as INTERVAL_JSON  # the file scripts/make_validation.py writes

LEVEL = 0.8


def log_errors(v: dict, errors: dict[str, float] | None = None) -> list[dict]:
    """One row per scored run: id, source, GPU and log(predicted / measured MFU) of the held-out prediction
    (``errors``: run id -> predicted / measured - 1 of another prediction, only the runs it holds)."""
    errors = {s.query.id: s.error for s in v["scored"]} if errors is None else errors
    return [dict(id=s.query.id, source_id=s.query.source_id, gpu=s.query.gpu_label,
                 log_error=math.log(1 + errors[s.query.id])) for s in v["scored"] if s.query.id in errors]


def bounds(errors: list[float]) -> tuple[float, float]:
    """(10th, 90th) percentile of log errors, the inclusive method of :func:`statistics.quantiles`."""
    if len(errors) < 2:
        raise ValueError("an interval needs at least two errors")
    d = statistics.quantiles(errors, n=10, method="inclusive")
    return d[0], d[-1]


def nested_coverage(rows: list[dict]) -> dict:
    """Out-of-sample coverage: each source's runs against the percentiles of the other sources' errors.

    Returns ``overall`` (share of all runs covered), ``by_source`` and ``by_gpu`` ({name: (covered, runs)}) and
    ``bounds`` ({source: (q10, q90) of the others})."""
    per_source = {s: bounds([r["log_error"] for r in rows if r["source_id"] != s])
                  for s in dict.fromkeys(r["source_id"] for r in rows)}
    hits = [per_source[r["source_id"]][0] <= r["log_error"] <= per_source[r["source_id"]][1] for r in rows]

    def tally(key: str) -> dict[str, tuple[int, int]]:  # {name: (covered, runs)}, in the order the names come
        groups: dict[str, list[bool]] = {}
        for r, hit in zip(rows, hits):
            groups.setdefault(r[key], []).append(hit)
        return {k: (sum(g), len(g)) for k, g in groups.items()}

    return dict(overall=sum(hits) / len(rows), covered=sum(hits), runs=len(rows), by_source=tally("source_id"),
                by_gpu=tally("gpu"), bounds=per_source)


def interval_data(v: dict) -> dict:
    """What mfu_interval.json holds: the level, the pooled percentiles, the coverage and the errors behind them."""
    rows = log_errors(v)
    q10, q90 = bounds([r["log_error"] for r in rows])
    cov = nested_coverage(rows)
    return {
        "level": LEVEL,
        "q10_log_error": q10,
        "q90_log_error": q90,
        "method": "10th and 90th percentiles (statistics.quantiles, n=10, inclusive) of log(predicted / measured "
                  "MFU) over every run scored leave-one-source-out, each run once, all stack profiles pooled",
        "provenance": "scripts/make_validation.py from xlcalc/data/reference/throughput_runs.json "
                      "(docs/validation.md, 'Range of a prediction')",
        "out_of_sample_coverage": cov["overall"],
        "runs": len(rows),
        "sources": len(cov["by_source"]),
        "without_stack": without_stack(v),
        "planner": without_stack(v, "at_planner"),
        "log_errors": rows,
    }


def without_stack(v: dict, key: str = "at_defaults") -> dict | None:
    """The range of a plan without ``--stack``: percentiles of the errors ``xlcalc plan`` makes with no stack named
    on the published runs (the default stack's facts and efficiency, nothing fitted per source; ``key``
    "at_planner": the planner's own settings and the catalog's efficiency, ``--stack planner``), and their coverage
    measured as for the stack range (each source against the other sources' percentiles)."""
    rows = log_errors(v, (v.get(key) or {}).get("errors", {}))  # each run as predicted without a stack
    if len(rows) < 2:
        return None
    q10, q90 = bounds([r["log_error"] for r in rows])
    cov = nested_coverage(rows)
    return {"q10_log_error": q10, "q90_log_error": q90, "out_of_sample_coverage": cov["overall"],
            "runs": len(rows), "sources": len(cov["by_source"]),
            "median_log_error": statistics.median(r["log_error"] for r in rows)}


def as_text(data: dict) -> str:
    """The JSON file's text: one line per key, one line per run's error."""
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in data.items() if k != "log_errors"]
    rows = [f"  {json.dumps(r)}" for r in data["log_errors"]]
    return "{\n" + "\n".join(lines) + '\n "log_errors": [\n' + ",\n".join(rows) + "\n ]\n}\n"

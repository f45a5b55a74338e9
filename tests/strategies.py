"""Hypothesis strategies that generate allowed values for any registered input."""

from __future__ import annotations

from hypothesis import strategies as st

from xlcalc.inputs import InputSpec, spec


def value_for(s: InputSpec) -> st.SearchStrategy:
    if s.kind == "bool":
        return st.booleans()
    if s.kind == "choice":
        return st.sampled_from(s.choices)
    if s.kind == "int":
        lo = int(s.ge if s.ge is not None else (s.gt + 1 if s.gt is not None else 0))
        hi = int(s.le if s.le is not None else max(lo + 8, abs(s.example or 8) * 4))
        return st.integers(min_value=lo, max_value=hi)
    # floats: around the typical value, within the allowed range
    example = float(s.example or 1.0)
    lo = s.ge if s.ge is not None else (s.gt if s.gt is not None else -abs(example) * 10)
    hi = s.le if s.le is not None else (s.lt if s.lt is not None else max(abs(example) * 10, lo + 1))
    low = max(lo, example / 10 if example > 0 else lo)
    high = min(hi, example * 10 if example > 0 else hi)
    if not low < high:
        low, high = lo, hi
    return st.floats(
        min_value=low, max_value=high, allow_nan=False, allow_infinity=False,
        exclude_min=s.gt is not None and low == s.gt, exclude_max=s.lt is not None and high == s.lt,
    )


def inputs_for(params: tuple[str, ...]) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({p: value_for(spec(p)) for p in params})

"""Hypothesis strategies that generate allowed values for any registered input."""

from __future__ import annotations

import math

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


def bad_value_for(s: InputSpec) -> st.SearchStrategy:
    """Values input ``s`` must refuse: out of its range, past its upper bound, NaN/inf, text, TRUE/FALSE for
    a number, a fractional count, a percentage typed for a fraction; a word that is no choice."""
    if s.kind == "bool":
        return st.sampled_from(["maybe", "yes please", 2, -1, 0.5])
    if s.kind == "choice":
        return st.text(alphabet="xyzqw", min_size=1, max_size=8).filter(lambda t: t not in s.choices)
    options = [st.sampled_from([math.nan, math.inf, -math.inf, "abc", True])]
    low = s.gt if s.gt is not None else (s.ge if s.ge is not None else None)
    if low is not None:
        below = st.floats(max_value=low, allow_nan=False, allow_infinity=False, exclude_max=s.ge is not None,
                          min_value=low - 1e6)
        options.append(below.map(lambda v: float(math.floor(v)) if s.kind == "int" else v).filter(
            lambda v: (s.gt is not None and v <= s.gt) or (s.ge is not None and v < s.ge)))
    if s.le is not None:
        above = st.floats(min_value=s.le, max_value=s.le * 1e6 if s.le > 0 else 1e6, allow_nan=False,
                          allow_infinity=False, exclude_min=True)
        options.append(above.map(lambda v: float(math.ceil(v)) if s.kind == "int" else v).filter(lambda v: v > s.le))
    if s.kind == "int":
        lo = max(s.ge if s.ge is not None else 1, 1)
        options.append(st.integers(int(lo), int(lo) + 100).map(lambda v: v + 0.5))
    if s.is_fraction:
        options.append(st.integers(2, 100).map(float))  # a percentage typed as a whole number
    return st.one_of(options)

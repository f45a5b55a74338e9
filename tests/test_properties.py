"""Properties that must hold for all allowed inputs (hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import xlcalc as x
from xlcalc import InputError
from xlcalc.inputs import spec

params_b = st.floats(0.1, 2000)
tokens_t = st.floats(0.01, 50)
peak = st.floats(10, 5000)
mfu = st.floats(0.01, 1)
gpus = st.integers(1, 100_000)
recipe = st.tuples(st.sampled_from([2, 4]), st.sampled_from([2, 4]), st.sampled_from([8, 12]))


def _days(p, d, pk, n, u):
    """6ND / (peak x MFU x GPUs x seconds per day), computed here."""
    return 6 * p * 1e9 * d * 1e12 / (pk * 1e12 * u * n * 86400)


def _within_days_bound(p, d, pk, n, u) -> bool:
    """Whether TRAIN_DAYS gives a number: past the days input's bound it refuses, naming TRAIN_DAYS."""
    if _days(p, d, pk, n, u) <= spec("days").le * (1 - 1e-9):
        return True
    if _days(p, d, pk, n, u) > spec("days").le * (1 + 1e-9):
        with pytest.raises(InputError, match="TRAIN_DAYS"):
            x.train_days(p, d, pk, n, u)
    return False


@given(params_b, tokens_t, peak, mfu, gpus, st.integers(1, 100_000))
def test_days_fall_as_gpus_rise(p, d, pk, u, n, extra):
    if _within_days_bound(p, d, pk, n, u):
        assert x.train_days(p, d, pk, n + extra, u) < x.train_days(p, d, pk, n, u)


@given(params_b, tokens_t, peak, mfu, gpus)
def test_days_times_gpus_is_gpu_hours(p, d, pk, u, n):
    if _within_days_bound(p, d, pk, n, u):
        assert math.isclose(x.train_days(p, d, pk, n, u) * n * 24, x.gpu_hours(p, d, pk, u), rel_tol=1e-12)


@given(params_b, tokens_t, peak, mfu, st.floats(1, 1000))
def test_gpus_for_a_deadline_meet_it(p, d, pk, u, days):
    exact = 6 * p * 1e9 * d * 1e12 / (pk * 1e12 * u * days * 86400)  # 6ND / (peak x MFU x seconds)
    if exact > spec("n_gpus").le * (1 + 1e-9):  # beyond the n_gpus bound: a message, not a count
        with pytest.raises(InputError, match="GPUS_FOR_DAYS"):
            x.gpus_for_days(p, d, pk, u, days)
        return
    n = x.gpus_for_days(p, d, pk, u, days)
    assume(1 <= n)
    assert math.isclose(x.train_days(p, d, pk, math.ceil(n), u), days * n / math.ceil(n), rel_tol=1e-9)
    assert x.train_days(p, d, pk, math.ceil(n), u) <= days * (1 + 1e-12)


@given(params_b, st.integers(1, 4096), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8, 16]), recipe)
def test_memory_never_rises_with_zero_stage(p, dp, tp, pp, r):
    values = [x.mem_static_gb(p, z, dp, tp, pp, *r) for z in range(4)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:]))


@given(params_b, st.integers(0, 3), st.integers(1, 4096), st.integers(1, 4096), recipe)
def test_memory_never_rises_with_data_parallel_size(p, z, dp, more, r):
    assert x.mem_static_gb(p, z, dp + more, 1, 1, *r) <= x.mem_static_gb(p, z, dp, 1, 1, *r) * (1 + 1e-12)


@given(params_b, st.integers(0, 3), st.integers(1, 512), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), recipe,
       st.sampled_from(["none", "selective", "full"]), st.booleans(), st.integers(1, 8), st.floats(0, 10))
def test_breakdown_sums_to_total(p, z, dp, tp, pp, r, rc, sp, b, overhead):
    w, g, o = r
    parts = (x.mem_weights_gb(p, z, dp, tp, pp, w), x.mem_grads_gb(p, z, dp, tp, pp, g),
             x.mem_optimizer_gb(p, z, dp, tp, pp, o))
    static = x.mem_static_gb(p, z, dp, tp, pp, w, g, o)
    assert math.isclose(sum(parts), static, rel_tol=1e-12)
    act = x.mem_act_gb(4096, b, 8192, 80, 64, tp, sp, rc)
    assert math.isclose(x.mem_total_gb(static, act, overhead), static + act + overhead, rel_tol=1e-12)


@given(st.integers(1, 16), st.sampled_from([1, 2, 4, 8]), st.booleans(), st.integers(512, 32768))
def test_recomputation_never_costs_memory(b, tp, sp, s):
    none, selective, full = (x.mem_act_gb(s, b, 8192, 80, 64, tp, sp, rc) for rc in ("none", "selective", "full"))
    assert full <= selective <= none


@given(st.integers(1, 64), st.sampled_from([2, 4, 8]), st.booleans(), st.sampled_from(["none", "selective", "full"]))
def test_activations_are_linear_in_micro_batch(b, tp, sp, rc):
    one = x.mem_act_gb(2048, 1, 12288, 96, 96, tp, sp, rc)
    assert math.isclose(x.mem_act_gb(2048, b, 12288, 96, 96, tp, sp, rc), b * one, rel_tol=1e-12)


@given(st.floats(1, 200), st.floats(0, 60), st.floats(0, 10), st.floats(0.01, 50))
def test_largest_micro_batch_fits_and_one_more_does_not(memory, static, overhead, per_sample):
    try:
        b = x.max_micro_batch(memory, static, overhead, per_sample)
    except InputError:
        return
    if b >= 1:
        assert static + overhead + b * per_sample <= memory * (1 + 1e-9)
    assert static + overhead + (b + 1) * per_sample > memory * (1 - 1e-9)


@given(st.integers(2, 64), st.integers(1, 512), st.integers(1, 8))
def test_bubble_share_is_the_bubble_over_one_plus_bubble(p, m, v):
    ratio = x.pipeline_bubble(p, m, v)
    assert math.isclose(x.pipeline_bubble_share(p, m, v), ratio / (1 + ratio), rel_tol=1e-12)

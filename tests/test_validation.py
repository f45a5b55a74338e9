"""A user mistake gets one clear message: which input, what value, what is allowed."""

from __future__ import annotations

import math

import pytest

import xlcalc as x
from xlcalc import InputError
from xlcalc.scenario import Scenario


@pytest.mark.parametrize(
    "call, name, words",
    [
        (lambda: x.train_days(70, 2, 312, 1024, 1.5), "mfu", "<= 1"),
        (lambda: x.train_days(70, 2, 312, 0, 0.4), "n_gpus", ">= 1"),
        (lambda: x.train_days(70, 2, 312, 2.5, 0.4), "n_gpus", "whole number"),
        (lambda: x.train_flops(-70, 2), "params_b", "> 0"),
        (lambda: x.train_flops("abc", 2), "params_b", "a number"),
        (lambda: x.train_flops(math.nan, 2), "params_b", "a number"),
        (lambda: x.train_flops(True, 2), "params_b", "a number"),
        (lambda: x.mem_static_gb(70, zero_stage=5), "zero_stage", "<= 3"),
        (lambda: x.mem_act_gb(4096, 1, 8192, 80, 64, tp=3), "tp", "divisor of heads = 64"),
        (lambda: x.mem_act_gb(4096, 1, 8192, 80, 64, recompute="sometimes"), "recompute", '"selective"'),
        (lambda: x.mem_act_gb(4096, 1, 8192, 80, 64, seq_parallel="maybe"), "seq_parallel", "TRUE or FALSE"),
    ],
)
def test_bad_input_names_the_input_value_and_what_is_allowed(call, name, words):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{name} = ")
    assert words in message
    assert info.value.name == name


def test_an_input_error_is_a_value_error():
    assert issubclass(InputError, ValueError)


def test_text_options_are_case_insensitive():
    assert x.mem_act_gb(4096, 1, 8192, 80, 64, recompute="Selective") == x.mem_act_gb(
        4096, 1, 8192, 80, 64, recompute="selective")


def test_whole_floats_are_accepted_for_counts():
    assert x.train_days(70, 2, 312, 1024.0, 0.4) == x.train_days(70, 2, 312, 1024, 0.4)


def test_scenario_checks_parallelism_against_the_cluster():
    with pytest.raises(InputError, match=r"n_gpus = 1000 .* multiple of TP x PP x CP = 16 \(data parallelism needs whole model replicas"):
        Scenario.build(n_gpus=1000, tp=4, pp=4)
    with pytest.raises(InputError, match="tp = 3"):
        Scenario.build(tp=3, n_gpus=3 * 4 * 8)


def test_scenario_rejects_unknown_fields_by_name():
    with pytest.raises(InputError, match="mfuu"):
        Scenario.build(mfuu=0.5)

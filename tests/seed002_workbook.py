"""What the tests of the planning workbook as built (tests/test_workbook_*.py) share: seed 002's workbook, built
once per test process, read with its formulas and with its cached values; a defined name's one cell; where the
scenario presets are; seed 002's layout; the parameters one GPU of seed 002's first pipeline stage holds.

tests/conftest.py makes the fixtures (``seed002``, ``formulas_wb``, ``values_wb``) available to every test file.
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from xlcalc.scenario import load_scenario
from xlcalc.workbook import build

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "xlcalc" / "presets"  # the scenario presets (package data)

# seed 002's layout, as its preset states it (xlcalc/presets/seed002-70b-a800.toml: TP 4 x PP 4 replicas, ZeRO-1,
# sequence parallelism, selective recompute); a scenario that leaves it out computes one GPU's (the one default)
SEED002_LAYOUT = {"tp": 4, "pp": 4, "zero_stage": 1, "seq_parallel": True, "recompute": "selective"}


def first_stage_psi_b(params_b=70, vocab=32000, hidden=8192, layers=80, pp=4, tp=4):
    """Billions of parameters one GPU of the first pipeline stage holds: its L/p layers (the model's parameters
    less the input embedding and the output layer, V x h each, spread evenly over the layers) plus the input
    embedding (Megatron puts it on the first stage), split over TP."""
    vh = vocab * hidden / 1e9
    return ((params_b - 2 * vh) / layers * (layers / pp) + vh) / tp


@pytest.fixture(scope="session")
def seed002(tmp_path_factory):
    path = tmp_path_factory.mktemp("wb") / "seed002.xlsx"
    lay = build(path, [load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    return path, lay


@pytest.fixture(scope="session")
def formulas_wb(seed002):
    return openpyxl.load_workbook(seed002[0])


@pytest.fixture(scope="session")
def values_wb(seed002):
    return openpyxl.load_workbook(seed002[0], data_only=True)


def named(wb, name):
    dests = list(wb.defined_names[name].destinations)
    assert len(dests) == 1, f"{name} names {dests}"
    sheet, at = dests[0]
    assert ":" not in at
    return wb[sheet][at.replace("$", "")]

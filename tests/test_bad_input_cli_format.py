"""The command line prints money as money ($48,966,413), large counts with separators, and no float noise,
in every command's tables and text."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from xlcalc.cli import main

COMMANDS = [
    ["estimate"], ["estimate", "--gpu", "h100", "--ranges"], ["estimate", "--model", "llama3.1-405b", "--gpu", "h100",
                                                               "--n-gpus", "16384", "--tp", "8", "--pp", "16",
                                                               "--first-stage-layers", "7", "--last-stage-layers", "7"],
    ["memory", "--model", "llama2-70b", "--gpu", "h100", "--tp", "8", "--pp", "2", "--n-gpus", "1024"],
    ["cost", "--usd-per-gpu-hour", "10", "--capex-usd-per-gpu", "15000"], ["cost", "--gpu", "h100", "--n-gpus", "16384", "--days", "54"],
    ["budget", "--budget-usd", "48966413", "--gpu", "h100"], ["budget", "--seed001-tiers"],
    ["budget", "--budget-usd", "1e8", "--gpu", "h100", "--own"],
    ["goodput", "--days", "30", "--compute-usd", "4.5e6"], ["goodput", "--n-gpus", "16384"],
    ["plan", "--model", "llama2-70b", "--gpu", "h100", "--seq-len", "4096", "--global-batch-tokens", "4194304",
     "--gpus", "512", "--top", "3"],
    ["catalog", "prices"], ["catalog", "gpus"], ["catalog", "models"],
]

NOISE = re.compile(r"(?<![\w.-])\d+\.\d{5,}(?![\w-])")                # 0.30000000000000004, 1.37953
BARE_MONEY = re.compile(r"\$\d{4,}")                                   # $48966413 (no separators)
LONG_COUNT = re.compile(r"(?<![\w.,:/$-])\d{5,}(?:\.\d+)?(?![\w.,:-])")  # 10000000.0 or 1048576 in prose
RAW_FLOAT_MONEY = re.compile(r"\$\d[\d,]*\.\d{4,}")                    # $2898390.1234


def run(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code in (0, 1), argv
    return out.getvalue()


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a))
def test_numbers_are_printed_for_people(argv):
    text = run(argv)
    for line in text.splitlines():
        if line.startswith(("id ", "source", "notes", "aliases")) or "arxiv" in line.lower():
            continue
        assert not NOISE.search(line), line
        assert not BARE_MONEY.search(line), line
        assert not RAW_FLOAT_MONEY.search(line), line
        if argv[:2] != ["catalog", "models"]:  # architecture sizes (hidden 12288) are written as papers write them
            assert not LONG_COUNT.search(line), line


def test_money_as_people_write_it():
    text = run(["budget", "--budget-usd", "48966413", "--gpu", "h100"])
    assert "Budget $48,966,413" in text

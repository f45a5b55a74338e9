"""The skip-or-fail rule of tests/requires.py: a missing tool skips a test on a laptop and fails it under CI=true."""

from __future__ import annotations

import pytest

from requires import require, require_module


@pytest.mark.parametrize("ci", ["true", "1", "TRUE"])
def test_missing_tool_fails_under_ci(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="CI=true but LibreOffice is missing"):
        require(None, "LibreOffice is missing")


@pytest.mark.parametrize("ci", [None, "", "false"])
def test_missing_tool_skips_with_its_reason_elsewhere(monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="no such module here"):
        require_module("xlcalc_no_such_module", "no such module here")


def test_present_tool_goes_on(monkeypatch):
    monkeypatch.setenv("CI", "true")
    require("/usr/bin/soffice", "LibreOffice is missing")
    assert require_module("json", "json").dumps([1]) == "[1]"

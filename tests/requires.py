"""One rule for tests that need something a machine may lack (LibreOffice, pdftotext, Pyodide, torch, a C++
compiler): on a laptop they skip and say why; under CI=true they fail, because test.sh installs every one."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def require(ok: object, what: str, *, module_level: bool = False) -> None:
    """Go on if ``ok``; else fail under CI=true, skip with ``what`` (what is missing and how to get it) otherwise."""
    if ok:
        return
    if on_ci():
        pytest.fail(f"CI=true but {what} (test.sh installs it; under CI this test may not skip)", pytrace=False)
    pytest.skip(f"{what} (./test.sh installs it)", allow_module_level=module_level)


def require_module(name: str, what: str) -> ModuleType:
    """Import ``name`` for a whole test module, under :func:`require`'s rule."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require(False, what, module_level=True)
        raise  # not reached: require() skipped or failed

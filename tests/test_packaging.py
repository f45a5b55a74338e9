"""The package installs and checks itself: which xlcalc the tests import, what the wheel ships, the
presets as package data, and the CLI from outside the repository.

./test.sh (and so CI) installs the package non-editable into .cache/test-venv and sets XLCALC_TEST_INSTALLED=1
(tests/conftest.py); under CI=true the tests must run against that installed copy.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import xlcalc
from procs import run_bounded
from xlcalc import presets

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "xlcalc"
INSTALLED = os.environ.get("XLCALC_TEST_INSTALLED") == "1"
CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _package_files() -> set[str]:
    """The checkout's package files (paths relative to xlcalc/), as git tracks them when it can."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", "xlcalc"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode()
        tracked = {f for f in out.split("\0") if f}
    except (OSError, subprocess.CalledProcessError):
        tracked = set()
    if tracked:
        return {Path(f).relative_to("xlcalc").as_posix() for f in tracked if (ROOT / f).is_file()}
    return {p.relative_to(PKG).as_posix() for p in PKG.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_tests_import_the_package_they_mean_to():
    """Under test.sh (and always under CI=true) the installed package, elsewhere this checkout's code."""
    imported = Path(xlcalc.__file__).resolve().parent
    if INSTALLED or CI:  # (test.sh's venv lives in the checkout's .cache: what counts is site-packages)
        assert imported != PKG.resolve() and "site-packages" in imported.parts, (
            f"the tests imported xlcalc from the checkout ({imported}); under CI=true they must import the "
            "installed package: run ./test.sh (it installs the package into .cache/test-venv and sets XLCALC_TEST_INSTALLED=1)")
    else:
        assert imported == PKG.resolve(), f"python -m pytest in a checkout imported {imported}, not {PKG}"


@pytest.mark.skipif(not INSTALLED, reason="runs under ./test.sh, which installs the package (always in CI)")
def test_installed_package_is_this_checkout():
    """Every file of the checkout's package is installed byte for byte, and nothing else is (no stale module)."""
    installed = Path(xlcalc.__file__).resolve().parent
    mine = _package_files()
    theirs = {p.relative_to(installed).as_posix() for p in installed.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert mine - theirs == set(), f"not installed (add them to package-data in pyproject.toml?): {sorted(mine - theirs)}"
    assert theirs - mine == set(), f"installed but not in the checkout (stale build?): {sorted(theirs - mine)}"
    differ = [f for f in sorted(mine) if (installed / f).read_bytes() != (PKG / f).read_bytes()]
    assert differ == [], f"installed files differ from the checkout (run ./test.sh again): {differ}"


def _setuptools_builds_wheels() -> bool:
    """A setuptools that builds wheels by itself (70.1+, the test extra installs one) is at hand."""
    try:
        major, minor = (int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (70, 1)


def test_wheel_ships_the_package_and_its_data(tmp_path):
    """A wheel built from the checkout holds every package file: code, catalogs, records, presets."""
    src = tmp_path / "src"
    files = _package_files()
    for rel in [*(f"xlcalc/{f}" for f in files), "pyproject.toml", "README.md"]:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes((ROOT / rel).read_bytes())
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
           "-w", str(tmp_path / "dist"), str(src)]
    if _setuptools_builds_wheels():
        cmd.insert(cmd.index("--no-deps"), "--no-build-isolation")  # no download: the setuptools at hand
    build = run_bounded(cmd, cpu_s=600)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (tmp_path / "dist").glob("xlcalc-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        shipped = {n.removeprefix("xlcalc/") for n in zf.namelist() if n.startswith("xlcalc/")}
        metadata = next(zf.read(n).decode() for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        entry = next(zf.read(n).decode() for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
    assert files - shipped == set(), f"missing from the wheel (package-data in pyproject.toml): {sorted(files - shipped)}"
    for needed in ("presets/seed002-70b-a800.toml", "data/gpus.toml", "data/reference/published.json", "py.typed"):
        assert needed in shipped
    assert "Requires-Python: >=3.11" in metadata  # tomllib
    assert "xlcalc = xlcalc.cli:main" in entry


def test_presets_are_package_data():
    """The scenario presets live in xlcalc/presets only (one copy) and load through importlib.resources."""
    on_disk = sorted(p.stem for p in (PKG / "presets").glob("*.toml"))
    assert presets.names() == on_disk and "seed002-70b-a800" in on_disk
    stray = sorted(p.name for p in (ROOT / "templates").glob("*.toml"))
    assert stray == [], f"scenario presets belong in xlcalc/presets/ (package data), not templates/: {stray}"
    sc = presets.load("seed002-70b-a800.toml")
    assert (sc.params_b, sc.tokens_t, sc.n_gpus, sc.mfu) == (70, 2, 1024, 0.4)  # seed 002 §7.3
    assert presets.find("../catalog.py") is None and presets.find("") is None


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The xlcalc command as a user runs it: the installed script, or python -m xlcalc on this checkout."""
    env = dict(os.environ)
    if INSTALLED:
        script = Path(sys.executable).with_name("xlcalc")
        assert script.exists(), f"the installed console script is missing: {script}"
        cmd = [str(script), *args]
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        cmd = [sys.executable, "-m", "xlcalc", *args]
    return run_bounded(cmd, cpu_s=300, cwd=cwd, env=env)


def test_cli_works_outside_the_repository(tmp_path):
    """estimate, catalog and workbook (a shipped preset by name) from a directory outside the checkout."""
    est = _cli("estimate", "--params-b", "70", "--tokens-t", "2", "--peak-tflops", "312", "--n-gpus", "1024",
               "--mfu", "0.4", "--json", cwd=tmp_path)
    assert est.returncode == 0, est.stderr
    assert json.loads(est.stdout)["results"]["Train_Days"] == pytest.approx(76.08, abs=0.005)  # seed 002 §7.3
    cat = _cli("catalog", "gpus", "h100", cwd=tmp_path)
    assert cat.returncode == 0 and "989.4" in cat.stdout, cat.stderr  # H100 SXM dense BF16, NVIDIA datasheet
    wb = _cli("workbook", "-o", "p.xlsx", "--scenario", "seed000-100b-h100", cwd=tmp_path)
    assert wb.returncode == 0, wb.stderr
    assert zipfile.is_zipfile(tmp_path / "p.xlsx") and "seed 000" in wb.stdout
    bad = _cli("workbook", "-o", "q.xlsx", "--scenario", "no-such-preset", cwd=tmp_path)
    assert bad.returncode == 2 and "seed002-70b-a800" in bad.stderr and "Traceback" not in bad.stderr

#!/usr/bin/env bash
# Run the test suite on a fresh Debian machine: installs what the tests need, then runs pytest.
#   ./test.sh            all tests
#   ./test.sh -k memory  pytest arguments pass through
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}

# The tests run against the package as a user installs it: built from this checkout and installed
# (not editable) into a virtual environment of its own, .cache/test-venv (git ignores .cache), so nothing
# else on the machine (nor a .venv of your own) is touched and nothing beside the checkout is used.
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "test.sh: xlcalc needs Python 3.11 or newer ($("$PY" -V 2>&1)); set PYTHON=python3.11 or newer"; exit 1
fi
VENV=.cache/test-venv
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p .cache
  "$PY" -m venv "$VENV" || { echo "test.sh: python3 -m venv failed; install python3-venv (apt-get install python3-venv)"; exit 1; }
fi
PY=$VENV/bin/python

# Debian packages the tests need: installed with apt when missing (as root, or through sudo);
# elsewhere the tests that need them skip with a reason (never when CI=true).
apt_updated=
apt_install() {  # apt_install WHAT PACKAGE...
  local what=$1; shift
  local sudo=
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=sudo; else sudo=none; fi
  fi
  if [ "$sudo" = none ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: $what not found and cannot be installed here; its tests will skip (they run when CI=true)."
    return 0
  fi
  echo "test.sh: installing $* (Debian) ..."
  if [ -z "$apt_updated" ]; then $sudo apt-get update -qq; apt_updated=1; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# LibreOffice (headless Calc) recomputes the planning workbook in the tests.
if ! command -v soffice >/dev/null 2>&1 && ! command -v libreoffice >/dev/null 2>&1; then
  apt_install LibreOffice libreoffice-calc-nogui
fi

# --- BEGIN xlwings Lite test setup (tests/test_lite_pyodide.py) --------------------------------------
# A real Pyodide under node: the npm package pyodide (pinned) and the Pyodide wheels of
# templates/lite/requirements.txt from PyPI, cached in .cache/pyodide (git ignores it) so that the
# test itself runs offline. xlwings is left out: xlwings Lite brings its own and the test stubs it.
PYODIDE_VERSION=314.0.7
PYODIDE_CACHE=.cache/pyodide
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install node/npm nodejs npm
fi
lite_setup() {
  if [ "$(node -p "require('./$PYODIDE_CACHE/node_modules/pyodide/package.json').version" 2>/dev/null)" != "$PYODIDE_VERSION" ]; then
    mkdir -p "$PYODIDE_CACHE"
    (cd "$PYODIDE_CACHE" && npm install --no-audit --no-fund --silent "pyodide@$PYODIDE_VERSION" >/dev/null) || return 1
  fi
  # the wheel platform of this Pyodide (e.g. pyemscripten_2026_0_wasm32, CPython 3.14), from its lock file
  local platform python
  read -r platform python < <("$PY" -c 'import json, sys
info = json.load(open(sys.argv[1]))["info"]
print("pyemscripten_%s_%s" % (info["abi_version"], info["arch"]), ".".join(info["python"].split(".")[:2]))' \
    "$PYODIDE_CACHE/node_modules/pyodide/pyodide-lock.json") || return 1
  grep -v -i -E '^[[:space:]]*(#|$|xlwings[[:space:]]*$)' templates/lite/requirements.txt > "$PYODIDE_CACHE/requirements.txt"
  rm -rf "$PYODIDE_CACHE/wheels"
  "$PY" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    --platform "$platform" --python-version "$python" --implementation cp --abi "cp${python/./}" \
    -r "$PYODIDE_CACHE/requirements.txt" -d "$PYODIDE_CACHE/wheels" || return 1
}
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  lite_setup || echo "test.sh: could not fetch pyodide $PYODIDE_VERSION or its wheels (offline?); the Pyodide test will skip (it fails when CI=true)."
fi
# --- END xlwings Lite test setup ---------------------------------------------------------------------

# --- BEGIN PDF text tools (tests/test_workbook_print.py) -----------------------------------------------
# pdftotext (poppler-utils) reads the text of the workbook's PDF print-out in the tests.
if ! command -v pdftotext >/dev/null 2>&1; then
  apt_install pdftotext poppler-utils
fi
# --- END PDF text tools ----------------------------------------------------------------------------

# A C++ compiler: torch.compile's CPU backend builds its kernels with it (tests/test_memory_loss_torch.py).
if ! command -v g++ >/dev/null 2>&1 && ! command -v c++ >/dev/null 2>&1; then
  apt_install "a C++ compiler" g++
fi

# The package built once into a wheel (.cache/wheel), installed with its test extras (pytest, hypothesis, ruff,
# mypy, ...), then that wheel again so that the test venv holds exactly this checkout's code (the version number
# does not change between edits). build/ is setuptools' scratch directory: a stale one could put deleted modules
# into the wheel.
rm -rf build .cache/wheel
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps --wheel-dir .cache/wheel .
WHEEL=$(echo .cache/wheel/xlcalc-*.whl)
"$PY" -m pip install -q --disable-pip-version-check "$WHEEL[test]"
"$PY" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$WHEEL"
rm -rf build

# PyTorch judges the activation formulas (tests/test_activations_torch.py; the 'torch' extra):
# `pip install torch==2.13.0` takes the CPU build pip is configured with. Skipped when torch is
# already importable, so a second run costs nothing. Without torch those tests skip, except under CI=true.
if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
  "$PY" -m pip install -q --disable-pip-version-check torch==2.13.0 \
    || echo "test.sh: torch==2.13.0 could not be installed; the PyTorch activation tests will skip (they fail when CI=true)."
fi

# Lint and type checks (configured in pyproject.toml: ruff's rules, mypy strict on the engine); any
# finding fails the run.
echo "test.sh: ruff check"
"$PY" -m ruff check --quiet .
echo "test.sh: mypy"
"$PY" -m mypy

# pytest imports xlcalc from the test venv's site-packages, not from the checkout (tests/conftest.py;
# tests/test_packaging.py asserts it): PYTHONSAFEPATH keeps the working directory off sys.path.
export XLCALC_TEST_INSTALLED=1 PYTHONSAFEPATH=1
exec "$PY" -m pytest "$@"

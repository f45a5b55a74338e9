#!/usr/bin/env bash
# Run the test suite on a fresh Debian machine: installs what the tests need, then runs pytest.
#   ./test.sh            all tests
#   ./test.sh -k memory  pytest arguments pass through
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}

# A system Python that refuses pip installs (PEP 668, e.g. Debian's own python3): use a virtual environment.
if "$PY" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv || { echo "test.sh: python3 -m venv failed; install python3-venv (apt-get install python3-venv)"; exit 1; }
  fi
  PY=.venv/bin/python
fi

# LibreOffice (headless Calc) recomputes the planning workbook in the tests.
if ! command -v soffice >/dev/null 2>&1 && ! command -v libreoffice >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing libreoffice-calc-nogui (Debian) ..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libreoffice-calc-nogui >/dev/null
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libreoffice-calc-nogui >/dev/null
  else
    echo "test.sh: LibreOffice not found and cannot be installed here; its tests will skip (they run when CI=true)."
  fi
fi

"$PY" -m pip install -q --disable-pip-version-check -e ".[test]"
exec "$PY" -m pytest "$@"

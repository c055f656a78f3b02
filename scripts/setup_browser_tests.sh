#!/usr/bin/env bash
# Installs what the live playground's browser test needs: Debian's chromium and the pinned
# Python `playwright` package (which drives the system chromium through executable_path).
# Never runs `playwright install`: that downloads browser builds and fails offline.
#
# Usage: scripts/setup_browser_tests.sh [PYTHON]   (default: python3 on PATH; CI passes its venv's)
# Idempotent and quick when everything is already there. Exits non-zero only when an install
# that was needed failed, so CI stops with a clear message instead of skipping the test.
set -euo pipefail

PYTHON="${1:-python3}"
PLAYWRIGHT_PIN="playwright==1.65.2"  # keep in step with the `test` extra in pyproject.toml

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup_browser_tests: chromium is missing and apt-get is not available; install Chromium by hand" >&2
    exit 1
  fi
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup_browser_tests: installing chromium from Debian"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
echo "setup_browser_tests: $(/usr/bin/chromium --version 2>/dev/null | head -n1)"

if ! "$PYTHON" -c "import playwright.sync_api" >/dev/null 2>&1; then
  echo "setup_browser_tests: installing $PLAYWRIGHT_PIN"
  "$PYTHON" -m pip install -q "$PLAYWRIGHT_PIN"
fi
"$PYTHON" -c "import importlib.metadata as m; print('setup_browser_tests: playwright', m.version('playwright'))"

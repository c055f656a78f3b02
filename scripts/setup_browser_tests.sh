#!/usr/bin/env bash
# Installs what the live playground's browser test needs: Debian's chromium and the pinned
# Python `playwright` package (which drives the system chromium through executable_path).
# Never runs `playwright install`: that downloads browser builds and fails offline.
#
# Usage: scripts/setup_browser_tests.sh [PYTHON]   (default: python3 on PATH; CI passes its venv's)
# Idempotent and quick when everything is already there. Where chromium cannot be installed
# (not root and no password-less sudo, or no apt-get) it says so and the browser tests skip
# with that reason; an install that was tried and failed exits non-zero, so CI (root) stops
# with a clear message instead of skipping.
set -euo pipefail

PYTHON="${1:-python3}"
PLAYWRIGHT_PIN="playwright==1.65.2"  # keep in step with the `test` extra in pyproject.toml

CHROMIUM="${INFILL_CHROMIUM:-/usr/bin/chromium}"  # INFILL_CHROMIUM: the tests' own check of this script
if [ ! -x "$CHROMIUM" ]; then
  echo "setup_browser_tests: installing chromium from Debian"
  status=0
  "$(dirname "$0")/apt_install.sh" chromium || status=$?
  case $status in
    0) ;;
    3) echo "setup_browser_tests: SKIPPING the browser tests: installing chromium needs root or password-less sudo" \
            "(run 'sudo apt-get install chromium' once, then make test again)" >&2
       exit 0 ;;
    4) echo "setup_browser_tests: SKIPPING the browser tests: chromium is missing and this system has no apt-get" \
            "(install Chromium at /usr/bin/chromium by hand)" >&2
       exit 0 ;;
    *) echo "setup_browser_tests: apt-get install chromium failed (exit $status)" >&2
       exit 1 ;;
  esac
fi
echo "setup_browser_tests: $("$CHROMIUM" --version 2>/dev/null | head -n1)"

if ! "$PYTHON" -c "import playwright.sync_api" >/dev/null 2>&1; then
  echo "setup_browser_tests: installing $PLAYWRIGHT_PIN"
  "$PYTHON" -m pip install -q "$PLAYWRIGHT_PIN"
fi
"$PYTHON" -c "import importlib.metadata as m; print('setup_browser_tests: playwright', m.version('playwright'))"

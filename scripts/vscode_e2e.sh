#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code (code-server), from nothing:
# system packages, a tiny test model, the .vsix, code-server and playwright-core, then
# editors/vscode/e2e/vscode.e2e.test.mjs. Exits non-zero on any failure.
#
#   scripts/vscode_e2e.sh
#
# Environment:
#   PYTHON         Python with infill installed (default: .venv/bin/python, else python3).
#                  Its bin directory must hold the `infill` console script.
#   E2E_ARTIFACTS  where screenshots and logs go (default: editors/vscode/e2e/artifacts)
#
# Needs: Node 20 + npm (for the build), the npm registry and Debian's packages.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EXT="$ROOT/editors/vscode"
E2E="$EXT/e2e"
export E2E_ARTIFACTS="${E2E_ARTIFACTS:-$E2E/artifacts}"
started=$SECONDS

log() { echo "[vscode-e2e $((SECONDS - started))s] $*"; }
die() { echo "[vscode-e2e] FAILED: $*" >&2; exit 1; }

# -- 1. system packages: Chromium for playwright, Kerberos headers for code-server's native modules
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  status=0
  "$ROOT/scripts/apt_install.sh" "${missing[@]}" || status=$?
  case $status in
    0) ;;
    3|4) echo "[vscode-e2e] SKIPPED: the VS Code end-to-end test needs ${missing[*]} from Debian, and installing them" \
              "needs root or password-less sudo with apt-get (run 'sudo apt-get install ${missing[*]}' once)" >&2
         exit 0 ;;
    *) die "apt-get install ${missing[*]} failed (exit $status)" ;;
  esac
fi

# -- 2. infill itself, and a tiny random model so the test does not depend on a trained one
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=$(command -v python3); fi
fi
# Absolute: the path is handed to VS Code, whose working directory is not ours.
PYTHON="$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")"
INFILL_BIN_DIR=$(dirname "$PYTHON")
if ! "$PYTHON" -c 'import infill_lsp.server' 2>/dev/null || [ ! -x "$INFILL_BIN_DIR/infill" ]; then
  log "installing infill into $PYTHON"
  "$PYTHON" -m pip install -q -e "$ROOT"
fi
[ -x "$INFILL_BIN_DIR/infill" ] || die "no infill script in $INFILL_BIN_DIR after pip install"
WORK=$(mktemp -d /tmp/infill-vscode-e2e-model.XXXXXX)
e2e_install=
cleanup() {
  if [ -n "$e2e_install" ]; then kill "$e2e_install" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
MODEL_DIR="$WORK/model"
PYTHONPATH="$ROOT" "$PYTHON" -c 'import sys; from lab.fixtures.tiny_model import make_tiny_model_dir; make_tiny_model_dir(sys.argv[1])' "$MODEL_DIR" \
  || die "could not make the tiny test model (lab.fixtures.tiny_model.make_tiny_model_dir)"
log "tiny model in $MODEL_DIR"

# npm ci is skipped when node_modules was installed from this very lockfile (reruns on one machine).
npm_ci() {
  local dir=$1 stamp="$1/node_modules/.infill-lock-sha"
  local sha; sha=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sha" ]; then
    log "npm ci in ${dir#"$ROOT"/}: up to date"
    return
  fi
  log "npm ci in ${dir#"$ROOT"/}"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$sha" >"$stamp"
}

# -- 3. code-server (needs Node 24, which the npm package node@24 provides) and playwright-core.
# Their install is the slowest step (minutes, mostly downloads): it runs while the extension builds.
npm_ci "$E2E/node24"
NODE24_BIN="$E2E/node24/node_modules/.bin"
[ "$("$NODE24_BIN/node" -p 'process.versions.node.split(".")[0]')" = 24 ] || die "node@24 did not install a Node 24"
# code-server's install script builds with the `node` and `npm` first on PATH.
(PATH="$NODE24_BIN:$PATH" npm_ci "$E2E") >"$WORK/e2e-install.log" 2>&1 &
e2e_install=$!

# -- 4. the extension: type-check, unit tests, bundle, .vsix
npm_ci "$EXT"
(cd "$EXT" && npm run --silent package) >"$WORK/package.log" 2>&1 || { cat "$WORK/package.log"; die "npm run package"; }
grep -E '^# (pass|fail)' "$WORK/package.log" | sed 's/^/[unit] /'
VSIX="$EXT/infill-vscode.vsix"
[ -f "$VSIX" ] || die "no $VSIX"
log "built $VSIX"

# -- 5. wait for code-server and playwright-core
wait "$e2e_install" || { cat "$WORK/e2e-install.log"; die "installing code-server / playwright-core"; }
cat "$WORK/e2e-install.log"

# -- 6. the test
log "running the end-to-end test (artifacts in $E2E_ARTIFACTS)"
rm -rf "$E2E_ARTIFACTS"
cd "$E2E"
E2E_NODE24="$NODE24_BIN/node" E2E_VSIX="$VSIX" E2E_INFILL="$INFILL_BIN_DIR/infill" E2E_PYTHON="$PYTHON" E2E_MODEL_DIR="$MODEL_DIR" \
  timeout 480 "$NODE24_BIN/node" --test --test-timeout=420000 vscode.e2e.test.mjs
log "passed"

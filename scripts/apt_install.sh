#!/usr/bin/env bash
# Installs Debian packages for the browser and VS Code tests: as root, or through sudo where
# it asks no password. Never prompts (make test runs unattended).
#
#   scripts/apt_install.sh PACKAGE...
#
# Exit status: 0 installed (or nothing asked), 3 neither root nor password-less sudo,
# 4 no apt-get on this system, anything else: apt-get failed. Callers skip their tests with a
# message on 3 and 4, and fail on the rest (CI runs as root: there a missing install fails).
set -euo pipefail
[ $# -gt 0 ] || exit 0
command -v apt-get >/dev/null 2>&1 || exit 4
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  exit 3
fi
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "$@" >/dev/null

#!/usr/bin/env bash
# Install what a fresh Debian machine lacks for `make test` and `make bench`.
#
# - Debian packages: load tools, nginx (calibration responder), chromium
#   (report screenshot test) and every package a stack's manifest lists
#   under [native].apt.
# - The tooling venv .venv from the lock file requirements-dev.txt
#   (hash-checked).
#
# Safe to run again: it installs only what is missing and reinstalls the venv
# only when the lock file changed. Language toolchains (Go, JDK, Maven,
# Python) are not installed here: a stack whose toolchain is absent is
# skipped and listed as such.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_ROOT/.venv"
PYTHON="${PYTHON:-python3}"

APT_BASE=(wrk apache2-utils nginx-light chromium util-linux procps iproute2 curl)

say() { printf '[bootstrap] %s\n' "$*"; }

manifest_apt_packages() {
  # [native].apt lists from every servers/*/server.toml, read with tomllib.
  "$PYTHON" - "$REPO_ROOT" <<'EOF'
import sys, tomllib, pathlib
root = pathlib.Path(sys.argv[1])
packages = set()
for path in root.glob("servers/*/server.toml"):
    if path.parent.name.startswith("_"):
        continue
    data = tomllib.loads(path.read_text())
    packages.update(data.get("native", {}).get("apt", []))
print(" ".join(sorted(packages)))
EOF
}

install_apt() {
  local wanted missing=()
  read -r -a wanted <<<"${APT_BASE[*]} $(manifest_apt_packages)"
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    return # all present
  fi
  if [[ $(id -u) -ne 0 ]]; then
    say "missing Debian packages: ${missing[*]}"
    say "run as root, or: sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The Debian nginx package starts a server on port 80; the harness runs its
  # own instance with a generated config, so the system one is not needed.
  if command -v service >/dev/null && [[ " ${missing[*]} " == *" nginx"* ]]; then
    service nginx stop >/dev/null 2>&1 || true
  fi
}

install_venv() {
  local lock="$REPO_ROOT/requirements-dev.txt" stamp="$VENV/.lock-sha256"
  local digest
  digest="$(sha256sum "$lock" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$digest" ]]; then
    return # up to date
  fi
  say "creating tooling venv in .venv ($("$PYTHON" --version))"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --require-hashes -r "$lock"
  echo "$digest" >"$stamp"
}

install_apt
install_venv

#!/usr/bin/env bash
# Install what a fresh Debian machine lacks for `make test` and `make bench`.
#
# - Debian packages: load tools (wrk, ab, h2load), nginx (calibration responder
#   and TLS front), apache2 (the other TLS front, FRONT=apache: Apache httpd
#   with mod_ssl, mod_http2 and mod_proxy_http), openssl (run-time test
#   certificates), chromium
#   (report screenshot test) and every package a stack's manifest lists
#   under [native].apt.
# - The tooling venv .venv from the lock file requirements-dev.txt
#   (hash-checked).
# - The reports' chart library, plotly.js's partial bundle, with `npm ci` of
#   loadtest/report/plotly-bundle/ into .build/plotly-bundle/ (without npm the
#   reports inline the whole plotly.js of the venv's plotly package instead).
#
# Each package family comes from its registry or from the mirror (MIRROR,
# default .cache/mirror/): as OFFLINE says (1: all, or a list such as
# pypi,maven), else as a quick probe of each registry finds, printed here once
# (docs/offline.md). The venv comes from the mirror when pypi does. With
# OFFLINE=1 no registry is contacted: missing Debian packages are listed, not
# installed (what needs them is skipped later).
#
# Safe to run again: it installs only what is missing and reinstalls the venv
# only when the lock file changed. Language toolchains (Go, JDK, Maven,
# Python) are not installed here: a stack whose toolchain is absent is
# skipped and listed as such.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_ROOT/.venv"
PYTHON="${PYTHON:-python3}"

# valgrind: make instructions (scripts/count_instructions.py) counts with its callgrind.
APT_BASE=(wrk apache2-utils nginx-light apache2 chromium util-linux procps iproute2 curl openssl nghttp2-client openssh-server valgrind)

say() { printf '[bootstrap] %s\n' "$*"; }

# OFFLINE made explicit (the probe's answer when it was unset) and each
# offline family's package manager pointed at the mirror; only once something
# is to be installed (a machine that has everything asks no registry).
sources_chosen=
choose_sources() {
  [[ -n $sources_chosen ]] && return
  local env_lines
  env_lines="$(cd "$REPO_ROOT" && "$PYTHON" -m loadtest.packages.registries shell-env)" || exit 2
  eval "$env_lines"
  sources_chosen=1
}

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
  choose_sources
  if [[ "${OFFLINE:-}" == 1 ]]; then
    say "OFFLINE=1: not installing the missing Debian packages ${missing[*]} (what needs them is skipped)"
    return
  fi
  if [[ $(id -u) -ne 0 ]]; then
    say "missing Debian packages: ${missing[*]}"
    say "run as root, or: sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  without_service_starts apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

without_service_starts() {
  # Debian's nginx and apache2 packages start a system server on port 80;
  # the harness runs its own instances with generated configs. A policy-rc.d
  # that answers 101 ("action forbidden") keeps every package from starting
  # a service; one that was already there is left alone.
  local policy=/usr/sbin/policy-rc.d
  if [[ -e $policy ]]; then
    "$@"
    return
  fi
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  local status=0
  "$@" || status=$?
  rm -f "$policy"
  return $status
}

install_venv() {
  local lock="$REPO_ROOT/requirements-dev.txt" stamp="$VENV/.lock-sha256"
  local digest
  digest="$(sha256sum "$lock" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$digest" ]]; then
    return # up to date
  fi
  choose_sources
  local source=registry
  [[ -n "${PIP_NO_INDEX:-}" ]] && source="mirror $PIP_FIND_LINKS"
  say "creating tooling venv in .venv ($("$PYTHON" --version), packages from the $source)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --require-hashes -r "$lock" || {
    [[ -n "${PIP_NO_INDEX:-}" ]] && say "pypi from the mirror (OFFLINE=$OFFLINE): $PIP_FIND_LINKS lacks" \
      "packages of requirements-dev.txt; fill it with make mirror on a connected machine," \
      "or point MIRROR at one that has them (docs/offline.md)"
    rm -rf "$VENV"
    exit 1
  }
  echo "$digest" >"$stamp"
}

install_plotly_bundle() {
  local package="$REPO_ROOT/loadtest/report/plotly-bundle" dest="$REPO_ROOT/.build/plotly-bundle"
  local digest
  digest="$(cat "$package/package.json" "$package/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [[ -f "$dest/.lock-sha256" && "$(cat "$dest/.lock-sha256")" == "$digest" ]]; then
    return # up to date
  fi
  choose_sources
  if ! command -v npm >/dev/null; then
    say "npm not found: reports inline the whole plotly.js (4.8 MB) instead of its basic bundle"
    return
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$package/package.json" "$package/package-lock.json" "$dest/"
  if (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --silent); then
    echo "$digest" >"$dest/.lock-sha256"
  else
    say "plotly.js basic bundle not installed (npm ci failed, see above): reports inline the whole plotly.js"
    rm -rf "$dest"
  fi
}

install_apt
install_venv
install_plotly_bundle

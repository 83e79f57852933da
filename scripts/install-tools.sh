#!/usr/bin/env bash
# The tools built from source once per machine, each at an exact version and
# cached in ~/.cache/serverlab (SERVERLAB_CACHE): the Docker Compose v2 plugin
# (scripts/install-compose.sh, about 2.5 minutes on 2 cores the first time),
# and oha, the open-loop load generator (scripts/install-oha.sh, about 6-9
# minutes). `make test` runs this in the background while its first
# stages run; a cached tool takes a second.
#
# A tool whose toolchain is absent (no cargo, no go) is named and left out;
# what needs it is a named skip later. The exit status is non-zero only when a
# build that could run failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf '[install-tools] %s\n' "$*"; }
status=0

offline() { [[ "${OFFLINE:-}" == 1 || ",${OFFLINE:-}," == *,$1,* ]]; }

build() { # build NAME TOOLCHAIN FAMILY SCRIPT
  local name="$1" toolchain="$2" family="$3" script="$4" started=$SECONDS path
  if ! command -v "$toolchain" >/dev/null; then
    say "$name: skipped, $toolchain not found"
    return
  fi
  if path="$(bash "$script")"; then
    say "$name: $path ($((SECONDS - started)) s)"
  elif offline "$family"; then
    say "$name: skipped, its $family packages come from the mirror (OFFLINE=$OFFLINE), which lacks them"
  else
    say "$name: FAILED after $((SECONDS - started)) s (see above)"
    status=1
  fi
}

# Compose first: the Docker images of `make test` wait for it, and only the
# loadgen, built last, waits for oha.
build compose go go scripts/install-compose.sh
build oha cargo cargo scripts/install-oha.sh
exit $status

#!/usr/bin/env bash
# Install oha (open-loop HTTP load generator) once, at an exact version, into a
# cache folder outside the repository. A cold `cargo install` takes about
# 9 minutes on 2 cores, so an existing binary of the right version is reused
# and never rebuilt.
#
#   scripts/install-oha.sh            # install if missing, print the binary path
#   OHA_VERSION=1.16.0 scripts/install-oha.sh
set -euo pipefail

OHA_VERSION="${OHA_VERSION:-1.16.0}"
CACHE="${SERVERLAB_CACHE:-$HOME/.cache/serverlab}"
ROOT="$CACHE/oha-$OHA_VERSION"   # one cargo --root per version: versions never clash
BIN="$ROOT/bin/oha"

link() { # A stable path for the harness: $CACHE/bin/oha -> this version.
    mkdir -p "$CACHE/bin"
    ln -sfn "$BIN" "$CACHE/bin/oha"
}

if [[ -x "$BIN" ]] && "$BIN" --version 2>/dev/null | grep -q " $OHA_VERSION\b"; then
    link
    echo "$BIN"
    exit 0
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "install-oha: cargo not found; install Rust (rustup or Debian's cargo) first" >&2
    exit 1
fi

echo "install-oha: building oha $OHA_VERSION into $ROOT (about 9 minutes on 2 cores, once)" >&2
mkdir -p "$ROOT"
# --locked: the exact dependency versions from oha's own Cargo.lock.
cargo install --locked --quiet --root "$ROOT" --version "=$OHA_VERSION" oha >&2
link
echo "$BIN"

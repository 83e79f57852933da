#!/usr/bin/env bash
# Install oha (open-loop HTTP load generator) once, at an exact version, into a
# cache folder outside the repository. A cold `cargo install` takes about
# 9 minutes on 2 cores, so an existing binary of the right version is reused
# and never rebuilt.
#
#   scripts/install-oha.sh            # install if missing, print the binary path
#   OHA_VERSION=1.16.0 scripts/install-oha.sh
#   scripts/install-oha.sh --fetch    # only download the crates into CARGO_HOME (make mirror)
#
# Offline (OFFLINE=1: CARGO_HOME is the mirror's, CARGO_NET_OFFLINE=true) the
# same `cargo install` builds from the crates `--fetch` put there.
set -euo pipefail

OHA_VERSION="${OHA_VERSION:-1.16.0}"
CACHE="${SERVERLAB_CACHE:-$HOME/.cache/serverlab}"
ROOT="$CACHE/oha-$OHA_VERSION"   # one cargo --root per version: versions never clash
BIN="$ROOT/bin/oha"

# One build at a time per machine: a second caller (a test, the tools stage)
# waits here, then finds the first one's binary.
mkdir -p "$CACHE"
exec 9>"$CACHE/.install-oha.lock"
flock 9

link() { # A stable path for the harness: $CACHE/bin/oha -> this version.
    mkdir -p "$CACHE/bin"
    ln -sfn "$BIN" "$CACHE/bin/oha"
}

if [[ "${1:-}" == --fetch ]]; then
    # oha's crate (a probe project that depends on it makes cargo fetch it, and
    # its index entries), then every crate oha's own Cargo.lock pins; no build.
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/probe/src"
    printf '[package]\nname = "probe"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\noha = "=%s"\n' \
        "$OHA_VERSION" >"$work/probe/Cargo.toml"
    echo 'fn main() {}' >"$work/probe/src/main.rs"
    (cd "$work/probe" && cargo fetch --quiet)
    crate="$(find "${CARGO_HOME:-$HOME/.cargo}/registry/cache" -name "oha-$OHA_VERSION.crate" | head -1)"
    tar -xzf "$crate" -C "$work"
    (cd "$work/oha-$OHA_VERSION" && cargo fetch --locked --quiet)
    echo "install-oha: oha $OHA_VERSION and its locked crates are in ${CARGO_HOME:-$HOME/.cargo}" >&2
    exit 0
fi

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

#!/usr/bin/env bash
# Install the Docker Compose v2 CLI plugin once, at an exact version, built
# from its Go module (Compose v1 is end of life; Debian bookworm packages
# neither v2 nor buildx). The binary is cached outside the repository and
# linked into ~/.docker/cli-plugins/, where `docker compose` finds it.
#
#   scripts/install-compose.sh              # install if missing; prints the binary path
#   COMPOSE_VERSION=2.40.3 scripts/install-compose.sh
#   scripts/install-compose.sh --fetch      # only download the modules into GOMODCACHE (make mirror)
#
# `go install github.com/docker/compose/v2/cmd@vX` is refused (Compose's
# go.mod has exclude directives), so the module is downloaded through the
# Go module proxy, copied out of the read-only module cache and built there
# with its own go.sum: about 2.5 minutes on 2 cores, once.
set -euo pipefail

COMPOSE_VERSION="${COMPOSE_VERSION:-2.40.3}"
MODULE="github.com/docker/compose/v2"
CACHE="${SERVERLAB_CACHE:-$HOME/.cache/serverlab}"
BIN="$CACHE/compose-$COMPOSE_VERSION/docker-compose"
PLUGIN_DIR="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"

say() { printf '[install-compose] %s\n' "$*" >&2; }

# One build at a time per machine: a second caller waits, then finds the binary.
mkdir -p "$CACHE"
exec 9>"$CACHE/.install-compose.lock"
flock 9

installed_version() { "$1" version --short 2>/dev/null || true; }

link_plugin() {
  mkdir -p "$PLUGIN_DIR"
  ln -sf "$BIN" "$PLUGIN_DIR/docker-compose"
  echo "$BIN"
}

fetch_only=false
[[ "${1:-}" == --fetch ]] && fetch_only=true

if ! $fetch_only && [[ -x "$BIN" && "$(installed_version "$BIN")" == "$COMPOSE_VERSION" ]]; then
  link_plugin
  exit 0
fi

# The pinned version already installed as a plugin (by the user, or by this script
# with another SERVERLAB_CACHE) is used as it is: no Go needed.
if ! $fetch_only && [[ "$(docker compose version --short 2>/dev/null)" == "$COMPOSE_VERSION" ]]; then
  echo "docker compose $COMPOSE_VERSION (installed already)"
  exit 0
fi

command -v go >/dev/null || {
  say "go not found: the Compose v2 plugin is built from source (install Go 1.24 or newer)"
  exit 1
}

$fetch_only || say "building Compose v$COMPOSE_VERSION from $MODULE (about 2.5 minutes on 2 cores, once)"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# GOFLAGS is replaced so that a user's setting (e.g. -mod=mod) cannot change
# how Compose's own go.sum verifies every dependency; -modcacherw keeps a
# mirror's module cache deletable.
dir="$(cd "$work" && GOFLAGS=-modcacherw go mod download -json "$MODULE@v$COMPOSE_VERSION" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
if $fetch_only; then
  (cd "$work/src" && GOFLAGS=-modcacherw go mod download all)
  say "Compose v$COMPOSE_VERSION and the modules it builds with are in $(go env GOMODCACHE)"
  exit 0
fi
mkdir -p "$(dirname "$BIN")"
(
  cd "$work/src"
  # Version stamp as in Compose's own Makefile, so `docker compose version`
  # reports the real version instead of "dev".
  CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X $MODULE/internal.Version=v$COMPOSE_VERSION" \
    -o "$BIN.tmp" ./cmd
)
mv "$BIN.tmp" "$BIN"
say "installed $("$BIN" version)"
link_plugin

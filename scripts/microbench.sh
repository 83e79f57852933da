#!/usr/bin/env bash
# `make microbench`: the in-process microbenchmarks of the contract libraries.
#
# Each language's contract library has one, per route and input shape
# (docs/measurements/ has the figures and how they were taken). Python's is
# servers/_shared/python/bench/contract_bench.py (pyperf); it runs on the
# tooling venv's CPython and, where pyenv has CPython 3.13 (what the Python
# stacks' images run), on that too, from a venv this script makes under
# .cache/microbench/ with pyperf from the lock file requirements-dev.txt.
# Other languages join as one more function below.
#
#   scripts/microbench.sh [PYPERF_OPTION...]   e.g. --rigorous, --fast, --only wsgi:
#
# Results: .build/microbench/<language>-<interpreter>.json (pyperf's format:
# `python -m pyperf compare_to old.json new.json`). Each run is pinned to
# MICROBENCH_CPU (default: the last CPU) with taskset when it is present.
# A benchmark, not a test: nothing here passes or fails on a figure.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
PY="${PY:-$REPO_ROOT/.venv/bin/python}"
OUT="$REPO_ROOT/.build/microbench"
CACHE="$REPO_ROOT/.cache/microbench"
CPU="${MICROBENCH_CPU:-$(($(nproc) - 1))}"

say() { printf '[microbench] %s\n' "$*"; }

pinned() { # pinned COMMAND...: on one CPU, so the scheduler does not move it mid-run
  if command -v taskset >/dev/null; then
    taskset -c "$CPU" "$@"
  else
    "$@"
  fi
}

# pyperf and what it needs, with their hashes, cut from the lock file: the
# 3.13 venv needs nothing else from it.
pyperf_requirements() {
  awk '/^[a-z0-9_.-]+==/ { keep = ($1 ~ /^(pyperf|psutil)==/) } keep && !/^ *#/' requirements-dev.txt
}

# A CPython 3.13 venv with pyperf, made once per lock file; prints its python.
python313_venv() {
  local base venv="$CACHE/cpython3.13" digest
  base="$(servers/_shared/python/find-python 3.13 2>/dev/null)" || return 1
  "$base" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' || return 1
  digest="$(pyperf_requirements | sha256sum | cut -d' ' -f1)"
  if [[ ! -x "$venv/bin/python" || "$(cat "$venv/.lock-sha256" 2>/dev/null)" != "$digest" ]]; then
    # Each package family from its registry or the mirror, as bootstrap chooses (docs/offline.md).
    eval "$("$PY" -m loadtest.host.registries shell-env)"
    say "creating $venv ($("$base" --version), pyperf from requirements-dev.txt)" >&2
    rm -rf "$venv"
    "$base" -m venv "$venv"
    "$venv/bin/pip" install -q --require-hashes -r <(pyperf_requirements) >&2
    echo "$digest" >"$venv/.lock-sha256"
  fi
  echo "$venv/bin/python"
}

# python_bench PYTHON PYPERF_OPTION...: the Python contract library on one interpreter.
python_bench() {
  local python="$1" name
  shift
  name="python-$("$python" -c 'import platform, sys; print(f"{sys.implementation.name}{platform.python_version()}")')"
  say "$name: servers/_shared/python/bench/contract_bench.py on CPU $CPU"
  pinned "$python" servers/_shared/python/bench/contract_bench.py --quiet \
    -o "$OUT/$name.json" "$@"
}

python_benchmarks() {
  [[ -x "$PY" ]] || { say "no tooling venv at $PY (make bootstrap makes it)"; return 1; }
  python_bench "$PY" "$@"
  local py313
  if [[ "$("$PY" -c 'import sys; print(sys.version_info[:2] == (3, 13))')" == True ]]; then
    return # the tooling venv is already 3.13
  elif py313="$(python313_venv)"; then
    python_bench "$py313" "$@"
  else
    say "SKIPPED python on CPython 3.13: not found on PATH or under pyenv (servers/_shared/python/find-python)"
  fi
}

mkdir -p "$OUT"
rm -f "$OUT"/*.json # pyperf appends to an existing file
python_benchmarks "$@"
say "results in ${OUT#"$REPO_ROOT/"}/"

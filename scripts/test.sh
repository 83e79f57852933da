#!/usr/bin/env bash
# `make test`: every test suite of the project, as stages, and one table at the end.
#
# The order follows what each stage needs (docs/measurements/test-suite.md has
# the timings):
#   1. bootstrap, then in the background the tools built once per machine
#      (Compose v2, oha: scripts/install-tools.sh, cached in ~/.cache/serverlab)
#      and the Docker images of step 5;
#   2. the fast tests (no server, no build) on both cores;
#   3. each language's unit tests and each stack's own tests; `check` builds and
#      verifies every stack, so that later stages only start them;
#   4. the end-to-end Python tests (real servers), three workers on the two
#      cores, each instance on a free port;
#   5. side by side, the stages that mostly wait: the TLS fronts, the hostile
#      inputs, the Docker smoke and the remote smoke (on the images of step 4);
#   6. with nothing else running: the timing tests, the soak and the benches.
# A failing stage does not stop the others, so one run shows every problem.
# Every stage has a time budget: past it, the stage is stopped and counted
# failed, so the suite always ends within CI's limit. A stage whose toolchain
# is missing is a named skip. The exit code is non-zero when any stage failed.
#
# `scripts/test.sh --fast` (make test-fast) runs steps 1 and 2 alone, without
# the background builds: a minute or two once bootstrapped, the first check of a
# change to the harness or a contract library.
set -uo pipefail
case "${1:-}" in
  "") fast=0 ;;
  --fast) fast=1 ;;
  *) echo "usage: scripts/test.sh [--fast]" >&2 && exit 2 ;;
esac

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
# shellcheck source=scripts/test-stages.sh
source scripts/test-stages.sh
PY="$REPO_ROOT/.venv/bin/python"

stage bootstrap 1500 bash scripts/bootstrap.sh
if [[ ! -x "$PY" ]]; then
  stage_report
  echo "test: the tooling venv could not be made; nothing else can run"
  exit 1
fi
# Each package family from its registry or the mirror, as bootstrap chose and printed
# (OFFLINE, else a probe of each registry; docs/offline.md): made explicit for every stage.
env_lines="$("$PY" -m loadtest.packages.registries shell-env 2>/dev/null)" || exit 2
eval "$env_lines"
rm -f .build/last-check.json .build/last-stack-tests.json .build/last-remote-smoke.json \
  .build/last-docker-smoke.json \
  "$STAGE_LOG_DIR"/last-*.json

# Several instances of one stack may run at once (the end-to-end tests on two
# cores, a stage beside a background job): each takes a free port.
export SERVERLAB_PORTS=free

# The table of every stage, the stacks each skipped, the failed stages' last lines; the
# exit code.
finish() {
  stage_report
  local status=$?
  # Stacks the check and stack-tests stages skipped for a missing toolchain, one by one,
  # and the parts of the Docker and remote smokes this machine cannot run.
  "$PY" - "$STAGE_LOG_DIR" <<'EOF'
import json, pathlib, sys
for stage in ("check", "stack-tests", "docker-smoke", "remote-smoke"):
    path = pathlib.Path(sys.argv[1], f"last-{stage}.json")
    for o in json.loads(path.read_text()) if path.is_file() else []:
        if o["status"] == "skipped":
            what = f": {o['what']}" if "what" in o else f" of stack {o['stack']}"
            print(f"SKIPPED  {stage}{what}: {o['reason']}")
EOF
  stage_failures
  echo "======================================================================"
  echo "test: ${STAGE_COUNTS[0]} passed, ${STAGE_COUNTS[1]} failed, ${STAGE_COUNTS[2]} skipped"
  exit $status
}

(( fast )) || background tools 1500 bash scripts/install-tools.sh
# The Docker path: the engine, the stand-in base images and the images the
# Docker smoke uses, built in the background from here until the Docker smoke:
# on a fresh machine they take about 20 minutes (docker.io, the stand-ins'
# packages, Maven's dependencies inside the image). Compose comes first from the
# tools job (one build at a time: this job waits for it); the loadgen, built
# last, waits for oha the same way. The daemon started here is stopped at the
# end, also after Ctrl-C.
docker_images() {
  bash scripts/install-compose.sh >/dev/null && bash scripts/docker-daemon.sh start &&
    "$PY" -m loadtest docker smoke --images-only
}
docker_unavailable="$("$PY" -m loadtest docker preflight)"
if [[ -z "$docker_unavailable" ]] && (( ! fast )); then
  trap 'bash scripts/docker-daemon.sh stop' EXIT
  background docker-images 2400 docker_images
fi

python_test_dirs() {
  local dirs=(contracts/tests loadtest/tests servers/_shared/python/tests)
  # A stack's tests/ folder in another language (axum's Rust tests) runs in stack-tests.
  for dir in servers/*/tests; do
    [[ -d "$dir" && ! "$dir" == servers/_* ]] && compgen -G "$dir/*.py" >/dev/null && dirs+=("$dir")
  done
  for dir in "${dirs[@]}"; do [[ -d "$dir" ]] && echo "$dir"; done
}
mapfile -t PYTHON_TESTS < <(python_test_dirs)
# What a stage skipped, kept as it ended: later tests run the same commands
# on throw-away stacks and write the same file.
keep_skips() { cp ".build/last-$1.json" "$STAGE_LOG_DIR/" 2>/dev/null || true; }
# pytest.ini names the groups; -n 2: one worker per core. The end-to-end tests
# take three, as they wait on builds and servers a fifth of the time
# (docs/measurements/test-suite.md). For them,
# --maxschedchunk 1: each worker takes a test at a time, so that the long
# ones, started first (conftest.py), are shared out instead of queued on one.
pytest_group() { # pytest_group MARKER_EXPRESSION [PYTEST ARGS...]
  local expression="$1"
  shift
  "$PY" -m pytest -q -p no:cacheprovider --durations=15 -m "$expression" "$@" "${PYTHON_TESTS[@]}"
}

stage manifests 60 "$PY" -m loadtest validate
stage python-fast 600 pytest_group "not e2e and not timing" -n 2
(( fast )) && finish

# The shared Go module; each Go stack's own tests run in stack-tests.
go_tests() {
  local status=0 mod
  for mod in $(find servers/_shared -name go.mod | sort); do
    echo "--- go test $(dirname "$mod")"
    (cd "$(dirname "$mod")" && go vet ./... && go test -count=1 ./...) || status=1
  done
  return $status
}
if command -v go >/dev/null; then
  stage go-unit 600 go_tests
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
  stage csharp-unit 900 csharp_tests
else
  skip csharp-unit "dotnet not found: the ASP.NET Core stacks are skipped too"
fi
if [[ -f servers/_shared/java/pom.xml ]]; then
  if command -v mvn >/dev/null && command -v java >/dev/null; then
    # The JDK the stacks run with natively (the newest 21+; see with-jdk).
    stage java-unit 900 servers/_shared/java/with-jdk mvn -B -ntp -f servers/_shared/java/pom.xml verify
  else
    skip java-unit "mvn or java not found"
  fi
fi
# Every stack's own tests, as its manifest or language family says
# (loadtest/core/families.py); a stack whose toolchain is missing is named below.
stage stack-tests 1200 "$PY" -m loadtest stack-tests
keep_skips stack-tests
# Builds every stack once (cached by source digest in .build/<stack>/) and
# verifies it; every later stage starts these builds. Two at a time: a build
# waits on the network or a single-threaded step as often as on a core, and
# the checker mostly waits on the server.
stage check 1500 "$PY" -m loadtest check --jobs 2
keep_skips check

# oha and Compose are needed from here on.
await tools

# The Docker tests run in docker-smoke, once their images are built; an
# end-to-end test that judges a figure (also marked timing) in python-timing.
stage python-e2e 1500 pytest_group "e2e and not docker and not timing" -n 3 --maxschedchunk 1

# Side by side next: stages that mostly wait and judge no figure (vmstat put the
# cores 81% idle in hostile, 67% in remote-smoke, 31% in docker-smoke), each
# instance on a free port; the test hosts have their own network stacks. The
# native ones start while the last images build.
# One stack behind each TLS front: the whole contract over HTTPS and HTTP/2
# (gin, or the first of the others whose toolchain this machine has).
front_stack="$("$PY" -m loadtest list --first-runnable gin,uvloop,fastify)"
background check-front-nginx 300 "$PY" -m loadtest check --servers "$front_stack" --front nginx
background check-front-apache 300 "$PY" -m loadtest check --servers "$front_stack" --front apache
background hostile 900 "$PY" -m loadtest hostile --quick
# Real images on local stand-in base images, then stacks on a test host (a
# network namespace with its own sshd and dockerd) loaded from two others over
# Docker contexts, shipping the same images.
if [[ -n "$docker_unavailable" ]]; then
  skip docker-smoke "$docker_unavailable"
  skip remote-smoke "$docker_unavailable"
else
  await docker-images
  if [[ $(id -u) -ne 0 ]]; then
    skip remote-smoke "needs root: network namespaces, sshd and dockerd per test host"
  else
    background remote-smoke 1200 "$PY" -m loadtest remote-smoke
  fi
  stage docker-smoke 1500 "$PY" -m loadtest docker smoke
  keep_skips docker-smoke
fi
for job in check-front-nginx check-front-apache hostile remote-smoke; do
  [[ -n "${BACKGROUND_PID[$job]:-}" ]] && await "$job"
done
keep_skips remote-smoke

# From here on the machine must be quiet: nothing runs in the background.
stage python-timing 1200 pytest_group "timing"

# The soak offers a constant rate with oha (scripts/install-oha.sh, through
# install-tools.sh). Where it cannot be built (no cargo, or crates.io read from
# a mirror that lacks oha's crates) the stage is a named skip.
if oha_error="$(bash scripts/install-oha.sh 2>&1 >/dev/null)"; then
  stage soak 600 "$PY" -m loadtest soak --servers gin,sanic,spring-webflux --duration 30s
else
  skip soak "oha cannot be built here (OFFLINE=$OFFLINE): ${oha_error##*$'\n'}"
fi
# Native on purpose: the Docker path has its own stage above.
stage bench-smoke 600 "$PY" -m loadtest bench --profile smoke --servers gin,sanic --runner native
# The 2019 static experiment, shortened: HTTPS + HTTP/2 with h2load, TTFB.
stage bench-static-tls 600 "$PY" -m loadtest bench --profile static-tls-smoke \
  --servers nginx-static,apache-static --runner native

finish

"""`make build|up|down|logs|compose|docker-lint|docker-smoke`: the Docker side.

The runner itself (images, hardened containers, the loadgen) lives in
loadtest/runners/docker.py; this module is what the make targets call:
building images, one stack left running, hadolint, the compose file, and
`smoke`, the CI path behind `make docker-smoke`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RESULTS_ROOT, read_records, write_json_atomic
from loadtest.core import manifest as manifests
from loadtest.core.errors import StepError
from loadtest.core.knobs import parse_cpus, parse_memory, split_list
from loadtest.core.manifest import REPO_ROOT
from loadtest.core.runner import Limits
from loadtest.runners import compose as compose_file
from loadtest.runners.conformance import check_stack, summary_table, write_outcomes
from loadtest.runners.container import compose_args, docker
from loadtest.runners.docker import (
    LOADGEN_SKIPPED_ENV,
    DockerRunner,
    DockerServer,
    compose_problem,
    daemon_problem,
    local_daemon,
    offline_problem,
)
from loadtest.runners.engine import Engine
from loadtest.runners.hadolint import hadolint_binary
from loadtest.runners.loadgen import LoadgenClient

# What the smoke skipped on this machine (no loadgen image without cargo, say),
# listed at the end of make test.
LAST_OUTCOME = REPO_ROOT / ".build" / "last-docker-smoke.json"


def dockerfiles() -> list[Path]:
    """Every Dockerfile of the project: stacks, families, loadgen, stand-in recipes."""
    found = sorted(REPO_ROOT.glob("servers/*/Dockerfile"))
    found += sorted(REPO_ROOT.glob("servers/_shared/*/Dockerfile"))
    found.append(compose_file.LOADGEN_DOCKERFILE)
    found.extend(sorted((REPO_ROOT / "docker" / "standins").glob("*.Dockerfile")))
    return found


def lint_dockerfiles(paths: list[Path] | None = None) -> list[str]:
    """hadolint errors (not warnings) per Dockerfile; empty when all are clean."""
    binary = hadolint_binary()
    problems = []
    for path in paths or dockerfiles():
        result = subprocess.run(
            [binary, "--failure-threshold", "error", "--no-color", str(path)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            problems.append(f"{path.relative_to(REPO_ROOT)}:\n{result.stdout}{result.stderr}")
    return problems


def compose_config_problem() -> str | None:
    """Validate docker-compose.yml with the real Compose v2 CLI (every profile)."""
    result = docker(*compose_args("--profile", "*", "config", "--quiet"), check=False, timeout=60)
    if result.returncode != 0:
        return (result.stderr or result.stdout).strip()
    return None


def smoke(servers: list[str] | None, bench: bool = True) -> int:
    """`make docker-smoke`: a daemon if none answers (stopped again at the end,
    by PID), then lint, validate, stand-ins, images, conformance, tests, bench."""
    stacks = manifests.load_all(servers or smoke_default_servers())
    with local_daemon("docker-smoke", stacks) as ready:
        return smoke_steps(servers, bench) if ready else 1


def smoke_unavailable_reason() -> str | None:
    """Why this machine cannot run the Docker smoke at all, or None: checked before
    anything is installed or started, so that `make test` can list it as a skip."""
    if problem := offline_problem(manifests.load_all(smoke_default_servers())):
        return problem
    if shutil.which("docker") is None and os.geteuid() != 0:
        return "docker CLI not found, and installing Debian's docker.io needs root"
    compose_here = shutil.which("docker") is not None and compose_problem() is None
    if not compose_here and shutil.which("go") is None:
        return ("Compose v2 is not installed and go is not found to build it "
                "(scripts/install-compose.sh)")  # fmt: skip
    return None


def cmd_preflight(args: argparse.Namespace) -> int:
    print(smoke_unavailable_reason() or "")
    return 0


def smoke_steps(servers: list[str] | None, bench: bool) -> int:
    failures: list[str] = []
    started = time.monotonic()

    def stage(title: str) -> None:
        print(f"\n--- docker-smoke: {title} ({time.monotonic() - started:.0f} s)", flush=True)

    problem = daemon_problem() or compose_problem()
    if problem:
        print(f"docker-smoke: {problem}", file=sys.stderr)
        return 1
    stage("compose file is current and valid")
    if compose_file.render() != compose_file.COMPOSE_FILE.read_text(encoding="utf-8"):
        failures.append("docker-compose.yml is stale: run `make compose`")
    if config := compose_config_problem():
        failures.append(f"docker compose config: {config}")
    stage("hadolint (errors fail)")
    for problem in lint_dockerfiles():
        failures.append(f"hadolint: {problem}")
    print("\n".join(f for f in failures) or "ok", flush=True)

    selected = manifests.load_all(servers or smoke_default_servers())
    runner = standin_runner()
    no_loadgen = runner.loadgen_unavailable_reason()
    skipped = [{"status": "skipped", "what": LOADGEN_PARTS, "reason": no_loadgen}] if no_loadgen else []
    stage("stand-in base images (cached)")
    failures.extend(ensure_standins(runner, selected, loadgen=not no_loadgen))

    outcomes = []
    for manifest in selected:
        stage(f"{manifest.name}: image build and conformance in the container")
        outcomes.append(check_stack(runner, manifest))
    write_outcomes(outcomes)
    print()
    print(summary_table(outcomes))
    failures.extend(f"{o.stack}: {o.status}: {o.reason}" for o in outcomes if o.status != "passed")
    passed = [o.stack for o in outcomes if o.status == "passed"]

    stage("loadgen image")
    failures.extend(skip_said(no_loadgen) if no_loadgen else build_loadgen(runner))

    stage("Docker tests: limits and hardening on real containers")
    env = {**os.environ, "SERVERLAB_DOCKER_TESTS": "1", "SERVERLAB_DOCKER_STACKS": ",".join(passed),
           LOADGEN_SKIPPED_ENV: no_loadgen or ""}  # fmt: skip
    tests = sorted(str(p) for p in (REPO_ROOT / "loadtest" / "tests").glob("test_docker*.py"))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=REPO_ROOT,
        env=env,
    )
    if result.returncode != 0:
        failures.append("Docker tests failed (see above)")

    if bench:
        stage("smoke bench: Docker runner, load from the loadgen container, one stack a language")
        by_language: dict[str, str] = {}
        for manifest in selected:
            if manifest.name in passed:
                by_language.setdefault(manifest.language, manifest.name)
        stacks = list(by_language.values())
        failures.extend(skip_said(no_loadgen) if no_loadgen else smoke_bench(stacks))

    stage("done")
    write_json_atomic(LAST_OUTCOME, skipped)
    for part in skipped:
        print(f"SKIPPED {part['what']}: {part['reason']}")
    if failures:
        print("\ndocker-smoke FAILED:")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print(f"\ndocker-smoke passed: {', '.join(passed)} in {time.monotonic() - started:.0f} s")
    return 0


def standin_runner() -> DockerRunner:
    """The smoke's runner. Every runner from here on, also in the tests and the
    bench of the smoke, builds on the stand-ins: no official image can be pulled."""
    os.environ["SERVERLAB_BASE_IMAGES"] = "standin"
    os.environ["SERVERLAB_DOCKER_PORTS"] = "free"
    return DockerRunner(base_images="standin")


def ensure_standins(
    runner: DockerRunner, selected: list[manifests.Manifest], loadgen: bool = True
) -> list[str]:
    """The stand-in base images of the loadgen and of each stack (cached); the failures."""
    failures = []
    wanted = [(compose_file.LOADGEN_DOCKERFILE, None)] if loadgen else []
    wanted += [(compose_file.dockerfile_path(m), m) for m in selected]
    for dockerfile, manifest in wanted:
        try:
            refs = runner.base_image_refs(dockerfile, manifest)
            print(dockerfile.relative_to(REPO_ROOT), refs, flush=True)
        except StepError as exc:
            failures.append(exc.explain())
            print(exc.explain(), flush=True)
    return failures


# What the smoke leaves out where the loadgen image cannot be built here.
LOADGEN_PARTS = "the loadgen image, the Docker tests that load from it and the smoke bench"


def skip_said(reason: str) -> list[str]:
    """A part of the smoke this machine cannot run: said, and no failure."""
    print(f"SKIPPED: {reason}", flush=True)
    return []


def build_loadgen(runner: DockerRunner) -> list[str]:
    try:
        runner.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
        print("built serverlab/loadgen", flush=True)
        return []
    except StepError as exc:
        print(exc.explain(), flush=True)
        return [exc.explain()]


def smoke_images(servers: list[str] | None) -> int:
    """`docker smoke --images-only`: the stand-ins and every image the smoke uses,
    built and nothing started, so that `make test` builds them while other
    stages run; the smoke then finds them in Docker's cache."""
    problem = daemon_problem() or compose_problem()
    if problem:
        print(f"docker-smoke: {problem}", file=sys.stderr)
        return 1
    selected = manifests.load_all(servers or smoke_default_servers())
    runner = standin_runner()
    failures = ensure_standins(runner, selected, loadgen=False)
    for manifest in selected:
        try:
            runner.build(manifest)
            print(f"[{manifest.name}] image built", flush=True)
        except StepError as exc:
            failures.append(exc.explain())
            print(exc.explain(), flush=True)
    # The loadgen last: its oha stand-in waits for the host's oha build
    # (scripts/install-oha.sh, one at a time), which may still be running.
    if no_loadgen := runner.loadgen_unavailable_reason():
        skip_said(no_loadgen)
    else:
        failures.extend(ensure_standins(runner, [], loadgen=True))
        failures.extend(build_loadgen(runner))
    return 1 if failures else 0


# Unless SERVERS says otherwise: one stack per language, and bjoern for a
# forked WSGI server beside sanic's event loop. A cold run (stand-ins and
# images built from nothing) must fit in `make test`; SERVERS=all builds and
# checks every stack.
SMOKE_DEFAULT = ("gin", "sanic", "bjoern", "spring-webflux")


def smoke_default_servers() -> list[str]:
    present = set(manifests.stack_names())
    return [name for name in SMOKE_DEFAULT if name in present]


# The Docker path is what this bench proves (containers, the loadgen, the ceiling
# beside them), so a fixed body and the computed route are enough: every
# scenario's body is checked in the containers by the conformance step above
# and measured natively by `make test`'s bench-smoke.
SMOKE_BENCH_SCENARIOS = ("hello", "workday")


def smoke_bench(stacks: list[str]) -> list[str]:
    """`loadtest bench --runner docker --profile smoke`, then check that every
    measurement's load came from the loadgen container."""
    if not stacks:
        return ["no stack passed its checks: nothing to benchmark"]
    probe = subprocess.run(
        [sys.executable, "-m", "loadtest", "bench", "--help"], cwd=REPO_ROOT, capture_output=True
    )
    if probe.returncode != 0:
        print("`loadtest bench` is not present: the containers were checked for conformance only")
        return []
    before = set(RESULTS_ROOT.glob("*/")) if RESULTS_ROOT.is_dir() else set()
    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "bench", "--runner", "docker", "--profile", "smoke",
         "--servers", ",".join(stacks), "--scenarios", ",".join(SMOKE_BENCH_SCENARIOS)],
        cwd=REPO_ROOT,
        env=dict(os.environ),
    )  # fmt: skip
    if result.returncode != 0:
        return [f"docker smoke bench exited {result.returncode}"]
    runs = [p for p in RESULTS_ROOT.glob("*/") if p not in before and (p / RESULTS_FILE).is_file()]
    if len(runs) != 1:
        return [f"docker smoke bench: expected one new run under {RESULTS_ROOT}, found {len(runs)}"]
    measured = [r for r in read_records(runs[0] / RESULTS_FILE) if r.get("kind") == "measurement"]
    elsewhere = sorted({r.get("client") for r in measured} - {LoadgenClient.where})
    if not measured or elsewhere:
        return [f"docker smoke bench: load not (only) from the loadgen container: {elsewhere}"]
    print(f"docker smoke bench: {len(measured)} measurements, all from the loadgen container "
          f"({runs[0].relative_to(REPO_ROOT)})")  # fmt: skip
    return []


def cmd_up(args: argparse.Namespace) -> int:
    """`make up SERVER=x`: the stack in its hardened container, left running."""
    manifest = manifests.load(args.server)
    runner = DockerRunner(base_images="standin" if args.standin else None)
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise StepError(manifest.name, "prerequisites", reason)
    runner.build(manifest)
    limits = Limits(
        cpus=parse_cpus(args.server_cpus) if args.server_cpus else None,
        cpu_quota=args.server_cpu_quota,
        memory=parse_memory(args.server_memory) if args.server_memory else None,
    )
    server = DockerServer(manifest, limits)
    try:
        ready = server.wait_ready(60)
    except StepError:
        server.kill()
        raise
    applied = server.applied_limits()
    print(f"{manifest.display_name} is up on {server.base_url}/ in container "
          f"{server.container_id[:12]} (ready in {ready:.1f} s)")  # fmt: skip
    print(f"  cpuset {applied['cpuset']}, CPU quota {applied['cpus'] or 'none'}, memory limit "
          f"{applied['memory_limit_bytes'] or 'none'}")  # fmt: skip
    print(f"  make logs SERVER={manifest.name}    make down")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    docker_cmd = sub.add_parser("docker", help="images, containers, lint and the Docker smoke run")
    actions = docker_cmd.add_subparsers(dest="action", required=True)
    smoke_cmd = actions.add_parser(
        "smoke", help="the CI path: stand-ins, images, conformance, bench"
    )
    smoke_cmd.add_argument(
        "--servers", help="comma-separated stacks or `all` (default: SMOKE_DEFAULT)"
    )
    smoke_cmd.add_argument("--no-bench", action="store_true")
    smoke_cmd.add_argument(
        "--images-only",
        action="store_true",
        help="build the stand-ins and the smoke's images, start nothing (make test runs it early)",
    )
    smoke_cmd.set_defaults(func=cmd_smoke)
    actions.add_parser(
        "preflight", help="print why the Docker smoke cannot run here (nothing when it can)"
    ).set_defaults(func=cmd_preflight)
    build_cmd = actions.add_parser(
        "build", help="build stack images (and loadgen) with docker compose"
    )
    build_cmd.add_argument("--servers", help="comma-separated stacks (default: all)")
    build_cmd.add_argument("--standin", action="store_true", help="use local stand-in base images")
    build_cmd.add_argument(
        "--server-host", default="", help="ship the stacks' images to this engine"
    )
    build_cmd.add_argument(
        "--client-hosts",
        default="",
        help="ship the loadgen image to these engines (comma-separated)",
    )
    build_cmd.set_defaults(func=cmd_build)
    actions.add_parser(
        "lint", help="hadolint every Dockerfile and validate docker-compose.yml"
    ).set_defaults(func=cmd_lint)
    up_cmd = actions.add_parser(
        "up", help="build if needed, start one stack's container, wait until ready"
    )
    up_cmd.add_argument("server")
    up_cmd.add_argument("--server-cpus", help="cores for the stack's cpuset, e.g. 0 or 0,1")
    up_cmd.add_argument("--server-cpu-quota", type=float, help="CFS quota in CPUs, e.g. 0.5")
    up_cmd.add_argument("--server-memory", help="memory limit, e.g. 512m")
    up_cmd.add_argument(
        "--standin", action="store_true", help="build on local stand-in base images"
    )
    up_cmd.set_defaults(func=cmd_up)
    actions.add_parser("down", help="stop and remove every serverlab container").set_defaults(
        func=cmd_down
    )
    logs_cmd = actions.add_parser("logs", help="a stack's container output")
    logs_cmd.add_argument("server")
    logs_cmd.add_argument("--follow", action="store_true")
    logs_cmd.set_defaults(func=cmd_logs)
    compose_cmd = actions.add_parser(
        "compose", help="regenerate docker-compose.yml from the manifests"
    )
    compose_cmd.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    compose_cmd.add_argument("--output", type=Path, default=compose_file.COMPOSE_FILE)
    compose_cmd.set_defaults(func=cmd_compose)


def cmd_smoke(args: argparse.Namespace) -> int:
    servers = manifests.stack_list(args.servers)
    if servers == ["all"]:
        servers = manifests.stack_names()
    if args.images_only:
        stacks = manifests.load_all(servers or smoke_default_servers())
        with local_daemon("docker-smoke --images-only", stacks) as ready:
            return smoke_images(servers) if ready else 1
    return smoke(servers, bench=not args.no_bench)


def cmd_down(args: argparse.Namespace) -> int:
    return subprocess.run(
        ["docker", *compose_args("--profile", "*", "down", "--remove-orphans")]
    ).returncode


def cmd_logs(args: argparse.Namespace) -> int:
    follow = ["--follow"] if args.follow else []
    return subprocess.run(
        ["docker", *compose_args("logs", "--no-log-prefix", *follow, args.server)]
    ).returncode


def cmd_lint(args: argparse.Namespace) -> int:
    problems = lint_dockerfiles()
    if config := compose_config_problem():
        problems.append(f"docker compose config: {config}")
    print("\n".join(problems) or f"{len(dockerfiles())} Dockerfiles clean; compose config valid")
    return 1 if problems else 0


def cmd_build(args: argparse.Namespace) -> int:
    for problem in (daemon_problem(), compose_problem()):
        if problem:
            print(problem, file=sys.stderr)
            return 1
    try:
        server = Engine.named(args.server_host)
        clients = [Engine.named(h) for h in split_list(args.client_hosts)]
    except ValueError as exc:
        print(f"build: {exc}", file=sys.stderr)
        return 2
    for engine in [server, *clients]:
        if engine.remote and (problem := engine.problem()):
            print(f"build: {problem}", file=sys.stderr)
            return 1
    runner = DockerRunner(base_images="standin" if args.standin else None, engine=server)
    status = 0
    for manifest in manifests.load_all(manifests.stack_list(args.servers)):
        try:
            changed = runner.build(manifest)
            where = f" on {server.label}" if server.remote else ""
            print(f"[{manifest.name}] image {'built' if changed else 'up to date'}{where}")
        except StepError as exc:
            print(exc.explain(), file=sys.stderr)
            status = 1
    if not args.servers or clients:
        loadgen = compose_file.image_name("loadgen")
        try:
            runner.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
            for engine in clients:
                engine.ensure_image(loadgen, "loadgen")
                print(f"[loadgen] image on {engine.label}")
        except StepError as exc:
            print(exc.explain(), file=sys.stderr)
            status = 1
    return status


def cmd_compose(args: argparse.Namespace) -> int:
    text = compose_file.render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is stale: run `make compose`", file=sys.stderr)
            return 1
        print(f"{args.output} is current")
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text.splitlines())} lines)")
    return 0

"""`make remote-smoke`: stacks on one host, load from two others, through Docker engines.

The hosts are made on this machine (loadtest/host/testhosts.py): network
namespaces joined by a bridge, each with its own sshd and dockerd, reached
as Docker contexts over SSH exactly as real machines would be. The smoke
benches two stacks on the server host with the load split over two client
hosts, then once more with NET_DELAY (and NET_LOSS) on every link, checks the
records (who served, who loaded, per-host counts that add up, latency that
shows the delay) and tears the hosts down, also after a failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records, write_json_atomic
from loadtest.commands.docker import local_daemon
from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT, load_all
from loadtest.host import testhosts
from loadtest.runners import compose as compose_file
from loadtest.runners.docker import DockerRunner

SMOKE_STACKS = ("gin", "sanic")
SMOKE_SCENARIOS = "hello,workday"
HOST_NAMES = ("server", "client1", "client2")
DEFAULT_DELAY = "5ms"
RESULTS_DIR = REPO_ROOT / ".build" / "remote-smoke" / "results"
# What the smoke skipped (no netem in this kernel, say), listed at the end of make test.
LAST_OUTCOME = REPO_ROOT / ".build" / "last-remote-smoke.json"


def register(sub: argparse._SubParsersAction) -> None:
    hosts = sub.add_parser(
        "testhosts", help="test hosts on this machine for SERVER_HOST/CLIENT_HOSTS"
    )
    hosts.add_argument("action", choices=("up", "down", "status", "env"))
    hosts.add_argument("names", nargs="*", default=list(HOST_NAMES), help="host names for up")
    hosts.add_argument("--delay", default=os.environ.get("NET_DELAY") or None)
    hosts.add_argument("--loss", default=os.environ.get("NET_LOSS") or None)
    hosts.set_defaults(func=cmd_testhosts)
    smoke = sub.add_parser(
        "remote-smoke", help="stacks on a test host, load from two others, over SSH contexts"
    )
    smoke.add_argument("--servers", default=",".join(SMOKE_STACKS))
    smoke.add_argument("--delay", default=os.environ.get("NET_DELAY") or DEFAULT_DELAY,
                       help="netem delay on every test host's link for the second pass")  # fmt: skip
    smoke.add_argument("--loss", default=os.environ.get("NET_LOSS") or None,
                       help="netem loss on every link for the second pass, e.g. 0.1%%")  # fmt: skip
    smoke.set_defaults(func=cmd_remote_smoke)


def cmd_testhosts(args: argparse.Namespace) -> int:
    """`make testhosts-up` / `-down`, and `env`: the PATH line that lets docker reach them."""
    try:
        if args.action == "up":
            if problem := testhosts.prerequisite_problem():
                print(f"testhosts: {problem}", file=sys.stderr)
                return 1
            hosts = testhosts.TestHosts.up(args.names, delay=args.delay, loss=args.loss)
            for host in hosts.hosts:
                print(f"{host.name}: {host.address}, Docker context {host.context}")
            print(f"for docker and make bench in this shell:\n  {env_line(hosts)}")
        elif args.action == "down":
            testhosts.down()
        elif args.action == "status":
            print(testhosts.status())
        elif hosts := testhosts.TestHosts.load():
            print(env_line(hosts))
        else:
            print("testhosts: none are up (make testhosts-up)", file=sys.stderr)
            return 1
    except (StepError, ValueError) as exc:
        print(f"testhosts: {exc}", file=sys.stderr)
        return 1
    return 0


def env_line(hosts: testhosts.TestHosts) -> str:
    return f"export PATH={shlex.quote(hosts.env()['PATH'])}"


def cmd_remote_smoke(args: argparse.Namespace) -> int:
    stacks = [s for s in args.servers.split(",") if s]
    try:
        testhosts.validate_delay(args.delay)
        testhosts.validate_loss(args.loss)
    except ValueError as exc:
        print(f"remote-smoke: {exc}", file=sys.stderr)
        return 2
    if problem := testhosts.prerequisite_problem():
        print(f"remote-smoke: {problem}", file=sys.stderr)
        return 1
    with local_daemon("remote-smoke") as started:
        if not started:
            return 1
        return smoke(stacks, args.delay, args.loss)


def say(text: str) -> None:
    print(f"\n--- remote-smoke: {text}", flush=True)


def smoke(stacks: list[str], delay: str, loss: str | None) -> int:
    started = time.monotonic()
    say("images, built here on the stand-ins (cached)")
    try:
        build_images(stacks)
    except StepError as exc:
        print(exc.explain(), file=sys.stderr)
        return 1
    failures: list[str] = []
    skipped: list[dict] = []
    say(f"test hosts {', '.join(HOST_NAMES)}: namespaces, sshd, dockerd, contexts")
    try:
        hosts = testhosts.TestHosts.up(list(HOST_NAMES))
    except StepError as exc:
        print(exc.explain(), file=sys.stderr)
        return 1
    with hosts:
        env = hosts.env()
        server, *clients = (hosts[name].context for name in HOST_NAMES)
        say(f"bench: {', '.join(stacks)} on {server}, load from {' + '.join(clients)}")
        failures += bench_and_check(env, stacks, server, clients, "split")
        conditions = f"NET_DELAY={delay}" + (f" NET_LOSS={loss}" if loss else "")
        if problem := testhosts.netem_problem():
            say(f"SKIPPED the bench with {conditions}: {problem}")
            skipped.append({"what": f"the pass with {conditions}", "status": "skipped",
                            "reason": problem})  # fmt: skip
        else:
            say(f"bench again with {conditions}")
            hosts.set_conditions(delay, loss)
            failures += bench_and_check(env, stacks[:1], server, clients, "delayed", delay)
        failures += leftovers(hosts, env)
    write_json_atomic(LAST_OUTCOME, skipped)
    say(f"done in {time.monotonic() - started:.0f} s; test hosts removed")
    if failures:
        print("\nremote-smoke FAILED:")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print("\nremote-smoke passed")
    return 0


def build_images(stacks: list[str]) -> None:
    """The stacks' and the loadgen's images on this machine's engine (stand-in bases)."""
    os.environ["SERVERLAB_BASE_IMAGES"] = "standin"
    runner = DockerRunner(base_images="standin")
    runner.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
    for manifest in load_all(stacks):
        runner.build_service(manifest.stack, compose_file.dockerfile_path(manifest), manifest)


def bench_and_check(
    env: dict, stacks: list[str], server: str, clients: list[str], label: str,
    delay: str | None = None,
) -> list[str]:  # fmt: skip
    """One smoke bench through the contexts, then its records checked; the failures."""
    before = set(RESULTS_DIR.glob("*/")) if RESULTS_DIR.is_dir() else set()
    command = [
        sys.executable, "-m", "loadtest", "bench", "--runner", "docker", "--profile", "smoke",
        "--servers", ",".join(stacks), "--scenarios", SMOKE_SCENARIOS if not delay else "hello",
        "--server-host", server, "--client-hosts", ",".join(clients),
        "--results-dir", str(RESULTS_DIR),
    ]  # fmt: skip
    result = subprocess.run(command, cwd=REPO_ROOT, env=env)
    if result.returncode != 0:
        return [f"{label} bench exited {result.returncode}"]
    runs = [p for p in RESULTS_DIR.glob("*/") if p not in before]
    if len(runs) != 1:
        return [f"{label} bench: expected one new run in {RESULTS_DIR}, found {len(runs)}"]
    problems = check_run(runs[0], stacks, server, clients, delay)
    print("\n".join(f"  ✗ {p}" for p in problems) or f"  ✓ records of {runs[0].name} check out")
    return [f"{label} bench: {p}" for p in problems]


def check_run(
    folder: Path, stacks: list[str], server: str, clients: list[str], delay: str | None
) -> list[str]:
    """What a remote run must show: every host described, every record placed and summed."""
    problems = []
    info = json.loads((folder / RUN_FILE).read_text())
    hosts = info.get("hosts", {})
    described = [hosts.get("server", {}), *hosts.get("clients", [])]
    if [h.get("label") for h in described] != [server, *clients]:
        problems.append(f"run.json hosts are {[h.get('label') for h in described]}")
    for host in described:
        missing = [k for k in ("cpus", "kernel", "docker_version", "clock_offset_s") if
                   host.get(k) is None]  # fmt: skip
        if missing:
            problems.append(f"run.json: host {host.get('label')} lacks {', '.join(missing)}")
    measured = [r for r in read_records(folder / RESULTS_FILE) if r.get("kind") == "measurement"]
    if {r["stack"] for r in measured} != set(stacks):
        problems.append(f"measured {sorted({r['stack'] for r in measured})}, wanted {stacks}")
    for record in measured:
        problems += check_record(record, server, clients, delay)
    return problems


def check_record(record: dict, server: str, clients: list[str], delay: str | None) -> list[str]:
    name = f"{record['stack']} {record['scenario']}"
    result = record["result"]
    shares = result.get("details", {}).get("hosts", [])
    problems = []
    if record["status"] != "ok":
        problems.append(f"{name}: {record['status']}: {record.get('problem')}")
    if record.get("server_host") != server or record.get("client_hosts") != clients:
        problems.append(f"{name}: served by {record.get('server_host')}, loaded from "
                        f"{record.get('client_hosts')}")  # fmt: skip
    if [s.get("label") for s in shares] != clients:
        problems.append(f"{name}: per-host shares {[s.get('label') for s in shares]}")
    elif sum(s["requests"] for s in shares) != result["requests"]:
        problems.append(f"{name}: per-host requests {[s['requests'] for s in shares]} "
                        f"do not sum to {result['requests']}")  # fmt: skip
    elif sum(s["connections"] for s in shares) != record["connections"]:
        problems.append(f"{name}: per-host connections do not sum to {record['connections']}")
    if record["server"].get("source") != "docker-api" or not record["server"].get("samples"):
        problems.append(f"{name}: server usage not read through the server's engine")
    if delay:
        # Each host delays what it sends: a request and its answer cross two links.
        floor_ms = 2 * delay_ms(delay)
        p50 = result.get("latency_ms", {}).get("p50")
        if p50 is None or p50 < floor_ms:
            problems.append(f"{name}: p50 {p50} ms under NET_DELAY={delay} (at least {floor_ms})")
    return problems


def delay_ms(delay: str) -> float:
    """A netem delay ("5ms", "500us", "1s") in milliseconds."""
    value, unit = testhosts.DELAY.fullmatch(delay).groups()
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def leftovers(hosts: testhosts.TestHosts, env: dict) -> list[str]:
    """No container may outlive the bench on any test host."""
    problems = []
    for name in HOST_NAMES:
        result = subprocess.run(["docker", "--context", hosts[name].context, "ps", "-q"],
                                capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        if result.stdout.strip():
            problems.append(f"containers left on {name}: {result.stdout.split()}")
    return problems

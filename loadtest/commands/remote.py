"""`make remote-smoke`: stacks on one host, load from two others, through Docker engines.

The hosts are made on this machine (loadtest/host/testhosts.py): network
namespaces joined by a bridge, each with its own sshd and dockerd, reached
as Docker contexts over SSH exactly as real machines would be. The smoke
ships the images (`make build`), checks a stack on the server host (`make
check`), benches two stacks there with the load split over the two client
hosts (closed loop, then open loop at a shared rate), then once more with
NET_DELAY (and NET_LOSS) on every link when the kernel has netem; it checks
every record (who served, who loaded, per-host counts and rates that add
up, the server's usage read through its engine, latency that shows the
delay) and tears the hosts down, also after a failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records, write_json_atomic
from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT, load_all
from loadtest.host import testhosts
from loadtest.runners import calibration
from loadtest.runners.docker import DockerRunner, local_daemon

SMOKE_STACKS = ("gin", "sanic")
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
                       help="netem delay on every test host's link for the last pass")  # fmt: skip
    smoke.add_argument("--loss", default=os.environ.get("NET_LOSS") or None,
                       help="netem loss on every link for the last pass, e.g. 0.1%%")  # fmt: skip
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
    with local_daemon("remote-smoke", load_all(stacks)) as started:
        if not started:
            return 1
        return smoke(stacks, args.delay, args.loss)


def say(text: str) -> None:
    print(f"\n--- remote-smoke: {text}", flush=True)


@dataclass(frozen=True)
class Pass:
    """One bench of the smoke through the contexts, and what its records must show."""

    label: str
    stacks: int  # how many of the smoke's stacks
    args: tuple[str, ...]  # bench options beyond the hosts
    delay: str | None = None  # the netem delay on every link during it
    rate: float | None = None  # the open-loop rate the hosts share


def passes(delay: str) -> list[Pass]:
    return [
        Pass("closed loop, split", 2, ("--scenarios", "hello,workday")),
        Pass(
            "open loop, split",
            1,
            ("--scenarios", "hello", "--tool", "oha", "--rate", "2000"),
            rate=2000.0,
        ),  # fmt: skip
        Pass(f"NET_DELAY={delay}", 1, ("--scenarios", "hello"), delay=delay),
    ]


def smoke(stacks: list[str], delay: str, loss: str | None) -> int:
    started = time.monotonic()
    # Every image (and every bench's loadgen build) on the local stand-ins: no registry.
    os.environ["SERVERLAB_BASE_IMAGES"] = "standin"
    failures: list[str] = []
    skipped: list[dict] = []
    # Without a loadgen image (no cargo here for its oha) the stacks are still
    # shipped and checked on the server host; the benches are named skips.
    no_loadgen = DockerRunner(base_images="standin").loadgen_unavailable_reason()
    say(f"test hosts {', '.join(HOST_NAMES)}: namespaces, sshd, dockerd, contexts")
    try:
        hosts = testhosts.TestHosts.up(list(HOST_NAMES))
    except StepError as exc:
        print(exc.explain(), file=sys.stderr)
        return 1
    with hosts:
        env = hosts.env()
        server, *clients = (hosts[name].context for name in HOST_NAMES)
        hosts_args = ("--server-host", server)
        to_clients = [] if no_loadgen else ["--client-hosts", ",".join(clients)]
        say(f"make build: images built here and shipped to {server}"
            + ("" if no_loadgen else f" and {' + '.join(clients)}"))  # fmt: skip
        failures += command_passes(env, "build", ["docker", "build", "--standin", "--servers",
                                   ",".join(stacks), *hosts_args, *to_clients])  # fmt: skip
        if failures:  # nothing to check or bench without the images
            hosts.down()
            return finish(failures, skipped, started)
        say(f"make check: {stacks[0]} on {server}")
        failures += command_passes(env, "check", ["check", "--runner", "docker", "--servers",
                                   stacks[0], *hosts_args])  # fmt: skip
        for one in passes(delay):
            conditions = f"{one.label}" + (f" NET_LOSS={loss}" if one.delay and loss else "")
            if problem := no_loadgen or (one.delay and testhosts.netem_problem()):
                say(f"SKIPPED the bench with {conditions}: {problem}")
                skipped.append({"what": f"the bench with {conditions}", "status": "skipped",
                                "reason": problem})  # fmt: skip
                continue
            if one.delay:
                hosts.set_conditions(one.delay, loss)
            say(f"bench, {conditions}: {', '.join(stacks[: one.stacks])} on {server}, "
                f"load from {' + '.join(clients)}")  # fmt: skip
            failures += bench_and_check(env, stacks[: one.stacks], server, clients, one)
        failures += leftovers(hosts, env)
    return finish(failures, skipped, started)


def finish(failures: list[str], skipped: list[dict], started: float) -> int:
    """The smoke's verdict, and its skips for the end of make test."""
    write_json_atomic(LAST_OUTCOME, skipped)
    say(f"done in {time.monotonic() - started:.0f} s; test hosts removed")
    if failures:
        print("\nremote-smoke FAILED:")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print("\nremote-smoke passed")
    return 0


def command_passes(env: dict, label: str, args: list[str]) -> list[str]:
    """A harness command through the contexts; its failure, if it failed."""
    result = subprocess.run([sys.executable, "-m", "loadtest", *args], cwd=REPO_ROOT, env=env)
    return [f"{label} exited {result.returncode}"] if result.returncode else []


def bench_and_check(env: dict, stacks: list[str], server: str, clients: list[str], one: Pass):
    """One smoke bench through the contexts, then its records checked; the failures."""
    before = set(RESULTS_DIR.glob("*/")) if RESULTS_DIR.is_dir() else set()
    command = [
        sys.executable, "-m", "loadtest", "bench", "--runner", "docker", "--profile", "smoke",
        "--servers", ",".join(stacks), *one.args,
        "--server-host", server, "--client-hosts", ",".join(clients),
        "--results-dir", str(RESULTS_DIR),
    ]  # fmt: skip
    result = subprocess.run(command, cwd=REPO_ROOT, env=env)
    if result.returncode != 0:
        return [f"bench ({one.label}) exited {result.returncode}"]
    runs = [p for p in RESULTS_DIR.glob("*/") if p not in before]
    if len(runs) != 1:
        return [f"bench ({one.label}): expected one new run in {RESULTS_DIR}, found {len(runs)}"]
    problems = check_run(runs[0], stacks, server, clients, one)
    print("\n".join(f"  ✗ {p}" for p in problems) or f"  ✓ records of {runs[0].name} check out")
    return [f"bench ({one.label}): {p}" for p in problems]


def check_run(folder: Path, stacks: list[str], server: str, clients: list[str], one: Pass):
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
    wanted = {*stacks, calibration.NAME}  # the ceiling runs on the server host too
    if {r["stack"] for r in measured} != wanted:
        problems.append(
            f"measured {sorted({r['stack'] for r in measured})}, wanted {sorted(wanted)}"
        )
    for record in measured:
        problems += check_record(record, server, clients, one)
    return problems


def check_record(record: dict, server: str, clients: list[str], one: Pass) -> list[str]:
    """Everything a remote record must show; one line per broken rule."""
    name = f"{record['stack']} {record['scenario']}"
    result = record["result"]
    problems = []
    if record["status"] != "ok":
        problems.append(f"{name}: {record['status']}: {record.get('problem')}")
    if record.get("server_host") != server or record.get("client_hosts") != clients:
        problems.append(f"{name}: served by {record.get('server_host')}, loaded from "
                        f"{record.get('client_hosts')}")  # fmt: skip
    problems += [f"{name}: {p}" for p in share_problems(record, clients, one.rate)]
    if record["server"].get("source") != "docker-api" or not record["server"].get("samples"):
        problems.append(f"{name}: server usage not read through the server's engine")
    if one.delay:
        # Each host delays what it sends: a request and its answer cross two links.
        floor_ms = 2 * delay_ms(one.delay)
        p50 = result.get("latency_ms", {}).get("p50")
        if p50 is None or p50 < floor_ms:
            problems.append(
                f"{name}: p50 {p50} ms under NET_DELAY={one.delay} (at least {floor_ms})"
            )
    return problems


def share_problems(record: dict, clients: list[str], rate: float | None) -> list[str]:
    """Each client host's share is in the record, and the shares add up to the whole."""
    shares = record["result"].get("details", {}).get("hosts", [])
    if [share.get("label") for share in shares] != clients:
        return [f"per-host shares {[share.get('label') for share in shares]}"]
    problems = []
    if sum(share["requests"] for share in shares) != record["result"]["requests"]:
        problems.append(f"per-host requests {[share['requests'] for share in shares]} "
                        f"do not sum to {record['result']['requests']}")  # fmt: skip
    if sum(share["connections"] for share in shares) != record["connections"]:
        problems.append(f"per-host connections do not sum to {record['connections']}")
    if rate and abs(sum(share.get("rate") or 0 for share in shares) - rate) > 0.01 * rate:
        problems.append(f"per-host rates {[share.get('rate') for share in shares]} "
                        f"do not sum to {rate:g}/s")  # fmt: skip
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
